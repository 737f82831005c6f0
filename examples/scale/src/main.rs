//! scale: the reference program of docs/DESIGN.md §1, launched with
//! `cuda_launch!` and `load_kernel_module`, checked against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// `out[i] = input[i] * factor`.
#[kernel]
pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = input[idx.get()] * factor;
    }
}

/// The same computation on the CPU, the reference the GPU is checked against.
fn scale_cpu(input: &[f32], factor: f32) -> Vec<f32> {
    input.iter().map(|x| x * factor).collect()
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 1 << 20;
    let host_input: Vec<f32> = (0..N).map(|i| (i as f32).sin() * 100.0).collect();

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &host_input)?;
    let mut output = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "scale_example")?;
    cuda_launch! {
        kernel: scale, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(input), 2.5f32, slice_mut(output)]
    }?;

    let gpu = output.to_host_vec(&stream)?;
    let cpu = scale_cpu(&host_input, 2.5);
    if let Some(i) = (0..N).find(|&i| gpu[i].to_bits() != cpu[i].to_bits()) {
        return Err(format!("element {i}: GPU {} but CPU {}", gpu[i], cpu[i]).into());
    }
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: scale matched the CPU on all {n} elements");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
