//! generic: one generic kernel, two instances (`scale::<f32>` and
//! `scale::<i32>`), two PTX entries, both checked against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::ops::Mul;
use std::process::ExitCode;

/// `out[i] = input[i] * factor`, for any multiplicable `Copy` element.
#[kernel]
pub fn scale<T: Copy + Mul<Output = T>>(input: &[T], factor: T, mut out: DisjointSlice<T>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = input[idx.get()] * factor;
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 4096;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "generic")?;
    let entries = module.image().kernels.len();
    if entries != 2 {
        return Err(format!("expected 2 PTX entries (f32 and i32), found {entries}").into());
    }

    let floats: Vec<f32> = (0..N).map(|i| i as f32 / 3.0).collect();
    let f_in = DeviceBuffer::from_host(&stream, &floats)?;
    let mut f_out = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: scale::<f32>, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(f_in), 1.5f32, slice_mut(f_out)]
    }?;

    let ints: Vec<i32> = (0..N as i32).map(|i| i - 2000).collect();
    let i_in = DeviceBuffer::from_host(&stream, &ints)?;
    let mut i_out = DeviceBuffer::<i32>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: scale, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(i_in), -3i32, slice_mut(i_out)]
    }?;

    let f_gpu = f_out.to_host_vec(&stream)?;
    let i_gpu = i_out.to_host_vec(&stream)?;
    for i in 0..N {
        if f_gpu[i].to_bits() != (floats[i] * 1.5).to_bits() {
            return Err(format!("f32 element {i}: GPU {} CPU {}", f_gpu[i], floats[i] * 1.5).into());
        }
        if i_gpu[i] != ints[i] * -3 {
            return Err(format!("i32 element {i}: GPU {} CPU {}", i_gpu[i], ints[i] * -3).into());
        }
    }
    Ok(2 * N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: scale::<f32> and scale::<i32> matched the CPU ({n} elements)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
