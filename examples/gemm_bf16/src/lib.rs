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
//!   that the blocks at work share A and B panels in L2.
//! * [`gemm_fp8_ws`] — the same pipeline for FP8: A and B e4m3 (one byte
//!   each, so a K step is 128 values in the same 128-byte rows), the
//!   m64n256k32 e4m3 wgmma, C = scale_a·scale_b·A·Bᵀ in bf16 with the two
//!   per-tensor scales read from device memory as cuBLASLt reads them
//!   ([`GemmFp8`] sets it up).
//!
//! ```ignore
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let dims = Dims { m: 4096, n: 4096, k: 4096 };
//! let gemm = Gemm::new(Kernel::Ws, &module, &stream, &a, &b, dims)?;
//! gemm.launch(&module, &stream, &mut c)?; // c: m·n/2 u32 words
//! ```
//!
//! A program that links this crate must be built for sm_90a (wgmma):
//! `[package.metadata.oxide] arch = "sm_90a"` in its Cargo.toml, or
//! `--arch sm_90a`.

use cuda_core::tensor_map::{TensorDataType, TensorMap};
use cuda_core::{CudaFunction, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, shared_address, MBarrier};
use cuda_device::half::f8e4m3;
use cuda_device::wgmma::{self, pack_bf16x2};
use cuda_device::{dynamic_shared, kernel, thread, tma, warp, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

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

    /// Refuses an output C of `words` u32 words (two bf16 of a row each)
    /// that cannot hold the m×n product.
    fn check_output(&self, words: usize) -> Result<(), Error> {
        let need = self.m as usize * self.n as usize / 2;
        if words < need {
            return Err(format!("C needs {need} words for {self:?}; it has {words}").into());
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
/// The epilogue stores a consumer's 64×256 part of C in `C_SPLIT` pieces of
/// 256/C_SPLIT columns through a shared-memory buffer of one piece.
const C_SPLIT: u32 = 2;
/// Columns of C in one TMA store box (one 128-byte swizzle row of bf16).
const C_BOX_COLS: u32 = 64;
/// Bytes of one box of C: 64 rows × 128 bytes.
const C_BOX_BYTES: u32 = 64 * ROW_BYTES;
/// Boxes of C a consumer stores per piece.
const C_BOXES: u32 = WS_BN / C_SPLIT / C_BOX_COLS;
/// Bytes of one consumer's C buffer.
const C_BUFFER_BYTES: u32 = C_BOXES * C_BOX_BYTES;
/// Dynamic shared memory of `gemm_ws`: the stages, both consumers' C
/// buffers, 2·STAGES + 2 barriers, slack for the 1024-byte alignment.
pub const WS_SMEM: u32 = STAGES * STAGE_BYTES + 2 * C_BUFFER_BYTES + 8 * (2 * STAGES + 2) + 1024;
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
pub fn gemm_ws(map_a: u64, map_b: u64, map_c: u64, dims: Dims, c: DisjointSlice<u32>) {
    ws_body::<false>(map_a, map_b, map_c, dims, 1.0, c);
}

/// C = scale_a·scale_b·A·Bᵀ for FP8 (e4m3) A and B, bf16 C: `gemm_ws` with
/// the FP8 wgmma (K = 32 per instruction) on the same stage ring, each K
/// step 128 elements (one 128-byte swizzle row, as bf16's 64). The scales
/// are the first elements of `scale_a` and `scale_b` (device memory, as
/// cuBLASLt takes them, so that a kernel may compute them just before).
/// Launch as `gemm_ws`, with tensor maps of u8 elements and boxes of
/// 128×128 and 128×256; k must be a multiple of 128.
#[kernel(launch_bounds(384, 1))]
pub fn gemm_fp8_ws(map_a: u64, map_b: u64, map_c: u64, dims: Dims, scale_a: &[f32], scale_b: &[f32], c: DisjointSlice<u32>) {
    // No bounds-check panic path (it would serialise the wgmma pipeline);
    // the host refuses empty scale buffers.
    let scale = scale_a.first().copied().unwrap_or(1.0) * scale_b.first().copied().unwrap_or(1.0);
    ws_body::<true>(map_a, map_b, map_c, dims, scale, c);
}

/// Elements of one K step: a 128-byte row of bf16 or of FP8.
#[inline(always)]
const fn k_step<const FP8: bool>() -> u32 {
    if FP8 {
        ROW_BYTES
    } else {
        BK
    }
}

/// The body of `gemm_ws` (bf16) and `gemm_fp8_ws` (e4m3, its product
/// multiplied by `scale`): the byte layout of a stage is the same for both,
/// only the wgmma instruction and the elements per K step differ.
#[inline(always)]
fn ws_body<const FP8: bool>(map_a: u64, map_b: u64, map_c: u64, dims: Dims, scale: f32, c: DisjointSlice<u32>) {
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
    let tid = thread::threadIdx_x();
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises; fence + barrier publish it.
            unsafe {
                full(s).init(1);
                empty(s).init(256);
            }
        }
        for wg in 0..2 {
            // SAFETY: as above.
            unsafe { c_ready(wg).init(128) };
        }
        mbarrier::fence_init();
    }
    thread::sync_threads();

    let k_steps = dims.k / k_step::<FP8>();
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
            let mut tile = thread::blockIdx_x();
            while tile < tiles {
                let (m0, n0) = ws_tile_origin(tile, dims);
                let mut kb = 0;
                while kb < k_steps {
                    let s = step % STAGES;
                    if step >= STAGES {
                        empty(s).wait((step / STAGES - 1) & 1);
                    }
                    full(s).arrive_expect_tx(STAGE_BYTES);
                    // SAFETY: valid maps (host); the stage is free (its
                    // empty barrier completed, or it was never used) and
                    // 1024-aligned; `full(s)` expects both boxes' bytes.
                    unsafe {
                        tma::load_2d(a_tile(s), map_a, full(s), (kb * k_step::<FP8>()) as i32, m0 as i32);
                        tma::load_2d(b_tile(s), map_b, full(s), (kb * k_step::<FP8>()) as i32, n0 as i32);
                    }
                    kb += 1;
                    step += 1;
                }
                tile += thread::gridDim_x();
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
        let mut tile = thread::blockIdx_x();
        while tile < tiles {
            let (m0, n0) = ws_tile_origin(tile, dims);
            let mut acc = wgmma::zeroed::<128>();
            let mut kb = 0;
            while kb < k_steps {
                let s = step % STAGES;
                full(s).wait((step / STAGES) & 1);
                wgmma::fence();
                for k in 0..4 {
                    let da = wgmma::kmajor_b128(a_tile(s) + wg * 64 * ROW_BYTES, 64, k);
                    let db = wgmma::kmajor_b128(b_tile(s), WS_BN, k);
                    // SAFETY: the whole warpgroup runs this with the same
                    // descriptors; the stage is not refilled before this
                    // warpgroup releases it below, after the batch completed.
                    unsafe {
                        if FP8 {
                            wgmma::m64n256k32_f32_e4m3(&mut acc, da, db, true)
                        } else {
                            wgmma::m64n256k16_f32_bf16(&mut acc, da, db, true)
                        }
                    };
                }
                wgmma::commit_group();
                // The previous step's batch is complete: release its stage.
                wgmma::wait_group::<1>();
                if kb > 0 {
                    empty((step - 1) % STAGES).arrive();
                }
                kb += 1;
                step += 1;
            }
            wgmma::wait_group::<0>();
            // The tile's last stage, read by the batch just completed.
            empty((step - 1) % STAGES).arrive();
            // The epilogue, piece by piece: wait until the last TMA store
            // has read the buffer, fill it, hand it to a TMA store and go on
            // (the store runs while the next tile is multiplied).
            let mut piece = 0;
            while piece < C_SPLIT {
                if stored {
                    if leader {
                        tma::wait_group_read::<0>();
                    }
                    c_ready(wg).arrive();
                    c_ready(wg).wait(syncs & 1);
                    syncs += 1;
                }
                stage_fragment::<128, FP8>(&acc, scale, c_buffer(wg), piece);
                // The generic-proxy writes above, before the TMA store reads them.
                tma::fence_proxy_async_shared();
                c_ready(wg).arrive();
                c_ready(wg).wait(syncs & 1);
                syncs += 1;
                if leader {
                    let mut b = 0;
                    while b < C_BOXES {
                        let col = n0 + piece * (WS_BN / C_SPLIT) + b * C_BOX_COLS;
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
            tile += thread::gridDim_x();
        }
        // The block's shared memory must outlive the stores reading it.
        if leader {
            tma::wait_group::<0>();
        }
    }
}

/// Writes piece `piece` (columns `piece·256/C_SPLIT`…) of one consumer's
/// 64×256 accumulator fragment as bf16, times `scale` when `SCALED`, into
/// its C buffer at shared address `buffer`: boxes of 64 rows × 64 columns
/// in the 128-byte swizzle a TMA store reads (the 16-byte chunk `k` of row
/// `r` at chunk `k ^ (r % 8)`), which also spreads a warp's eight rows over
/// all banks.
#[inline(always)]
fn stage_fragment<const R: usize, const SCALED: bool>(acc: &[f32; R], scale: f32, buffer: u32, piece: u32) {
    let s = |v: f32| if SCALED { v * scale } else { v };
    // SAFETY: only the address is taken; the writes below stay inside the
    // consumer's buffer, which the launch's shared memory holds.
    let (base_ptr, _) = unsafe { dynamic_shared::<u8>() };
    let generic = |address: u32| -> *mut u32 {
        // SAFETY: `address` is inside the dynamic shared memory that starts
        // at `base_ptr`, whose shared address is shared_address(base_ptr).
        unsafe { base_ptr.add((address - shared_address(base_ptr)) as usize) as *mut u32 }
    };
    let t = thread::threadIdx_x() % 128;
    let row = 16 * (t / 32) + (t % 32) / 4;
    let blocks_per_piece = (WS_BN / C_SPLIT / 8) as usize;
    let first = piece as usize * blocks_per_piece;
    macro_rules! block {
        ($($j:literal)*) => {$(
            if 4 * $j < R && $j >= first && $j < first + blocks_per_piece {
                let col = 8 * ($j - first) as u32 + 2 * (t % 4);
                let (b, cb) = (col / C_BOX_COLS, col % C_BOX_COLS);
                let at = |r: u32| buffer + b * C_BOX_BYTES + r * ROW_BYTES + (((cb / 8) ^ (r % 8)) * 16) + (cb % 8) * 2;
                // SAFETY: inside this consumer's buffer (row < 64, box <
                // C_BOXES); each (row, column pair) belongs to one thread.
                unsafe {
                    generic(at(row)).write(pack_bf16x2(s(acc[4 * $j]), s(acc[4 * $j + 1])));
                    generic(at(row + 8)).write(pack_bf16x2(s(acc[4 * $j + 2]), s(acc[4 * $j + 3])));
                }
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

    /// The launch shape for `dims` (which [`check_dims`] accepted) on a
    /// GPU of `sms` multiprocessors: `gemm_ws` is persistent, one block
    /// per multiprocessor at most.
    fn config(self, dims: Dims, sms: u32) -> LaunchConfig {
        let (bm, bn) = self.tile();
        let (grid_dim, threads) = match self {
            Kernel::Simple => ((dims.n / bn, dims.m / bm, 1), 128),
            Kernel::Ws => ((((dims.m / bm) * (dims.n / bn)).min(sms.max(1)), 1, 1), WS_THREADS),
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
/// kernels store C with TMA), encoded again only when C is another buffer.
#[derive(Default)]
struct OutputMap(std::cell::RefCell<Option<(u64, DeviceBuffer<TensorMap>)>>);

impl OutputMap {
    /// The device address of the map of `c` (m×n bf16 as u32 pairs):
    /// boxes of 64×64 with the 128-byte swizzle, the layout the epilogue
    /// writes into shared memory; ordered as a read of the launch about to
    /// be queued on `stream` ([`order_tma_reads`]: a map replaced here is
    /// freed only after the launches that read it).
    fn of(&self, stream: &CudaStream, c: &DeviceBuffer<u32>, dims: Dims) -> Result<u64, Error> {
        let mut slot = self.0.borrow_mut();
        if let Some((address, map)) = slot.as_ref() {
            if *address == c.device_ptr() {
                map.order_read(stream)?;
                return Ok(map.device_ptr());
            }
        }
        let map = upload_map(stream, TensorDataType::BF16, c.device_ptr(), dims.m, dims.n, C_BOX_COLS)?;
        map.order_read(stream)?;
        let pointer = map.device_ptr();
        *slot = Some((c.device_ptr(), map));
        Ok(pointer)
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

/// One product C = A·Bᵀ set up for repeated launches of one kernel: the
/// shape checked, the tensor maps of `a` and `b` encoded and uploaded, the
/// kernel's dynamic shared memory limit raised. It borrows `a` and `b`
/// because the tensor maps hold their addresses; each launch reads their
/// current contents.
pub struct Gemm<'a> {
    kernel: Kernel,
    dims: Dims,
    map_a: DeviceBuffer<TensorMap>,
    map_b: DeviceBuffer<TensorMap>,
    map_c: OutputMap,
    /// Multiprocessors of the GPU (the persistent kernel's grid).
    sms: u32,
    /// A and B, which the kernels read through the maps.
    inputs: [&'a DeviceBuffer<u16>; 2],
}

impl<'a> Gemm<'a> {
    /// Prepares `kernel` (compiled into `module`) for A = `a` (row-major
    /// m×k bf16 bits) and B = `b` (row-major n×k). Fails on a shape the
    /// kernels do not support ([`check_dims`]), on buffers shorter than the
    /// shape says, and on driver errors.
    pub fn new(
        kernel: Kernel,
        module: &KernelModule,
        stream: &CudaStream,
        a: &'a DeviceBuffer<u16>,
        b: &'a DeviceBuffer<u16>,
        dims: Dims,
    ) -> Result<Gemm<'a>, Error> {
        check_dims(dims)?;
        let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
        if a.len() < m * k || b.len() < n * k {
            return Err(format!("A needs {} and B {} elements for {dims:?}; they have {} and {}", m * k, n * k, a.len(), b.len()).into());
        }
        let (bm, bn) = kernel.tile();
        let map_a = upload_map(stream, TensorDataType::BF16, a.device_ptr(), dims.m, dims.k, bm)?;
        let map_b = upload_map(stream, TensorDataType::BF16, b.device_ptr(), dims.n, dims.k, bn)?;
        kernel_function(module, kernel.name())?.set_max_dynamic_shared_memory(kernel.shared_bytes())?;
        let sms = stream.context().multiprocessor_count()?;
        Ok(Gemm { kernel, dims, map_a, map_b, map_c: OutputMap::default(), sms, inputs: [a, b] })
    }

    /// The kernel this product launches.
    pub fn kernel(&self) -> Kernel {
        self.kernel
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
    /// each two bf16 of a row) = A·Bᵀ. `module` must be the one passed to
    /// [`Gemm::new`].
    pub fn launch(&self, module: &KernelModule, stream: &CudaStream, c: &mut DeviceBuffer<u32>) -> Result<(), Error> {
        self.dims.check_output(c.len())?;
        let config = self.kernel.config(self.dims, self.sms);
        order_tma_reads(stream, [&self.map_a, &self.map_b], self.inputs)?;
        let (pa, pb, dims) = (self.map_a.device_ptr(), self.map_b.device_ptr(), self.dims);
        match self.kernel {
            Kernel::Simple => cuda_launch! { kernel: gemm_simple, stream: stream, module: module, config: config,
                args: [pa, pb, dims, slice_mut(*c)] }?,
            Kernel::Ws => {
                let pc = self.map_c.of(stream, c, dims)?;
                cuda_launch! { kernel: gemm_ws, stream: stream, module: module, config: config,
                    args: [pa, pb, pc, dims, slice_mut(*c)] }?
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
/// e4m3, C m×n bf16, f32 accumulation in the tensor cores) set up for
/// repeated launches of `gemm_fp8_ws`: the shape checked, the tensor maps
/// encoded, the shared memory limit raised. The per-tensor scales stay in
/// device memory (the first element of each buffer) and are read at every
/// launch, as cuBLASLt's FP8 matmul reads them.
///
/// ```ignore
/// let gemm = GemmFp8::new(&module, &stream, &a, &b, Fp8Scales { a: &sa, b: &sb }, dims)?;
/// gemm.launch(&module, &stream, &mut c)?; // c: m·n/2 u32 words of bf16 pairs
/// ```
pub struct GemmFp8<'a> {
    dims: Dims,
    map_a: DeviceBuffer<TensorMap>,
    map_b: DeviceBuffer<TensorMap>,
    map_c: OutputMap,
    scale_a: &'a DeviceBuffer<f32>,
    scale_b: &'a DeviceBuffer<f32>,
    sms: u32,
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
    /// and B = `b` (n×k). Fails on a shape it does not support
    /// ([`check_fp8_dims`]), on buffers shorter than the shape says, on an
    /// empty scale buffer, and on driver errors.
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
        let map_a = upload_map(stream, TensorDataType::U8, a.device_ptr(), dims.m, dims.k, WS_BM)?;
        let map_b = upload_map(stream, TensorDataType::U8, b.device_ptr(), dims.n, dims.k, WS_BN)?;
        kernel_function(module, "gemm_fp8_ws")?.set_max_dynamic_shared_memory(WS_SMEM)?;
        let sms = stream.context().multiprocessor_count()?;
        Ok(GemmFp8 { dims, map_a, map_b, map_c: OutputMap::default(), scale_a: scales.a, scale_b: scales.b, sms, inputs: [a, b] })
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
        self.dims.check_output(c.len())?;
        let config = Kernel::Ws.config(self.dims, self.sms);
        order_tma_reads(stream, [&self.map_a, &self.map_b], self.inputs)?;
        let (pa, pb, dims) = (self.map_a.device_ptr(), self.map_b.device_ptr(), self.dims);
        let (sa, sb) = (self.scale_a, self.scale_b);
        let pc = self.map_c.of(stream, c, dims)?;
        cuda_launch! { kernel: gemm_fp8_ws, stream: stream, module: module, config: config,
            args: [pa, pb, pc, dims, slice(*sa), slice(*sb), slice_mut(*c)] }?;
        Ok(())
    }
}
