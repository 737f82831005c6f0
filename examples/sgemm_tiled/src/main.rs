//! sgemm_tiled: C = A·B in `f32` with 32×32 shared-memory tiles, for
//! M = N = K = 1024 (timed) and a ragged 100×75×51 case (for the edges).
//!
//! A (M×K), B (K×N) and C (M×N) are row-major. A block of 32×8 threads
//! computes a 32×32 tile of C; each thread owns one column of it and four
//! rows, eight apart, so it keeps four accumulators in registers. The block
//! walks along K in steps of 32:
//! 1. It copies a 32×32 tile of A (its rows, the current 32 columns of K) and
//!    a 32×32 tile of B (the current 32 rows of K, its columns) into shared
//!    memory, four elements of each per thread, each warp reading 32
//!    consecutive floats of a row (coalesced). Elements past the matrix
//!    edges are 0.
//! 2. Block barrier.
//! 3. For each of the 32 `k` of the step, every thread reads one element of
//!    the B tile and multiplies it into its four rows, each reading an element
//!    of the A tile. All lanes of a warp share the A element (a broadcast)
//!    and read 32 consecutive words of B (32 banks), so there are no bank
//!    conflicts and no padding is needed.
//! 4. Block barrier, so nobody overwrites the tiles while others still read.
//!
//! Each element of global A and B is thus read from global memory N/32 resp.
//! M/32 times instead of N resp. M times.
//!
//! The check: the CPU computes each C element in `f64` from the same `f32`
//! inputs (exact products, negligible rounding), and the GPU's value `c` must
//! satisfy `|c − c_ref| ≤ γ_K · Σ_k |a_ik·b_kj|` with `γ_K = K·u / (1 − K·u)`,
//! `u = 2⁻²⁴`: the classical worst-case bound for a length-K dot product in
//! `f32`, whatever the order of the additions and whether they are fused
//! (about 6.1e-5 relative to Σ|a·b| for K = 1024). Dropping or repeating one
//! term of a sum, or reading a wrong element, errs by roughly 1/K ≈ 1e-3 of
//! that sum and fails it.
//!
//! GFLOP/s (2·M·N·K flops over the best of five synchronised launches, timed
//! with `std::time::Instant`) is printed for information only.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Side of the square tiles of A, B and C a block works on.
const TILE: usize = 32;
/// Rows of threads in a block.
const BLOCK_ROWS: usize = 8;
/// Rows of the C tile each thread computes (`TILE / BLOCK_ROWS`).
const ROWS_PER_THREAD: usize = TILE / BLOCK_ROWS;

/// The shape of one product: A is m×k, B is k×n, C is m×n.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    m: usize,
    n: usize,
    k: usize,
}

/// `c` = `a`·`b`. Launch with `(TILE, BLOCK_ROWS)` threads per block and
/// `(ceil(n / TILE), ceil(m / TILE))` blocks.
#[kernel]
pub fn sgemm(dims: Dims, a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    shared! {
        static A_TILE: [f32; TILE * TILE];
        static B_TILE: [f32; TILE * TILE];
    }
    // The unsafe accesses below rely on this shape (a uniform condition, so
    // either every thread of the block passes or every one stops here).
    assert!(
        thread::blockDim_x() as usize == TILE && thread::blockDim_y() as usize == BLOCK_ROWS,
        "launch sgemm with (32, 8) threads per block"
    );
    let Dims { m, n, k } = dims;
    let tx = thread::threadIdx_x() as usize;
    let ty = thread::threadIdx_y() as usize;
    // The C tile's top-left corner, and this thread's column of C.
    let tile_row = thread::blockIdx_y() as usize * TILE;
    let tile_col = thread::blockIdx_x() as usize * TILE;
    let col = tile_col + tx;

    let mut acc = [0.0f32; ROWS_PER_THREAD];
    let mut k0 = 0;
    while k0 < k {
        // 1. Load this step's tiles; rows `ty`, `ty + 8`, … of each are this
        //    thread's.
        for i in 0..ROWS_PER_THREAD {
            let r = ty + i * BLOCK_ROWS;
            let (a_row, a_col) = (tile_row + r, k0 + tx);
            let a_value = if a_row < m && a_col < k { a[a_row * k + a_col] } else { 0.0 };
            let (b_row, b_col) = (k0 + r, col);
            let b_value = if b_row < k && b_col < n { b[b_row * n + b_col] } else { 0.0 };
            // SAFETY: r, tx < TILE (the assert above), so the slot is in
            // bounds, and slot (r, tx) of each tile is this thread's alone;
            // the barrier below separates these writes from the reads, and
            // the barrier at the end of the previous step separated them from
            // the earlier reads.
            unsafe {
                A_TILE.write(r * TILE + tx, a_value);
                B_TILE.write(r * TILE + tx, b_value);
            }
        }
        // 2. Both tiles are complete after this barrier.
        thread::sync_threads();

        // 3. Multiply the tiles into the accumulators.
        for kk in 0..TILE {
            // SAFETY: kk, tx, ty + 8·i < TILE: in bounds; every slot was
            // written in step 1 before the barrier, and nobody writes before
            // the barrier below.
            let b_value = unsafe { B_TILE.read(kk * TILE + tx) };
            for (i, sum) in acc.iter_mut().enumerate() {
                // SAFETY: as for the B tile above.
                let a_value = unsafe { A_TILE.read((ty + i * BLOCK_ROWS) * TILE + kk) };
                *sum = a_value.mul_add(b_value, *sum);
            }
        }
        // 4. Everyone is done reading before the next step overwrites.
        thread::sync_threads();
        k0 += TILE;
    }

    for (i, sum) in acc.iter().enumerate() {
        let row = tile_row + ty + i * BLOCK_ROWS;
        if row < m && col < n {
            // SAFETY: row < m and col < n, so the index is below m·n =
            // c.len() (checked too); element (row, col) belongs to this
            // thread alone: its block owns the tile, tx the column, ty and i
            // the row.
            let index = row * n + col;
            if index < c.len() {
                unsafe { *c.get_unchecked_mut(index) = *sum };
            }
        }
    }
}

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

/// The CPU reference: for each element of C, the `f64` dot product and
/// `Σ_k |a_ik·b_kj|` (for the error bound). Rows are split over the CPU's
/// cores, since this program is usually built without optimisation.
fn cpu_gemm(d: Dims, a: &[f32], b: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0f64; d.m * d.n];
    let mut magnitude = vec![0.0f64; d.m * d.n];
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let rows_per_thread = d.m.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let chunks = c.chunks_mut(rows_per_thread * d.n).zip(magnitude.chunks_mut(rows_per_thread * d.n));
        for (chunk, (c_rows, mag_rows)) in chunks.enumerate() {
            scope.spawn(move || {
                let first_row = chunk * rows_per_thread;
                for (r, (c_row, mag_row)) in c_rows.chunks_mut(d.n).zip(mag_rows.chunks_mut(d.n)).enumerate() {
                    let a_row = &a[(first_row + r) * d.k..][..d.k];
                    // i-k-j order: stream through rows of B.
                    for (kk, &a_value) in a_row.iter().enumerate() {
                        let a_value = a_value as f64;
                        let b_row = &b[kk * d.n..][..d.n];
                        for j in 0..d.n {
                            let product = a_value * b_row[j] as f64;
                            c_row[j] += product;
                            mag_row[j] += product.abs();
                        }
                    }
                }
            });
        }
    });
    (c, magnitude)
}

/// What one product measured.
struct Outcome {
    worst_relative: f64,
    best_seconds: f64,
}

/// Multiplies random matrices of shape `d` on the GPU (`launches` times),
/// checks every element of C against the CPU, and returns the largest error
/// relative to `Σ|a·b|` and the best launch time.
fn check(
    ctx: &Arc<CudaContext>,
    module: &cuda_host::KernelModule,
    d: Dims,
    launches: usize,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let a_host = random_matrix(d.m * d.k, 0x2545_f491_4f6c_dd1d);
    let b_host = random_matrix(d.k * d.n, 0x9e37_79b9_7f4a_7c15);
    let a = DeviceBuffer::from_host(&stream, &a_host)?;
    let b = DeviceBuffer::from_host(&stream, &b_host)?;
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, d.m * d.n)?;
    let config = LaunchConfig {
        grid_dim: (d.n.div_ceil(TILE) as u32, d.m.div_ceil(TILE) as u32, 1),
        block_dim: (TILE as u32, BLOCK_ROWS as u32, 1),
        shared_mem_bytes: 0,
    };
    let mut best_seconds = f64::INFINITY;
    for _ in 0..launches {
        stream.synchronize()?;
        let start = Instant::now();
        cuda_launch! {
            kernel: sgemm, stream: stream, module: module, config: config,
            args: [d, slice(a), slice(b), slice_mut(c)]
        }?;
        stream.synchronize()?;
        best_seconds = best_seconds.min(start.elapsed().as_secs_f64());
    }
    let gpu = c.to_host_vec(&stream)?;

    let (reference, magnitude) = cpu_gemm(d, &a_host, &b_host);
    let u = f32::EPSILON as f64 / 2.0; // 2^-24, the unit roundoff of f32
    let gamma = d.k as f64 * u / (1.0 - d.k as f64 * u);
    let mut worst_relative = 0.0f64;
    for i in 0..d.m * d.n {
        let error = (gpu[i] as f64 - reference[i]).abs();
        // A NaN from the GPU must fail too, hence the explicit check.
        if error.is_nan() || error > gamma * magnitude[i] {
            return Err(format!(
                "{d:?}: C[{}][{}] is {} on the GPU, {} on the CPU: error {error:e} exceeds the \
                 fp32 bound γ_K·Σ|a·b| = {:e}",
                i / d.n,
                i % d.n,
                gpu[i],
                reference[i],
                gamma * magnitude[i]
            )
            .into());
        }
        if magnitude[i] > 0.0 {
            worst_relative = worst_relative.max(error / magnitude[i]);
        }
    }
    Ok(Outcome { worst_relative, best_seconds })
}

/// The timed problem size (M = N = K).
const SIZE: usize = 1024;
/// The timed size on the CPU emulator (`--emulate`).
const SIZE_EMULATED: usize = 128;

fn size() -> usize {
    if cuda_core::emulator::is_active() { SIZE_EMULATED } else { SIZE }
}

fn run() -> Result<(Outcome, f64), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let module = load_kernel_module(&ctx, "sgemm_tiled")?;
    // Ragged edges: no dimension a multiple of the tile, K not either.
    check(&ctx, &module, Dims { m: 100, n: 75, k: 51 }, 1)?;
    let d = Dims { m: size(), n: size(), k: size() };
    let outcome = check(&ctx, &module, d, 5)?;
    let gflops = 2.0 * (d.m * d.n * d.k) as f64 / outcome.best_seconds / 1e9;
    Ok((outcome, gflops))
}

fn main() -> ExitCode {
    match run() {
        Ok((outcome, gflops)) => {
            let size = size();
            println!(
                "✓ SUCCESS: {size}³ and 100×75×51 fp32 GEMMs within the fp32 bound K·2⁻²⁴·Σ|a·b| of an \
                 f64 CPU GEMM (worst {:.1e} of Σ|a·b|); {size}³ best of 5: {:.3} ms, {gflops:.0} GFLOP/s \
                 (informational)",
                outcome.worst_relative,
                outcome.best_seconds * 1e3
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
