//! `cuda_prims::reduce` against the CPU: sums, minima, maxima and a user
//! operator over several element types and sizes (empty, one element, the
//! boundaries of a warp, a block and a vector, ragged sizes).

use crate::inputs::{samples, words, Check};
use crate::Sizes;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_host::KernelModule;
use cuda_prims::op::{FnOp, Max, Min, ReduceOp, Sum};
use cuda_prims::reduce;
use std::sync::Arc;

/// The sizes a run checks.
pub fn lengths(sizes: Sizes) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 5003];
    if sizes.emulated {
        v.extend([3 * 4096 + 5, 33 * 1024 + 1]);
    } else {
        v.extend([(1 << 20) + 3, (1 << 22) - 1, (1 << 22) + 777]);
    }
    v
}

fn check_one<T: Check, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    name: &str,
    host: &[T],
    input: &DeviceBuffer<T>,
    op: Op,
) -> Result<(), String> {
    let got = reduce::reduce(module, stream, input, op).map_err(|e| format!("reduce {name}: {e}"))?;
    // The CPU in f64 for float sums (the GPU's f32 differs by rounding only).
    let want = host.iter().fold(op.identity(), |a, &b| op.combine(a, b));
    let abs_sum: f64 = host.iter().map(|x| x.magnitude()).sum();
    if T::agrees(got, want, abs_sum, host.len()) {
        Ok(())
    } else {
        Err(format!("reduce {name} of {} {}: GPU {got:?}, CPU {want:?}", host.len(), std::any::type_name::<T>()))
    }
}

fn check_type<T: Check>(module: &KernelModule, stream: &CudaStream, sizes: Sizes, seed: u64) -> Result<usize, String> {
    let mut checks = 0;
    for n in lengths(sizes) {
        let host = samples::<T>(n, seed + n as u64);
        let input = DeviceBuffer::from_host(stream, &host).map_err(|e| e.to_string())?;
        check_one(module, stream, "Sum", &host, &input, Sum)?;
        check_one(module, stream, "Min", &host, &input, Min)?;
        check_one(module, stream, "Max", &host, &input, Max)?;
        checks += 3;
    }
    Ok(checks)
}

/// Runs the reduce checks.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let mut checks = 0;
    checks += check_type::<u32>(module, &stream, sizes, 1)?;
    checks += check_type::<i32>(module, &stream, sizes, 2)?;
    checks += check_type::<f32>(module, &stream, sizes, 3)?;
    checks += check_type::<u64>(module, &stream, sizes, 4)?;
    if !sizes.emulated {
        checks += check_type::<i64>(module, &stream, sizes, 5)?;
        checks += check_type::<f64>(module, &stream, sizes, 6)?;
    }
    // One large input on the GPU (the CPU side of the check is a debug
    // build: the other sizes stay at a few million elements).
    if !sizes.emulated {
        let host = samples::<u32>((1 << 24) + 777, 8);
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|e| e.to_string())?;
        check_one(module, &stream, "Sum", &host, &input, Sum)?;
        checks += 1;
    }
    // A user operator: the bitwise xor of every word.
    let xor = FnOp::new(0u64, |a: u64, b: u64| a ^ b);
    for n in lengths(sizes) {
        let host = samples::<u64>(n, 99 + n as u64);
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|e| e.to_string())?;
        check_one(module, &stream, "xor (FnOp)", &host, &input, xor)?;
        checks += 1;
    }
    checks += back_to_back_on_two_streams(ctx, module, sizes)?;
    checks += special_floats::<f32>(module, &stream, sizes)?;
    checks += special_floats::<f64>(module, &stream, sizes)?;
    // The output buffer must hold one element.
    let input = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).map_err(|e| e.to_string())?;
    let mut two = DeviceBuffer::<u32>::zeroed(&stream, 2).map_err(|e| e.to_string())?;
    match reduce::reduce_into(module, &stream, &input, &mut two, Sum) {
        Err(cuda_prims::PrimsError::LengthMismatch { expected: 1, found: 2, .. }) => checks += 1,
        other => return Err(format!("reduce_into with a 2-element output: expected a length error, got {other:?}")),
    }
    Ok(checks)
}

/// Reductions queued without a synchronisation in between, on two streams
/// at once, growing and shrinking from call to call: each stream keeps its
/// own partials and arrival count between calls (grown when a call needs
/// more blocks), and every call must start from a count of zero and read
/// only its own launch's partials.
fn back_to_back_on_two_streams(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let streams = [ctx.new_stream().map_err(|x| e(&x))?, ctx.new_stream().map_err(|x| e(&x))?];
    let top = if sizes.emulated { 33 * 1024 + 1 } else { (1 << 22) + 5 };
    // Each stream's first reduce is small (two and three blocks), so that a
    // later, larger one grows the stream's kept partials.
    let lengths = [4097, 8193, top, 5003, top / 2, top];
    let mut inputs = Vec::new();
    let mut outs = Vec::new();
    for (k, &n) in lengths.iter().enumerate() {
        let host = samples::<u32>(n, 700 + k as u64);
        let stream = &streams[k % 2];
        let input = DeviceBuffer::from_host(stream, &host).map_err(|x| e(&x))?;
        inputs.push((host, input));
        outs.push(DeviceBuffer::<u32>::zeroed(stream, 1).map_err(|x| e(&x))?);
    }
    // The second round reduces each input on the other stream.
    for stream in &streams {
        stream.synchronize().map_err(|x| e(&x))?;
    }
    for round in 0..2 {
        for (k, ((_, input), out)) in inputs.iter().zip(outs.iter_mut()).enumerate() {
            reduce::reduce_into(module, &streams[(k + round) % 2], input, out, Sum).map_err(|x| e(&x))?;
        }
        for stream in &streams {
            stream.synchronize().map_err(|x| e(&x))?;
        }
        for ((host, _), out) in inputs.iter().zip(&outs) {
            let got = out.to_host_vec(&streams[0]).map_err(|x| e(&x))?[0];
            let want = host.iter().fold(0u32, |a, &b| a.wrapping_add(b));
            if got != want {
                return Err(format!("round {round}: a reduce of {} u32 queued beside others on two streams gave {got}, the CPU {want}", host.len()));
            }
        }
    }
    Ok(2 * lengths.len())
}

/// A float type with the boundary values a reduction must get right.
trait Special: Check + std::ops::Neg<Output = Self> {
    const NAN: Self;
    const INFINITY: Self;
    const MAX: Self;
    const MIN_POSITIVE: Self;
    /// The smallest positive subnormal.
    const TINIEST: Self;
    const ZERO: Self;
    fn is_nan(self) -> bool;
}
macro_rules! special {
    ($($t:ident, $bits:ty),*) => {$(
        impl Special for $t {
            const NAN: Self = $t::NAN;
            const INFINITY: Self = $t::INFINITY;
            const MAX: Self = $t::MAX;
            const MIN_POSITIVE: Self = $t::MIN_POSITIVE;
            const TINIEST: Self = $t::from_bits(1);
            const ZERO: Self = 0.0;
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
        }
    )*};
}
special!(f32, u32, f64, u64);

/// Min, Max and Sum over floats sprinkled with NaN, ±inf, ±0, ±MAX,
/// ±MIN_POSITIVE and subnormals, at random places in inputs that span
/// several blocks. Min and Max ignore NaN (op's rule) and must equal the
/// CPU's exactly (`-0.0 == 0.0`: which zero wins is the order's); a Sum
/// with a NaN, or with both infinities, is NaN; with +inf alone, +inf;
/// with only zeros and subnormals besides ordinary values, within the
/// reordering bound.
fn special_floats<T: Special>(module: &KernelModule, stream: &CudaStream, sizes: Sizes) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let specials = [T::NAN, T::INFINITY, -T::INFINITY, T::ZERO, -T::ZERO, T::MAX, -T::MAX, T::MIN_POSITIVE, -T::MIN_POSITIVE, T::TINIEST, -T::TINIEST];
    let lengths: &[usize] = if sizes.emulated { &[31, 4097, 33 * 1024 + 1] } else { &[31, 4097, (1 << 22) + 3] };
    let name = std::any::type_name::<T>();
    let mut checks = 0;
    for (k, &n) in lengths.iter().enumerate() {
        let seed = 900 + k as u64;
        let picks = words(n / 16 + 2, seed);
        // Random ones of the allowed special values at random places, then
        // every one of them once more at places of its own (n ≥ 31 > their
        // number), so that none is overwritten.
        let sprinkle = |mut host: Vec<T>, allowed: &dyn Fn(T) -> bool| {
            let chosen: Vec<T> = specials.iter().copied().filter(|&x| allowed(x)).collect();
            for &w in &picks {
                host[w as usize % n] = chosen[(w >> 40) as usize % chosen.len()];
            }
            let stride = n / chosen.len();
            for (j, &value) in chosen.iter().enumerate() {
                host[(picks[0] as usize + j * stride) % n] = value;
            }
            host
        };
        let upload = |host: &[T]| DeviceBuffer::from_host(stream, host).map_err(|x| e(&x));
        let failed = |op_name: &str, x: cuda_prims::PrimsError| format!("reduce {op_name} of {n} {name} with special values: {x}");
        let all = sprinkle(samples::<T>(n, seed), &|_| true);
        let all_on_gpu = upload(&all)?;
        let min = reduce::reduce(module, stream, &all_on_gpu, Min).map_err(|x| failed("Min", x))?;
        let max = reduce::reduce(module, stream, &all_on_gpu, Max).map_err(|x| failed("Max", x))?;
        for (op_name, got, want) in [
            ("Min", min, all.iter().fold(Min.identity(), |a, &b| Min.combine(a, b))),
            ("Max", max, all.iter().fold(Max.identity(), |a, &b| Max.combine(a, b))),
        ] {
            if got != want {
                return Err(format!("reduce {op_name} of {n} {name} with NaN, ±inf, ±0, ±MAX, subnormals: GPU {got:?}, CPU {want:?}"));
            }
            checks += 1;
        }
        let sum = |input: &DeviceBuffer<T>| reduce::reduce(module, stream, input, Sum).map_err(|x| failed("Sum", x));
        // A NaN anywhere: NaN.
        let got = sum(&all_on_gpu)?;
        if !got.is_nan() {
            return Err(format!("reduce Sum of {n} {name} holding NaN: GPU {got:?}, expected NaN"));
        }
        // +inf with finite values (no MAX, whose sums could overflow to -inf first): +inf.
        let finite_or_plus_inf = sprinkle(samples::<T>(n, seed), &|x| !x.is_nan() && x != -T::INFINITY && x != T::MAX && x != -T::MAX);
        let got = sum(&upload(&finite_or_plus_inf)?)?;
        if got != T::INFINITY {
            return Err(format!("reduce Sum of {n} {name} holding +inf and finite values: GPU {got:?}, expected +inf"));
        }
        // Zeros, subnormals and MIN_POSITIVE among ordinary values: the bound.
        let small = sprinkle(samples::<T>(n, seed), &|x| x == T::ZERO || x == -T::ZERO || x == T::TINIEST || x == -T::TINIEST || x == T::MIN_POSITIVE || x == -T::MIN_POSITIVE);
        let got = sum(&upload(&small)?)?;
        let want = small.iter().fold(Sum.identity(), |a: T, &b| Sum.combine(a, b));
        let abs_sum: f64 = small.iter().map(|x| x.magnitude()).sum();
        if !T::agrees(got, want, abs_sum, n) {
            return Err(format!("reduce Sum of {n} {name} with zeros and subnormals: GPU {got:?}, CPU {want:?}"));
        }
        checks += 3;
    }
    Ok(checks)
}
