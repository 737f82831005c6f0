//! attention (library): the forward pass of fused attention
//! (FlashAttention-style) in bf16 with f32 accumulation on Hopper (sm_90a),
//! written in Rust: O = softmax(Q·Kᵀ/√d [+ causal mask])·V, and the
//! log-sum-exp of every row of the scores (what a backward pass needs).
//! The kernels and their host setup ([`Attention`]) live here so that the
//! example (`src/main.rs`, which checks them against an f32 CPU reference
//! and times them) and the benchmarks (`benches/`, row `attention_fwd`) run
//! the same code.
//!
//! Layouts: Q, K, V and O are `[batch·heads][seq][head_dim]` row-major bf16
//! (Q, K, V as `u16` bits; O as pairs of bf16 in `u32` words, the low half
//! the even column); the log-sum-exp is `[batch·heads][seq]` f32, natural
//! logarithm of Σ exp(scores/√d). head_dim is 64 or 128, seq a multiple of
//! 128 ([`check_shape`] refuses a ragged seq rather than masking it).
//!
//! The kernels ([`attention_fwd_d64`], [`attention_fwd_d128`] and their
//! `_smem_` twins, one body):
//! a block owns 128 query rows of one (batch, head) and has 384 threads.
//! Warps 0–7 are two consumer warpgroups of 64 query rows each; warps 8–11
//! are the producer warpgroup, which gives most of its registers to the
//! consumers (`setmaxnreg`) and of which one lane issues TMA copies: Q once, then K and V
//! tiles of 128 keys into a ring of `STAGES` shared-memory stages, each
//! with "full" and "empty" mbarriers for K and for V apart: Q·Kᵀ starts
//! before V has landed, and a K stage is refilled as soon as its Q·Kᵀ is
//! done, so the K tiles run ahead of the V tiles. Every tile is stored with the
//! 128-byte swizzle, in boxes 64 elements (128 bytes) wide: head_dim 128 is
//! two boxes side by side. Per KV tile a consumer warpgroup
//! * computes S = Q·Kᵀ (64×128, f32) with `m64n128k16` wgmmas, both
//!   operands K-major as in gemm_bf16;
//! * masks the diagonal tile when causal (tiles above the diagonal are never
//!   loaded: a block's query tile `i` reads KV tiles `0..=i`, and causal
//!   blocks start with the longest rows);
//! * runs the online softmax on the fragment in registers: a row lives in
//!   the 4 lanes of a quad, so its max is two `shfl_xor`s; scores are scaled
//!   by log2(e)/√d so that `ex2` gives the exponentials; the O accumulators
//!   and the running sum are rescaled by 2^(old max − new max);
//! * rounds P to bf16 and packs it in pairs: the fragment's column blocks
//!   2k and 2k + 1 are exactly wgmma's register A operand for keys
//!   16k…16k+15, so P never leaves the registers ([`Variant::RegisterP`],
//!   the kernels `attention_fwd_d64`/`_d128`). The other variant
//!   ([`Variant::SharedP`], `attention_fwd_smem_*`) writes P into a
//!   shared-memory tile in the 128-byte-swizzle layout ([`swizzled_offset`])
//!   as a K-major A operand, fences the generic-proxy stores for the async
//!   proxy and synchronises the warpgroup (named barrier): slower, kept as
//!   a cross-check;
//! * computes O += P·V with the `_trans_b` wgmmas (`_rs_trans_b` for P in
//!   registers): V's tile is `[keys][d]`, rows along the reduction, i.e. an
//!   MN-major B;
//! * releases each stage once its product is complete.
//!
//! With P in registers the consumer loop is software-pipelined
//! (FlashAttention-3's intra-warpgroup overlap): step j issues Q·K_jᵀ and
//! then P_{j-1}·V_{j-1}, waits for the first only, and runs the softmax of
//! S_j while the tensor cores do the second; O is rescaled when that is
//! done. P alternates between two register sets (the loop is unrolled by
//! two), as ptxas serialises every wgmma when registers an in-flight wgmma
//! reads are rewritten. The two consumer warpgroups also overlap each
//! other's softmax and matmuls.
//!
//! The epilogue divides O by the row sums, stores it as bf16 and writes the
//! log-sum-exp.
//!
//! ```ignore
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let shape = Shape { batch_heads: 64, seq: 4096, head_dim: 128, causal: true };
//! let attn = Attention::new(&module, &stream, &q, &k, &v, shape)?;
//! attn.launch(&module, &stream, &mut o, &mut lse)?; // o: words, lse: f32
//! ```
//!
//! The backward pass (dQ, dK, dV from dO, the forward's O and
//! log-sum-exp) is in [`backward`] ([`Backward`], row `attention_bwd`).
//!
//! A program that links this crate must be built for sm_90a (wgmma):
//! `[package.metadata.oxide] arch = "sm_90a"` in its Cargo.toml.

use cuda_core::tensor_map::{TensorDataType, TensorMap};
use cuda_core::{CudaFunction, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, shared_address, MBarrier};
use cuda_device::wgmma::{self, pack_bf16x2};
use cuda_device::{dynamic_shared, kernel, ptx_asm, thread, tma, unroll, warp, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};
use std::marker::PhantomData;

pub mod backward;
pub use backward::{reference_backward, reference_gradient_row, Backward, DqSplit, Gradients};

/// Query rows per block (two consumer warpgroups of 64).
pub const BM: u32 = 128;
/// Keys per KV tile.
pub const BN: u32 = 128;
/// Elements of one swizzle box row (128 bytes of bf16).
const BOX: u32 = 64;
/// Bytes of one 128-byte-swizzled row.
const ROW_BYTES: u32 = 128;
/// Pipeline depth (KV stages).
const STAGES: u32 = 2;
/// Bytes of one warpgroup's P tile (64 rows × BN keys bf16, BN/64 boxes).
const P_BYTES: u32 = 64 * BN * 2;
/// Threads per block: two consumer warpgroups and the producer warpgroup
/// (one warp of which issues the copies). A whole producer warpgroup so that
/// `setmaxnreg` can move its registers to the consumers: ptxas gives each
/// thread of a 288- or 384-thread block at most 168, too few for the
/// consumers' S and O fragments at head_dim 128.
pub const THREADS: u32 = 384;
/// Registers per thread of the producer warpgroup after `setmaxnreg`.
const PRODUCER_REGISTERS: u32 = 40;
/// Registers per thread of the consumer warpgroups: 40 + 2·232 = 3·168.
const CONSUMER_REGISTERS: u32 = 232;

/// The problem shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Shape {
    /// batch × heads: the independent attention problems.
    pub batch_heads: u32,
    /// Sequence length (queries = keys), a multiple of [`BM`].
    pub seq: u32,
    /// 64 or 128.
    pub head_dim: u32,
    /// Whether query i attends only to keys 0..=i.
    pub causal: bool,
}

impl Shape {
    /// Elements of each of Q, K, V, O.
    pub fn elements(&self) -> usize {
        self.batch_heads as usize * self.seq as usize * self.head_dim as usize
    }

    /// Rows (batch·heads·seq): the log-sum-exp's length.
    pub fn rows(&self) -> usize {
        self.batch_heads as usize * self.seq as usize
    }

    /// Floating-point operations of the forward pass: 4·bh·s²·d, half of
    /// it when causal (the usual convention, which counts the masked half
    /// as not done).
    pub fn flops(&self) -> f64 {
        let full = 4.0 * self.batch_heads as f64 * (self.seq as f64).powi(2) * self.head_dim as f64;
        if self.causal {
            full / 2.0
        } else {
            full
        }
    }

    /// Floating-point operations of the backward pass: 2.5× the forward's
    /// (five matrix products to its two: Q·Kᵀ again, dO·Vᵀ, Pᵀ·dO, dSᵀ·Q,
    /// dS·K), half of it when causal.
    pub fn backward_flops(&self) -> f64 {
        2.5 * self.flops()
    }
}

/// Byte offset of element (`row`, `col`) in a tile of 128-byte-swizzled
/// boxes of `rows` rows: columns are split into boxes of 64 bf16, each box
/// `rows`·128 bytes; inside a box the 16-byte chunk index of a row is
/// XORed with row % 8 (the layout TMA writes with the 128-byte swizzle and
/// wgmma reads from a descriptor with [`wgmma::Swizzle::B128`]; boxes must be
/// 1024-byte aligned).
#[inline(always)]
pub const fn swizzled_offset(row: u32, col: u32, rows: u32) -> u32 {
    let bx = col / BOX;
    let byte = 2 * (col % BOX);
    bx * rows * ROW_BYTES + row * ROW_BYTES + (((byte / 16) ^ (row % 8)) * 16) + byte % 16
}

/// The first 1024-byte aligned 32-bit shared address of the dynamic shared
/// memory; launches ask for 1024 bytes more than they use.
#[inline(always)]
fn aligned_dynamic_shared() -> u32 {
    // SAFETY: only the address is taken; all accesses go through TMA,
    // wgmma, mbarrier and `st.shared` at addresses inside the launch's size.
    let (base, _) = unsafe { dynamic_shared::<u8>() };
    (shared_address(base) + 1023) & !1023
}

/// 2^x (`ex2.approx.ftz.f32`; 2^-inf = 0).
#[inline(always)]
fn exp2(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { ptx_asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(f32) y, x = in(f32) x, options(pure, nomem)) };
    y
}

/// log2(x) (`lg2.approx.ftz.f32`).
#[inline(always)]
fn log2(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { ptx_asm!("lg2.approx.ftz.f32 {y}, {x};", y = out(f32) y, x = in(f32) x, options(pure, nomem)) };
    y
}

/// 1/x (`rcp.approx.ftz.f32`). Not `1.0 / x`: Rust's division is IEEE
/// exact, which ptxas implements with a subroutine, and a call in the
/// kernel makes ptxas serialise every wgmma (warning C7509).
#[inline(always)]
fn recip(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { ptx_asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(f32) y, x = in(f32) x, options(pure, nomem)) };
    y
}

/// Stores a 32-bit word at a 32-bit shared address.
///
/// # Safety
/// `address` is 4-byte aligned, inside the launch's dynamic shared memory,
/// and nobody else accesses it concurrently.
#[inline(always)]
unsafe fn store_shared(address: u32, value: u32) {
    // SAFETY: the caller's contract.
    unsafe { ptx_asm!("st.shared.u32 [{a}], {v};", a = in(u32) address, v = in(u32) value) };
}

/// Waits until the 128 threads of warpgroup `wg` (0 or 1, warp-uniform)
/// have arrived: named barrier 1 + wg (barrier 0 is `sync_threads`). The
/// barrier number is an immediate: with a register, ptxas reserves all 16.
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

/// O += P·V for one k16 step with P in registers (`a`): the `_rs_trans_b`
/// wgmma of width HD = 2·R.
///
/// # Safety
/// As `wgmma::m64n*k16_f32_bf16_rs_trans_b`; R is 32 or 64.
#[inline(always)]
unsafe fn mma_pv_registers<const R: usize>(o: &mut [f32; R], a: [u32; 4], db: u64) {
    // SAFETY (both casts): R is the array's length, checked by the branch,
    // so the pointer is to an array of exactly that type.
    unsafe {
        if R == 64 {
            wgmma::m64n128k16_f32_bf16_rs_trans_b(&mut *(o as *mut [f32; R]).cast::<[f32; 64]>(), a, db, true)
        } else {
            wgmma::m64n64k16_f32_bf16_rs_trans_b(&mut *(o as *mut [f32; R]).cast::<[f32; 32]>(), a, db, true)
        }
    }
}

/// O += P·V for one k16 step with P in shared memory (`da`): the
/// `_trans_b` wgmma of width HD = 2·R.
///
/// # Safety
/// As `wgmma::m64n*k16_f32_bf16_trans_b`; R is 32 or 64.
#[inline(always)]
unsafe fn mma_pv<const R: usize>(o: &mut [f32; R], da: u64, db: u64) {
    // SAFETY (both casts): R is the array's length, checked by the branch,
    // so the pointer is to an array of exactly that type.
    unsafe {
        if R == 64 {
            wgmma::m64n128k16_f32_bf16_trans_b(&mut *(o as *mut [f32; R]).cast::<[f32; 64]>(), da, db, true)
        } else {
            wgmma::m64n64k16_f32_bf16_trans_b(&mut *(o as *mut [f32; R]).cast::<[f32; 32]>(), da, db, true)
        }
    }
}

/// The online-softmax state of a thread's two rows (r and r + 8): running
/// maxima in the log2 domain (scores × log2(e)/√d) and this thread's share
/// of the running sums.
#[derive(Clone, Copy)]
struct Softmax {
    m0: f32,
    m1: f32,
    l0: f32,
    l1: f32,
}

/// Issues and commits S = Q·Kᵀ for one KV tile (not waited for): `q` is
/// the warpgroup's 64 query rows, `k` the K tile, both in 128-byte-swizzled
/// boxes of 64 columns; head_dim HD is HD/16 k steps, four per box.
///
/// # Safety
/// Warpgroup-wide with the same addresses; the tiles are not rewritten and
/// `acc_s` not touched until a `wait_group` says the group is done.
#[inline(always)]
unsafe fn issue_qk<const HD: u32>(acc_s: &mut [f32; 64], q: u32, k: u32) {
    wgmma::fence();
    unroll!(full, for kk in 0..HD / 16 {
        let da = wgmma::kmajor_b128(q, BM, kk);
        let db = wgmma::kmajor_b128(k, BN, kk);
        // SAFETY: the caller's contract; the first step ignores the old S.
        unsafe { wgmma::m64n128k16_f32_bf16(acc_s, da, db, kk > 0) };
    });
    wgmma::commit_group();
}

/// Issues and commits O += P·V with P in registers (`p[k]`: the A operand
/// of k step k).
///
/// # Safety
/// As [`issue_qk`], for `acc_o`, `p` and the V tile.
#[inline(always)]
unsafe fn issue_pv_registers<const R: usize>(acc_o: &mut [f32; R], p: &[[u32; 4]; 8], v: u32) {
    wgmma::fence();
    unroll!(full, for k in 0..BN / 16 {
        // SAFETY: the caller's contract.
        unsafe { mma_pv_registers(acc_o, p[k as usize], wgmma::mnmajor_b128(v, BN, k)) };
    });
    wgmma::commit_group();
}

/// Issues and commits O += P·V with P in shared memory at `p` (64 rows,
/// 128-byte-swizzled boxes of 64 keys: K-major, a k step is 32 bytes along
/// a row).
///
/// # Safety
/// As [`issue_qk`], for `acc_o`, the P tile and the V tile.
#[inline(always)]
unsafe fn issue_pv_shared<const R: usize>(acc_o: &mut [f32; R], p: u32, v: u32) {
    wgmma::fence();
    unroll!(full, for k in 0..BN / 16 {
        let da = wgmma::kmajor_b128(p, 64, k);
        // SAFETY: the caller's contract.
        unsafe { mma_pv(acc_o, da, wgmma::mnmajor_b128(v, BN, k)) };
    });
    wgmma::commit_group();
}

/// The causal mask of the diagonal tile: key (column) c is visible to query
/// row q of the tile iff c <= q; the thread's rows are `row` and `row + 8`.
#[inline(always)]
fn mask_diagonal(acc_s: &mut [f32; 64], row: u32, lane: u32) {
    let c0 = 2 * (lane % 4);
    unroll!(full, for i in 0..16u32 {
        let c = 8 * i + c0;
        let i = i as usize;
        if c > row {
            acc_s[4 * i] = f32::NEG_INFINITY;
        }
        if c + 1 > row {
            acc_s[4 * i + 1] = f32::NEG_INFINITY;
        }
        if c > row + 8 {
            acc_s[4 * i + 2] = f32::NEG_INFINITY;
        }
        if c + 1 > row + 8 {
            acc_s[4 * i + 3] = f32::NEG_INFINITY;
        }
    });
}

/// One step of the online softmax on a copy of a 64×128 S fragment (a
/// copy: masking it in place would write the registers of the next Q·Kᵀ
/// while a P·V is in flight, and ptxas then serialises every wgmma, C7513),
/// masked when `diagonal` (the thread's rows are `row` and `row + 8`): new row maxima
/// (over the quad that holds a row), the factors 2^(old − new max) that
/// rescale O and the sums (returned), and P = 2^(S·scale − max) rounded to
/// bf16 and packed in wgmma's register-A layout: k step k (keys
/// 16k…16k+15) is column blocks 2k and 2k + 1 of the fragment.
#[inline(always)]
fn softmax(mut acc_s: [f32; 64], diagonal: bool, row: u32, lane: u32, st: &mut Softmax, scale_log2: f32) -> (f32, f32, [[u32; 4]; 8]) {
    if diagonal {
        mask_diagonal(&mut acc_s, row, lane);
    }
    let (mut x0, mut x1) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    unroll!(full, for i in 0..16usize {
        x0 = x0.max(acc_s[4 * i]).max(acc_s[4 * i + 1]);
        x1 = x1.max(acc_s[4 * i + 2]).max(acc_s[4 * i + 3]);
    });
    x0 = x0.max(warp::shfl_xor(warp::FULL_MASK, x0, 1));
    x0 = x0.max(warp::shfl_xor(warp::FULL_MASK, x0, 2));
    x1 = x1.max(warp::shfl_xor(warp::FULL_MASK, x1, 1));
    x1 = x1.max(warp::shfl_xor(warp::FULL_MASK, x1, 2));
    // Every row has an unmasked key in the first tile it reads (key 0), so
    // the new maxima are finite; the first step's factors are 2^-inf = 0.
    let n0 = st.m0.max(x0 * scale_log2);
    let n1 = st.m1.max(x1 * scale_log2);
    let alpha0 = exp2(st.m0 - n0);
    let alpha1 = exp2(st.m1 - n1);
    st.m0 = n0;
    st.m1 = n1;
    let (mut sum0, mut sum1) = (0.0f32, 0.0f32);
    let mut p = [[0u32; 4]; 8];
    unroll!(full, for i in 0..16usize {
        let p00 = exp2(acc_s[4 * i] * scale_log2 - n0);
        let p01 = exp2(acc_s[4 * i + 1] * scale_log2 - n0);
        let p10 = exp2(acc_s[4 * i + 2] * scale_log2 - n1);
        let p11 = exp2(acc_s[4 * i + 3] * scale_log2 - n1);
        sum0 += p00 + p01;
        sum1 += p10 + p11;
        p[i / 2][2 * (i % 2)] = pack_bf16x2(p00, p01);
        p[i / 2][2 * (i % 2) + 1] = pack_bf16x2(p10, p11);
    });
    st.l0 = st.l0 * alpha0 + sum0;
    st.l1 = st.l1 * alpha1 + sum1;
    (alpha0, alpha1, p)
}

/// O's rows r and r + 8 times `alpha0` and `alpha1`.
#[inline(always)]
fn rescale<const R: usize>(acc_o: &mut [f32; R], alpha0: f32, alpha1: f32) {
    unroll!(full, for i in 0..R / 4 {
        acc_o[4 * i] *= alpha0;
        acc_o[4 * i + 1] *= alpha0;
        acc_o[4 * i + 2] *= alpha1;
        acc_o[4 * i + 3] *= alpha1;
    });
}

/// The kernel's body for head dimension HD (64 or 128; R = HD/2
/// accumulators per thread), P kept in registers (`P_REGS`) or passed
/// through shared memory. See the module docs.
#[inline(always)]
fn forward<const HD: u32, const R: usize, const P_REGS: bool>(
    map_q: u64,
    map_k: u64,
    map_v: u64,
    shape: Shape,
    o: &mut DisjointSlice<u32>,
    lse: &mut DisjointSlice<f32>,
) {
    let boxes = HD / BOX;
    let base = aligned_dynamic_shared();
    let q_tile = base;
    // One K or V tile: `boxes` boxes of BN rows.
    let kv_bytes = boxes * BN * ROW_BYTES;
    let k_tile = |s: u32| base + boxes * BM * ROW_BYTES + s * 2 * kv_bytes;
    let v_tile = |s: u32| k_tile(s) + kv_bytes;
    let p_tile = |wg: u32| k_tile(STAGES) + wg * P_BYTES;
    let bars = p_tile(2);
    // SAFETY (all four): 8-byte aligned words after the tiles, inside the
    // launch's dynamic shared memory, used only as these barriers.
    let q_full = unsafe { MBarrier::from_address(bars) };
    let k_full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + s)) };
    let v_full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + STAGES + s)) };
    let k_empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + 2 * STAGES + s)) };
    let v_empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + 3 * STAGES + s)) };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + barrier publish it.
        unsafe {
            q_full.init(1);
            for s in 0..STAGES {
                k_full(s).init(1);
                v_full(s).init(1);
                k_empty(s).init(256);
                v_empty(s).init(256);
            }
        }
        mbarrier::fence_init();
    }
    thread::sync_threads();

    let q_tiles = shape.seq / BM;
    // Causal blocks of the longest rows first: they finish last otherwise.
    let qt = if shape.causal { q_tiles - 1 - thread::blockIdx_x() } else { thread::blockIdx_x() };
    let bh = thread::blockIdx_y();
    let kv_row0 = bh * shape.seq;
    let q_row0 = kv_row0 + qt * BM;
    // BM == BN: the diagonal tile of query tile qt is KV tile qt.
    let kv_tiles = if shape.causal { qt + 1 } else { shape.seq / BN };
    let warp_index = warp::shfl_idx(warp::FULL_MASK, tid / 32, 0);
    // The parity of the `j / STAGES`-th completion of a stage's barriers.
    let phase = |j: u32| (j / STAGES) & 1;

    if warp_index >= 8 {
        warpgroup::decrease_max_registers::<PRODUCER_REGISTERS>();
        if warp_index == 8 && warp::elect_one(warp::FULL_MASK) {
            tma::prefetch_tensor_map(map_q);
            tma::prefetch_tensor_map(map_k);
            tma::prefetch_tensor_map(map_v);
            q_full.arrive_expect_tx(boxes * BM * ROW_BYTES);
            for c in 0..boxes {
                // SAFETY: valid map (host); the Q tile is 1024-aligned and
                // written once; `q_full` expects every box's bytes.
                unsafe { tma::load_2d(q_tile + c * BM * ROW_BYTES, map_q, q_full, (c * BOX) as i32, q_row0 as i32) };
            }
            // K and V stages are released separately (K once Q·Kᵀ is done,
            // V once P·V is), so K tiles run ahead of the V tiles.
            let mut j = 0;
            while j < kv_tiles {
                let s = j % STAGES;
                let row = (kv_row0 + j * BN) as i32;
                if j >= STAGES {
                    k_empty(s).wait(phase(j - STAGES));
                }
                k_full(s).arrive_expect_tx(kv_bytes);
                for c in 0..boxes {
                    // SAFETY: valid map; the stage is free (its empty
                    // barrier completed, or it was never used) and
                    // 1024-aligned; the full barrier expects the bytes.
                    unsafe { tma::load_2d(k_tile(s) + c * BN * ROW_BYTES, map_k, k_full(s), (c * BOX) as i32, row) };
                }
                if j >= STAGES {
                    v_empty(s).wait(phase(j - STAGES));
                }
                v_full(s).arrive_expect_tx(kv_bytes);
                for c in 0..boxes {
                    // SAFETY: as above.
                    unsafe { tma::load_2d(v_tile(s) + c * BN * ROW_BYTES, map_v, v_full(s), (c * BOX) as i32, row) };
                }
                j += 1;
            }
        }
        return;
    }

    // Consumer warpgroup `wg`: query rows 64·wg… of the block's tile. This
    // thread holds rows `r` and `r + 8` of the warpgroup's 64 (wgmma docs).
    warpgroup::increase_max_registers::<CONSUMER_REGISTERS>();
    let wg = warp_index / 4;
    let t = tid % 128;
    let lane = t % 32;
    let r = 16 * (t / 32) + lane / 4;
    let row_in_tile = 64 * wg + r;
    let q_rows = q_tile + wg * 64 * ROW_BYTES;
    let scale_log2 = if HD == 64 { 0.125 * core::f32::consts::LOG2_E } else { 0.088_388_35 * core::f32::consts::LOG2_E };
    let mut acc_o = wgmma::zeroed::<R>();
    let mut acc_s = wgmma::zeroed::<64>();
    let mut st = Softmax { m0: f32::NEG_INFINITY, m1: f32::NEG_INFINITY, l0: 0.0, l1: 0.0 };
    let diagonal = |j: u32| shape.causal && j == qt;
    q_full.wait(0);
    if P_REGS {
        // Software-pipelined (FlashAttention-3's intra-warpgroup overlap):
        // in step j the tensor cores run Q·K_jᵀ and then P_{j-1}·V_{j-1}
        // while the warpgroup waits only for the first, and the softmax of
        // S_j runs during the second. O is rescaled once P_{j-1}·V_{j-1}
        // is done, before P_j·V_j is issued.
        k_full(0).wait(0);
        // SAFETY (every issue_* below): the whole warpgroup runs them with
        // the same addresses; their operands are not rewritten and their
        // stages not released before the wait_group that follows.
        unsafe { issue_qk::<HD>(&mut acc_s, q_rows, k_tile(0)) };
        wgmma::wait_group::<0>();
        k_empty(0).arrive();
        let (_, _, first) = softmax(acc_s, diagonal(0), row_in_tile, lane, &mut st, scale_log2);
        // Step j: Q·K_jᵀ, then P_{j-1}·V_{j-1} with `$p`; returns P_j.
        macro_rules! step {
            ($j:expr, $p:expr) => {{
                let j = $j;
                let (s, sp) = (j % STAGES, (j - 1) % STAGES);
                k_full(s).wait(phase(j));
                unsafe { issue_qk::<HD>(&mut acc_s, q_rows, k_tile(s)) };
                v_full(sp).wait(phase(j - 1));
                unsafe { issue_pv_registers(&mut acc_o, &$p, v_tile(sp)) };
                // S_j is done (groups complete in order); P·V still runs.
                wgmma::wait_group::<1>();
                k_empty(s).arrive();
                let (alpha0, alpha1, next) = softmax(acc_s, diagonal(j), row_in_tile, lane, &mut st, scale_log2);
                wgmma::wait_group::<0>();
                v_empty(sp).arrive();
                rescale(&mut acc_o, alpha0, alpha1);
                next
            }};
        }
        // The last tile's P·V.
        macro_rules! last {
            ($p:expr) => {{
                let sp = (kv_tiles - 1) % STAGES;
                v_full(sp).wait(phase(kv_tiles - 1));
                unsafe { issue_pv_registers(&mut acc_o, &$p, v_tile(sp)) };
                wgmma::wait_group::<0>();
                v_empty(sp).arrive();
            }};
        }
        // Two P buffers taking turns: the softmax must not write the
        // registers a P·V in flight reads (ptxas would serialise every
        // wgmma, C7513), which one loop-carried P would (its next value is
        // computed while the last one is being multiplied).
        let mut pa = first;
        let mut j = 1;
        loop {
            if j >= kv_tiles {
                last!(pa);
                break;
            }
            let pb = step!(j, pa);
            j += 1;
            if j >= kv_tiles {
                last!(pb);
                break;
            }
            pa = step!(j, pb);
            j += 1;
        }
    } else {
        let p_base = p_tile(wg);
        let c0 = 2 * (lane % 4);
        let mut j = 0;
        while j < kv_tiles {
            let s = j % STAGES;
            k_full(s).wait(phase(j));
            // SAFETY: as above.
            unsafe { issue_qk::<HD>(&mut acc_s, q_rows, k_tile(s)) };
            wgmma::wait_group::<0>();
            k_empty(s).arrive();
            let (alpha0, alpha1, p) = softmax(acc_s, diagonal(j), row_in_tile, lane, &mut st, scale_log2);
            unroll!(full, for i in 0..16u32 {
                // SAFETY: inside this warpgroup's P tile; each (row, column
                // pair) belongs to this thread alone, and the last P·V that
                // read the tile completed (wait_group below, and the Q·Kᵀ
                // before this point is warpgroup-collective).
                unsafe {
                    store_shared(p_base + swizzled_offset(r, 8 * i + c0, 64), p[(i / 2) as usize][2 * (i % 2) as usize]);
                    store_shared(p_base + swizzled_offset(r + 8, 8 * i + c0, 64), p[(i / 2) as usize][2 * (i % 2) as usize + 1]);
                }
            });
            rescale(&mut acc_o, alpha0, alpha1);
            // P's generic-proxy stores, visible to wgmma (async proxy),
            // from every warp of the warpgroup.
            tma::fence_proxy_async_shared();
            sync_warpgroup(wg);
            v_full(s).wait(phase(j));
            // SAFETY: as above.
            unsafe { issue_pv_shared(&mut acc_o, p_base, v_tile(s)) };
            wgmma::wait_group::<0>();
            v_empty(s).arrive();
            j += 1;
        }
    }
    let Softmax { m0, m1, mut l0, mut l1 } = st;

    // Epilogue: the row sums over the quad, O / l, log-sum-exp.
    l0 += warp::shfl_xor(warp::FULL_MASK, l0, 1);
    l0 += warp::shfl_xor(warp::FULL_MASK, l0, 2);
    l1 += warp::shfl_xor(warp::FULL_MASK, l1, 1);
    l1 += warp::shfl_xor(warp::FULL_MASK, l1, 2);
    // l ≥ 1: the row's maximum contributes 2⁰.
    let (inv0, inv1) = (recip(l0), recip(l1));
    let row = q_row0 + row_in_tile;
    let col = 2 * (lane % 4);
    unroll!(full, for i in 0..R / 4 {
        let top = ((row * HD + col + 8 * i as u32) / 2) as usize;
        let bottom = (((row + 8) * HD + col + 8 * i as u32) / 2) as usize;
        if bottom < o.len() {
            // SAFETY: both indices are below o.len(); the (row, column
            // pair)s of a fragment belong to this thread alone and the
            // blocks' and warpgroups' rows are disjoint.
            unsafe {
                *o.get_unchecked_mut(top) = pack_bf16x2(acc_o[4 * i] * inv0, acc_o[4 * i + 1] * inv0);
                *o.get_unchecked_mut(bottom) = pack_bf16x2(acc_o[4 * i + 2] * inv1, acc_o[4 * i + 3] * inv1);
            }
        }
    });
    if lane.is_multiple_of(4) && ((row + 8) as usize) < lse.len() {
        let ln2 = core::f32::consts::LN_2;
        // SAFETY: both below lse.len(); one lane per row writes it.
        unsafe {
            *lse.get_unchecked_mut(row as usize) = (m0 + log2(l0)) * ln2;
            *lse.get_unchecked_mut(row as usize + 8) = (m1 + log2(l1)) * ln2;
        }
    }
}

/// Attention forward for head_dim 64 (module docs). Launch with
/// [`THREADS`] threads, grid (seq/128, batch·heads),
/// [`shared_bytes`]`(64)` of dynamic shared memory; the maps have boxes of
/// 64×128 (d × rows) and the 128-byte swizzle.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d64(map_q: u64, map_k: u64, map_v: u64, shape: Shape, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true>(map_q, map_k, map_v, shape, &mut o, &mut lse);
}

/// Attention forward for head_dim 128; as [`attention_fwd_d64`] with
/// [`shared_bytes`]`(128)`.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128(map_q: u64, map_k: u64, map_v: u64, shape: Shape, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true>(map_q, map_k, map_v, shape, &mut o, &mut lse);
}

/// [`attention_fwd_d64`] with P passed to P·V through shared memory
/// (128-byte swizzle, [`swizzled_offset`]) instead of registers: the
/// cross-check of [`Variant::SharedP`].
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_smem_d64(map_q: u64, map_k: u64, map_v: u64, shape: Shape, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, false>(map_q, map_k, map_v, shape, &mut o, &mut lse);
}

/// [`attention_fwd_d128`] with P through shared memory.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_smem_d128(map_q: u64, map_k: u64, map_v: u64, shape: Shape, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, false>(map_q, map_k, map_v, shape, &mut o, &mut lse);
}

// ---------------------------------------------------------------------------
// Host side: shape check, tensor maps, shared memory, launch shape.

/// The error type of the host functions.
pub type Error = Box<dyn std::error::Error>;

/// Dynamic shared memory of the kernel for `head_dim`: the Q tile, STAGES
/// K and V tiles, two P tiles, the barriers, 1024 bytes of alignment slack.
pub const fn shared_bytes(head_dim: u32) -> u32 {
    let boxes = head_dim / BOX;
    boxes * BM * ROW_BYTES + STAGES * 2 * boxes * BN * ROW_BYTES + 2 * P_BYTES + 8 * (1 + 4 * STAGES) + 1024
}

/// Whether the kernels support `shape`: head_dim 64 or 128, seq a non-zero
/// multiple of 128 (a ragged last tile is not masked: pad the sequence), at
/// least one (batch, head), and every element addressable with 32-bit
/// indices.
pub fn check_shape(shape: Shape) -> Result<(), String> {
    if shape.head_dim != 64 && shape.head_dim != 128 {
        return Err(format!("head_dim must be 64 or 128, not {} ({shape:?})", shape.head_dim));
    }
    if shape.seq == 0 || !shape.seq.is_multiple_of(BM) {
        return Err(format!(
            "seq must be a non-zero multiple of {BM} (the kernels do not mask a ragged last tile; pad the sequence), not {} ({shape:?})",
            shape.seq
        ));
    }
    if shape.batch_heads == 0 || shape.batch_heads > 65535 {
        return Err(format!("batch·heads must be 1..=65535 (the grid's y), not {} ({shape:?})", shape.batch_heads));
    }
    if shape.elements() >= 1 << 31 {
        return Err(format!("{shape:?} has {} elements per tensor; the kernels index with 32 bits (< 2³¹)", shape.elements()));
    }
    Ok(())
}

/// How the kernel hands P (the softmax weights) to the P·V product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// In registers: the S fragment, rounded to bf16 and packed, is
    /// wgmma's A operand directly (`_rs` wgmma). The default.
    RegisterP,
    /// Through shared memory in the 128-byte-swizzle layout, read by a
    /// descriptor (needs a proxy fence and a warpgroup barrier per tile).
    SharedP,
}

impl Variant {
    /// Both, the default first.
    pub const ALL: [Variant; 2] = [Variant::RegisterP, Variant::SharedP];
}

/// The kernel function name for `head_dim` and `variant`.
pub fn kernel_name(head_dim: u32, variant: Variant) -> &'static str {
    match (head_dim, variant) {
        (64, Variant::RegisterP) => "attention_fwd_d64",
        (_, Variant::RegisterP) => "attention_fwd_d128",
        (64, Variant::SharedP) => "attention_fwd_smem_d64",
        (_, Variant::SharedP) => "attention_fwd_smem_d128",
    }
}

/// The launch shape for `shape` (which [`check_shape`] accepted).
pub fn launch_config(shape: Shape) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (shape.seq / BM, shape.batch_heads, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: shared_bytes(shape.head_dim),
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

/// A tensor map of one of Q, K, V (`[rows][head_dim]` bf16) with the
/// 128-byte swizzle, uploaded to the GPU.
fn upload_map(stream: &CudaStream, tensor: &DeviceBuffer<u16>, shape: Shape) -> Result<DeviceBuffer<TensorMap>, Error> {
    let map = TensorMap::matrix_b128(TensorDataType::BF16, tensor.device_ptr(), shape.rows() as u64, shape.head_dim as u64, BM)
        .encode()?;
    Ok(map.upload(stream)?)
}

/// One attention problem set up for repeated launches: the shape checked,
/// the tensor maps of Q, K, V encoded and uploaded, the kernel's dynamic
/// shared memory limit raised. It borrows Q, K, V because the tensor maps
/// hold their addresses; each launch reads their current contents.
pub struct Attention<'a> {
    shape: Shape,
    variant: Variant,
    maps: [DeviceBuffer<TensorMap>; 3],
    inputs: PhantomData<&'a DeviceBuffer<u16>>,
}

impl<'a> Attention<'a> {
    /// Prepares the forward pass for `q`, `k`, `v` (bf16 bits,
    /// `[batch·heads][seq][head_dim]` row-major) with the default kernel
    /// ([`Variant::RegisterP`]). Fails on a shape the kernels do not
    /// support ([`check_shape`]), on buffers shorter than the shape says,
    /// and on driver errors.
    pub fn new(
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Attention<'a>, Error> {
        Self::with_variant(Variant::RegisterP, module, stream, q, k, v, shape)
    }

    /// As [`Attention::new`], with the kernel `variant`.
    pub fn with_variant(
        variant: Variant,
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Attention<'a>, Error> {
        check_shape(shape)?;
        let n = shape.elements();
        for (name, t) in [("Q", q), ("K", k), ("V", v)] {
            if t.len() < n {
                return Err(format!("{name} needs {n} elements for {shape:?}; it has {}", t.len()).into());
            }
        }
        let maps = [upload_map(stream, q, shape)?, upload_map(stream, k, shape)?, upload_map(stream, v, shape)?];
        kernel_function(module, kernel_name(shape.head_dim, variant))?.set_max_dynamic_shared_memory(shared_bytes(shape.head_dim))?;
        Ok(Attention { shape, variant, maps, inputs: PhantomData })
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The kernel variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Launches the forward pass on `stream` (asynchronously): `o`
    /// (elements/2 words, each two bf16 of a row) = attention output, `lse`
    /// (one f32 per row) = the log-sum-exp of the scaled scores. `module`
    /// must be the one passed to [`Attention::new`].
    pub fn launch(&self, module: &KernelModule, stream: &CudaStream, o: &mut DeviceBuffer<u32>, lse: &mut DeviceBuffer<f32>) -> Result<(), Error> {
        let shape = self.shape;
        if o.len() < shape.elements() / 2 || lse.len() < shape.rows() {
            return Err(format!(
                "O needs {} words and LSE {} floats for {shape:?}; they have {} and {}",
                shape.elements() / 2,
                shape.rows(),
                o.len(),
                lse.len()
            )
            .into());
        }
        let config = launch_config(shape);
        let (pq, pk, pv) = (self.maps[0].device_ptr(), self.maps[1].device_ptr(), self.maps[2].device_ptr());
        match (shape.head_dim, self.variant) {
            (64, Variant::RegisterP) => cuda_launch! { kernel: attention_fwd_d64, stream: stream, module: module,
                config: config, args: [pq, pk, pv, shape, slice_mut(*o), slice_mut(*lse)] }?,
            (_, Variant::RegisterP) => cuda_launch! { kernel: attention_fwd_d128, stream: stream, module: module,
                config: config, args: [pq, pk, pv, shape, slice_mut(*o), slice_mut(*lse)] }?,
            (64, Variant::SharedP) => cuda_launch! { kernel: attention_fwd_smem_d64, stream: stream, module: module,
                config: config, args: [pq, pk, pv, shape, slice_mut(*o), slice_mut(*lse)] }?,
            (_, Variant::SharedP) => cuda_launch! { kernel: attention_fwd_smem_d128, stream: stream, module: module,
                config: config, args: [pq, pk, pv, shape, slice_mut(*o), slice_mut(*lse)] }?,
        }
        Ok(())
    }
}

/// The f32 CPU reference of the forward pass for one (batch, head) `bh`
/// and query row `i`: the output row (head_dim values) and the
/// log-sum-exp, from bf16 inputs given as f32. P is used unrounded.
pub fn reference_row(q: &[f32], k: &[f32], v: &[f32], shape: Shape, bh: usize, i: usize) -> (Vec<f32>, f32) {
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    let base = bh * s * d;
    let qi = &q[base + i * d..base + (i + 1) * d];
    let scale = 1.0 / (d as f32).sqrt();
    let keys = if shape.causal { i + 1 } else { s };
    let scores: Vec<f32> = (0..keys)
        .map(|j| qi.iter().zip(&k[base + j * d..base + (j + 1) * d]).map(|(a, b)| a * b).sum::<f32>() * scale)
        .collect();
    let max = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let weights: Vec<f32> = scores.iter().map(|x| (x - max).exp()).collect();
    let sum: f32 = weights.iter().sum();
    let mut out = vec![0.0f32; d];
    for (j, w) in weights.iter().enumerate() {
        for (o, x) in out.iter_mut().zip(&v[base + j * d..base + (j + 1) * d]) {
            *o += w * x;
        }
    }
    out.iter_mut().for_each(|o| *o /= sum);
    (out, max + sum.ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The swizzle helper against the formula written out: box, row, the
    /// 16-byte chunk XOR row % 8, the byte inside the chunk.
    #[test]
    fn swizzled_offset_matches_formula() {
        for rows in [64u32, 128] {
            for row in 0..rows {
                for col in 0..128u32 {
                    let chunk = (col % 64) / 8;
                    let expect = (col / 64) * rows * 128 + row * 128 + 16 * (chunk ^ (row % 8)) + 2 * (col % 8);
                    assert_eq!(swizzled_offset(row, col, rows), expect, "row {row} col {col}");
                }
            }
        }
        // A row's 64 columns of one box are a permutation of its 128 bytes.
        let mut seen: Vec<u32> = (0..64).step_by(2).map(|c| swizzled_offset(5, c, 64) - 5 * 128).collect();
        seen.sort();
        assert_eq!(seen, (0..128).step_by(4).collect::<Vec<_>>());
    }

    #[test]
    fn shapes_are_checked() {
        let ok = Shape { batch_heads: 4, seq: 4096, head_dim: 128, causal: true };
        assert!(check_shape(ok).is_ok());
        assert!(check_shape(Shape { head_dim: 64, ..ok }).is_ok());
        let e = check_shape(Shape { head_dim: 96, ..ok }).unwrap_err();
        assert!(e.contains("head_dim must be 64 or 128"), "{e}");
        let e = check_shape(Shape { seq: 1000, ..ok }).unwrap_err();
        assert!(e.contains("multiple of 128") && e.contains("pad"), "{e}");
        assert!(check_shape(Shape { seq: 0, ..ok }).is_err());
        assert!(check_shape(Shape { batch_heads: 0, ..ok }).is_err());
        let e = check_shape(Shape { batch_heads: 4096, seq: 16384, ..ok }).unwrap_err();
        assert!(e.contains("32 bits"), "{e}");
    }

    #[test]
    fn launch_geometry() {
        let shape = Shape { batch_heads: 3, seq: 1024, head_dim: 128, causal: false };
        let c = launch_config(shape);
        assert_eq!(c.grid_dim, (8, 3, 1));
        assert_eq!(c.block_dim, (384, 1, 1));
        // Fits the H200's 227 KiB opt-in limit.
        assert!(shared_bytes(128) <= 227 * 1024 && shared_bytes(64) <= 227 * 1024);
        assert_eq!(Shape { causal: true, ..shape }.flops() * 2.0, shape.flops());
        assert_eq!(shape.flops(), 4.0 * 3.0 * 1024.0 * 1024.0 * 128.0);
    }

    #[test]
    fn every_shape_and_variant_has_its_own_kernel() {
        let mut names: Vec<&str> =
            [64, 128].iter().flat_map(|&hd| Variant::ALL.map(|v| kernel_name(hd, v))).collect();
        assert_eq!(names[0], "attention_fwd_d64");
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 4);
    }

    #[test]
    fn reference_is_a_softmax() {
        // V = all ones: every output is 1; Q = 0: lse = ln(keys).
        let shape = Shape { batch_heads: 1, seq: 128, head_dim: 64, causal: true };
        let n = shape.elements();
        let (q, k, v) = (vec![0.0; n], vec![0.5; n], vec![1.0; n]);
        let (out, lse) = reference_row(&q, &k, &v, shape, 0, 9);
        assert!(out.iter().all(|&x| (x - 1.0).abs() < 1e-6));
        assert!((lse - 10f32.ln()).abs() < 1e-5);
    }
}
