//! GPU test: a barrier that rustc's MIR JumpThreading may duplicate into two
//! branches (release builds run that pass) still synchronises the block.
//!
//! Each thread writes a value computed on one of two paths, waits at the
//! barrier, then reads its neighbour's value; with a broken barrier some
//! threads read stale zeros. The same function runs on the CPU as reference.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: u32 = 256;

fn value(i: u32, odd: bool) -> u32 {
    if odd { i.wrapping_mul(2654435761) } else { i ^ 0x5bd1e995 }
}

/// `out[i] = value(neighbour of i)`, read through `scratch` after a barrier.
#[kernel]
pub fn neighbour_exchange(mut scratch: DisjointSlice<u32>, mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get() as u32;
    let odd = thread::threadIdx_x() % 2 == 1;
    // The branch decides both the value and, after the barrier, what to read:
    // JumpThreading can thread the second `if odd` through the barrier's block
    // by copying that block (and so the barrier call) into both arms.
    let direction: u32;
    if odd {
        direction = 1;
        if let Some(s) = scratch.get_mut(idx) {
            *s = value(i, true);
        }
    } else {
        direction = 0;
        if let Some(s) = scratch.get_mut(idx) {
            *s = value(i, false);
        }
    }
    thread::sync_threads();
    let block_start = (i / BLOCK) * BLOCK;
    let neighbour = match direction {
        1 => block_start + (i + 1) % BLOCK,
        _ => block_start + (i + BLOCK - 1) % BLOCK,
    };
    // SAFETY: every thread of the block wrote its slot before the barrier and
    // nobody writes after it; `neighbour` is inside this block's range.
    let read = unsafe { core::ptr::read_volatile(scratch.as_mut_ptr().add(neighbour as usize)) };
    if let Some(o) = out.get_mut(idx) {
        *o = read;
    }
}

fn expected(n: u32) -> Vec<u32> {
    (0..n)
        .map(|i| {
            let odd = (i % BLOCK) % 2 == 1;
            let start = (i / BLOCK) * BLOCK;
            let nb = if odd { start + (i + 1) % BLOCK } else { start + (i + BLOCK - 1) % BLOCK };
            value(nb, (nb % BLOCK) % 2 == 1)
        })
        .collect()
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let n = BLOCK * 512;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut scratch = DeviceBuffer::<u32>::zeroed(&stream, n as usize)?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, n as usize)?;
    let module = load_kernel_module(&ctx, "barrier_jump_threading")?;
    let config = LaunchConfig { grid_dim: (n / BLOCK, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: neighbour_exchange, stream: stream, module: module, config: config,
        args: [slice_mut(scratch), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let cpu = expected(n);
    let wrong = gpu.iter().zip(&cpu).filter(|(g, c)| g != c).count();
    if wrong > 0 {
        return Err(format!("{wrong} of {n} threads read a value the barrier should have published").into());
    }
    Ok(n as usize)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: all {n} threads saw their neighbour's value after the barrier");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
