//! Warp groups (four consecutive warps, 128 threads, aligned to 128 in the
//! block) and their register budget: `setmaxnreg` (sm_90a).
//!
//! A kernel whose warp groups do different work (one loads tiles, the others
//! compute) can move registers from the loading group to the computing ones.
//! The kernel needs `#[kernel(launch_bounds(THREADS, 1))]` so that ptxas
//! knows the registers per thread at entry (65536 / THREADS, rounded down to
//! a multiple of 8), and `--arch sm_90a`. An increase waits until other
//! groups have released enough registers: keep the block's total within what
//! it started with, or it never returns.
//!
//! ```
//! use cuda_device::{kernel, thread, warpgroup, DisjointSlice};
//!
//! /// Three warp groups: one producer, two consumers (384 threads at 168
//! /// registers each: 40 + 2 * 232 = 3 * 168).
//! #[kernel(launch_bounds(384, 1))]
//! pub fn specialised(mut out: DisjointSlice<u32>) {
//!     if warpgroup::index() == 0 {
//!         warpgroup::decrease_max_registers::<40>(); // the producer needs few
//!     } else {
//!         warpgroup::increase_max_registers::<232>(); // the consumers many
//!     }
//!     if let Some(o) = out.get_mut(thread::index_1d()) {
//!         *o = warpgroup::index();
//!     }
//! }
//! ```

use crate::stubs;

/// Threads in a warp group.
pub const WARPGROUP_SIZE: u32 = 128;

/// The calling thread's warp group in its block (linear thread index / 128).
#[inline(always)]
pub fn index() -> u32 {
    (crate::thread::block_linear_index() / WARPGROUP_SIZE as usize) as u32
}

const fn check_count(count: u32) {
    assert!(count >= 24 && count <= 256 && count % 8 == 0, "setmaxnreg takes 24..=256, a multiple of 8");
}

/// Raises this warp group's per-thread register limit to `COUNT`
/// (`setmaxnreg.inc.sync.aligned.u32`), waiting until the block's pool has
/// the registers (released by [`decrease_max_registers`] in other groups).
/// All threads of the warp group must call it together.
#[inline(always)]
pub fn increase_max_registers<const COUNT: u32>() {
    const { check_count(COUNT) };
    stubs::__oxide_stub_setmaxnreg_inc(COUNT)
}

/// Lowers this warp group's per-thread register limit to `COUNT`
/// (`setmaxnreg.dec.sync.aligned.u32`), releasing the rest to the block's
/// pool. All threads of the warp group must call it together.
#[inline(always)]
pub fn decrease_max_registers<const COUNT: u32>() {
    const { check_count(COUNT) };
    stubs::__oxide_stub_setmaxnreg_dec(COUNT)
}
