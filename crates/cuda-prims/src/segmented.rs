//! Segmented reduce: one sum, minimum or maximum per segment of an array,
//! the segments given by an offsets array ([`segmented_reduce`]).
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_prims::op::Sum;
//! use cuda_prims::segmented::segmented_reduce;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = cuda_host::load_kernel_module(&ctx, "my_program")?;
//! let values = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4, 5])?;
//! // Segments [0, 2), [2, 2) (empty) and [2, 5).
//! let offsets = DeviceBuffer::from_host(&stream, &[0u32, 2, 2, 5])?;
//! let mut sums = DeviceBuffer::<u32>::zeroed(&stream, 3)?;
//! segmented_reduce(&module, &stream, &values, &offsets, &mut sums, Sum)?;
//! assert_eq!(sums.to_host_vec(&stream)?, [3, 0, 12]);
//! # Ok(())
//! # }
//! ```
//!
//! Segment `i` is `input[offsets[i] .. offsets[i + 1]]`; `offsets` has one
//! more entry than there are segments, ascending, the last at most the
//! input's length (the host checks). The operator is any
//! [`ReduceOp`] of [`op`](crate::op), as for the device-wide reduce: an
//! empty segment reduces to its identity (0 for [`Sum`](crate::op::Sum),
//! the type's largest value for [`Min`](crate::op::Min) and its smallest for
//! [`Max`](crate::op::Max); `±inf` for floats), as CUB's
//! `DeviceSegmentedReduce` with that initial value. Integer sums wrap; float
//! sums are added in an order of their own (within the usual reordering
//! bound of the sequential sum).
//!
//! One warp reduces one segment: its lanes read the segment in strides of
//! 32 (coalesced), then combine through shuffles.

use crate::op::{Element, ReduceOp};
use crate::PrimsError;
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::warp;
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block: 8 warps, 8 segments.
const THREADS: usize = 256;

/// `out[s]` = the reduction by `O` of segment `s` of `input`. Launch with
/// `THREADS` threads, one warp per segment.
#[kernel]
pub fn segmented_reduce_kernel<T: Element, O: ReduceOp<T>>(input: &[T], offsets: &[u32], op: O, mut out: DisjointSlice<T>) {
    let segments = offsets.len().saturating_sub(1);
    let lane = warp::lane_id() as usize;
    let segment = thread::blockIdx_x() as usize * (THREADS / 32) + thread::threadIdx_x() as usize / 32;
    // Whole warps leave together: the shuffles below need every lane.
    if segment >= segments {
        return;
    }
    let (begin, end) = (offsets[segment] as usize, offsets[segment + 1] as usize);
    let mut acc = op.identity();
    let mut i = begin + lane;
    // Four loads in flight per lane where the segment is long.
    while i + 96 < end {
        let (a, b, c, d) = (input[i], input[i + 32], input[i + 64], input[i + 96]);
        acc = op.combine(acc, op.combine(op.combine(a, b), op.combine(c, d)));
        i += 128;
    }
    // The lane's last elements, fewer than four: loaded together too (one
    // at a time, each waited a round trip, and a segment shorter than 128
    // elements is nothing but these). Indices clamped into the segment keep
    // the loads free of branches; only those below its end are combined, in
    // the loop's order.
    if i < end {
        let at = |k: usize| input[(i + 32 * k).min(end - 1)];
        let (a, b, c) = (at(0), at(1), at(2));
        acc = op.combine(acc, a);
        if i + 32 < end {
            acc = op.combine(acc, b);
        }
        if i + 64 < end {
            acc = op.combine(acc, c);
        }
    }
    let mut width = 16;
    while width > 0 {
        let other = warp::shfl_xor(warp::FULL_MASK, acc, width);
        // Lane order kept: the lower lane's partial comes first.
        acc = if lane as u32 & width == 0 { op.combine(acc, other) } else { op.combine(other, acc) };
        width /= 2;
    }
    if lane == 0 {
        // SAFETY: each segment is written by its warp's lane 0 alone, and
        // segment < segments = out.len() (the host checks).
        unsafe { *out.get_unchecked_mut(segment) = acc };
    }
}

/// Reduces each segment of `input` (bounds in `offsets`, see the [module
/// docs](self)) by `op` into `output`, which has one element per segment.
/// Runs on `stream`; `offsets` is read back once for the checks.
pub fn segmented_reduce<T: Element, O: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    offsets: &DeviceBuffer<u32>,
    output: &mut DeviceBuffer<T>,
    op: O,
) -> Result<(), PrimsError> {
    let segments = offsets.len().saturating_sub(1);
    if output.len() != segments {
        return Err(PrimsError::LengthMismatch { what: "the segmented reduce's output", expected: segments, found: output.len() });
    }
    if segments == 0 {
        return Ok(());
    }
    let host = offsets.to_host_vec(stream)?;
    if let Some(i) = (0..segments).find(|&i| host[i] > host[i + 1]) {
        return Err(PrimsError::Invalid(format!(
            "segment offsets must ascend, but offsets[{i}] = {} > offsets[{}] = {}",
            host[i],
            i + 1,
            host[i + 1]
        )));
    }
    if host[segments] as usize > input.len() {
        return Err(PrimsError::Invalid(format!(
            "the last segment ends at {} but the input has {} elements",
            host[segments],
            input.len()
        )));
    }
    let warps = THREADS / 32;
    let config = LaunchConfig { grid_dim: (segments.div_ceil(warps) as u32, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: segmented_reduce_kernel::<T, O>, stream: stream, module: module, config: config,
        args: [slice(*input), slice(*offsets), op, slice_mut(*output)]
    }?;
    Ok(())
}

/// The CPU's segmented reduce by `op`, in element order, for checks.
pub fn segmented_reduce_on_cpu<T: Element, O: ReduceOp<T>>(input: &[T], offsets: &[u32], op: O) -> Vec<T> {
    offsets.windows(2).map(|w| input[w[0] as usize..w[1] as usize].iter().fold(op.identity(), |a, &x| op.combine(a, x))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Max, Min, Sum};

    #[test]
    fn cpu_reference() {
        let x = [3i32, -1, 7, 2];
        let offsets = [0, 1, 1, 4];
        assert_eq!(segmented_reduce_on_cpu(&x, &offsets, Sum), [3, 0, 8]);
        assert_eq!(segmented_reduce_on_cpu(&x, &offsets, Min), [3, i32::MAX, -1]);
        assert_eq!(segmented_reduce_on_cpu(&x, &offsets, Max), [3, i32::MIN, 7]);
        assert_eq!(segmented_reduce_on_cpu(&[1.0f32], &[0, 0], Min), [f32::INFINITY]);
    }
}
