//! Block-level reduce, scan, load and store, for the user's own kernels
//! (device code).
//!
//! [`Block<BLOCK>`](Block) names the block size as a const generic: every
//! function here is called by all `BLOCK` threads of a 1-D block of
//! exactly `BLOCK` threads (a multiple of 32, at most 1024), and checks
//! that it is (a different launch panics in the kernel, naming the check).
//!
//! Reduce and scan take their shared-memory storage from the caller, as
//! CUB's `TempStorage`: a [`SharedArray`] of at least
//! [`Block::<BLOCK>::WARPS`](Block::WARPS) elements of the value type,
//! declared with `shared!` in the kernel (a static in a generic function
//! cannot name the function's type parameters, so the library cannot
//! declare it for every `T`). They wait at a block barrier before and after
//! using it, so the same array serves any number of calls, and no access
//! the caller made to it before or after can race with theirs.
//!
//! Items per thread: a thread holds `I` items in one of two arrangements.
//! *Blocked*: thread `t` holds items `t·I .. t·I + I` of the block's tile
//! (what a scan of several items per thread wants). *Striped*: thread `t`
//! holds items `t, t + BLOCK, t + 2·BLOCK, …` (what coalesced loads give).
//!
//! ```
//! use cuda_device::{kernel, shared, thread, DisjointSlice};
//! use cuda_prims::{block::Block, op::Sum};
//!
//! type B = Block<256>;
//!
//! /// Block-wide exclusive prefix sums of 4 items per thread: each block
//! /// of 256 threads scans its own tile of 1024 elements.
//! #[kernel]
//! pub fn tile_prefix_sums(input: &[u32], mut out: DisjointSlice<u32>) {
//!     shared! { static TEMP: [u32; B::WARPS]; }
//!     let tile = thread::blockIdx_x() as usize * B::tile_len(4);
//!     let items: [u32; 4] = B::load_blocked(input, tile, 0);
//!     let (prefixes, _total) = B::exclusive_scan_items(items, Sum, &TEMP);
//!     B::store_blocked(&mut out, prefixes);
//! }
//! ```

use crate::op::ReduceOp;
use crate::warp;
use cuda_device::shared::{Alignment, SharedArray};
use cuda_device::warp::{self as dw, Shuffle, FULL_MASK};
use cuda_device::{thread, DisjointSlice};

/// The block-level operations for blocks of `BLOCK` threads (see the
/// [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct Block<const BLOCK: usize>;

impl<const BLOCK: usize> Block<BLOCK> {
    /// Warps per block: the least length of the shared array reduce and
    /// scan take.
    pub const WARPS: usize = {
        assert!(BLOCK.is_multiple_of(32) && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32 in 32..=1024");
        BLOCK / 32
    };

    /// Elements in a tile of `items_per_thread` items per thread.
    pub const fn tile_len(items_per_thread: usize) -> usize {
        BLOCK * items_per_thread
    }

    /// The calling thread's index in the block, after checking the launch
    /// shape.
    #[inline(always)]
    fn thread_rank() -> usize {
        let _ = Self::WARPS;
        assert!(
            thread::blockDim_x() as usize == BLOCK && thread::blockDim_y() == 1 && thread::blockDim_z() == 1,
            "cuda_prims::block::Block<BLOCK> called in a block that is not BLOCK threads in x"
        );
        thread::threadIdx_x() as usize
    }

    /// `value` combined over the block, in every thread (`op` associative
    /// and commutative). `temp`: at least [`WARPS`](Self::WARPS) elements.
    #[inline(always)]
    pub fn reduce<T, Op, const N: usize, A>(value: T, op: Op, temp: &SharedArray<T, N, A>) -> T
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        const { assert!(N >= BLOCK / 32, "the shared array of a block reduce needs Block::<BLOCK>::WARPS elements") };
        Self::thread_rank();
        // Barriers on both sides: accesses to `temp` before and after are
        // ordered against these.
        thread::sync_threads();
        // SAFETY: `temp` is a shared array of N >= WARPS elements, all BLOCK
        // threads are here (checked shape; the caller's contract), and the
        // barriers around keep every other access to it apart.
        let total = unsafe { raw_reduce::<T, Op, BLOCK>(value, op, temp.as_mut_ptr()) };
        thread::sync_threads();
        total
    }

    /// The items of every thread combined over the block, in every thread.
    #[inline(always)]
    pub fn reduce_items<T, Op, const I: usize, const N: usize, A>(items: [T; I], op: Op, temp: &SharedArray<T, N, A>) -> T
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        Self::reduce(fold(items, op), op, temp)
    }

    /// Inclusive scan over the threads in thread order: thread `t` gets
    /// `v0 op … op vt`. The operator need not be commutative.
    #[inline(always)]
    pub fn inclusive_scan<T, Op, const N: usize, A>(value: T, op: Op, temp: &SharedArray<T, N, A>) -> T
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        let (exclusive, _) = Self::exclusive_scan(value, op, temp);
        op.combine(exclusive, value)
    }

    /// Exclusive scan over the threads in thread order, and the block's
    /// total: thread 0 gets `op.identity()`, thread `t` gets
    /// `v0 op … op v(t-1)`; every thread gets the total.
    #[inline(always)]
    pub fn exclusive_scan<T, Op, const N: usize, A>(value: T, op: Op, temp: &SharedArray<T, N, A>) -> (T, T)
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        const { assert!(N >= BLOCK / 32, "the shared array of a block scan needs Block::<BLOCK>::WARPS elements") };
        Self::thread_rank();
        thread::sync_threads();
        // SAFETY: as in `reduce`.
        let result = unsafe { raw_exclusive_scan::<T, Op, BLOCK>(value, op, temp.as_mut_ptr()) };
        thread::sync_threads();
        result
    }

    /// Exclusive scan of `I` items per thread in the blocked arrangement
    /// (the block's items in order are thread 0's, then thread 1's, …), and
    /// the block's total.
    #[inline(always)]
    pub fn exclusive_scan_items<T, Op, const I: usize, const N: usize, A>(
        items: [T; I],
        op: Op,
        temp: &SharedArray<T, N, A>,
    ) -> ([T; I], T)
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        let (prefix, total) = Self::exclusive_scan(fold(items, op), op, temp);
        (scan_from(prefix, items, op, false), total)
    }

    /// Inclusive scan of `I` items per thread in the blocked arrangement,
    /// and the block's total.
    #[inline(always)]
    pub fn inclusive_scan_items<T, Op, const I: usize, const N: usize, A>(
        items: [T; I],
        op: Op,
        temp: &SharedArray<T, N, A>,
    ) -> ([T; I], T)
    where
        T: Shuffle,
        Op: ReduceOp<T>,
        A: Alignment,
    {
        let (prefix, total) = Self::exclusive_scan(fold(items, op), op, temp);
        (scan_from(prefix, items, op, true), total)
    }

    /// Loads this thread's `I` items of the tile that starts at `tile_start`
    /// in the blocked arrangement; items past the end of `src` are `default`.
    #[inline(always)]
    pub fn load_blocked<T: Copy, const I: usize>(src: &[T], tile_start: usize, default: T) -> [T; I] {
        let first = tile_start + Self::thread_rank() * I;
        core::array::from_fn(|k| src.get(first + k).copied().unwrap_or(default))
    }

    /// Loads this thread's `I` items of the tile that starts at `tile_start`
    /// in the striped arrangement (coalesced); items past the end are `default`.
    #[inline(always)]
    pub fn load_striped<T: Copy, const I: usize>(src: &[T], tile_start: usize, default: T) -> [T; I] {
        let first = tile_start + Self::thread_rank();
        core::array::from_fn(|k| src.get(first + k * BLOCK).copied().unwrap_or(default))
    }

    /// The first element of this block's tile of `I` items per thread
    /// (`blockIdx.x · BLOCK · I`), after checking that the grid is 1-D, so
    /// that no two threads of the launch own the same elements.
    #[inline(always)]
    fn own_tile<const I: usize>() -> usize {
        assert!(
            thread::gridDim_y() == 1 && thread::gridDim_z() == 1,
            "cuda_prims::block stores need a 1-D grid (one tile per block index)"
        );
        thread::blockIdx_x() as usize * BLOCK * I
    }

    /// Stores this thread's `I` items in the blocked arrangement into this
    /// block's tile of `dst` (tile `blockIdx.x` of `BLOCK · I` elements);
    /// items past the end of `dst` are dropped. Needs a 1-D grid.
    #[inline(always)]
    pub fn store_blocked<T, const I: usize>(dst: &mut DisjointSlice<T>, items: [T; I]) {
        let first = Self::own_tile::<I>() + Self::thread_rank() * I;
        for (k, item) in items.into_iter().enumerate() {
            if first + k < dst.len() {
                // SAFETY: in bounds; element `first + k` belongs to this
                // thread alone: thread t of block b owns b·BLOCK·I + t·I + k,
                // distinct for every (b, t, k) of a 1-D grid of BLOCK-thread
                // blocks (both checked).
                unsafe { *dst.get_unchecked_mut(first + k) = item };
            }
        }
    }

    /// Stores this thread's `I` items in the striped arrangement into this
    /// block's tile of `dst`; items past the end of `dst` are dropped.
    /// Needs a 1-D grid.
    #[inline(always)]
    pub fn store_striped<T, const I: usize>(dst: &mut DisjointSlice<T>, items: [T; I]) {
        let first = Self::own_tile::<I>() + Self::thread_rank();
        for (k, item) in items.into_iter().enumerate() {
            let i = first + k * BLOCK;
            if i < dst.len() {
                // SAFETY: in bounds; thread t of block b owns
                // b·BLOCK·I + t + k·BLOCK, distinct for every (b, t, k).
                unsafe { *dst.get_unchecked_mut(i) = item };
            }
        }
    }
}

/// `items` combined in order.
#[inline(always)]
pub(crate) fn fold<T: Copy, Op: ReduceOp<T>, const I: usize>(items: [T; I], op: Op) -> T {
    const { assert!(I > 0, "a thread holds at least one item") };
    let mut acc = items[0];
    let mut k = 1;
    while k < I {
        acc = op.combine(acc, items[k]);
        k += 1;
    }
    acc
}

/// The running results of `items` after `prefix`: inclusive (`prefix op
/// x0 … op xk` at k) or exclusive (`prefix op x0 … op x(k-1)`).
#[inline(always)]
pub(crate) fn scan_from<T: Copy, Op: ReduceOp<T>, const I: usize>(prefix: T, items: [T; I], op: Op, inclusive: bool) -> [T; I] {
    let mut out = items;
    let mut running = prefix;
    let mut k = 0;
    while k < I {
        if inclusive {
            running = op.combine(running, items[k]);
            out[k] = running;
        } else {
            out[k] = running;
            running = op.combine(running, items[k]);
        }
        k += 1;
    }
    out
}

/// Block reduce through `slots` (one per warp), the result in every thread.
///
/// # Safety
/// All `BLOCK` threads of a `BLOCK`-thread block call it; `slots` points to
/// at least `BLOCK / 32` elements of block-shared memory that nothing else
/// accesses from the barrier before this call until a barrier after it.
#[inline(always)]
pub(crate) unsafe fn raw_reduce<T: Shuffle, Op: ReduceOp<T>, const BLOCK: usize>(value: T, op: Op, slots: *mut T) -> T {
    let warps = BLOCK / 32;
    let partial = warp::reduce(value, op);
    if warps == 1 {
        return partial;
    }
    let lane = dw::lane_id() as usize;
    let w = thread::threadIdx_x() as usize / 32;
    if lane == 0 {
        slots.add(w).write(partial);
    }
    thread::sync_threads();
    let x = if lane < warps { slots.add(lane).read() } else { op.identity() };
    warp::reduce(x, op)
}

/// Block exclusive scan through `slots`: (this thread's exclusive prefix,
/// the block's total), in thread order.
///
/// # Safety
/// As [`raw_reduce`].
#[inline(always)]
pub(crate) unsafe fn raw_exclusive_scan<T: Shuffle, Op: ReduceOp<T>, const BLOCK: usize>(
    value: T,
    op: Op,
    slots: *mut T,
) -> (T, T) {
    let warps = BLOCK / 32;
    let (in_warp, warp_total) = warp::exclusive_scan(value, op);
    if warps == 1 {
        return (in_warp, warp_total);
    }
    let (warp_prefix, total) = raw_exclusive_scan_warps::<T, Op, BLOCK>(warp_total, op, slots);
    let w = thread::threadIdx_x() as usize / 32;
    let prefix = if w == 0 { in_warp } else { op.combine(warp_prefix, in_warp) };
    (prefix, total)
}

/// The exclusive scan of the warps' totals (`warp_total`, the same in
/// every lane of a warp) through `slots`: (the combined totals of the
/// warps before this one, `op.identity()` in warp 0; the block's total).
///
/// # Safety
/// As [`raw_reduce`].
#[inline(always)]
pub(crate) unsafe fn raw_exclusive_scan_warps<T: Shuffle, Op: ReduceOp<T>, const BLOCK: usize>(
    warp_total: T,
    op: Op,
    slots: *mut T,
) -> (T, T) {
    raw_exclusive_scan_warps_of::<T, Op>(warp_total, op, slots, BLOCK / 32)
}

/// [`raw_exclusive_scan_warps`] for a block of `warps` warps, a number
/// known only at run time (1 ..= 32).
///
/// # Safety
/// As [`raw_reduce`], with all `warps · 32` threads of the block calling.
#[inline(always)]
pub(crate) unsafe fn raw_exclusive_scan_warps_of<T: Shuffle, Op: ReduceOp<T>>(
    warp_total: T,
    op: Op,
    slots: *mut T,
    warps: usize,
) -> (T, T) {
    if warps == 1 {
        return (op.identity(), warp_total);
    }
    let lane = dw::lane_id() as usize;
    let w = thread::threadIdx_x() as usize / 32;
    if lane == 0 {
        slots.add(w).write(warp_total);
    }
    thread::sync_threads();
    let x = if lane < warps { slots.add(lane).read() } else { op.identity() };
    // Lane k: the totals of warps 0 ..= k.
    let scanned = warp::inclusive_scan(x, op);
    let total = dw::shfl_idx(FULL_MASK, scanned, warps as u32 - 1);
    let before = dw::shfl_idx(FULL_MASK, scanned, (w as u32).saturating_sub(1));
    (if w == 0 { op.identity() } else { before }, total)
}

/// The `len` (> 0) elements at `p` combined in order.
///
/// # Safety
/// `p` points to `len` readable elements.
#[inline(always)]
pub(crate) unsafe fn fold_ptr<T: Copy, Op: ReduceOp<T>>(p: *const T, len: usize, op: Op) -> T {
    let mut acc = p.read();
    let mut k = 1;
    while k < len {
        acc = op.combine(acc, p.add(k).read());
        k += 1;
    }
    acc
}
