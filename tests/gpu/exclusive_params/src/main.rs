//! GPU test: a kernel that takes `&mut [T]` runs only as one thread.
//!
//! Every thread of a launch receives the same arguments, so in a launch of
//! more than one thread each would hold the same `&mut` at once: aliasing
//! `&mut`, and a data race as soon as two of them write. The kernel's entry
//! refuses such a launch before the kernel's body runs (a device panic that
//! says why), so safe code cannot race through it. A one-thread launch
//! works and is checked against the CPU; then the refusal (last: on the GPU
//! a device panic ends the context).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::kernel;
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Writes `start, start + 1, …` over the whole slice: a sequential kernel.
#[kernel]
pub fn count_up(data: &mut [u32], start: u32) {
    for (i, x) in data.iter_mut().enumerate() {
        *x = start.wrapping_add(i as u32);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "exclusive_params")?;
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, 100)?;

    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! { kernel: count_up, stream: stream, module: module, config: one, args: [slice_mut(data), 7u32] }?;
    let got = data.to_host_vec(&stream)?;
    let want: Vec<u32> = (0..100).map(|i| 7 + i).collect();
    if got != want {
        return Err(format!("one-thread launch: got {:?}…, want {:?}…", &got[..4], &want[..4]).into());
    }

    let many = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let launched = cuda_launch! { kernel: count_up, stream: stream, module: module, config: many, args: [slice_mut(data), 1u32] };
    let outcome = launched.map_err(|e| e.to_string()).and_then(|()| stream.synchronize().map_err(|e| e.to_string()));
    match outcome {
        Ok(()) => Err("a 64-thread launch of a kernel with a `&mut [u32]` parameter ran".into()),
        Err(message) if message.contains("which every thread of a launch would hold at once") => {
            println!("refused as expected: {message}");
            Ok(())
        }
        Err(other) => Err(format!("the 64-thread launch failed, but not with the refusal: {other}").into()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("✓ SUCCESS: one-thread launch correct; a launch of 64 threads refused");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
