//! cuda-blas against an independent CPU reference, on the GPU where there
//! is one (with cuBLAS), else on the CPU emulator: every element type,
//! layout and transpose, padded leading dimensions, strided batches, TF32,
//! the cuBLASLt epilogues, and every shape error (which must leave C as it
//! was: nothing is queued).

use std::sync::{Arc, Once};

use cuda_blas::{Blas, BlasError, BlasLt, Compute, Epilogue, GemmConfig, GemmElement, Layout, Operand, StridedBatch, Transpose};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceRepr};
use cuda_device::half::{bf16, f16};
use cuda_driver_sys::DriverApi;

fn gpu_present() -> bool {
    let Ok(api) = DriverApi::load_libcuda() else { return false };
    let mut count = 0;
    // SAFETY: cuInit takes flags 0; cuDeviceGetCount writes one int.
    unsafe { (api.cuInit)(0) == 0 && (api.cuDeviceGetCount)(&mut count) == 0 && count > 0 }
}

/// The stream every test uses: the GPU's, else the emulator's.
fn stream() -> Arc<CudaStream> {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && !gpu_present() {
            // SAFETY (edition 2021: safe): set once, before cuda-core reads it.
            std::env::set_var("OXIDE_EMULATE", "1");
        }
    });
    CudaContext::new(0).unwrap().default_stream()
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

/// Element conversions for the test's own f64 reference.
trait Elem: GemmElement + DeviceRepr + std::fmt::Debug {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    fn scalar(x: f64) -> Self::Scalar;
    /// Relative tolerance against sum |a·b|.
    const TOL: f64;
}
impl Elem for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const TOL: f64 = 1e-5;
}
impl Elem for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn f64(self) -> f64 {
        self
    }
    fn scalar(x: f64) -> f64 {
        x
    }
    const TOL: f64 = 1e-12;
}
impl Elem for f16 {
    fn of(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn f64(self) -> f64 {
        self.to_f64()
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const TOL: f64 = 2e-3;
}
impl Elem for bf16 {
    fn of(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn f64(self) -> f64 {
        self.to_f64()
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const TOL: f64 = 1e-2;
}

/// Element (i, j) of a stored matrix.
fn at(layout: Layout, ld: usize, i: usize, j: usize) -> usize {
    match layout {
        Layout::RowMajor => i * ld + j,
        Layout::ColMajor => i + j * ld,
    }
}

/// One case: runs the GEMM on the device and checks every element of C
/// (and that C's padding is untouched) against the textbook definition.
#[allow(clippy::too_many_arguments)]
fn check_case<T: Elem>(stream: &Arc<CudaStream>, blas: &Blas, layout: Layout, ta: Transpose, tb: Transpose, (m, n, k): (usize, usize, usize), pad: usize) {
    let (ar, ac) = if ta == Transpose::No { (m, k) } else { (k, m) };
    let (br, bc) = if tb == Transpose::No { (k, n) } else { (n, k) };
    let inner = |r: usize, c: usize| if layout == Layout::RowMajor { c } else { r };
    let outer = |r: usize, c: usize| if layout == Layout::RowMajor { r } else { c };
    let (lda, ldb, ldc) = (inner(ar, ac).max(1) + pad, inner(br, bc).max(1) + pad, inner(m, n).max(1) + pad);
    let a: Vec<T> = values(lda * outer(ar, ac), 1).into_iter().map(T::of).collect();
    let b: Vec<T> = values(ldb * outer(br, bc), 2).into_iter().map(T::of).collect();
    let c0: Vec<T> = values(ldc * outer(m, n), 3).into_iter().map(T::of).collect();
    let (alpha, beta) = (1.5, -0.5);
    let mut cfg = GemmConfig::<T::Scalar>::new(layout, m, n, k).scale(T::scalar(alpha), T::scalar(beta));
    cfg.trans_a = ta;
    cfg.trans_b = tb;
    let cfg = cfg.leading_dims(lda, ldb, ldc);
    let da = DeviceBuffer::from_host(stream, &a).unwrap();
    let db = DeviceBuffer::from_host(stream, &b).unwrap();
    let mut dc = DeviceBuffer::from_host(stream, &c0).unwrap();
    blas.gemm(&cfg, da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(stream).unwrap();
    let case = format!("{} {layout:?} {ta:?}/{tb:?} {m}x{n}x{k} pad {pad}", T::NAME);
    let op_a = |i, p| if ta == Transpose::No { a[at(layout, lda, i, p)] } else { a[at(layout, lda, p, i)] };
    let op_b = |p, j| if tb == Transpose::No { b[at(layout, ldb, p, j)] } else { b[at(layout, ldb, j, p)] };
    let mut written = vec![false; got.len()];
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut mag) = (0.0, 0.0);
            for p in 0..k {
                let x = op_a(i, p).f64() * op_b(p, j).f64();
                sum += x;
                mag += x.abs();
            }
            let idx = at(layout, ldc, i, j);
            written[idx] = true;
            let want = alpha * sum + beta * c0[idx].f64();
            let tol = T::TOL * (alpha * mag + beta.abs() * c0[idx].f64().abs() + 1.0);
            let g = got[idx].f64();
            assert!((g - want).abs() <= tol, "{case}: C({i},{j}) = {g}, expected {want} (tolerance {tol})");
        }
    }
    for (idx, w) in written.iter().enumerate() {
        if !w {
            assert_eq!(got[idx].f64().to_bits(), c0[idx].f64().to_bits(), "{case}: padding element {idx} was written");
        }
    }
}

fn every_case<T: Elem>() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    for layout in [Layout::RowMajor, Layout::ColMajor] {
        for ta in [Transpose::No, Transpose::Yes] {
            for tb in [Transpose::No, Transpose::Yes] {
                for (shape, pad) in [((5, 7, 3), 0), ((1, 9, 4), 2), ((17, 3, 11), 1), ((8, 8, 1), 0), ((33, 31, 29), 3)] {
                    check_case::<T>(&stream, &blas, layout, ta, tb, shape, pad);
                }
            }
        }
    }
}

#[test]
fn f32_matches_the_reference_for_every_layout_and_transpose() {
    every_case::<f32>();
}

#[test]
fn f64_matches_the_reference_for_every_layout_and_transpose() {
    every_case::<f64>();
}

#[test]
fn f16_matches_the_reference_for_every_layout_and_transpose() {
    every_case::<f16>();
}

#[test]
fn bf16_matches_the_reference_for_every_layout_and_transpose() {
    every_case::<bf16>();
}

#[test]
fn strided_batches_match_one_gemm_per_entry() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    let (m, n, k, count) = (6, 5, 4, 3);
    let cfg = GemmConfig::<f32>::row_major(m, n, k).transpose_b();
    let batch = StridedBatch::packed(&cfg, count).unwrap();
    let a: Vec<f32> = values(m * k * count, 4).into_iter().map(|x| x as f32).collect();
    let b: Vec<f32> = values(n * k * count, 5).into_iter().map(|x| x as f32).collect();
    let (da, db) = (DeviceBuffer::from_host(&stream, &a).unwrap(), DeviceBuffer::from_host(&stream, &b).unwrap());
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n * count).unwrap();
    blas.gemm_strided_batched(&cfg, &batch, da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    for e in 0..count {
        let mut want = vec![0.0f32; m * n];
        cuda_blas::gemm_reference(&cfg, &a[e * m * k..][..m * k], &b[e * n * k..][..n * k], &mut want).unwrap();
        for (g, w) in got[e * m * n..][..m * n].iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "entry {e}: {g} vs {w}");
        }
    }
    // B shared by every entry (stride 0).
    let shared = StridedBatch { stride_b: 0, ..batch };
    blas.gemm_strided_batched(&cfg, &shared, da.as_slice(), db.slice(..n * k), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    let mut want = vec![0.0f32; m * n];
    cuda_blas::gemm_reference(&cfg, &a[2 * m * k..], &b[..n * k], &mut want).unwrap();
    for (g, w) in got[2 * m * n..].iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn tf32_is_close_to_f32_and_refused_for_other_types() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    let (m, n, k) = (16, 16, 64);
    let a: Vec<f32> = values(m * k, 6).into_iter().map(|x| x as f32).collect();
    let b: Vec<f32> = values(k * n, 7).into_iter().map(|x| x as f32).collect();
    let cfg = GemmConfig::<f32>::row_major(m, n, k).with_compute(Compute::Tf32);
    let (da, db) = (DeviceBuffer::from_host(&stream, &a).unwrap(), DeviceBuffer::from_host(&stream, &b).unwrap());
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    blas.gemm(&cfg, da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    let mut exact = vec![0.0f32; m * n];
    cuda_blas::gemm_reference(&GemmConfig::row_major(m, n, k), &a, &b, &mut exact).unwrap();
    let worst = got.iter().zip(&exact).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
    assert!(worst < 0.05, "TF32 is off by {worst}");

    let d64 = DeviceBuffer::<f64>::zeroed(&stream, 4).unwrap();
    let mut c64 = DeviceBuffer::<f64>::zeroed(&stream, 4).unwrap();
    let cfg64 = GemmConfig::<f64>::row_major(2, 2, 2).with_compute(Compute::Tf32);
    let e = blas.gemm(&cfg64, d64.as_slice(), d64.as_slice(), c64.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::Tf32NeedsF32 { element: "f64" });
    assert!(e.to_string().contains("Compute::Default"), "{e}");
}

#[test]
fn bad_shapes_are_refused_with_the_operand_and_nothing_runs() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::from_host(&stream, &[1.0f32; 12]).unwrap();
    let b = DeviceBuffer::from_host(&stream, &[1.0f32; 12]).unwrap();
    let mut c = DeviceBuffer::from_host(&stream, &[7.0f32; 9]).unwrap();
    let mut run = |cfg: GemmConfig<f32>, la: usize, lb: usize, lc: usize| {
        blas.gemm(&cfg, a.slice(..la), b.slice(..lb), c.slice_mut(..lc)).unwrap_err()
    };
    // 3×4 · 4×3 = 3×3 needs 12, 12, 9.
    let cfg = GemmConfig::<f32>::row_major(3, 3, 4);
    assert_eq!(run(cfg, 11, 12, 9), BlasError::BufferTooSmall { operand: Operand::A, len: 11, needed: 12 });
    assert_eq!(run(cfg, 12, 10, 9), BlasError::BufferTooSmall { operand: Operand::B, len: 10, needed: 12 });
    assert_eq!(run(cfg, 12, 12, 8), BlasError::BufferTooSmall { operand: Operand::C, len: 8, needed: 9 });
    // Row-major A is 3×4: ld ≥ 4. Transposed it is 4×3: ld ≥ 3.
    assert_eq!(run(cfg.leading_dims(3, 3, 3), 12, 12, 9), BlasError::LeadingDimension { operand: Operand::A, ld: 3, min: 4 });
    assert_eq!(run(cfg.leading_dims(4, 2, 3), 12, 12, 9), BlasError::LeadingDimension { operand: Operand::B, ld: 2, min: 3 });
    // A padded ld reads further: ld 5 for A needs 5·2 + 4 = 14 elements.
    assert_eq!(run(cfg.leading_dims(5, 3, 3), 12, 12, 9), BlasError::BufferTooSmall { operand: Operand::A, len: 12, needed: 14 });
    // Column-major C of 3×3 with ld 2 is refused.
    let col = GemmConfig::<f32>::col_major(3, 3, 4).leading_dims(3, 4, 2);
    assert_eq!(run(col, 12, 12, 9), BlasError::LeadingDimension { operand: Operand::C, ld: 2, min: 3 });
    // Batches: the last entry must fit, and C's entries may not overlap.
    let batch = StridedBatch { count: 2, stride_a: 0, stride_b: 0, stride_c: 9 };
    let e = blas.gemm_strided_batched(&cfg, &batch, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::C, len: 9, needed: 18 });
    let batch = StridedBatch { count: 2, stride_a: 0, stride_b: 0, stride_c: 0 };
    let e = blas.gemm_strided_batched(&cfg, &batch, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::OverlappingOutput { stride: 0, min: 9 });
    assert!(e.to_string().contains("at least 9"), "{e}");
    // Dimensions past cuBLAS's int.
    let huge = GemmConfig::<f32>::row_major(1 << 31, 1, 1);
    let e = blas.gemm(&huge, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::TooLarge { what: "m", value: 1 << 31 });
    // Nothing ran: C is as it was.
    assert_eq!(c.to_host_vec(&stream).unwrap(), vec![7.0f32; 9]);
    // The message says what to do.
    let msg = BlasError::BufferTooSmall { operand: Operand::B, len: 10, needed: 12 }.to_string();
    assert!(msg.contains("B holds 10 elements") && msg.contains("larger buffer"), "{msg}");
}

#[test]
fn empty_products_do_nothing_and_k_zero_scales_c() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    let empty = DeviceBuffer::<f32>::zeroed(&stream, 0).unwrap();
    let mut c = DeviceBuffer::from_host(&stream, &[2.0f32; 6]).unwrap();
    // m = 0: nothing is computed, but B (5×3) is still checked as given.
    let b = DeviceBuffer::from_host(&stream, &[1.0f32; 15]).unwrap();
    blas.gemm(&GemmConfig::row_major(0, 3, 5), empty.as_slice(), b.as_slice(), c.slice_mut(..0)).unwrap();
    let e = blas.gemm(&GemmConfig::row_major(0, 3, 5), empty.as_slice(), empty.as_slice(), c.slice_mut(..0));
    assert_eq!(e, Err(BlasError::BufferTooSmall { operand: Operand::B, len: 0, needed: 15 }));
    // k = 0: C = beta·C.
    let cfg = GemmConfig::<f32>::row_major(2, 3, 0).scale(1.0, 0.5);
    blas.gemm(&cfg, empty.as_slice(), empty.as_slice(), c.as_slice_mut()).unwrap();
    assert_eq!(c.to_host_vec(&stream).unwrap(), vec![1.0f32; 6]);
}

#[test]
fn lt_epilogues_match_the_reference() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k) = (7, 5, 9);
    let a: Vec<f32> = values(m * k, 8).into_iter().map(|x| x as f32).collect();
    let b: Vec<f32> = values(k * n, 9).into_iter().map(|x| x as f32).collect();
    let bias: Vec<f32> = values(n, 10).into_iter().map(|x| x as f32).collect();
    let (da, db, dbias) = (
        DeviceBuffer::from_host(&stream, &a).unwrap(),
        DeviceBuffer::from_host(&stream, &b).unwrap(),
        DeviceBuffer::from_host(&stream, &bias).unwrap(),
    );
    let cfg = GemmConfig::<f32>::row_major(m, n, k);
    let mut plain = vec![0.0f32; m * n];
    cuda_blas::gemm_reference(&cfg, &a, &b, &mut plain).unwrap();
    let gelu = |x: f32| {
        let x = x as f64;
        (0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())) as f32
    };
    type Case<'a> = (&'a str, Epilogue<'a, f32>, Box<dyn Fn(usize, f32) -> f32>);
    let bias2 = bias.clone();
    let bias3 = bias.clone();
    let bias4 = bias.clone();
    let cases: Vec<Case> = vec![
        ("none", Epilogue::None, Box::new(|_, x| x)),
        ("relu", Epilogue::Relu, Box::new(|_, x: f32| x.max(0.0))),
        ("gelu", Epilogue::Gelu, Box::new(move |_, x| gelu(x))),
        ("bias", Epilogue::Bias(dbias.as_slice()), Box::new(move |j, x| x + bias2[j])),
        ("bias+relu", Epilogue::BiasRelu(dbias.as_slice()), Box::new(move |j, x: f32| (x + bias3[j]).max(0.0))),
        ("bias+gelu", Epilogue::BiasGelu(dbias.as_slice()), Box::new(move |j, x| gelu(x + bias4[j]))),
    ];
    for (name, epilogue, f) in cases {
        let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
        lt.matmul(&cfg, epilogue, da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
        let got = dc.to_host_vec(&stream).unwrap();
        for i in 0..m {
            for j in 0..n {
                let want = f(j, plain[i * n + j]);
                let g = got[i * n + j];
                // cuBLASLt's GELU may use a fast tanh (about 2⁻¹¹ relative);
                // a wrong bias entry or activation is off by far more.
                assert!((g - want).abs() <= 2e-3 * (1.0 + want.abs()), "{name}: C({i},{j}) = {g}, expected {want}");
            }
        }
    }
    // The bias must have one entry per column of a row-major C.
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    let e = lt.matmul(&cfg, Epilogue::Bias(dbias.slice(..n - 1)), da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::Bias, len: n - 1, needed: n });
}

#[test]
fn lt_runs_half_precision_with_a_bias() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k) = (4, 6, 8);
    let a: Vec<bf16> = values(m * k, 11).into_iter().map(bf16::from_f64).collect();
    let b: Vec<bf16> = values(k * n, 12).into_iter().map(bf16::from_f64).collect();
    let bias: Vec<bf16> = values(m, 13).into_iter().map(bf16::from_f64).collect();
    // Column-major: the bias has one entry per row (m).
    let cfg = GemmConfig::<f32>::col_major(m, n, k);
    let (da, db, dbias) = (
        DeviceBuffer::from_host(&stream, &a).unwrap(),
        DeviceBuffer::from_host(&stream, &b).unwrap(),
        DeviceBuffer::from_host(&stream, &bias).unwrap(),
    );
    let mut dc = DeviceBuffer::<bf16>::zeroed(&stream, m * n).unwrap();
    lt.matmul(&cfg, Epilogue::BiasRelu(dbias.as_slice()), da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k).map(|p| a[i + p * m].to_f64() * b[p + j * k].to_f64()).sum::<f64>() + bias[i].to_f64();
            let want = s.max(0.0);
            let g = got[i + j * m].to_f64();
            assert!((g - want).abs() <= 2e-2 * (1.0 + want.abs()), "C({i},{j}) = {g}, expected {want}");
        }
    }
}

#[test]
fn buffers_of_another_context_are_refused() {
    let stream = stream();
    if CudaContext::device_count().unwrap_or(0) < 2 {
        eprintln!("skipped: one device (a second context needs a second GPU)");
        return;
    }
    let other = CudaContext::new(1).unwrap().default_stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::from_host(&other, &[1.0f32; 4]).unwrap();
    let b = DeviceBuffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let e = blas.gemm(&GemmConfig::row_major(2, 2, 2), a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::WrongContext { operand: Operand::A });
}

#[test]
fn a_gemm_on_another_stream_waits_for_the_upload() {
    // C is written on stream S2 after A, B were written on the default
    // stream: the stream-ordered tracking makes S2 wait (on a GPU an event,
    // in the emulator everything is in order anyway).
    let stream = stream();
    let s2 = stream.context().new_stream().unwrap();
    let blas = Blas::new(&s2).unwrap();
    let n = 64;
    let a: Vec<f32> = values(n * n, 14).into_iter().map(|x| x as f32).collect();
    let da = DeviceBuffer::from_host(&stream, &a).unwrap();
    let mut eye = vec![0.0f32; n * n];
    for i in 0..n {
        eye[i * n + i] = 1.0;
    }
    let db = DeviceBuffer::from_host(&stream, &eye).unwrap();
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, n * n).unwrap();
    blas.gemm(&GemmConfig::row_major(n, n, n), da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    // Read back on the first stream: it waits for the GEMM on s2.
    assert_eq!(dc.to_host_vec(&stream).unwrap(), a);
}

#[test]
fn pointer_array_batches_match_one_gemm_per_entry() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    let (m, n, k) = (5, 4, 6);
    let cfg = GemmConfig::<f64>::col_major(m, n, k).transpose_a().scale(2.0, 1.0);
    let host_a: Vec<Vec<f64>> = (0..3).map(|e| values(k * m, 20 + e)).collect();
    let host_b: Vec<Vec<f64>> = (0..3).map(|e| values(k * n, 30 + e)).collect();
    let host_c: Vec<Vec<f64>> = (0..3).map(|e| values(m * n, 40 + e)).collect();
    let da: Vec<_> = host_a.iter().map(|x| DeviceBuffer::from_host(&stream, x).unwrap()).collect();
    let db: Vec<_> = host_b.iter().map(|x| DeviceBuffer::from_host(&stream, x).unwrap()).collect();
    let mut dc: Vec<_> = host_c.iter().map(|x| DeviceBuffer::from_host(&stream, x).unwrap()).collect();
    let a: Vec<_> = da.iter().map(|x| x.as_slice()).collect();
    let b: Vec<_> = db.iter().map(|x| x.as_slice()).collect();
    {
        let mut c: Vec<_> = dc.iter_mut().map(|x| x.as_slice_mut()).collect();
        blas.gemm_batched(&cfg, &a, &b, &mut c).unwrap();
        // Three A, two B: refused before anything runs.
        let e = blas.gemm_batched(&cfg, &a, &b[..2], &mut c).unwrap_err();
        assert_eq!(e, BlasError::BatchCountMismatch { a: 3, b: 2, c: 3 });
    }
    for e in 0..3 {
        let mut want = host_c[e].clone();
        cuda_blas::gemm_reference(&cfg, &host_a[e], &host_b[e], &mut want).unwrap();
        let got = dc[e].to_host_vec(&stream).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "entry {e}: {g} vs {w}");
        }
    }
    // One entry too small is refused, naming the operand.
    let short = DeviceBuffer::<f64>::zeroed(&stream, k * m - 1).unwrap();
    let mut a2 = a.clone();
    a2[1] = short.as_slice();
    let mut c: Vec<_> = dc.iter_mut().map(|x| x.as_slice_mut()).collect();
    let e = blas.gemm_batched(&cfg, &a2, &b, &mut c).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::A, len: k * m - 1, needed: k * m });
}
