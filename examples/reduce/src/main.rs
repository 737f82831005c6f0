//! reduce: the sum of 2^26 floats (2^22 on the CPU emulator), with warp
//! shuffles and shared memory.
//!
//! Each thread sums a grid-stride slice, each warp combines its 32 sums with
//! shuffles, warp 0 combines the block's warp sums read from shared memory,
//! and one value per block goes to `partial`; a second launch of the same
//! kernel reduces the partials. Checked against an f64 sum on the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: u32 = 256;
const WARPS: usize = (BLOCK / 32) as usize;

/// `partial[block]` = the sum of this block's grid-stride share of `input`.
/// Launched with exactly BLOCK threads per block, which the launch bounds
/// promise the compiler.
#[kernel(launch_bounds(BLOCK, 4))]
pub fn block_sum(input: &[f32], mut partial: DisjointSlice<f32>) {
    shared! { static WARP_SUMS: [f32; WARPS]; }
    let tid = thread::threadIdx_x() as usize;
    let block = thread::blockIdx_x() as usize;
    let stride = thread::gridDim_x() as usize * BLOCK as usize;

    let mut acc = 0.0f32;
    let mut i = block * BLOCK as usize + tid;
    while i < input.len() {
        acc += input[i];
        i += stride;
    }
    let warp_total = warp::sum(acc);
    if warp::lane_id() == 0 {
        // SAFETY: lane 0 of each warp writes its own slot; the barrier below
        // separates these writes from the reads.
        unsafe { WARP_SUMS.write(tid / 32, warp_total) };
    }
    thread::sync_threads();
    if tid < 32 {
        // SAFETY: every warp's slot was written before the barrier.
        let v = if tid < WARPS { unsafe { WARP_SUMS.read(tid) } } else { 0.0 };
        let total = warp::sum(v);
        if tid == 0 {
            // SAFETY: one thread per block writes its block's element.
            if block < partial.len() {
                unsafe { *partial.get_unchecked_mut(block) = total };
            }
        }
    }
}

/// Floats summed (log2): on a GPU, and on the CPU emulator, where each
/// thread's grid-stride loop still runs many times.
const LOG_N: u32 = 26;
const LOG_N_EMULATED: u32 = 22;

fn run() -> Result<(u32, f64, f64), Box<dyn std::error::Error>> {
    let log_n = if cuda_core::emulator::is_active() { LOG_N_EMULATED } else { LOG_N };
    let n = 1usize << log_n;
    // A cheap deterministic generator: values in [0, 1).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let host: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    let cpu: f64 = host.iter().map(|&x| x as f64).sum();

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let blocks = ctx.multiprocessor_count()? * 8;
    let input = DeviceBuffer::from_host(&stream, &host)?;
    let mut partial = DeviceBuffer::<f32>::zeroed(&stream, blocks as usize)?;
    let mut total = DeviceBuffer::<f32>::zeroed(&stream, 1)?;
    let module = load_kernel_module(&ctx, "reduce")?;
    let config = |grid: u32| LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    // The second of two identical rounds is timed with events (host time on
    // the CPU emulator); the first pays for loading the module.
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    for round in 0..2 {
        if round == 1 {
            start.record(&stream)?;
        }
        cuda_launch! {
            kernel: block_sum, stream: stream, module: module, config: config(blocks),
            args: [slice(input), slice_mut(partial)]
        }?;
        cuda_launch! {
            kernel: block_sum, stream: stream, module: module, config: config(1),
            args: [slice(partial), slice_mut(total)]
        }?;
    }
    end.record(&stream)?;
    let gpu = total.to_host_vec(&stream)?[0] as f64;
    println!("kernel time: {:.4} ms ({blocks} + 1 blocks of {BLOCK})", start.elapsed_ms(&end)?);
    let relative = ((gpu - cpu) / cpu).abs();
    if relative > 1e-5 {
        return Err(format!("GPU sum {gpu} vs CPU {cpu}: relative error {relative:e}").into());
    }
    Ok((log_n, gpu, cpu))
}

fn main() -> ExitCode {
    match run() {
        Ok((log_n, gpu, cpu)) => {
            println!("✓ SUCCESS: sum of 2^{log_n} floats: GPU {gpu:.1}, CPU {cpu:.1} (f64)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
