//! gemm_bf16: C = A·Bᵀ in bf16 with f32 accumulation on Hopper (sm_90a),
//! written in Rust: TMA copies tiles into shared memory, mbarriers hand them
//! from a producer warp to two consumer warpgroups, and wgmma multiplies
//! them. Compared against cuBLAS (`cublasGemmEx`) for 4096³ and 8192³.
//!
//! Layouts: A is M×K and B is N×K, both row-major (so both are "K-major",
//! the layout wgmma reads without transposing), C is M×N row-major bf16.
//! In cuBLAS's column-major terms that is Cᵀ = op(B)·Aᵀ with op = T.
//!
//! Kernels:
//! * `gemm_simple` — one warpgroup, a 64×128 tile, no pipelining: thread 0
//!   loads one 64-wide K step of A and B with TMA, everyone waits on the
//!   mbarrier, four m64n128k16 wgmmas, wait, repeat. The correctness
//!   baseline.
//! * `gemm_ws` — warp-specialised: a 128×256 tile per block of 288 threads.
//!   Warps 0–7 are two consumer warpgroups (each owns 64 rows of the tile:
//!   128 f32 accumulators per thread, m64n256k16), warp 8 is the producer:
//!   one lane issues the TMA loads into a ring of `STAGES` shared-memory
//!   stages (A 128×64 and B 256×64 bf16 each, 128-byte swizzle), each with a
//!   "full" mbarrier (the bytes landed) and an "empty" one (both consumer
//!   warpgroups are done with it). Consumers keep one wgmma batch in flight
//!   (`wait_group::<1>`) and release a stage once its batch is complete.
//!   Blocks walk the tiles in groups of 16 tile rows so that a wave of
//!   blocks shares A and B panels in L2.
//!
//! The check: 4096 sampled entries against an `f64` CPU dot product of the
//! same bf16 inputs, `|c − ref| ≤ 2⁻⁷·|ref| + 10⁻⁵·Σ|a·b|` (the final bf16
//! rounding is at most 2⁻⁹·|ref|; f32 accumulation in any order adds at most
//! about K·2⁻²⁴·Σ|a·b| ≤ 5·10⁻⁴·Σ|a·b| in the worst case and far less in
//! practice: a dropped or repeated K step errs by ~1/128 of the sum and
//! fails), and every entry against cuBLAS (|c − c_cublas| ≤
//! 2⁻⁶·max(|c_cublas|, 1): one bf16 rounding each, plus summation order).
//!
//! Measured on an H200 (700 W): gemm_ws 759.5 TFLOP/s at 8192³ (97.3% of
//! cuBLAS's 780.6) and 685.9 at 4096³ (94.5% of 725.6); gemm_simple about
//! 50% of cuBLAS. On the GPU machine, `go.sh` (next to this crate; put the
//! binary beside it) finds libcublas, sets `OXIDE_CUBLAS` and runs it.
//!
//! cuBLAS is loaded at run time from `$OXIDE_CUBLAS` (the path of
//! libcublas.so); without it only oxide's time is printed.

use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorSwizzle};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, shared_address, MBarrier};
use cuda_device::wgmma::{self, descriptor, pack_bf16x2, Swizzle};
use cuda_device::{dynamic_shared, kernel, thread, tma, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::ffi::{c_char, c_int, c_void, CString};
use std::process::ExitCode;
use std::sync::Arc;

/// K step of every tile (64 bf16 = 128 bytes: one 128-byte swizzle row).
const BK: u32 = 64;
/// Bytes of one 128-byte-swizzled row of a K step.
const ROW_BYTES: u32 = BK * 2;
/// Bytes between 8-row groups in a swizzled tile (the descriptors' stride).
const GROUP_BYTES: u32 = 8 * ROW_BYTES;

/// The problem shape: A is m×k, B is n×k, C is m×n.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    m: u32,
    n: u32,
    k: u32,
}

/// The first 1024-byte aligned 32-bit shared address of the dynamic shared
/// memory (the 128-byte swizzle works on 1024-byte atoms); launches ask for
/// 1024 bytes more than they use.
#[inline(always)]
fn aligned_dynamic_shared() -> u32 {
    // SAFETY: only the address is taken; all accesses go through TMA,
    // wgmma and mbarrier instructions on addresses inside the launch's size.
    let (base, _) = unsafe { dynamic_shared::<u8>() };
    (shared_address(base) + 1023) & !1023
}

/// Stores one warpgroup's 64×N accumulator fragment (N/2 values per thread,
/// the layout in cuda_device::wgmma's docs) as bf16 into C at row `row0`,
/// column `col0`. `c` holds C as pairs of bf16 (u32 words).
#[inline(always)]
fn store_fragment<const R: usize>(acc: &[f32; R], c: &mut DisjointSlice<u32>, n: u32, row0: u32, col0: u32) {
    let t = thread::threadIdx_x() % 128;
    let row = row0 + 16 * (t / 32) + (t % 32) / 4;
    let col = col0 + 2 * (t % 4);
    macro_rules! block {
        ($($j:literal)*) => {$(
            if 4 * $j < R {
                let top = ((row * n + col + 8 * $j) / 2) as usize;
                let bottom = (((row + 8) * n + col + 8 * $j) / 2) as usize;
                if bottom < c.len() {
                    // SAFETY: both indices are below c.len(); the (row, col)
                    // pairs of a fragment belong to this thread alone and
                    // the tiles of different blocks and warpgroups are
                    // disjoint.
                    unsafe {
                        *c.get_unchecked_mut(top) = pack_bf16x2(acc[4 * $j], acc[4 * $j + 1]);
                        *c.get_unchecked_mut(bottom) = pack_bf16x2(acc[4 * $j + 2], acc[4 * $j + 3]);
                    }
                }
            }
        )*};
    }
    block!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

/// The simple kernel's tile: 64×128, one warpgroup.
const SIMPLE_BM: u32 = 64;
/// Columns of the simple kernel's tile.
const SIMPLE_BN: u32 = 128;
/// Dynamic shared memory of `gemm_simple`: A and B tiles, a barrier, slack.
pub const SIMPLE_SMEM: u32 = (SIMPLE_BM + SIMPLE_BN) * ROW_BYTES + 8 + 1024;

/// C = A·Bᵀ, one warpgroup per 64×128 tile, no pipelining. Launch with 128
/// threads, grid (n/128, m/64), `SIMPLE_SMEM` bytes of dynamic shared
/// memory; `map_a`/`map_b` are tensor maps of A and B with boxes of 64×64
/// and 64×128 (K × rows) and the 128-byte swizzle.
#[kernel(launch_bounds(128, 1))]
pub fn gemm_simple(map_a: u64, map_b: u64, dims: Dims, mut c: DisjointSlice<u32>) {
    let base = aligned_dynamic_shared();
    let a_tile = base;
    let b_tile = base + SIMPLE_BM * ROW_BYTES;
    // SAFETY: 8-byte aligned word of the launch's dynamic shared memory,
    // used only as this barrier.
    let bar = unsafe { MBarrier::from_address(base + (SIMPLE_BM + SIMPLE_BN) * ROW_BYTES) };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + barrier publish it.
        unsafe { bar.init(1) };
        mbarrier::fence_init();
    }
    thread::sync_threads();
    let m0 = thread::blockIdx_y() * SIMPLE_BM;
    let n0 = thread::blockIdx_x() * SIMPLE_BN;
    let mut acc = wgmma::zeroed::<64>();
    let mut kb = 0;
    while kb < dims.k / BK {
        if tid == 0 {
            bar.arrive_expect_tx((SIMPLE_BM + SIMPLE_BN) * ROW_BYTES);
            // SAFETY: the maps are valid (host); the tiles are 1024-aligned
            // and free (everyone passed the barrier at the end of the last
            // step); `bar` expects both boxes' bytes.
            unsafe {
                tma::load_2d(a_tile, map_a, bar, (kb * BK) as i32, m0 as i32);
                tma::load_2d(b_tile, map_b, bar, (kb * BK) as i32, n0 as i32);
            }
        }
        bar.wait(kb & 1);
        wgmma::fence();
        for k in 0..4 {
            let da = descriptor(a_tile + 32 * k, 16, GROUP_BYTES, Swizzle::B128);
            let db = descriptor(b_tile + 32 * k, 16, GROUP_BYTES, Swizzle::B128);
            // SAFETY: the whole warpgroup (the block) runs this with the same
            // descriptors; the tiles are not written until after wait_group
            // and the barrier below.
            unsafe { wgmma::m64n128k16_f32_bf16(&mut acc, da, db, true) };
        }
        wgmma::commit_group();
        wgmma::wait_group::<0>();
        thread::sync_threads();
        kb += 1;
    }
    store_fragment(&acc, &mut c, dims.n, m0, n0);
}

/// Rows of `gemm_ws`'s tile (two consumer warpgroups of 64 rows).
const WS_BM: u32 = 128;
/// Columns of `gemm_ws`'s tile.
const WS_BN: u32 = 256;
/// Pipeline depth of `gemm_ws`.
const STAGES: u32 = 4;
/// Bytes of one stage: an A and a B tile.
const STAGE_BYTES: u32 = (WS_BM + WS_BN) * ROW_BYTES;
/// Dynamic shared memory of `gemm_ws`: the stages, 2·STAGES barriers, slack.
pub const WS_SMEM: u32 = STAGES * STAGE_BYTES + 16 * STAGES + 1024;
/// Tile rows per group of the block order (L2 reuse).
const GROUP_M: u32 = 16;

/// C = A·Bᵀ, warp-specialised and pipelined (module docs). Launch with 288
/// threads, `(m/128)·(n/256)` blocks, `WS_SMEM` bytes of dynamic shared
/// memory; `map_a`/`map_b` have boxes of 64×128 and 64×256 and the 128-byte
/// swizzle. m, n, k must be multiples of 128, 256 and 64.
#[kernel(launch_bounds(288, 1))]
pub fn gemm_ws(map_a: u64, map_b: u64, dims: Dims, mut c: DisjointSlice<u32>) {
    let base = aligned_dynamic_shared();
    let a_tile = |s: u32| base + s * WS_BM * ROW_BYTES;
    let b_tile = |s: u32| base + STAGES * WS_BM * ROW_BYTES + s * WS_BN * ROW_BYTES;
    let bars = base + STAGES * STAGE_BYTES;
    // SAFETY (both): 8-byte aligned words after the stages, inside the
    // launch's dynamic shared memory, used only as these barriers.
    let full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * s) };
    let empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (STAGES + s)) };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises; fence + barrier publish it.
            unsafe {
                full(s).init(1);
                empty(s).init(256);
            }
        }
        mbarrier::fence_init();
    }
    thread::sync_threads();

    // Grouped block order: GROUP_M tile rows at a time, column by column.
    // (Divisors are at least 1, so no division-by-zero panic path: a call
    // in the kernel would make ptxas serialise the wgmma pipeline.)
    let m_tiles = dims.m / WS_BM;
    let n_tiles = (dims.n / WS_BN).max(1);
    let id = thread::blockIdx_x();
    let group = id / (GROUP_M * n_tiles);
    let first_m = group * GROUP_M;
    // Not `clamp`: its debug assertion formats a message, which kernels cannot.
    #[allow(clippy::manual_clamp)]
    let rows = m_tiles.saturating_sub(first_m).max(1).min(GROUP_M);
    let in_group = id % (GROUP_M * n_tiles);
    let m0 = (first_m + in_group % rows) * WS_BM;
    let n0 = (in_group / rows) * WS_BN;
    let k_steps = dims.k / BK;

    // The warp's role, broadcast from lane 0 so that ptxas sees a
    // warp-uniform value (a per-thread branch around wgmma serialises it).
    let warp_index = warp::shfl_idx(warp::FULL_MASK, tid / 32, 0);
    if warp_index >= 8 {
        // Producer warp: one lane issues every copy.
        if warp::elect_one(warp::FULL_MASK) {
            tma::prefetch_tensor_map(map_a);
            tma::prefetch_tensor_map(map_b);
            let mut kb = 0;
            while kb < k_steps {
                let s = kb % STAGES;
                if kb >= STAGES {
                    empty(s).wait((kb / STAGES - 1) & 1);
                }
                full(s).arrive_expect_tx(STAGE_BYTES);
                // SAFETY: valid maps (host); the stage is free (its empty
                // barrier completed, or it was never used) and 1024-aligned;
                // `full(s)` expects both boxes' bytes.
                unsafe {
                    tma::load_2d(a_tile(s), map_a, full(s), (kb * BK) as i32, m0 as i32);
                    tma::load_2d(b_tile(s), map_b, full(s), (kb * BK) as i32, n0 as i32);
                }
                kb += 1;
            }
        }
    } else {
        // Consumer warpgroup `wg` owns rows 64·wg… of the tile.
        let wg = warp_index / 4;
        let mut acc = wgmma::zeroed::<128>();
        let mut kb = 0;
        while kb < k_steps {
            let s = kb % STAGES;
            full(s).wait((kb / STAGES) & 1);
            wgmma::fence();
            for k in 0..4 {
                let da = descriptor(a_tile(s) + wg * 64 * ROW_BYTES + 32 * k, 16, GROUP_BYTES, Swizzle::B128);
                let db = descriptor(b_tile(s) + 32 * k, 16, GROUP_BYTES, Swizzle::B128);
                // SAFETY: the whole warpgroup runs this with the same
                // descriptors; the stage is not refilled before this
                // warpgroup releases it below, after the batch completed.
                unsafe { wgmma::m64n256k16_f32_bf16(&mut acc, da, db, true) };
            }
            wgmma::commit_group();
            // The previous step's batch is complete: release its stage.
            wgmma::wait_group::<1>();
            if kb > 0 {
                empty((kb - 1) % STAGES).arrive();
            }
            kb += 1;
        }
        wgmma::wait_group::<0>();
        store_fragment(&acc, &mut c, dims.n, m0 + 64 * wg, n0);
    }
}

// ---------------------------------------------------------------------------
// Host side.

/// bf16 bits of `x`, rounded to nearest even.
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The f32 value of bf16 bits.
fn from_bf16(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Deterministic pseudo-random bf16 values in [-1, 1) (xorshift64).
fn random_bf16(len: usize, seed: u64) -> Vec<u16> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            to_bf16((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
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

    /// C (m×n row-major bf16) = A (m×k) · B (n×k)ᵀ, f32 compute, on the
    /// legacy default stream.
    fn gemm(&self, d: Dims, a: u64, b: u64, c: u64) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        const OP_N: c_int = 0;
        const OP_T: c_int = 1;
        const R_16BF: c_int = 14;
        const COMPUTE_32F: c_int = 68;
        const GEMM_DEFAULT: c_int = -1;
        // SAFETY: device pointers of buffers of the right sizes; alpha/beta
        // are host f32 (the default pointer mode).
        let status = unsafe {
            (self.gemm_ex)(
                self.handle, OP_T, OP_N, d.n as c_int, d.m as c_int, d.k as c_int,
                (&alpha as *const f32).cast(), b as *const c_void, R_16BF, d.k as c_int,
                a as *const c_void, R_16BF, d.k as c_int, (&beta as *const f32).cast(),
                c as *mut c_void, R_16BF, d.n as c_int, COMPUTE_32F, GEMM_DEFAULT,
            )
        };
        if status != 0 {
            return Err(format!("cublasGemmEx failed with status {status}"));
        }
        Ok(())
    }
}

type BoxError = Box<dyn std::error::Error>;

/// The driver function of kernel `name` of `module` (its PTX name is
/// mangled), to raise its dynamic shared memory limit.
fn kernel_function(module: &cuda_host::KernelModule, name: &str) -> Result<cuda_core::CudaFunction, BoxError> {
    let suffix = format!("::{name}");
    let kernel = module
        .image()
        .kernels
        .iter()
        .find(|k| k.rust_path.ends_with(&suffix))
        .ok_or_else(|| format!("kernel {name} is not in module {}", module.name()))?;
    Ok(module.cuda_module().function(kernel.ptx_name)?)
}

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

/// Runs one size; returns whether every check passed.
fn run_size(
    ctx: &Arc<CudaContext>,
    module: &cuda_host::KernelModule,
    cublas: Option<&Cublas>,
    d: Dims,
    kernels: &[String],
) -> Result<bool, BoxError> {
    let wanted = |name: &str| kernels.is_empty() || kernels.iter().any(|k| k == name);
    let stream = ctx.default_stream();
    if d.m % WS_BM != 0 || d.n % WS_BN != 0 || d.k % BK != 0 {
        return Err(format!("the kernels need M % {WS_BM} = N % {WS_BN} = K % {BK} = 0, not {d:?}").into());
    }
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a_host = random_bf16(m * k, 0x2545_f491_4f6c_dd1d ^ (m as u64));
    let b_host = random_bf16(n * k, 0x9e37_79b9_7f4a_7c15 ^ (n as u64));
    let a = DeviceBuffer::from_host(&stream, &a_host)?;
    let b = DeviceBuffer::from_host(&stream, &b_host)?;
    let mut c = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
    let map = |buf: &DeviceBuffer<u16>, rows: usize, box_rows: u32| {
        TensorMap::tiled(TensorDataType::BF16, buf.device_ptr(), &[k as u64, rows as u64], &[2 * k as u64], &[BK, box_rows])
            .swizzle(TensorSwizzle::B128)
            .encode()
    };
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let mut ok = true;
    println!("== M = N = K = {m}");

    // Sampled CPU reference.
    let samples: Vec<(usize, usize)> =
        (0..4096u64).map(|i| ((i.wrapping_mul(2654435761) % m as u64) as usize, (i.wrapping_mul(40503) * 7 % n as u64) as usize)).collect();
    let reference: Vec<(f64, f64)> = samples
        .iter()
        .map(|&(r, col)| {
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = from_bf16(a_host[r * k + kk]) as f64 * from_bf16(b_host[col * k + kk]) as f64;
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
            let idx = r * n + col;
            let word = c_host[idx / 2];
            let got = from_bf16(if idx % 2 == 0 { word as u16 } else { (word >> 16) as u16 }) as f64;
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

    // gemm_simple.
    if wanted("simple") {
        let (ma, mb) = (map(&a, m, SIMPLE_BM)?.upload(&stream)?, map(&b, n, SIMPLE_BN)?.upload(&stream)?);
        let f = kernel_function(module, "gemm_simple")?;
        f.set_max_dynamic_shared_memory(SIMPLE_SMEM)?;
        c.memset(&stream, 0)?;
        let config =
            LaunchConfig { grid_dim: (d.n / SIMPLE_BN, d.m / SIMPLE_BM, 1), block_dim: (128, 1, 1), shared_mem_bytes: SIMPLE_SMEM };
        let (pa, pb) = (ma.device_ptr(), mb.device_ptr());
        let ms = time_ms(ctx, 5, || {
            cuda_launch! { kernel: gemm_simple, stream: stream, module: module, config: config,
                args: [pa, pb, d, slice_mut(c)] }?;
            Ok(())
        })?;
        println!("  gemm_simple: {ms:.3} ms, {:.1} TFLOP/s", flops / ms / 1e9);
        let host = c.to_host_vec(&stream)?;
        ok &= check_samples("gemm_simple", &host);
        results.push(("gemm_simple".into(), ms, host));
    }
    // gemm_ws.
    if wanted("ws") {
        let (ma, mb) = (map(&a, m, WS_BM)?.upload(&stream)?, map(&b, n, WS_BN)?.upload(&stream)?);
        let f = kernel_function(module, "gemm_ws")?;
        f.set_max_dynamic_shared_memory(WS_SMEM)?;
        let attrs = f.attributes()?;
        println!("  gemm_ws: {} registers, {} bytes local memory per thread", attrs.num_regs, attrs.local_bytes_per_thread);
        c.memset(&stream, 0)?;
        let blocks = (d.m / WS_BM) * (d.n / WS_BN);
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (288, 1, 1), shared_mem_bytes: WS_SMEM };
        let (pa, pb) = (ma.device_ptr(), mb.device_ptr());
        let ms = time_ms(ctx, 10, || {
            cuda_launch! { kernel: gemm_ws, stream: stream, module: module, config: config,
                args: [pa, pb, d, slice_mut(c)] }?;
            Ok(())
        })?;
        println!("  gemm_ws: {ms:.3} ms, {:.1} TFLOP/s", flops / ms / 1e9);
        let host = c.to_host_vec(&stream)?;
        ok &= check_samples("gemm_ws", &host);
        results.push(("gemm_ws".into(), ms, host));
    }

    match cublas {
        None => println!("  cuBLAS: skipped (set OXIDE_CUBLAS to compare)"),
        Some(cb) => {
            let mut cc = DeviceBuffer::<u32>::zeroed(&stream, m * n / 2)?;
            let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), cc.device_ptr());
            let ms = time_ms(ctx, 10, || Ok(cb.gemm(d, pa, pb, pc)?))?;
            let tflops = flops / ms / 1e9;
            println!("  cuBLAS: {ms:.3} ms, {tflops:.1} TFLOP/s");
            cc.memset(&stream, 0)?;
            cb.gemm(d, pa, pb, cc.device_ptr())?;
            let reference = cc.to_host_vec(&stream)?;
            ok &= check_samples("cuBLAS", &reference);
            for (name, oms, host) in &results {
                let mut bad = 0usize;
                for (i, (&x, &y)) in host.iter().zip(&reference).enumerate() {
                    for half in 0..2 {
                        let (gx, gy) = (from_bf16((x >> (16 * half)) as u16), from_bf16((y >> (16 * half)) as u16));
                        // Written so that a NaN counts as a difference.
                        let close = (gx - gy).abs() <= gy.abs().max(1.0) / 64.0;
                        if !close {
                            if bad < 3 {
                                println!("  {name}: entry {} = {gx}, cuBLAS {gy}", 2 * i + half);
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
    // Arguments: sizes (default 4096 8192; 1024 in debug builds, which the
    // GPU suite and compute-sanitizer run) and kernel names (simple, ws;
    // default both).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<u32> = args.iter().filter_map(|s| s.parse().ok()).collect();
    let kernels: Vec<String> = args.iter().filter(|s| s.parse::<u32>().is_err()).cloned().collect();
    let sizes = match (sizes.is_empty(), cfg!(debug_assertions)) {
        (false, _) => sizes,
        (true, false) => vec![4096, 8192],
        (true, true) => vec![1024],
    };
    let mut all_ok = true;
    for s in sizes {
        let d = Dims { m: s, n: s, k: s };
        match run_size(&ctx, &module, cublas.as_ref(), d, &kernels) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                println!("  error: {e}");
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
