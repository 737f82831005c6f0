//! vecadd: the smallest complete oxide program.
//!
//! `cargo oxide run vecadd` builds this file once: rustc compiles the host
//! code, the oxide device linker compiles `vecadd` for the GPU and embeds it,
//! and the program checks the GPU's answer against the same addition on the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// `c[i] = a[i] + b[i]`, one thread per element.
#[kernel]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out) = c.get_mut(idx) {
        *out = a[i] + b[i];
    }
}

const N: usize = 1024;

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32 + 0.5).collect();

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let a_dev = DeviceBuffer::from_host(&stream, &a)?;
    let b_dev = DeviceBuffer::from_host(&stream, &b)?;
    let mut c_dev = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "vecadd")?;

    // The second of two identical launches is timed with events (on the CPU
    // emulator they record host time), so the same line compares a GPU and an
    // emulated run; the first pays for loading the module.
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    for round in 0..2 {
        if round == 1 {
            start.record(&stream)?;
        }
        cuda_launch! {
            kernel: vecadd, stream: stream, module: module,
            config: LaunchConfig::for_num_elems(N as u32),
            args: [slice(a_dev), slice(b_dev), slice_mut(c_dev)]
        }?;
    }
    end.record(&stream)?;
    let c = c_dev.to_host_vec(&stream)?;
    println!("kernel time: {:.4} ms", start.elapsed_ms(&end)?);

    let wrong = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
    if wrong > 0 {
        let first = (0..N).find(|&i| c[i] != a[i] + b[i]).unwrap();
        return Err(format!(
            "{wrong} of {N} elements wrong; first at {first}: GPU {} vs CPU {}",
            c[first],
            a[first] + b[first]
        )
        .into());
    }
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: All {n} elements correct!");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
