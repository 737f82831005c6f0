//! gemm_bf16 (library): C = A·Bᵀ in bf16 with f32 accumulation on Hopper
//! (sm_90a), written in Rust: TMA copies tiles into shared memory, mbarriers
//! hand them from a producer warp to two consumer warpgroups, and wgmma
//! multiplies them. The kernels and their host setup (tensor maps, shared
//! memory, launch shape) live here so that the example (`src/main.rs`, which
//! compares them with cuBLAS) and the benchmarks (`benches/`, package
//! `oxide-bench`) run the same code: the device linker compiles these
//! kernels into whichever program links this crate, and [`Gemm`] launches
//! them from it.
//!
//! Layouts: A is M×K and B is N×K, both row-major (so both are "K-major",
//! the layout wgmma reads without transposing), C is M×N row-major bf16,
//! stored as pairs of bf16 in `u32` words (the low half is the even
//! column). In cuBLAS's column-major terms that is Cᵀ = op(B)·Aᵀ with
//! op = T.
//!
//! Kernels:
//! * [`gemm_simple`] — one warpgroup, a 64×128 tile, no pipelining: thread 0
//!   loads one 64-wide K step of A and B with TMA, everyone waits on the
//!   mbarrier, four m64n128k16 wgmmas, wait, repeat. The correctness
//!   baseline.
//! * [`gemm_ws`] — warp-specialised and persistent: 128×256 tiles, one
//!   block of 384 threads per multiprocessor taking tile after tile.
//!   Warps 0–7 are two consumer warpgroups (each owns 64 rows of the tile:
//!   128 f32 accumulators per thread, m64n256k16), warps 8–11 the producer
//!   warpgroup, which gives its registers to the consumers (`setmaxnreg`:
//!   40 and 232) and of which one lane issues the TMA loads into a ring of
//!   `STAGES` shared-memory stages (A 128×64 and B 256×64 bf16 each,
//!   128-byte swizzle), each with a "full" mbarrier (the bytes landed) and
//!   an "empty" one (both consumer warpgroups are done with it). Consumers
//!   keep one wgmma batch in flight (`wait_group::<1>`) and release a stage
//!   once its batch is complete. The ring runs on across a block's tiles.
//!   The epilogue writes a consumer's 64×256 result as bf16 into a
//!   shared-memory buffer (128-byte swizzle, two pieces of 128 columns)
//!   and stores it with TMA, which runs while the next tile is multiplied;
//!   storing straight from registers left the tensor cores idle while
//!   each tile was written out. Tiles are numbered in groups of 16 tile rows so
//!   that the blocks at work share A and B panels in L2. Where a few tiles
//!   with a long K would leave most multiprocessors idle, or the last wave
//!   of tiles would leave a third or more of them idle, the blocks share
//!   out those tiles' K steps equally instead (stream-K, [`Schedule`],
//!   [`StreamK`]): a tile cut between blocks is summed through a workspace
//!   in device memory, which the finishing block copies into its stage
//!   ring by TMA. The last wave's tiles can also be cut along K into a
//!   few pieces at the same K steps in every tile
//!   ([`Schedule::SplitTail`], not a default: slower than stream-K where
//!   measured).
//! * [`gemm_ws_pairs`] — `gemm_ws` in clusters of two blocks whose tiles lie
//!   one above the other and share their B tile ([`Schedule::TilePairs`]):
//!   each block's producer loads half of it and the TMA multicasts it into
//!   both blocks' stages, so a stage is free only once both blocks'
//!   consumers released it (they arrive on both blocks' barriers).
//! * [`gemm_ws_f16`] — `gemm_ws` for f16 A, B and C (the f16 wgmma, f32
//!   accumulation; [`Gemm::with_type`] with [`HalfType::F16`]), and
//!   [`gemm_ws_f16_pairs`] its twin in pairs.
//! * [`gemm_fp8_ws`] — the same pipeline for FP8: A and B e4m3 (one byte
//!   each, so a K step is 128 values in the same 128-byte rows), the
//!   m64n256k32 e4m3 wgmma, C = scale_a·scale_b·A·Bᵀ in bf16 with the two
//!   per-tensor scales read from device memory as cuBLASLt reads them
//!   ([`GemmFp8`] sets it up); [`gemm_fp8_ws_pairs`] its twin in pairs.
//!   [`gemm_fp8_ws_f32`] (and its twin in pairs) writes C in f32 instead
//!   ([`GemmFp8::launch_f32`]), in four pieces of 64 columns.
//!
//! ```ignore
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let dims = Dims { m: 4096, n: 4096, k: 4096 };
//! let gemm = Gemm::new(Kernel::Ws, &module, &stream, &a, &b, dims)?;
//! gemm.launch(&module, &stream, &mut c)?; // c: m·n/2 u32 words
//! ```
//!
//! The same product of f16 matrices (C f16):
//! `Gemm::with_type(Kernel::Ws, HalfType::F16, &module, &stream, &a, &b, dims)?`.
//!
//! A program that links this crate must be built for sm_90a (wgmma):
//! `[package.metadata.oxide] arch = "sm_90a"` in its Cargo.toml, or
//! `--arch sm_90a`.

use cuda_core::tensor_map::{TensorDataType, TensorMap};
use cuda_core::{CudaFunction, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, shared_address, MBarrier};
use cuda_device::half::{f16x2, f8e4m3};
use cuda_device::wgmma::{self, pack_bf16x2};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::{cluster, dynamic_shared, kernel, ptx_asm, thread, tma, warp, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};
use core::sync::atomic::{AtomicU32, Ordering};

/// K step of every tile (64 bf16 = 128 bytes: one 128-byte swizzle row).
pub const BK: u32 = 64;
/// Bytes of one 128-byte-swizzled row of a K step.
const ROW_BYTES: u32 = BK * 2;

/// The problem shape: A is m×k, B is n×k, C is m×n.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    /// Rows of A and C.
    pub m: u32,
    /// Rows of B, columns of C.
    pub n: u32,
    /// Columns of A and B (the reduction).
    pub k: u32,
}

impl Dims {
    /// Floating-point operations of one product (2·m·n·k).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Refuses an output C of `len` items of `T` that cannot hold the m×n
    /// product in `kind` elements (bf16 or f16 two to a u32 word, f32 one
    /// to an f32).
    fn check_output<T>(&self, kind: TensorDataType, len: usize) -> Result<(), Error> {
        let need = self.m as usize * self.n as usize * kind.size() as usize / std::mem::size_of::<T>();
        if len < need {
            let item = std::any::type_name::<T>();
            return Err(format!("C needs {need} {item} for {self:?} in {kind:?}; it has {len}").into());
        }
        Ok(())
    }
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

/// The generic pointer to shared address `address` of the launch's dynamic
/// shared memory, for ordinary loads and stores (which the compiler then
/// emits as shared-memory accesses).
#[inline(always)]
fn dynamic_shared_ptr<T>(address: u32) -> *mut T {
    // SAFETY: only the address is taken.
    let (base, _) = unsafe { dynamic_shared::<u8>() };
    base.wrapping_add((address - shared_address(base)) as usize) as *mut T
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
pub const SIMPLE_BM: u32 = 64;
/// Columns of the simple kernel's tile.
pub const SIMPLE_BN: u32 = 128;
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
            let da = wgmma::kmajor_b128(a_tile, SIMPLE_BM, k);
            let db = wgmma::kmajor_b128(b_tile, SIMPLE_BN, k);
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
pub const WS_BM: u32 = 128;
/// Columns of `gemm_ws`'s tile.
pub const WS_BN: u32 = 256;
/// Pipeline depth of `gemm_ws`.
const STAGES: u32 = 4;
/// Bytes of one stage: an A and a B tile.
const STAGE_BYTES: u32 = (WS_BM + WS_BN) * ROW_BYTES;
/// Rows of C in one TMA store box (a consumer's 64 rows).
const C_BOX_ROWS: u32 = 64;
/// Bytes of one box of C: 64 rows × 128 bytes (one 128-byte swizzle row,
/// 64 bf16 or f16 or 32 f32 columns).
const C_BOX_BYTES: u32 = C_BOX_ROWS * ROW_BYTES;
/// Boxes of C a consumer stores per piece: the epilogue stores a
/// consumer's 64×256 part of C in pieces of this many boxes through a
/// shared-memory buffer of one piece ([`c_pieces`]).
const C_BOXES: u32 = 2;
/// Bytes of one consumer's C buffer.
const C_BUFFER_BYTES: u32 = C_BOXES * C_BOX_BYTES;
/// Pieces of a consumer's 64×256 part of C when an element of C takes
/// `c_bytes` bytes: a piece is what the C buffer holds.
const fn c_pieces(c_bytes: u32) -> u32 {
    WS_BN * c_bytes * C_BOX_ROWS / C_BUFFER_BYTES
}
/// Columns of C in one TMA store box when an element takes `c_bytes`.
const fn c_box_cols(c_bytes: u32) -> u32 {
    ROW_BYTES / c_bytes
}
// The pieces of a 2-byte and of an f32 C, each `C_BOXES` boxes, cover a
// consumer's 256 columns exactly.
const _: () = assert!(c_pieces(2) * C_BOXES * c_box_cols(2) == WS_BN && c_pieces(4) * C_BOXES * c_box_cols(4) == WS_BN);
/// Dynamic shared memory of `gemm_ws`: the stages, both consumers' C
/// buffers, 2·STAGES + 2 barriers and one per partial-sum chunk buffer,
/// slack for the 1024-byte alignment.
pub const WS_SMEM: u32 = STAGES * STAGE_BYTES + 2 * C_BUFFER_BYTES + 8 * (2 * STAGES + 2 + 2 * PARTIAL_CHUNK_BUFFERS) + 1024;
/// Threads of a `gemm_ws` block: two consumer warpgroups and a producer one.
pub const WS_THREADS: u32 = 384;
/// Registers a producer thread keeps (`setmaxnreg`); with the consumers'
/// the block's total stays at 384 · 168 (65536 / 384, rounded down to 8).
const PRODUCER_REGISTERS: u32 = 40;
/// Registers a consumer thread gets: (384 · 168 − 128 · 40) / 256.
const CONSUMER_REGISTERS: u32 = 232;
/// Tile rows per group of the block order (L2 reuse).
const GROUP_M: u32 = 16;

/// C = A·Bᵀ, warp-specialised, pipelined and persistent (module docs).
/// Launch with 384 threads, at most `(m/128)·(n/256)` blocks (each takes
/// every gridDim-th tile), `WS_SMEM` bytes of dynamic shared
/// memory; `map_a`/`map_b` have boxes of 64×128 and 64×256 and the 128-byte
/// swizzle, `map_c` is a tensor map of `c` (bf16, m×n) with boxes of 64×64
/// and the 128-byte swizzle. m, n, k must be multiples of 128, 256 and 64.
#[kernel(launch_bounds(384, 1))]
pub fn gemm_ws(map_a: u64, map_b: u64, map_c: u64, dims: Dims, split: StreamK, c: DisjointSlice<u32>) {
    ws_body::<Bf16Inputs, Bf16Output, false>(map_a, map_b, map_c, dims, split, 1.0, c);
}

/// `gemm_ws` run by pairs of blocks ([`Schedule::TilePairs`]): a
/// thread-block cluster of two whose tiles lie one above the other (tiles
/// 2p and 2p + 1 of the grouped order) and so share their B tile. Each
/// block loads half of that B tile and the TMA writes it into both blocks'
/// stages (a multicast load), so B is read from L2 once per pair. Launch as
/// `gemm_ws` with an even grid, `map_b`'s box 64×128; m must be a multiple
/// of 256 (an even number of tile rows).
#[kernel(launch_bounds(384, 1), cluster_dims(2, 1, 1))]
pub fn gemm_ws_pairs(map_a: u64, map_b: u64, map_c: u64, dims: Dims, split: StreamK, c: DisjointSlice<u32>) {
    ws_body::<Bf16Inputs, Bf16Output, true>(map_a, map_b, map_c, dims, split, 1.0, c);
}

/// `gemm_ws` for f16: A and B f16, C f16 (f32 accumulation, the
/// m64n256k16 f16 wgmma), the same tiles, stages and schedules; `map_a`,
/// `map_b` and `map_c` are tensor maps of f16 elements.
#[kernel(launch_bounds(384, 1))]
pub fn gemm_ws_f16(map_a: u64, map_b: u64, map_c: u64, dims: Dims, split: StreamK, c: DisjointSlice<u32>) {
    ws_body::<F16Inputs, F16Output, false>(map_a, map_b, map_c, dims, split, 1.0, c);
}

/// [`gemm_ws_f16`] run by pairs of blocks that multicast their common B
/// tile, as [`gemm_ws_pairs`].
#[kernel(launch_bounds(384, 1), cluster_dims(2, 1, 1))]
pub fn gemm_ws_f16_pairs(map_a: u64, map_b: u64, map_c: u64, dims: Dims, split: StreamK, c: DisjointSlice<u32>) {
    ws_body::<F16Inputs, F16Output, true>(map_a, map_b, map_c, dims, split, 1.0, c);
}

/// C = scale_a·scale_b·A·Bᵀ for FP8 (e4m3) A and B, bf16 C: `gemm_ws` with
/// the FP8 wgmma (K = 32 per instruction) on the same stage ring, each K
/// step 128 elements (one 128-byte swizzle row, as bf16's 64). The scales
/// are the first elements of `scale_a` and `scale_b` (device memory, as
/// cuBLASLt takes them, so that a kernel may compute them just before).
/// Launch as `gemm_ws`, with tensor maps of u8 elements and boxes of
/// 128×128 and 128×256; k must be a multiple of 128.
#[kernel(launch_bounds(384, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_fp8_ws(
    map_a: u64,
    map_b: u64,
    map_c: u64,
    dims: Dims,
    split: StreamK,
    scale_a: &[f32],
    scale_b: &[f32],
    c: DisjointSlice<u32>,
) {
    ws_body::<Fp8Inputs, Bf16Output, false>(map_a, map_b, map_c, dims, split, fp8_scale(scale_a, scale_b), c);
}

/// The FP8 kernels' factor: the product of the first elements of the two
/// scale buffers. No bounds-check panic path (it would serialise the wgmma
/// pipeline); the host refuses empty scale buffers.
#[inline(always)]
fn fp8_scale(scale_a: &[f32], scale_b: &[f32]) -> f32 {
    scale_a.first().copied().unwrap_or(1.0) * scale_b.first().copied().unwrap_or(1.0)
}

/// `gemm_fp8_ws` run by pairs of blocks that multicast their common B
/// tile, as [`gemm_ws_pairs`]: `map_b`'s box 128×128, m a multiple of 256.
#[kernel(launch_bounds(384, 1), cluster_dims(2, 1, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_fp8_ws_pairs(
    map_a: u64,
    map_b: u64,
    map_c: u64,
    dims: Dims,
    split: StreamK,
    scale_a: &[f32],
    scale_b: &[f32],
    c: DisjointSlice<u32>,
) {
    ws_body::<Fp8Inputs, Bf16Output, true>(map_a, map_b, map_c, dims, split, fp8_scale(scale_a, scale_b), c);
}

/// `gemm_fp8_ws` with an f32 C (m×n, row-major): the product times the
/// scales, not rounded; the epilogue stores it in four pieces of 64
/// columns where a 2-byte C takes two of 128. Launch as `gemm_fp8_ws`,
/// `map_c` a tensor map of f32 elements (boxes of 64 rows × 32 columns).
#[kernel(launch_bounds(384, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_fp8_ws_f32(
    map_a: u64,
    map_b: u64,
    map_c: u64,
    dims: Dims,
    split: StreamK,
    scale_a: &[f32],
    scale_b: &[f32],
    c: DisjointSlice<f32>,
) {
    ws_body::<Fp8Inputs, F32Output, false>(map_a, map_b, map_c, dims, split, fp8_scale(scale_a, scale_b), c);
}

/// [`gemm_fp8_ws_f32`] run by pairs of blocks that multicast their common
/// B tile, as [`gemm_fp8_ws_pairs`].
#[kernel(launch_bounds(384, 1), cluster_dims(2, 1, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_fp8_ws_f32_pairs(
    map_a: u64,
    map_b: u64,
    map_c: u64,
    dims: Dims,
    split: StreamK,
    scale_a: &[f32],
    scale_b: &[f32],
    c: DisjointSlice<f32>,
) {
    ws_body::<Fp8Inputs, F32Output, true>(map_a, map_b, map_c, dims, split, fp8_scale(scale_a, scale_b), c);
}

/// What the persistent kernels' body needs of its input type: the wgmma
/// of a k slice, the elements of a K step (one 128-byte swizzle row) and
/// whether the product is scaled.
trait WsInputs {
    /// Elements of one K step: a 128-byte row.
    const K_STEP: u32;
    /// Whether C is the product times the launch's `scale` (FP8).
    const SCALED: bool;
    /// `acc` += the product of the k slices that `da` and `db` describe.
    ///
    /// # Safety
    /// As the wgmma function it calls: the whole warpgroup, the same
    /// descriptors, the tiles not written until the batch completed.
    unsafe fn mma(acc: &mut [f32; 128], da: u64, db: u64);
}

/// What the persistent kernels' epilogue needs of C's type: its size and
/// how two neighbouring results become its bits.
trait WsOutput {
    /// The element of the `c` a kernel takes: u32 pairs of a 2-byte type,
    /// or f32.
    type Word;
    /// Bytes of an element of C: 2 (bf16, f16) or 4 (f32).
    const BYTES: u32;
    /// Two results of neighbouring columns as C's type, `lo` in the low
    /// bits: a 2-byte C fills the low 32 bits, an f32 C all 64.
    fn pack(lo: f32, hi: f32) -> u64;
}

/// bf16 A and B.
struct Bf16Inputs;
/// f16 A and B.
struct F16Inputs;
/// e4m3 A and B, the product scaled.
struct Fp8Inputs;

/// bf16 C, as u32 pairs.
struct Bf16Output;
/// f16 C, as u32 pairs.
struct F16Output;
/// f32 C.
struct F32Output;

impl WsInputs for Bf16Inputs {
    const K_STEP: u32 = BK;
    const SCALED: bool = false;
    #[inline(always)]
    unsafe fn mma(acc: &mut [f32; 128], da: u64, db: u64) {
        // SAFETY: the caller's.
        unsafe { wgmma::m64n256k16_f32_bf16(acc, da, db, true) }
    }
}

impl WsInputs for F16Inputs {
    const K_STEP: u32 = BK;
    const SCALED: bool = false;
    #[inline(always)]
    unsafe fn mma(acc: &mut [f32; 128], da: u64, db: u64) {
        // SAFETY: the caller's.
        unsafe { wgmma::m64n256k16_f32_f16(acc, da, db, true) }
    }
}

impl WsInputs for Fp8Inputs {
    const K_STEP: u32 = ROW_BYTES;
    const SCALED: bool = true;
    #[inline(always)]
    unsafe fn mma(acc: &mut [f32; 128], da: u64, db: u64) {
        // SAFETY: the caller's.
        unsafe { wgmma::m64n256k32_f32_e4m3(acc, da, db, true) }
    }
}

impl WsOutput for Bf16Output {
    type Word = u32;
    const BYTES: u32 = 2;
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u64 {
        pack_bf16x2(lo, hi) as u64
    }
}

impl WsOutput for F16Output {
    type Word = u32;
    const BYTES: u32 = 2;
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u64 {
        f16x2::from_f32s(lo, hi).to_bits() as u64
    }
}

impl WsOutput for F32Output {
    type Word = f32;
    const BYTES: u32 = 4;
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u64 {
        lo.to_bits() as u64 | (hi.to_bits() as u64) << 32
    }
}

/// Arrivals that free a stage of a block of [`gemm_ws_pairs`]: lane 0 of
/// each of the 8 consumer warps of both blocks (both read the B half this
/// block's producer writes).
const PAIR_RELEASES: u32 = 2 * 8;

/// The body of `gemm_ws` (bf16), `gemm_ws_f16` and `gemm_fp8_ws` and
/// `gemm_fp8_ws_f32` (e4m3, the product multiplied by `scale`): the byte
/// layout of a stage is the same for all, only the wgmma instruction, the
/// elements per K step ([`WsInputs`]) and C's type ([`WsOutput`]) differ. With
/// `PAIRS` the blocks run in clusters of two that share each B tile
/// ([`gemm_ws_pairs`]): a stage is filled by both blocks' producers (A by
/// its own, each half of B by one of them, multicast), so it is free only
/// when the consumers of both blocks have released it, and neither block
/// may leave while the other can still write into it or arrive on its
/// barriers.
#[inline(always)]
fn ws_body<E: WsInputs, C: WsOutput, const PAIRS: bool>(
    map_a: u64,
    map_b: u64,
    map_c: u64,
    dims: Dims,
    split: StreamK,
    scale: f32,
    c: DisjointSlice<C::Word>,
) {
    // `c` is written only through `map_c` (the host made it of `c`'s
    // memory); holding it here is what makes the kernel its only writer.
    let _ = c;
    let base = aligned_dynamic_shared();
    let a_tile = |s: u32| base + s * WS_BM * ROW_BYTES;
    let b_tile = |s: u32| base + STAGES * WS_BM * ROW_BYTES + s * WS_BN * ROW_BYTES;
    let c_buffer = |wg: u32| base + STAGES * STAGE_BYTES + wg * C_BUFFER_BYTES;
    let bars = base + STAGES * STAGE_BYTES + 2 * C_BUFFER_BYTES;
    // SAFETY (both): 8-byte aligned words after the stages, inside the
    // launch's dynamic shared memory, used only as these barriers.
    let full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * s) };
    let empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (STAGES + s)) };
    // Consumer `wg`'s own barrier (its 128 threads), for its C buffer.
    let c_ready = |wg: u32| unsafe { MBarrier::from_address(bars + 8 * (2 * STAGES + wg)) };
    // Consumer `wg`'s barriers for the partial sums it copies into its
    // half of the ring (`StreamK::add_partials_from_ring`).
    let chunk_ready = |wg: u32, b: u32| unsafe { MBarrier::from_address(bars + 8 * (2 * STAGES + 2 + wg * PARTIAL_CHUNK_BUFFERS + b)) };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises; fence + barrier publish it.
            unsafe {
                full(s).init(1);
                empty(s).init(if PAIRS { PAIR_RELEASES } else { 256 });
            }
        }
        for wg in 0..2 {
            // SAFETY: as above.
            unsafe { c_ready(wg).init(128) };
            for b in 0..PARTIAL_CHUNK_BUFFERS {
                // SAFETY: as above.
                unsafe { chunk_ready(wg, b).init(1) };
            }
        }
        mbarrier::fence_init();
    }
    if PAIRS {
        // The other block multicasts into this block's stages and arrives
        // on its barriers: both blocks' barriers exist before either starts.
        cluster::sync();
    } else {
        thread::sync_threads();
    }
    // This block's half of a shared B tile (pairs): rows 128·rank….
    let rank = if PAIRS { cluster::ctarank() } else { 0 };
    // A stage is free again once every consumer that reads it let it go:
    // this block's 256 threads, or with pairs one lane per consumer warp
    // of both blocks, each arriving at both (whose producers both wrote
    // into the stage). A warp's lanes pass `wgmma::wait_group` together,
    // so its lane 0 speaks for the warp.
    let release = |stage: u32| {
        if PAIRS {
            if tid.is_multiple_of(32) {
                // SAFETY: ranks 0 and 1 are the pair; both initialised their
                // barriers before the cluster barrier above and leave only
                // after the one at the end. The warp's reads of the stage
                // completed (wgmma::wait_group), so a block-scope release
                // is enough: it says only that the stage may be refilled.
                unsafe {
                    empty(stage).arrive_cluster_after_reads(0);
                    empty(stage).arrive_cluster_after_reads(1);
                }
            }
        } else {
            empty(stage).arrive();
        }
    };

    let k_steps = dims.k / E::K_STEP;
    let tiles = (dims.m / WS_BM) * (dims.n / WS_BN);
    // The warp's role, broadcast from lane 0 so that ptxas sees a
    // warp-uniform value (a per-thread branch around wgmma serialises it).
    let warp_index = warp::shfl_idx(warp::FULL_MASK, tid / 32, 0);
    // Persistent: the block takes tiles blockIdx, blockIdx + gridDim, …;
    // `step` counts K steps across them, so the ring of stages (and each
    // barrier's phase) runs on from one tile into the next, and the
    // producer loads the next tile's first stages during the consumers'
    // stores.
    if warp_index >= 8 {
        // The producer warpgroup (one lane of its first warp works) gives
        // registers to the consumers, whose 128 accumulators and epilogue
        // addresses would not fit in the 168 a thread starts with.
        warpgroup::decrease_max_registers::<PRODUCER_REGISTERS>();
        // Producer warp: one lane issues every copy.
        if warp_index == 8 && warp::elect_one(warp::FULL_MASK) {
            tma::prefetch_tensor_map(map_a);
            tma::prefetch_tensor_map(map_b);
            let mut step = 0u32;
            let mut walk = Walk::of_block(split, tiles, k_steps);
            while let Some(segment) = walk.next_segment() {
                let (m0, n0) = ws_tile_origin(segment.tile, dims);
                let mut kb = segment.first;
                while kb < segment.last {
                    let s = step % STAGES;
                    if step >= STAGES {
                        empty(s).wait((step / STAGES - 1) & 1);
                    }
                    full(s).arrive_expect_tx(STAGE_BYTES);
                    // SAFETY: valid maps (host); the stage is free (its
                    // empty barrier completed, or it was never used) and
                    // 1024-aligned; `full(s)` expects both boxes' bytes.
                    // With pairs, both blocks' `full(s)` expect the whole B
                    // tile: half from each producer's multicast (the pair's
                    // tiles have the same n0).
                    unsafe {
                        let k = (kb * E::K_STEP) as i32;
                        tma::load_2d(a_tile(s), map_a, full(s), k, m0 as i32);
                        if PAIRS {
                            let half = rank * (WS_BN / 2);
                            tma::load_2d_multicast(b_tile(s) + half * ROW_BYTES, map_b, full(s), k, (n0 + half) as i32, 0b11);
                        } else {
                            tma::load_2d(b_tile(s), map_b, full(s), k, n0 as i32);
                        }
                    }
                    kb += 1;
                    step += 1;
                }
            }
        }
    } else {
        warpgroup::increase_max_registers::<CONSUMER_REGISTERS>();
        // Consumer warpgroup `wg` owns rows 64·wg… of each tile.
        let wg = warp_index / 4;
        // Its first thread issues its C stores; `syncs` counts its uses of
        // `c_ready` (the barrier's phase).
        let leader = tid % 128 == 0;
        let mut syncs = 0u32;
        let mut stored = false;
        let mut step = 0u32;
        let mut walk = Walk::of_block(split, tiles, k_steps);
        while let Some(segment) = walk.next_segment() {
            let (m0, n0) = ws_tile_origin(segment.tile, dims);
            let mut acc = wgmma::zeroed::<128>();
            let mut kb = segment.first;
            while kb < segment.last {
                let s = step % STAGES;
                full(s).wait((step / STAGES) & 1);
                wgmma::fence();
                for k in 0..4 {
                    let da = wgmma::kmajor_b128(a_tile(s) + wg * 64 * ROW_BYTES, 64, k);
                    let db = wgmma::kmajor_b128(b_tile(s), WS_BN, k);
                    // SAFETY: the whole warpgroup runs this with the same
                    // descriptors; the stage is not refilled before this
                    // warpgroup releases it below, after the batch completed.
                    unsafe { E::mma(&mut acc, da, db) };
                }
                wgmma::commit_group();
                // The previous step's batch is complete: release its stage.
                wgmma::wait_group::<1>();
                if kb > segment.first {
                    release((step - 1) % STAGES);
                }
                kb += 1;
                step += 1;
            }
            wgmma::wait_group::<0>();
            // The segment's last stage, read by the batch just completed.
            release((step - 1) % STAGES);
            let block = thread::blockIdx_x();
            if segment.first > 0 {
                // A later part of a tile that another block finishes: hand
                // the partial sums over and go on to the next segment.
                // SAFETY: `split` is the host's workspace for this grid
                // (stream-K or a split tail is on: only they make segments
                // that start inside a tile); the publisher's slot is this
                // segment's alone (`Walk::publisher`).
                let publisher = walk.publisher(block, segment);
                unsafe { split.publish_partial(&acc, publisher, wg) };
                sync_warpgroup(wg);
                if leader {
                    // SAFETY: as above; the flag is the publisher's own.
                    unsafe { split.flag(publisher, wg) }.store_scoped(1, Scope::Device, Ordering::Release);
                }
                continue;
            }
            if segment.last < k_steps {
                // The head of a tile whose later K steps other segments
                // summed: wait for their partial sums and add them.
                let contributors = walk.contributors(block, segment.tile);
                if leader {
                    let mut i = 0;
                    while i < contributors.count {
                        // SAFETY: publisher `contributors.id(i)` holds later
                        // steps of this tile and sets its flag once;
                        // resetting it leaves the word 0 for the next launch
                        // (launches share the workspace one after another,
                        // in stream order).
                        let flag = unsafe { split.flag(contributors.id(i), wg) };
                        while flag.load_scoped(Scope::Device, Ordering::Acquire) == 0 {}
                        flag.store_scoped(0, Scope::Device, Ordering::Relaxed);
                        i += 1;
                    }
                }
                // The leader's acquire, passed on to the warpgroup.
                sync_warpgroup(wg);
                let mut rest = walk;
                if !PAIRS && rest.next_segment().is_none() {
                    // The block's last segment (as a tile's head always
                    // is): the producer loads nothing more, so once the
                    // other consumer's last products are done the ring is
                    // free, and TMA copies the partial sums into it, many
                    // in flight, where loads into registers would wait
                    // for a few at a time.
                    sync_consumers();
                    let ring = base + wg * PARTIAL_CHUNK_BUFFERS * PARTIAL_CHUNK_BYTES;
                    // SAFETY: the flags were acquired (leader) before the
                    // barrier; the ring's half is this warpgroup's alone
                    // until the block ends; its barriers are initialised.
                    unsafe { split.add_partials_from_ring(&mut acc, contributors, wg, leader, ring, |b| chunk_ready(wg, b)) };
                } else {
                    let mut i = 0;
                    while i < contributors.count {
                        // SAFETY: the publisher wrote this slot before its
                        // flag, which the leader acquired before the barrier.
                        unsafe { split.add_partial(&mut acc, contributors.id(i), wg) };
                        i += 1;
                    }
                }
            }
            // The epilogue, piece by piece: wait until the last TMA store
            // has read the buffer, fill it, hand it to a TMA store and go on
            // (the store runs while the next tile is multiplied).
            let pieces = c_pieces(C::BYTES);
            let mut piece = 0;
            while piece < pieces {
                if stored {
                    if leader {
                        tma::wait_group_read::<0>();
                    }
                    c_ready(wg).arrive();
                    c_ready(wg).wait(syncs & 1);
                    syncs += 1;
                }
                stage_fragment::<E, C, 128>(&acc, scale, c_buffer(wg), piece);
                // The generic-proxy writes above, before the TMA store reads them.
                tma::fence_proxy_async_shared();
                c_ready(wg).arrive();
                c_ready(wg).wait(syncs & 1);
                syncs += 1;
                if leader {
                    let mut b = 0;
                    while b < C_BOXES {
                        let col = n0 + piece * (WS_BN / pieces) + b * c_box_cols(C::BYTES);
                        // SAFETY: `map_c` is a valid map of C (host); the box
                        // was written and fenced by the whole warpgroup
                        // (barrier above) and is not written again before
                        // `wait_group_read` says this store has read it.
                        unsafe { tma::store_2d(map_c, c_buffer(wg) + b * C_BOX_BYTES, col as i32, (m0 + 64 * wg) as i32) };
                        b += 1;
                    }
                    tma::commit_group();
                }
                stored = true;
                piece += 1;
            }
        }
        // The block's shared memory must outlive the stores reading it.
        if leader {
            tma::wait_group::<0>();
        }
    }
    if PAIRS {
        // Until both blocks are here, the other one's consumers may still
        // arrive on this block's barriers.
        cluster::sync();
    }
}

/// Writes piece `piece` (columns `piece·256/pieces`…, [`c_pieces`]) of one
/// consumer's 64×256 accumulator fragment as C's type (`C::pack`), times
/// `scale` when `E::SCALED`, into its C buffer at shared address `buffer`:
/// boxes of 64 rows × 128 bytes in the 128-byte swizzle a TMA store reads
/// (the 16-byte chunk `k` of row `r` at chunk `k ^ (r % 8)`), which also
/// spreads a warp's eight rows over all banks.
#[inline(always)]
fn stage_fragment<E: WsInputs, C: WsOutput, const R: usize>(acc: &[f32; R], scale: f32, buffer: u32, piece: u32) {
    let s = |v: f32| if E::SCALED { v * scale } else { v };
    // The writes below stay inside the consumer's buffer, which the
    // launch's shared memory holds.
    let t = thread::threadIdx_x() % 128;
    let row = 16 * (t / 32) + (t % 32) / 4;
    let box_cols = c_box_cols(C::BYTES);
    // Columns in a 16-byte chunk of the swizzle.
    let per_chunk = 16 / C::BYTES;
    let blocks_per_piece = (WS_BN / c_pieces(C::BYTES) / 8) as usize;
    // A pair of columns: one u32 of a 2-byte C, one u64 of f32 (8-byte
    // aligned: the pair's first column is even).
    let write = |address: u32, bits: u64| {
        // SAFETY: the callers' addresses lie inside this consumer's buffer
        // (row < 64, box < C_BOXES) and are aligned to the pair's size;
        // each (row, column pair) belongs to one thread.
        unsafe {
            if C::BYTES == 4 {
                dynamic_shared_ptr::<u64>(address).write(bits);
            } else {
                dynamic_shared_ptr::<u32>(address).write(bits as u32);
            }
        }
    };
    let first = piece as usize * blocks_per_piece;
    macro_rules! block {
        ($($j:literal)*) => {$(
            if 4 * $j < R && $j >= first && $j < first + blocks_per_piece {
                let col = 8 * ($j - first) as u32 + 2 * (t % 4);
                let (b, cb) = (col / box_cols, col % box_cols);
                let at = |r: u32| buffer + b * C_BOX_BYTES + r * ROW_BYTES + (((cb / per_chunk) ^ (r % 8)) * 16) + (cb % per_chunk) * C::BYTES;
                write(at(row), C::pack(s(acc[4 * $j]), s(acc[4 * $j + 1])));
                write(at(row + 8), C::pack(s(acc[4 * $j + 2]), s(acc[4 * $j + 3])));
            }
        )*};
    }
    block!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

/// The origin (first row, first column) of `gemm_ws`'s tile number `id`:
/// tiles are taken GROUP_M tile rows at a time, column by column, so that
/// the blocks running at once share A and B panels in L2.
#[inline(always)]
fn ws_tile_origin(id: u32, dims: Dims) -> (u32, u32) {
    // Divisors are at least 1, so no division-by-zero panic path: a call
    // in the kernel would make ptxas serialise the wgmma pipeline.
    let m_tiles = dims.m / WS_BM;
    let n_tiles = (dims.n / WS_BN).max(1);
    let group = id / (GROUP_M * n_tiles);
    let first_m = group * GROUP_M;
    // Not `clamp`: its debug assertion formats a message, which kernels cannot.
    #[allow(clippy::manual_clamp)]
    let rows = m_tiles.saturating_sub(first_m).max(1).min(GROUP_M);
    let in_group = id % (GROUP_M * n_tiles);
    ((first_m + in_group % rows) * WS_BM, (in_group / rows) * WS_BN)
}

/// How a persistent `gemm_ws` grid shares out its work, and stream-K's
/// workspace.
///
/// Block b of a grid of G takes the tiles below `whole_tiles` whole: b,
/// b + G, b + 2G, … (with no workspace, every tile). The K steps of the
/// other tiles are one sequence of S steps (tile by tile), of which block
/// b then takes steps ⌊b·S/G⌋ … ⌊(b+1)·S/G⌋ − 1 (stream-K): every
/// multiprocessor gets the same work, where whole tiles would leave some
/// idle in the last wave. A tile cut between blocks is finished by the
/// block that holds its first step, which reaches it last in its range;
/// each block that holds a later part reaches it first, writes its f32
/// sums to its own slot of `partials` and sets its flag, which the
/// finishing block waits for (it never waits for an earlier block, so the
/// blocks cannot wait in a circle), adds the slot into its sums and
/// resets. So a block contributes to at most one tile, and the order of
/// the sums (and the result) is the same at every launch. The finishing
/// block has no segment after it, so its stage ring is free by then: TMA
/// copies the slots into it, several chunks in flight, where loads into
/// registers (beside 128 accumulators) would wait for a few 16-byte loads
/// at a time.
///
/// With `pieces` P ≥ 2 (a split tail, [`Schedule::SplitTail`]) the L
/// tiles after the whole ones are instead each cut into P pieces of
/// (nearly) equal K ranges, the same ranges in every tile. The L·P pieces
/// are numbered piece P−1 of every tile first, then piece P−2, …, piece 0
/// last, and block b takes numbers b, b + G, …: the pieces running at once
/// cover the same K range of neighbouring tiles, which share A and B
/// panels in L2 as whole tiles do. Piece j ≥ 1 of tail tile t publishes
/// to slot (j − 1)·L + t; the block that holds piece 0 finishes the tile,
/// adding pieces 1 … P−1 in that order. Every piece a block waits for is
/// numbered below every piece 0, and a block reaches its pieces in
/// increasing order without waiting before its first piece 0, so no wait
/// is in a circle.
///
/// Either way the waits need every block of the grid resident at once, as
/// a persistent grid of at most one block per multiprocessor is unless
/// other work holds multiprocessors until this kernel ends.
#[derive(Clone, Copy, Debug)]
pub struct StreamK {
    /// Device address of `2·S` slots of `PARTIAL_WORDS` f32, S publishers
    /// (G blocks, or the L·(P − 1) later pieces of a split tail; publisher
    /// p's consumer warpgroup wg at slot `2p + wg`); 0 for whole tiles.
    partials: u64,
    /// Device address of a tensor map of `partials` (rows of
    /// `PARTIAL_ROW_WORDS` f32, boxes of `PARTIAL_CHUNK_ROWS` rows).
    partials_map: u64,
    /// Device address of `2·S` u32 flags, 0 when the launch starts.
    flags: u64,
    /// The tiles taken whole (with a workspace).
    whole_tiles: u32,
    /// 0 for stream-K; the pieces P of each tail tile for a split tail.
    pieces: u32,
}

/// f32 words of one consumer warpgroup's partial sums: its 64×256 part of
/// a tile.
const PARTIAL_WORDS: usize = 64 * WS_BN as usize;

/// f32 words of a row of the partial sums' tensor map (the box's inner
/// dimension, at most 256 elements).
const PARTIAL_ROW_WORDS: usize = 64;

/// Rows of one chunk of a partial sum that a finishing block copies into
/// shared memory at once: half a slot, 32 KiB.
const PARTIAL_CHUNK_ROWS: u32 = (PARTIAL_WORDS / PARTIAL_ROW_WORDS / 2) as u32;

/// Bytes of one such chunk.
const PARTIAL_CHUNK_BYTES: u32 = PARTIAL_CHUNK_ROWS * PARTIAL_ROW_WORDS as u32 * 4;

/// Chunk buffers a consumer warpgroup has in the stage ring while it adds
/// partial sums (its half of the ring).
const PARTIAL_CHUNK_BUFFERS: u32 = STAGES * STAGE_BYTES / 2 / PARTIAL_CHUNK_BYTES;

// A slot is two chunks; a chunk is a box of the partials' tensor map (at
// most 256 elements a side, rows of 16-byte multiples); each warpgroup
// has at least two buffers; the shared memory fits an sm_90 block.
const _: () = assert!(2 * PARTIAL_CHUNK_ROWS as usize * PARTIAL_ROW_WORDS == PARTIAL_WORDS);
const _: () = assert!(PARTIAL_CHUNK_ROWS <= 256 && PARTIAL_ROW_WORDS <= 256 && (PARTIAL_ROW_WORDS * 4).is_multiple_of(16));
const _: () = assert!(PARTIAL_CHUNK_BUFFERS >= 2);
const _: () = assert!(WS_SMEM <= 227 * 1024);

/// Four accumulators, written and read as one 16-byte access.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Quad([f32; 4]);

/// Adds quad j (`$quad(j)`, a `*const Quad`) into accumulators 4j…4j+3
/// of `$acc` for each literal j, unrolled so that the accumulators stay in
/// registers. Every `$quad(j)` must be readable, 16-byte aligned memory
/// that nobody writes meanwhile.
macro_rules! add_quads {
    ($acc:ident, $quad:ident; $($j:literal)*) => {$(
        // SAFETY: the caller's promise on `$quad` (above).
        let Quad(q) = unsafe { $quad($j).read() };
        $acc[4 * $j] += q[0];
        $acc[4 * $j + 1] += q[1];
        $acc[4 * $j + 2] += q[2];
        $acc[4 * $j + 3] += q[3];
    )*};
}

impl StreamK {
    /// Whole tiles: no workspace.
    const WHOLE_TILES: StreamK = StreamK { partials: 0, partials_map: 0, flags: 0, whole_tiles: 0, pieces: 0 };

    /// The tiles taken whole, of `tiles`.
    #[inline(always)]
    fn whole_tiles(self, tiles: u32) -> u32 {
        if self.partials == 0 {
            tiles
        } else {
            self.whole_tiles
        }
    }

    /// This thread's first quad in the slot of publisher `publisher`'s
    /// consumer warpgroup `wg`: quad j of thread t is at `j·128 + t`, so
    /// that a warp's accesses are 512 contiguous bytes.
    #[inline(always)]
    fn slot(self, publisher: u32, wg: u32) -> *mut Quad {
        let t = (thread::threadIdx_x() % 128) as usize;
        let slot = self.partials as usize + (2 * publisher + wg) as usize * PARTIAL_WORDS * 4;
        (slot + 16 * t) as *mut Quad
    }

    /// Writes this thread's 128 accumulators to its slot.
    ///
    /// # Safety
    /// `partials` holds slot `2·publisher + wg`, which no other thread of
    /// the launch writes and none reads before the publisher's flag is set.
    #[inline(always)]
    unsafe fn publish_partial(self, acc: &[f32; 128], publisher: u32, wg: u32) {
        let slot = self.slot(publisher, wg);
        macro_rules! quads {
            ($($j:literal)*) => {$(
                // SAFETY: inside the slot (the caller's contract), 16-byte
                // aligned (the buffer is, and so are slots and quads).
                unsafe { slot.add(128 * $j).write(Quad([acc[4 * $j], acc[4 * $j + 1], acc[4 * $j + 2], acc[4 * $j + 3]])) };
            )*};
        }
        quads!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    }

    /// Adds the sums of publisher `publisher`'s slot for warpgroup `wg`
    /// into `acc`.
    ///
    /// # Safety
    /// The slot was published (its flag acquired, then a barrier) and is
    /// not written again during the launch.
    #[inline(always)]
    unsafe fn add_partial(self, acc: &mut [f32; 128], publisher: u32, wg: u32) {
        let slot = self.slot(publisher, wg);
        // Inside the published slot.
        let quad = |j: usize| slot.wrapping_add(128 * j) as *const Quad;
        add_quads!(acc, quad; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    }

    /// Adds the sums of `contributors`' slots for warpgroup `wg` into
    /// `acc`, in the same order as [`add_partial`](Self::add_partial) one
    /// slot after another (so the same result), but copied by TMA into
    /// `PARTIAL_CHUNK_BUFFERS` buffers at shared address `ring`, half a
    /// slot at a time, up to that many chunks in flight; `leader` (one
    /// thread of the warpgroup) issues the copies, `ready(b)` is buffer
    /// b's barrier.
    ///
    /// # Safety
    /// Every slot was published and its flag acquired by `leader` before
    /// a barrier of the warpgroup; the buffers are shared memory no one
    /// else uses, 128-byte aligned; each `ready(b)` is initialised with
    /// count 1 and not in use; the whole warpgroup calls this.
    #[inline(always)]
    unsafe fn add_partials_from_ring(
        self,
        acc: &mut [f32; 128],
        contributors: Contributors,
        wg: u32,
        leader: bool,
        ring: u32,
        ready: impl Fn(u32) -> MBarrier,
    ) {
        let chunks = 2 * contributors.count;
        let slot_rows = (PARTIAL_WORDS / PARTIAL_ROW_WORDS) as u32;
        let buffer = |c: u32| ring + (c % PARTIAL_CHUNK_BUFFERS) * PARTIAL_CHUNK_BYTES;
        let copy = |c: u32| {
            let row = (2 * contributors.id(c / 2) + wg) * slot_rows + (c % 2) * PARTIAL_CHUNK_ROWS;
            let bar = ready(c % PARTIAL_CHUNK_BUFFERS);
            bar.arrive_expect_tx(PARTIAL_CHUNK_BYTES);
            // SAFETY: `partials_map` maps the workspace (host); the buffer
            // is free (never used, or every thread read it before the
            // warpgroup barrier that precedes this call); the barrier
            // expects the chunk's bytes.
            unsafe { tma::load_2d(buffer(c), self.partials_map, bar, 0, row as i32) };
        };
        if leader {
            // The publishers wrote their slots through the generic proxy;
            // the copies read them through the async one.
            // SAFETY: a fence, no operands.
            unsafe { ptx_asm!("fence.proxy.async.global;") };
            let mut c = 0;
            while c < chunks && c < PARTIAL_CHUNK_BUFFERS {
                copy(c);
                c += 1;
            }
        }
        let t = (thread::threadIdx_x() % 128) as usize;
        let mut c = 0;
        while c < chunks {
            ready(c % PARTIAL_CHUNK_BUFFERS).wait((c / PARTIAL_CHUNK_BUFFERS) & 1);
            // The reads stay inside the ring, in the launch's shared memory.
            let chunk = dynamic_shared_ptr::<Quad>(buffer(c)) as *const Quad;
            // Quad j of thread t at j·128 + t, as in the slot; inside the
            // chunk, which its barrier says has landed.
            let quad = |j: usize| chunk.wrapping_add((j % 16) * 128 + t);
            if c % 2 == 0 {
                add_quads!(acc, quad; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
            } else {
                add_quads!(acc, quad; 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
            }
            if c + PARTIAL_CHUNK_BUFFERS < chunks {
                // Every thread has read the buffer before it is refilled.
                sync_warpgroup(wg);
                if leader {
                    tma::fence_proxy_async_shared();
                    copy(c + PARTIAL_CHUNK_BUFFERS);
                }
            }
            c += 1;
        }
    }

    /// The flag of publisher `publisher`'s consumer warpgroup `wg`.
    ///
    /// # Safety
    /// `flags` holds `2·S` words of the launch, accessed only atomically.
    #[inline(always)]
    unsafe fn flag(self, publisher: u32, wg: u32) -> &'static AtomicU32 {
        // SAFETY: the caller's contract.
        unsafe { AtomicU32::from_ptr((self.flags as usize + 4 * (2 * publisher + wg) as usize) as *mut u32) }
    }
}

/// K steps `first..last` of tile `tile`: the part of a tile a block
/// multiplies in one go; `piece` is its piece of a split tail's tile (0
/// otherwise).
#[derive(Clone, Copy, Debug)]
struct Segment {
    tile: u32,
    first: u32,
    last: u32,
    piece: u32,
}

/// The publishers whose partial sums complete a tile: `count` ids from
/// `first`, `stride` apart.
#[derive(Clone, Copy, Debug)]
struct Contributors {
    first: u32,
    stride: u32,
    count: u32,
}

impl Contributors {
    /// The `i`-th publisher.
    #[inline(always)]
    fn id(self, i: u32) -> u32 {
        self.first + i * self.stride
    }
}

/// A block's walk over its segments ([`StreamK`]); the producer and the
/// consumers walk the same ones.
#[derive(Clone, Copy)]
struct Walk {
    /// The next whole tile (block b of G: b, b + G, …).
    next_tile: u32,
    /// The tiles taken whole: those below this one.
    whole_tiles: u32,
    /// The next K step of the block's stream-K range, counted over all
    /// tiles (tile t's steps are t·k_steps …).
    next_step: u32,
    /// The end of the block's stream-K range.
    end_step: u32,
    /// The first step of the shared-out tiles: whole_tiles · k_steps.
    base: u32,
    /// The shared-out steps: (tiles − whole_tiles) · k_steps.
    shared_steps: u32,
    k_steps: u32,
    /// Blocks in the grid.
    grid: u32,
    /// A split tail's pieces per tile (0: stream-K).
    pieces: u32,
    /// A split tail's tiles: those from `whole_tiles` on.
    tail_tiles: u32,
    /// The next piece number this block takes (block b of G: b, b + G, …).
    next_piece: u32,
    /// A split tail's pieces: `tail_tiles · pieces`.
    tail_pieces: u32,
}

impl Walk {
    /// The walk of this thread's block.
    #[inline(always)]
    fn of_block(split: StreamK, tiles: u32, k_steps: u32) -> Walk {
        Walk::new(split.whole_tiles(tiles), split.pieces, thread::blockIdx_x(), thread::gridDim_x(), tiles, k_steps)
    }

    /// The walk of block `block` of `grid` when the tiles below
    /// `whole_tiles` are taken whole and the others' K steps shared out:
    /// by stream-K (`pieces` 0) or as a split tail of `pieces` ≥ 2 pieces a
    /// tile (at most `k_steps`, which the host makes sure of).
    #[inline(always)]
    fn new(whole_tiles: u32, pieces: u32, block: u32, grid: u32, tiles: u32, k_steps: u32) -> Walk {
        // The host makes sure the products fit where tiles are shared out.
        let whole_tiles = whole_tiles.min(tiles);
        let base = whole_tiles.wrapping_mul(k_steps);
        let tail_tiles = tiles - whole_tiles;
        let shared_steps = tail_tiles.wrapping_mul(k_steps);
        let pieces = if pieces >= 2 { pieces } else { 0 };
        let tail_pieces = tail_tiles.wrapping_mul(pieces);
        let mut walk = Walk {
            next_tile: block,
            whole_tiles,
            next_step: 0,
            end_step: 0,
            base,
            shared_steps,
            k_steps,
            grid,
            pieces,
            tail_tiles,
            next_piece: block,
            tail_pieces,
        };
        walk.next_step = walk.start_of(block);
        walk.end_step = walk.start_of(block + 1);
        walk
    }

    /// The first step of block `block`'s stream-K range.
    #[inline(always)]
    fn start_of(self, block: u32) -> u32 {
        // The divisor is at least 1: no division-by-zero panic path (a
        // call would make ptxas serialise the wgmma pipeline).
        self.base + ((block as u64 * self.shared_steps as u64) / (self.grid as u64).max(1)) as u32
    }

    /// The first K step of piece `piece` of a split tail's tile.
    #[inline(always)]
    fn piece_start(self, piece: u32) -> u32 {
        // The divisor is at least 1 (no panic path, as in `start_of`).
        ((piece as u64 * self.k_steps as u64) / (self.pieces as u64).max(1)) as u32
    }

    /// The publisher whose slot and flag take block `block`'s partial sums
    /// of `segment` (which starts inside its tile): the block itself under
    /// stream-K (it contributes once), the piece under a split tail.
    #[inline(always)]
    fn publisher(self, block: u32, segment: Segment) -> u32 {
        if self.pieces >= 2 {
            (segment.piece - 1) * self.tail_tiles + (segment.tile - self.whole_tiles)
        } else {
            block
        }
    }

    /// The publishers whose partial sums block `block`, which holds the
    /// first step of tile `tile`, adds to finish it.
    #[inline(always)]
    fn contributors(self, block: u32, tile: u32) -> Contributors {
        if self.pieces >= 2 {
            Contributors { first: tile - self.whole_tiles, stride: self.tail_tiles, count: self.pieces - 1 }
        } else {
            Contributors { first: block + 1, stride: 1, count: self.contributors_end(block, tile) - block - 1 }
        }
    }

    /// The blocks that sum later K steps of tile `tile` for block `block`,
    /// which holds its first step under stream-K: `block + 1 ..` the
    /// returned end.
    #[inline(always)]
    fn contributors_end(self, block: u32, tile: u32) -> u32 {
        let tile_end = (tile + 1) * self.k_steps;
        let mut from = block + 1;
        while from < self.grid && self.start_of(from) < tile_end {
            from += 1;
        }
        from
    }

    #[inline(always)]
    fn next_segment(&mut self) -> Option<Segment> {
        if self.next_tile < self.whole_tiles {
            let tile = self.next_tile;
            self.next_tile += self.grid;
            return Some(Segment { tile, first: 0, last: self.k_steps, piece: 0 });
        }
        if self.pieces >= 2 {
            if self.next_piece >= self.tail_pieces {
                return None;
            }
            // Pieces P−1 of every tail tile first, piece 0 last (the
            // divisor is at least 1: no panic path).
            let tails = self.tail_tiles.max(1);
            let piece = self.pieces - 1 - self.next_piece / tails;
            let tile = self.whole_tiles + self.next_piece % tails;
            self.next_piece += self.grid;
            return Some(Segment { tile, first: self.piece_start(piece), last: self.piece_start(piece + 1), piece });
        }
        if self.next_step >= self.end_step {
            return None;
        }
        let tile = self.next_step / self.k_steps.max(1);
        let first = self.next_step - tile * self.k_steps;
        let last = self.k_steps.min(first + (self.end_step - self.next_step));
        self.next_step += last - first;
        Some(Segment { tile, first, last, piece: 0 })
    }
}

/// Waits until the 128 threads of consumer warpgroup `wg` (0 or 1,
/// warp-uniform) have arrived: named barrier 1 + wg (barrier 0 is
/// `sync_threads`; an immediate, since with a register ptxas reserves all
/// sixteen).
#[inline(always)]
fn sync_warpgroup(wg: u32) {
    // SAFETY: a barrier; the whole warpgroup calls it together.
    unsafe {
        if wg == 0 {
            ptx_asm!("bar.sync 1, 128;")
        } else {
            ptx_asm!("bar.sync 2, 128;")
        }
    }
}

/// Waits until the 256 threads of both consumer warpgroups have arrived
/// (named barrier 3).
#[inline(always)]
fn sync_consumers() {
    // SAFETY: a barrier; both consumer warpgroups call it together.
    unsafe { ptx_asm!("bar.sync 3, 256;") }
}

// ---------------------------------------------------------------------------
// Host side: tensor maps, shared memory, launch shape.

/// The error type of the host functions.
///
/// `Send` and `Sync`, so that a launch can run inside
/// `CudaStream::capture` (which records it into a CUDA graph) or on
/// another thread and hand its error back.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Which kernel a [`Gemm`] launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// [`gemm_simple`]: one warpgroup per 64×128 tile, no pipelining.
    Simple,
    /// [`gemm_ws`]: warp-specialised, pipelined, 128×256 tiles.
    Ws,
}

impl Kernel {
    /// The kernel's function name (`gemm_simple`, `gemm_ws`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Simple => "gemm_simple",
            Kernel::Ws => "gemm_ws",
        }
    }

    /// Rows and columns of C per block.
    fn tile(self) -> (u32, u32) {
        match self {
            Kernel::Simple => (SIMPLE_BM, SIMPLE_BN),
            Kernel::Ws => (WS_BM, WS_BN),
        }
    }

    /// Dynamic shared memory per block, in bytes.
    pub fn shared_bytes(self) -> u32 {
        match self {
            Kernel::Simple => SIMPLE_SMEM,
            Kernel::Ws => WS_SMEM,
        }
    }

    /// The launch shape for `dims` (which [`check_dims`] accepted):
    /// `gemm_ws` is persistent, a grid of `plan`'s blocks.
    fn config(self, dims: Dims, plan: &Plan) -> LaunchConfig {
        let (bm, bn) = self.tile();
        let (grid_dim, threads) = match self {
            Kernel::Simple => ((dims.n / bn, dims.m / bm, 1), 128),
            Kernel::Ws => ((plan.grid, 1, 1), WS_THREADS),
        };
        LaunchConfig { grid_dim, block_dim: (threads, 1, 1), shared_mem_bytes: self.shared_bytes() }
    }
}

/// Whether both kernels can compute a product of shape `dims`: they need
/// M, N, K to be non-zero multiples of 128, 256 and 64 (they have no edge
/// handling).
pub fn check_dims(dims: Dims) -> Result<(), String> {
    let fits = |x: u32, step: u32| x > 0 && x.is_multiple_of(step);
    if fits(dims.m, WS_BM) && fits(dims.n, WS_BN) && fits(dims.k, BK) {
        Ok(())
    } else {
        Err(format!("the kernels need M, N, K to be multiples of {WS_BM}, {WS_BN}, {BK}; not {dims:?}"))
    }
}

/// The driver function of kernel `name` (one of this crate's kernels,
/// compiled into `module`): its PTX entry name is mangled, so it is found
/// by the Rust path's last segment.
pub fn kernel_function(module: &KernelModule, name: &str) -> Result<CudaFunction, Error> {
    let suffix = format!("::{name}");
    let kernel = module
        .image()
        .kernels
        .iter()
        .find(|k| k.rust_path.ends_with(&suffix))
        .ok_or_else(|| format!("kernel {name} is not in module {}", module.name()))?;
    Ok(module.cuda_module().function(kernel.ptx_name)?)
}

/// A tensor map of a row-major `rows`×`k` matrix at `address` of `kind`
/// elements (bf16 or FP8 bytes) with boxes of one 128-byte row × `box_rows`
/// and the 128-byte swizzle, uploaded to the GPU.
fn upload_map(
    stream: &CudaStream,
    kind: TensorDataType,
    address: u64,
    rows: u32,
    k: u32,
    box_rows: u32,
) -> Result<DeviceBuffer<TensorMap>, Error> {
    let map = TensorMap::matrix_b128(kind, address, rows as u64, k as u64, box_rows).encode()?;
    Ok(map.upload(stream)?)
}

/// The tensor map of the last C a product was launched on (the persistent
/// kernels store C with TMA), encoded again only when C is another buffer
/// or holds another type.
#[derive(Default)]
struct OutputMap(std::cell::RefCell<Option<(u64, TensorDataType, DeviceBuffer<TensorMap>)>>);

impl OutputMap {
    /// The device address of the map of `c` (m×n `kind` elements: bf16 or
    /// f16 as u32 pairs, or f32): boxes of 64 rows × 128 bytes with the
    /// 128-byte swizzle, the layout the epilogue writes into shared memory;
    /// ordered as a read of the launch about to be queued on `stream`
    /// ([`order_tma_reads`]: a map replaced here is freed only after the
    /// launches that read it).
    fn of<T>(&self, stream: &CudaStream, kind: TensorDataType, c: &DeviceBuffer<T>, dims: Dims) -> Result<u64, Error> {
        let mut slot = self.0.borrow_mut();
        if let Some((address, held, map)) = slot.as_ref() {
            if *address == c.device_ptr() && *held == kind {
                map.order_read(stream)?;
                return Ok(map.device_ptr());
            }
        }
        let map = upload_map(stream, kind, c.device_ptr(), dims.m, dims.n, C_BOX_ROWS)?;
        map.order_read(stream)?;
        let pointer = map.device_ptr();
        *slot = Some((c.device_ptr(), kind, map));
        Ok(pointer)
    }
}

/// How the persistent kernels share a product's tiles among their blocks
/// (at most one per multiprocessor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Whole tiles, block b of G taking tiles b, b + G, b + 2G, …: where
    /// the tile count is not a multiple of G, the last wave leaves
    /// multiprocessors idle (256 tiles on 132 leave 8 of them idle for half
    /// the run).
    WholeTiles,
    /// Whole tiles for the full waves, then stream-K ([`StreamK`]) for
    /// the rest: every block the same share of the remaining tiles' K
    /// steps, a tile cut between blocks summed through a workspace (64 KiB
    /// a warpgroup) that the product keeps. The shared-out tiles are the
    /// last wave's, with one full wave more where the last is less than
    /// half full (so that a tile is cut into few parts). Results may
    /// differ from whole tiles' in the last bits (another order of the f32
    /// sums), and are the same at every launch.
    StreamK,
    /// Stream-K over every tile, no whole tiles first: for comparison. The
    /// blocks then work on tiles far apart in the matrix at the same time,
    /// which shares fewer A and B panels in L2.
    StreamKOnly,
    /// Whole tiles, as [`WholeTiles`](Self::WholeTiles), taken by pairs of
    /// blocks (a thread-block cluster of two, [`gemm_ws_pairs`]) whose
    /// tiles lie one above the other and so share their B tile: each block
    /// loads half of it and the TMA multicasts it to both, so B is read from
    /// L2 once per pair instead of twice. Needs M to be a multiple of 256
    /// (an even number of tile rows); the grid is the pairs the GPU holds
    /// at once (`CudaFunction::max_active_clusters`), two blocks each, at
    /// most one block per tile. Not a default: each block of a pair waits
    /// for the other at every stage, and only large FP8 products gained
    /// from the halved B traffic where it was measured (benches/README.md).
    TilePairs,
    /// Whole tiles for the full waves; the last wave's tiles, which would
    /// leave multiprocessors idle, each cut along K into the same few
    /// pieces ([`StreamK`]), so that more blocks share them. The pieces
    /// running at once cover the same K range of neighbouring tiles, which
    /// keeps the A and B panels they share in L2 (stream-K's blocks read
    /// them at scattered K offsets). The number of pieces is the one that
    /// makes the tail shortest ([`tail_pieces`]); where no cut shortens it,
    /// this is whole tiles. The partial sums go through a workspace (64 KiB
    /// a warpgroup per piece but the first) that the product keeps; results
    /// may differ from whole tiles' in the last bits, and are the same at
    /// every launch. Not a default: where it was measured (4096×14336×4096,
    /// 8192³) it ran slower than stream-K over the same last wave, and on
    /// 4096×14336×4096 slower than whole tiles (benches/README.md).
    SplitTail,
}

/// Rows of B one TMA box of `schedule`'s kernel loads: its whole tile, or
/// the half each block of a pair multicasts.
fn b_box_rows(schedule: Schedule) -> u32 {
    if schedule == Schedule::TilePairs {
        WS_BN / 2
    } else {
        WS_BN
    }
}

/// The shortest K (elements) for which [`Schedule::default_for`] picks
/// stream-K: on shorter products the partial sums' round trip cost more
/// than the idle multiprocessors (1024³ and 512×768×2048 ran 6–12 %
/// slower).
pub const STREAM_K_MIN_K: u32 = 8192;

/// The shortest K (elements) for which [`Schedule::default_for`] runs a
/// partly filled last wave by stream-K: the shortest at which that was
/// measured to gain (4096×14336×4096).
pub const STREAM_K_TAIL_MIN_K: u32 = 4096;

/// The fewest K steps a stream-K block takes: with fewer, filling and
/// draining its pipeline and the partial sums' round trip cost more than
/// the work.
const STREAM_K_MIN_STEPS: u64 = 4;

impl Schedule {
    /// Whether this schedule can run a product of shape `dims` (which
    /// [`check_dims`] or [`check_fp8_dims`] accepted): every one can but
    /// [`TilePairs`](Self::TilePairs), whose pairs of tiles one above the
    /// other need M to be a multiple of 256.
    pub fn check(self, dims: Dims) -> Result<(), String> {
        let m_tiles = dims.m / WS_BM;
        if self == Schedule::TilePairs && (m_tiles == 0 || !m_tiles.is_multiple_of(2)) {
            return Err(format!(
                "Schedule::TilePairs pairs tiles one above the other: M must be a multiple of {}; {dims:?}",
                2 * WS_BM
            ));
        }
        Ok(())
    }

    /// The default for `dims` on a GPU of `sms` multiprocessors:
    /// stream-K where the tiles would leave most multiprocessors idle (at
    /// most half of them busy) and K is long (at least
    /// [`STREAM_K_MIN_K`]); stream-K over the last wave where the tiles
    /// fill whole waves and then at most two thirds of one more, with K
    /// at least [`STREAM_K_TAIL_MIN_K`]; whole tiles elsewhere.
    ///
    /// Measured (benches/README.md): stream-K ran 256×512×16384 1.76
    /// times as fast as whole tiles (H200). Over a last wave 52–58 % full
    /// it gained about 1 % (H100: 4096×14336×4096, and 8192³ in bf16 and
    /// fp8); over one 88–94 % full it lost 6–12 % (4096³,
    /// 8192×1024×8192), since blocks that start at scattered K offsets
    /// lose the A and B panels that whole tiles read in step from L2,
    /// which costs more than the few idle multiprocessors. The gain per
    /// wave fell with the last wave's fill from 52 % to 58 % as if to
    /// reach nothing near two thirds, hence that bound.
    pub fn default_for(dims: Dims, sms: u32) -> Schedule {
        let tiles = (dims.m / WS_BM) * (dims.n / WS_BN);
        let last_wave = tiles % sms.max(1);
        let few_tiles = 2 * tiles <= sms && dims.k >= STREAM_K_MIN_K;
        let short_last_wave = tiles > sms && last_wave > 0 && 3 * last_wave <= 2 * sms && dims.k >= STREAM_K_TAIL_MIN_K;
        if few_tiles || short_last_wave {
            Schedule::StreamK
        } else {
            Schedule::WholeTiles
        }
    }
}

/// Stream-K's partial sums and flags for a grid of G blocks ([`StreamK`]).
struct Workspace {
    partials: DeviceBuffer<f32>,
    flags: DeviceBuffer<u32>,
    /// `partials` as rows of `PARTIAL_ROW_WORDS` f32, copied in chunks of
    /// `PARTIAL_CHUNK_ROWS` rows by the finishing blocks.
    partials_map: DeviceBuffer<TensorMap>,
}

/// The tiles `Schedule::StreamK` takes whole on a grid of `grid`: all but
/// the last wave's, and all but two waves' where the last is less than
/// half full; all where the waves are full.
fn whole_tiles_before_stream_k(tiles: u32, grid: u32) -> u32 {
    let (waves, last) = (tiles / grid, tiles % grid);
    if last == 0 {
        tiles
    } else if 2 * last >= grid || waves == 0 {
        waves * grid
    } else {
        (waves - 1) * grid
    }
}

/// The most pieces [`Schedule::SplitTail`] cuts a tile into: the block
/// that finishes a tile adds one partial sum per further piece.
pub const MAX_TAIL_PIECES: u32 = 8;

/// What finishing a tile costs per piece beyond the first, in K steps: the
/// publisher's store and the finishing block's load and add of one partial
/// sum (64 KiB a warpgroup, through L2), about a K step's time each.
const PIECE_COST_STEPS: u32 = 2;

/// How many pieces [`Schedule::SplitTail`] cuts each of `tail` tiles of
/// `k_steps` K steps into on a grid of `grid` blocks: the count from 1 to
/// [`MAX_TAIL_PIECES`] (and at most `k_steps`) whose tail is shortest,
/// counted in K steps a block runs one after another: its rounds of pieces
/// (`⌈tail·P / grid⌉`) times a piece's steps (`⌈k_steps / P⌉`), plus
/// a fixed cost in steps per further piece (the store of a partial sum and
/// its load and add by the block that finishes the tile). 1 means whole
/// tiles. The fewest pieces win a tie.
pub fn tail_pieces(tail: u32, k_steps: u32, grid: u32) -> u32 {
    if tail == 0 || grid == 0 || k_steps == 0 {
        return 1;
    }
    let cost = |p: u32| -> u64 {
        let rounds = (tail as u64 * p as u64).div_ceil(grid as u64);
        rounds * k_steps.div_ceil(p) as u64 + (PIECE_COST_STEPS * (p - 1)) as u64
    };
    (1..=MAX_TAIL_PIECES.min(k_steps)).min_by_key(|&p| (cost(p), p)).unwrap_or(1)
}

/// The grid of [`Schedule::TilePairs`] for `dims` on a GPU that holds
/// `pairs` clusters of two blocks at once: whole pairs, no more than run
/// together (a persistent block that waits for another's multiprocessor
/// would start its tiles a whole wave late), at least one pair. Fails
/// unless M is a multiple of 256, since a pair's tiles lie one above the
/// other, and where the GPU holds no pair.
fn pairs_grid(dims: Dims, pairs: u32) -> Result<u32, String> {
    Schedule::TilePairs.check(dims)?;
    if pairs == 0 {
        return Err("the GPU holds no cluster of two persistent GEMM blocks at once (their shared memory)".into());
    }
    let tiles = (dims.m / WS_BM) * (dims.n / WS_BN);
    Ok((tiles.min(2 * pairs) & !1).max(2))
}

/// What the GPU holds at once, which sizes a persistent grid.
#[derive(Clone, Copy, Debug)]
struct Residency {
    /// Multiprocessors (one persistent block each).
    sms: u32,
    /// Clusters of two blocks of the pairs' kernel: at most `sms / 2`, fewer
    /// where a group of multiprocessors (GPC) has an odd one out.
    pairs: u32,
}

impl Residency {
    /// Asks the driver, for the pairs' kernel `pairs_kernel` (its dynamic
    /// shared memory limit already raised to [`WS_SMEM`]).
    fn of(stream: &CudaStream, pairs_kernel: &CudaFunction) -> Result<Residency, Error> {
        let sms = stream.context().multiprocessor_count()?.max(1);
        let shape = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (WS_THREADS, 1, 1), shared_mem_bytes: WS_SMEM }
            .with_cluster((2, 1, 1));
        Ok(Residency { sms, pairs: pairs_kernel.max_active_clusters(&shape)? })
    }
}

/// A persistent launch's grid and schedule, with stream-K's workspace.
struct Plan {
    schedule: Schedule,
    grid: u32,
    /// The tiles taken whole before stream-K or a split tail ([`StreamK`]).
    whole_tiles: u32,
    /// A split tail's pieces a tile (0: stream-K or none).
    pieces: u32,
    /// Stream-K's; in a `RefCell` because every launch orders it as its
    /// write.
    workspace: std::cell::RefCell<Option<Workspace>>,
}

impl Plan {
    /// The plan for `dims` in K steps of `k_step` elements on a GPU that
    /// holds `resident`. Fails if `schedule` is stream-K and the tiles' K
    /// steps do not fit in 32 bits (the kernel counts them so), and where
    /// [`pairs_grid`] does.
    fn new(stream: &CudaStream, dims: Dims, k_step: u32, resident: Residency, schedule: Schedule) -> Result<Plan, Error> {
        let tiles = (dims.m / WS_BM) * (dims.n / WS_BN);
        let total = tiles as u64 * (dims.k / k_step) as u64;
        let sms = resident.sms.max(1);
        let workspace_of = |publishers: usize| -> Result<Option<Workspace>, Error> {
            let slots = 2 * publishers;
            let partials = DeviceBuffer::zeroed(stream, slots * PARTIAL_WORDS)?;
            let rows = (slots * PARTIAL_WORDS / PARTIAL_ROW_WORDS) as u64;
            let row_bytes = (PARTIAL_ROW_WORDS * 4) as u64;
            let map = TensorMap::tiled(TensorDataType::F32, partials.device_ptr(), &[PARTIAL_ROW_WORDS as u64, rows], &[row_bytes], &[PARTIAL_ROW_WORDS as u32, PARTIAL_CHUNK_ROWS])
                .encode()?;
            Ok(Some(Workspace { partials, flags: DeviceBuffer::zeroed(stream, slots)?, partials_map: map.upload(stream)? }))
        };
        let (grid, whole_tiles, pieces, workspace) = match schedule {
            Schedule::WholeTiles => (tiles.min(sms), tiles, 0, None),
            Schedule::TilePairs => (pairs_grid(dims, resident.pairs)?, tiles, 0, None),
            Schedule::SplitTail => {
                // The tail: the last wave's tiles, or every tile where they
                // do not fill one.
                let tail = tiles % sms;
                let p = tail_pieces(tail, dims.k / k_step, sms);
                if p < 2 {
                    (tiles.min(sms), tiles, 0, None)
                } else {
                    let grid = if tiles >= sms { sms } else { (tiles * p).min(sms) };
                    (grid, tiles - tail, p, workspace_of((tail * (p - 1)) as usize)?)
                }
            }
            Schedule::StreamK | Schedule::StreamKOnly => {
                if total > u32::MAX as u64 {
                    return Err(format!("stream-K counts a product's K steps in 32 bits; {dims:?} has {total}").into());
                }
                let grid = (sms as u64).min(total / STREAM_K_MIN_STEPS).max(1) as u32;
                let whole_tiles = if schedule == Schedule::StreamKOnly { 0 } else { whole_tiles_before_stream_k(tiles, grid) };
                (grid, whole_tiles, 0, workspace_of(grid as usize)?)
            }
        };
        Ok(Plan { schedule, grid, whole_tiles, pieces, workspace: std::cell::RefCell::new(workspace) })
    }

    /// The kernel's [`StreamK`] argument for a launch about to be queued
    /// on `stream`, the workspace ordered as that launch's write: a launch
    /// on another stream waits for the last one, whose flags it needs at
    /// 0, and the workspace is freed only after both.
    fn split(&self, stream: &CudaStream) -> Result<StreamK, Error> {
        let mut workspace = self.workspace.borrow_mut();
        let Some(workspace) = workspace.as_mut() else { return Ok(StreamK::WHOLE_TILES) };
        workspace.partials.order_write(stream)?;
        workspace.flags.order_write(stream)?;
        workspace.partials_map.order_read(stream)?;
        Ok(StreamK {
            partials: workspace.partials.device_ptr(),
            partials_map: workspace.partials_map.device_ptr(),
            flags: workspace.flags.device_ptr(),
            whole_tiles: self.whole_tiles,
            pieces: self.pieces,
        })
    }
}

/// Orders a launch on `stream` that reads A and B through their tensor
/// maps (TMA): the launch arguments are addresses, which the typed launch
/// cannot see, so the maps and the matrices are ordered here as the
/// launch's reads: it waits for their last writes on other streams, and
/// their later writes and frees (on other streams) wait for it.
fn order_tma_reads<T>(stream: &CudaStream, maps: [&DeviceBuffer<TensorMap>; 2], inputs: [&DeviceBuffer<T>; 2]) -> Result<(), Error> {
    for map in maps {
        map.order_read(stream)?;
    }
    for input in inputs {
        input.order_read(stream)?;
    }
    Ok(())
}

/// The 16-bit float type of a [`Gemm`]'s A, B and C (each element's bits
/// in a `u16`; C as pairs in `u32` words). The tensor cores accumulate in
/// f32 for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfType {
    /// bfloat16: 8 exponent bits, 7 mantissa bits.
    Bf16,
    /// IEEE binary16: 5 exponent bits, 10 mantissa bits.
    F16,
}

impl HalfType {
    /// The tensor maps' element type.
    fn tensor_type(self) -> TensorDataType {
        match self {
            HalfType::Bf16 => TensorDataType::BF16,
            HalfType::F16 => TensorDataType::F16,
        }
    }
}

/// The persistent kernel for `half` and its pairs twin.
fn ws_function_names(half: HalfType) -> [&'static str; 2] {
    match half {
        HalfType::Bf16 => ["gemm_ws", "gemm_ws_pairs"],
        HalfType::F16 => ["gemm_ws_f16", "gemm_ws_f16_pairs"],
    }
}

/// One product C = A·Bᵀ set up for repeated launches of one kernel: the
/// shape checked, the tensor maps of `a` and `b` encoded and uploaded, the
/// kernel's dynamic shared memory limit raised. It borrows `a` and `b`
/// because the tensor maps hold their addresses; each launch reads their
/// current contents.
pub struct Gemm<'a> {
    kernel: Kernel,
    /// The type of A, B and C.
    half: HalfType,
    dims: Dims,
    map_a: DeviceBuffer<TensorMap>,
    map_b: DeviceBuffer<TensorMap>,
    map_c: OutputMap,
    /// The persistent kernel's grid and schedule.
    plan: Plan,
    /// What the GPU holds at once, for the plans of [`Gemm::with_schedule`].
    resident: Residency,
    /// A and B, which the kernels read through the maps.
    inputs: [&'a DeviceBuffer<u16>; 2],
}

impl<'a> Gemm<'a> {
    /// Prepares `kernel` (compiled into `module`) for A = `a` (row-major
    /// m×k bf16 bits) and B = `b` (row-major n×k), `gemm_ws` with the
    /// default [`Schedule`] for the shape. Fails on a shape the kernels do
    /// not support ([`check_dims`]), on buffers shorter than the shape
    /// says, and on driver errors.
    pub fn new(
        kernel: Kernel,
        module: &KernelModule,
        stream: &CudaStream,
        a: &'a DeviceBuffer<u16>,
        b: &'a DeviceBuffer<u16>,
        dims: Dims,
    ) -> Result<Gemm<'a>, Error> {
        Gemm::with_type(kernel, HalfType::Bf16, module, stream, a, b, dims)
    }

    /// [`Gemm::new`] for A, B and C of type `half`, bf16 or f16 (the bits
    /// of each element in a `u16`). f16 runs on [`Kernel::Ws`] only
    /// ([`gemm_ws_f16`]); [`Kernel::Simple`] refuses it.
    pub fn with_type(
        kernel: Kernel,
        half: HalfType,
        module: &KernelModule,
        stream: &CudaStream,
        a: &'a DeviceBuffer<u16>,
        b: &'a DeviceBuffer<u16>,
        dims: Dims,
    ) -> Result<Gemm<'a>, Error> {
        check_dims(dims)?;
        if kernel == Kernel::Simple && half != HalfType::Bf16 {
            return Err(format!("gemm_simple multiplies bf16 only; {half:?} runs on Kernel::Ws").into());
        }
        let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
        if a.len() < m * k || b.len() < n * k {
            return Err(format!("A needs {} and B {} elements for {dims:?}; they have {} and {}", m * k, n * k, a.len(), b.len()).into());
        }
        let (bm, bn) = kernel.tile();
        let names = ws_function_names(half);
        let name = if kernel == Kernel::Ws { names[0] } else { kernel.name() };
        kernel_function(module, name)?.set_max_dynamic_shared_memory(kernel.shared_bytes())?;
        let pairs_kernel = kernel_function(module, names[1])?;
        pairs_kernel.set_max_dynamic_shared_memory(WS_SMEM)?;
        let resident = Residency::of(stream, &pairs_kernel)?;
        let schedule = if kernel == Kernel::Ws { Schedule::default_for(dims, resident.sms) } else { Schedule::WholeTiles };
        let b_rows = if kernel == Kernel::Ws { b_box_rows(schedule) } else { bn };
        let map_a = upload_map(stream, half.tensor_type(), a.device_ptr(), dims.m, dims.k, bm)?;
        let map_b = upload_map(stream, half.tensor_type(), b.device_ptr(), dims.n, dims.k, b_rows)?;
        let plan = Plan::new(stream, dims, BK, resident, schedule)?;
        Ok(Gemm { kernel, half, dims, map_a, map_b, map_c: OutputMap::default(), plan, resident, inputs: [a, b] })
    }

    /// The same product with `gemm_ws` scheduled by `schedule` (no effect
    /// on `gemm_simple`). Fails where the shape does not allow it
    /// ([`Schedule::TilePairs`] needs M to be a multiple of 256).
    pub fn with_schedule(mut self, stream: &CudaStream, schedule: Schedule) -> Result<Gemm<'a>, Error> {
        if self.kernel != Kernel::Ws {
            return Ok(self);
        }
        let plan = Plan::new(stream, self.dims, BK, self.resident, schedule)?;
        if b_box_rows(schedule) != b_box_rows(self.plan.schedule) {
            let b = self.inputs[1];
            self.map_b = upload_map(stream, self.half.tensor_type(), b.device_ptr(), self.dims.n, self.dims.k, b_box_rows(schedule))?;
        }
        self.plan = plan;
        Ok(self)
    }

    /// How `gemm_ws` shares out the tiles.
    pub fn schedule(&self) -> Schedule {
        self.plan.schedule
    }

    /// The kernel this product launches.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The type of A, B and C.
    pub fn half_type(&self) -> HalfType {
        self.half
    }

    /// The function name of the kernel a launch runs: [`Kernel::name`]
    /// for bf16, `gemm_ws_f16` for f16, and their `_pairs` twins under
    /// [`Schedule::TilePairs`].
    pub fn function_name(&self) -> &'static str {
        match self.kernel {
            Kernel::Simple => self.kernel.name(),
            Kernel::Ws => ws_function_names(self.half)[(self.plan.schedule == Schedule::TilePairs) as usize],
        }
    }

    /// The shape.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// Floating-point operations of one product (2·m·n·k).
    pub fn flops(&self) -> f64 {
        self.dims.flops()
    }

    /// Launches the kernel on `stream` (asynchronously): `c` (m·n/2 words,
    /// each two elements of a row in the product's [`HalfType`]) = A·Bᵀ.
    /// `module` must be the one passed to [`Gemm::new`].
    pub fn launch(&self, module: &KernelModule, stream: &CudaStream, c: &mut DeviceBuffer<u32>) -> Result<(), Error> {
        self.dims.check_output::<u32>(self.half.tensor_type(), c.len())?;
        let config = self.kernel.config(self.dims, &self.plan);
        order_tma_reads(stream, [&self.map_a, &self.map_b], self.inputs)?;
        let (pa, pb, dims) = (self.map_a.device_ptr(), self.map_b.device_ptr(), self.dims);
        match self.kernel {
            Kernel::Simple => cuda_launch! { kernel: gemm_simple, stream: stream, module: module, config: config,
                args: [pa, pb, dims, slice_mut(*c)] }?,
            Kernel::Ws => {
                let pc = self.map_c.of(stream, self.half.tensor_type(), c, dims)?;
                let split = self.plan.split(stream)?;
                match (self.half, self.plan.schedule == Schedule::TilePairs) {
                    (HalfType::Bf16, true) => cuda_launch! { kernel: gemm_ws_pairs, stream: stream, module: module,
                        config: config, args: [pa, pb, pc, dims, split, slice_mut(*c)] }?,
                    (HalfType::Bf16, false) => cuda_launch! { kernel: gemm_ws, stream: stream, module: module,
                        config: config, args: [pa, pb, pc, dims, split, slice_mut(*c)] }?,
                    (HalfType::F16, true) => cuda_launch! { kernel: gemm_ws_f16_pairs, stream: stream, module: module,
                        config: config, args: [pa, pb, pc, dims, split, slice_mut(*c)] }?,
                    (HalfType::F16, false) => cuda_launch! { kernel: gemm_ws_f16, stream: stream, module: module,
                        config: config, args: [pa, pb, pc, dims, split, slice_mut(*c)] }?,
                }
            }
        }
        Ok(())
    }
}

/// Whether `gemm_fp8_ws` can compute a product of shape `dims`: M, N, K
/// non-zero multiples of 128, 256 and 128 (one K step is 128 FP8 values).
pub fn check_fp8_dims(dims: Dims) -> Result<(), String> {
    let fits = |x: u32, step: u32| x > 0 && x.is_multiple_of(step);
    if fits(dims.m, WS_BM) && fits(dims.n, WS_BN) && fits(dims.k, ROW_BYTES) {
        Ok(())
    } else {
        Err(format!("the FP8 kernel needs M, N, K to be multiples of {WS_BM}, {WS_BN}, {ROW_BYTES}; not {dims:?}"))
    }
}

/// One FP8 product C = scale_a·scale_b·A·Bᵀ (A m×k and B n×k row-major
/// e4m3, C m×n bf16 or f32, the tensor cores' FP8 accumulation) set up for
/// repeated launches of `gemm_fp8_ws` or `gemm_fp8_ws_f32`: the shape
/// checked, the tensor maps encoded, the shared memory limit raised. The
/// per-tensor scales stay in device memory (the first element of each
/// buffer) and are read at every launch, as cuBLASLt's FP8 matmul reads
/// them.
///
/// ```ignore
/// let gemm = GemmFp8::new(&module, &stream, &a, &b, Fp8Scales { a: &sa, b: &sb }, dims)?;
/// gemm.launch(&module, &stream, &mut c)?; // c: m·n/2 u32 words of bf16 pairs
/// gemm.launch_f32(&module, &stream, &mut c32)?; // c32: m·n f32
/// ```
pub struct GemmFp8<'a> {
    dims: Dims,
    map_a: DeviceBuffer<TensorMap>,
    map_b: DeviceBuffer<TensorMap>,
    map_c: OutputMap,
    scale_a: &'a DeviceBuffer<f32>,
    scale_b: &'a DeviceBuffer<f32>,
    /// The grid and schedule.
    plan: Plan,
    /// What the GPU holds at once, for the plans of [`GemmFp8::with_schedule`].
    resident: Residency,
    /// A and B, which the kernel reads through the maps.
    inputs: [&'a DeviceBuffer<f8e4m3>; 2],
}

/// The per-tensor factors of an FP8 product (the first element of each).
#[derive(Clone, Copy)]
pub struct Fp8Scales<'a> {
    /// A's factor.
    pub a: &'a DeviceBuffer<f32>,
    /// B's factor.
    pub b: &'a DeviceBuffer<f32>,
}

impl<'a> GemmFp8<'a> {
    /// Prepares `gemm_fp8_ws` (compiled into `module`) for A = `a` (m×k)
    /// and B = `b` (n×k), with the default [`Schedule`] for the shape.
    /// Fails on a shape it does not support ([`check_fp8_dims`]), on
    /// buffers shorter than the shape says, on an empty scale buffer, and
    /// on driver errors.
    pub fn new(
        module: &KernelModule,
        stream: &CudaStream,
        a: &'a DeviceBuffer<f8e4m3>,
        b: &'a DeviceBuffer<f8e4m3>,
        scales: Fp8Scales<'a>,
        dims: Dims,
    ) -> Result<GemmFp8<'a>, Error> {
        check_fp8_dims(dims)?;
        let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
        if a.len() < m * k || b.len() < n * k {
            return Err(format!("A needs {} and B {} elements for {dims:?}; they have {} and {}", m * k, n * k, a.len(), b.len()).into());
        }
        if scales.a.is_empty() || scales.b.is_empty() {
            return Err("each FP8 scale buffer needs one element (the factor)".into());
        }
        for name in ["gemm_fp8_ws", "gemm_fp8_ws_f32", "gemm_fp8_ws_f32_pairs"] {
            kernel_function(module, name)?.set_max_dynamic_shared_memory(WS_SMEM)?;
        }
        let pairs_kernel = kernel_function(module, "gemm_fp8_ws_pairs")?;
        pairs_kernel.set_max_dynamic_shared_memory(WS_SMEM)?;
        let resident = Residency::of(stream, &pairs_kernel)?;
        let schedule = Schedule::default_for(dims, resident.sms);
        let map_a = upload_map(stream, TensorDataType::U8, a.device_ptr(), dims.m, dims.k, WS_BM)?;
        let map_b = upload_map(stream, TensorDataType::U8, b.device_ptr(), dims.n, dims.k, b_box_rows(schedule))?;
        let plan = Plan::new(stream, dims, ROW_BYTES, resident, schedule)?;
        Ok(GemmFp8 {
            dims,
            map_a,
            map_b,
            map_c: OutputMap::default(),
            scale_a: scales.a,
            scale_b: scales.b,
            plan,
            resident,
            inputs: [a, b],
        })
    }

    /// The same product scheduled by `schedule`. Fails where the shape
    /// does not allow it ([`Schedule::TilePairs`] needs M to be a multiple
    /// of 256).
    pub fn with_schedule(mut self, stream: &CudaStream, schedule: Schedule) -> Result<GemmFp8<'a>, Error> {
        let plan = Plan::new(stream, self.dims, ROW_BYTES, self.resident, schedule)?;
        if b_box_rows(schedule) != b_box_rows(self.plan.schedule) {
            let b = self.inputs[1];
            self.map_b = upload_map(stream, TensorDataType::U8, b.device_ptr(), self.dims.n, self.dims.k, b_box_rows(schedule))?;
        }
        self.plan = plan;
        Ok(self)
    }

    /// How the kernel shares out the tiles.
    pub fn schedule(&self) -> Schedule {
        self.plan.schedule
    }

    /// The shape.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// Floating-point operations of one product (2·m·n·k).
    pub fn flops(&self) -> f64 {
        self.dims.flops()
    }

    /// Launches `gemm_fp8_ws` on `stream` (asynchronously): `c` (m·n/2
    /// words, each two bf16 of a row) = scale_a·scale_b·A·Bᵀ. `module` must
    /// be the one passed to [`GemmFp8::new`].
    pub fn launch(&self, module: &KernelModule, stream: &CudaStream, c: &mut DeviceBuffer<u32>) -> Result<(), Error> {
        let (config, [pa, pb, pc], split) = self.prepare(stream, TensorDataType::BF16, c)?;
        let (sa, sb, dims) = (self.scale_a, self.scale_b, self.dims);
        if self.plan.schedule == Schedule::TilePairs {
            cuda_launch! { kernel: gemm_fp8_ws_pairs, stream: stream, module: module, config: config,
                args: [pa, pb, pc, dims, split, slice(*sa), slice(*sb), slice_mut(*c)] }?;
        } else {
            cuda_launch! { kernel: gemm_fp8_ws, stream: stream, module: module, config: config,
                args: [pa, pb, pc, dims, split, slice(*sa), slice(*sb), slice_mut(*c)] }?;
        }
        Ok(())
    }

    /// Launches `gemm_fp8_ws_f32` on `stream` (asynchronously): `c` (m·n
    /// f32, row-major) = scale_a·scale_b·A·Bᵀ, not rounded to bf16 (the
    /// same sums as [`launch`](Self::launch) under the same schedule: its
    /// bf16 C is this one rounded). `module` must be the one passed to
    /// [`GemmFp8::new`].
    pub fn launch_f32(&self, module: &KernelModule, stream: &CudaStream, c: &mut DeviceBuffer<f32>) -> Result<(), Error> {
        let (config, [pa, pb, pc], split) = self.prepare(stream, TensorDataType::F32, c)?;
        let (sa, sb, dims) = (self.scale_a, self.scale_b, self.dims);
        if self.plan.schedule == Schedule::TilePairs {
            cuda_launch! { kernel: gemm_fp8_ws_f32_pairs, stream: stream, module: module, config: config,
                args: [pa, pb, pc, dims, split, slice(*sa), slice(*sb), slice_mut(*c)] }?;
        } else {
            cuda_launch! { kernel: gemm_fp8_ws_f32, stream: stream, module: module, config: config,
                args: [pa, pb, pc, dims, split, slice(*sa), slice(*sb), slice_mut(*c)] }?;
        }
        Ok(())
    }

    /// What a launch on `stream` writing `c` (of `kind` elements) needs,
    /// once `c` was found long enough: the launch shape, the device
    /// addresses of the maps of A, B and C (ordered as reads of that
    /// launch) and the stream-K workspace.
    fn prepare<T>(&self, stream: &CudaStream, kind: TensorDataType, c: &DeviceBuffer<T>) -> Result<(LaunchConfig, [u64; 3], StreamK), Error> {
        self.dims.check_output::<T>(kind, c.len())?;
        let config = Kernel::Ws.config(self.dims, &self.plan);
        order_tma_reads(stream, [&self.map_a, &self.map_b], self.inputs)?;
        let pc = self.map_c.of(stream, kind, c, self.dims)?;
        let split = self.plan.split(stream)?;
        Ok((config, [self.map_a.device_ptr(), self.map_b.device_ptr(), pc], split))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A C of 2-byte elements needs m·n/2 u32 words, an f32 C m·n f32s:
    /// one fewer is refused with a message naming both counts.
    #[test]
    fn output_check_counts_the_words_of_each_type() {
        let dims = Dims { m: 256, n: 512, k: 64 };
        for kind in [TensorDataType::BF16, TensorDataType::F16] {
            assert!(dims.check_output::<u32>(kind, 256 * 512 / 2).is_ok());
            let short = dims.check_output::<u32>(kind, 256 * 512 / 2 - 1).unwrap_err().to_string();
            assert!(short.contains("65536 u32") && short.contains("it has 65535"), "{short}");
        }
        assert!(dims.check_output::<f32>(TensorDataType::F32, 256 * 512).is_ok());
        let short = dims.check_output::<f32>(TensorDataType::F32, 256 * 512 - 1).unwrap_err().to_string();
        assert!(short.contains("131072 f32") && short.contains("it has 131071"), "{short}");
    }

    /// Every block's stream-K walk, for `tiles` tiles of `k_steps` steps on
    /// `grid` blocks: every step of every tile is multiplied exactly once;
    /// a block's segments run in order, and only its first may start
    /// inside a tile (it contributes at most once) and only its last may
    /// end inside one; the tile a block finishes (first step held, last
    /// not) is its last segment, and the blocks it waits for
    /// (`contributors_end`) are exactly the others that hold steps of it.
    fn check_stream_k(whole_tiles: u32, tiles: u32, k_steps: u32, grid: u32) {
        let mut owners = vec![Vec::new(); tiles as usize];
        let mut covered = vec![0u32; (tiles * k_steps) as usize];
        let mut segments = Vec::new();
        for block in 0..grid {
            let mut walk = Walk::new(whole_tiles, 0, block, grid, tiles, k_steps);
            let mut mine = Vec::new();
            while let Some(s) = walk.next_segment() {
                assert!(s.first < s.last && s.last <= k_steps, "{tiles}×{k_steps} on {grid}: block {block} got {}..{}", s.first, s.last);
                for step in s.first..s.last {
                    covered[(s.tile * k_steps + step) as usize] += 1;
                }
                owners[s.tile as usize].push(block);
                mine.push(s);
            }
            for (i, s) in mine.iter().enumerate() {
                let first_shared = mine.iter().position(|s| s.tile >= whole_tiles).unwrap_or(0);
                assert!(s.first == 0 || i == first_shared, "block {block}: segment {i} starts inside tile {}", s.tile);
                assert!(s.last == k_steps || i + 1 == mine.len(), "block {block}: segment {i} ends inside tile {}", s.tile);
            }
            segments.push(mine);
        }
        assert!(covered.iter().all(|&c| c == 1), "{tiles}×{k_steps} on {grid}: a step not multiplied exactly once");
        for (block, mine) in segments.iter().enumerate() {
            let walk = Walk::new(whole_tiles, 0, block as u32, grid, tiles, k_steps);
            for s in mine {
                if s.first == 0 && s.last < k_steps {
                    let waited: Vec<u32> = (block as u32 + 1..walk.contributors_end(block as u32, s.tile)).collect();
                    let others: Vec<u32> = owners[s.tile as usize].iter().copied().filter(|&b| b != block as u32).collect();
                    assert_eq!(waited, others, "{tiles}×{k_steps} on {grid}: tile {} finished by block {block}", s.tile);
                    assert!(!waited.is_empty());
                }
            }
        }
    }

    /// Every block's walk under a split tail of `pieces` pieces after
    /// `whole_tiles` whole tiles: every step of every tile multiplied
    /// exactly once; each tail tile cut at the same K steps into `pieces`
    /// parts of lengths that differ by at most one; every later piece
    /// publishes to a slot of its own, below the workspace's count; the
    /// block holding piece 0 waits for exactly the tile's other pieces; and
    /// replaying the grid in rounds (each block runs its segments in
    /// order, a piece 0 only once its contributors are published) finishes
    /// every block: no wait in a circle.
    fn check_split_tail(whole_tiles: u32, pieces: u32, tiles: u32, k_steps: u32, grid: u32) {
        let tail = tiles - whole_tiles;
        let mut covered = vec![0u32; (tiles * k_steps) as usize];
        let mut publishers = vec![None; (tail * (pieces - 1)) as usize];
        let mut walks = Vec::new();
        for block in 0..grid {
            let mut walk = Walk::new(whole_tiles, pieces, block, grid, tiles, k_steps);
            let mut mine = Vec::new();
            while let Some(s) = walk.next_segment() {
                assert!(s.first < s.last && s.last <= k_steps, "block {block}: {s:?}");
                for step in s.first..s.last {
                    covered[(s.tile * k_steps + step) as usize] += 1;
                }
                if s.tile < whole_tiles {
                    assert!(s.first == 0 && s.last == k_steps && s.piece == 0, "block {block}: whole tile {s:?}");
                } else {
                    assert_eq!((s.first, s.last), (s.piece * k_steps / pieces, (s.piece + 1) * k_steps / pieces), "block {block}: {s:?}");
                    let length = s.last - s.first;
                    assert!(length == k_steps / pieces || length == k_steps.div_ceil(pieces), "block {block}: {s:?}");
                }
                if s.first > 0 {
                    let p = walk.publisher(block, s) as usize;
                    assert!(p < publishers.len(), "block {block}: publisher {p} of {} for {s:?}", publishers.len());
                    assert!(publishers[p].is_none(), "publisher {p} twice");
                    publishers[p] = Some(s.tile);
                }
                mine.push(s);
            }
            walks.push((walk, mine));
        }
        assert!(covered.iter().all(|&c| c == 1), "{tiles}×{k_steps}, {pieces} pieces on {grid}: a step not multiplied exactly once");
        assert!(publishers.iter().all(Option::is_some), "an unused slot");
        // Replay: a round lets every block run its next segment if it can.
        let mut done = vec![false; publishers.len()];
        let mut next = vec![0usize; grid as usize];
        loop {
            let mut moved = false;
            for block in 0..grid as usize {
                let (walk, mine) = &walks[block];
                let Some(s) = mine.get(next[block]) else { continue };
                if s.first > 0 {
                    done[walk.publisher(block as u32, *s) as usize] = true;
                } else if s.last < k_steps {
                    let c = walk.contributors(block as u32, s.tile);
                    assert_eq!(c.count, pieces - 1);
                    let ids: Vec<u32> = (0..c.count).map(|i| c.id(i)).collect();
                    assert!(ids.iter().all(|&i| publishers[i as usize] == Some(s.tile)), "block {block} waits for another tile's pieces: {ids:?}");
                    if !ids.iter().all(|&i| done[i as usize]) {
                        continue;
                    }
                }
                next[block] += 1;
                moved = true;
            }
            if !moved {
                break;
            }
        }
        assert!((0..grid as usize).all(|b| next[b] == walks[b].1.len()), "{tiles}×{k_steps}, {pieces} pieces on {grid}: blocks wait in a circle");
    }

    #[test]
    fn split_tail_covers_every_step_once_and_never_waits_in_a_circle() {
        for (tiles, k_steps) in [(1792, 64), (2048, 128), (256, 128), (512, 64), (7, 3), (3, 8), (1, 16), (200, 9)] {
            for grid in [1, 2, 31, 114, 132] {
                let grid = grid.min(tiles);
                let tail = tiles % grid;
                for pieces in 2..=MAX_TAIL_PIECES.min(k_steps) {
                    for whole in [tiles - tail, 0] {
                        check_split_tail(whole, pieces, tiles, k_steps, grid);
                    }
                }
            }
        }
    }

    #[test]
    fn tail_pieces_shorten_the_last_wave_or_leave_it_whole() {
        // 4096×14336×4096 on 132: 1792 tiles leave a tail of 76 tiles of 64
        // steps: five pieces (three rounds of 13 steps) against 64 steps.
        assert_eq!(tail_pieces(1792 % 132, 64, 132), 5);
        // 8192³: 68 tiles of 128 steps.
        assert_eq!(tail_pieces(2048 % 132, 128, 132), 5);
        // A tail nearly a wave (8192×1024×8192, 4096³): no cut shortens it.
        assert_eq!(tail_pieces(256 % 132, 128, 132), 1);
        assert_eq!(tail_pieces(512 % 132, 64, 132), 1);
        // No tail, no grid, no steps; never more pieces than steps.
        assert_eq!(tail_pieces(0, 64, 132), 1);
        assert_eq!(tail_pieces(3, 64, 0), 1);
        // One tile on a big grid: five pieces (13 steps and 4 finishing
        // costs) beat eight (8 steps and 7); too few steps to pay.
        assert_eq!(tail_pieces(1, 64, 132), 5);
        assert_eq!(tail_pieces(1, 2, 132), 1);
        assert!((1..200).all(|t| tail_pieces(t, 3, 132) <= 3));
    }

    #[test]
    fn stream_k_covers_every_step_once() {
        // The benchmark shapes on 132 and 114 multiprocessors, a tile cut
        // between dozens of blocks, one step a block, a grid that divides
        // the work evenly, and small odd cases.
        for (tiles, k_steps) in [(256, 128), (512, 64), (2048, 128), (1792, 64), (1, 128), (4, 256), (12, 32), (32, 16), (7, 3), (3, 7), (1, 1)] {
            for grid in [1, 2, 3, 31, 114, 132] {
                // Every tile shared out, the schedule's own split, and
                // whole tiles that are not whole waves.
                for whole in [0, whole_tiles_before_stream_k(tiles, grid), tiles / 3, tiles] {
                    if ((tiles - whole) * k_steps) as u64 >= grid as u64 {
                        check_stream_k(whole, tiles, k_steps, grid);
                    }
                }
            }
        }
    }

    #[test]
    fn tile_pairs_need_an_even_tile_count_down_m_and_run_whole_pairs() {
        let d = |m, n, k| Dims { m, n, k };
        // 256 tiles, 66 pairs resident: 132 blocks; 2 tiles: one pair; 4
        // tiles, one pair resident: one; 60 pairs resident (GPCs with an
        // odd multiprocessor out): 120 blocks, not one per multiprocessor.
        assert_eq!(pairs_grid(d(8192, 1024, 8192), 66), Ok(132));
        assert_eq!(pairs_grid(d(256, 256, 64), 66), Ok(2));
        assert_eq!(pairs_grid(d(512, 256, 64), 1), Ok(2));
        assert_eq!(pairs_grid(d(4096, 4096, 4096), 60), Ok(120));
        assert_eq!(pairs_grid(d(768, 256, 64), 66), Ok(6), "6 tiles: 3 pairs");
        let e = pairs_grid(d(512, 256, 64), 0).unwrap_err();
        assert!(e.contains("holds no cluster"), "{e}");
        // One or three tile rows: no pairs one above the other.
        for m in [128, 384] {
            let e = pairs_grid(d(m, 512, 64), 66).unwrap_err();
            assert!(e.contains("multiple of 256"), "{e}");
        }
        // The pair's tiles (2p, 2p + 1 of the grouped order) share n0 and
        // lie one above the other, for every p, over several tile groups.
        for (m, n) in [(8192, 1024), (4096, 4096), (512, 768), (256, 256), (2048, 512)] {
            let dims = d(m, n, 64);
            let tiles = (m / WS_BM) * (n / WS_BN);
            for p in 0..tiles / 2 {
                let (m0, n0) = ws_tile_origin(2 * p, dims);
                let (m1, n1) = ws_tile_origin(2 * p + 1, dims);
                assert_eq!((m1, n1), (m0 + WS_BM, n0), "{m}×{n}: pair {p}");
                assert_eq!(m0 % (2 * WS_BM), 0, "{m}×{n}: pair {p} starts at an odd tile row");
            }
        }
    }

    #[test]
    fn whole_tiles_walk_strides_by_the_grid() {
        let mut seen = [0; 10];
        for block in 0..4 {
            let mut walk = Walk::new(10, 0, block, 4, 10, 8);
            while let Some(s) = walk.next_segment() {
                assert_eq!((s.first, s.last, s.tile % 4), (0, 8, block));
                seen[s.tile as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn default_schedule_is_stream_k_for_few_tiles_or_a_short_last_wave_and_a_long_k() {
        let d = |m, n, k| Dims { m, n, k };
        // 4 tiles with K = 16384: stream-K; the same with K = 4096, and
        // 32 tiles of 1024³, whole.
        assert_eq!(Schedule::default_for(d(256, 512, 16384), 132), Schedule::StreamK);
        assert_eq!(Schedule::default_for(d(256, 512, 4096), 132), Schedule::WholeTiles);
        assert_eq!(Schedule::default_for(d(1024, 1024, 1024), 132), Schedule::WholeTiles);
        // 66 tiles fill half of 132; 67 more than half.
        assert_eq!(Schedule::default_for(d(128 * 66, 256, 8192), 132), Schedule::StreamK);
        assert_eq!(Schedule::default_for(d(128 * 67, 256, 8192), 132), Schedule::WholeTiles);
        // Full waves and a last wave more than two thirds full: whole
        // tiles (256 tiles: 124 in the last wave; 512: 116).
        assert_eq!(Schedule::default_for(d(8192, 1024, 8192), 132), Schedule::WholeTiles);
        assert_eq!(Schedule::default_for(d(4096, 4096, 4096), 132), Schedule::WholeTiles);
        // At most two thirds: stream-K over the last wave, where K is
        // long enough (1792 tiles: 76 in the last wave; 2048: 68).
        assert_eq!(Schedule::default_for(d(4096, 14336, 4096), 132), Schedule::StreamK);
        assert_eq!(Schedule::default_for(d(8192, 8192, 8192), 132), Schedule::StreamK);
        assert_eq!(Schedule::default_for(d(4096, 14336, 2048), 132), Schedule::WholeTiles);
        // 132 + 88 tiles (exactly two thirds) and 132 + 89; full waves.
        assert_eq!(Schedule::default_for(d(128 * 220, 256, 4096), 132), Schedule::StreamK);
        assert_eq!(Schedule::default_for(d(128 * 221, 256, 4096), 132), Schedule::WholeTiles);
        assert_eq!(Schedule::default_for(d(128 * 264, 256, 8192), 132), Schedule::WholeTiles);
        // Whole tiles before stream-K: the full waves, one fewer where the
        // last wave is less than half full, none below one wave.
        assert_eq!(whole_tiles_before_stream_k(256, 132), 132);
        assert_eq!(whole_tiles_before_stream_k(2048, 132), 15 * 132);
        assert_eq!(whole_tiles_before_stream_k(300, 132), 132);
        assert_eq!(whole_tiles_before_stream_k(512, 132), 3 * 132);
        assert_eq!(whole_tiles_before_stream_k(32, 132), 0);
        assert_eq!(whole_tiles_before_stream_k(264, 132), 264);
    }
}
