//! The GPU benchmarks. Each one runs oxide's kernel and its reference on the
//! same stream, checks both results (against each other and against the CPU
//! on a sample), and only then times them: a fast wrong kernel fails loudly.

use crate::harness::{
    be, bf16_to_f32, check_close, check_identical, config_1d, de, he, random_bf16, random_f32, sample_indices, Gpu, Row,
    Target,
};
use crate::kernels::{kernels, BLOCK_1D, BLOCK_ROWS, REDUCE_BLOCK, SOFTMAX_BLOCK, TILE};
use crate::reference::{RawArgs, RawLauncher};
use cuda_core::{DeviceBuffer, LaunchConfig};
use cuda_device::half::bf16;
use std::time::Instant;

/// The kernel-versus-nvcc target of the issue: at least as fast.
const SAME_ALGORITHM: Target = Target::SpeedAtLeast(1.0);

fn row(name: &str, oxide: f64, reference: &str, reference_time: f64, target: Target, note: String) -> Row {
    Row { name: name.into(), oxide, unit: "ms", reference: reference.into(), reference_time, target, note }
}

// SAME_BUFFERS: where oxide's kernel and nvcc's write an output of their
// own, both are checked first, each in its own buffer; then both are timed
// writing oxide's buffer. Two allocations of the same size can differ in
// speed by a few tenths of a per cent (where their pages lie: the
// `*/buffers` rows time nvcc's kernel into each), as much as the gap the
// comparison is about, and it is not the kernels' doing.

/// Repeats of the kernels that run for well under a millisecond (transpose,
/// softmax): their medians move by a few tenths of a per cent between runs
/// at 20, about the gap the comparison is about.
const SHORT_REPEATS: usize = 100;

/// GB/s for `bytes` moved in `ms` milliseconds.
fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e-3) / 1e9
}

/// c = a + b for 2^28 floats; also against a device-to-device copy.
pub fn vecadd(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const N: usize = 1 << 28;
    let s = &gpu.stream;
    let (a, b) = (random_f32(N, 1), random_f32(N, 2));
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let mut c_ox = DeviceBuffer::<f32>::zeroed(s, N).map_err(de)?;
    let c_nv = DeviceBuffer::<f32>::zeroed(s, N).map_err(de)?;
    let f = gpu.nvcc.function("vecadd").map_err(de)?;
    let cfg = config_1d(N);
    let c_ox_ptr = c_ox.device_ptr();
    // SAFETY: vecadd(const float*, const float*, float*, size_t) with N-float
    // buffers (its own output, or oxide's).
    let nvcc_into = |c: u64| unsafe {
        RawArgs::new().u64(a_d.device_ptr()).u64(b_d.device_ptr()).u64(c).usize(N).launch(&f, cfg, s)
    };
    kernels::launch::vecadd(&gpu.oxide, s, cfg, &a_d, &b_d, &mut c_ox).map_err(he)?;
    nvcc_into(c_nv.device_ptr())?;
    let got = c_ox.to_host_vec(s).map_err(de)?;
    check_identical("vecadd: oxide vs nvcc", &got, &c_nv.to_host_vec(s).map_err(de)?)?;
    for i in sample_indices(N, 1 << 16) {
        if got[i] != a[i] + b[i] {
            return Err(format!("vecadd: element {i} is {} but the CPU says {}", got[i], a[i] + b[i]));
        }
    }
    // Timed on the same buffers (SAME_BUFFERS).
    let mut oxide = || kernels::launch::vecadd(&gpu.oxide, s, cfg, &a_d, &b_d, &mut c_ox).map_err(he);
    let (t_ox, t_nv) = gpu.time_pair(3, 20, &mut oxide, || nvcc_into(c_ox_ptr))?;
    // Calibration: nvcc's kernel writing oxide's output buffer against
    // writing its own, what the buffers alone would have made.
    let (t_nv_ox, t_nv_own) = gpu.time_pair(3, 20, || nvcc_into(c_ox_ptr), || nvcc_into(c_nv.device_ptr()))?;
    let mut copy = DeviceBuffer::<f32>::zeroed(s, N).map_err(de)?;
    let (t_ox_again, t_copy) = gpu.time_pair(3, 20, &mut oxide, || copy.copy_from_device(s, &a_d).map_err(de))?;
    let bytes = 12.0 * N as f64;
    let (bw_ox, bw_copy) = (gbps(bytes, t_ox_again), gbps(8.0 * N as f64, t_copy));
    Ok(vec![
        row(
            "vecadd",
            t_ox,
            "nvcc",
            t_nv,
            SAME_ALGORITHM,
            format!("{:.0} GB/s vs {:.0}", gbps(bytes, t_ox), gbps(bytes, t_nv)),
        ),
        row(
            "vecadd/buffers",
            t_nv_ox,
            "nvcc",
            t_nv_own,
            Target::None,
            "calibration: nvcc's kernel into oxide's output buffer vs its own (the rows above share one)".into(),
        ),
        // The copy's time scaled to vecadd's 12 bytes per element, so the
        // ratio is vecadd's bandwidth over the copy's.
        row(
            "vecadd/copy-bandwidth",
            t_ox_again,
            "memcpy",
            t_copy * 1.5,
            Target::SpeedAtLeast(0.8),
            format!("{bw_ox:.0} of {bw_copy:.0} GB/s (copy time ×1.5: same bytes)"),
        ),
    ])
}

/// y = alpha·x + y for 2^28 floats.
pub fn saxpy(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const N: usize = 1 << 28;
    const ALPHA: f32 = 0.75;
    let s = &gpu.stream;
    let (x, y) = (random_f32(N, 3), random_f32(N, 4));
    let x_d = DeviceBuffer::from_host(s, &x).map_err(de)?;
    let mut y_ox = DeviceBuffer::from_host(s, &y).map_err(de)?;
    let y_nv = DeviceBuffer::from_host(s, &y).map_err(de)?;
    let f = gpu.nvcc.function("saxpy").map_err(de)?;
    let cfg = config_1d(N);
    let y_ox_ptr = y_ox.device_ptr();
    let launch_oxide = |y_ox: &mut DeviceBuffer<f32>| kernels::launch::saxpy(&gpu.oxide, s, cfg, ALPHA, &x_d, y_ox).map_err(he);
    // SAFETY: saxpy(float, const float*, float*, size_t) with N-float
    // buffers (its own y, or oxide's).
    let nvcc_into = |y: u64| unsafe { RawArgs::new().f32(ALPHA).u64(x_d.device_ptr()).u64(y).usize(N).launch(&f, cfg, s) };
    // One checked run from the same y, then timing (which keeps updating y)
    // on the same buffers (SAME_BUFFERS).
    launch_oxide(&mut y_ox)?;
    nvcc_into(y_nv.device_ptr())?;
    let got = y_ox.to_host_vec(s).map_err(de)?;
    check_identical("saxpy: oxide vs nvcc", &got, &y_nv.to_host_vec(s).map_err(de)?)?;
    for i in sample_indices(N, 1 << 16) {
        let want = ALPHA.mul_add(x[i], y[i]);
        if got[i] != want {
            return Err(format!("saxpy: element {i} is {} but the CPU says {want}", got[i]));
        }
    }
    let mut oxide = || launch_oxide(&mut y_ox);
    let (t_ox, t_nv) = gpu.time_pair(3, 20, &mut oxide, || nvcc_into(y_ox_ptr))?;
    let bytes = 12.0 * N as f64;
    Ok(vec![row(
        "saxpy",
        t_ox,
        "nvcc",
        t_nv,
        SAME_ALGORITHM,
        format!("{:.0} GB/s vs {:.0}", gbps(bytes, t_ox), gbps(bytes, t_nv)),
    )])
}

/// The sum of 2^28 floats: a grid-stride block sum into one partial per
/// block (8 blocks per SM), then one block over the partials.
pub fn reduction(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const N: usize = 1 << 28;
    let s = &gpu.stream;
    let host = random_f32(N, 5);
    let cpu: f64 = host.iter().map(|&x| x as f64).sum();
    let scale: f64 = host.iter().map(|&x| x.abs() as f64).sum();
    let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
    let blocks = gpu.ctx.multiprocessor_count().map_err(de)? as usize * 8;
    let mut partial_ox = DeviceBuffer::<f32>::zeroed(s, blocks).map_err(de)?;
    let partial_nv = DeviceBuffer::<f32>::zeroed(s, blocks).map_err(de)?;
    let mut total_ox = DeviceBuffer::<f32>::zeroed(s, 1).map_err(de)?;
    let total_nv = DeviceBuffer::<f32>::zeroed(s, 1).map_err(de)?;
    let f = gpu.nvcc.function("block_sum").map_err(de)?;
    let cfg = |grid: usize| LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (REDUCE_BLOCK, 1, 1), shared_mem_bytes: 0 };
    let mut oxide = || {
        kernels::launch::block_sum(&gpu.oxide, s, cfg(blocks), &input, &mut partial_ox).map_err(he)?;
        kernels::launch::block_sum(&gpu.oxide, s, cfg(1), &partial_ox, &mut total_ox).map_err(he)
    };
    // SAFETY: block_sum(const float*, size_t, float*); In holds N floats,
    // Partial one per block of each launch.
    let mut nvcc = || unsafe {
        RawArgs::new().u64(input.device_ptr()).usize(N).u64(partial_nv.device_ptr()).launch(&f, cfg(blocks), s)?;
        RawArgs::new().u64(partial_nv.device_ptr()).usize(blocks).u64(total_nv.device_ptr()).launch(&f, cfg(1), s)
    };
    oxide()?;
    nvcc()?;
    let (t_ox, t_nv) = gpu.time_pair(3, 30, &mut oxide, &mut nvcc)?;
    for (who, total) in [("oxide", &total_ox), ("nvcc", &total_nv)] {
        let gpu_sum = total.to_host_vec(s).map_err(de)?[0] as f64;
        // f32 partial sums of 2^28 terms: far inside 1e-5 of Σ|x|.
        if !((gpu_sum - cpu).abs() <= 1e-5 * scale) {
            return Err(format!("reduction ({who}): GPU sum {gpu_sum} vs CPU {cpu} (Σ|x| = {scale})"));
        }
    }
    let bytes = 4.0 * N as f64;
    Ok(vec![row(
        "reduction",
        t_ox,
        "nvcc",
        t_nv,
        SAME_ALGORITHM,
        format!("{:.0} GB/s vs {:.0}", gbps(bytes, t_ox), gbps(bytes, t_nv)),
    )])
}

/// The launch shape of the 32×8-thread tiled kernels over a rows×cols grid
/// of 32×32 tiles.
fn tiled_config(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (cols.div_ceil(TILE) as u32, rows.div_ceil(TILE) as u32, 1),
        block_dim: (TILE as u32, BLOCK_ROWS as u32, 1),
        shared_mem_bytes: 0,
    }
}

/// An 8192×8192 transpose through 32×33 shared tiles.
pub fn transpose(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const R: usize = 8192;
    const C: usize = 8192;
    let s = &gpu.stream;
    let host = random_f32(R * C, 6);
    let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
    let mut out_ox = DeviceBuffer::<f32>::zeroed(s, R * C).map_err(de)?;
    let out_nv = DeviceBuffer::<f32>::zeroed(s, R * C).map_err(de)?;
    let f = gpu.nvcc.function("transpose").map_err(de)?;
    let cfg = tiled_config(R, C);
    let out_ox_ptr = out_ox.device_ptr();
    // SAFETY: transpose(const float*, size_t, size_t, float*) with R·C
    // floats each (its own output, or oxide's).
    let nvcc_into = |out: u64| unsafe {
        RawArgs::new().u64(input.device_ptr()).usize(R).usize(C).u64(out).launch(&f, cfg, s)
    };
    kernels::launch::transpose(&gpu.oxide, s, cfg, &input, R, C, &mut out_ox).map_err(he)?;
    nvcc_into(out_nv.device_ptr())?;
    let mut want = vec![0f32; R * C];
    for r in 0..R {
        for c in 0..C {
            want[c * R + r] = host[r * C + c];
        }
    }
    check_identical("transpose (oxide)", &out_ox.to_host_vec(s).map_err(de)?, &want)?;
    check_identical("transpose (nvcc)", &out_nv.to_host_vec(s).map_err(de)?, &want)?;
    // Timed on the same buffers (SAME_BUFFERS).
    let mut oxide = || kernels::launch::transpose(&gpu.oxide, s, cfg, &input, R, C, &mut out_ox).map_err(he);
    let (t_ox, t_nv) = gpu.time_pair(3, SHORT_REPEATS, &mut oxide, || nvcc_into(out_ox_ptr))?;
    // Calibration, as for vecadd: nvcc's kernel writing oxide's output
    // buffer against writing its own.
    let (t_nv_ox, t_nv_own) =
        gpu.time_pair(3, SHORT_REPEATS, || nvcc_into(out_ox_ptr), || nvcc_into(out_nv.device_ptr()))?;
    // The diagnostic variant (loads first), checked, then timed against the
    // same nvcc kernel in its buffer.
    let mut out_lf = DeviceBuffer::<f32>::zeroed(s, R * C).map_err(de)?;
    let out_lf_ptr = out_lf.device_ptr();
    kernels::launch::transpose_loads_first(&gpu.oxide, s, cfg, &input, R, C, &mut out_lf).map_err(he)?;
    check_identical("transpose_loads_first (oxide)", &out_lf.to_host_vec(s).map_err(de)?, &want)?;
    let mut loads_first =
        || kernels::launch::transpose_loads_first(&gpu.oxide, s, cfg, &input, R, C, &mut out_lf).map_err(he);
    let (t_lf, t_nv2) = gpu.time_pair(3, SHORT_REPEATS, &mut loads_first, || nvcc_into(out_lf_ptr))?;
    let bytes = 8.0 * (R * C) as f64;
    Ok(vec![
        row(
            "transpose",
            t_ox,
            "nvcc",
            t_nv,
            SAME_ALGORITHM,
            format!("{:.0} GB/s vs {:.0}", gbps(bytes, t_ox), gbps(bytes, t_nv)),
        ),
        row(
            "transpose/buffers",
            t_nv_ox,
            "nvcc",
            t_nv_own,
            Target::None,
            "calibration: nvcc's kernel into oxide's output buffer vs its own".into(),
        ),
        row(
            "transpose/loads-first",
            t_lf,
            "nvcc",
            t_nv2,
            Target::None,
            format!("diagnostic: oxide's loads hoisted by hand; {:.0} GB/s", gbps(bytes, t_lf)),
        ),
    ])
}

/// Row softmax of a 4096×4096 matrix, one block per row.
pub fn softmax(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const ROWS: usize = 4096;
    const COLS: usize = 4096;
    let s = &gpu.stream;
    // Values in [-8, 8): exp over a range of e^16.
    let host: Vec<f32> = random_f32(ROWS * COLS, 7).iter().map(|x| x * 8.0).collect();
    let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
    let mut out_ox = DeviceBuffer::<f32>::zeroed(s, ROWS * COLS).map_err(de)?;
    let out_nv = DeviceBuffer::<f32>::zeroed(s, ROWS * COLS).map_err(de)?;
    let f = gpu.nvcc.function("softmax").map_err(de)?;
    let cfg = LaunchConfig { grid_dim: (ROWS as u32, 1, 1), block_dim: (SOFTMAX_BLOCK, 1, 1), shared_mem_bytes: 0 };
    let out_ox_ptr = out_ox.device_ptr();
    // SAFETY: softmax(const float*, size_t, float*) with ROWS·COLS floats
    // each (its own output, or oxide's).
    let nvcc_into = |out: u64| unsafe { RawArgs::new().u64(input.device_ptr()).usize(COLS).u64(out).launch(&f, cfg, s) };
    kernels::launch::softmax(&gpu.oxide, s, cfg, &input, COLS, &mut out_ox).map_err(he)?;
    nvcc_into(out_nv.device_ptr())?;
    let got = out_ox.to_host_vec(s).map_err(de)?;
    let theirs = out_nv.to_host_vec(s).map_err(de)?;
    // Both use CUDA's expf (libdevice's __nv_expf for oxide), so they agree
    // to rounding.
    check_close("softmax: oxide vs nvcc", &got, &theirs, |i| 4e-7 * theirs[i].abs() as f64 + 1e-30)?;
    for row_index in sample_indices(ROWS, 64) {
        let x = &host[row_index * COLS..(row_index + 1) * COLS];
        let max = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let sum: f64 = x.iter().map(|&v| (v as f64 - max).exp()).sum();
        let want: Vec<f32> = x.iter().map(|&v| ((v as f64 - max).exp() / sum) as f32).collect();
        let slice = &got[row_index * COLS..(row_index + 1) * COLS];
        check_close(&format!("softmax row {row_index} (oxide vs CPU)"), slice, &want, |i| 1e-5 * want[i].abs() as f64)?;
    }
    // Timed on the same buffers (SAME_BUFFERS).
    let mut oxide = || kernels::launch::softmax(&gpu.oxide, s, cfg, &input, COLS, &mut out_ox).map_err(he);
    let (t_ox, t_nv) = gpu.time_pair(3, SHORT_REPEATS, &mut oxide, || nvcc_into(out_ox_ptr))?;
    let bytes = 8.0 * (ROWS * COLS) as f64;
    Ok(vec![row(
        "softmax",
        t_ox,
        "nvcc",
        t_nv,
        SAME_ALGORITHM,
        format!("{:.0} GB/s vs {:.0} (2 reads, 1 write)", gbps(1.5 * bytes, t_ox), gbps(1.5 * bytes, t_nv)),
    )])
}

/// The classical bound on the error of a length-k dot product in f32 with
/// any order of additions: γ_k = k·u / (1 − k·u), u = 2⁻²⁴.
fn gamma(k: usize) -> f64 {
    let ku = k as f64 * 2f64.powi(-24);
    ku / (1.0 - ku)
}

/// The relative rounding error of a result stored as bf16, with room: half
/// an ulp is 2⁻⁹ of the value, and 2⁻⁸ of the exact sum covers it plus the
/// accumulation error it is rounded with.
const BF16_RESULT: f64 = 1.0 / 256.0;

/// Checks sampled elements of a row-major m×n product `c` = `a`·`b` (`a`
/// indexed m×k, `b` indexed k×n) against the CPU (in f64):
/// |c − c_ref| ≤ `slack`·γ_k·Σ|a·b| + `result_rounding`·|c_ref| (0 for f32
/// results, [`BF16_RESULT`] for bf16 ones).
fn check_gemm_sample(
    what: &str,
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize) -> f64,
    b: impl Fn(usize) -> f64,
    slack: f64,
    result_rounding: f64,
) -> Result<(), String> {
    for index in sample_indices(m * n, 256) {
        let (i, j) = (index / n, index % n);
        let (mut sum, mut abs) = (0f64, 0f64);
        for p in 0..k {
            let product = a(i * k + p) * b(p * n + j);
            sum += product;
            abs += product.abs();
        }
        let error = (c[index] as f64 - sum).abs();
        let bound = slack * gamma(k) * abs + result_rounding * sum.abs();
        if !(error <= bound) {
            return Err(format!(
                "{what}: C[{i}][{j}] is {} but the CPU says {sum} (error {error:e}, bound {bound:e})",
                c[index]
            ));
        }
    }
    Ok(())
}

/// 4096³ f32 GEMM with 32×32 shared tiles; also cuBLAS's sgemm.
pub fn sgemm(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const M: usize = 4096;
    const N: usize = 4096;
    const K: usize = 4096;
    ragged_check(gpu)?;
    let s = &gpu.stream;
    let (a, b) = (random_f32(M * K, 8), random_f32(K * N, 9));
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let mut c_ox = DeviceBuffer::<f32>::zeroed(s, M * N).map_err(de)?;
    let c_nv = DeviceBuffer::<f32>::zeroed(s, M * N).map_err(de)?;
    let mut c_bl = DeviceBuffer::<f32>::zeroed(s, M * N).map_err(de)?;
    let f = gpu.nvcc.function("sgemm").map_err(de)?;
    let cfg = tiled_config(M, N);
    let mut oxide = || kernels::launch::sgemm(&gpu.oxide, s, cfg, M, N, K, &a_d, &b_d, &mut c_ox).map_err(he);
    // SAFETY: sgemm(size_t, size_t, size_t, const float*, const float*, float*).
    let mut nvcc = || unsafe {
        RawArgs::new()
            .usize(M)
            .usize(N)
            .usize(K)
            .u64(a_d.device_ptr())
            .u64(b_d.device_ptr())
            .u64(c_nv.device_ptr())
            .launch(&f, cfg, s)
    };
    oxide()?;
    nvcc()?;
    let (t_ox, t_nv) = gpu.time_pair(1, 7, &mut oxide, &mut nvcc)?;
    let got = c_ox.to_host_vec(s).map_err(de)?;
    let dims = (M, N, K);
    check_gemm_sample("sgemm (oxide)", &got, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
    let theirs = c_nv.to_host_vec(s).map_err(de)?;
    check_gemm_sample("sgemm (nvcc)", &theirs, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
    let flops = 2.0 * (M * N * K) as f64;
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let mut c_lf = DeviceBuffer::<f32>::zeroed(s, M * N).map_err(de)?;
    let mut loads_first =
        || kernels::launch::sgemm_loads_first(&gpu.oxide, s, cfg, M, N, K, &a_d, &b_d, &mut c_lf).map_err(he);
    let (t_lf, t_nv2) = gpu.time_pair(1, 7, &mut loads_first, &mut nvcc)?;
    check_gemm_sample("sgemm_loads_first (oxide)", &c_lf.to_host_vec(s).map_err(de)?, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
    let mut rows = vec![
        row(
            "sgemm",
            t_ox,
            "nvcc",
            t_nv,
            SAME_ALGORITHM,
            format!("{:.2} TFLOP/s vs {:.2}", tflops(t_ox), tflops(t_nv)),
        ),
        row(
            "sgemm/loads-first",
            t_lf,
            "nvcc",
            t_nv2,
            Target::None,
            format!("diagnostic: oxide's loads hoisted by hand; {:.2} TFLOP/s", tflops(t_lf)),
        ),
    ];
    match gpu.cublas() {
        Ok(blas) => {
            // Row-major C (M×N) = A (M×K) · B (K×N) in full f32 (cublasGemmEx,
            // CUBLAS_COMPUTE_32F: cuBLAS's sgemm).
            let cfg = cuda_blas::GemmConfig::<f32>::row_major(M, N, K);
            let mut run = || blas.gemm(&cfg, a_d.as_slice(), b_d.as_slice(), c_bl.as_slice_mut()).map_err(be);
            run()?;
            let t_bl = gpu.time_ms(2, 10, &mut run)?;
            let theirs = c_bl.to_host_vec(s).map_err(de)?;
            check_gemm_sample("sgemm (cuBLAS)", &theirs, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
            rows.push(row(
                "sgemm/cublas",
                t_ox,
                "cuBLAS",
                t_bl,
                Target::None,
                format!("{:.2} TFLOP/s vs {:.2} (cuBLAS: another algorithm)", tflops(t_ox), tflops(t_bl)),
            ));
        }
        Err(e) => eprintln!("sgemm/cublas: skipped: {e}"),
    }
    Ok(rows)
}

/// A string error from sgemm_fast's host side.
fn se(e: sgemm_fast::Error) -> String {
    e.to_string()
}

/// examples/sgemm_fast's register-blocked SGEMM (128×128×8 tiles, 8×8 per
/// thread, float4 loads, register-prefetch double buffering) at 4096³
/// against cuBLAS's sgemm (target ≥ 0.90) and against its nvcc twin (the
/// compiler check, ≥ 1.00). First a ragged shape (every block on the
/// checked edge path, plus interior ones): oxide against the CPU and,
/// element by element, the twin.
pub fn sgemm_fast(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let s = &gpu.stream;
    let f = gpu.nvcc.function("sgemm_fast").map_err(de)?;
    // SAFETY (both launches): sgemm_fast(size_t, size_t, size_t, const
    // float*, const float*, float*) with buffers of m·k, k·n, m·n floats.
    let nvcc_launch = |d: sgemm_fast::Dims, a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &DeviceBuffer<f32>| unsafe {
        RawArgs::new()
            .usize(d.m)
            .usize(d.n)
            .usize(d.k)
            .u64(a.device_ptr())
            .u64(b.device_ptr())
            .u64(c.device_ptr())
            .launch(&f, sgemm_fast::config(d), s)
    };
    {
        let d = sgemm_fast::Dims { m: 1000, n: 1111, k: 999 };
        let (a, b) = (random_f32(d.m * d.k, 40), random_f32(d.k * d.n, 41));
        let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
        let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
        let mut c_ox = DeviceBuffer::<f32>::zeroed(s, d.m * d.n).map_err(de)?;
        let c_nv = DeviceBuffer::<f32>::zeroed(s, d.m * d.n).map_err(de)?;
        sgemm_fast::launch(&gpu.oxide, s, d, &a_d, &b_d, &mut c_ox).map_err(se)?;
        nvcc_launch(d, &a_d, &b_d, &c_nv)?;
        let got = c_ox.to_host_vec(s).map_err(de)?;
        let dims = (d.m, d.n, d.k);
        check_gemm_sample("sgemm_fast 1000×1111×999 (oxide)", &got, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
        // The same algorithm, so the same sums in the same order.
        check_close("sgemm_fast 1000×1111×999: oxide vs nvcc", &got, &c_nv.to_host_vec(s).map_err(de)?, |_| 0.0)?;
    }
    const SIZE: usize = 4096;
    let d = sgemm_fast::Dims { m: SIZE, n: SIZE, k: SIZE };
    let (a, b) = (random_f32(SIZE * SIZE, 8), random_f32(SIZE * SIZE, 9));
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let mut c_ox = DeviceBuffer::<f32>::zeroed(s, SIZE * SIZE).map_err(de)?;
    let c_nv = DeviceBuffer::<f32>::zeroed(s, SIZE * SIZE).map_err(de)?;
    let mut c_bl = DeviceBuffer::<f32>::zeroed(s, SIZE * SIZE).map_err(de)?;
    sgemm_fast::launch(&gpu.oxide, s, d, &a_d, &b_d, &mut c_ox).map_err(se)?;
    nvcc_launch(d, &a_d, &b_d, &c_nv)?;
    let dims = (d.m, d.n, d.k);
    let ours = c_ox.to_host_vec(s).map_err(de)?;
    check_gemm_sample("sgemm_fast (oxide)", &ours, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
    check_close("sgemm_fast: oxide vs nvcc", &ours, &c_nv.to_host_vec(s).map_err(de)?, |_| 0.0)?;
    let tflops = |ms: f64| d.flops() / (ms * 1e-3) / 1e12;
    let mut oxide = || sgemm_fast::launch(&gpu.oxide, s, d, &a_d, &b_d, &mut c_ox).map_err(se);
    let mut nvcc = || nvcc_launch(d, &a_d, &b_d, &c_nv);
    let mut rows = Vec::new();
    match gpu.cublas() {
        Ok(blas) => {
            let cfg = cuda_blas::GemmConfig::<f32>::row_major(SIZE, SIZE, SIZE);
            blas.gemm(&cfg, a_d.as_slice(), b_d.as_slice(), c_bl.as_slice_mut()).map_err(be)?;
            let theirs = c_bl.to_host_vec(s).map_err(de)?;
            check_gemm_sample("sgemm_fast (cuBLAS)", &theirs, dims, |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
            let mut cublas = || blas.gemm(&cfg, a_d.as_slice(), b_d.as_slice(), c_bl.as_slice_mut()).map_err(be);
            let (t_ox, t_bl) = gpu.time_pair(3, 20, &mut oxide, &mut cublas)?;
            rows.push(row(
                "sgemm_fast",
                t_ox,
                "cuBLAS",
                t_bl,
                Target::SpeedAtLeast(0.90),
                format!("{:.2} TFLOP/s vs {:.2} (f32 FMA, no tensor cores)", tflops(t_ox), tflops(t_bl)),
            ));
        }
        Err(e) => eprintln!("sgemm_fast: cuBLAS skipped: {e}"),
    }
    let (t_ox, t_nv) = gpu.time_pair(3, 20, &mut oxide, &mut nvcc)?;
    rows.push(row(
        "sgemm_fast/nvcc",
        t_ox,
        "nvcc",
        t_nv,
        SAME_ALGORITHM,
        format!("{:.2} TFLOP/s vs {:.2} (the same algorithm in CUDA C++)", tflops(t_ox), tflops(t_nv)),
    ));
    Ok(rows)
}

/// bf16 bit patterns stored in pairs (the low half first), widened to `f32`.
fn unpack_bf16_pairs(words: &[u32]) -> Vec<f32> {
    unpack_pairs(words, bf16_to_f32)
}

/// The values of a C stored as pairs of 16-bit elements in u32 words (the
/// low half first), each decoded by `value`.
fn unpack_pairs(words: &[u32], value: impl Fn(u16) -> f32) -> Vec<f32> {
    words.iter().flat_map(|&w| [value(w as u16), value((w >> 16) as u16)]).collect()
}

/// A string error from the wgmma GEMM's host side.
fn ge(e: gemm_bf16::Error) -> String {
    e.to_string()
}

/// One square bf16 GEMM size, three comparisons on the same inputs (A and B:
/// size² bf16 each):
/// * `gemm_bf16_<size>`: oxide's wgmma GEMM (`gemm_bf16::gemm_ws` of
///   examples/gemm_bf16: TMA, mbarriers, warp specialisation) against
///   cuBLAS computing the same thing, C = A·Bᵀ with B stored n×k, f32
///   accumulation, bf16 results. Every element is checked against cuBLAS,
///   a sample against the CPU.
/// * `gemm_bf16_<size>/pairs`: the same GEMM under `Schedule::TilePairs`
///   (clusters of two blocks sharing B by TMA multicast) against cuBLAS,
///   every element checked against cuBLAS; not the default schedule, so
///   its target (within 5 % of cuBLAS) guards it. Left out when
///   `$OXIDE_GEMM_SCHEDULE` picks the schedule of the first row.
/// * `gemm_bf16_<size>/tiled`: the simple tiled kernel (32×32 shared tiles,
///   f32 FMA, no tensor cores) against its nvcc twin, C = A·B with B stored
///   k×n and f32 results, both checked against the CPU on a sample.
fn gemm_bf16(gpu: &Gpu, size: usize, seed: u64) -> Result<Vec<Row>, String> {
    gemm_bf16_shape(gpu, (size, size, size), &format!("gemm_bf16_{size}"), true, seed)
}

/// The comparisons of [`gemm_bf16()`] for one M×N×K shape under `name`; the
/// tiled kernel against nvcc only when `with_tiled`.
fn gemm_bf16_shape(
    gpu: &Gpu,
    (m, n, k): (usize, usize, usize),
    name: &str,
    with_tiled: bool,
    seed: u64,
) -> Result<Vec<Row>, String> {
    let s = &gpu.stream;
    let (a, b) = (random_bf16(m * k, seed), random_bf16(k * n, seed + 1));
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let dims = (m, n, k);
    let name = name.to_string();
    let flops = 2.0 * (m * n * k) as f64;
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let fa = |i: usize| bf16_to_f32(a[i]) as f64;
    let mut rows = Vec::new();

    // The wgmma GEMM against cuBLAS. check_gemm_sample indexes B as k×n
    // (p·n + j); here B is n×k, so element (p, j) of the product's B is
    // b[j·k + p].
    let fb_t = |i: usize| bf16_to_f32(b[(i % n) * k + i / n]) as f64;
    let shape = gemm_bf16::Dims { m: m as u32, n: n as u32, k: k as u32 };
    let ws = gemm_bf16::Gemm::new(gemm_bf16::Kernel::Ws, &gpu.oxide, s, &a_d, &b_d, shape).map_err(ge)?;
    let forced = gemm_schedule()?;
    let ws = match forced {
        Some(schedule) => ws.with_schedule(s, schedule).map_err(ge)?,
        None => ws,
    };
    let mut c_ws = DeviceBuffer::<u32>::zeroed(s, m * n / 2).map_err(de)?;
    ws.launch(&gpu.oxide, s, &mut c_ws).map_err(ge)?;
    let ours = unpack_bf16_pairs(&c_ws.to_host_vec(s).map_err(de)?);
    // Tensor cores accumulate in f32 but may round products and partial
    // sums differently (slack 8, as for cuBLAS below); the bf16 result adds
    // one rounding (BF16_RESULT). A wrong element is off by about 1/√k of
    // Σ|a·b|, far above this.
    check_gemm_sample(&format!("{name} (oxide wgmma)"), &ours, dims, fa, fb_t, 8.0, BF16_RESULT)?;
    match gpu.cublas() {
        Ok(blas) => {
            // The same bits as typed bf16 buffers for cuda-blas (oxide's GEMM
            // takes them as u16).
            let typed = |bits: &[u16]| bits.iter().map(|&x| bf16::from_bits(x)).collect::<Vec<_>>();
            let a_bl = DeviceBuffer::from_host(s, &typed(&a)).map_err(de)?;
            let b_bl = DeviceBuffer::from_host(s, &typed(&b)).map_err(de)?;
            let mut c_bl = DeviceBuffer::<bf16>::zeroed(s, m * n).map_err(de)?;
            // Row-major C (m×n, bf16) = A (m×k) · Bᵀ with B stored n×k, f32
            // accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F): the layout of
            // oxide's wgmma GEMM.
            let cfg = cuda_blas::GemmConfig::<f32>::row_major(m, n, k).transpose_b();
            let run_cublas = |c: &mut DeviceBuffer<bf16>| {
                blas.gemm(&cfg, a_bl.as_slice(), b_bl.as_slice(), c.as_slice_mut()).map_err(be)
            };
            run_cublas(&mut c_bl)?;
            let theirs: Vec<f32> = c_bl.to_host_vec(s).map_err(de)?.into_iter().map(bf16::to_f32).collect();
            let mut cublas = || run_cublas(&mut c_bl);
            check_gemm_sample(&format!("{name} (cuBLAS)"), &theirs, dims, fa, fb_t, 8.0, BF16_RESULT)?;
            // One wgmma GEMM (its result `ours`, written to `c`) against
            // cuBLAS: every element compared, one bf16 rounding on each
            // side plus the order of the f32 sums, 2⁻⁶ relative (absolute
            // below 1); then the two timed in turn.
            let mut versus_cublas = |row_name: &str,
                                     gemm: &gemm_bf16::Gemm<'_>,
                                     c: &mut DeviceBuffer<u32>,
                                     ours: &[f32],
                                     target: Target,
                                     what: String|
             -> Result<Row, String> {
                check_close(&format!("{row_name}: oxide wgmma vs cuBLAS"), ours, &theirs, |i| {
                    (theirs[i].abs() as f64).max(1.0) / 64.0
                })?;
                let mut oxide = || gemm.launch(&gpu.oxide, s, &mut *c).map_err(ge);
                let (t_ox, t_bl) = gpu.time_pair(3, 20, &mut oxide, &mut cublas)?;
                let note = format!(
                    "{:.1} TFLOP/s vs {:.1}: {:.1}% of cuBLAS ({what})",
                    tflops(t_ox),
                    tflops(t_bl),
                    100.0 * t_bl / t_ox
                );
                Ok(row(row_name, t_ox, "cuBLAS", t_bl, target, note))
            };
            let what = format!("wgmma, TMA, 128×256 tiles, {}, bf16 out", schedule_name(ws.schedule()));
            rows.push(versus_cublas(&name, &ws, &mut c_ws, &ours, Target::None, what)?);
            // The multicast pairs as a row of their own on the square
            // shapes, whatever the default schedule: a regression in them
            // (their stage release once halved their speed) shows as a
            // missed target.
            let pairs = gemm_bf16::Schedule::TilePairs;
            if with_tiled && forced.is_none() && ws.schedule() != pairs && pairs.check(shape).is_ok() {
                let ws_pairs = gemm_bf16::Gemm::new(gemm_bf16::Kernel::Ws, &gpu.oxide, s, &a_d, &b_d, shape)
                    .and_then(|g| g.with_schedule(s, pairs))
                    .map_err(ge)?;
                let mut c_pairs = DeviceBuffer::<u32>::zeroed(s, m * n / 2).map_err(de)?;
                ws_pairs.launch(&gpu.oxide, s, &mut c_pairs).map_err(ge)?;
                let ours_pairs = unpack_bf16_pairs(&c_pairs.to_host_vec(s).map_err(de)?);
                let what = format!("{}: a guard, not the default", schedule_name(pairs));
                let target = Target::SpeedAtLeast(0.95);
                rows.push(versus_cublas(&format!("{name}/pairs"), &ws_pairs, &mut c_pairs, &ours_pairs, target, what)?);
            }
        }
        Err(e) => {
            let t_ox = gpu.time_ms(3, 20, || ws.launch(&gpu.oxide, s, &mut c_ws).map_err(ge))?;
            eprintln!("{name}: cuBLAS skipped ({e}); oxide wgmma: {t_ox:.3} ms, {:.1} TFLOP/s", tflops(t_ox));
        }
    }

    if !with_tiled {
        return Ok(rows);
    }
    // The simple tiled kernel against its nvcc twin.
    let mut c_ox = DeviceBuffer::<f32>::zeroed(s, m * n).map_err(de)?;
    let c_nv = DeviceBuffer::<f32>::zeroed(s, m * n).map_err(de)?;
    let repeats = if m * n * k > 4096 * 4096 * 4096 { 3 } else { 5 };
    let f = gpu.nvcc.function("gemm_bf16").map_err(de)?;
    let cfg = tiled_config(m, n);
    // SAFETY: gemm_bf16(size_t, size_t, size_t, const uint16_t*, const uint16_t*, float*).
    let mut nvcc = || unsafe {
        RawArgs::new()
            .usize(m)
            .usize(n)
            .usize(k)
            .u64(a_d.device_ptr())
            .u64(b_d.device_ptr())
            .u64(c_nv.device_ptr())
            .launch(&f, cfg, s)
    };
    kernels::launch::gemm_bf16(&gpu.oxide, s, cfg, m, n, k, &a_d, &b_d, &mut c_ox).map_err(he)?;
    nvcc()?;
    let fb = |i: usize| bf16_to_f32(b[i]) as f64;
    check_gemm_sample(&format!("{name}/tiled (oxide)"), &c_ox.to_host_vec(s).map_err(de)?, dims, fa, fb, 1.0, 0.0)?;
    check_gemm_sample(&format!("{name}/tiled (nvcc)"), &c_nv.to_host_vec(s).map_err(de)?, dims, fa, fb, 1.0, 0.0)?;
    let mut tiled =
        || kernels::launch::gemm_bf16(&gpu.oxide, s, cfg, m, n, k, &a_d, &b_d, &mut c_ox).map_err(he);
    let (t_ox, t_nv) = gpu.time_pair(1, repeats, &mut tiled, &mut nvcc)?;
    rows.push(row(
        &format!("{name}/tiled"),
        t_ox,
        "nvcc",
        t_nv,
        SAME_ALGORITHM,
        format!("{:.1} TFLOP/s vs {:.1} (simple tiled kernel, f32 FMA, vs its nvcc twin)", tflops(t_ox), tflops(t_nv)),
    ));
    Ok(rows)
}

/// bf16 GEMM, 4096³.
pub fn gemm_bf16_4096(gpu: &Gpu) -> Result<Vec<Row>, String> {
    gemm_bf16(gpu, 4096, 10)
}

/// bf16 GEMM, 8192³.
pub fn gemm_bf16_8192(gpu: &Gpu) -> Result<Vec<Row>, String> {
    gemm_bf16(gpu, 8192, 20)
}

/// bf16 GEMM on the non-square shapes of a transformer's layers (M×N×K):
/// an MLP's up-projection (4096 tokens, 4096 → 14336) and a narrow output
/// (8192 tokens, 8192 → 1024, where a wave of tiles does not fill the
/// GPU's multiprocessors evenly). The wgmma kernel against cuBLAS only.
pub fn gemm_bf16_llm(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, &(m, n, k)) in [(4096, 14336, 4096), (8192, 1024, 8192)].iter().enumerate() {
        rows.extend(gemm_bf16_shape(gpu, (m, n, k), &format!("gemm_bf16_{m}x{n}x{k}"), false, 30 + 2 * i as u64)?);
    }
    Ok(rows)
}

/// One square f16 GEMM size (`gemm_f16_<size>`): oxide's `gemm_ws_f16`
/// (examples/gemm_bf16: gemm_ws with the f16 wgmma, f16 C) against cuBLAS
/// (`cublasGemmEx`, CUDA_R_16F in and out, CUBLAS_COMPUTE_32F) on the same
/// operands, C = A·Bᵀ with B stored n×k. Both checked on a sample against
/// the CPU, then every element against each other (one f16 rounding on
/// each side plus the order of the f32 sums, 2⁻⁶ relative, absolute below
/// 1); the ratio is printed without a target, as the bf16 rows'.
fn gemm_f16(gpu: &Gpu, size: usize, seed: u64) -> Result<Vec<Row>, String> {
    use cuda_device::half::f16;
    let (m, n, k) = (size, size, size);
    let s = &gpu.stream;
    // The bf16 generator's values in [-1, 1), rounded to f16 (exact: a
    // bf16 in that range has fewer mantissa bits than an f16).
    let values = |len: usize, seed: u64| -> Vec<f16> {
        random_bf16(len, seed).into_iter().map(|h| f16::from_f32(bf16_to_f32(h))).collect()
    };
    let (a, b) = (values(m * k, seed), values(n * k, seed + 1));
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let a_d = DeviceBuffer::from_host(s, &bits(&a)).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &bits(&b)).map_err(de)?;
    let name = format!("gemm_f16_{size}");
    let flops = 2.0 * (m * n * k) as f64;
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let fa = |i: usize| a[i].to_f32() as f64;
    // check_gemm_sample indexes B as k×n; B is stored n×k.
    let fb_t = |i: usize| b[(i % n) * k + i / n].to_f32() as f64;
    let shape = gemm_bf16::Dims { m: m as u32, n: n as u32, k: k as u32 };
    let ours_gemm = gemm_bf16::Gemm::with_type(gemm_bf16::Kernel::Ws, gemm_bf16::HalfType::F16, &gpu.oxide, s, &a_d, &b_d, shape)
        .map_err(ge)?;
    let ours_gemm = match gemm_schedule()? {
        Some(schedule) => ours_gemm.with_schedule(s, schedule).map_err(ge)?,
        None => ours_gemm,
    };
    let mut c_ox = DeviceBuffer::<u32>::zeroed(s, m * n / 2).map_err(de)?;
    ours_gemm.launch(&gpu.oxide, s, &mut c_ox).map_err(ge)?;
    let ours = unpack_pairs(&c_ox.to_host_vec(s).map_err(de)?, |h| f16::from_bits(h).to_f32());
    // An f16 result is rounded to within 2⁻¹¹ relative (bf16: 2⁻⁸).
    let f16_result = BF16_RESULT / 8.0;
    check_gemm_sample(&format!("{name} (oxide wgmma)"), &ours, (m, n, k), fa, fb_t, 8.0, f16_result)?;
    let mut oxide = || ours_gemm.launch(&gpu.oxide, s, &mut c_ox).map_err(ge);
    let blas = match gpu.cublas() {
        Ok(blas) => blas,
        Err(e) => {
            let t_ox = gpu.time_ms(3, 20, &mut oxide)?;
            eprintln!("{name}: cuBLAS skipped ({e}); oxide wgmma: {t_ox:.3} ms, {:.1} TFLOP/s", tflops(t_ox));
            return Ok(Vec::new());
        }
    };
    let a_bl = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_bl = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let mut c_bl = DeviceBuffer::<f16>::zeroed(s, m * n).map_err(de)?;
    let cfg = cuda_blas::GemmConfig::<f32>::row_major(m, n, k).transpose_b();
    let run_cublas =
        |c: &mut DeviceBuffer<f16>| blas.gemm(&cfg, a_bl.as_slice(), b_bl.as_slice(), c.as_slice_mut()).map_err(be);
    run_cublas(&mut c_bl)?;
    let theirs: Vec<f32> = c_bl.to_host_vec(s).map_err(de)?.into_iter().map(f16::to_f32).collect();
    check_gemm_sample(&format!("{name} (cuBLAS)"), &theirs, (m, n, k), fa, fb_t, 8.0, f16_result)?;
    check_close(&format!("{name}: oxide wgmma vs cuBLAS"), &ours, &theirs, |i| (theirs[i].abs() as f64).max(1.0) / 64.0)?;
    let mut cublas = || run_cublas(&mut c_bl);
    let (t_ox, t_bl) = gpu.time_pair(3, 20, &mut oxide, &mut cublas)?;
    Ok(vec![row(
        &name,
        t_ox,
        "cuBLAS",
        t_bl,
        Target::None,
        format!(
            "{:.1} TFLOP/s vs {:.1}: f16 in and out (wgmma, TMA, 128×256 tiles, {})",
            tflops(t_ox),
            tflops(t_bl),
            schedule_name(ours_gemm.schedule()),
        ),
    )])
}

/// f16 GEMM, 4096³ and 8192³, against cuBLAS.
pub fn gemm_f16_rows(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let mut rows = gemm_f16(gpu, 4096, 50)?;
    rows.extend(gemm_f16(gpu, 8192, 60)?);
    Ok(rows)
}

/// Names the variable that picks the persistent GEMMs' schedule
/// (`whole`, `stream-k`, `stream-k-only`, `pairs` or `split`; without it, the
/// shape's default).
const GEMM_SCHEDULE_ENV: &str = "OXIDE_GEMM_SCHEDULE";

/// The schedule `$OXIDE_GEMM_SCHEDULE` asks for, if any.
fn gemm_schedule() -> Result<Option<gemm_bf16::Schedule>, String> {
    match std::env::var(GEMM_SCHEDULE_ENV).ok().as_deref() {
        None | Some("") => Ok(None),
        Some("whole") => Ok(Some(gemm_bf16::Schedule::WholeTiles)),
        Some("stream-k") => Ok(Some(gemm_bf16::Schedule::StreamK)),
        Some("stream-k-only") => Ok(Some(gemm_bf16::Schedule::StreamKOnly)),
        Some("pairs") => Ok(Some(gemm_bf16::Schedule::TilePairs)),
        Some("split") => Ok(Some(gemm_bf16::Schedule::SplitTail)),
        Some(other) => Err(format!("{GEMM_SCHEDULE_ENV}={other}: expected `whole`, `stream-k`, `stream-k-only`, `pairs` or `split`")),
    }
}

/// A schedule as the rows' notes name it.
fn schedule_name(schedule: gemm_bf16::Schedule) -> &'static str {
    match schedule {
        gemm_bf16::Schedule::WholeTiles => "whole tiles",
        gemm_bf16::Schedule::StreamK => "stream-K",
        gemm_bf16::Schedule::StreamKOnly => "stream-K only",
        gemm_bf16::Schedule::TilePairs => "tile pairs, B multicast",
        gemm_bf16::Schedule::SplitTail => "whole tiles, the last wave split along K",
    }
}

/// The type of an FP8 product's C in the `gemm_fp8*` rows.
#[derive(Clone, Copy, PartialEq)]
enum Fp8Output {
    /// bf16 (`gemm_fp8_<size>`: `GemmFp8::launch`).
    Bf16,
    /// f32 (`gemm_fp8_f32_<size>`: `GemmFp8::launch_f32`).
    F32,
}

/// One square FP8 GEMM size (`gemm_fp8_<size>`, `gemm_fp8_f32_<size>`):
/// oxide's `gemm_fp8_ws` or `gemm_fp8_ws_f32` (examples/gemm_bf16:
/// gemm_ws's pipeline with the e4m3 wgmma) against cuBLASLt's FP8 matmul
/// (cuda-blas `BlasLt::matmul_fp8`) on the same operands: C (bf16 or f32,
/// m×n) = scale_a·scale_b·A·Bᵀ with A m×k and B n×k e4m3, per-tensor
/// scales in device memory. Both are checked on a sample against the CPU
/// (the FP8 tensor cores accumulate with fewer bits than f32: the bound is
/// 2⁻¹¹·Σ|a·b| plus a bf16 C's rounding, still a few times below the
/// error of one dropped K step of 128) and against each other on every
/// element.
fn gemm_fp8(gpu: &Gpu, size: usize, seed: u64, output: Fp8Output) -> Result<Vec<Row>, String> {
    use cuda_device::half::f8e4m3;
    let (m, n, k) = (size, size, size);
    let s = &gpu.stream;
    let e4m3 = |len: usize, seed: u64| -> Vec<f8e4m3> {
        random_bf16(len, seed).into_iter().map(|h| f8e4m3::from_f32(4.0 * bf16_to_f32(h))).collect()
    };
    let (a, b) = (e4m3(m * k, seed), e4m3(n * k, seed + 1));
    let (scale_a, scale_b) = (0.5f32, 0.125f32);
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let sa = DeviceBuffer::from_host(s, &[scale_a]).map_err(de)?;
    let sb = DeviceBuffer::from_host(s, &[scale_b]).map_err(de)?;
    let (name, result_rounding) = match output {
        Fp8Output::Bf16 => (format!("gemm_fp8_{size}"), BF16_RESULT),
        Fp8Output::F32 => (format!("gemm_fp8_f32_{size}"), 0.0),
    };
    let flops = 2.0 * (m * n * k) as f64;
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let factor = (scale_a * scale_b) as f64;
    let fa = |i: usize| a[i].to_f32() as f64 * factor;
    // check_gemm_sample indexes B as k×n; B is stored n×k.
    let fb_t = |i: usize| b[(i % n) * k + i / n].to_f32() as f64;
    let slack = (1.0 / 2048.0) / gamma(k);
    let shape = gemm_bf16::Dims { m: m as u32, n: n as u32, k: k as u32 };
    let ours_gemm =
        gemm_bf16::GemmFp8::new(&gpu.oxide, s, &a_d, &b_d, gemm_bf16::Fp8Scales { a: &sa, b: &sb }, shape).map_err(ge)?;
    let ours_gemm = match gemm_schedule()? {
        Some(schedule) => ours_gemm.with_schedule(s, schedule).map_err(ge)?,
        None => ours_gemm,
    };
    // Both C buffers stay allocated; a row launches into its type's.
    let mut c_ox = DeviceBuffer::<u32>::zeroed(s, if output == Fp8Output::Bf16 { m * n / 2 } else { 0 }).map_err(de)?;
    let mut c_ox32 = DeviceBuffer::<f32>::zeroed(s, if output == Fp8Output::F32 { m * n } else { 0 }).map_err(de)?;
    let launch_ours = |c: &mut DeviceBuffer<u32>, c32: &mut DeviceBuffer<f32>| match output {
        Fp8Output::Bf16 => ours_gemm.launch(&gpu.oxide, s, c).map_err(ge),
        Fp8Output::F32 => ours_gemm.launch_f32(&gpu.oxide, s, c32).map_err(ge),
    };
    launch_ours(&mut c_ox, &mut c_ox32)?;
    let ours = match output {
        Fp8Output::Bf16 => unpack_bf16_pairs(&c_ox.to_host_vec(s).map_err(de)?),
        Fp8Output::F32 => c_ox32.to_host_vec(s).map_err(de)?,
    };
    check_gemm_sample(&format!("{name} (oxide)"), &ours, (m, n, k), fa, fb_t, slack, result_rounding)?;
    let lt = cuda_blas::BlasLt::new(s).map_err(be);
    let mut oxide = || launch_ours(&mut c_ox, &mut c_ox32);
    let lt = match lt {
        Ok(lt) => lt,
        Err(e) => {
            let t_ox = gpu.time_ms(3, 20, &mut oxide)?;
            eprintln!("{name}: cuBLASLt skipped ({e}); oxide: {t_ox:.3} ms, {:.1} TFLOP/s", tflops(t_ox));
            return Ok(Vec::new());
        }
    };
    let mut c_lt = DeviceBuffer::<bf16>::zeroed(s, if output == Fp8Output::Bf16 { m * n } else { 0 }).map_err(de)?;
    let mut c_lt32 = DeviceBuffer::<f32>::zeroed(s, if output == Fp8Output::F32 { m * n } else { 0 }).map_err(de)?;
    let cfg = cuda_blas::GemmConfig::<f32>::row_major(m, n, k).transpose_b();
    let scales = cuda_blas::Fp8Scales::new(&sa, &sb);
    let launch_theirs = |c: &mut DeviceBuffer<bf16>, c32: &mut DeviceBuffer<f32>| {
        match output {
            Fp8Output::Bf16 => lt.matmul_fp8(&cfg, scales, cuda_blas::Epilogue::None, a_d.as_slice(), b_d.as_slice(), c.as_slice_mut()),
            Fp8Output::F32 => lt.matmul_fp8(&cfg, scales, cuda_blas::Epilogue::None, a_d.as_slice(), b_d.as_slice(), c32.as_slice_mut()),
        }
        .map_err(be)
    };
    launch_theirs(&mut c_lt, &mut c_lt32)?;
    let theirs: Vec<f32> = match output {
        Fp8Output::Bf16 => c_lt.to_host_vec(s).map_err(de)?.into_iter().map(bf16::to_f32).collect(),
        Fp8Output::F32 => c_lt32.to_host_vec(s).map_err(de)?,
    };
    check_gemm_sample(&format!("{name} (cuBLASLt)"), &theirs, (m, n, k), fa, fb_t, slack, result_rounding)?;
    // Every element: both sides' FP8 accumulation (and bf16 rounding), 2⁻⁵
    // of the larger of the element and the result's RMS (a wrong tile is
    // off by about the RMS).
    let rms = (theirs.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>() / theirs.len() as f64).sqrt();
    check_close(&format!("{name}: oxide vs cuBLASLt"), &ours, &theirs, |i| (theirs[i].abs() as f64).max(rms) / 32.0)?;
    let mut cublaslt = || launch_theirs(&mut c_lt, &mut c_lt32);
    let (t_ox, t_lt) = gpu.time_pair(3, 20, &mut oxide, &mut cublaslt)?;
    Ok(vec![row(
        &name,
        t_ox,
        "cuBLASLt",
        t_lt,
        Target::SpeedAtLeast(0.95),
        format!(
            "{:.1} TFLOP/s vs {:.1}: e4m3 in, per-tensor scales, {} out (wgmma k32, TMA, 128×256 tiles, persistent, {})",
            tflops(t_ox),
            tflops(t_lt),
            if output == Fp8Output::Bf16 { "bf16" } else { "f32" },
            schedule_name(ours_gemm.schedule()),
        ),
    )])
}

/// FP8 (e4m3) GEMM, 4096³ and 8192³, against cuBLASLt.
pub fn gemm_fp8_rows(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let mut rows = gemm_fp8(gpu, 4096, 30, Fp8Output::Bf16)?;
    rows.extend(gemm_fp8(gpu, 8192, 40, Fp8Output::Bf16)?);
    Ok(rows)
}

/// FP8 (e4m3) GEMM with an f32 C, 4096³ and 8192³, against cuBLASLt's
/// with an f32 D.
pub fn gemm_fp8_f32_rows(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let mut rows = gemm_fp8(gpu, 4096, 30, Fp8Output::F32)?;
    rows.extend(gemm_fp8(gpu, 8192, 40, Fp8Output::F32)?);
    Ok(rows)
}

/// Back-to-back launches of an empty kernel: oxide's typed launchers
/// (`#[cuda_module]` and `cuda_launch!`) and cuda-core's `launch_kernel`
/// against `cuLaunchKernel` called directly. Host wall time for LAUNCHES
/// launches and the final synchronisation, divided by LAUNCHES; the median
/// over ROUNDS batches of each, interleaved.
pub fn launch(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const LAUNCHES: usize = 2_000;
    const ROUNDS: usize = 25;
    let s = &gpu.stream;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (BLOCK_1D, 1, 1), shared_mem_bytes: 0 };
    // The same CUfunction for every variant: oxide's `empty`.
    let ptx_name = gpu
        .oxide
        .image()
        .kernels
        .iter()
        .find(|k| k.rust_path.ends_with("empty"))
        .map(|k| k.ptx_name)
        .ok_or("the oxide image has no `empty` kernel")?;
    let f = gpu.oxide.cuda_module().function(ptx_name).map_err(de)?;
    let raw = RawLauncher::new()?;
    gpu.ctx.bind_to_thread().map_err(de)?;

    // Each variant behind the same indirect call, so the dispatch costs all
    // of them alike.
    let mut variants: [Box<dyn FnMut() -> Result<(), String> + '_>; 4] = [
        // SAFETY: `empty` takes no parameters; the stream is of its context,
        // which is bound to this thread.
        Box::new(|| unsafe { raw.launch_empty(&f, 1, BLOCK_1D, s) }),
        Box::new(|| kernels::launch::empty(&gpu.oxide, s, cfg).map_err(he)),
        Box::new(|| {
            let module = &gpu.oxide;
            cuda_host::cuda_launch! { kernel: kernels::empty, stream: s, module: module, config: cfg, args: [] }
                .map_err(he)
        }),
        // SAFETY: no parameters, as above.
        Box::new(|| unsafe { cuda_core::launch_kernel(&f, cfg, s, &mut []) }.map_err(de)),
    ];
    // One batch of LAUNCHES back to back, in µs per launch.
    let batch = |launch_one: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        s.synchronize().map_err(de)?;
        let start = Instant::now();
        for _ in 0..LAUNCHES {
            launch_one()?;
        }
        s.synchronize().map_err(de)?;
        Ok(start.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64)
    };
    for v in variants.iter_mut() {
        batch(v.as_mut())?; // warm-up
    }
    // Round after round, one batch of each variant, the order rotated every
    // round: the launch rate of a machine drifts by several per cent over a
    // second, and interleaving puts every phase on every variant alike.
    let mut times: [Vec<f64>; 4] = Default::default();
    for round in 0..ROUNDS {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            times[v].push(batch(variants[v].as_mut())?);
        }
    }
    let [raw_us, typed_us, macro_us, core_us] = times.map(|mut t| crate::harness::median(&mut t));
    let launch_row = |name: &str, t: f64, target: Target| Row {
        name: name.into(),
        oxide: t,
        unit: "µs",
        reference: "cuLaunch".into(),
        reference_time: raw_us,
        target,
        note: format!("per launch: median of {ROUNDS} interleaved batches of {LAUNCHES} back to back"),
    };
    Ok(vec![
        launch_row("launch/typed", typed_us, Target::TimeAtMost(1.02)),
        launch_row("launch/cuda_launch!", macro_us, Target::TimeAtMost(1.02)),
        launch_row("launch/cuda-core", core_us, Target::TimeAtMost(1.02)),
    ])
}

/// The tiled SGEMM on a shape that is not a multiple of the tile, oxide
/// against nvcc and the CPU: the edges are where "the same algorithm" is
/// easiest to get wrong.
pub fn ragged_check(gpu: &Gpu) -> Result<(), String> {
    let (m, n, k) = (100, 75, 51);
    let s = &gpu.stream;
    let (a, b) = (random_f32(m * k, 30), random_f32(k * n, 31));
    let a_d = DeviceBuffer::from_host(s, &a).map_err(de)?;
    let b_d = DeviceBuffer::from_host(s, &b).map_err(de)?;
    let mut c_ox = DeviceBuffer::<f32>::zeroed(s, m * n).map_err(de)?;
    let c_nv = DeviceBuffer::<f32>::zeroed(s, m * n).map_err(de)?;
    let cfg = tiled_config(m, n);
    kernels::launch::sgemm(&gpu.oxide, s, cfg, m, n, k, &a_d, &b_d, &mut c_ox).map_err(he)?;
    let f = gpu.nvcc.function("sgemm").map_err(de)?;
    // SAFETY: as in sgemm.
    unsafe {
        RawArgs::new()
            .usize(m)
            .usize(n)
            .usize(k)
            .u64(a_d.device_ptr())
            .u64(b_d.device_ptr())
            .u64(c_nv.device_ptr())
            .launch(&f, cfg, s)?
    };
    let got = c_ox.to_host_vec(s).map_err(de)?;
    check_gemm_sample("sgemm 100×75×51 (oxide)", &got, (m, n, k), |i| a[i] as f64, |i| b[i] as f64, 1.0, 0.0)?;
    check_close("sgemm 100×75×51: oxide vs nvcc", &got, &c_nv.to_host_vec(s).map_err(de)?, |_| 0.0)
}

/// Allocating and freeing 1 MiB on a stream, 10,000 times: `DeviceBuffer`
/// (allocated from the device's pool on the stream, freed on it when
/// dropped) against the CUDA runtime's `cudaMallocAsync`/`cudaFreeAsync` on
/// the same stream, context and pool.
pub fn alloc(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const BYTES: usize = 1 << 20;
    const PAIRS: u32 = 10_000;
    const ROUNDS: usize = 15;
    let s = &gpu.stream;
    if !gpu.ctx.has_memory_pools() {
        return Err("this GPU has no memory pools: DeviceBuffer falls back to cuMemAlloc".into());
    }
    // The buffers are checked once: what is written through one comes back.
    let mut probe = DeviceBuffer::<u32>::zeroed(s, BYTES / 4).map_err(de)?;
    probe.fill(s, 0x5eed).map_err(de)?;
    if probe.to_host_vec(s).map_err(de)?.iter().any(|&v| v != 0x5eed) {
        return Err("a pooled buffer did not hold what was written to it".into());
    }
    drop(probe);
    let oxide_pairs = || -> Result<f64, String> {
        s.synchronize().map_err(de)?;
        let start = Instant::now();
        for _ in 0..PAIRS {
            // SAFETY: never read; dropped at once.
            drop(unsafe { DeviceBuffer::<u8>::alloc(s, BYTES) }.map_err(de)?);
        }
        s.synchronize().map_err(de)?;
        Ok(start.elapsed().as_secs_f64())
    };
    let runtime_pairs = || crate::reference::runtime_malloc_free_async(s, BYTES, PAIRS);
    let raw = crate::reference::RawAllocator::new()?;
    gpu.ctx.bind_to_thread().map_err(de)?;
    // SAFETY: the stream's context was bound to this thread just above.
    let driver_pairs = || unsafe { raw.pairs(s, BYTES, PAIRS) };
    let variants: [&dyn Fn() -> Result<f64, String>; 3] = [&oxide_pairs, &runtime_pairs, &driver_pairs];
    for v in &variants {
        v()?; // warm-up: the pool grows to one buffer
    }
    // Interleaved rounds, the order rotated every round (see `launch`).
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..ROUNDS {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            times[v].push(variants[v]()? * 1e6 / PAIRS as f64);
        }
    }
    let [oxide_us, runtime_us, driver_us] = times.map(|mut t| crate::harness::median(&mut t));
    let note = format!("per allocate + free pair on one stream: median of {ROUNDS} interleaved rounds of {PAIRS}");
    Ok(vec![
        Row {
            name: "alloc/1MiB".into(),
            oxide: oxide_us,
            unit: "µs",
            reference: "cudaMallocAsync".into(),
            reference_time: runtime_us,
            target: Target::TimeAtMost(1.05),
            note: note.clone(),
        },
        // Where oxide's time goes: the same pairs through the driver API
        // with nothing around them (what DeviceBuffer is built on).
        Row {
            name: "alloc/1MiB driver API".into(),
            oxide: oxide_us,
            unit: "µs",
            reference: "cuMemAllocAsync".into(),
            reference_time: driver_us,
            target: Target::TimeRatio,
            note,
        },
    ])
}

/// 100 dependent small kernels (`data[i] += 1` on 256 elements) per
/// iteration: as 100 typed launches back to back, as one launch of an oxide
/// graph that captured them, and as one launch of the same graph captured
/// with the CUDA C++ runtime (`cudaStreamBeginCapture` of 100 `<<<>>>`
/// launches, `cudaGraphLaunch`).
pub fn graph(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const N: usize = 256;
    const KERNELS: u32 = 100;
    const ITERATIONS: u32 = 200;
    const ROUNDS: usize = 15;
    let s = &gpu.stream;
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut data = DeviceBuffer::<u32>::zeroed(s, N).map_err(de)?;
    let exec = s
        .capture(|c| {
            for _ in 0..KERNELS {
                kernels::launch::bump(&gpu.oxide, c, cfg, &mut data)?;
            }
            Ok::<_, cuda_host::HostError>(())
        })
        .map_err(|e| e.to_string())?
        .instantiate()
        .map_err(|e| e.to_string())?;
    // Every variant adds KERNELS per iteration: the total is checked at the end.
    let mut expected = 0u64;
    let mut stream_launches = |data: &mut DeviceBuffer<u32>| -> Result<f64, String> {
        s.synchronize().map_err(de)?;
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            for _ in 0..KERNELS {
                kernels::launch::bump(&gpu.oxide, s, cfg, &mut *data).map_err(he)?;
            }
        }
        s.synchronize().map_err(de)?;
        Ok(start.elapsed().as_secs_f64())
    };
    let graph_launches = |_: &mut DeviceBuffer<u32>| -> Result<f64, String> {
        s.synchronize().map_err(de)?;
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            exec.launch(s).map_err(|e| e.to_string())?;
        }
        s.synchronize().map_err(de)?;
        Ok(start.elapsed().as_secs_f64())
    };
    let runtime_launches =
        |data: &mut DeviceBuffer<u32>| crate::reference::runtime_graph_launches(s, data, BLOCK_1D, KERNELS, ITERATIONS);
    let mut variants: [Box<dyn FnMut(&mut DeviceBuffer<u32>) -> Result<f64, String> + '_>; 3] =
        [Box::new(&mut stream_launches), Box::new(graph_launches), Box::new(runtime_launches)];
    for v in variants.iter_mut() {
        v(&mut data)?; // warm-up
        expected += (KERNELS * ITERATIONS) as u64;
    }
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..ROUNDS {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            let seconds = variants[v](&mut data)?;
            times[v].push(seconds * 1e6 / ITERATIONS as f64);
            expected += (KERNELS * ITERATIONS) as u64;
        }
    }
    let want = expected as u32; // wrapping, as the kernels add
    if let Some((i, v)) = data.to_host_vec(s).map_err(de)?.into_iter().enumerate().find(|&(_, v)| v != want) {
        return Err(format!("graph: element {i} is {v} after every variant ran, the CPU gives {want}"));
    }
    let [stream_us, oxide_us, runtime_us] = times.map(|mut t| crate::harness::median(&mut t));
    let note = format!("per iteration of {KERNELS} dependent kernels: median of {ROUNDS} interleaved rounds of {ITERATIONS}");
    Ok(vec![
        Row {
            name: "graph/oxide".into(),
            oxide: oxide_us,
            unit: "µs",
            reference: "CUDA C++ graph".into(),
            reference_time: runtime_us,
            target: Target::TimeAtMost(1.02),
            note: note.clone(),
        },
        Row {
            name: "graph/stream-launches".into(),
            oxide: stream_us,
            unit: "µs",
            reference: "oxide graph".into(),
            reference_time: oxide_us,
            target: Target::TimeRatio,
            note: format!("{KERNELS} typed launches back to back vs one oxide graph launch; {note}"),
        },
    ])
}

/// f32 sum all-reduce over every GPU of the machine (one rank per GPU, one
/// thread driving them in a group), 8 MiB to 1 GiB per rank: oxide's
/// `cuda-nccl` against NCCL called directly from CUDA C++ on the same
/// buffers and streams, interleaved. The row's figure is the bus bandwidth
/// (algorithm bandwidth × 2(n−1)/n, as nccl-tests reports it); on one GPU,
/// where NCCL's all-reduce is a copy and the bus factor is 0, the
/// algorithm bandwidth.
pub fn allreduce(gpu: &Gpu) -> Result<Vec<Row>, String> {
    use cuda_nccl::{Communicator, ReduceOp};
    const ROUNDS: usize = 5;
    let n = cuda_core::CudaContext::device_count().map_err(de)?;
    let mut contexts = vec![gpu.ctx.clone()];
    for d in 1..n {
        contexts.push(cuda_core::CudaContext::new(d).map_err(de)?);
    }
    let comms = Communicator::init_all(&contexts).map_err(|e| e.to_string())?;
    let mut streams = vec![gpu.stream.clone()];
    for c in &contexts[1..] {
        streams.push(c.new_stream().map_err(de)?);
    }
    let sync_all = |streams: &[std::sync::Arc<cuda_core::CudaStream>]| -> Result<(), String> {
        streams.iter().try_for_each(|s| s.synchronize().map_err(de))
    };
    // NCCL from C++ keeps its own communicators for the whole run too.
    let reference = crate::reference::NcclReference::open(&streams)?;
    let bus_factor = if n == 1 { 1.0 } else { 2.0 * (n - 1) as f64 / n as f64 };
    let mut rows = Vec::new();
    for mib in [8usize, 64, 256, 1024] {
        let bytes = mib << 20;
        let count = bytes / 4;
        // Fewer calls for the larger sizes keep each round near 10–100 ms.
        let iters: u32 = if mib <= 8 { 200 } else if mib <= 256 { 40 } else { 10 };
        let mut send = Vec::with_capacity(n);
        let mut recv = Vec::with_capacity(n);
        for (r, s) in streams.iter().enumerate() {
            let mut b = DeviceBuffer::<f32>::zeroed(s, count).map_err(de)?;
            b.fill(s, (r + 1) as f32).map_err(de)?;
            send.push(b);
            recv.push(DeviceBuffer::<f32>::zeroed(s, count).map_err(de)?);
        }
        // The wall time of `calls` calls after `warmup` unmeasured ones (as
        // the reference does: the first call after the other side's round
        // is not the steady state), and of their submission alone.
        let oxide_calls = |send: &[DeviceBuffer<f32>], recv: &mut [DeviceBuffer<f32>], warmup: u32, calls: u32| -> Result<(f64, f64), String> {
            let call = |recv: &mut [DeviceBuffer<f32>]| {
                cuda_nccl::group(|| {
                    for r in 0..n {
                        comms[r].all_reduce(send[r].as_slice(), recv[r].as_slice_mut(), ReduceOp::Sum, &streams[r])?;
                    }
                    Ok(())
                })
                .map_err(|e| e.to_string())
            };
            for _ in 0..warmup {
                call(recv)?;
            }
            sync_all(&streams)?;
            let start = Instant::now();
            for _ in 0..calls {
                call(recv)?;
            }
            let submitted = start.elapsed().as_secs_f64();
            sync_all(&streams)?;
            Ok((start.elapsed().as_secs_f64(), submitted))
        };
        // Both sides' results are checked before anything is timed: every
        // element of every rank is 1 + 2 + … + n.
        let want = (n * (n + 1) / 2) as f32;
        oxide_calls(&send, &mut recv, 0, 1)?;
        let check = |recv: &[DeviceBuffer<f32>], who: &str| -> Result<(), String> {
            for (r, b) in recv.iter().enumerate() {
                if let Some(i) = b.to_host_vec(&streams[r]).map_err(de)?.iter().position(|&v| v != want) {
                    return Err(format!("allreduce/{mib}MiB: {who}'s element {i} on rank {r} is wrong (want {want})"));
                }
            }
            Ok(())
        };
        check(&recv, "oxide")?;
        for b in &mut recv {
            let s = &streams[b.context().ordinal()];
            b.fill(s, 0.0).map_err(de)?;
        }
        reference.all_reduce(&send, &mut recv, &streams, 1, 0)?;
        check(&recv, "NCCL from CUDA C++")?;
        let (mut oxide_ms, mut nccl_ms) = (Vec::new(), Vec::new());
        let (mut oxide_submit_us, mut nccl_submit_us) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            for k in 0..2 {
                let (times, submits, (wall, submit)) = if (round + k) % 2 == 0 {
                    (&mut oxide_ms, &mut oxide_submit_us, oxide_calls(&send, &mut recv, 2, iters)?)
                } else {
                    (&mut nccl_ms, &mut nccl_submit_us, reference.all_reduce(&send, &mut recv, &streams, 2, iters)?)
                };
                times.push(wall * 1e3 / iters as f64);
                submits.push(submit * 1e6 / iters as f64);
            }
        }
        let median = crate::harness::median;
        let (oxide, nccl) = (median(&mut oxide_ms), median(&mut nccl_ms));
        let (oxide_submit, nccl_submit) = (median(&mut oxide_submit_us), median(&mut nccl_submit_us));
        let gbps = |ms: f64| bytes as f64 / (ms * 1e-3) * bus_factor / 1e9;
        let what = if n == 1 { "algorithm bandwidth (one GPU: a copy)" } else { "bus bandwidth" };
        rows.push(Row {
            name: format!("allreduce/{mib}MiB f32 x{n}"),
            oxide,
            unit: "ms",
            reference: "NCCL (C++)".into(),
            reference_time: nccl,
            target: Target::SpeedAtLeast(0.98),
            note: format!(
                "{what}: oxide {:.0} GB/s, NCCL {:.0} GB/s; host submission per call: oxide {oxide_submit:.2} µs, \
                 NCCL {nccl_submit:.2} µs; median of {ROUNDS} interleaved rounds of {iters}",
                gbps(oxide),
                gbps(nccl)
            ),
        });
    }
    Ok(rows)
}
