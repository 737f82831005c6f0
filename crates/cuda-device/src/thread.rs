//! The calling thread's position in the launch grid.
//!
//! The `threadIdx_x` … `gridDim_z` functions keep the CUDA names so a CUDA C++
//! programmer finds them; [`index_1d`] and [`index_2d`] give a [`ThreadIndex`],
//! the only way to index a [`DisjointSlice`](crate::DisjointSlice) safely.
#![allow(non_snake_case)]

use crate::stubs;

/// A global thread index that came from the hardware thread and block ids.
///
/// It cannot be built from an arbitrary number, which is what makes
/// [`DisjointSlice::get_mut`](crate::DisjointSlice::get_mut) safe: in a 1-D launch
/// no two threads hold the same `ThreadIndex`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a `usize`, for indexing ordinary slices.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.0
    }
}

macro_rules! coordinate {
    ($(#[$doc:meta] $name:ident => $stub:ident;)*) => {$(
        #[$doc]
        #[inline(always)]
        pub fn $name() -> u32 {
            stubs::$stub()
        }
    )*};
}

coordinate! {
    /// `threadIdx.x`: the thread's x coordinate within its block.
    threadIdx_x => __oxide_stub_thread_idx_x;
    /// `threadIdx.y`: the thread's y coordinate within its block.
    threadIdx_y => __oxide_stub_thread_idx_y;
    /// `threadIdx.z`: the thread's z coordinate within its block.
    threadIdx_z => __oxide_stub_thread_idx_z;
    /// `blockIdx.x`: the block's x coordinate within the grid.
    blockIdx_x => __oxide_stub_block_idx_x;
    /// `blockIdx.y`: the block's y coordinate within the grid.
    blockIdx_y => __oxide_stub_block_idx_y;
    /// `blockIdx.z`: the block's z coordinate within the grid.
    blockIdx_z => __oxide_stub_block_idx_z;
    /// `blockDim.x`: threads per block in x.
    blockDim_x => __oxide_stub_block_dim_x;
    /// `blockDim.y`: threads per block in y.
    blockDim_y => __oxide_stub_block_dim_y;
    /// `blockDim.z`: threads per block in z.
    blockDim_z => __oxide_stub_block_dim_z;
    /// `gridDim.x`: blocks in the grid in x.
    gridDim_x => __oxide_stub_grid_dim_x;
    /// `gridDim.y`: blocks in the grid in y.
    gridDim_y => __oxide_stub_grid_dim_y;
    /// `gridDim.z`: blocks in the grid in z.
    gridDim_z => __oxide_stub_grid_dim_z;
    /// The thread's lane (0..32) within its warp.
    lane_id => __oxide_stub_lane_id;
}

/// `blockIdx.x * blockDim.x + threadIdx.x`: the thread's index in a 1-D launch.
#[inline(always)]
pub fn index_1d() -> ThreadIndex {
    let block = blockIdx_x() as usize;
    let width = blockDim_x() as usize;
    ThreadIndex(block * width + threadIdx_x() as usize)
}

/// The row-major index `y * row_len + x` of the thread in a 2-D launch, where
/// `x` and `y` are the thread's global coordinates.
///
/// Threads whose `x` is outside `0..row_len` would alias another row's
/// elements, so they get an index past every valid one (`usize::MAX`), which
/// `DisjointSlice::get_mut` rejects.
#[inline(always)]
pub fn index_2d(row_len: usize) -> ThreadIndex {
    let x = blockIdx_x() as usize * blockDim_x() as usize + threadIdx_x() as usize;
    let y = blockIdx_y() as usize * blockDim_y() as usize + threadIdx_y() as usize;
    if x >= row_len {
        return ThreadIndex(usize::MAX);
    }
    ThreadIndex(y * row_len + x)
}

/// Waits until every thread of the block has reached this call (`__syncthreads`).
///
/// Memory written by the block's threads before the barrier is visible to all of
/// them after it. Every thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    stubs::__oxide_stub_sync_threads()
}

/// Waits for the block like [`sync_threads`] and returns how many of its
/// threads passed `true` (`__syncthreads_count`).
#[inline(always)]
pub fn sync_threads_count(predicate: bool) -> u32 {
    stubs::__oxide_stub_sync_threads_count(predicate)
}

/// Waits for the block and returns whether every thread passed `true`
/// (`__syncthreads_and`).
#[inline(always)]
pub fn sync_threads_and(predicate: bool) -> bool {
    stubs::__oxide_stub_sync_threads_and(predicate)
}

/// Waits for the block and returns whether any thread passed `true`
/// (`__syncthreads_or`).
#[inline(always)]
pub fn sync_threads_or(predicate: bool) -> bool {
    stubs::__oxide_stub_sync_threads_or(predicate)
}

/// The thread's index within its block, `x` fastest: `(z * dim_y + y) * dim_x + x`.
#[inline(always)]
pub fn block_linear_index() -> usize {
    let (x, y, z) = (threadIdx_x() as usize, threadIdx_y() as usize, threadIdx_z() as usize);
    let (dx, dy) = (blockDim_x() as usize, blockDim_y() as usize);
    (z * dy + y) * dx + x
}

/// The number of threads in the block.
#[inline(always)]
pub fn block_size() -> usize {
    blockDim_x() as usize * blockDim_y() as usize * blockDim_z() as usize
}

/// The warp the thread belongs to within its block (`block_linear_index() / 32`).
#[inline(always)]
pub fn warp_id() -> u32 {
    (block_linear_index() / 32) as u32
}

/// Reads the SM's 32-bit cycle counter (`clock()`).
#[inline(always)]
pub fn clock() -> u32 {
    stubs::__oxide_stub_clock()
}

/// Reads the SM's 64-bit cycle counter (`clock64()`).
#[inline(always)]
pub fn clock64() -> u64 {
    stubs::__oxide_stub_clock64()
}

/// Nanoseconds from the GPU's global timer (`%globaltimer`).
#[inline(always)]
pub fn globaltimer() -> u64 {
    stubs::__oxide_stub_globaltimer()
}

/// Suspends the thread for about `nanoseconds` (at most 1 ms; PTX
/// `nanosleep`): a back-off for spin loops that wait on another thread.
#[inline(always)]
pub fn nanosleep(nanoseconds: u32) {
    stubs::__oxide_stub_nanosleep(nanoseconds)
}
