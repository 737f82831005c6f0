//! Device-wide inclusive and exclusive scan (CUB's `DeviceScan`), in one
//! pass over the data: decoupled look-back.
//!
//! The input is cut into tiles of 256 threads × 64 bytes (16 four-byte or
//! 8 eight-byte elements per thread). Each block takes the next tile number
//! from an atomic counter (so a tile's predecessors were all taken by blocks
//! that already run), loads its tile with coalesced 16-byte vector loads
//! (warp-striped: each thread holds four runs of consecutive elements, see
//! `src/tile.rs`), scans it (each run in order, one warp scan per
//! run, then a block scan of the warps' totals), and publishes the tile's total with a flag: *partial* (the tile
//! alone). Its first warp then looks back over the preceding tiles, 32 at a
//! time, combining partial totals until it meets a tile flagged *inclusive*
//! (its total includes everything before it); it publishes its own inclusive
//! total and every thread adds the prefix to its results. Each element is
//! read once and written once (a reduce-then-scan design reads it twice);
//! a tile waits
//! only for the flags of its predecessors, not for their whole work.
//!
//! The flags are published with release stores and read with acquire loads
//! at device scope (cuda-device's scoped atomics), the totals beside them
//! with ordinary stores and loads: a reader that sees a flag sees the total
//! written before it.
//!
//! The operator must be associative; it need not be commutative (the order
//! of the elements is kept). The exclusive scan starts from
//! `op.identity()` (0 for [`Sum`](crate::op::Sum), like CUB's
//! `ExclusiveSum`).
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::{op::Sum, scan};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let data = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4])?;
//! let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
//! scan::inclusive_scan(&module, &stream, &data, &mut out, Sum)?;
//! assert_eq!(out.to_host_vec(&stream)?, [1, 3, 6, 10]);
//! scan::exclusive_scan(&module, &stream, &data, &mut out, Sum)?;
//! assert_eq!(out.to_host_vec(&stream)?, [0, 1, 3, 6]);
//! # Ok(())
//! # }
//! ```

use crate::error::check_len;
use crate::op::{Element, ReduceOp};
use crate::temp;
use crate::tile::{self, VECTORS};
use crate::warp;
use crate::PrimsError;
use core::sync::atomic::{AtomicU32, Ordering};
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::warp::{self as dw, FULL_MASK};
use cuda_device::{kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block of the scan kernels.
pub(crate) const BLOCK: usize = 256;

/// A tile's flag: nothing published yet.
pub(crate) const INVALID: u32 = 0;
/// The tile's own total is published.
pub(crate) const PARTIAL: u32 = 1;
/// The total of the tile and all before it is published.
pub(crate) const INCLUSIVE: u32 = 2;

/// Per tile: its flag in `status[1 + tile]`, its own total in `partials`,
/// its inclusive total in `inclusives`. `status[0]` is the tile counter.
#[derive(Clone, Copy)]
pub(crate) struct TileStatus<'a, T> {
    pub status: &'a [AtomicU32],
    pub partials: *mut T,
    pub inclusives: *mut T,
}

impl<T: Element> TileStatus<'_, T> {
    /// The next tile number (thread 0 of each block takes one).
    #[inline(always)]
    pub fn next_tile(&self) -> usize {
        self.status[0].fetch_add_scoped(1, Scope::Device, Ordering::Relaxed) as usize
    }

    /// Publishes `total` for `tile` with `flag` (one thread).
    ///
    /// # Safety
    /// `tile` is this block's tile, below the number of tiles.
    #[inline(always)]
    pub unsafe fn publish(&self, tile: usize, flag: u32, total: T) {
        let values = if flag == INCLUSIVE { self.inclusives } else { self.partials };
        values.add(tile).write(total);
        // Release: the total above is visible to whoever sees the flag.
        self.status[1 + tile].store_scoped(flag, Scope::Device, Ordering::Release);
    }

    /// The flag of `tile` (acquire: its total is readable after it).
    #[inline(always)]
    fn flag(&self, tile: usize) -> u32 {
        self.status[1 + tile].load_scoped(Scope::Device, Ordering::Acquire)
    }

    /// The combined totals of every tile before `tile` (> 0), by the 32
    /// lanes of one warp: lane 31 reads the nearest predecessor, lane 0 the
    /// 32nd; the window's flags are waited for, its totals combined in tile
    /// order up to the nearest inclusive one, and the window moves back
    /// until it meets one. The result is in every lane.
    ///
    /// # Safety
    /// Every tile before `tile` is (or will be) published by a running block.
    #[inline(always)]
    pub unsafe fn look_back<Op: ReduceOp<T>>(&self, tile: usize, op: Op) -> T {
        let lane = dw::lane_id() as isize;
        let mut prefix = op.identity();
        let mut end = tile as isize;
        loop {
            let pred = end - 32 + lane;
            // Tiles before the first count as inclusive and empty.
            let mut flag = if pred < 0 { INCLUSIVE } else { self.flag(pred as usize) };
            while dw::any(FULL_MASK, flag == INVALID) {
                if flag == INVALID {
                    flag = self.flag(pred as usize);
                }
            }
            let value = if pred < 0 {
                op.identity()
            } else if flag == INCLUSIVE {
                self.inclusives.add(pred as usize).read()
            } else {
                self.partials.add(pred as usize).read()
            };
            let inclusive = dw::ballot(FULL_MASK, flag == INCLUSIVE);
            // The nearest inclusive tile ends the look-back; tiles before it
            // are already in its total.
            let nearest = if inclusive != 0 { 31 - inclusive.leading_zeros() } else { 0 };
            let v = if lane as u32 >= nearest { value } else { op.identity() };
            let window = dw::shfl_idx(FULL_MASK, warp::inclusive_scan(v, op), 31);
            prefix = op.combine(window, prefix);
            if inclusive != 0 {
                return prefix;
            }
            end -= 32;
        }
    }
}

/// One tile of an inclusive (`INCLUSIVE_SCAN`) or exclusive scan of `input`
/// into `out`, 64 bytes per thread in warp-striped vectors
/// (`src/tile.rs`). Launched with `BLOCK` threads per block and one
/// block per tile; `status` zeroed, `partials` and `inclusives` one element
/// per tile.
#[kernel]
pub fn scan_tiles<T: Element, Op: ReduceOp<T>, const INCLUSIVE_SCAN: bool>(
    input: &[T],
    op: Op,
    mut out: DisjointSlice<T>,
    status: &[AtomicU32],
    mut partials: DisjointSlice<T>,
    mut inclusives: DisjointSlice<T>,
) {
    // Warp totals (BLOCK / 32) then the tile's prefix, as Elements of at
    // most 8 bytes; and the tile number.
    shared! { static WORDS: [u64; BLOCK / 32 + 1]; }
    shared! { static TILE: [u32; 1]; }
    let tiles = TileStatus { status, partials: partials.as_mut_ptr(), inclusives: inclusives.as_mut_ptr() };
    let tid = thread::threadIdx_x() as usize;
    let (warp_index, lane) = (tid / 32, tid % 32);
    let tile_slot = TILE.as_mut_ptr();
    if tid == 0 {
        // SAFETY: one thread writes the slot; the others read it after the barrier.
        unsafe { tile_slot.write(tiles.next_tile() as u32) };
    }
    thread::sync_threads();
    // SAFETY: written before the barrier above, never again.
    let tile = unsafe { tile_slot.read() } as usize;
    let n = input.len();
    let tile_start = tile * BLOCK * tile::items::<T>();
    let full = tile_start + BLOCK * tile::items::<T>() <= n;
    // SAFETY: the input is a DeviceBuffer's (16-byte aligned; the host checks).
    let mut v = unsafe { tile::load(input, tile_start, warp_index, lane, full, op.identity()) };
    let slots = WORDS.as_mut_ptr() as *mut T;
    // SAFETY: WORDS holds BLOCK / 32 + 1 Elements; all threads are here;
    // the prefix slot (index BLOCK / 32) is written only after the scan's barrier.
    let (run_prefixes, tile_total) = unsafe { tile::scan_runs::<T, Op, BLOCK>(tile::run_totals(&v, op), op, slots) };
    let prefix_slot = unsafe { slots.add(BLOCK / 32) };
    if tid < 32 {
        let lane0 = tid == 0;
        let prefix = if tile == 0 {
            if lane0 {
                // SAFETY: tile 0 is this block's.
                unsafe { tiles.publish(0, INCLUSIVE, tile_total) };
            }
            op.identity()
        } else {
            if lane0 {
                // SAFETY: as above.
                unsafe { tiles.publish(tile, PARTIAL, tile_total) };
            }
            // SAFETY: every tile before this one was taken by a block that
            // runs (tile numbers come from the counter in start order).
            let prefix = unsafe { tiles.look_back(tile, op) };
            if lane0 {
                // SAFETY: as above.
                unsafe { tiles.publish(tile, INCLUSIVE, op.combine(prefix, tile_total)) };
            }
            prefix
        };
        if lane0 {
            // SAFETY: one writer; read by all after the barrier below.
            unsafe { prefix_slot.write(prefix) };
        }
    }
    thread::sync_threads();
    // SAFETY: written before the barrier above.
    let tile_prefix = unsafe { prefix_slot.read() };
    let mut j = 0;
    unroll!(full, while j < VECTORS {
        let mut running = op.combine(tile_prefix, run_prefixes[j]);
        let mut e = 0;
        while e < tile::lanes::<T>() {
            let k = j * tile::lanes::<T>() + e;
            let x = tile::get::<T>(&v, k);
            if INCLUSIVE_SCAN {
                running = op.combine(running, x);
                tile::set(&mut v, k, running);
            } else {
                tile::set(&mut v, k, running);
                running = op.combine(running, x);
            }
            e += 1;
        }
        j += 1;
    });
    let len = n.min(out.len());
    // SAFETY: `out` is a DeviceBuffer as long as the input (16-byte
    // aligned); this thread's elements of this tile are its own (tile
    // numbers are unique).
    unsafe { tile::store(out.as_mut_ptr(), len, &v, tile_start, warp_index, lane, full) };
}

/// The look-back of `tile` over flags and totals the caller prepared, by
/// one warp: `out[0]` = the combined totals before `tile`. A test hook: in
/// a running scan the windows beyond the first are rare, so a test sets up
/// the flags that need them (see [`look_back_probe_run`]). Launch one warp.
#[doc(hidden)]
#[kernel]
pub fn look_back_probe<T: Element, Op: ReduceOp<T>>(
    status: &[AtomicU32],
    op: Op,
    mut partials: DisjointSlice<T>,
    mut inclusives: DisjointSlice<T>,
    tile: usize,
    mut out: DisjointSlice<T>,
) {
    let tiles = TileStatus { status, partials: partials.as_mut_ptr(), inclusives: inclusives.as_mut_ptr() };
    // SAFETY: the host published every tile before `tile` (checked there).
    let prefix = unsafe { tiles.look_back(tile, op) };
    if thread::threadIdx_x() == 0 && !out.is_empty() {
        // SAFETY: one thread writes the one element.
        unsafe { *out.get_unchecked_mut(0) = prefix };
    }
}

/// Runs [`look_back_probe`] for the tile after those described: per tile
/// before it, whether it is flagged inclusive (else partial) and its two
/// totals. A test hook.
#[doc(hidden)]
pub fn look_back_probe_run<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    inclusive: &[bool],
    partials: &[T],
    inclusives: &[T],
    op: Op,
) -> Result<T, PrimsError> {
    let tile = inclusive.len();
    assert!(tile > 0 && partials.len() == tile && inclusives.len() == tile, "one flag and two totals per tile before the probed one");
    assert!(inclusive[0], "tile 0 is always inclusive");
    let mut words = vec![0u32; tile + 2];
    for (w, &inc) in words[1..=tile].iter_mut().zip(inclusive) {
        *w = if inc { INCLUSIVE } else { PARTIAL };
    }
    let mut status = DeviceBuffer::from_host(stream, &words)?;
    let mut partials = DeviceBuffer::from_host(stream, partials)?;
    let mut inclusives = DeviceBuffer::from_host(stream, inclusives)?;
    let mut out = temp::scratch::<T>(stream, 1)?;
    let one_warp = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let status = status.as_atomic::<AtomicU32>();
    cuda_launch! {
        kernel: look_back_probe::<T, Op>, stream: stream, module: module, config: one_warp,
        args: [status, op, slice_mut(partials), slice_mut(inclusives), tile, slice_mut(out)]
    }?;
    Ok(out.to_host_vec(stream)?[0])
}

/// The scratch of one look-back pass over `tiles` tiles: flags and counter
/// (zeroed), partial and inclusive totals (written before read: a total is
/// read only after its flag, which is set after the total is written).
pub(crate) struct LookBack<T: Element> {
    pub status: DeviceBuffer<u32>,
    pub partials: DeviceBuffer<T>,
    pub inclusives: DeviceBuffer<T>,
}

impl<T: Element> LookBack<T> {
    pub(crate) fn new(stream: &CudaStream, tiles: usize, what: &'static str) -> Result<Self, PrimsError> {
        if tiles >= u32::MAX as usize {
            return Err(PrimsError::TooLarge { what, len: tiles, max: u32::MAX as usize - 1 });
        }
        Ok(LookBack {
            status: temp::zeroed(stream, tiles + 1)?,
            partials: temp::scratch(stream, tiles)?,
            inclusives: temp::scratch(stream, tiles)?,
        })
    }
}

pub(crate) fn tile_config(tiles: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 }
}

fn scan<T: Element, Op: ReduceOp<T>, const INCLUSIVE_SCAN: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
    what: &'static str,
) -> Result<(), PrimsError> {
    check_len(what, input.len(), out.len())?;
    let n = input.len();
    if n == 0 {
        return Ok(());
    }
    debug_assert_eq!(input.device_ptr() % 16, 0);
    let tiles = n.div_ceil(BLOCK * tile::items::<T>());
    let mut lb = LookBack::<T>::new(stream, tiles, what)?;
    let status = lb.status.as_atomic::<AtomicU32>();
    cuda_launch! {
        kernel: scan_tiles::<T, Op, INCLUSIVE_SCAN>, stream: stream, module: module, config: tile_config(tiles),
        args: [slice(*input), op, slice_mut(*out), status, slice_mut(lb.partials), slice_mut(lb.inclusives)]
    }?;
    Ok(())
}

/// `out[i] = input[0] op … op input[i]`, on `stream` (`out` as long as
/// `input`). `op` must be associative.
pub fn inclusive_scan<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
) -> Result<(), PrimsError> {
    scan::<T, Op, true>(module, stream, input, out, op, "inclusive_scan: output")
}

/// `out[0] = op.identity()`, `out[i] = input[0] op … op input[i - 1]`, on
/// `stream` (`out` as long as `input`). `op` must be associative.
pub fn exclusive_scan<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
) -> Result<(), PrimsError> {
    scan::<T, Op, false>(module, stream, input, out, op, "exclusive_scan: output")
}
