//! Device-wide reduce: the elements of a buffer combined into one value
//! (CUB's `DeviceReduce`).
//!
//! Two launches. The first runs as many blocks as the GPU holds at once
//! (a grid-stride loop): every thread loads 16-byte vectors, four in
//! flight, combines them into its own partial, the block combines its
//! threads' partials (warp shuffles, one barrier) and writes one partial
//! per block. The second launch, one block, combines those partials. An
//! input small enough for one block skips the second launch.
//!
//! The operator must be associative and commutative: a thread combines the
//! elements it loads in grid-stride order. Float sums therefore differ from
//! a sequential sum by rounding, within the usual reordering bound
//! (`n · ε · Σ|x|`), and are the same from run to run on one GPU.
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
use crate::tile::{combine_vector, lanes, Vector16};
use crate::PrimsError;
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block of the reduce kernel.
const BLOCK: usize = 256;
/// 16-byte vectors each thread has in flight per loop iteration.
const UNROLL: usize = 4;
/// Blocks per multiprocessor of the first launch (a full SM of 256-thread blocks).
const BLOCKS_PER_SM: usize = 8;

/// Combines `input` into one partial per block, `partials[blockIdx.x]`:
/// launched with `BLOCK` threads per block; any grid size.
#[kernel]
pub fn reduce_partials<T: Element, Op: ReduceOp<T>>(input: &[T], op: Op, mut partials: DisjointSlice<T>) {
    // One slot per warp (an Element is at most 8 bytes).
    shared! { static SLOTS: [u64; BLOCK / 32]; }
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
            // input, whose device allocation is 16-byte aligned (checked by
            // the host).
            chunk[k] = unsafe { base.add(v + k * threads).read() };
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
        acc = combine_vector(acc, unsafe { base.add(v).read() }, op);
        v += threads;
    }
    // The ragged end: fewer than one vector's worth, one per thread.
    let rest = vectors * lanes::<T>() + thread::blockIdx_x() as usize * BLOCK + tid;
    if rest < n {
        acc = op.combine(acc, input[rest]);
    }
    // SAFETY: SLOTS is block-shared with BLOCK / 32 slots of 8 bytes, which
    // hold BLOCK / 32 Elements; every thread of the BLOCK-thread block is
    // here, and nothing else in this kernel touches SLOTS.
    let total = unsafe { raw_reduce::<T, Op, BLOCK>(acc, op, SLOTS.as_mut_ptr() as *mut T) };
    let b = thread::blockIdx_x() as usize;
    if tid == 0 && b < partials.len() {
        // SAFETY: in bounds; only thread 0 of block b writes element b.
        unsafe { *partials.get_unchecked_mut(b) = total };
    }
}

fn config(blocks: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 }
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
    let per_block = BLOCK * lanes::<T>() * UNROLL;
    let blocks = input.len().div_ceil(per_block).clamp(1, temp::resident_blocks(stream, BLOCKS_PER_SM)?);
    if blocks == 1 {
        cuda_launch! {
            kernel: reduce_partials::<T, Op>, stream: stream, module: module, config: config(1),
            args: [slice(*input), op, slice_mut(*out)]
        }?;
        return Ok(());
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
