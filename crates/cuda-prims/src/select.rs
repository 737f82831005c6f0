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
use cuda_core::{CudaStream, DeviceBuffer};
use cuda_device::{kernel, shared, thread, unroll, DisjointSlice};
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

/// One tile of a selection (`PARTITION`: the rejected elements too, from
/// the end backwards), in the scan's tile layout (`src/tile.rs`), `V`
/// vectors per thread (at most 64 elements: one bit each).
/// Launched like [`scan_tiles`](crate::scan::scan_tiles); `count[0]`
/// receives the number kept.
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
                kernel: select_tiles::<T, S, PARTITION, $v>, stream: stream, module: module, config: config,
                args: [slice(*input), slice(*flags), select, slice_mut(*out), slice_mut(*count), status, look_back]
            }?
        };
    }
    crate::tile::with_vectors!(T, shape.vectors, launch);
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
