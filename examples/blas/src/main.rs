//! cuBLAS from Rust on oxide's buffers and streams (the `cuda-blas` crate):
//! GEMMs of every element type (f32, f64, f16, bf16, TF32), layout and
//! transpose, odd sizes and padded leading dimensions, a strided and a
//! pointer-array batch, cuBLASLt matmuls with fused bias/ReLU/GELU
//! epilogues, and FP8 matmuls with per-tensor scales (sm_89 and newer).
//! Every result is compared with a plain f64 computation on the CPU.
//!
//! The inputs of the first GEMM are written by an oxide kernel on another
//! stream: the GEMM reads them only after the kernel, through cuda-core's
//! stream-ordered tracking of the buffers.
//!
//! On a GPU the calls go to cuBLAS; on the CPU emulator (`cargo oxide run
//! blas` without a GPU) the same calls run cuda-blas's CPU reference.

use std::process::ExitCode;
use std::sync::Arc;

use cuda_async::DeviceOperation;
use cuda_blas::{
    ops, Blas, BlasError, BlasLt, Compute, Epilogue, Fp8Element, Fp8Scales, GemmConfig, GemmElement, Layout, StridedBatch, Transpose,
};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::half::{bf16, f16, f8e4m3, f8e5m2};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

/// The value the fill kernel (and the CPU) gives element `i`.
fn pattern(i: u32, seed: u32) -> f32 {
    (i.wrapping_mul(7919).wrapping_add(seed) % 97) as f32 / 48.5 - 1.0
}

/// `out[i] = pattern(i, seed)`.
#[kernel]
pub fn fill(mut out: DisjointSlice<f32>, seed: u32) {
    let idx = thread::index_1d();
    let i = idx.get() as u32;
    if let Some(x) = out.get_mut(idx) {
        *x = pattern(i, seed);
    }
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// An element type, with the tolerance of its GEMM (relative to Σ|a·b|).
trait Elem: GemmElement + DeviceRepr {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    fn scalar(x: f64) -> Self::Scalar;
    const TOL: f64;
}
macro_rules! elem {
    ($t:ty, $of:expr, $to:expr, $scalar:ty, $tol:expr) => {
        impl Elem for $t {
            fn of(x: f64) -> Self {
                $of(x)
            }
            fn f64(self) -> f64 {
                $to(self)
            }
            fn scalar(x: f64) -> $scalar {
                x as $scalar
            }
            const TOL: f64 = $tol;
        }
    };
}
elem!(f32, |x| x as f32, |x: f32| x as f64, f32, 3e-5);
elem!(f64, |x| x, |x| x, f64, 1e-12);
elem!(f16, f16::from_f64, f16::to_f64, f32, 2e-3);
elem!(bf16, bf16::from_f64, bf16::to_f64, f32, 1e-2);

/// Index of element (i, j) of a stored matrix.
fn at(layout: Layout, ld: usize, i: usize, j: usize) -> usize {
    match layout {
        Layout::RowMajor => i * ld + j,
        Layout::ColMajor => i + j * ld,
    }
}

/// The stored size and leading dimension of an r×c matrix with `pad`.
fn storage(layout: Layout, r: usize, c: usize, pad: usize) -> (usize, usize) {
    let (inner, outer) = if layout == Layout::RowMajor { (c, r) } else { (r, c) };
    let ld = inner.max(1) + pad;
    (ld * outer, ld)
}

/// Compares C with alpha·op(A)·op(B) + beta·C0 (plus `post(i, j, x)`)
/// computed in f64; returns the largest error relative to its tolerance.
#[allow(clippy::too_many_arguments)]
fn compare<T: Elem>(
    cfg: &GemmConfig<T::Scalar>,
    (alpha, beta): (f64, f64),
    a: &[T],
    b: &[T],
    c0: &[T],
    got: &[T],
    tol: f64,
    post: &dyn Fn(usize, usize, f64) -> f64,
) -> Result<f64, String> {
    let (lda, ldb, ldc) = (cfg.lda.unwrap(), cfg.ldb.unwrap(), cfg.ldc.unwrap());
    let l = cfg.layout;
    let mut worst: f64 = 0.0;
    for i in 0..cfg.m {
        for j in 0..cfg.n {
            let (mut sum, mut mag) = (0.0, 0.0);
            for p in 0..cfg.k {
                let x = if cfg.trans_a == Transpose::No { a[at(l, lda, i, p)] } else { a[at(l, lda, p, i)] };
                let y = if cfg.trans_b == Transpose::No { b[at(l, ldb, p, j)] } else { b[at(l, ldb, j, p)] };
                sum += x.f64() * y.f64();
                mag += (x.f64() * y.f64()).abs();
            }
            let idx = at(l, ldc, i, j);
            let want = post(i, j, alpha * sum + beta * c0[idx].f64());
            let allowed = tol * (alpha.abs() * mag + beta.abs() * c0[idx].f64().abs() + 1.0);
            let err = (got[idx].f64() - want).abs();
            if err > allowed || err.is_nan() {
                return Err(format!("C({i},{j}) = {}, the CPU gives {want} (tolerance {allowed:.2e})", got[idx].f64()));
            }
            worst = worst.max(err / allowed);
        }
    }
    Ok(worst)
}

/// One GEMM of `T`: random A, B, C, run on the device, compared with the CPU.
#[allow(clippy::too_many_arguments)]
fn gemm_case<T: Elem>(
    stream: &Arc<CudaStream>,
    blas: &Blas,
    layout: Layout,
    (ta, tb): (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
    pad: usize,
    compute: Compute,
    tol: f64,
) -> Result<String, Box<dyn std::error::Error>> {
    let (ar, ac) = if ta == Transpose::No { (m, k) } else { (k, m) };
    let (br, bc) = if tb == Transpose::No { (k, n) } else { (n, k) };
    let (na, lda) = storage(layout, ar, ac, pad);
    let (nb, ldb) = storage(layout, br, bc, pad);
    let (nc, ldc) = storage(layout, m, n, pad);
    let a: Vec<T> = values(na, (m * 31 + n) as u64).into_iter().map(T::of).collect();
    let b: Vec<T> = values(nb, (n * 17 + k) as u64).into_iter().map(T::of).collect();
    let c0: Vec<T> = values(nc, (k * 13 + m) as u64).into_iter().map(T::of).collect();
    let (alpha, beta) = (1.25, -0.5);
    let mut cfg = GemmConfig::<T::Scalar>::new(layout, m, n, k)
        .scale(T::scalar(alpha), T::scalar(beta))
        .leading_dims(lda, ldb, ldc)
        .with_compute(compute);
    (cfg.trans_a, cfg.trans_b) = (ta, tb);
    let (da, db) = (DeviceBuffer::from_host(stream, &a)?, DeviceBuffer::from_host(stream, &b)?);
    let mut dc = DeviceBuffer::from_host(stream, &c0)?;
    blas.gemm(&cfg, da.as_slice(), db.as_slice(), dc.as_slice_mut())?;
    let got = dc.to_host_vec(stream)?;
    let worst = compare(&cfg, (alpha, beta), &a, &b, &c0, &got, tol, &|_, _, x| x)?;
    let t = |t| if t == Transpose::No { "N" } else { "T" };
    let arith = if compute == Compute::Tf32 { "tf32" } else { T::NAME };
    Ok(format!("{arith:>4} {layout:?} {}{} {m}x{n}x{k}{}: worst error {worst:.3} of tolerance",
               t(ta), t(tb), if pad > 0 { format!(" (ld +{pad})") } else { String::new() }))
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let blas = Blas::new(&stream)?;
    match blas.library_path() {
        Some(p) => println!("cuBLAS {} ({})", blas.version()?.unwrap_or(0), p.display()),
        None => println!("CPU emulator: cuda-blas runs its CPU reference"),
    }
    let mut passed = 0;
    let mut ok = |line: String| {
        println!("  ok  {line}");
        passed += 1;
    };

    // 1. Inputs written by a kernel on another stream, read by the GEMM.
    let (m, n, k) = (129, 65, 257);
    let producer = ctx.new_stream()?;
    let module = load_kernel_module(&ctx, "blas")?;
    let mut da = DeviceBuffer::<f32>::zeroed(&producer, m * k)?;
    let mut db = DeviceBuffer::<f32>::zeroed(&producer, k * n)?;
    cuda_launch! { kernel: fill, stream: producer, module: module,
                   config: LaunchConfig::for_num_elems((m * k) as u32), args: [slice_mut(da), 1u32] }?;
    cuda_launch! { kernel: fill, stream: producer, module: module,
                   config: LaunchConfig::for_num_elems((k * n) as u32), args: [slice_mut(db), 2u32] }?;
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
    let cfg = GemmConfig::<f32>::row_major(m, n, k).leading_dims(k, n, n);
    blas.gemm(&cfg, da.as_slice(), db.as_slice(), dc.as_slice_mut())?;
    let a: Vec<f32> = (0..(m * k) as u32).map(|i| pattern(i, 1)).collect();
    let b: Vec<f32> = (0..(k * n) as u32).map(|i| pattern(i, 2)).collect();
    let worst = compare(&cfg, (1.0, 0.0), &a, &b, &vec![0.0; m * n], &dc.to_host_vec(&stream)?, f32::TOL, &|_, _, x| x)?;
    ok(format!(" f32 RowMajor NN {m}x{n}x{k}, inputs from a kernel on another stream: worst error {worst:.3} of tolerance"));

    // 2. Every layout and transpose, odd sizes, padded leading dimensions.
    let n_t = (Transpose::No, Transpose::No);
    for layout in [Layout::RowMajor, Layout::ColMajor] {
        for ops in [n_t, (Transpose::No, Transpose::Yes), (Transpose::Yes, Transpose::No), (Transpose::Yes, Transpose::Yes)] {
            ok(gemm_case::<f32>(&stream, &blas, layout, ops, (33, 17, 45), 0, Compute::Default, f32::TOL)?);
            ok(gemm_case::<f64>(&stream, &blas, layout, ops, (7, 19, 5), 3, Compute::Default, f64::TOL)?);
            ok(gemm_case::<f16>(&stream, &blas, layout, ops, (33, 47, 61), 1, Compute::Default, f16::TOL)?);
            ok(gemm_case::<bf16>(&stream, &blas, layout, ops, (1, 63, 31), 0, Compute::Default, bf16::TOL)?);
        }
    }
    // TF32: inputs rounded to 10 mantissa bits (up to about 2e-3 per product).
    ok(gemm_case::<f32>(&stream, &blas, Layout::RowMajor, n_t, (256, 192, 128), 0, Compute::Tf32, 4e-3)?);

    // 3. A strided batch: 8 GEMMs 16x24x32 stored back to back, B shared.
    let (m, n, k, count) = (16, 24, 32, 8);
    let cfg = GemmConfig::<f32>::row_major(m, n, k).transpose_b().leading_dims(k, k, n);
    let batch = StridedBatch { stride_b: 0, ..StridedBatch::packed(&cfg, count)? };
    let a: Vec<f32> = values(m * k * count, 3).into_iter().map(|x| x as f32).collect();
    let b: Vec<f32> = values(n * k, 4).into_iter().map(|x| x as f32).collect();
    let (da, db) = (DeviceBuffer::from_host(&stream, &a)?, DeviceBuffer::from_host(&stream, &b)?);
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n * count)?;
    blas.gemm_strided_batched(&cfg, &batch, da.as_slice(), db.as_slice(), dc.as_slice_mut())?;
    let got = dc.to_host_vec(&stream)?;
    let mut worst: f64 = 0.0;
    for e in 0..count {
        let w = compare(&cfg, (1.0, 0.0), &a[e * m * k..], &b, &vec![0.0; m * n], &got[e * m * n..], f32::TOL, &|_, _, x| x)
            .map_err(|msg| format!("batch entry {e}: {msg}"))?;
        worst = worst.max(w);
    }
    ok(format!(" f32 strided batch of {count}, {m}x{n}x{k}, B shared: worst error {worst:.3} of tolerance"));

    // 3b. A pointer-array batch: three f64 GEMMs on separate buffers.
    let (m, n, k) = (9, 7, 11);
    let cfg = GemmConfig::<f64>::col_major(m, n, k).transpose_b().scale(0.5, 2.0).leading_dims(m, n, m);
    let host: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> =
        (0..3).map(|e| (values(m * k, 10 + e), values(n * k, 20 + e), values(m * n, 30 + e))).collect();
    let upload = |pick: fn(&(Vec<f64>, Vec<f64>, Vec<f64>)) -> &Vec<f64>| {
        host.iter().map(|h| DeviceBuffer::from_host(&stream, pick(h))).collect::<Result<Vec<_>, _>>()
    };
    let (da, db, mut c_bufs) = (upload(|h| &h.0)?, upload(|h| &h.1)?, upload(|h| &h.2)?);
    let a_list: Vec<_> = da.iter().map(|x| x.as_slice()).collect();
    let b_list: Vec<_> = db.iter().map(|x| x.as_slice()).collect();
    let mut c_list: Vec<_> = c_bufs.iter_mut().map(|c| c.as_slice_mut()).collect();
    blas.gemm_batched(&cfg, &a_list, &b_list, &mut c_list)?;
    drop(c_list);
    let mut worst: f64 = 0.0;
    for (e, ((a, b, c0), c)) in host.iter().zip(&c_bufs).enumerate() {
        let w = compare(&cfg, (0.5, 2.0), a, b, c0, &c.to_host_vec(&stream)?, f64::TOL, &|_, _, x| x)
            .map_err(|msg| format!("pointer-array entry {e}: {msg}"))?;
        worst = worst.max(w);
    }
    ok(format!(" f64 pointer-array batch of 3, ColMajor NT {m}x{n}x{k}: worst error {worst:.3} of tolerance"));

    // 4. cuBLASLt with epilogues (a bias per output column of row-major C).
    let lt = BlasLt::new(&stream)?;
    let (m, n, k) = (37, 29, 53);
    let gelu = |x: f64| 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh());
    let a: Vec<f16> = values(m * k, 5).into_iter().map(f16::from_f64).collect();
    let b: Vec<f16> = values(k * n, 6).into_iter().map(f16::from_f64).collect();
    let bias: Vec<f16> = values(n, 7).into_iter().map(f16::from_f64).collect();
    let (da, db, dbias) =
        (DeviceBuffer::from_host(&stream, &a)?, DeviceBuffer::from_host(&stream, &b)?, DeviceBuffer::from_host(&stream, &bias)?);
    let cfg = GemmConfig::<f32>::row_major(m, n, k).leading_dims(k, n, n);
    let zero = vec![f16::from_f32(0.0); m * n];
    for (name, epilogue, act) in [
        ("bias+gelu", Epilogue::BiasGelu(dbias.as_slice()), &gelu as &dyn Fn(f64) -> f64),
        ("bias+relu", Epilogue::BiasRelu(dbias.as_slice()), &|x: f64| x.max(0.0)),
        ("gelu", Epilogue::Gelu, &gelu),
    ] {
        let mut dc = DeviceBuffer::<f16>::zeroed(&stream, m * n)?;
        lt.matmul(&cfg, epilogue, da.as_slice(), db.as_slice(), dc.as_slice_mut())?;
        let with_bias = !matches!(epilogue, Epilogue::Gelu);
        let post = |_: usize, j: usize, x: f64| act(x + if with_bias { bias[j].to_f64() } else { 0.0 });
        let worst = compare(&cfg, (1.0, 0.0), &a, &b, &zero, &dc.to_host_vec(&stream)?, 4e-3, &post)
            .map_err(|msg| format!("cuBLASLt {name}: {msg}"))?;
        ok(format!(" f16 cuBLASLt {name} {m}x{n}x{k}: worst error {worst:.3} of tolerance"));
    }

    // 4b. FP8: a linear layer y = act(sx·sw·x·wᵀ + bias) with E4M3
    // activations x (m×k, row-major) and weights w (n×k: the "TN" layout
    // cuBLASLt's FP8 kernels take), per-tensor scales as device scalars.
    // The CPU side decodes the FP8 inputs exactly and sums in f64.
    let (major, minor) = ctx.compute_capability()?;
    if (major, minor) < (8, 9) {
        println!("  --  FP8 matmuls skipped: this GPU is sm_{major}{minor}, FP8 needs sm_89 or newer");
    } else {
        let (m, n, k) = (64, 96, 128);
        // Random codes of magnitude below 4 (subnormals included), built from
        // bits: `f8e4m3::from_f32` is the GPU's conversion (sm_89), which
        // this program's kernels (built for older GPUs too) cannot contain.
        let codes = |len: usize, seed: u64, below: f64| -> Vec<u8> {
            values(len, seed).into_iter().map(|v| ((v.abs() * below) as u8) | if v < 0.0 { 0x80 } else { 0 }).collect()
        };
        let x: Vec<f8e4m3> = codes(m * k, 8, 72.0).into_iter().map(f8e4m3::from_bits).collect(); // 0x48: 4.0
        let w: Vec<f8e4m3> = codes(n * k, 9, 72.0).into_iter().map(f8e4m3::from_bits).collect();
        let w2: Vec<f8e5m2> = codes(n * k, 10, 68.0).into_iter().map(f8e5m2::from_bits).collect(); // 0x44: 4.0
        let bias: Vec<bf16> = values(n, 11).into_iter().map(|v| bf16::from_f64(v * 2.0)).collect();
        let (sx, sw) = (0.25f32, 1.5f32);
        let (dx, dw, dw2, dbias) = (
            DeviceBuffer::from_host(&stream, &x)?,
            DeviceBuffer::from_host(&stream, &w)?,
            DeviceBuffer::from_host(&stream, &w2)?,
            DeviceBuffer::from_host(&stream, &bias)?,
        );
        let (dsx, dsw) = (DeviceBuffer::from_host(&stream, &[sx])?, DeviceBuffer::from_host(&stream, &[sw])?);
        let scales = Fp8Scales::new(&dsx, &dsw);
        let cfg = GemmConfig::<f32>::row_major(m, n, k).transpose_b();
        // Decoded on the host by cuda-blas (exact).
        let fx: Vec<f64> = x.iter().map(|&v| Fp8Element::to_f32(v) as f64).collect();
        // Checks y against the CPU; `rel` is the output type's rounding.
        let check_x = |name: &str, fx: &[f64], fw: &[f64], got: &[f64], act: &dyn Fn(f64) -> f64, with_bias: bool, rel: f64| {
            let mut worst: f64 = 0.0;
            for i in 0..m {
                for j in 0..n {
                    let (mut dot, mut mag) = (0.0, 0.0);
                    for p in 0..k {
                        dot += fx[i * k + p] * fw[j * k + p];
                        mag += (fx[i * k + p] * fw[j * k + p]).abs();
                    }
                    let s = (sx * sw) as f64;
                    let want = act(s * dot + if with_bias { bias[j].to_f64() } else { 0.0 });
                    // f32 accumulation on the tensor cores, C's rounding, a fast tanh.
                    let allowed = 1e-3 * (s * mag + 1.0) + rel * want.abs() + 2e-3 * (1.0 + want.abs());
                    let err = (got[i * n + j] - want).abs();
                    if err > allowed || err.is_nan() {
                        return Err(format!("FP8 {name}: y({i},{j}) = {}, the CPU gives {want} (tolerance {allowed:.2e})", got[i * n + j]));
                    }
                    worst = worst.max(err / allowed);
                }
            }
            Ok(worst)
        };
        let check = |name: &str, fw: &[f64], got: &[f64], act: &dyn Fn(f64) -> f64, with_bias: bool, rel: f64| {
            check_x(name, &fx, fw, got, act, with_bias, rel)
        };
        let fw: Vec<f64> = w.iter().map(|&v| Fp8Element::to_f32(v) as f64).collect();
        let mut dy = DeviceBuffer::<bf16>::zeroed(&stream, m * n)?;
        lt.matmul_fp8(&cfg, scales, Epilogue::BiasGelu(dbias.as_slice()), dx.as_slice(), dw.as_slice(), dy.as_slice_mut())?;
        let got: Vec<f64> = dy.to_host_vec(&stream)?.iter().map(|v| v.to_f64()).collect();
        let worst = check("e4m3 x e4m3 -> bf16, bias+gelu", &fw, &got, &gelu, true, 1.0 / 128.0)?;
        ok(format!(" FP8 e4m3·e4m3 -> bf16 cuBLASLt bias+gelu {m}x{n}x{k}, scales {sx}·{sw}: worst error {worst:.3} of tolerance"));
        let fw2: Vec<f64> = w2.iter().map(|&v| Fp8Element::to_f32(v) as f64).collect();
        let mut dy = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
        lt.matmul_fp8(&cfg, scales, Epilogue::Relu, dx.as_slice(), dw2.as_slice(), dy.as_slice_mut())?;
        let got: Vec<f64> = dy.to_host_vec(&stream)?.iter().map(|&v| v as f64).collect();
        let worst = check("e4m3 x e5m2 -> f32, relu", &fw2, &got, &|v: f64| v.max(0.0), false, 1e-6)?;
        ok(format!(" FP8 e4m3·e5m2 -> f32 cuBLASLt relu {m}x{n}x{k}: worst error {worst:.3} of tolerance"));
        // A strided batch: three activation matrices stored back to back, one
        // weight matrix for all (B stride 0), three outputs.
        let batches = 3;
        let xs: Vec<f8e4m3> = codes(batches * m * k, 12, 72.0).into_iter().map(f8e4m3::from_bits).collect();
        let dxs = DeviceBuffer::from_host(&stream, &xs)?;
        let mut dys = DeviceBuffer::<f32>::zeroed(&stream, batches * m * n)?;
        let batch = StridedBatch { count: batches, stride_a: m * k, stride_b: 0, stride_c: m * n };
        lt.matmul_fp8_strided_batched(&cfg, &batch, scales, Epilogue::Bias(dbias.as_slice()), dxs.as_slice(), dw.as_slice(), dys.as_slice_mut())?;
        let got: Vec<f64> = dys.to_host_vec(&stream)?.iter().map(|&v| v as f64).collect();
        let mut worst: f64 = 0.0;
        for e in 0..batches {
            let fxe: Vec<f64> = xs[e * m * k..(e + 1) * m * k].iter().map(|&v| Fp8Element::to_f32(v) as f64).collect();
            let name = format!("batch {e} of {batches}, e4m3 x e4m3 -> f32, bias");
            worst = worst.max(check_x(&name, &fxe, &fw, &got[e * m * n..(e + 1) * m * n], &|v: f64| v, true, 1e-6)?);
        }
        ok(format!(" FP8 strided batch of {batches} e4m3·e4m3 -> f32 cuBLASLt bias {m}x{n}x{k}, shared weights: worst error {worst:.3} of tolerance"));
        // A batch whose C stride breaks the 16-byte alignment of the next matrix is refused.
        let skewed = StridedBatch { stride_c: m * n + 1, ..batch };
        let mut roomy = DeviceBuffer::<f32>::zeroed(&stream, batches * (m * n + 1))?;
        match lt.matmul_fp8_strided_batched(&cfg, &skewed, scales, Epilogue::None, dxs.as_slice(), dw.as_slice(), roomy.as_slice_mut()) {
            Err(e @ BlasError::Fp8NotMultipleOf16 { .. }) => ok(format!(" an FP8 batch with a misaligned C stride is refused: {e}")),
            other => return Err(format!("an FP8 batch with a misaligned C stride was not refused: {other:?}").into()),
        }

        // 4c. The FP8 layer y = relu(s·x·wᵀ + bias) as a cuda-async operation,
        // captured once into a graph and replayed: first as built, then after
        // x's scale was changed in device memory, which the replay reads.
        let blas_ops = ops::BlasOps::new();
        blas_ops.prepare_lt(&stream)?;
        let (dsx1, dsw1) = (DeviceBuffer::from_host(&stream, &[sx])?, DeviceBuffer::from_host(&stream, &[sw])?);
        let layer = ops::matmul_fp8(&blas_ops, cfg, (dsx1, dsw1), DeviceBuffer::from_host(&stream, &x)?, DeviceBuffer::from_host(&stream, &w)?,
                                    DeviceBuffer::<f32>::zeroed(&stream, m * n)?)
            .bias(DeviceBuffer::from_host(&stream, &bias)?)
            .activation(ops::Activation::Relu);
        let mut graph = layer.into_graph(&stream)?.replay().sync_on(&stream)?;
        let relu = |v: f64| v.max(0.0);
        let got: Vec<f64> = graph.output().c.to_host_vec(&stream)?.iter().map(|&v| v as f64).collect();
        let first = check("as a graph, e4m3 x e4m3 -> f32, bias+relu", &fw, &got, &relu, true, 1e-6)?;
        graph.output_mut().scales.0.copy_from_host(&stream, &[2.0 * sx])?;
        let graph = graph.replay().sync_on(&stream)?;
        let got: Vec<f64> = graph.output().c.to_host_vec(&stream)?.iter().map(|&v| v as f64).collect();
        // The CPU side with x's scale doubled: x's values doubled, exactly.
        let fx2: Vec<f64> = fx.iter().map(|v| 2.0 * v).collect();
        let second = check_x("replayed with x's scale doubled", &fx2, &fw, &got, &relu, true, 1e-6)?;
        ok(format!(
            " FP8 layer as a cuda-async operation in a graph, replayed with a new scale: worst error {:.3} of tolerance",
            first.max(second)
        ));
        // An operation on a stream without a cuBLASLt handle cannot be captured.
        let fresh = ctx.new_stream()?;
        let unprepared = ops::matmul_fp8(&blas_ops, cfg, (DeviceBuffer::from_host(&fresh, &[sx])?, DeviceBuffer::from_host(&fresh, &[sw])?),
                                         DeviceBuffer::from_host(&fresh, &x)?, DeviceBuffer::from_host(&fresh, &w)?, DeviceBuffer::<f32>::zeroed(&fresh, m * n)?);
        match unprepared.into_graph(&fresh) {
            Err(e) if e.to_string().contains("prepare_lt") => ok(format!(" an FP8 operation captured on a stream with no cuBLASLt handle is refused: {e}")),
            other => return Err(format!("an FP8 capture without BlasOps::prepare_lt was not refused: {:?}", other.map(|_| ())).into()),
        }

        // B not transposed: not a layout of cuBLASLt's FP8 kernels, refused first.
        match lt.matmul_fp8(&GemmConfig::<f32>::row_major(m, n, k), scales, Epilogue::None, dx.as_slice(), dw.as_slice(), dy.as_slice_mut()) {
            Err(e @ BlasError::Fp8Layout { .. }) => ok(format!(" an FP8 matmul in the NN layout is refused: {e}")),
            other => return Err(format!("an FP8 matmul in the NN layout was not refused: {other:?}").into()),
        }
    }

    // 5. A shape the buffers cannot hold is refused before cuBLAS runs.
    let small = DeviceBuffer::<f32>::zeroed(&stream, 10)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 16)?;
    match blas.gemm(&GemmConfig::row_major(4, 4, 4), small.as_slice(), small.as_slice(), out.as_slice_mut()) {
        Err(e @ BlasError::BufferTooSmall { .. }) => ok(format!(" a 4x4x4 GEMM on 10-element buffers is refused: {e}")),
        other => return Err(format!("a GEMM on too small buffers was not refused: {other:?}").into()),
    }
    // 6. A GEMM captured into a CUDA graph and replayed (C += A·B at every
    // launch): cuBLAS with the handle's own workspace, or the CPU reference
    // as a host node under the emulator.
    let captured = Blas::with_workspace(&stream)?;
    let (m, n, k) = (33, 17, 48);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let (da, db) = (DeviceBuffer::from_host(&stream, &a)?, DeviceBuffer::from_host(&stream, &b)?);
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
    let cfg = GemmConfig::<f32>::row_major(m, n, k).scale(1.0, 1.0);
    let graph = stream.capture(|_| captured.gemm(&cfg, da.as_slice(), db.as_slice(), dc.as_slice_mut()))?;
    let exec = graph.instantiate()?;
    let mut want = vec![0.0f32; m * n];
    for _ in 0..3 {
        exec.launch(&stream)?;
        cuda_blas::gemm_reference(&cfg, &a, &b, &mut want)?;
    }
    // Small integers: every sum is exact, so the results must be equal.
    if dc.to_host_vec(&stream)? != want {
        return Err("a GEMM captured into a graph and launched three times differs from the CPU".into());
    }
    ok(format!(" f32 RowMajor NN {m}x{n}x{k} captured into a graph, launched 3 times (C += A·B): exact"));
    Ok(passed)
}

fn main() -> ExitCode {
    match run() {
        Ok(passed) => {
            println!("✓ SUCCESS: blas: {passed} GEMM cases match the CPU reference");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
