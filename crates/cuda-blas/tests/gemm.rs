//! cuda-blas against an independent CPU reference, on the GPU where there
//! is one (with cuBLAS), else on the CPU emulator: every element type,
//! layout and transpose, padded leading dimensions, strided batches, TF32,
//! the cuBLASLt epilogues, FP8 matmuls (every epilogue, scales, each
//! allowed type pair and output), and every shape error and FP8 rule
//! (which must leave C as it was: nothing is queued).

use std::sync::{Arc, Once};

use cuda_blas::{
    Blas, BlasError, BlasLt, Compute, Epilogue, Fp8Element, Fp8Output, Fp8Pair, Fp8Scales, GemmConfig, GemmElement, Layout, Operand,
    StridedBatch, Transpose,
};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};
use cuda_device::half::{bf16, f16, f8e4m3, f8e5m2};
use cuda_driver_sys::DriverApi;

/// The stream every test uses: the GPU's, else the emulator's.
fn stream() -> Arc<CudaStream> {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
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

/// An FP8 input type, for the tests' own values.
trait F8: Fp8Element + std::fmt::Debug {
    fn of(x: f64) -> Self;
}
impl F8 for f8e4m3 {
    fn of(x: f64) -> Self {
        f8e4m3::from_f32(x as f32)
    }
}
impl F8 for f8e5m2 {
    fn of(x: f64) -> Self {
        f8e5m2::from_f32(x as f32)
    }
}

/// An epilogue by name (the bias buffer is made per case).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fp8Epi {
    None,
    Relu,
    Gelu,
    Bias,
    BiasRelu,
    BiasGelu,
}

const FP8_EPILOGUES: [Fp8Epi; 6] = [Fp8Epi::None, Fp8Epi::Relu, Fp8Epi::Gelu, Fp8Epi::Bias, Fp8Epi::BiasRelu, Fp8Epi::BiasGelu];

fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())
}

/// One FP8 case: `C = epi(alpha·sa·sb·op(A)·op(B) + beta·C0)` on the device
/// against f64 on the exactly decoded FP8 inputs. `layout` picks the TN
/// form of the layout (row-major: B transposed; column-major: A).
#[allow(clippy::too_many_arguments)]
fn fp8_case<A, B, D>(
    stream: &Arc<CudaStream>,
    lt: &BlasLt,
    layout: Layout,
    (m, n, k): (usize, usize, usize),
    epi: Fp8Epi,
    (sa, sb): (f32, f32),
    (alpha, beta): (f32, f32),
    seed: u64,
) where
    A: Fp8Pair<B> + F8,
    B: F8,
    D: Fp8Output + Elem,
    D::Bias: Elem,
{
    let cfg = match layout {
        Layout::RowMajor => GemmConfig::<f32>::row_major(m, n, k).transpose_b(),
        Layout::ColMajor => GemmConfig::<f32>::col_major(m, n, k).transpose_a(),
    }
    .scale(alpha, beta);
    // Stored: A is m×k row-major (k×m column-major: the same bytes), B is
    // n×k row-major (k×n column-major): a(i, p) = ha[i*k + p], b(p, j) = hb[j*k + p].
    let ha: Vec<A> = values(m * k, seed).into_iter().map(|x| A::of(2.0 * x)).collect();
    let hb: Vec<B> = values(n * k, seed + 1).into_iter().map(|x| B::of(2.0 * x)).collect();
    let c0: Vec<D> = values(m * n, seed + 2).into_iter().map(D::of).collect();
    let bias_len = if layout == Layout::RowMajor { n } else { m };
    let hbias: Vec<D::Bias> = values(bias_len, seed + 3).into_iter().map(|x| <D::Bias as Elem>::of(4.0 * x)).collect();
    let (da, db, dbias) = (
        DeviceBuffer::from_host(stream, &ha).unwrap(),
        DeviceBuffer::from_host(stream, &hb).unwrap(),
        DeviceBuffer::from_host(stream, &hbias).unwrap(),
    );
    let (dsa, dsb) = (DeviceBuffer::from_host(stream, &[sa]).unwrap(), DeviceBuffer::from_host(stream, &[sb]).unwrap());
    let mut dc = DeviceBuffer::from_host(stream, &c0).unwrap();
    let bias = dbias.as_slice();
    let epilogue = match epi {
        Fp8Epi::None => Epilogue::None,
        Fp8Epi::Relu => Epilogue::Relu,
        Fp8Epi::Gelu => Epilogue::Gelu,
        Fp8Epi::Bias => Epilogue::Bias(bias),
        Fp8Epi::BiasRelu => Epilogue::BiasRelu(bias),
        Fp8Epi::BiasGelu => Epilogue::BiasGelu(bias),
    };
    lt.matmul_fp8(&cfg, Fp8Scales::new(&dsa, &dsb), epilogue, da.as_slice(), db.as_slice(), dc.as_slice_mut()).unwrap();
    let got = dc.to_host_vec(stream).unwrap();
    let factor = alpha as f64 * sa as f64 * sb as f64;
    let name = format!("{} × {} → {}, {layout:?} {m}×{n}×{k}, {epi:?}", A::NAME, B::NAME, D::NAME);
    let fa: Vec<f64> = ha.iter().map(|x| x.to_f32() as f64).collect();
    let fb: Vec<f64> = hb.iter().map(|x| x.to_f32() as f64).collect();
    for i in 0..m {
        for j in 0..n {
            let (mut dot, mut sum_abs) = (0.0f64, 0.0f64);
            for (x, y) in fa[i * k..][..k].iter().zip(&fb[j * k..][..k]) {
                dot += x * y;
                sum_abs += (x * y).abs();
            }
            let ci = if layout == Layout::RowMajor { i * n + j } else { i + j * m };
            let mut v = factor * dot + beta as f64 * c0[ci].f64();
            let bias_of = |i: usize, j: usize| hbias[if layout == Layout::RowMajor { j } else { i }].f64();
            v = match epi {
                Fp8Epi::None => v,
                Fp8Epi::Relu => v.max(0.0),
                Fp8Epi::Gelu => gelu64(v),
                Fp8Epi::Bias => v + bias_of(i, j),
                Fp8Epi::BiasRelu => (v + bias_of(i, j)).max(0.0),
                Fp8Epi::BiasGelu => gelu64(v + bias_of(i, j)),
            };
            // f32 accumulation (tensor cores keep fewer bits between their
            // f32 promotions) against sum |a·b|, then C's rounding; a
            // GELU may use a fast tanh (as in the f32 epilogue test).
            let scale = factor.abs() * sum_abs + beta.abs() as f64 * c0[ci].f64().abs();
            let mut tol = 5e-4 * scale + D::TOL * v.abs() + 1e-6;
            if matches!(epi, Fp8Epi::Gelu | Fp8Epi::BiasGelu) {
                tol += 2e-3 * (1.0 + v.abs());
            }
            let g = got[ci].f64();
            assert!((g - v).abs() <= tol, "{name}: C({i},{j}) = {g}, expected {v} (tolerance {tol})");
        }
    }
}

#[test]
fn fp8_every_epilogue_matches_the_reference() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    for (e, epi) in FP8_EPILOGUES.into_iter().enumerate() {
        let seed = 100 + 10 * e as u64;
        fp8_case::<f8e4m3, f8e4m3, f32>(&stream, &lt, Layout::RowMajor, (64, 32, 48), epi, (0.5, 3.0), (1.0, 0.0), seed);
        fp8_case::<f8e4m3, f8e4m3, bf16>(&stream, &lt, Layout::RowMajor, (32, 48, 64), epi, (1.5, 0.25), (1.0, 0.0), seed + 1);
        fp8_case::<f8e4m3, f8e4m3, f16>(&stream, &lt, Layout::ColMajor, (48, 16, 32), epi, (2.0, 0.125), (1.0, 0.0), seed + 2);
    }
}

#[test]
fn fp8_type_pairs_layouts_and_shapes_match_the_reference() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let r = Layout::RowMajor;
    let c = Layout::ColMajor;
    fp8_case::<f8e4m3, f8e5m2, bf16>(&stream, &lt, r, (64, 32, 48), Fp8Epi::BiasRelu, (0.5, 2.0), (1.0, 0.0), 200);
    fp8_case::<f8e5m2, f8e4m3, f16>(&stream, &lt, r, (32, 64, 16), Fp8Epi::Bias, (4.0, 0.25), (1.0, 0.0), 201);
    fp8_case::<f8e5m2, f8e4m3, f32>(&stream, &lt, c, (16, 16, 16), Fp8Epi::None, (1.0, 1.0), (1.0, 0.0), 202);
    fp8_case::<f8e4m3, f8e5m2, f32>(&stream, &lt, c, (128, 64, 32), Fp8Epi::Gelu, (0.75, 1.25), (1.0, 0.0), 203);
    // Non-square, larger, and k large enough for several promotions.
    fp8_case::<f8e4m3, f8e4m3, bf16>(&stream, &lt, r, (256, 128, 512), Fp8Epi::BiasGelu, (0.125, 0.5), (1.0, 0.0), 204);
    fp8_case::<f8e4m3, f8e4m3, f32>(&stream, &lt, r, (16, 256, 128), Fp8Epi::Relu, (2.0, 2.0), (1.0, 0.0), 205);
    // alpha and beta beside the scales (C read and scaled).
    fp8_case::<f8e4m3, f8e4m3, f32>(&stream, &lt, r, (64, 32, 48), Fp8Epi::Bias, (0.5, 3.0), (0.5, 2.0), 206);
    fp8_case::<f8e4m3, f8e5m2, bf16>(&stream, &lt, c, (32, 32, 64), Fp8Epi::None, (1.0, 1.0), (2.0, -1.0), 207);
}

#[test]
fn fp8_small_integers_are_exact() {
    // Integers up to 4 are exact in both formats, their products and sums
    // of 512 of them exact in f32, and the scales powers of two: an f32 C
    // must be exact, bias and ReLU included.
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k) = (32, 16, 512);
    let int = |x: f64| (x * 4.0).round();
    let ha: Vec<f8e4m3> = values(m * k, 300).into_iter().map(|x| f8e4m3::from_f32(int(x) as f32)).collect();
    let hb: Vec<f8e5m2> = values(n * k, 301).into_iter().map(|x| f8e5m2::from_f32(int(x) as f32)).collect();
    let hbias: Vec<bf16> = values(n, 302).into_iter().map(|x| bf16::from_f64(int(x) * 8.0)).collect();
    let (da, db, dbias) = (
        DeviceBuffer::from_host(&stream, &ha).unwrap(),
        DeviceBuffer::from_host(&stream, &hb).unwrap(),
        DeviceBuffer::from_host(&stream, &hbias).unwrap(),
    );
    let (dsa, dsb) = (DeviceBuffer::from_host(&stream, &[0.5f32]).unwrap(), DeviceBuffer::from_host(&stream, &[4.0f32]).unwrap());
    let mut dc = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    let cfg = GemmConfig::<f32>::row_major(m, n, k).transpose_b();
    lt.matmul_fp8(&cfg, Fp8Scales::new(&dsa, &dsb), Epilogue::BiasRelu(dbias.as_slice()), da.as_slice(), db.as_slice(), dc.as_slice_mut())
        .unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k).map(|p| ha[i * k + p].to_f32() as f64 * hb[j * k + p].to_f32() as f64).sum();
            let want = (2.0 * dot + hbias[j].to_f64()).max(0.0);
            assert_eq!(got[i * n + j] as f64, want, "C({i},{j})");
        }
    }
}

#[test]
fn fp8_misuse_is_refused_with_the_rule_and_nothing_runs() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k) = (32, 16, 48);
    // Room for the padded leading dimensions below, so that only the FP8
    // rule fails.
    let a = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(1.0); m * (k + 16)]).unwrap();
    let b = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(1.0); n * (k + 16)]).unwrap();
    let one = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let empty = DeviceBuffer::<f32>::zeroed(&stream, 0).unwrap();
    let bias = DeviceBuffer::<bf16>::zeroed(&stream, n).unwrap();
    let mut c = DeviceBuffer::from_host(&stream, &vec![7.0f32; m * (n + 4)]).unwrap();
    let scales = Fp8Scales::new(&one, &one);
    let tn = GemmConfig::<f32>::row_major(m, n, k).transpose_b();
    let run = |cfg: &GemmConfig<f32>,
               scales: Fp8Scales<'_>,
               epi: Epilogue<'_, bf16>,
               a: DeviceSlice<'_, f8e4m3>,
               b: DeviceSlice<'_, f8e4m3>,
               c: DeviceSliceMut<'_, f32>| lt.matmul_fp8(cfg, scales, epi, a, b, c);

    // Layouts other than TN, in both layouts, each saying what to write.
    for cfg in [
        GemmConfig::<f32>::row_major(m, n, k),
        GemmConfig::<f32>::row_major(m, n, k).transpose_a().transpose_b(),
        GemmConfig::<f32>::col_major(m, n, k),
        GemmConfig::<f32>::col_major(m, n, k).transpose_b(),
    ] {
        let e = run(&cfg, scales, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
        assert_eq!(e, BlasError::Fp8Layout { layout: cfg.layout, trans_a: cfg.trans_a, trans_b: cfg.trans_b });
        let fix = if cfg.layout == Layout::RowMajor { ".transpose_b()" } else { ".transpose_a()" };
        assert!(e.to_string().contains(fix) && e.to_string().contains("TN"), "{e}");
    }
    // Dimensions and leading dimensions not multiples of 16.
    for (cfg, what, value, multiple) in [
        (GemmConfig::<f32>::row_major(24, n, k).transpose_b(), "m", 24, 16),
        (GemmConfig::<f32>::row_major(m, 8, k).transpose_b(), "n", 8, 16),
        (GemmConfig::<f32>::row_major(m, n, 40).transpose_b(), "k", 40, 16),
        (tn.leading_dims(k + 8, k, n), "lda", k + 8, 16),
        (tn.leading_dims(k, k + 1, n), "ldb", k + 1, 16),
        (tn.leading_dims(k, k, n + 2), "ldc", n + 2, 4),
    ] {
        let e = run(&cfg, scales, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
        assert_eq!(e, BlasError::Fp8NotMultipleOf16 { what, value, multiple }, "{what}");
        assert!(e.to_string().contains("pad"), "{e}");
    }
    // Views that start off a 16-byte boundary.
    let e = run(&tn, scales, Epilogue::None, a.slice(1..), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert!(matches!(e, BlasError::Fp8Misaligned { operand: Operand::A, .. }), "{e:?}");
    let e = run(&tn, scales, Epilogue::None, a.as_slice(), b.slice(8..), c.as_slice_mut()).unwrap_err();
    assert!(matches!(e, BlasError::Fp8Misaligned { operand: Operand::B, .. }), "{e:?}");
    let e = run(&tn, scales, Epilogue::None, a.as_slice(), b.as_slice(), c.slice_mut(1..)).unwrap_err();
    assert!(matches!(e, BlasError::Fp8Misaligned { operand: Operand::C, .. }), "{e:?}");
    assert!(e.to_string().contains("16-byte aligned"), "{e}");
    // Empty scales, short buffers, a short bias, TF32.
    let e = run(&tn, Fp8Scales { a: empty.as_slice(), b: one.as_slice() }, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::ScaleA, len: 0, needed: 1 });
    let e = run(&tn, Fp8Scales { a: one.as_slice(), b: empty.as_slice() }, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::ScaleB, len: 0, needed: 1 });
    let e = run(&tn, scales, Epilogue::None, a.slice(..m * k - 1), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::A, len: m * k - 1, needed: m * k });
    let e = run(&tn, scales, Epilogue::Bias(bias.slice(..n - 1)), a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::BufferTooSmall { operand: Operand::Bias, len: n - 1, needed: n });
    let e = run(&tn.with_compute(Compute::Tf32), scales, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap_err();
    assert_eq!(e, BlasError::Tf32NeedsF32 { element: "f8e4m3" });
    // Nothing ran: C is as it was.
    assert_eq!(c.to_host_vec(&stream).unwrap(), vec![7.0f32; m * (n + 4)]);
    // And the TN call itself runs.
    run(&tn, scales, Epilogue::None, a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap();
    assert_eq!(c.to_host_vec(&stream).unwrap()[..m * n], vec![k as f32; m * n][..]);
}
