//! The program the rebuild benchmark edits and rebuilds with
//! `cargo oxide build --release` (its CUDA C++ equivalent is vecadd.cu).
//! The harness copies it into a scratch crate and flips the operands of the
//! addition marked EDIT between builds.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// c[i] = a[i] + b[i], one thread per element.
#[kernel]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out) = c.get_mut(idx) {
        *out = a[i] + b[i]; // EDIT
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    const N: usize = 1 << 20;
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32).collect();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let a_dev = DeviceBuffer::from_host(&stream, &a)?;
    let b_dev = DeviceBuffer::from_host(&stream, &b)?;
    let mut c_dev = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "rebuild_vecadd")?;
    cuda_launch! {
        kernel: vecadd, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(a_dev), slice(b_dev), slice_mut(c_dev)]
    }?;
    let c = c_dev.to_host_vec(&stream)?;
    if let Some(i) = (0..N).find(|&i| c[i] != a[i] + b[i]) {
        return Err(format!("element {i}: GPU {} vs CPU {}", c[i], a[i] + b[i]).into());
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
