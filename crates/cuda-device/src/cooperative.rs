//! Cooperative groups: thread-block tiles and the whole grid as groups that
//! synchronise and exchange values.
//!
//! **Tiles.** [`tiled_partition::<N>()`](tiled_partition) splits the
//! calling thread's warp into tiles of `N` consecutive lanes (`N` = 1, 2,
//! 4, 8, 16 or 32; any other `N` is a compile error). A [`Tile`] synchronises
//! its threads, shuffles among them by rank and reduces over them, with warp
//! instructions on the tile's lanes. Every thread of a tile must make the
//! same calls (as for the [`warp`] collectives). A block whose
//! size is not a multiple of 32 has a short last warp: its tiles hold only
//! the lanes that exist, and shuffles from a missing rank return the
//! caller's own value.
//!
//! ```
//! use cuda_device::cooperative::tiled_partition;
//!
//! /// The sum over each group of 8 consecutive lanes, in every lane of it.
//! fn sum_of_eight(x: u32) -> u32 {
//!     let tile = tiled_partition::<8>();
//!     tile.reduce(x, |a, b| a.wrapping_add(b))
//! }
//! ```
//!
//! **The grid.** A kernel that takes a [`GridGroup`] parameter can wait for
//! every thread of the grid with [`GridGroup::sync`]. That is only possible
//! when every block of the grid runs at the same time, which a cooperative
//! launch guarantees: the host passes `cuda_host`'s `GridBarrier` for the
//! parameter and launches with `config.cooperative()`; the launch checks
//! that the grid fits on the device at once (occupancy × multiprocessors) and
//! refuses it with an error otherwise, and a `GridGroup` argument in a launch
//! that is not cooperative is refused too.
//!
//! ```
//! use cuda_device::cooperative::GridGroup;
//! use cuda_device::{kernel, thread, DisjointSlice};
//!
//! /// Two phases: every thread sees every phase-1 write after the sync.
//! #[kernel]
//! pub fn two_phase(grid: GridGroup, mut out: DisjointSlice<u32>) {
//!     let i = thread::index_1d();
//!     if let Some(o) = out.get_mut(i) {
//!         *o = 1;
//!     }
//!     grid.sync();
//! }
//! ```

use core::marker::PhantomPinned;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::atomic::{Scope, ScopedAtomic};
use crate::{thread, warp};

/// A tile of `N` consecutive lanes of a warp (see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct Tile<const N: u32> {
    /// The lanes of the tile that exist (all `N` but in a short last warp).
    mask: u32,
    /// The tile's first lane.
    base: u32,
}

/// The tile of `N` lanes (`N` = 1, 2, 4, 8, 16 or 32) holding the calling
/// thread (CUDA's `cooperative_groups::tiled_partition<N>(this_thread_block())`).
#[inline(always)]
pub fn tiled_partition<const N: u32>() -> Tile<N> {
    const { assert!(N.is_power_of_two() && N <= 32, "a tile has 1, 2, 4, 8, 16 or 32 threads") };
    let lane = warp::lane_id();
    let base = lane & !(N - 1);
    let tile_lanes = if N == 32 { u32::MAX } else { ((1u32 << N) - 1) << base };
    // The lanes of this warp that exist: all 32 unless the block ends inside it.
    let warp_start = (thread::block_linear_index() as u32) & !31;
    let in_warp = (thread::block_size() as u32 - warp_start).min(32);
    let present = if in_warp == 32 { u32::MAX } else { (1u32 << in_warp) - 1 };
    Tile { mask: tile_lanes & present, base }
}

impl<const N: u32> Tile<N> {
    /// The number of threads of a full tile, `N`.
    pub const SIZE: u32 = N;

    /// The calling thread's rank in the tile (0..N).
    #[inline(always)]
    pub fn thread_rank(&self) -> u32 {
        warp::lane_id() - self.base
    }

    /// The tile's index among the tiles of the block.
    #[inline(always)]
    pub fn meta_group_rank(&self) -> u32 {
        thread::block_linear_index() as u32 / N
    }

    /// The number of threads in the tile: `N`, or fewer in a short last warp.
    #[inline(always)]
    pub fn num_threads(&self) -> u32 {
        self.mask.count_ones()
    }

    /// The warp lanes of the tile, as a member mask for the [`warp`] functions.
    #[inline(always)]
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// Waits for the threads of the tile (`__syncwarp` with the tile's lanes).
    #[inline(always)]
    pub fn sync(&self) {
        warp::sync_warp(self.mask)
    }

    /// The warp lane of `rank`, or the caller's own lane when that rank is
    /// outside the tile or does not exist.
    #[inline(always)]
    fn lane_of(&self, rank: u32) -> u32 {
        let lane = self.base + rank;
        if rank < N && self.mask >> lane & 1 != 0 { lane } else { warp::lane_id() }
    }

    /// The value of `value` in the thread of rank `src_rank % N`.
    #[inline(always)]
    pub fn shfl<T: warp::Shuffle>(&self, value: T, src_rank: u32) -> T {
        warp::shfl_idx(self.mask, value, self.lane_of(src_rank % N))
    }

    /// The value of the thread `delta` ranks below, or the own value in the
    /// lowest `delta` ranks.
    #[inline(always)]
    pub fn shfl_up<T: warp::Shuffle>(&self, value: T, delta: u32) -> T {
        let rank = self.thread_rank();
        let from = if rank >= delta { self.lane_of(rank - delta) } else { warp::lane_id() };
        warp::shfl_idx(self.mask, value, from)
    }

    /// The value of the thread `delta` ranks above, or the own value in the
    /// highest `delta` ranks.
    #[inline(always)]
    pub fn shfl_down<T: warp::Shuffle>(&self, value: T, delta: u32) -> T {
        let from = self.lane_of(self.thread_rank().wrapping_add(delta));
        warp::shfl_idx(self.mask, value, from)
    }

    /// The value of the thread of rank `thread_rank() ^ lane_mask` (within
    /// the tile: `lane_mask` is taken modulo `N`).
    #[inline(always)]
    pub fn shfl_xor<T: warp::Shuffle>(&self, value: T, lane_mask: u32) -> T {
        warp::shfl_idx(self.mask, value, self.lane_of(self.thread_rank() ^ (lane_mask % N)))
    }

    /// `value` combined with `op` over the tile, in every thread of it.
    /// `op` must be associative and commutative (a full tile combines in a
    /// butterfly; a short one in rank order).
    #[inline(always)]
    pub fn reduce<T: warp::Shuffle>(&self, value: T, op: impl Fn(T, T) -> T) -> T {
        if self.mask.count_ones() != N {
            return warp::reduce_masked(self.mask, value, op);
        }
        let mut v = value;
        let mut offset = N / 2;
        while offset > 0 {
            v = op(v, warp::shfl_xor(self.mask, v, offset));
            offset /= 2;
        }
        v
    }

    /// Inclusive scan of `value` over the tile in rank order
    /// ([`warp::inclusive_scan`] on the tile's lanes).
    #[inline(always)]
    pub fn inclusive_scan<T: warp::Shuffle>(&self, value: T, op: impl Fn(T, T) -> T) -> T {
        warp::inclusive_scan(self.mask, value, op)
    }

    /// Bit `r` set when the thread of rank `r` passed `true`.
    #[inline(always)]
    pub fn ballot(&self, predicate: bool) -> u32 {
        warp::ballot(self.mask, predicate) >> self.base
    }

    /// Whether `predicate` holds in every thread of the tile.
    #[inline(always)]
    pub fn all(&self, predicate: bool) -> bool {
        warp::all(self.mask, predicate)
    }

    /// Whether `predicate` holds in any thread of the tile.
    #[inline(always)]
    pub fn any(&self, predicate: bool) -> bool {
        warp::any(self.mask, predicate)
    }
}

/// The grid of a cooperative launch, as a kernel parameter (see the
/// [module docs](self)): its [`sync`](Self::sync) waits for every thread of
/// the grid.
///
/// Only `cuda_host`'s `GridBarrier` passes one, and only in a cooperative
/// launch (which proves the grid co-resident); it is not `Unpin`, so the
/// launch's any-`Copy`-value rule cannot make one up.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GridGroup {
    /// The launch's barrier word in device memory (any starting value).
    barrier: *mut u32,
    _only_from_the_launch: PhantomPinned,
}

// SAFETY: the barrier is only touched atomically.
unsafe impl Sync for GridGroup {}

/// The bit of the barrier word that flips when the whole grid has arrived.
const GRID_PHASE: u32 = 1 << 31;

impl GridGroup {
    /// A grid group on the barrier word at `barrier` (what the host passes).
    ///
    /// # Safety
    /// `barrier` is a `u32` of device memory that only this launch's grid
    /// uses while it runs, every block of the grid is resident at once (a
    /// cooperative launch), and every thread of the grid calls
    /// [`sync`](Self::sync) the same number of times.
    #[doc(hidden)]
    pub const unsafe fn from_raw(barrier: *mut u32) -> Self {
        GridGroup { barrier, _only_from_the_launch: PhantomPinned }
    }

    /// The number of blocks in the grid.
    #[inline(always)]
    pub fn num_blocks(&self) -> u32 {
        thread::gridDim_x() * thread::gridDim_y() * thread::gridDim_z()
    }

    /// The calling block's index among them, `x` fastest.
    #[inline(always)]
    pub fn block_rank(&self) -> u32 {
        (thread::blockIdx_z() * thread::gridDim_y() + thread::blockIdx_y()) * thread::gridDim_x() + thread::blockIdx_x()
    }

    /// The number of threads in the grid.
    #[inline(always)]
    pub fn num_threads(&self) -> u64 {
        self.num_blocks() as u64 * thread::block_size() as u64
    }

    /// The calling thread's rank in the grid: its block's rank times the
    /// block size plus its index in the block.
    #[inline(always)]
    pub fn thread_rank(&self) -> u64 {
        self.block_rank() as u64 * thread::block_size() as u64 + thread::block_linear_index() as u64
    }

    /// Waits until every thread of the grid has called `sync` as many times
    /// as the caller; the writes before it (global and shared memory) are
    /// visible to every thread after it.
    ///
    /// Each block's first thread adds to the barrier word so that the
    /// arrivals of all blocks together flip its top bit exactly once (block 0
    /// adds `2^31 - (blocks - 1)`, the others 1), then waits for the flip.
    /// The word returns to its low bits each time, so no reset is needed
    /// between syncs or launches.
    #[inline(never)]
    pub fn sync(&self) {
        thread::sync_threads();
        if thread::block_linear_index() == 0 {
            // SAFETY: the launch gave this grid the barrier word alone
            // (`from_raw`'s contract); it is only accessed atomically.
            let word = unsafe { AtomicU32::from_ptr(self.barrier) };
            let blocks = self.num_blocks();
            let add = if self.block_rank() == 0 { GRID_PHASE.wrapping_sub(blocks - 1) } else { 1 };
            // The fences carry the whole block's writes (ordered before this
            // thread by the barrier above) to the device and back.
            crate::fence::device();
            let before = word.fetch_add_scoped(add, Scope::Device, Ordering::AcqRel);
            while (word.load_scoped(Scope::Device, Ordering::Acquire) ^ before) & GRID_PHASE == 0 {
                thread::nanosleep(32);
            }
            crate::fence::device();
        }
        thread::sync_threads();
    }
}
