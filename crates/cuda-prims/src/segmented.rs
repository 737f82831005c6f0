//! Segmented reduce: one sum, minimum or maximum per segment of an array,
//! the segments given by an offsets array ([`segmented_reduce`]).
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_prims::segmented::{segmented_reduce, Sum};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = cuda_host::load_kernel_module(&ctx, "my_program")?;
//! let values = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4, 5])?;
//! // Segments [0, 2), [2, 2) (empty) and [2, 5).
//! let offsets = DeviceBuffer::from_host(&stream, &[0u32, 2, 2, 5])?;
//! let mut sums = DeviceBuffer::<u32>::zeroed(&stream, 3)?;
//! segmented_reduce::<u32, Sum>(&module, &stream, &values, &offsets, &mut sums)?;
//! assert_eq!(sums.to_host_vec(&stream)?, [3, 0, 12]);
//! # Ok(())
//! # }
//! ```
//!
//! Segment `i` is `input[offsets[i] .. offsets[i + 1]]`; `offsets` has one
//! more entry than there are segments, ascending, the last at most the
//! input's length (the host checks). An empty segment reduces to the
//! operator's identity (0, the type's largest value for [`Min`] and its
//! smallest for [`Max`]; `±inf` for floats), as CUB's
//! `DeviceSegmentedReduce` with that initial value. Integer sums wrap; float
//! sums are added in an order of their own (within the usual reordering
//! bound of the sequential sum); min and max of floats compare with `<`, so
//! a NaN is kept only where it comes first.
//!
//! One warp reduces one segment: its lanes read the segment in strides of
//! 32 (coalesced), then combine through shuffles.

use crate::PrimsError;
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::warp::{self, Shuffle};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block: 8 warps, 8 segments.
const THREADS: usize = 256;

mod sealed {
    pub trait Sealed {}
}

/// An element type of the segmented reduce: `u32`, `i32`, `u64`, `i64`,
/// `f32`, `f64`.
pub trait Element: sealed::Sealed + Shuffle + Copy + PartialOrd + Send + Sync + Unpin + 'static {
    /// 0.
    const ZERO: Self;
    /// The smallest value (`-inf` for floats).
    const LOWEST: Self;
    /// The largest value (`+inf` for floats).
    const HIGHEST: Self;
    /// `a + b`, wrapping for integers.
    fn add(a: Self, b: Self) -> Self;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
        }
    )*};
}
macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ZERO: Self = 0.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { a + b }
        }
    )*};
}
int_element!(u32, i32, u64, i64);
float_element!(f32, f64);

/// A reduction operator of [`segmented_reduce`]: associative, with an
/// identity. [`Sum`], [`Min`] and [`Max`] are provided; implement it for
/// another operator.
pub trait SegmentOp<T>: Send + Sync + 'static {
    /// The value of an empty segment; `combine(IDENTITY, x) == x`.
    fn identity() -> T;
    /// Two partial results combined (`a` from earlier elements than `b`).
    fn combine(a: T, b: T) -> T;
}

/// The sum of a segment (wrapping for integers).
#[derive(Clone, Copy, Debug)]
pub struct Sum;
/// The smallest element of a segment.
#[derive(Clone, Copy, Debug)]
pub struct Min;
/// The largest element of a segment.
#[derive(Clone, Copy, Debug)]
pub struct Max;

impl<T: Element> SegmentOp<T> for Sum {
    #[inline(always)]
    fn identity() -> T {
        T::ZERO
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        T::add(a, b)
    }
}
impl<T: Element> SegmentOp<T> for Min {
    #[inline(always)]
    fn identity() -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        if b < a { b } else { a }
    }
}
impl<T: Element> SegmentOp<T> for Max {
    #[inline(always)]
    fn identity() -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        if a < b { b } else { a }
    }
}

/// `out[s]` = the reduction by `O` of segment `s` of `input`. Launch with
/// [`THREADS`] threads, one warp per segment.
#[kernel]
pub fn segmented_reduce_kernel<T: Element, O: SegmentOp<T>>(input: &[T], offsets: &[u32], mut out: DisjointSlice<T>) {
    let segments = offsets.len().saturating_sub(1);
    let lane = warp::lane_id() as usize;
    let segment = thread::blockIdx_x() as usize * (THREADS / 32) + thread::threadIdx_x() as usize / 32;
    // Whole warps leave together: the shuffles below need every lane.
    if segment >= segments {
        return;
    }
    let (begin, end) = (offsets[segment] as usize, offsets[segment + 1] as usize);
    let mut acc = O::identity();
    let mut i = begin + lane;
    // Four loads in flight per lane where the segment is long.
    while i + 96 < end {
        let (a, b, c, d) = (input[i], input[i + 32], input[i + 64], input[i + 96]);
        acc = O::combine(acc, O::combine(O::combine(a, b), O::combine(c, d)));
        i += 128;
    }
    while i < end {
        acc = O::combine(acc, input[i]);
        i += 32;
    }
    let mut width = 16;
    while width > 0 {
        let other = warp::shfl_xor(warp::FULL_MASK, acc, width);
        // Lane order kept: the lower lane's partial comes first.
        acc = if lane as u32 & width == 0 { O::combine(acc, other) } else { O::combine(other, acc) };
        width /= 2;
    }
    if lane == 0 {
        // SAFETY: each segment is written by its warp's lane 0 alone, and
        // segment < segments = out.len() (the host checks).
        unsafe { *out.get_unchecked_mut(segment) = acc };
    }
}

/// Reduces each segment of `input` (bounds in `offsets`, see the [module
/// docs](self)) by `O` into `output`, which has one element per segment.
/// Runs on `stream`; `offsets` is read back once for the checks.
pub fn segmented_reduce<T: Element + DeviceRepr, O: SegmentOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    offsets: &DeviceBuffer<u32>,
    output: &mut DeviceBuffer<T>,
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
        args: [slice(*input), slice(*offsets), slice_mut(*output)]
    }?;
    Ok(())
}

/// The CPU's segmented reduce by `O`, in element order, for checks.
pub fn segmented_reduce_on_cpu<T: Element, O: SegmentOp<T>>(input: &[T], offsets: &[u32]) -> Vec<T> {
    offsets.windows(2).map(|w| input[w[0] as usize..w[1] as usize].iter().fold(O::identity(), |a, &x| O::combine(a, x))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_reference() {
        let x = [3i32, -1, 7, 2];
        let offsets = [0, 1, 1, 4];
        assert_eq!(segmented_reduce_on_cpu::<i32, Sum>(&x, &offsets), [3, 0, 8]);
        assert_eq!(segmented_reduce_on_cpu::<i32, Min>(&x, &offsets), [3, i32::MAX, -1]);
        assert_eq!(segmented_reduce_on_cpu::<i32, Max>(&x, &offsets), [3, i32::MIN, 7]);
        assert_eq!(segmented_reduce_on_cpu::<f32, Min>(&[1.0], &[0, 0]), [f32::INFINITY]);
    }
}
