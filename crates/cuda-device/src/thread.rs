//! The calling thread's position in the launch grid.
//!
//! The `threadIdx_x` … `gridDim_z` functions keep the CUDA names so a CUDA C++
//! programmer finds them; [`index_1d`], [`index_2d`] and [`index_3d`] give a
//! [`ThreadIndex`], the only way to index a
//! [`DisjointSlice`](crate::DisjointSlice) safely.
//!
//! ```
//! use cuda_device::{kernel, thread, DisjointSlice};
//!
//! /// out = 2 × input over a matrix of `cols` columns, one thread per
//! /// element: launched with 2-D blocks in a 2-D grid (z = 1).
//! #[kernel]
//! pub fn double(input: &[f32], cols: usize, mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_2d(cols);
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = input[idx.get()] * 2.0;
//!     }
//! }
//! ```
//!
//! # Why two threads never get the same element
//!
//! A `ThreadIndex` is computed from the hardware ids, so within one launch it
//! is unique to its thread as long as the launch has no threads the index
//! cannot tell apart. Its type says which dimensions it covers ([`OneD`]: x,
//! [`TwoD`]: x and y, [`ThreeD`]: all three), and three rules make the
//! uniqueness hold by construction:
//!
//! - **The launch covers no other dimension.** The device linker records per
//!   kernel which kinds of index reach `DisjointSlice::get_mut` (through any
//!   call, a call through a function pointer counting as a call of every
//!   function whose address is taken), and `cuda-host` refuses, before the
//!   driver sees it, a launch whose grid or block extends in a dimension one
//!   of them ignores (`HostError::SharedThreadIndices`, naming the kernel and
//!   the dimension). So a kernel using `index_1d` runs only 1-D launches, one
//!   using `index_2d` only launches with z = 1; `index_3d` runs any shape.
//! - **Every thread uses the same row lengths.** `index_2d(row_len)` is
//!   `y * row_len + x`: two threads passing different row lengths could meet
//!   (`1 * 32 + 0 == 0 * 64 + 32`). The device linker therefore requires the
//!   row lengths of all the 2-D and 3-D indices a kernel hands to `get_mut`
//!   to be one value for the whole launch (a constant, a kernel parameter, the
//!   grid and block sizes, arithmetic on those), and fails the build naming
//!   the kernel otherwise.
//! - **No arithmetic wraps.** A coordinate outside its row (`x >= row_len`)
//!   or plane (`y >= rows_per_plane`), or an index that does not fit in a
//!   `usize`, gives *no element*: an index past every valid one, which
//!   `get_mut` answers with `None`.
//!
//! And a `ThreadIndex` stays in the thread that made it: it cannot be built
//! from a number, it is neither `Send` nor `Sync` (so no `shared!` array,
//! `#[constant]` or other static can hold one, and
//! [`SharedArray::stage`](crate::SharedArray::stage) does not take it), no
//! warp shuffle moves it, device buffers cannot hold it (it is not
//! `cuda_core::DeviceRepr`), and it cannot be a kernel argument.
#![allow(non_snake_case)]

use core::fmt;
use core::marker::{PhantomData, PhantomPinned};
use core::panic::Location;

use crate::stubs;

mod sealed {
    pub trait Sealed {}
}

/// Which launch dimensions a [`ThreadIndex`] tells threads apart by:
/// [`OneD`], [`TwoD`] or [`ThreeD`]. Sealed.
pub trait Dimensions: sealed::Sealed + 'static {
    /// The row lengths the index was computed with (none, `row_len`, or
    /// `(row_len, rows_per_plane)`), which the device linker checks.
    #[doc(hidden)]
    type Extents: Copy + Eq + Ord + fmt::Debug;

    /// `index`, handed to `DisjointSlice::get_mut` at `at`: passes through
    /// this kind's marker stub, by which the device linker learns which kinds
    /// of index reach a `DisjointSlice` (docs/ABI.md §3). The identity on
    /// the host.
    #[doc(hidden)]
    fn disjoint_index(index: usize, extents: Self::Extents, at: &'static Location<'static>) -> usize;
}

/// An index over the x dimension only ([`index_1d`]): its kernels launch
/// with y = z = 1 in grid and block.
#[derive(Debug)]
pub enum OneD {}

/// An index over x and y ([`index_2d`]): its kernels launch with z = 1.
#[derive(Debug)]
pub enum TwoD {}

/// An index over x, y and z ([`index_3d`]): any launch shape.
#[derive(Debug)]
pub enum ThreeD {}

impl sealed::Sealed for OneD {}
impl sealed::Sealed for TwoD {}
impl sealed::Sealed for ThreeD {}

/// The location as the marker stubs take it.
#[inline(always)]
fn location_ptr(at: &'static Location<'static>) -> *const u8 {
    (at as *const Location<'static>).cast()
}

impl Dimensions for OneD {
    type Extents = ();
    #[inline(always)]
    fn disjoint_index(index: usize, (): (), _at: &'static Location<'static>) -> usize {
        stubs::__oxide_stub_disjoint_index_1d(index)
    }
}

impl Dimensions for TwoD {
    type Extents = usize;
    #[inline(always)]
    fn disjoint_index(index: usize, row_len: usize, at: &'static Location<'static>) -> usize {
        stubs::__oxide_stub_disjoint_index_2d(index, row_len, location_ptr(at))
    }
}

impl Dimensions for ThreeD {
    type Extents = (usize, usize);
    #[inline(always)]
    fn disjoint_index(index: usize, (row_len, rows_per_plane): (usize, usize), at: &'static Location<'static>) -> usize {
        stubs::__oxide_stub_disjoint_index_3d(index, row_len, rows_per_plane, location_ptr(at))
    }
}

/// What an index is when the thread has no element: past every valid index
/// (a slice holds at most `isize::MAX` bytes), so `get_mut` returns `None`.
const NO_ELEMENT: usize = usize::MAX;

/// A global thread index that came from the hardware thread and block ids.
///
/// It cannot be built from an arbitrary number, which is what makes
/// [`DisjointSlice::get_mut`](crate::DisjointSlice::get_mut) safe: no two
/// threads of a launch hold the same `ThreadIndex` (see the
/// [module docs](self) for how the launch shape, the row lengths and the
/// arithmetic are kept from breaking that). `D` says which dimensions it
/// covers; `ThreadIndex` alone is the 1-D index of [`index_1d`].
pub struct ThreadIndex<D: Dimensions = OneD> {
    index: usize,
    extents: D::Extents,
    /// Not `Send`/`Sync`: the index stays in its thread (no static, shared
    /// array or lock can hold it).
    _this_thread: PhantomData<(D, *const ())>,
    /// Not `Unpin`: cuda-host's by-value kernel arguments need `Unpin`, so
    /// a host cannot pass one in, even one it got out of the emulator.
    _not_an_argument: PhantomPinned,
}

impl<D: Dimensions> ThreadIndex<D> {
    #[inline(always)]
    fn new(index: Option<usize>, extents: D::Extents) -> Self {
        ThreadIndex { index: index.unwrap_or(NO_ELEMENT), extents, _this_thread: PhantomData, _not_an_argument: PhantomPinned }
    }

    /// The index as a `usize`, for indexing ordinary slices. A thread with
    /// no element (outside the row or plane, or past `usize::MAX`) gets
    /// `usize::MAX`, which no slice holds.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.index
    }

    /// The index as `DisjointSlice::get_mut` uses it, through the marker
    /// the device linker reads (`at`: the `get_mut` call, for its messages).
    #[inline(always)]
    pub(crate) fn disjoint_index(self, at: &'static Location<'static>) -> usize {
        D::disjoint_index(self.index, self.extents, at)
    }
}

impl<D: Dimensions> Clone for ThreadIndex<D> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<D: Dimensions> Copy for ThreadIndex<D> {}

impl<D: Dimensions> fmt::Debug for ThreadIndex<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ThreadIndex").field(&self.index).finish()
    }
}

impl<D: Dimensions> PartialEq for ThreadIndex<D> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        (self.index, self.extents) == (other.index, other.extents)
    }
}

impl<D: Dimensions> Eq for ThreadIndex<D> {}

impl<D: Dimensions> PartialOrd for ThreadIndex<D> {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<D: Dimensions> Ord for ThreadIndex<D> {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.index, self.extents).cmp(&(other.index, other.extents))
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

/// `blockIdx * blockDim + threadIdx` in one dimension; `None` if it does
/// not fit in a `usize` (never on a 64-bit target, where it folds away).
#[inline(always)]
fn global(block: u32, dim: u32, thread: u32) -> Option<usize> {
    (block as usize).checked_mul(dim as usize)?.checked_add(thread as usize)
}

/// `blockIdx.x * blockDim.x + threadIdx.x`: the thread's index in a 1-D launch.
///
/// It covers x only, so a kernel that hands it to
/// [`DisjointSlice::get_mut`](crate::DisjointSlice::get_mut) launches with
/// y = z = 1 in grid and block: cuda-host refuses any other shape, which
/// would give the threads that differ only in y or z the same index.
#[inline(always)]
pub fn index_1d() -> ThreadIndex<OneD> {
    ThreadIndex::new(global(blockIdx_x(), blockDim_x(), threadIdx_x()), ())
}

/// The row-major index `y * row_len + x` of the thread in a 2-D launch, where
/// `x` and `y` are the thread's global coordinates.
///
/// Threads whose `x` is outside `0..row_len` would alias another row's
/// elements, and an index past `usize::MAX` would wrap onto another one, so
/// those threads get no element (an index past every valid one, which
/// `DisjointSlice::get_mut` rejects).
///
/// A kernel that hands it to `get_mut` launches with z = 1 in grid and block
/// (cuda-host refuses a launch with threads that differ only in z), and
/// every thread must pass the same `row_len`: a constant, a kernel
/// parameter, or arithmetic on those and the grid and block sizes (the
/// device linker rejects the kernel otherwise; see the [module docs](self)).
#[inline(always)]
pub fn index_2d(row_len: usize) -> ThreadIndex<TwoD> {
    let x = global(blockIdx_x(), blockDim_x(), threadIdx_x());
    let y = global(blockIdx_y(), blockDim_y(), threadIdx_y());
    let index = match (x, y) {
        (Some(x), Some(y)) if x < row_len => y.checked_mul(row_len).and_then(|row| row.checked_add(x)),
        _ => None,
    };
    ThreadIndex::new(index, row_len)
}

/// The row-major index `(z * rows_per_plane + y) * row_len + x` of the
/// thread in a 3-D launch (CUDA's `x + nx * (y + ny * z)`), where `x`, `y`
/// and `z` are the thread's global coordinates.
///
/// Threads whose `x` is outside `0..row_len` or whose `y` is outside
/// `0..rows_per_plane`, and threads whose index would pass `usize::MAX`, get
/// no element (an index past every valid one). It covers every dimension,
/// so any launch shape is accepted; every thread must pass the same
/// `row_len` and `rows_per_plane`, as for [`index_2d`].
#[inline(always)]
pub fn index_3d(row_len: usize, rows_per_plane: usize) -> ThreadIndex<ThreeD> {
    let x = global(blockIdx_x(), blockDim_x(), threadIdx_x());
    let y = global(blockIdx_y(), blockDim_y(), threadIdx_y());
    let z = global(blockIdx_z(), blockDim_z(), threadIdx_z());
    let index = match (x, y, z) {
        (Some(x), Some(y), Some(z)) if x < row_len && y < rows_per_plane => z
            .checked_mul(rows_per_plane)
            .and_then(|rows| rows.checked_add(y))
            .and_then(|row| row.checked_mul(row_len))
            .and_then(|row| row.checked_add(x)),
        _ => None,
    };
    ThreadIndex::new(index, (row_len, rows_per_plane))
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
