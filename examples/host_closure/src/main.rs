//! host_closure: a generic kernel that takes a closure built on the host.
//!
//! `map` is instantiated where the host launches it, with the closure's own
//! type; the closure's captures (`factor`, `offset`) travel to the GPU as the
//! bytes of the closure value.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// `out[i] = f(input[i])` for any `Copy` closure `f`.
#[kernel]
pub fn map<T: Copy, F: Fn(T) -> T + Copy>(f: F, input: &[T], mut out: DisjointSlice<T>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = f(input[idx.get()]);
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 100_000;
    let factor = 3.0f32;
    let offset = -1.25f32;
    let affine = move |x: f32| x * factor + offset;
    let host_input: Vec<f32> = (0..N).map(|i| i as f32 * 0.01).collect();

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &host_input)?;
    let mut output = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "host_closure")?;
    cuda_launch! {
        kernel: map, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [affine, slice(input), slice_mut(output)]
    }?;

    // A second instance of the same kernel: an integer closure with a capture.
    let ints: Vec<u32> = (0..N as u32).collect();
    let shift = 7u32;
    let int_input = DeviceBuffer::from_host(&stream, &ints)?;
    let mut int_output = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: map, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [move |x: u32| (x << shift) ^ x, slice(int_input), slice_mut(int_output)]
    }?;

    let gpu = output.to_host_vec(&stream)?;
    for (i, (&g, &x)) in gpu.iter().zip(&host_input).enumerate() {
        let cpu = affine(x);
        if g.to_bits() != cpu.to_bits() {
            return Err(format!("f32 element {i}: GPU {g} but CPU {cpu}").into());
        }
    }
    let gpu_ints = int_output.to_host_vec(&stream)?;
    for (i, (&g, &x)) in gpu_ints.iter().zip(&ints).enumerate() {
        if g != (x << shift) ^ x {
            return Err(format!("u32 element {i}: GPU {g} but CPU {}", (x << shift) ^ x).into());
        }
    }
    Ok(2 * N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: both closure kernels matched the CPU ({n} elements)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
