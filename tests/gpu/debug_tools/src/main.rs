//! GPU test of the debugging path (`cargo oxide debug` / `sanitize`): a
//! program whose kernels cuda-gdb and compute-sanitizer must be able to name
//! by Rust file and line.
//!
//! `debug_tools` (no argument) runs a correct kernel and checks it against
//! the CPU, so the plain GPU suite runs it like any other test. With an
//! argument it plants one bug for a tool to find (scripts/debug-tools-gpu.sh
//! runs them):
//!   `oob`   a write one element past the end of a buffer, through a raw
//!           pointer (safe indexing would panic first): memcheck must report
//!           it at the line marked OOB below;
//!   `race`  neighbours exchange values through shared memory without a
//!           barrier: racecheck must report a hazard at the lines marked RACE.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const N: usize = 256;

/// `out[i] = 3·i + 1`; with `overrun` the last thread also writes `out[N]`.
#[kernel]
pub fn affine(overrun: u32, mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = 3 * i as u32 + 1;
    }
    if overrun != 0 && i == out.len() - 1 {
        // SAFETY: none — this is the planted out-of-bounds write.
        unsafe { *out.as_mut_ptr().add(i + 1) = 0xdead }; // OOB
    }
}

/// Each thread reads its neighbour's value from shared memory; `barrier`
/// decides whether the block synchronises in between.
#[kernel]
pub fn exchange(barrier: u32, mut out: DisjointSlice<u32>) {
    shared! { static STAGE: [u32; 256]; }
    let t = thread::threadIdx_x() as usize;
    // SAFETY: each thread writes only its own slot; reads follow below.
    unsafe { STAGE.write(t, t as u32 * 7) }; // RACE (write)
    if barrier != 0 {
        thread::sync_threads();
    }
    // SAFETY: with the barrier every slot is written before this read; without
    // it this is the planted race.
    let neighbour = unsafe { STAGE.read((t + 1) % 256) }; // RACE (read)
    if let Some(slot) = out.get_mut(thread::index_1d()) {
        *slot = neighbour;
    }
}

fn run(plant: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    // Exactly N elements: the planted overrun writes just past the allocation,
    // which memcheck tracks to the byte (without it the write lands in the
    // allocator's padding).
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "debug_tools")?;
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (N as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: affine, stream: stream, module: module, config: config,
        args: [u32::from(plant == Some("oob")), &mut out]
    }?;
    let got = out.to_host_vec(&stream)?;
    let want: Vec<u32> = (0..N as u32).map(|i| 3 * i + 1).collect();
    if got != want {
        return Err("affine: wrong values".into());
    }
    cuda_launch! {
        kernel: exchange, stream: stream, module: module, config: config,
        args: [u32::from(plant != Some("race")), &mut out]
    }?;
    let got = out.to_host_vec(&stream)?;
    let want: Vec<u32> = (0..N).map(|t| ((t + 1) % N) as u32 * 7).collect();
    if plant.is_none() && got != want {
        return Err("exchange: wrong values".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let plant = std::env::args().nth(1);
    if let Some(p) = plant.as_deref() {
        if p != "oob" && p != "race" {
            eprintln!("usage: debug_tools [oob|race]");
            return ExitCode::from(64);
        }
    }
    match run(plant.as_deref()) {
        Ok(()) => {
            println!("✓ debug_tools: affine and exchange correct{}", plant.map(|p| format!(" (planted: {p})")).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(e.as_ref()),
    }
}
