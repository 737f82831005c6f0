//! Stream compaction (CUB's `DeviceSelect` and `DevicePartition`): the
//! elements a predicate or a flag keeps, in their order, and how many.
//!
//! One pass, on the scan's machinery: each block takes the next tile, loads
//! it (16-byte vectors), decides per element, counts what it keeps (a block
//! scan of the threads' counts gives each thread its offset within the
//! tile), looks back over the preceding tiles' counts (decoupled
//! look-back, as [`scan`](crate::scan)) for the number kept before the tile,
//! and writes its kept elements there. The last tile writes the total.
//!
//! The writes are in two phases (as CUB's): before the look-back, each
//! thread puts its kept elements into shared memory at their places in the
//! tile's output (the tile compacted); after the barrier that hands out
//! the tile's prefix, consecutive threads copy consecutive compacted
//! elements to the output. Written straight from the registers, a
//! thread's kept elements go to addresses that depend on how many its
//! neighbours keep, so one store instruction of a warp touches scattered
//! addresses, many sectors at low use; from the compacted tile, each
//! instruction of a warp covers 32 consecutive elements. Staging before the
//! look-back also means that the elements are not live across it (its
//! registers count for the whole block). The staging area is the launch's
//! dynamic shared memory, the padded tile (one element of padding per
//! 128 bytes keeps the first phase's stores free of bank conflicts when
//! everything is kept): 24.75 KiB for the default 4-byte tiles, 25.5 KiB
//! for the 8-byte ones, a few blocks' worth per SM; tiles whose padded
//! size would pass CUDA's default 48 KiB (the knob's largest shapes) store
//! directly, as before.
//!
//! [`partition_if`] also writes the rejected elements, after the selected
//! ones, in reverse order (as CUB's `DevicePartition::If`): the output is a
//! permutation of the input.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::select;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let data = DeviceBuffer::from_host(&stream, &[5u32, 12, 7, 30, 1])?;
//! let mut out = DeviceBuffer::<u32>::zeroed(&stream, 5)?;
//! let kept = select::select_if(&module, &stream, &data, &mut out, |x: u32| x > 6)?;
//! assert_eq!(&out.to_host_vec(&stream)?[..kept], [12, 7, 30]);
//! # Ok(())
//! # }
//! ```

use crate::error::check_len;
use crate::op::{Element, Sum};
use crate::scan::{first_lane, tile_config, tile_len, LookBack, LookBackTuning, ScanTuning, TileStatus, MAX_THREADS, MAX_WARPS};
use crate::temp;
use crate::tile;
use crate::PrimsError;
use core::sync::atomic::AtomicU64;
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{dynamic_shared, kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// What decides whether an element is kept: a predicate on it ([`If`]) or
/// the flag beside it ([`Flagged`]).
pub trait Selector<T>: Copy + Unpin + 'static {
    /// Whether the kernel reads a flag per element.
    const FLAGS: bool;
    /// Whether `item` (whose flag is `flag`, 0 without flags) is kept.
    fn keep(&self, item: T, flag: u8) -> bool;
}

/// Keeps the elements for which the closure returns `true`.
#[derive(Clone, Copy, Debug)]
pub struct If<P>(pub P);

impl<T, P: Fn(T) -> bool + Copy + Unpin + 'static> Selector<T> for If<P> {
    const FLAGS: bool = false;
    #[inline(always)]
    fn keep(&self, item: T, _flag: u8) -> bool {
        (self.0)(item)
    }
}

/// Keeps the elements whose flag is not zero.
#[derive(Clone, Copy, Debug)]
pub struct Flagged;

impl<T> Selector<T> for Flagged {
    const FLAGS: bool = true;
    #[inline(always)]
    fn keep(&self, _item: T, flag: u8) -> bool {
        flag != 0
    }
}

/// The most dynamic shared memory a staged instance may ask for: CUDA's
/// default limit (48 KiB, less the kernel's static shared memory, here
/// well under 1 KiB) without the opt-in a generic library launch cannot
/// make.
const STAGE_LIMIT: usize = 47 * 1024;

/// Staged elements each thread loads from shared memory before storing
/// them.
const STORE_BATCH: usize = 4;

/// Elements of `T` per padding element of the staging area: one per 128
/// bytes (32 banks of 4 bytes).
#[inline(always)]
const fn pad_every<T>() -> usize {
    128 / core::mem::size_of::<T>()
}

/// The shared-memory slot of staged element `s`: one element of padding
/// after every 128 bytes, so that the threads of a warp writing their
/// first kept elements (all kept: slots `lanes` apart) hit distinct banks.
#[inline(always)]
const fn stage_slot<T>(s: usize) -> usize {
    s + s / pad_every::<T>()
}

/// Slots of a staging area for a tile of `tile_len` elements.
#[inline(always)]
const fn stage_slots<T>(tile_len: usize) -> usize {
    stage_slot::<T>(tile_len)
}

/// Whether the instance for `V` vectors per thread stages its tile in
/// shared memory (the two-phase store): whenever the padded tile of the
/// largest block fits in [`STAGE_LIMIT`] (CUB's default shapes and the
/// knob's 4-byte `vectors=6`); the larger tiles store directly.
#[inline(always)]
const fn staged<T, const V: usize>() -> bool {
    stage_slots::<T>(MAX_THREADS * tile::items::<T, V>()) * core::mem::size_of::<T>() <= STAGE_LIMIT
}

/// The dynamic shared memory of a launch of [`select_tiles`] with
/// `threads` threads per block and `V` vectors per thread: the padded
/// tile, or none for an instance that stores directly.
fn stage_bytes<T, const V: usize>(threads: u32) -> u32 {
    if staged::<T, V>() {
        (stage_slots::<T>(threads as usize * tile::items::<T, V>()) * core::mem::size_of::<T>()) as u32
    } else {
        0
    }
}

/// One tile of a selection (`PARTITION`: the rejected elements too, from
/// the end backwards), in the scan's tile layout (`src/tile.rs`), `V`
/// vectors per thread (at most 64 elements: one bit each).
/// Launched like [`scan_tiles`](crate::scan::scan_tiles), with the dynamic
/// shared memory `stage_bytes` gives (the staging area of the two-phase
/// store, see the module docs); `count[0]` receives the number kept.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(MAX_THREADS))]
pub fn select_tiles<T: Element, S: Selector<T>, const PARTITION: bool, const V: usize>(
    input: &[T],
    flags: &[u8],
    select: S,
    mut out: DisjointSlice<T>,
    mut count: DisjointSlice<u64>,
    status: &[AtomicU64],
    tuning: LookBackTuning,
) {
    shared! { static COUNTS: [u32; MAX_WARPS + 1]; }
    shared! { static TILE: [u32; 1]; }
    let tiles = TileStatus::<u32>::new(status, tuning);
    let tid = thread::threadIdx_x() as usize;
    let (warp_index, lane) = (tid / 32, tid % 32);
    // SAFETY: all threads are here; TILE serves nothing else.
    let tile = unsafe { tiles.block_tile(TILE.as_mut_ptr()) };
    let n = input.len();
    let lanes = tile::lanes::<T>();
    let threads = thread::blockDim_x() as usize;
    let tile_len = threads * tile::items::<T, V>();
    let tile_start = tile * tile_len;
    let full = tile_start + tile_len <= n;
    // SAFETY: the input is a DeviceBuffer's (16-byte aligned).
    let v = unsafe { tile::load::<T, V>(input, tile_start, warp_index, lane, full, T::default()) };
    // Bit k: element k of this thread is kept.
    let mut keep = 0u64;
    let mut runs = [0u32; V];
    let mut j = 0;
    unroll!(full, while j < V {
        let first = tile::vector_start::<T, V>(tile_start, warp_index, lane, j);
        let mut e = 0;
        while e < lanes {
            let i = first + e;
            let flag = if S::FLAGS { flags.get(i).copied().unwrap_or(0) } else { 0 };
            if (full || i < n) && select.keep(tile::get::<T, V>(&v, j * lanes + e), flag) {
                keep |= 1 << (j * lanes + e);
                runs[j] += 1;
            }
            e += 1;
        }
        j += 1;
    });
    let slots = COUNTS.as_mut_ptr();
    // SAFETY: COUNTS holds MAX_WARPS + 1 u32, the launch at most MAX_WARPS
    // warps (the host's shapes); all threads are here; the
    // last slot is written only after the scan's barrier.
    let (run_prefixes, tile_kept) = unsafe { tile::scan_runs::<u32, Sum, V>(runs, Sum, slots, threads / 32) };
    let prefix_slot = unsafe { slots.add(MAX_WARPS) };
    // Elements of the tile inside the input.
    let valid = tile_len.min(n - tile_start);
    let stage = if staged::<T, V>() {
        // SAFETY: the area is used only as checked next: `len` elements.
        let (stage, len) = unsafe { dynamic_shared::<T>() };
        // The host gives `stage_bytes`; a launch with less (by hand) fails
        // here instead of writing past the area.
        assert!(len >= stage_slots::<T>(tile_len), "select_tiles: launched with less dynamic shared memory than stage_bytes");
        // Phase one, before the look-back (so that the elements are not
        // live across it): each element to its slot in the tile's output
        // order, the kept ones from the front, in order, and (partition)
        // the rejected from the back of the valid slots, last first.
        j = 0;
        unroll!(full, while j < V {
            let first = tile::vector_start::<T, V>(tile_start, warp_index, lane, j) - tile_start;
            let mut selected = run_prefixes[j] as usize;
            let mut e = 0;
            while e < lanes {
                let t = first + e;
                let k = j * lanes + e;
                if full || t < valid {
                    if keep >> k & 1 != 0 {
                        // SAFETY: `selected` (kept elements of the tile
                        // before this one) is unique to it and below
                        // tile_kept <= tile_len; the slot is padded inside
                        // the area. Read only after the barrier below.
                        unsafe { stage.add(stage_slot::<T>(selected)).write(tile::get::<T, V>(&v, k)) };
                        selected += 1;
                    } else if PARTITION {
                        // SAFETY: t - selected rejected elements of the tile
                        // lie before this one: its slot from the end of the
                        // valid ones is unique, at or after tile_kept.
                        unsafe { stage.add(stage_slot::<T>(valid - 1 - (t - selected))).write(tile::get::<T, V>(&v, k)) };
                    }
                }
                e += 1;
            }
            j += 1;
        });
        stage
    } else {
        core::ptr::null_mut()
    };
    if tid < 32 {
        // SAFETY: this block's tile; tile numbers come from the counter in
        // start order (with `block_order`, blocks start in index order).
        let prefix = unsafe { tiles.tile_prefix(tile, tile_kept, Sum) };
        if first_lane() {
            // SAFETY: one writer; read by all after the barrier below.
            unsafe { prefix_slot.write(prefix) };
        }
    }
    thread::sync_threads();
    // SAFETY: written before the barrier.
    let tile_prefix = unsafe { prefix_slot.read() } as usize;
    let dst = out.as_mut_ptr();
    if staged::<T, V>() {
        // Phase two: the staged slots in order, consecutive threads to
        // consecutive slots, so each warp's store covers consecutive
        // addresses. Slot s < tile_kept goes to tile_prefix + s; a
        // rejected one (partition), whose number among the tile's rejected
        // is valid - 1 - s, to n - 1 - (rejected before the tile + that).
        let kept = tile_kept as usize;
        let rejected_base = n - (tile_start - tile_prefix) - valid;
        let slots_used = if PARTITION { valid } else { kept };
        let mut s = tid;
        while s < slots_used {
            // A batch of shared loads, then their stores: the loads' latency
            // is paid once per batch, not once per element.
            let mut x = [T::default(); STORE_BATCH];
            let mut b = 0;
            unroll!(full, while b < STORE_BATCH {
                let slot = s + b * threads;
                if slot < slots_used {
                    // SAFETY: the slot was written before the barrier above
                    // (slots below tile_kept, and with PARTITION those from
                    // it to valid), and nobody writes it again.
                    x[b] = unsafe { stage.add(stage_slot::<T>(slot)).read() };
                }
                b += 1;
            });
            b = 0;
            unroll!(full, while b < STORE_BATCH {
                let slot = s + b * threads;
                if slot < slots_used {
                    let to = if !PARTITION || slot < kept { tile_prefix + slot } else { rejected_base + slot };
                    // SAFETY: `to` is unique to the slot's element and below
                    // n = out.len(): the same numbers as the direct stores'
                    // below, the tile's offsets taken out.
                    unsafe { dst.add(to).write(x[b]) };
                }
                b += 1;
            });
            s += STORE_BATCH * threads;
        }
    } else {
        j = 0;
        unroll!(full, while j < V {
            let first = tile::vector_start::<T, V>(tile_start, warp_index, lane, j);
            let mut selected = tile_prefix + run_prefixes[j] as usize;
            let mut e = 0;
            while e < lanes {
                let i = first + e;
                let k = j * lanes + e;
                if full || i < n {
                    if keep >> k & 1 != 0 {
                        // SAFETY: `selected` (elements kept before element i)
                        // is unique to element i and below the number kept <= n
                        // = out.len().
                        unsafe { dst.add(selected).write(tile::get::<T, V>(&v, k)) };
                        selected += 1;
                    } else if PARTITION {
                        // SAFETY: i - selected rejected elements lie before
                        // element i: its slot from the end is unique and in bounds.
                        unsafe { dst.add(n - 1 - (i - selected)).write(tile::get::<T, V>(&v, k)) };
                    }
                }
                e += 1;
            }
            j += 1;
        });
    }
    if tid == 0 && tile + 1 == thread::gridDim_x() as usize && !count.is_empty() {
        // SAFETY: one thread of the last tile writes the count.
        unsafe { *count.get_unchecked_mut(0) = (tile_prefix + tile_kept as usize) as u64 };
    }
}

#[allow(clippy::too_many_arguments)]
fn run<T: Element, S: Selector<T>, const PARTITION: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
    select: S,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    what: &'static str,
) -> Result<(), PrimsError> {
    check_len(what, input.len(), out.len())?;
    check_len("select: count", 1, count.len())?;
    let n = input.len();
    if n >= u32::MAX as usize {
        return Err(PrimsError::TooLarge { what, len: n, max: u32::MAX as usize - 1 });
    }
    if n == 0 {
        count.memset(stream, 0)?;
        return Ok(());
    }
    debug_assert_eq!(input.device_ptr() % 16, 0);
    let tuning = ScanTuning::select_from_env();
    let shape = tuning.shape::<T>();
    let tiles = n.div_ceil(tile_len::<T>(shape));
    let mut lb = LookBack::<u32>::new(stream, tiles, what)?;
    let status = lb.status.as_atomic::<AtomicU64>();
    let look_back: LookBackTuning = tuning.look_back.for_grid(tiles, tuning.sleep_from);
    let config = tile_config(tiles, shape);
    macro_rules! launch {
        ($v:literal) => {
            cuda_launch! {
                kernel: select_tiles::<T, S, PARTITION, $v>, stream: stream, module: module,
                config: LaunchConfig { shared_mem_bytes: stage_bytes::<T, $v>(shape.threads), ..config },
                args: [slice(*input), slice(*flags), select, slice_mut(*out), slice_mut(*count), status, look_back]
            }?
        };
    }
    // Only the instances an element size can take (see `scan::scan`).
    if const { core::mem::size_of::<T>() > 4 } {
        match shape.vectors {
            4 => launch!(4),
            8 => launch!(8),
            _ => launch!(12),
        }
    } else {
        match shape.vectors {
            4 => launch!(4),
            6 => launch!(6),
            _ => launch!(8),
        }
    }
    Ok(())
}

/// Elements of `T` per tile of a selection under the tuning in force (the
/// boundaries a test must cover). A test hook.
#[doc(hidden)]
pub fn tile_elements<T>() -> usize {
    tile_len::<T>(ScanTuning::select_from_env().shape::<T>())
}

/// The number in `count` read back (synchronises `stream`).
fn read_count(stream: &CudaStream, count: &DeviceBuffer<u64>) -> Result<usize, PrimsError> {
    Ok(count.to_host_vec(stream)?[0] as usize)
}

/// The elements of `input` for which `predicate` holds, in order, at the
/// start of `out` (as long as `input`), and their number in `count[0]`;
/// nothing is synchronised.
pub fn select_if_into<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    predicate: P,
) -> Result<(), PrimsError> {
    let no_flags = temp::zeroed::<u8>(stream, 0)?;
    run::<T, If<P>, false>(module, stream, input, &no_flags, If(predicate), out, count, "select_if: output")
}

/// [`select_if_into`], returning the number selected (synchronises `stream`).
pub fn select_if<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    predicate: P,
) -> Result<usize, PrimsError> {
    let mut count = temp::scratch::<u64>(stream, 1)?;
    select_if_into(module, stream, input, out, &mut count, predicate)?;
    read_count(stream, &count)
}

/// The elements of `input` whose flag in `flags` (same length) is not
/// zero, in order, at the start of `out`; returns their number
/// (synchronises `stream`).
pub fn select_flagged<T: Element>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
    out: &mut DeviceBuffer<T>,
) -> Result<usize, PrimsError> {
    check_len("select_flagged: flags", input.len(), flags.len())?;
    let mut count = temp::scratch::<u64>(stream, 1)?;
    run::<T, Flagged, false>(module, stream, input, flags, Flagged, out, &mut count, "select_flagged: output")?;
    read_count(stream, &count)
}

/// Partitions `input` into `out` (same length): the elements for which
/// `predicate` holds first, in order, then the others in reverse order;
/// returns the number of the first (synchronises `stream`).
pub fn partition_if<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    predicate: P,
) -> Result<usize, PrimsError> {
    let no_flags = temp::zeroed::<u8>(stream, 0)?;
    let mut count = temp::scratch::<u64>(stream, 1)?;
    run::<T, If<P>, true>(module, stream, input, &no_flags, If(predicate), out, &mut count, "partition_if: output")?;
    read_count(stream, &count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The banks (4 bytes each, 32) that an element of `T` at index `at`
    /// of shared memory occupies.
    fn banks<T>(at: usize) -> Vec<usize> {
        let words = core::mem::size_of::<T>() / 4;
        (0..words).map(|w| (at * words + w) % 32).collect()
    }

    /// Whether the 32 lanes' accesses to staged `slots` (lane order) are
    /// free of bank conflicts: 4-byte ones across the warp, 8-byte ones
    /// within each half warp (which the hardware serves apart anyway);
    /// `padded`: with the padding, else at the slots themselves.
    fn conflict_free<T>(slots: &[usize], padded: bool) -> bool {
        let group = if core::mem::size_of::<T>() == 4 { 32 } else { 16 };
        slots.chunks(group).all(|lanes| {
            let mut seen = [false; 32];
            lanes
                .iter()
                .map(|&s| if padded { stage_slot::<T>(s) } else { s })
                .flat_map(banks::<T>)
                .all(|b| !core::mem::replace(&mut seen[b], true))
        })
    }

    fn staging_is_conflict_free<T>() {
        let lanes = tile::lanes::<T>();
        for vector in [0, 1, 5, 47] {
            // Every element kept: lane l's element e of a vector goes to
            // slot base + l·lanes + e.
            let base = vector * 32 * lanes;
            for e in 0..lanes {
                let slots: Vec<usize> = (0..32).map(|l| base + l * lanes + e).collect();
                assert!(conflict_free::<T>(&slots, true), "phase one, vector {vector}, element {e}");
                assert!(!conflict_free::<T>(&slots, false), "unpadded, phase one conflicts");
            }
        }
        // Phase two: a warp reads 32 consecutive slots from a multiple of 32.
        for start in [0, 32, 384, 4096] {
            let slots: Vec<usize> = (start..start + 32).collect();
            assert!(conflict_free::<T>(&slots, true), "phase two from {start}");
        }
    }

    #[test]
    fn staging_avoids_bank_conflicts() {
        staging_is_conflict_free::<u32>();
        staging_is_conflict_free::<u64>();
    }

    #[test]
    fn default_shapes_stage_within_the_default_shared_memory() {
        let t = ScanTuning::SELECT;
        assert!(staged::<u32, 4>() && staged::<f32, 6>() && staged::<u64, 4>());
        assert!(!staged::<u32, 8>() && !staged::<u64, 8>() && !staged::<u64, 12>());
        assert_eq!(stage_bytes::<u32, 4>(t.narrow.threads), (6144 + 192) * 4);
        assert_eq!(stage_bytes::<u64, 4>(t.wide.threads), (3072 + 192) * 8);
        assert_eq!(stage_bytes::<u32, 8>(384), 0);
        assert!(stage_bytes::<u32, 6>(384) as usize <= STAGE_LIMIT);
        assert_eq!(stage_bytes::<u32, 4>(32), (512 + 16) * 4);
    }
}
