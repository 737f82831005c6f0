//! GPU test: the FP8 conversions of `cuda_device::half` (`f8e4m3`,
//! `f8e5m2` and their pairs) against the CPU model, bit for bit.
//!
//! One kernel narrows many f32 values — the formats' edges (largest finite
//! values, the saturation thresholds, ties, subnormals, signed zeros,
//! infinities, NaNs with payloads) and a spread of random bit patterns and
//! in-range values — as pairs (`cvt.rn.satfinite.e4m3x2.f32`), as single
//! values, and through f16 (`.f16x2` sources). Another widens all 65,536
//! pair patterns of both formats to f16x2 (`cvt.rn.f16x2.e4m3x2`) and to
//! f32. A third writes a `DeviceBuffer<f8e4m3>` directly. The host computes
//! the same Rust, which is the CPU model; every result must match exactly.
//!
//! Prints one line per check, then `N results matched` (exit 0), or each
//! failing check with its first mismatch (exit 1). Needs sm_89.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::half::{f16, f16x2, f8e4m3, f8e4m3x2, f8e5m2, f8e5m2x2};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Every narrowing of `x` (paired with `partner`), packed in one word.
fn narrow_all(x: f32, partner: f32) -> u64 {
    let h = f16::from_f32(x);
    f8e4m3x2::from_f32s(x, partner).to_bits() as u64
        | (f8e5m2x2::from_f32s(x, partner).to_bits() as u64) << 16
        | (f8e4m3::from_f32(x).to_bits() as u64) << 32
        | (f8e5m2::from_f32(x).to_bits() as u64) << 40
        | (f8e4m3::from_f16(h).to_bits() as u64) << 48
        | (f8e5m2x2::from_f16x2(f16x2::new(h, f16::from_f32(partner))).to_bits() as u64 & 0xff) << 56
}

/// Every widening of the pair pattern `bits`, packed in two words.
fn widen_all(bits: u16) -> (u64, u64) {
    let (e4, e5) = (f8e4m3x2::from_bits(bits), f8e5m2x2::from_bits(bits));
    let halves = e4.to_f16x2().to_bits() as u64 | (e5.to_f16x2().to_bits() as u64) << 32;
    let singles = e4.lo().to_f32().to_bits() as u64 | (e5.hi().to_f32().to_bits() as u64) << 32;
    (halves, singles)
}

/// Thread `i` narrows `x[i]`, paired with `x[(i * 7 + 3) % n]`.
#[kernel]
pub fn narrow(x: &[f32], mut out: DisjointSlice<u64>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = narrow_all(x[i], x[(i * 7 + 3) % x.len()]);
    }
}

/// Thread `i` widens the pair pattern `i`.
#[kernel]
pub fn widen(mut halves: DisjointSlice<u64>, mut singles: DisjointSlice<u64>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i <= u16::MAX as usize {
        let (h, s) = widen_all(i as u16);
        if let Some(slot) = halves.get_mut(idx) {
            *slot = h;
        }
        if let Some(slot) = singles.get_mut(idx) {
            *slot = s;
        }
    }
}

/// `out[i] = x[i] * scale` in E4M3, through typed buffers.
#[kernel]
pub fn quantize(x: &[f32], scale: f32, mut out: DisjointSlice<f8e4m3>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = f8e4m3::from_f32(x[idx.get()] * scale);
    }
}

/// The edge values of both formats and of their conversions.
fn edges() -> Vec<f32> {
    let up = |x: f32| f32::from_bits(x.to_bits() + 1);
    let down = |x: f32| f32::from_bits(x.to_bits() - 1);
    let p = |e: i32| 2f32.powi(e);
    let mut v = vec![
        0.0, -0.0, 1.0, -1.0, 0.1, 0.3, -1.0 / 3.0, 448.0, -448.0, 464.0, down(464.0), up(464.0), 480.0, 500.0,
        57344.0, 61440.0, down(61440.0), up(61440.0), 65536.0, -1e9, f32::MAX, f32::MIN, f32::INFINITY,
        f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234),
        f32::MIN_POSITIVE, -f32::MIN_POSITIVE, f32::from_bits(1), f32::from_bits(0x8000_0001), p(-6), down(p(-6)),
        p(-9), p(-10), up(p(-10)), 1.5 * p(-9), p(-14), p(-16), p(-17), up(p(-17)), 3.0 * p(-17), 1.0625, 1.1875,
        up(1.0625), 1.125, 1.0 + p(-3), 1.0 + p(-4), 65504.0, 65520.0,
    ];
    // Every value of both formats and the midpoints around it.
    for bits in 0..=255u8 {
        for x in [f8e4m3::from_bits(bits).to_f32(), f8e5m2::from_bits(bits).to_f32()] {
            if x.is_finite() && x != 0.0 {
                v.extend([x, up(x), down(x), x * (1.0 + p(-4)), x * (1.0 + p(-3)), x * (1.0 + 3.0 * p(-5))]);
            }
        }
    }
    v
}

/// Random bit patterns, and values drawn over the formats' ranges.
fn spread(n: usize) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let bits = s as u32;
            if i % 2 == 0 {
                f32::from_bits(bits)
            } else {
                // Exponents 2^-20 .. 2^17: every binade of both formats.
                f32::from_bits(bits & 0x807f_ffff | (107 + (bits >> 23 & 0xff) % 37) << 23)
            }
        })
        .collect()
}

/// Counts mismatches of `gpu` against `cpu`, printing the first.
fn compare(name: &str, inputs: &[u64], gpu: &[u64], cpu: &[u64]) -> bool {
    let bad: Vec<usize> = (0..cpu.len()).filter(|&i| gpu[i] != cpu[i]).collect();
    match bad.first() {
        None => {
            println!("ok    {name:<34} {} results", cpu.len());
            true
        }
        Some(&i) => {
            println!(
                "FAIL  {name:<34} {} of {}: first input {:#x}: GPU {:#018x} CPU {:#018x}",
                bad.len(),
                cpu.len(),
                inputs[i],
                gpu[i],
                cpu[i]
            );
            false
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "fp8")?;
    let mut ok = true;
    let mut matched = 0;

    let x: Vec<f32> = edges().into_iter().chain(spread(1 << 16)).collect();
    let n = x.len();
    let x_dev = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: narrow, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(x_dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let cpu: Vec<u64> = (0..n).map(|i| narrow_all(x[i], x[(i * 7 + 3) % n])).collect();
    let inputs: Vec<u64> = x.iter().map(|v| v.to_bits() as u64).collect();
    ok &= compare("narrow f32/f16 to e4m3/e5m2", &inputs, &gpu, &cpu);
    matched += n;

    let patterns = 1usize << 16;
    let mut halves = DeviceBuffer::<u64>::zeroed(&stream, patterns)?;
    let mut singles = DeviceBuffer::<u64>::zeroed(&stream, patterns)?;
    cuda_launch! {
        kernel: widen, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(patterns as u32),
        args: [slice_mut(halves), slice_mut(singles)]
    }?;
    let (gpu_h, gpu_s) = (halves.to_host_vec(&stream)?, singles.to_host_vec(&stream)?);
    let cpu: Vec<(u64, u64)> = (0..patterns).map(|i| widen_all(i as u16)).collect();
    let cpu_h: Vec<u64> = cpu.iter().map(|c| c.0).collect();
    let cpu_s: Vec<u64> = cpu.iter().map(|c| c.1).collect();
    let pats: Vec<u64> = (0..patterns as u64).collect();
    ok &= compare("widen e4m3x2/e5m2x2 to f16x2", &pats, &gpu_h, &cpu_h);
    ok &= compare("widen e4m3/e5m2 to f32", &pats, &gpu_s, &cpu_s);
    matched += 2 * patterns;

    let scale = 0.75f32;
    let mut q = DeviceBuffer::<f8e4m3>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: quantize, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(x_dev), scale, slice_mut(q)]
    }?;
    let gpu_q: Vec<u64> = q.to_host_vec(&stream)?.iter().map(|v| v.to_bits() as u64).collect();
    let cpu_q: Vec<u64> = x.iter().map(|&v| f8e4m3::from_f32(v * scale).to_bits() as u64).collect();
    ok &= compare("DeviceBuffer<f8e4m3> quantize", &inputs, &gpu_q, &cpu_q);
    matched += n;

    // One line a reader can check by hand.
    println!(
        "      e4m3(0.3) = {:#04x}, e4m3(1e9) = {:#04x}, e5m2(inf) = {:#04x}, e4m3(NaN) = {:#04x}",
        f8e4m3::from_f32(0.3).to_bits(),
        f8e4m3::from_f32(1e9).to_bits(),
        f8e5m2::from_f32(f32::INFINITY).to_bits(),
        f8e4m3::from_f32(f32::NAN).to_bits()
    );
    if ok {
        println!("✓ SUCCESS: {matched} FP8 results matched the CPU");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
