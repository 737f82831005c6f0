//! One launch: its blocks spread over worker OS threads, each running whole
//! blocks with the scheduler until the grid is done or a block fails.

use std::ffi::c_void;

use super::kernel::{Fault, Grid, HostKernel};
use super::launch_state::LaunchState;
use super::scheduler::{self, Block};
use super::{memory_fault, panic_capture, watchdog};

/// Grids of at most this many threads run on one worker thread.
const SMALL_GRID_THREADS: usize = 8192;

/// Runs `grid` with `kernel` on the CPU. `params` is `kernelParams`.
///
/// # Safety
/// `params` must hold what `kernel` expects, valid until this returns.
/// A cooperative launch gets one worker per block, so that every block runs
/// at once and a grid-wide barrier completes.
pub unsafe fn run(grid: Grid, kernel: &HostKernel, cooperative: bool, params: *const *mut c_void) -> Result<(), Fault> {
    panic_capture::install();
    memory_fault::install();
    let (gx, gy, gz) = grid.grid_dim;
    let blocks = gx as usize * gy as usize * gz as usize;
    let state = LaunchState::new(grid, kernel, params, blocks);
    // A small grid runs on one worker: starting more would cost more than
    // its blocks. Never on the calling thread: a kernel panic that could not
    // unwind leaves its OS thread believing a panic is in flight
    // (`panic_capture.rs`), and workers end with the launch.
    let (bx, by, bz) = grid.block_dim;
    let threads = blocks * (bx * by * bz) as usize;
    let workers = if cooperative {
        blocks
    } else if threads <= SMALL_GRID_THREADS {
        1
    } else {
        workers().min(blocks).max(1)
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| worker(&state));
        }
    });
    match state.into_fault() {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// Worker threads per launch: `OXIDE_EMULATE_THREADS`, else the host's cores.
pub(crate) fn workers() -> usize {
    std::env::var("OXIDE_EMULATE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn worker(state: &LaunchState<'_>) {
    let (gx, gy, _) = state.grid.grid_dim;
    let watch = watchdog::watch_this_thread(scheduler::take_off_stalled_thread);
    let mut stacks = Vec::new();
    loop {
        if state.failed() {
            break;
        }
        let Some(b) = state.take_block() else { break };
        let idx = ((b % gx as usize) as u32, ((b / gx as usize) % gy as usize) as u32, (b / (gx as usize * gy as usize)) as u32);
        let mut block = Block::new(state, idx, std::mem::take(&mut stacks), &watch);
        let result = block.run();
        stacks = block.into_stacks(result.is_ok());
        if let Err(fault) = result {
            state.fail(fault);
        }
    }
    scheduler::keep_stacks(stacks);
}
