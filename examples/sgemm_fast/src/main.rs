//! sgemm_fast: the register-blocked f32 GEMM of this crate's library
//! (`src/lib.rs`) checked against the CPU and cuBLAS at several shapes,
//! square and ragged (no dimension a multiple of the 128×128×8 tile), and
//! timed at 4096³ against cuBLAS's sgemm (for information: the benchmark
//! row `sgemm_fast` of `cargo oxide bench` is the measurement).
//!
//! Checks, for each shape (A and B random in [-1, 1)):
//! * against the CPU: each checked element of C (all of them for small
//!   shapes, 4096 sampled ones for large) is the `f64` dot product within
//!   `γ_K·Σ_k |a_ik·b_kj|`, `γ_K = K·u/(1 − K·u)`, `u = 2⁻²⁴`: the
//!   worst-case bound of an f32 dot product in any order, fused or not.
//!   Dropping, repeating or misplacing one term errs by about 1/K of
//!   `Σ|a·b|` and fails it.
//! * against cuBLAS (`cublasGemmEx`, f32; the CPU reference of cuda-blas on
//!   the emulator): every element within twice that bound, with `Σ|a·b|`
//!   computed by cuBLAS from |A| and |B|.
//!
//! Without libcublas (`OXIDE_CUBLAS`, the toolkit or the nvidia-cublas
//! Python package) only the CPU check runs. Prints PASS or FAIL per shape;
//! exits with 1 if any failed, 2 without a GPU or emulator. Arguments:
//! shapes as `MxNxK` (default: small ones on the emulator, up to 2048 on a
//! GPU, and 4095×4097×4093 and 4096³ in release builds).

use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_host::{load_kernel_module, KernelModule};
use sgemm_fast::Dims;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Deterministic pseudo-random values in [-1, 1) (xorshift64).
fn random_matrix(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The f32 dot-product bound γ_K.
fn gamma(k: usize) -> f64 {
    let ku = k as f64 * (f32::EPSILON as f64 / 2.0);
    ku / (1.0 - ku)
}

/// The elements checked against the CPU: all of a small C, else 4096 spread
/// over it (every row and column edge region included by the stride).
fn checked_indices(len: usize) -> Vec<usize> {
    const SAMPLES: usize = 4096;
    if len <= 64 * 1024 {
        (0..len).collect()
    } else {
        // An odd stride coprime with most widths walks over rows and columns.
        let stride = (len / SAMPLES) | 1;
        (0..SAMPLES).map(|i| (i * stride + i / 7) % len).chain([len - 1]).collect()
    }
}

/// One shape: sgemm_fast and (if loaded) cuBLAS on the same inputs, both
/// checked. Returns oxide's and cuBLAS's best times in seconds (cuBLAS's
/// infinite without it).
fn check(
    module: &KernelModule,
    stream: &Arc<CudaStream>,
    blas: Option<&Blas>,
    d: Dims,
    launches: usize,
) -> Result<(f64, f64), String> {
    let e = |e: &dyn std::fmt::Display| format!("{d:?}: {e}");
    let a = random_matrix(d.m * d.k, 0x2545_f491_4f6c_dd1d ^ d.m as u64);
    let b = random_matrix(d.k * d.n, 0x9e37_79b9_7f4a_7c15 ^ d.n as u64);
    // (One element at least: an empty buffer is no allocation.)
    let up = |v: &[f32]| DeviceBuffer::from_host(stream, if v.is_empty() { &[0.0] } else { v }).map_err(|x| e(&x));
    let (a_d, b_d) = (up(&a)?, up(&b)?);
    let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
    let (a_abs, b_abs) = (up(&abs(&a))?, up(&abs(&b))?);
    let zeros = || DeviceBuffer::<f32>::zeroed(stream, (d.m * d.n).max(1)).map_err(|x| e(&x));
    // NaN before the launch: an element the kernel does not write fails.
    let mut c = up(&vec![f32::NAN; d.m * d.n])?;
    let (mut c_blas, mut magnitude) = (zeros()?, zeros()?);

    let sync = || stream.synchronize().map_err(|x| e(&x));
    let mut best = f64::INFINITY;
    for _ in 0..launches.max(1) {
        sync()?;
        let start = Instant::now();
        sgemm_fast::launch(module, stream, d, &a_d, &b_d, &mut c).map_err(|x| e(&x))?;
        sync()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    let cfg = GemmConfig::<f32>::row_major(d.m, d.n, d.k);
    let mut best_blas = f64::INFINITY;
    let down = |v: &DeviceBuffer<f32>| v.to_host_vec(stream).map_err(|x| e(&x));
    let c = down(&c)?;
    check_cpu(d, &a, &b, &c)?;
    // (K = 0 is the kernel's edge case, not cuBLAS's: the CPU check says C = 0.)
    let Some(blas) = blas.filter(|_| d.k > 0) else { return Ok((best, best_blas)) };
    for _ in 0..launches.max(1) {
        sync()?;
        let start = Instant::now();
        blas.gemm(&cfg, a_d.as_slice(), b_d.as_slice(), c_blas.as_slice_mut()).map_err(|x| e(&x))?;
        sync()?;
        best_blas = best_blas.min(start.elapsed().as_secs_f64());
    }
    blas.gemm(&cfg, a_abs.as_slice(), b_abs.as_slice(), magnitude.as_slice_mut()).map_err(|x| e(&x))?;
    let (c_blas, magnitude) = (down(&c_blas)?, down(&magnitude)?);
    let g = gamma(d.k);
    for i in 0..d.m * d.n {
        // |A|·|B| from cuBLAS is itself rounded: up to γ_K of it.
        let bound = 2.0 * g * magnitude[i] as f64 * (1.0 + 2.0 * g);
        let error = (c[i] as f64 - c_blas[i] as f64).abs();
        if !(error <= bound) {
            return Err(format!("{d:?}: {} is {} but cuBLAS says {} (error {error:e} > bound {bound:e})", at(d, i), c[i], c_blas[i]));
        }
    }
    Ok((best, best_blas))
}

/// `C[row][col]` of element `i`.
fn at(d: Dims, i: usize) -> String {
    format!("C[{}][{}]", i / d.n, i % d.n)
}

/// The checked elements of `c` against the f64 CPU product.
fn check_cpu(d: Dims, a: &[f32], b: &[f32], c: &[f32]) -> Result<(), String> {
    let g = gamma(d.k);
    for i in checked_indices(d.m * d.n) {
        let (row, col) = (i / d.n, i % d.n);
        let (mut sum, mut mag) = (0.0f64, 0.0f64);
        for p in 0..d.k {
            let product = a[row * d.k + p] as f64 * b[p * d.n + col] as f64;
            sum += product;
            mag += product.abs();
        }
        let error = (c[i] as f64 - sum).abs();
        // `!(x <= y)` so that a NaN fails too.
        if !(error <= g * mag) {
            return Err(format!("{d:?}: {} is {} but the CPU says {sum} (error {error:e} > bound {:e})", at(d, i), c[i], g * mag));
        }
    }
    Ok(())
}

/// Parses `MxNxK`.
fn parse_shape(s: &str) -> Option<Dims> {
    let v: Vec<usize> = s.split('x').map(str::parse).collect::<Result<_, _>>().ok()?;
    match v[..] {
        [m, n, k] => Some(Dims { m, n, k }),
        _ => None,
    }
}

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    let emulated = cuda_core::emulator::is_active();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut shapes = Vec::new();
    for a in &args {
        match parse_shape(a) {
            Some(d) => shapes.push(d),
            None => {
                eprintln!("usage: sgemm_fast [MxNxK ...]  (not a shape: {a})");
                return ExitCode::from(2);
            }
        }
    }
    let dims = |m, n, k| Dims { m, n, k };
    if shapes.is_empty() {
        // Interior blocks only; ragged in every dimension (K not a multiple
        // of the K step: every block takes the edge path); a full tile with
        // N not a multiple of 4; a single partial block; K = 0 (C is zeros).
        shapes = vec![dims(128, 128, 64), dims(130, 129, 75), dims(128, 130, 16), dims(64, 72, 36), dims(3, 5, 0)];
        if !emulated {
            shapes.extend([dims(1000, 1111, 999), dims(2048, 1024, 512), dims(1024, 4096, 256)]);
        }
        // The large ones in release builds (a debug build's CPU checks and
        // random inputs would take most of the GPU suite's time limit).
        if !emulated && !cfg!(debug_assertions) {
            shapes.extend([dims(4095, 4097, 4093), dims(4096, 4096, 4096)]);
        }
    }
    let module = match load_kernel_module(&ctx, "sgemm_fast") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let stream = ctx.default_stream();
    // The emulator always has cuda-blas's CPU reference; a GPU machine
    // without libcublas still checks against the CPU.
    let blas = match Blas::new(&stream) {
        Ok(b) => Some(b),
        Err(e) => {
            println!("cuBLAS not loaded, checking against the CPU only: {e}");
            None
        }
    };
    let mut failed = 0;
    for d in &shapes {
        let timed = !emulated && d.m * d.n * d.k >= 1 << 30;
        match check(&module, &stream, blas.as_ref(), *d, if timed { 10 } else { 1 }) {
            Ok((t, t_blas)) if timed && t_blas.is_finite() => println!(
                "PASS {}x{}x{}: {:.3} ms, {:.2} TFLOP/s; cuBLAS {:.3} ms, {:.2} TFLOP/s: {:.3}× cuBLAS (best of 10, informational)",
                d.m,
                d.n,
                d.k,
                t * 1e3,
                d.flops() / t / 1e12,
                t_blas * 1e3,
                d.flops() / t_blas / 1e12,
                t_blas / t
            ),
            Ok(_) => println!("PASS {}x{}x{}", d.m, d.n, d.k),
            Err(e) => {
                println!("FAIL {e}");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        println!("✓ SUCCESS: sgemm_fast matches the CPU and cuBLAS on {} shapes", shapes.len());
        ExitCode::SUCCESS
    } else {
        println!("✗ FAILED: {failed} of {} shapes", shapes.len());
        ExitCode::FAILURE
    }
}
