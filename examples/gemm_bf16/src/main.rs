//! gemm_bf16: C = A·Bᵀ in bf16 with f32 accumulation on Hopper (sm_90a),
//! written in Rust, compared against cuBLAS (`cublasGemmEx`) for 4096³,
//! 8192³ and 8192×1024×8192, the same in f16 (f16 in and out, against
//! cuBLAS too), and its FP8 twin (e4m3 inputs, per-tensor scales, bf16 or
//! f32 out) against the CPU; the persistent kernels under each `Schedule`.
//! The kernels (`gemm_simple`, `gemm_ws`, `gemm_ws_f16`, `gemm_fp8_ws`,
//! `gemm_fp8_ws_f32`) and their host setup are
//! this package's library (`src/lib.rs`, whose docs describe them), which
//! the benchmarks (`benches/`) launch too; this program checks and times
//! them.
//!
//! The check: 4096 sampled entries against an `f64` CPU dot product of the
//! same bf16 (or f16) inputs, `|c − ref| ≤ 2⁻⁷·|ref| + 10⁻⁵·Σ|a·b|` (the final bf16
//! rounding is at most 2⁻⁹·|ref|; f32 accumulation in any order adds at most
//! about K·2⁻²⁴·Σ|a·b| ≤ 5·10⁻⁴·Σ|a·b| in the worst case and far less in
//! practice: a dropped or repeated K step errs by ~1/128 of the sum and
//! fails), and every entry against cuBLAS (|c − c_cublas| ≤
//! 2⁻⁶·max(|c_cublas|, 1): one bf16 rounding each, plus summation order).
//!
//! Edge values (`run_edges`): a product in bf16 and in f16 whose inputs
//! hold +∞, NaN, the largest finite value, subnormals and −0, under every
//! schedule, each entry against the CPU's IEEE result rounded to the type
//! (NaN, the same infinity, or finite within the bound above) and against
//! cuBLAS.
//!
//! Its results against cuBLAS are in benches/README.md. On the GPU machine,
//! `go.sh` (next to this crate; put the binary beside it) finds libcublas,
//! sets `OXIDE_CUBLAS` and runs it.
//!
//! cuBLAS is loaded at run time from `$OXIDE_CUBLAS` (the path of
//! libcublas.so); without it only oxide's time is printed.

use cuda_core::{CudaContext, DeviceBuffer};
use cuda_host::load_kernel_module;
use cuda_device::half::{f16, f8e4m3};
use gemm_bf16::{check_dims, check_fp8_dims, kernel_function, Dims, Fp8Scales, Gemm, GemmFp8, HalfType, Kernel, Schedule};
use std::ffi::{c_char, c_int, c_void, CString};
use std::process::ExitCode;
use std::sync::Arc;

/// bf16 bits of `x`, rounded to nearest even.
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The f32 value of bf16 bits.
fn from_bf16(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// The bits of element `i` of a C stored as pairs of 16-bit values in u32
/// words (the low half is the even element).
fn element_bits(words: &[u32], i: usize) -> u16 {
    (words[i / 2] >> (16 * (i % 2))) as u16
}

/// Deterministic pseudo-random bf16 values in [-1, 1) (xorshift64).
fn random_bf16(len: usize, seed: u64) -> Vec<u16> {
    random_half(HalfType::Bf16, len, seed)
}

/// Deterministic pseudo-random values in [-1, 1) (xorshift64) as the bits
/// of `half`.
fn random_half(half: HalfType, len: usize, seed: u64) -> Vec<u16> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            to_half(half, (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

/// The bits of `x` in `half`, rounded to nearest even.
fn to_half(half: HalfType, x: f32) -> u16 {
    match half {
        HalfType::Bf16 => to_bf16(x),
        HalfType::F16 => f16::from_f32(x).to_bits(),
    }
}

/// The f32 value of the bits `h` of `half`.
fn from_half(half: HalfType, h: u16) -> f32 {
    match half {
        HalfType::Bf16 => from_bf16(h),
        HalfType::F16 => f16::from_bits(h).to_f32(),
    }
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

type CublasCreate = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
#[allow(clippy::type_complexity)]
type CublasGemmEx = unsafe extern "C" fn(
    *mut c_void, c_int, c_int, c_int, c_int, c_int, *const c_void, *const c_void, c_int, c_int,
    *const c_void, c_int, c_int, *const c_void, *mut c_void, c_int, c_int, c_int, c_int,
) -> c_int;

/// cuBLAS, loaded from `$OXIDE_CUBLAS`.
struct Cublas {
    handle: *mut c_void,
    gemm_ex: CublasGemmEx,
}

impl Cublas {
    fn load() -> Result<Cublas, String> {
        let path = std::env::var("OXIDE_CUBLAS")
            .map_err(|_| "OXIDE_CUBLAS is not set (the path of libcublas.so.13 or .12)".to_string())?;
        let cpath = CString::new(path.clone()).map_err(|e| e.to_string())?;
        // SAFETY: NUL-terminated path; RTLD_NOW (2); dlerror's message is a
        // NUL-terminated string when non-null.
        let lib = unsafe { dlopen(cpath.as_ptr(), 2) };
        if lib.is_null() {
            let why = unsafe { std::ffi::CStr::from_ptr(dlerror()) }.to_string_lossy().into_owned();
            return Err(format!("cannot load {path}: {why}"));
        }
        let sym = |name: &str| {
            let n = CString::new(name).unwrap();
            // SAFETY: live handle, NUL-terminated name.
            let p = unsafe { dlsym(lib, n.as_ptr()) };
            if p.is_null() {
                Err(format!("{path} has no {name}"))
            } else {
                Ok(p)
            }
        };
        // SAFETY: the symbols are cuBLAS's functions of these C signatures
        // (cublas_api.h).
        let create: CublasCreate = unsafe { std::mem::transmute(sym("cublasCreate_v2")?) };
        let gemm_ex: CublasGemmEx = unsafe { std::mem::transmute(sym("cublasGemmEx")?) };
        let mut handle = std::ptr::null_mut();
        // SAFETY: writes the handle.
        let status = unsafe { create(&mut handle) };
        if status != 0 {
            return Err(format!("cublasCreate failed with status {status}"));
        }
        Ok(Cublas { handle, gemm_ex })
    }

    /// C (m×n row-major, `half`) = A (m×k) · B (n×k)ᵀ, f32 compute, on
    /// the legacy default stream.
    fn gemm(&self, half: HalfType, d: Dims, a: u64, b: u64, c: u64) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        const OP_N: c_int = 0;
        const OP_T: c_int = 1;
        // cudaDataType_t: CUDA_R_16BF, CUDA_R_16F.
        let element: c_int = match half {
            HalfType::Bf16 => 14,
            HalfType::F16 => 2,
        };
        const COMPUTE_32F: c_int = 68;
        const GEMM_DEFAULT: c_int = -1;
        // SAFETY: device pointers of buffers of the right sizes; alpha/beta
        // are host f32 (the default pointer mode).
        let status = unsafe {
            (self.gemm_ex)(
                self.handle, OP_T, OP_N, d.n as c_int, d.m as c_int, d.k as c_int,
                (&alpha as *const f32).cast(), b as *const c_void, element, d.k as c_int,
                a as *const c_void, element, d.k as c_int, (&beta as *const f32).cast(),
                c as *mut c_void, element, d.n as c_int, COMPUTE_32F, GEMM_DEFAULT,
            )
        };
        if status != 0 {
            return Err(format!("cublasGemmEx failed with status {status}"));
        }
        Ok(())
    }
}

type BoxError = gemm_bf16::Error;

/// Times `launch` (milliseconds per call, the median of `reps` after warm-up).
fn time_ms(ctx: &Arc<CudaContext>, reps: usize, mut launch: impl FnMut() -> Result<(), BoxError>) -> Result<f64, BoxError> {
    let stream = ctx.default_stream();
    launch()?;
    launch()?;
    stream.synchronize()?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let start = ctx.new_event()?;
        let end = ctx.new_event()?;
        start.record(&stream)?;
        launch()?;
        end.record(&stream)?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(times[times.len() / 2])
}

/// Runs one size with A, B and C of type `half`; returns whether every
/// check passed.
fn run_size(
    ctx: &Arc<CudaContext>,
    module: &cuda_host::KernelModule,
    cublas: Option<&Cublas>,
    half: HalfType,
    d: Dims,
    kernels: &[String],
) -> Result<bool, BoxError> {
    let stream = ctx.default_stream();
    check_dims(d)?;
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a_host = random_half(half, m * k, 0x2545_f491_4f6c_dd1d ^ (m as u64));
    let b_host = random_half(half, n * k, 0x9e37_79b9_7f4a_7c15 ^ (n as u64));
    let a = DeviceBuffer::from_host(&stream, &a_host)?;
    let b = DeviceBuffer::from_host(&stream, &b_host)?;
    let mut c = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let mut ok = true;
    println!("== {half:?} M, N, K = {m}, {n}, {k}");

    // Sampled CPU reference.
    let samples: Vec<(usize, usize)> =
        (0..4096u64).map(|i| ((i.wrapping_mul(2654435761) % m as u64) as usize, (i.wrapping_mul(40503) * 7 % n as u64) as usize)).collect();
    let reference: Vec<(f64, f64)> = samples
        .iter()
        .map(|&(r, col)| {
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = from_half(half, a_host[r * k + kk]) as f64 * from_half(half, b_host[col * k + kk]) as f64;
                sum += p;
                mag += p.abs();
            }
            (sum, mag)
        })
        .collect();
    let check_samples = |name: &str, c_host: &[u32]| -> bool {
        let mut worst = 0.0f64;
        let mut bad = 0;
        for (&(r, col), &(sum, mag)) in samples.iter().zip(&reference) {
            let got = from_half(half, element_bits(c_host, r * n + col)) as f64;
            let err = (got - sum).abs();
            let tol = sum.abs() / 128.0 + mag * 1e-5 + 1e-6;
            worst = worst.max(err / tol);
            if err > tol {
                if bad < 5 {
                    println!("  {name}: C[{r}][{col}] = {got}, expected {sum}");
                }
                bad += 1;
            }
        }
        println!("  {name}: {} sampled entries vs CPU: {bad} wrong (worst error/tolerance {worst:.3})", samples.len());
        bad == 0
    };

    let mut results: Vec<(String, f64, Vec<u32>)> = Vec::new();

    // gemm_simple multiplies bf16 only: asked for another type, it refuses
    // at setup rather than multiply the bits as bf16.
    if half != HalfType::Bf16 {
        match Gemm::with_type(Kernel::Simple, half, module, &stream, &a, &b, d) {
            Ok(_) => {
                println!("  gemm_simple accepted {half:?} inputs: it must refuse them");
                ok = false;
            }
            Err(e) => println!("  gemm_simple with {half:?} refused: {e}"),
        }
    }

    // `ws` is gemm_ws with the shape's default schedule; by default every
    // schedule runs under its own name instead.
    let runs = [
        ("simple", Kernel::Simple, None),
        ("ws", Kernel::Ws, None),
        ("ws-whole", Kernel::Ws, Some(Schedule::WholeTiles)),
        ("ws-sk", Kernel::Ws, Some(Schedule::StreamK)),
        ("ws-sk-only", Kernel::Ws, Some(Schedule::StreamKOnly)),
        ("ws-pairs", Kernel::Ws, Some(Schedule::TilePairs)),
        ("ws-split", Kernel::Ws, Some(Schedule::SplitTail)),
    ];
    for (short, kernel, schedule) in runs {
        let chosen = if kernels.is_empty() { short != "ws" } else { kernels.iter().any(|k| k == short) };
        // gemm_simple multiplies bf16 only.
        if !chosen || (kernel == Kernel::Simple && half != HalfType::Bf16) {
            continue;
        }
        if let (Some(Err(why)), true) = (schedule.map(|s| s.check(d)), kernels.is_empty()) {
            println!("  {short}: not run ({why})");
            continue;
        }
        let mut gemm = Gemm::with_type(kernel, half, module, &stream, &a, &b, d)?;
        if let Some(schedule) = schedule {
            gemm = gemm.with_schedule(&stream, schedule)?;
        }
        let name = match kernel {
            Kernel::Simple => kernel.name().to_string(),
            Kernel::Ws => format!("{} ({:?})", gemm.function_name(), gemm.schedule()),
        };
        let attrs = kernel_function(module, gemm.function_name())?.attributes()?;
        println!("  {name}: {} registers, {} bytes local memory per thread", attrs.num_regs, attrs.local_bytes_per_thread);
        c.memset(&stream, 0)?;
        let reps = if kernel == Kernel::Ws { 10 } else { 5 };
        let ms = time_ms(ctx, reps, || gemm.launch(module, &stream, &mut c))?;
        println!("  {name}: {ms:.3} ms, {:.1} TFLOP/s", flops / ms / 1e9);
        let host = c.to_host_vec(&stream)?;
        ok &= check_samples(&name, &host);
        results.push((name, ms, host));
    }

    match cublas {
        None => println!("  cuBLAS: skipped (set OXIDE_CUBLAS to compare)"),
        Some(cb) => {
            let mut cc = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
            let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), cc.device_ptr());
            let ms = time_ms(ctx, 10, || Ok(cb.gemm(half, d, pa, pb, pc)?))?;
            let tflops = flops / ms / 1e9;
            println!("  cuBLAS: {ms:.3} ms, {tflops:.1} TFLOP/s");
            cc.memset(&stream, 0)?;
            cb.gemm(half, d, pa, pb, cc.device_ptr())?;
            let reference = cc.to_host_vec(&stream)?;
            ok &= check_samples("cuBLAS", &reference);
            for (name, oms, host) in &results {
                let mut bad = 0usize;
                for (i, (&x, &y)) in host.iter().zip(&reference).enumerate() {
                    for part in 0..2 {
                        let (gx, gy) = (from_half(half, (x >> (16 * part)) as u16), from_half(half, (y >> (16 * part)) as u16));
                        // Written so that a NaN counts as a difference.
                        let close = (gx - gy).abs() <= gy.abs().max(1.0) / 64.0;
                        if !close {
                            if bad < 3 {
                                println!("  {name}: entry {} = {gx}, cuBLAS {gy}", 2 * i + part);
                            }
                            bad += 1;
                        }
                    }
                }
                println!(
                    "  {name}: {:.1}% of cuBLAS ({:.1} vs {tflops:.1} TFLOP/s); all {} entries vs cuBLAS: {bad} differ",
                    100.0 * ms / oms,
                    flops / oms / 1e9,
                    m * n
                );
                ok &= bad == 0;
            }
        }
    }
    Ok(ok)
}

/// The bits of the largest finite value, +∞, a quiet NaN, 1.0 and −0.0 in
/// `half`.
fn special_bits(half: HalfType) -> [u16; 5] {
    match half {
        HalfType::Bf16 => [0x7f7f, 0x7f80, 0x7fc0, 0x3f80, 0x8000],
        HalfType::F16 => [0x7bff, 0x7c00, 0x7e00, 0x3c00, 0x8000],
    }
}

/// Whether `got` is what `want` says with IEEE semantics: both NaN, the
/// same infinity, or finite and within `tolerance` (a zero of either sign
/// matches a zero).
fn same_value(got: f64, want: f64, tolerance: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        want.is_nan() && got.is_nan()
    } else if want.is_infinite() || got.is_infinite() {
        got == want
    } else {
        (got - want).abs() <= tolerance
    }
}

/// A product whose inputs hold the values a real model can produce at its
/// edges, under every schedule, in `half`: C's row 0 has A[0][0] = +∞ (so
/// ±∞ by B's sign, and NaN where B[j][0] is 0: B[1][0] is), row 1 a NaN,
/// row 2 the largest finite value throughout (C[2][0], with B's row 0 all
/// ones, overflows to +∞; the rest of row 2 is not checked, since where a
/// sum of huge terms of both signs overflows depends on the order of the
/// sums), row 3 subnormals (against cuBLAS, whose tensor cores treat them
/// as ours do; the CPU's value is printed), row 4 negative zeros (a zero
/// result), row 5 +∞ twice (so ∞ − ∞ = NaN where B's two entries differ
/// in sign: B[3] has 1 and −1). Every entry must match the CPU's f64
/// value rounded to `half` (IEEE: NaN, the same infinity, or finite within
/// the bound of [`run_size`]) and cuBLAS's. Returns whether all did.
fn run_edges(ctx: &Arc<CudaContext>, module: &cuda_host::KernelModule, cublas: Option<&Cublas>, half: HalfType) -> Result<bool, BoxError> {
    let stream = ctx.default_stream();
    let (d, a_host, b_host) = edge_inputs(half);
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let value = |h: u16| from_half(half, h) as f64;
    let entry = |words: &[u32], i: usize| value(element_bits(words, i));
    let reference = edge_reference(half, d, &a_host, &b_host);
    let a = DeviceBuffer::from_host(&stream, &a_host)?;
    let b = DeviceBuffer::from_host(&stream, &b_host)?;
    let mut c = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
    let theirs = match cublas {
        Some(cb) => {
            let cc = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
            cb.gemm(half, d, a.device_ptr(), b.device_ptr(), cc.device_ptr())?;
            Some(cc.to_host_vec(&stream)?)
        }
        None => None,
    };
    println!("== {half:?} edges M, N, K = {m}, {n}, {k} (∞, NaN, the largest value, subnormals, −0)");
    let mut ok = true;
    for schedule in [Schedule::WholeTiles, Schedule::StreamK, Schedule::StreamKOnly, Schedule::TilePairs, Schedule::SplitTail] {
        let gemm = Gemm::with_type(Kernel::Ws, half, module, &stream, &a, &b, d)?.with_schedule(&stream, schedule)?;
        c.memset(&stream, 0)?;
        gemm.launch(module, &stream, &mut c)?;
        let ours = c.to_host_vec(&stream)?;
        let wrong = edge_wrong(d, &reference, |i| entry(&ours, i), |r, col, got, want| {
            println!("  {schedule:?}: C[{r}][{col}] = {got}, the CPU says {want}")
        });
        let mut differ = 0usize;
        if let Some(theirs) = &theirs {
            for (r, col) in (0..m).flat_map(|r| (0..n).map(move |col| (r, col))).filter(|&(r, col)| edge_checked(r, col)) {
                let (got, cublas) = (entry(&ours, r * n + col), entry(theirs, r * n + col));
                // Row 3's sums are tiny: bf16's reach f32's subnormal range,
                // where a flush to zero on either side is not an error, and
                // f16's round to its subnormals, where another order of the f32
                // sums may move one by a unit of the last place. So relative,
                // plus two such units and four times f32's least normal value.
                let tolerance = if r == 3 {
                    cublas.abs() / 64.0 + 2.0 * value(1) + 4.0 * f32::MIN_POSITIVE as f64
                } else {
                    cublas.abs().max(1.0) / 64.0
                };
                if !same_value(got, cublas, tolerance) {
                    if differ < 5 {
                        println!("  {schedule:?}: C[{r}][{col}] = {got}, cuBLAS {cublas}");
                    }
                    differ += 1;
                }
            }
        }
        let specials = [(0, 0), (0, 1), (1, 0), (2, 0), (4, 0), (5, 0), (5, 3)];
        let shown: Vec<String> = specials.iter().map(|&(r, col)| format!("C[{r}][{col}] = {}", entry(&ours, r * n + col))).collect();
        println!(
            "  {} ({schedule:?}): {wrong} wrong against the CPU, {} against cuBLAS; {}; subnormal row C[3][0] = {:e} (CPU {:e})",
            gemm.function_name(),
            if theirs.is_some() { differ.to_string() } else { "not compared".to_string() },
            shown.join(", "),
            entry(&ours, 3 * n),
            reference[3 * n].0,
        );
        ok &= wrong == 0 && differ == 0;
    }
    Ok(ok)
}

/// The operands of [`run_edges`] (its docs say which rows hold what).
fn edge_inputs(half: HalfType) -> (Dims, Vec<u16>, Vec<u16>) {
    let d = Dims { m: 256, n: 512, k: 256 };
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let [max, inf, nan, one, neg_zero] = special_bits(half);
    let mut a = random_half(half, m * k, 0x6a09_e667_f3bc_c908);
    let mut b = random_half(half, n * k, 0xbb67_ae85_84ca_a73b);
    a[0] = inf;
    a[k + 5] = nan;
    a[2 * k..3 * k].fill(max);
    for (i, x) in a[3 * k..4 * k].iter_mut().enumerate() {
        *x = 1 + (i as u16 % 64); // subnormals: the smallest exponent, mantissa 1…64
    }
    a[4 * k..5 * k].fill(neg_zero);
    a[5 * k] = inf;
    a[5 * k + 1] = inf;
    b[..k].fill(one);
    b[k] = 0;
    b[3 * k] = one;
    b[3 * k + 1] = one | 0x8000;
    (d, a, b)
}

/// [`edge_inputs`]' product by the CPU, row-major: each entry's f64 sum
/// rounded to C's type as the kernels round (an overflow becomes ∞), and
/// Σ|a·b|.
fn edge_reference(half: HalfType, d: Dims, a: &[u16], b: &[u16]) -> Vec<(f64, f64)> {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a: Vec<f64> = a.iter().map(|&h| from_half(half, h) as f64).collect();
    let b: Vec<f64> = b.iter().map(|&h| from_half(half, h) as f64).collect();
    let mut c = Vec::with_capacity(m * n);
    for row in a.chunks(k) {
        for column in b.chunks(k) {
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for (x, y) in row.iter().zip(column) {
                sum += x * y;
                mag += (x * y).abs();
            }
            c.push((from_half(half, to_half(half, sum as f32)) as f64, mag));
        }
    }
    c
}

/// Whether [`run_edges`] checks entry (r, col): all but row 2's beyond
/// column 0, whose sums of huge terms of both signs overflow where the
/// order of the sums says.
fn edge_checked(r: usize, col: usize) -> bool {
    r != 2 || col == 0
}

/// How many checked entries of an edge product (`got(i)`: entry i of C,
/// row-major) differ from the CPU's IEEE result `reference`
/// ([`edge_reference`]; [`same_value`], the bound of [`run_size`]); the
/// subnormal row 3 is compared with cuBLAS instead. `report` hears of the
/// first five.
fn edge_wrong(d: Dims, reference: &[(f64, f64)], got: impl Fn(usize) -> f64, mut report: impl FnMut(usize, usize, f64, f64)) -> usize {
    let (m, n) = (d.m as usize, d.n as usize);
    let mut wrong = 0;
    for r in (0..m).filter(|&r| r != 3) {
        for col in (0..n).filter(|&col| edge_checked(r, col)) {
            let (want, mag) = reference[r * n + col];
            let value = got(r * n + col);
            if !same_value(value, want, want.abs() / 128.0 + mag * 1e-5 + 1e-6) {
                if wrong < 5 {
                    report(r, col, value, want);
                }
                wrong += 1;
            }
        }
    }
    wrong
}

/// A shape argument: `S` (S×S×S) or `MxNxK`.
fn parse_shape(arg: &str) -> Option<Dims> {
    let parts: Vec<u32> = arg.split('x').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    match parts[..] {
        [s] => Some(Dims { m: s, n: s, k: s }),
        [m, n, k] => Some(Dims { m, n, k }),
        _ => None,
    }
}

/// Deterministic pseudo-random e4m3 values: the bf16 generator's values in
/// [-1, 1) times 4, rounded to e4m3.
fn random_e4m3(len: usize, seed: u64) -> Vec<f8e4m3> {
    random_bf16(len, seed).into_iter().map(|h| f8e4m3::from_f32(4.0 * from_bf16(h))).collect()
}

/// Runs `gemm_fp8_ws` and `gemm_fp8_ws_f32` on one size under every
/// schedule: 4096 sampled entries of each against an `f64` CPU dot product
/// of the same e4m3 inputs times the scales, within `ρ·|ref| +
/// 2⁻¹¹·Σ|a·b|·scales` (ρ = 2⁻⁷ for bf16 C, whose rounding is at most
/// 2⁻⁹·|ref|, and 2⁻²⁰ for f32; the FP8 tensor cores accumulate with fewer
/// bits than f32, which the second term bounds: unrounded f32 results
/// were measured up to 2.4 times 2⁻¹³·Σ|a·b| off; a dropped or repeated
/// K step of 128 errs by several times the bound and fails), and every
/// entry of the bf16 C against the f32 C rounded to bf16 (the same sums
/// under the same schedule, so equal bits); returns whether all passed.
fn run_fp8(ctx: &Arc<CudaContext>, module: &cuda_host::KernelModule, d: Dims) -> Result<bool, BoxError> {
    let stream = ctx.default_stream();
    check_fp8_dims(d)?;
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a_host = random_e4m3(m * k, 0x5851_f42d_4c95_7f2d ^ (m as u64));
    let b_host = random_e4m3(n * k, 0x1405_7b7e_f767_814f ^ (n as u64));
    let (scale_a, scale_b) = (0.5f32, 0.125f32);
    let a = DeviceBuffer::from_host(&stream, &a_host)?;
    let b = DeviceBuffer::from_host(&stream, &b_host)?;
    let sa = DeviceBuffer::from_host(&stream, &[scale_a])?;
    let sb = DeviceBuffer::from_host(&stream, &[scale_b])?;
    let mut c = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
    let mut c32 = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
    println!("== FP8 e4m3 M = {m}, N = {n}, K = {k}");
    for name in ["gemm_fp8_ws", "gemm_fp8_ws_f32"] {
        let attrs = kernel_function(module, name)?.attributes()?;
        println!("  {name}: {} registers, {} bytes local memory per thread", attrs.num_regs, attrs.local_bytes_per_thread);
    }
    let factor = (scale_a * scale_b) as f64;
    let mut ok = true;
    for schedule in [Schedule::WholeTiles, Schedule::StreamK, Schedule::StreamKOnly, Schedule::TilePairs, Schedule::SplitTail] {
        if let Err(why) = schedule.check(d) {
            println!("  gemm_fp8_ws ({schedule:?}): not run ({why})");
            continue;
        }
        let gemm = GemmFp8::new(module, &stream, &a, &b, Fp8Scales { a: &sa, b: &sb }, d)?.with_schedule(&stream, schedule)?;
        c.memset(&stream, 0)?;
        let ms = time_ms(ctx, 10, || gemm.launch(module, &stream, &mut c))?;
        println!("  gemm_fp8_ws ({schedule:?}): {ms:.3} ms, {:.1} TFLOP/s", gemm.flops() / ms / 1e9);
        let host = c.to_host_vec(&stream)?;
        let bf16_entry = |i: usize| from_bf16(element_bits(&host, i)) as f64;
        ok &= check_fp8_samples(&format!("gemm_fp8_ws ({schedule:?})"), bf16_entry, 1.0 / 128.0, d, &a_host, &b_host, factor);
        c32.memset(&stream, 0)?;
        let ms = time_ms(ctx, 10, || gemm.launch_f32(module, &stream, &mut c32))?;
        println!("  gemm_fp8_ws_f32 ({schedule:?}): {ms:.3} ms, {:.1} TFLOP/s", gemm.flops() / ms / 1e9);
        let wide = c32.to_host_vec(&stream)?;
        let f32_entry = |i: usize| wide[i] as f64;
        ok &= check_fp8_samples(&format!("gemm_fp8_ws_f32 ({schedule:?})"), f32_entry, 1.0 / 1048576.0, d, &a_host, &b_host, factor);
        let differ = fp8_rounding_differs(&host, &wide);
        println!("  gemm_fp8_ws ({schedule:?}) vs gemm_fp8_ws_f32 rounded to bf16: {differ} of {} entries differ", m * n);
        ok &= differ == 0;
    }
    Ok(ok)
}

/// Entries of an FP8 product's bf16 C (`pairs`, u32 words) whose bits are
/// not those of the f32 C (`wide`) of the same product rounded to bf16.
fn fp8_rounding_differs(pairs: &[u32], wide: &[f32]) -> usize {
    wide.iter().enumerate().filter(|&(i, &x)| element_bits(pairs, i) != to_bf16(x)).count()
}

/// Checks 4096 sampled entries of an FP8 product's C (`entry(i)`, row-major)
/// against the CPU within `relative·|ref| + 2⁻¹¹·Σ|a·b|·factor` (the bound
/// of [`run_fp8`]); returns whether all were within it.
fn check_fp8_samples(
    name: &str,
    entry: impl Fn(usize) -> f64,
    relative: f64,
    d: Dims,
    a_host: &[f8e4m3],
    b_host: &[f8e4m3],
    factor: f64,
) -> bool {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let (mut bad, mut worst) = (0usize, 0.0f64);
    for i in 0..4096u64 {
        let (r, col) = ((i.wrapping_mul(2654435761) % m as u64) as usize, (i.wrapping_mul(40503) * 7 % n as u64) as usize);
        let (mut sum, mut mag) = (0.0f64, 0.0f64);
        for kk in 0..k {
            let p = a_host[r * k + kk].to_f32() as f64 * b_host[col * k + kk].to_f32() as f64;
            sum += p;
            mag += p.abs();
        }
        let (sum, mag) = (sum * factor, mag * factor);
        let got = entry(r * n + col);
        let tol = sum.abs() * relative + mag / 2048.0 + 1e-6;
        let err = (got - sum).abs();
        worst = worst.max(err / tol);
        // Written so that a NaN counts as wrong.
        if !(err <= tol) {
            if bad < 5 {
                println!("  {name}: C[{r}][{col}] = {got}, expected {sum}");
            }
            bad += 1;
        }
    }
    println!("  {name}: 4096 sampled entries vs CPU: {bad} wrong (worst error/tolerance {worst:.3})");
    bad == 0
}

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    match ctx.compute_capability() {
        Ok((9, _)) => {}
        other => {
            eprintln!("gemm_bf16 needs a Hopper GPU (sm_90a), found {other:?}");
            return ExitCode::from(2);
        }
    }
    let module = match load_kernel_module(&ctx, "gemm_bf16") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let cublas = match Cublas::load() {
        Ok(c) => Some(c),
        Err(e) => {
            println!("cuBLAS not loaded: {e}");
            None
        }
    };
    // Arguments: shapes, `S` or `MxNxK` (default 4096, 8192 and
    // 8192x1024x8192; 1024 and 512x768x2048 in debug builds, which the GPU
    // suite and compute-sanitizer run), and kernels (simple, ws with the
    // shape's default schedule, ws-whole, ws-sk, ws-sk-only, ws-pairs and ws-split
    // with each Schedule, fp8 with each; default all but ws), f16 (the
    // chosen ws kernels on f16 products as well) and edges (a product of
    // infinities, NaNs, the largest value, subnormals and −0 in bf16 and
    // f16 under every schedule, `run_edges`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shapes: Vec<Dims> = args.iter().filter_map(|s| parse_shape(s)).collect();
    let kernels: Vec<String> = args.iter().filter(|s| parse_shape(s).is_none()).cloned().collect();
    let square = |s: u32| Dims { m: s, n: s, k: s };
    let shapes = match (shapes.is_empty(), cfg!(debug_assertions)) {
        (false, _) => shapes,
        (true, false) => vec![square(4096), square(8192), Dims { m: 8192, n: 1024, k: 8192 }],
        (true, true) => vec![square(1024), Dims { m: 512, n: 768, k: 2048 }],
    };
    let mut all_ok = true;
    let fp8 = kernels.is_empty() || kernels.iter().any(|k| k == "fp8");
    let f16 = kernels.is_empty() || kernels.iter().any(|k| k == "f16");
    let bf16: Vec<String> = kernels.iter().filter(|k| !["fp8", "f16", "edges"].contains(&k.as_str())).cloned().collect();
    for d in shapes {
        let halves = [(HalfType::Bf16, kernels.is_empty() || !bf16.is_empty()), (HalfType::F16, f16)];
        for (half, chosen) in halves {
            if !chosen {
                continue;
            }
            match run_size(&ctx, &module, cublas.as_ref(), half, d, &bf16) {
                Ok(ok) => all_ok &= ok,
                Err(e) => {
                    println!("  error: {e}");
                    all_ok = false;
                }
            }
        }
        if fp8 {
            match run_fp8(&ctx, &module, d) {
                Ok(ok) => all_ok &= ok,
                Err(e) => {
                    println!("  FP8 error: {e}");
                    all_ok = false;
                }
            }
        }
    }
    // The edge values in both types, by default or when asked for.
    let edges = kernels.is_empty() || kernels.iter().any(|k| k == "edges");
    for half in [HalfType::Bf16, HalfType::F16].into_iter().filter(|_| edges) {
        match run_edges(&ctx, &module, cublas.as_ref(), half) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                println!("  edges error: {e}");
                all_ok = false;
            }
        }
    }
    if all_ok {
        println!("✓ SUCCESS: gemm_bf16 matches the CPU and cuBLAS");
        ExitCode::SUCCESS
    } else {
        println!("✗ FAILED");
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_bits_are_the_values_their_names_say() {
        for half in [HalfType::Bf16, HalfType::F16] {
            let [max, inf, nan, one, neg_zero] = special_bits(half).map(|h| from_half(half, h));
            let largest = if half == HalfType::Bf16 { 3.3895314e38 } else { 65504.0 };
            assert_eq!(max, largest, "{half:?}");
            assert_eq!(inf, f32::INFINITY, "{half:?}");
            assert!(nan.is_nan(), "{half:?}");
            assert_eq!(one, 1.0, "{half:?}");
            assert!(neg_zero == 0.0 && neg_zero.is_sign_negative(), "{half:?}");
            // The subnormal row's bits 1…64 lie below the least normal
            // value (2⁻¹²⁶ for bf16, 2⁻¹⁴ for f16).
            let least_normal = if half == HalfType::Bf16 { 2f32.powi(-126) } else { 2f32.powi(-14) };
            assert!(from_half(half, 1) > 0.0 && from_half(half, 64) < least_normal, "{half:?}");
            // An overflowing sum rounds to infinity, as the kernels' `cvt`.
            assert_eq!(from_half(half, to_half(half, 256.0 * largest)), f32::INFINITY, "{half:?}");
        }
    }

    /// The edge product as a GPU computes it: f32 sums of 16 products (a
    /// wgmma k slice), added in f32 in order, rounded to `half`.
    fn f32_product(half: HalfType, d: Dims, a: &[u16], b: &[u16]) -> Vec<f64> {
        let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
        let mut c = Vec::with_capacity(m * n);
        for r in 0..m {
            for col in 0..n {
                let mut sum = 0f32;
                for slice in (0..k).step_by(16) {
                    let part: f32 = (slice..slice + 16).map(|kk| from_half(half, a[r * k + kk]) * from_half(half, b[col * k + kk])).sum();
                    sum += part;
                }
                c.push(from_half(half, to_half(half, sum)) as f64);
            }
        }
        c
    }

    #[test]
    fn the_edge_check_passes_an_f32_accumulation_and_fails_a_wrong_special_value() {
        for half in [HalfType::Bf16, HalfType::F16] {
            let (d, a, b) = edge_inputs(half);
            let n = d.n as usize;
            let c = f32_product(half, d, &a, &b);
            let reference = edge_reference(half, d, &a, &b);
            let wrong = |c: &[f64]| edge_wrong(d, &reference, |i| c[i], |_, _, _, _| {});
            assert_eq!(wrong(&c), 0, "{half:?}");
            // The entries the docs promise, as the CPU computes them.
            assert_eq!(c[0], f64::INFINITY, "{half:?}: +inf times B[0][0] = 1");
            assert!(c[1].is_nan(), "{half:?}: inf times 0");
            assert!(c[n].is_nan(), "{half:?}: a NaN in A's row 1");
            assert_eq!(c[2 * n], f64::INFINITY, "{half:?}: the largest value 256 times");
            assert_eq!(c[4 * n], 0.0, "{half:?}: negative zeros");
            assert!(c[5 * n + 3].is_nan(), "{half:?}: inf - inf");
            // Each kind of error is caught.
            for (i, bad) in [(0, f64::MAX), (1, 0.0), (2 * n, f64::NEG_INFINITY), (5 * n + 3, f64::INFINITY), (7 * n + 9, c[7 * n + 9] * 1.1 + 0.1)] {
                let mut broken = c.clone();
                broken[i] = bad;
                assert_eq!(wrong(&broken), 1, "{half:?}: entry {i} = {bad}");
            }
        }
    }

    #[test]
    fn same_value_follows_ieee_classes() {
        assert!(same_value(f64::NAN, f64::NAN, 0.0));
        assert!(!same_value(f64::INFINITY, f64::NAN, 1.0));
        assert!(!same_value(f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY));
        assert!(same_value(f64::INFINITY, f64::INFINITY, 0.0));
        assert!(!same_value(1e30, f64::INFINITY, f64::INFINITY));
        assert!(same_value(-0.0, 0.0, 0.0));
        assert!(same_value(1.01, 1.0, 0.02));
        assert!(!same_value(1.03, 1.0, 0.02));
    }

    #[test]
    fn fp8_rounding_check_counts_each_entry_rounded_otherwise() {
        // Ties round to even: 1 + 2⁻⁸ lies halfway between bf16's 1 and
        // 1 + 2⁻⁷; 1 + 3·2⁻⁸ halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶.
        let wide = [1.0f32, 1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0, -2.5, 0.0, 3.0e38];
        let bits = [0x3f80u16, 0x3f80, 0x3f82, 0xc020, 0x0000, to_bf16(3.0e38)];
        let pairs: Vec<u32> = bits.chunks(2).map(|p| p[0] as u32 | (p[1] as u32) << 16).collect();
        assert_eq!(fp8_rounding_differs(&pairs, &wide), 0);
        // Truncating instead of rounding, a sign lost, an entry one ulp off.
        for (i, wrong) in [(2, 0x3f81u16), (3, 0x4020), (5, to_bf16(3.0e38) + 1)] {
            let mut broken = pairs.clone();
            broken[i / 2] = (broken[i / 2] & !(0xffff << (16 * (i % 2)))) | (wrong as u32) << (16 * (i % 2));
            assert_eq!(fp8_rounding_differs(&broken, &wide), 1, "entry {i} as {wrong:#06x}");
        }
    }
}
