//! The device-side loads and stores of the device-wide kernels: whole
//! 16-byte vectors (`ld.global.v4.u32` / `v2.u64`), one element at a time
//! only at the ragged end.
//!
//! The scan and select kernels hold `V` vectors per thread (a const
//! generic: [`VECTORS`] for the histogram; the scan's is a tuning knob) in a
//! *warp-striped* arrangement: vector `j` of lane `l` of warp `w` is vector
//! `(w · V + j) · 32 + l` of the tile, so each load or store
//! instruction of a warp covers 512 contiguous bytes (fully coalesced),
//! with no shared-memory transpose. A thread's elements then form
//! `V` runs of consecutive elements; [`scan_runs`] gives every run its
//! prefix in tile order. The block size is the launch's (`blockDim.x`, a
//! multiple of 32): nothing here depends on it at compile time.

use crate::block::{fold_ptr, raw_exclusive_scan_warps_of};
use crate::op::{Element, ReduceOp};
use crate::warp;
use cuda_device::{cache, thread, unroll};
use cuda_device::warp::Shuffle;

/// 16 bytes, aligned to 16: one vector load or store.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Vector16(pub [u32; 4]);

/// Vectors per thread of the histogram (64 bytes).
pub(crate) const VECTORS: usize = 4;

/// A thread's `V` vectors.
pub(crate) type Vectors<const V: usize> = [Vector16; V];

/// Elements of `T` in one 16-byte vector.
#[inline(always)]
pub(crate) const fn lanes<T>() -> usize {
    16 / core::mem::size_of::<T>()
}

/// Elements per thread in `V` vectors.
#[inline(always)]
pub(crate) const fn items<T, const V: usize>() -> usize {
    V * lanes::<T>()
}

/// `acc` combined with the elements of `v`, in order.
#[inline(always)]
pub(crate) fn combine_vector<T: Element, Op: ReduceOp<T>>(acc: T, v: Vector16, op: Op) -> T {
    let elems = &v as *const Vector16 as *const T;
    let mut acc = acc;
    let mut j = 0;
    while j < lanes::<T>() {
        // SAFETY: an Element is 4 or 8 bytes, so `lanes` of them fill the
        // 16 bytes of `v`, and every bit pattern is a valid Element.
        acc = op.combine(acc, unsafe { elems.add(j).read() });
        j += 1;
    }
    acc
}

/// Element `k` (`0 .. items::<T, V>()`) of a thread's vectors.
#[inline(always)]
pub(crate) fn get<T: Element, const V: usize>(v: &Vectors<V>, k: usize) -> T {
    debug_assert!(k < items::<T, V>());
    // SAFETY: k < items: inside the 64 bytes, at a multiple of T's size
    // (and alignment: Elements are 4 or 8 bytes, the vectors 16-aligned).
    unsafe { (v.as_ptr() as *const T).add(k).read() }
}

/// Sets element `k` of a thread's vectors.
#[inline(always)]
pub(crate) fn set<T: Element, const V: usize>(v: &mut Vectors<V>, k: usize, x: T) {
    debug_assert!(k < items::<T, V>());
    // SAFETY: as in `get`.
    unsafe { (v.as_mut_ptr() as *mut T).add(k).write(x) }
}

/// The tile's index of the first element of this thread's vector `j`.
#[inline(always)]
pub(crate) fn vector_start<T, const V: usize>(tile_start: usize, warp: usize, lane: usize, j: usize) -> usize {
    tile_start + ((warp * V + j) * 32 + lane) * lanes::<T>()
}

/// Asks L2 (`cache::prefetch_l2`) for the input of tile `tile` of
/// `threads · V` vectors, if it starts inside `input`: each thread takes
/// its own `V · 16` consecutive bytes of the tile, one request every
/// `step` bytes (32: every sector; 128: every line, one request at 8
/// vectors), so the block's requests cover the tile once at that
/// granularity. Only a hint: no value changes, and every address asked
/// for is inside `input`.
#[inline(always)]
pub(crate) fn prefetch<T, const V: usize>(input: &[T], tile: usize, threads: usize, step: usize) {
    let tid = thread::threadIdx_x() as usize;
    let mut k = 0;
    while k < prefetch_requests::<V>(step) {
        let index = prefetch_index::<T, V>(tile, threads, tid, k, step);
        if index < input.len() {
            cache::prefetch_l2(input.as_ptr().wrapping_add(index));
        }
        k += 1;
    }
}

/// Asks L2 (`cache::prefetch_l2_bulk`, sm_90 and newer) for the input of
/// tile `tile` of `threads · V` vectors in one request, from the calling
/// thread alone: the part of the tile inside `input`, nothing if it starts
/// past the end. Only a hint, as [`prefetch`].
#[inline(always)]
pub(crate) fn prefetch_whole<T, const V: usize>(input: &[T], tile: usize, threads: usize) {
    if let Some(part) = input.get(tile_range::<T, V>(input.len(), tile, threads)) {
        cache::prefetch_l2_bulk(part);
    }
}

/// The elements of tile `tile` of `threads · V` vectors inside an input of
/// `len` elements (a start past `len`: an empty or reversed range, which
/// `get` refuses or makes empty).
#[inline(always)]
fn tile_range<T, const V: usize>(len: usize, tile: usize, threads: usize) -> core::ops::Range<usize> {
    let per_tile = threads * items::<T, V>();
    let start = tile * per_tile;
    start..len.min(start + per_tile)
}

/// The requests each thread makes in [`prefetch`]: one starting in every
/// `step` bytes its `V · 16` bytes touch.
#[inline(always)]
fn prefetch_requests<const V: usize>(step: usize) -> usize {
    (V * 16).div_ceil(step)
}

/// The element thread `tid` asks for `k`-th in [`prefetch`].
#[inline(always)]
fn prefetch_index<T, const V: usize>(tile: usize, threads: usize, tid: usize, k: usize, step: usize) -> usize {
    (tile * threads + tid) * items::<T, V>() + k * (step / core::mem::size_of::<T>())
}

/// Loads this thread's vectors of the tile at `tile_start` of `input`
/// (`full`: the whole tile is inside it); elements past the end are `fill`.
///
/// # Safety
/// `input`'s data is 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn load<T: Element, const V: usize>(
    input: &[T],
    tile_start: usize,
    warp: usize,
    lane: usize,
    full: bool,
    fill: T,
) -> Vectors<V> {
    let mut v = [Vector16([0; 4]); V];
    let mut j = 0;
    unroll!(full, while j < V {
        let first = vector_start::<T, V>(tile_start, warp, lane, j);
        if full {
            // SAFETY: inside the input (full tile), at a multiple of 16
            // bytes from its aligned start.
            v[j] = (input.as_ptr().add(first) as *const Vector16).read();
        } else {
            let mut e = 0;
            while e < lanes::<T>() {
                set(&mut v, j * lanes::<T>() + e, input.get(first + e).copied().unwrap_or(fill));
                e += 1;
            }
        }
        j += 1;
    });
    v
}

/// Stores this thread's vectors into the tile at `tile_start` of `out`
/// (`len` elements; `full`: the whole tile is inside it).
///
/// # Safety
/// `out` points to `len` elements, 16-byte aligned, and this thread's
/// elements of the tile are written by no other thread.
#[inline(always)]
pub(crate) unsafe fn store<T: Element, const V: usize>(
    out: *mut T,
    len: usize,
    v: &Vectors<V>,
    tile_start: usize,
    warp: usize,
    lane: usize,
    full: bool,
) {
    let mut j = 0;
    unroll!(full, while j < V {
        let first = vector_start::<T, V>(tile_start, warp, lane, j);
        if full {
            (out.add(first) as *mut Vector16).write(v[j]);
        } else {
            let mut e = 0;
            while e < lanes::<T>() {
                if first + e < len {
                    out.add(first + e).write(get(v, j * lanes::<T>() + e));
                }
                e += 1;
            }
        }
        j += 1;
    });
}

/// The exclusive prefixes, in tile order within the block, of this
/// thread's `V` runs whose totals are `runs`, and the block's total.
/// Per run, one warp scan (the runs of a warp's vector `j` are consecutive
/// across its lanes); the warps' totals then through `slots`.
///
/// # Safety
/// As [`crate::block::raw_reduce`]: all `warps · 32` threads of the block
/// call it, `slots` holds `warps` elements of block-shared memory used by
/// nothing else until a barrier after.
#[inline(always)]
pub(crate) unsafe fn scan_runs<T: Shuffle, Op: ReduceOp<T>, const V: usize>(
    runs: [T; V],
    op: Op,
    slots: *mut T,
    warps: usize,
) -> ([T; V], T) {
    let mut prefixes = runs;
    let mut warp_running = op.identity();
    let mut j = 0;
    unroll!(full, while j < V {
        let (before_in_segment, segment_total) = warp::exclusive_scan(runs[j], op);
        prefixes[j] = op.combine(warp_running, before_in_segment);
        warp_running = op.combine(warp_running, segment_total);
        j += 1;
    });
    let (warp_prefix, block_total) = raw_exclusive_scan_warps_of::<T, Op>(warp_running, op, slots, warps);
    j = 0;
    unroll!(full, while j < V {
        prefixes[j] = op.combine(warp_prefix, prefixes[j]);
        j += 1;
    });
    (prefixes, block_total)
}

/// The totals of this thread's runs.
#[inline(always)]
pub(crate) fn run_totals<T: Element, Op: ReduceOp<T>, const V: usize>(v: &Vectors<V>, op: Op) -> [T; V] {
    core::array::from_fn(|j| {
        // SAFETY: vector j's elements.
        unsafe { fold_ptr((v.as_ptr() as *const T).add(j * lanes::<T>()), lanes::<T>(), op) }
    })
}

/// Expands to `$launch!(V)` for a tile shape's `vectors`, `V` a literal:
/// 4, 6 or 8 for 4-byte elements, 4, 8 or 12 for 8-byte ones (what
/// `ScanTuning::parse` accepts). Only the instances an element size can
/// take are named: a branch on a constant is not compiled into the
/// instances it cannot reach.
macro_rules! with_vectors {
    ($t:ty, $vectors:expr, $launch:ident) => {
        if const { core::mem::size_of::<$t>() > 4 } {
            match $vectors {
                4 => $launch!(4),
                8 => $launch!(8),
                _ => $launch!(12),
            }
        } else {
            match $vectors {
                4 => $launch!(4),
                6 => $launch!(6),
                _ => $launch!(8),
            }
        }
    };
}
pub(crate) use with_vectors;

/// The bits of an element, zero-extended to 64.
#[inline(always)]
pub(crate) fn to_bits<T: Element>(x: T) -> u64 {
    // SAFETY: an Element is 4 or 8 bytes of plain data.
    unsafe {
        if core::mem::size_of::<T>() == 4 {
            (&x as *const T as *const u32).read() as u64
        } else {
            (&x as *const T as *const u64).read()
        }
    }
}

/// The element whose bits are the low `size_of::<T>()` bytes of `bits`.
#[inline(always)]
pub(crate) fn from_bits<T: Element>(bits: u64) -> T {
    // SAFETY: as in `to_bits`; every bit pattern is a valid Element.
    unsafe {
        if core::mem::size_of::<T>() == 4 {
            (&(bits as u32) as *const u32 as *const T).read()
        } else {
            (&bits as *const u64 as *const T).read()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `step`-byte pieces of tile `tile` that [`prefetch`]'s addresses
    /// fall in, against every piece the tile's bytes touch.
    fn pieces_asked_and_touched<T, const V: usize>(tile: usize, threads: usize, step: usize) -> (Vec<usize>, Vec<usize>) {
        let size = core::mem::size_of::<T>();
        let mut asked: Vec<usize> = (0..threads)
            .flat_map(|tid| (0..prefetch_requests::<V>(step)).map(move |k| prefetch_index::<T, V>(tile, threads, tid, k, step) * size / step))
            .collect();
        asked.sort_unstable();
        asked.dedup();
        let (start, end) = (tile * threads * V * 16, (tile + 1) * threads * V * 16);
        let touched = (start / step..end.div_ceil(step)).collect();
        (asked, touched)
    }

    #[test]
    fn prefetch_asks_for_every_piece_of_the_tile_and_no_other() {
        for step in [32, 64, 128] {
            for tile in [0, 1, 7] {
                for threads in [32, 96, 128, 224, 256, 384] {
                    let cases = [
                        pieces_asked_and_touched::<u32, 4>(tile, threads, step),
                        pieces_asked_and_touched::<u32, 6>(tile, threads, step),
                        pieces_asked_and_touched::<u32, 8>(tile, threads, step),
                        pieces_asked_and_touched::<u64, 4>(tile, threads, step),
                        pieces_asked_and_touched::<u64, 6>(tile, threads, step),
                        pieces_asked_and_touched::<u64, 8>(tile, threads, step),
                        pieces_asked_and_touched::<u64, 12>(tile, threads, step),
                    ];
                    for (k, (asked, touched)) in cases.into_iter().enumerate() {
                        assert_eq!(asked, touched, "case {k}, step {step}, tile {tile}, {threads} threads");
                    }
                }
            }
        }
    }

    #[test]
    fn the_whole_tile_request_ends_with_the_input() {
        // 128 threads × 8 vectors of 4 u32 = 4096 elements per tile.
        assert_eq!(tile_range::<u32, 8>(1 << 20, 3, 128), 3 * 4096..4 * 4096);
        assert_eq!(tile_range::<u32, 8>(3 * 4096 + 5, 3, 128), 3 * 4096..3 * 4096 + 5);
        assert_eq!(tile_range::<u64, 12>(1 << 20, 1, 224), 224 * 12 * 2..2 * 224 * 12 * 2);
        let data = [0u32; 100];
        assert!(data.get(tile_range::<u32, 8>(data.len(), 1, 128)).is_none(), "a tile past the end asks for nothing");
        assert_eq!(data.get(tile_range::<u32, 8>(data.len(), 0, 128)).map(<[u32]>::len), Some(100));
    }

    #[test]
    fn requests_per_thread_follow_the_step() {
        assert_eq!(prefetch_requests::<8>(128), 1);
        assert_eq!(prefetch_requests::<8>(32), 4);
        assert_eq!(prefetch_requests::<12>(128), 2);
        assert_eq!(prefetch_requests::<6>(64), 2);
        assert_eq!(prefetch_requests::<4>(128), 1);
    }
}
