//! Device-wide histograms: even bins ([`histogram_even`]) and bins between
//! given boundaries ([`histogram_range`]), for `u32`, `i32` and `f32`
//! samples.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_prims::histogram::histogram_even;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = cuda_host::load_kernel_module(&ctx, "my_program")?;
//! let samples = DeviceBuffer::from_host(&stream, &[0.5f32, 1.5, 1.7, 9.0, -1.0])?;
//! // 4 bins of width 1 over [0, 4): -1.0 and 9.0 fall outside and are not counted.
//! let mut hist = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
//! histogram_even(&module, &stream, &samples, &mut hist, 0.0, 4.0)?;
//! assert_eq!(hist.to_host_vec(&stream)?, [1, 2, 0, 0]);
//! # Ok(())
//! # }
//! ```
//!
//! Bins follow CUB's `DeviceHistogram`: a sample `x` is counted when
//! `lower <= x < upper` (even bins) or `levels[0] <= x < levels[bins]`
//! (range bins, `levels` sorted ascending); an even bin of an integer
//! sample is `(x - lower) * bins / (upper - lower)` in exact integer
//! arithmetic, of a float sample `(x - lower) * (bins / (upper - lower))`
//! in `f32` (the last bin also takes what rounds up to `bins`); a range bin
//! is the `i` with `levels[i] <= x < levels[i + 1]`. NaN is never counted.
//! The histogram is overwritten, not added to.
//!
//! Each block counts its samples in shared memory (bins up to
//! [`SHARED_BINS`]; more bins count in global memory directly), then adds
//! its nonzero counts to the output with one global atomic per bin.

use crate::op::Element;
use crate::temp;
use crate::tile;
use crate::PrimsError;
use core::sync::atomic::{AtomicU32, Ordering};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block of the histogram kernel.
const THREADS: usize = 256;
/// The most bins counted in shared memory; more bins are counted with
/// global atomics (slower where many samples fall in few bins).
pub const SHARED_BINS: usize = 4096;

mod sealed {
    pub trait Sealed {}
}

/// A sample type the histograms take: `u32`, `i32`, `f32`.
pub trait Sample: sealed::Sealed + Element + PartialOrd {
    /// The even bin of `self` (see the [module docs](self)): integer
    /// samples divide by `upper - lower` through `divisor`, float samples
    /// multiply by `scale`, `bins / (upper - lower)` in `f32`.
    #[doc(hidden)]
    fn even_bin(self, lower: Self, upper: Self, bins: u32, scale: f32, divisor: Divisor) -> Option<u32>;
    /// `upper - lower` of integer samples (which fits in `u32` when
    /// `lower < upper`); 1 for floats, which do not divide.
    #[doc(hidden)]
    fn range(lower: Self, upper: Self) -> u32;
}

/// Exact division of any `u32` by a divisor fixed for a launch, as a
/// multiplication and shifts (a division is a long instruction sequence on
/// the GPU, run once per sample). With `l = ceil(log2(d))` and
/// `m = floor(2^32 · (2^l − d) / d) + 1`, `n / d` is
/// `(n + umulhi(n, m)) >> l` for every 32-bit `n` (Granlund and
/// Montgomery's round-up method; the sum is taken in 64 bits).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Divisor {
    magic: u32,
    shift: u32,
    /// Nonzero when every product `offset * bins` of the launch fits in 32
    /// bits, so the kernel needs no 64-bit path ([`Divisor::for_bins`]).
    narrow: u32,
}

// SAFETY: three u32s, every bit pattern valid.
unsafe impl DeviceRepr for Divisor {}

impl Divisor {
    /// The multiplier and shift of division by `d` (at least 1).
    pub fn new(d: u32) -> Divisor {
        assert!(d >= 1, "a histogram's range is at least 1");
        let shift = 32 - (d - 1).leading_zeros();
        let magic = (((1u64 << 32) * ((1u64 << shift) - d as u64)) / d as u64 + 1) as u32;
        Divisor { magic, shift, narrow: 0 }
    }

    /// Division by `range` for `bins` bins: marked narrow when the largest
    /// product, `(range - 1) * bins`, fits in 32 bits.
    pub fn for_bins(range: u32, bins: usize) -> Divisor {
        let narrow = (range as u64 - 1).checked_mul(bins as u64).is_some_and(|p| p >> 32 == 0);
        Divisor { narrow: narrow as u32, ..Divisor::new(range) }
    }

    /// `n / d`.
    #[inline(always)]
    pub fn divide(self, n: u32) -> u32 {
        let high = ((n as u64 * self.magic as u64) >> 32) as u32;
        ((n as u64 + high as u64) >> self.shift) as u32
    }
}

/// `offset * bins / range` exactly: through `divisor` (division by `range`)
/// where the product fits in 32 bits, else a 64-bit division (a long
/// software routine on the GPU, for ranges and bin counts past 2^32).
#[inline(always)]
fn scaled_bin(offset: u64, bins: u32, range: u32, divisor: Divisor) -> u32 {
    let product = offset * bins as u64;
    if divisor.narrow != 0 || product >> 32 == 0 {
        divisor.divide(product as u32)
    } else {
        (product / range as u64) as u32
    }
}

impl sealed::Sealed for u32 {}
impl Sample for u32 {
    #[inline(always)]
    fn even_bin(self, lower: u32, upper: u32, bins: u32, _: f32, divisor: Divisor) -> Option<u32> {
        if self >= lower && self < upper {
            Some(scaled_bin((self - lower) as u64, bins, upper - lower, divisor))
        } else {
            None
        }
    }
    fn range(lower: u32, upper: u32) -> u32 {
        upper.wrapping_sub(lower).max(1)
    }
}
impl sealed::Sealed for i32 {}
impl Sample for i32 {
    #[inline(always)]
    fn even_bin(self, lower: i32, upper: i32, bins: u32, _: f32, divisor: Divisor) -> Option<u32> {
        if self >= lower && self < upper {
            // Both fit in u32: lower <= self < upper.
            let offset = (self as i64 - lower as i64) as u64;
            let range = (upper as i64 - lower as i64) as u32;
            Some(scaled_bin(offset, bins, range, divisor))
        } else {
            None
        }
    }
    fn range(lower: i32, upper: i32) -> u32 {
        (upper as i64 - lower as i64).clamp(1, u32::MAX as i64) as u32
    }
}
impl sealed::Sealed for f32 {}
impl Sample for f32 {
    #[inline(always)]
    fn even_bin(self, lower: f32, upper: f32, bins: u32, scale: f32, _: Divisor) -> Option<u32> {
        if self >= lower && self < upper {
            // `as` saturates; the product of a sample below `upper` can still
            // round up to `bins`.
            Some((((self - lower) * scale) as u32).min(bins - 1))
        } else {
            None
        }
    }
    fn range(_: f32, _: f32) -> u32 {
        1
    }
}

/// The range bin of `x`: the `i` with `levels[i] <= x < levels[i + 1]`.
#[inline(always)]
fn range_bin<T: Sample>(x: T, levels: &[T]) -> Option<u32> {
    let last = levels.len() - 1;
    if !(x >= levels[0] && x < levels[last]) {
        return None;
    }
    // levels[lo] <= x < levels[hi]
    let (mut lo, mut hi) = (0usize, last);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if x < levels[mid] {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(lo as u32)
}

/// Calls `count` on every sample of the tiles this block takes: tiles of
/// `THREADS · tile::items::<T, 4>()` samples read as whole 16-byte vectors
/// (the order in which a histogram counts does not matter), the last,
/// ragged tile one sample at a time.
#[inline(always)]
fn count_tiles<T: Sample>(samples: &[T], warp: usize, lane: usize, count: impl Fn(T)) {
    let n = samples.len();
    let per_tile = THREADS * tile::items::<T, { tile::VECTORS }>();
    let mut tile = thread::blockIdx_x() as usize;
    let tiles = n.div_ceil(per_tile);
    while tile < tiles {
        let base = tile * per_tile;
        if base + per_tile <= n {
            // SAFETY: `samples` is a whole DeviceBuffer (the host functions
            // take nothing else), whose data is 16-byte aligned.
            let v = unsafe { tile::load::<T, { tile::VECTORS }>(samples, base, warp, lane, true, T::default()) };
            // Constant indices only, so the vectors stay in registers.
            let (mut k, items) = (0, tile::items::<T, { tile::VECTORS }>());
            unroll!(full, while k < items {
                count(tile::get(&v, k));
                k += 1;
            });
        } else {
            for k in 0..tile::items::<T, { tile::VECTORS }>() {
                let (j, e) = (k / tile::lanes::<T>(), k % tile::lanes::<T>());
                if let Some(&x) = samples.get(tile::vector_start::<T, { tile::VECTORS }>(base, warp, lane, j) + e) {
                    count(x);
                }
            }
        }
        tile += thread::gridDim_x() as usize;
    }
}

/// Counts `samples` into `hist` (zeroed, `bins` long): even bins when
/// `levels` is empty, else range bins between `levels`. Launch with
/// `THREADS` threads.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn histogram_kernel<T: Sample>(
    samples: &[T],
    levels: &[T],
    lower: T,
    upper: T,
    scale: f32,
    divisor: Divisor,
    bins: u32,
    mut hist: DisjointSlice<u32>,
) {
    // Past the bins, one slot per lane: a sample outside every bin is
    // counted there (never read), so the loop over a tile has no branch.
    shared! { static COUNTS: [AtomicU32; SHARED_BINS + 32]; }
    let tid = thread::threadIdx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let private = bins as usize <= SHARED_BINS;
    let global = hist.as_mut_ptr();
    if private {
        let mut b = tid;
        while b < bins as usize {
            // SAFETY: each thread zeroes its own bins before the barrier.
            unsafe { COUNTS.write(b, AtomicU32::new(0)) };
            b += THREADS;
        }
        if tid < 32 {
            // SAFETY: as above, the lanes' slots.
            unsafe { COUNTS.write(SHARED_BINS + tid, AtomicU32::new(0)) };
        }
    }
    thread::sync_threads();
    // One loop per way of binning, chosen once per launch (a generic
    // function, so each is compiled with its binning inlined).
    #[inline(always)]
    fn tiles<T: Sample>(samples: &[T], warp: usize, lane: usize, private: bool, global: *mut u32, bin: impl Fn(T) -> Option<u32>) {
        if private {
            count_tiles(samples, warp, lane, |x| {
                let slot = bin(x).map_or(SHARED_BINS + lane, |b| b as usize);
                // SAFETY: a bin is below bins <= SHARED_BINS, the lane's
                // slot below SHARED_BINS + 32; both zeroed before the barrier.
                unsafe { COUNTS.get_ref(slot) }.fetch_add_scoped(1, Scope::Block, Ordering::Relaxed);
            })
        } else {
            count_tiles(samples, warp, lane, |x| {
                if let Some(b) = bin(x) {
                    // SAFETY: b < bins = hist.len(); hist is only accessed
                    // atomically during the launch.
                    unsafe { AtomicU32::from_ptr(global.add(b as usize)) }.fetch_add_scoped(1, Scope::Device, Ordering::Relaxed);
                }
            })
        }
    }
    if !levels.is_empty() {
        tiles(samples, warp, lane, private, global, |x| range_bin(x, levels));
    } else if divisor.narrow != 0 {
        let divisor = Divisor { narrow: 1, ..divisor };
        tiles(samples, warp, lane, private, global, |x| x.even_bin(lower, upper, bins, scale, divisor));
    } else {
        let divisor = Divisor { narrow: 0, ..divisor };
        tiles(samples, warp, lane, private, global, |x| x.even_bin(lower, upper, bins, scale, divisor));
    }
    if !private {
        return;
    }
    thread::sync_threads();
    let mut b = tid;
    while b < bins as usize {
        // SAFETY: as above.
        let count = unsafe { COUNTS.get_ref(b) }.load_scoped(Scope::Block, Ordering::Relaxed);
        if count > 0 {
            // SAFETY: as above.
            unsafe { AtomicU32::from_ptr(global.add(b)) }.fetch_add_scoped(count, Scope::Device, Ordering::Relaxed);
        }
        b += THREADS;
    }
}

fn launch<T: Sample + DeviceRepr>(
    module: &KernelModule,
    stream: &CudaStream,
    samples: &DeviceBuffer<T>,
    levels: &DeviceBuffer<T>,
    hist: &mut DeviceBuffer<u32>,
    lower: T,
    upper: T,
    scale: f32,
    divisor: Divisor,
) -> Result<(), PrimsError> {
    hist.memset(stream, 0)?;
    let bins = hist.len();
    if samples.is_empty() || bins == 0 {
        return Ok(());
    }
    let tiles = samples.len().div_ceil(THREADS * tile::items::<T, { tile::VECTORS }>());
    let sms = stream.context().multiprocessor_count()? as usize;
    let config = LaunchConfig { grid_dim: (tiles.min(sms * 8) as u32, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 };
    let bins = bins as u32;
    cuda_launch! {
        kernel: histogram_kernel::<T>, stream: stream, module: module, config: config,
        args: [slice(*samples), slice(*levels), lower, upper, scale, divisor, bins, slice_mut(*hist)]
    }?;
    Ok(())
}

/// Counts `samples` into `hist.len()` bins of equal width over
/// `lower..upper` (see the [module docs](self) for the exact rule).
/// `hist` is overwritten. Runs on `stream`.
pub fn histogram_even<T: Sample + DeviceRepr>(
    module: &KernelModule,
    stream: &CudaStream,
    samples: &DeviceBuffer<T>,
    hist: &mut DeviceBuffer<u32>,
    lower: T,
    upper: T,
) -> Result<(), PrimsError> {
    if !(lower < upper) {
        return Err(PrimsError::Invalid("histogram_even needs lower < upper: pass the bins' range as lower..upper".into()));
    }
    if hist.len() > u32::MAX as usize {
        return Err(PrimsError::Invalid("histogram_even counts at most u32::MAX bins".into()));
    }
    let no_levels = temp::zeroed::<T>(stream, 0)?;
    let scale = even_scale(lower, upper, hist.len());
    let divisor = Divisor::for_bins(T::range(lower, upper), hist.len());
    launch(module, stream, samples, &no_levels, hist, lower, upper, scale, divisor)
}

/// `bins / (upper - lower)` in `f32` for float samples (what CUB computes);
/// unused for integers.
fn even_scale<T: Sample>(lower: T, upper: T, bins: usize) -> f32 {
    // The float samples' scale; integers compute exactly and ignore it.
    let as_f32 = |x: T| -> f32 {
        let any: &dyn core::any::Any = &x;
        any.downcast_ref::<f32>().copied().unwrap_or(0.0)
    };
    bins as f32 / (as_f32(upper) - as_f32(lower))
}

/// Counts `samples` into the bins between consecutive `levels` (sorted
/// ascending, `hist.len() + 1` of them; the host checks both). `hist` is
/// overwritten. Runs on `stream`; `levels` is read back once for the check.
pub fn histogram_range<T: Sample + DeviceRepr>(
    module: &KernelModule,
    stream: &CudaStream,
    samples: &DeviceBuffer<T>,
    levels: &DeviceBuffer<T>,
    hist: &mut DeviceBuffer<u32>,
) -> Result<(), PrimsError> {
    if levels.len() != hist.len() + 1 {
        return Err(PrimsError::LengthMismatch { what: "levels", expected: hist.len() + 1, found: levels.len() });
    }
    let host = levels.to_host_vec(stream)?;
    if host.windows(2).any(|w| !(w[0] < w[1])) {
        return Err(PrimsError::Invalid("histogram_range needs strictly ascending levels (no NaN)".into()));
    }
    let zero = T::default();
    launch(module, stream, samples, levels, hist, zero, zero, 0.0, Divisor::new(1))
}

/// The CPU's histogram by the same rules, for checks: even bins when
/// `levels` is empty (then `bins`, `lower`, `upper` apply), else range bins.
pub fn histogram_on_cpu<T: Sample>(samples: &[T], levels: &[T], bins: usize, lower: T, upper: T) -> Vec<u32> {
    let mut hist = vec![0u32; if levels.is_empty() { bins } else { levels.len() - 1 }];
    let scale = even_scale(lower, upper, bins);
    let divisor = Divisor::for_bins(T::range(lower, upper), bins);
    for &x in samples {
        let bin = if levels.is_empty() { x.even_bin(lower, upper, bins as u32, scale, divisor) } else { range_bin(x, levels) };
        if let Some(b) = bin {
            hist[b as usize] += 1;
        }
    }
    hist
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_bins_are_cubs() {
        let d = |lower, upper| Divisor::for_bins(u32::range(lower, upper), 1000);
        let di = |lower, upper| Divisor::for_bins(i32::range(lower, upper), 2);
        let none = Divisor::new(1);
        assert_eq!(5u32.even_bin(0, 10, 3, 0.0, d(0, 10)), Some(1));
        assert_eq!(10u32.even_bin(0, 10, 3, 0.0, d(0, 10)), None);
        assert_eq!(i32::MIN.even_bin(i32::MIN, i32::MAX, 2, 0.0, di(i32::MIN, i32::MAX)), Some(0));
        assert_eq!((i32::MAX - 1).even_bin(i32::MIN, i32::MAX, 2, 0.0, di(i32::MIN, i32::MAX)), Some(1));
        assert_eq!(f32::NAN.even_bin(0.0, 1.0, 4, 4.0, none), None);
        // Products past 32 bits take the 64-bit division.
        assert_eq!((u32::MAX - 1).even_bin(0, u32::MAX, 1000, 0.0, d(0, u32::MAX)), Some(999));
        assert_eq!(
            3_000_000_000u32.even_bin(0, u32::MAX, 7, 0.0, d(0, u32::MAX)),
            Some((3_000_000_000u64 * 7 / u32::MAX as u64) as u32)
        );
        assert_eq!(0.999_999_9f32.even_bin(0.0, 1.0, 4, 4.0, none), Some(3));
    }

    /// The multiply-and-shift division against `/`, at every divisor's
    /// edges (powers of two and their neighbours, 1, `u32::MAX`) and on
    /// random pairs, numerators at 0, the divisor's multiples ±1 and
    /// `u32::MAX`.
    #[test]
    fn divisor_divides_exactly() {
        let mut divisors = vec![1u32, 2, 3, 5, 7, 10, 641, 3900, 6700417, u32::MAX, u32::MAX - 1, 1 << 31];
        for p in 1..32 {
            divisors.extend([(1u32 << p) - 1, 1 << p, (1u32 << p) + 1]);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        };
        for _ in 0..2000 {
            divisors.push(random().max(1));
            divisors.push((random() >> (random() % 32)).max(1));
        }
        for &d in &divisors {
            let div = Divisor::new(d);
            let mut numerators = vec![0u32, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1, u32::MAX / d * d];
            numerators.extend((0..64).map(|_| random()));
            for k in [2u64, 3, 1000, 65536] {
                if let Ok(m) = u32::try_from(d as u64 * k) {
                    numerators.extend([m - 1, m, m.wrapping_add(1)]);
                }
            }
            for n in numerators {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn range_bins() {
        let levels = [0u32, 10, 20, 100];
        assert_eq!(range_bin(0u32, &levels), Some(0));
        assert_eq!(range_bin(19u32, &levels), Some(1));
        assert_eq!(range_bin(20u32, &levels), Some(2));
        assert_eq!(range_bin(100u32, &levels), None);
        assert_eq!(histogram_on_cpu(&[1u32, 15, 99, 100, 5], &levels, 0, 0, 0), [2, 1, 1]);
    }
}
