//! Device-wide reduce: the elements of a buffer combined into one value
//! (CUB's `DeviceReduce`).
//!
//! One launch of at most as many blocks as the GPU holds at once (a
//! grid-stride loop; as few blocks as give every thread the same number of
//! whole steps where the input allows): every thread loads 16-byte
//! vectors, four in flight, combines them into its own partial, and the
//! block combines its threads' partials (warp
//! shuffles, one barrier). Each block stores its partial and counts itself
//! in; the block that arrives last combines the partials, in block order,
//! into the output and sets the count back to zero for the next call. The
//! partials and the count are kept by the stream between calls
//! ([`CudaStream::with_local`], freed with the stream), so a call allocates
//! nothing and launches once, where CUB launches twice.
//!
//! While the stream captures a graph (a replay may run beside another
//! stream's use of the stream's words), and with the measurement knob
//! `launches=two` in `OXIDE_PRIMS_REDUCE`, the partials go to scratch of
//! the call's own instead and a second launch of one block combines them.
//! An input small enough for one block is one launch of one block either way.
//!
//! The operator must be associative and commutative: a thread combines the
//! elements it loads in grid-stride order. Float sums therefore differ from
//! a sequential sum by rounding, within the usual reordering bound
//! (`n · ε · Σ|x|`), and are the same from run to run on one GPU (the last
//! block combines the partials in block order, whichever block it is).
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::{op::{Max, Sum}, reduce};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! // The program's own image: the device linker compiled cuda-prims' kernels into it.
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let data = DeviceBuffer::from_host(&stream, &[3.0f32, -1.0, 4.0])?;
//! assert_eq!(reduce::reduce(&module, &stream, &data, Sum)?, 6.0);
//! assert_eq!(reduce::reduce(&module, &stream, &data, Max)?, 4.0);
//! # Ok(())
//! # }
//! ```

use crate::block::raw_reduce;
use crate::error::check_len;
use crate::op::{Element, ReduceOp};
use crate::temp;
use crate::tile::{combine_vector, from_bits, lanes, to_bits, Vector16};
use crate::PrimsError;
use core::sync::atomic::{AtomicU64, Ordering};
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::{fence, kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block of the reduce kernels.
const BLOCK: usize = 256;
/// 16-byte vectors each thread has in flight per loop iteration.
const UNROLL: usize = 4;
/// Blocks per multiprocessor of the first launch (a full SM of 256-thread blocks).
const BLOCKS_PER_SM: usize = 8;
/// Partials a thread of the last block loads at once (enough that one
/// round covers the partials of a GPU of up to 256 multiprocessors).
const PARTIALS_IN_FLIGHT: usize = 8;

/// The block's partial of its grid-stride share of `input`, in every
/// thread of the block.
///
/// # Safety
/// All `BLOCK` threads of a `BLOCK`-thread block call it; `slots` points to
/// `BLOCK / 32` elements of block-shared memory that nothing else accesses
/// from the barrier before this call until a barrier after it; `input`
/// starts 16-byte aligned.
#[inline(always)]
unsafe fn block_partial<T: Element, Op: ReduceOp<T>>(input: &[T], op: Op, slots: *mut T) -> T {
    let n = input.len();
    let tid = thread::threadIdx_x() as usize;
    let threads = thread::gridDim_x() as usize * BLOCK;
    let vectors = n / lanes::<T>();
    let base = input.as_ptr() as *const Vector16;
    let mut acc = op.identity();
    let mut v = thread::blockIdx_x() as usize * BLOCK + tid;
    while v + (UNROLL - 1) * threads < vectors {
        // All loads first, so that UNROLL of them are in flight at once.
        let mut chunk = [Vector16([0; 4]); UNROLL];
        let mut k = 0;
        while k < UNROLL {
            // SAFETY: v + k·threads < vectors: the vector lies inside the
            // input, which starts 16-byte aligned (the caller's promise).
            chunk[k] = base.add(v + k * threads).read();
            k += 1;
        }
        k = 0;
        while k < UNROLL {
            acc = combine_vector(acc, chunk[k], op);
            k += 1;
        }
        v += UNROLL * threads;
    }
    while v < vectors {
        // SAFETY: as above.
        acc = combine_vector(acc, base.add(v).read(), op);
        v += threads;
    }
    // The ragged end: fewer than one vector's worth, one per thread.
    let rest = vectors * lanes::<T>() + thread::blockIdx_x() as usize * BLOCK + tid;
    if rest < n {
        acc = op.combine(acc, input[rest]);
    }
    // SAFETY: the caller's promise about slots and the block.
    raw_reduce::<T, Op, BLOCK>(acc, op, slots)
}

/// Combines `input` into one partial per block, `partials[blockIdx.x]`:
/// launched with `BLOCK` threads per block; any grid size.
#[kernel]
pub fn reduce_partials<T: Element, Op: ReduceOp<T>>(input: &[T], op: Op, mut partials: DisjointSlice<T>) {
    // One slot per warp (an Element is at most 8 bytes).
    shared! { static SLOTS: [u64; BLOCK / 32]; }
    // SAFETY: SLOTS is block-shared with BLOCK / 32 slots of 8 bytes, which
    // hold BLOCK / 32 Elements; every thread of the BLOCK-thread block is
    // here, and nothing else in this kernel touches SLOTS; the host launches
    // on inputs whose allocation is 16-byte aligned.
    let total = unsafe { block_partial(input, op, SLOTS.as_mut_ptr() as *mut T) };
    let b = thread::blockIdx_x() as usize;
    if thread::threadIdx_x() == 0 && b < partials.len() {
        // SAFETY: in bounds; only thread 0 of block b writes element b.
        unsafe { *partials.get_unchecked_mut(b) = total };
    }
}

/// Combines `input` into `out[0]` in one launch of `BLOCK`-thread blocks.
/// `words` holds the arrival count in `words[0]`, zero at launch, and a
/// partial per block after it (`words[1 + b]`, at least as many as the
/// grid has blocks); the last block to arrive sets the count back to zero.
///
/// Each block's thread 0 stores the block's partial and then counts the
/// block in with a device-scope acquire-release add, so the block that
/// takes the last count has seen every partial stored before the counts
/// it follows; its other threads see them through the barrier after that
/// add and a device-scope fence.
#[kernel]
pub fn reduce_last_block<T: Element, Op: ReduceOp<T>>(input: &[T], op: Op, words: &[AtomicU64], mut out: DisjointSlice<T>) {
    shared! { static SLOTS: [u64; BLOCK / 32]; }
    shared! { static LAST: [u32; 1]; }
    // SAFETY: as in `reduce_partials`.
    let total = unsafe { block_partial(input, op, SLOTS.as_mut_ptr() as *mut T) };
    let tid = thread::threadIdx_x() as usize;
    let blocks = thread::gridDim_x() as usize;
    if tid == 0 {
        words[1 + thread::blockIdx_x() as usize].store_scoped(to_bits(total), Scope::Device, Ordering::Relaxed);
        let arrived = words[0].fetch_add_scoped(1, Scope::Device, Ordering::AcqRel);
        // SAFETY: one thread writes LAST; the block reads it after the barrier.
        unsafe { LAST.as_mut_ptr().write((arrived + 1 == blocks as u64) as u32) };
    }
    // Also orders block_partial's reads of SLOTS before the reuse below.
    thread::sync_threads();
    // SAFETY: written before the barrier, not again.
    if unsafe { LAST.as_mut_ptr().read() } == 0 {
        return;
    }
    fence::device();
    if tid == 0 {
        // Every block has counted itself in; the next launch on the stream starts from zero.
        words[0].store_scoped(0, Scope::Device, Ordering::Relaxed);
    }
    // The partials are the reduce's tail: a thread loads all of its share
    // before combining any, so that the loads take one memory round trip
    // rather than one each. Combined in the same order as loaded, so that
    // the result does not depend on how many are loaded together.
    let mut acc = op.identity();
    let mut b = tid;
    while b < blocks {
        let mut parts = [op.identity(); PARTIALS_IN_FLIGHT];
        let mut k = 0;
        while k < PARTIALS_IN_FLIGHT {
            if b + k * BLOCK < blocks {
                parts[k] = from_bits(words[1 + b + k * BLOCK].load_scoped(Scope::Device, Ordering::Relaxed));
            }
            k += 1;
        }
        k = 0;
        while k < PARTIALS_IN_FLIGHT {
            if b + k * BLOCK < blocks {
                acc = op.combine(acc, parts[k]);
            }
            k += 1;
        }
        b += PARTIALS_IN_FLIGHT * BLOCK;
    }
    // SAFETY: as above; the barrier after LAST's write ended the first use of SLOTS.
    let total = unsafe { raw_reduce::<T, Op, BLOCK>(acc, op, SLOTS.as_mut_ptr() as *mut T) };
    if tid == 0 && !out.is_empty() {
        // SAFETY: in bounds; only thread 0 of the last block writes.
        unsafe { *out.get_unchecked_mut(0) = total };
    }
}

/// The reduce's grid for `len` elements with at most `resident` blocks,
/// and the steps (`UNROLL` vectors a thread, loaded together) each thread
/// takes: as few steps as `resident` blocks need, then as few blocks as
/// take the input in that many steps. A grid of `resident` blocks would
/// leave some threads a ragged share, ended by vectors loaded one at a
/// time, each a memory round trip, and the reduce ends with its slowest
/// block: for 2^22 eight-byte elements on 1,056 resident blocks that was
/// one step and three single loads, where 1,024 blocks take two steps and
/// no single load.
fn grid<T: Element>(len: usize, resident: usize) -> (usize, usize) {
    let resident = resident.max(1);
    let step = BLOCK * UNROLL;
    let vectors = len / lanes::<T>();
    let fewest = vectors.div_ceil(resident * step).max(1);
    // A few more steps a thread may divide the input exactly, so that no
    // thread's last step is ragged either (2^28 four-byte elements on 1,056
    // resident blocks: 64 steps on 1,024 blocks rather than 63 on 1,041).
    let exact = (fewest..=fewest + (fewest / 8).min(64)).find(|&s| vectors % (s * step) == 0 && vectors / (s * step) <= resident);
    let steps = exact.unwrap_or(fewest);
    (vectors.div_ceil(steps * step).clamp(1, resident), steps)
}

fn config(blocks: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 }
}

/// How a reduce of more than one block's worth combines its partials
/// ([`ReduceTuning::launches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launches {
    /// One launch; the last block combines the partials, kept by the
    /// stream. The default.
    One,
    /// The first launch's partials in the call's own scratch, a second
    /// launch of one block to combine them: what a capturing stream gets.
    Two,
}

/// The reduce's measurement knobs (`OXIDE_PRIMS_REDUCE`), read once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceTuning {
    /// How the partials are combined (`launches=one|two`).
    pub launches: Launches,
    /// The most blocks a multiprocessor is given (`blocks-per-sm=1..8`):
    /// fewer, longer blocks with fewer partials to combine.
    pub blocks_per_sm: usize,
}

impl ReduceTuning {
    /// The defaults.
    pub const DEFAULT: ReduceTuning = ReduceTuning { launches: Launches::One, blocks_per_sm: BLOCKS_PER_SM };

    /// `OXIDE_PRIMS_REDUCE` (read once): comma-separated `launches=one|two`
    /// and `blocks-per-sm=N`; anything else is ignored with a warning on stderr.
    pub fn from_env() -> ReduceTuning {
        static TUNING: std::sync::OnceLock<ReduceTuning> = std::sync::OnceLock::new();
        *TUNING.get_or_init(|| Self::parse(&crate::knobs::spec("OXIDE_PRIMS_REDUCE")))
    }

    /// Parses the `OXIDE_PRIMS_REDUCE` syntax.
    pub fn parse(spec: &str) -> ReduceTuning {
        let mut tuning = Self::DEFAULT;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let blocks = item.strip_prefix("blocks-per-sm=").and_then(|n| n.parse::<usize>().ok());
            match (item, blocks) {
                ("launches=one", _) => tuning.launches = Launches::One,
                ("launches=two", _) => tuning.launches = Launches::Two,
                (_, Some(n @ 1..=BLOCKS_PER_SM)) => tuning.blocks_per_sm = n,
                _ => eprintln!("OXIDE_PRIMS_REDUCE: ignoring `{item}` (expected `launches=one|two` or `blocks-per-sm=1..{BLOCKS_PER_SM}`)"),
            }
        }
        tuning
    }
}

/// The partials and arrival count a stream keeps for [`reduce_last_block`]
/// (`words[0]` the count, zero between calls; a partial per block after
/// it), in the stream's own storage: zeroed once, grown when a call needs
/// more blocks than it holds partials for, freed with the stream.
struct KeptPartials {
    words: DeviceBuffer<u64>,
}

/// Combines the elements of `input` with `op` into `out[0]` (`out` has one
/// element), on `stream`. An empty input gives `op.identity()`. `op` must
/// be associative and commutative (see the [module docs](self)).
pub fn reduce_into<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
) -> Result<(), PrimsError> {
    check_len("reduce: output", 1, out.len())?;
    // Allocations of DeviceBuffer are 256-byte aligned; the vector loads need 16.
    debug_assert_eq!(input.device_ptr() % 16, 0);
    let tuning = ReduceTuning::from_env();
    let (blocks, _) = grid::<T>(input.len(), temp::resident_blocks(stream, tuning.blocks_per_sm)?);
    if blocks == 1 {
        cuda_launch! {
            kernel: reduce_partials::<T, Op>, stream: stream, module: module, config: config(1),
            args: [slice(*input), op, slice_mut(*out)]
        }?;
        return Ok(());
    }
    if tuning.launches == Launches::One && !stream.is_capturing_in_driver()? {
        let init = || Ok(KeptPartials { words: DeviceBuffer::zeroed(stream, 1 + blocks)? });
        // The stream's words stay locked across the launch, so that the
        // launches using them queue on the stream one after another.
        return stream.with_local(init, |kept: &mut KeptPartials| {
            if kept.words.len() < 1 + blocks {
                // Freed on the stream after the launches that used them.
                kept.words = DeviceBuffer::zeroed(stream, 1 + blocks)?;
            }
            let words = kept.words.as_atomic::<AtomicU64>();
            cuda_launch! {
                kernel: reduce_last_block::<T, Op>, stream: stream, module: module, config: config(blocks),
                args: [slice(*input), op, words, slice_mut(*out)]
            }?;
            Ok(())
        });
    }
    // Written by the first launch, one element per block, before the second reads them.
    let mut partials = temp::scratch::<T>(stream, blocks)?;
    cuda_launch! {
        kernel: reduce_partials::<T, Op>, stream: stream, module: module, config: config(blocks),
        args: [slice(*input), op, slice_mut(partials)]
    }?;
    cuda_launch! {
        kernel: reduce_partials::<T, Op>, stream: stream, module: module, config: config(1),
        args: [slice(partials), op, slice_mut(*out)]
    }?;
    Ok(())
}

/// The elements of `input` combined with `op`, read back to the host
/// (synchronises `stream`). See [`reduce_into`].
pub fn reduce<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    op: Op,
) -> Result<T, PrimsError> {
    let mut out = temp::scratch::<T>(stream, 1)?;
    reduce_into(module, stream, input, &mut out, op)?;
    Ok(out.to_host_vec(stream)?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_gives_every_thread_whole_steps_where_the_input_allows() {
        // H100 and H200: 132 multiprocessors × 8 blocks.
        let resident = 1056;
        assert_eq!(grid::<u64>(1 << 22, resident), (1024, 2));
        assert_eq!(grid::<u32>(1 << 22, resident), (1024, 1));
        assert_eq!(grid::<u32>(1 << 24, resident), (1024, 4));
        assert_eq!(grid::<u32>(1 << 28, resident), (1024, 64));
        assert_eq!(grid::<u64>(1 << 28, resident), (1024, 128));
        // No exact split within an eighth more steps: the fewest steps.
        assert_eq!(grid::<u32>((1 << 28) + 4, resident), (1041, 63));
        assert_eq!(grid::<u32>(0, resident), (1, 1));
        assert_eq!(grid::<u32>(3, resident), (1, 1));
        assert_eq!(grid::<u32>(5000, resident), (2, 1));
        assert_eq!(grid::<u64>(1 << 22, 0), (1, 2048));
        for len in [1usize, 4095, 4096, 4097, 777_777, 1 << 20, (1 << 28) + 13, 3 << 27] {
            for resident in [1, 7, 132, 1056] {
                let (blocks, steps) = grid::<u32>(len, resident);
                let per_step = BLOCK * UNROLL;
                assert!((1..=resident).contains(&blocks), "{len} on {resident}: {blocks} blocks");
                // The grid covers the input in `steps` steps a thread, and
                // one block fewer would not.
                assert!(blocks * per_step * steps >= len / 4, "{len} on {resident}");
                assert!(blocks == 1 || (blocks - 1) * per_step * steps < len / 4, "{len} on {resident}");
            }
        }
    }

    #[test]
    fn the_knob_reads_launches_and_blocks_and_ignores_the_rest() {
        assert_eq!(ReduceTuning::parse(""), ReduceTuning::DEFAULT);
        assert_eq!(ReduceTuning::parse("launches=two").launches, Launches::Two);
        assert_eq!(ReduceTuning::parse("launches=two, launches=one").launches, Launches::One);
        assert_eq!(ReduceTuning::parse("blocks-per-sm=2"), ReduceTuning { launches: Launches::One, blocks_per_sm: 2 });
        assert_eq!(ReduceTuning::parse("launches=three,blocks=4,blocks-per-sm=0,blocks-per-sm=9"), ReduceTuning::DEFAULT, "unknown or out-of-range items are ignored");
    }
}
