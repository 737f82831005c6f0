//! The backward pass of fused attention (FlashAttention-2/3 structure) on
//! Hopper: given Q, K, V, the forward's output O and log-sum-exp, and the
//! gradient dO of the output, it computes dQ, dK and dV (bf16 out, f32
//! accumulation). Layouts are the forward's (crate docs): Q, K, V, dO are
//! `[batch·heads][seq][head_dim]` bf16 bits (`u16`); O, dQ, dK, dV are the
//! same as pairs of bf16 in `u32` words (low half the even column).
//!
//! With P = softmax(S), S = Q·Kᵀ·scale (scale = 1/√d), the gradients are
//! dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − D) with D_i = Σ_j P_ij·dP_ij =
//! rowsum(dO_i∘O_i), dQ = scale·dS·K, dK = scale·dSᵀ·Q. P is recomputed
//! from Q, K and the forward's log-sum-exp: P = 2^(S·log2(e) − lse·log2(e)),
//! no running maximum needed.
//!
//! Three kernels, launched in order by [`Backward::launch`] (with a memset
//! of the dQ accumulator in between):
//! 1. [`attention_bwd_prep`]: D = rowsum(dO∘O), f32, one warp per row.
//! 2. [`attention_bwd_d64`] / [`attention_bwd_d128`] (and
//!    [`attention_bwd_keys_d128`], [`attention_bwd_wide_d128`],
//!    [`attention_bwd_staged_d128`], [`attention_bwd_red4_d128`],
//!    [`attention_bwd_tma_d128`], [`attention_bwd_tmaeager_d128`]: the
//!    kernels [`DqSplit`] names), the main kernel: a
//!    block owns [`BWD_BN`] keys of one (batch, head) and 384 threads: two
//!    consumer warpgroups of 64 keys each and a producer warpgroup (one lane
//!    issues TMA copies; `setmaxnreg` moves its registers to the consumers
//!    as in the forward). The producer loads the block's K and V tiles once,
//!    then Q and dO tiles of [`BWD_BM`] queries through a ring of
//!    [`BWD_STAGES`] stages (one "full" and one "empty" mbarrier each). The
//!    block loops over every query tile its keys see (causal: from the
//!    diagonal on; the blocks of the first keys, which see the most query
//!    tiles, are launched first: the grid is (G, key tiles, ⌈batch·heads/G⌉)
//!    and, as in the forward, the (batch, head)s run in groups of G, one key
//!    tile of every head of the group before the next, [`bwd_launch_config`],
//!    [`bwd_default_group`]). Per query tile a consumer warpgroup
//!    computes, with the keys as the wgmma's M dimension (the transposed
//!    products, as FlashAttention-3 does, so that Pᵀ and dSᵀ come out in
//!    the register layout of the A operand of dV and dK):
//!    * Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (`m64n64k16`, both operands K-major from
//!      the TMA tiles), issued together;
//!    * Pᵀ = 2^(Sᵀ·scale·log2(e) − lse·log2(e)) (masked to 0 above the
//!      diagonal when causal), the log-sum-exp and D of the tile's queries
//!      read from global memory (they are per column of the fragment);
//!    * dV += Pᵀ·dO with Pᵀ rounded to bf16 in registers (`_rs_trans_b`: dO's
//!      tile is `[queries][d]`, rows along the reduction, an MN-major B);
//!    * dSᵀ = Pᵀ∘(dPᵀ − D), rounded to bf16 and packed in pairs: in
//!      registers for dK += dSᵀ·Q (`_rs_trans_b`), and the same registers
//!      stored transposed by `stmatrix …trans` (four 8 × 8 matrices a warp
//!      instruction; queries × keys, 128-byte-swizzled, `swizzled_offset`)
//!      into the warpgroup's dS tile in shared memory (a 16-bit store per
//!      element, with its address and conversion, cost eight times the
//!      instructions): the two warpgroups' tiles
//!      side by side are the block's 64 × 128 dS, the K-major A operand of
//!    * dQ_part = dS·K (`_trans_b`, K's tile MN-major), added into an f32
//!      dQ accumulator in global memory with device-scope vector atomic adds
//!      (`red.global.add.v2.f32`; every key block of the (batch, head) adds
//!      into the same rows). [`DqSplit`]: at head_dim 128 each warpgroup
//!      computes 64 of dQ's columns over all 128 keys, after a barrier of
//!      both warpgroups (so each dQ entry is added once per block;
//!      `attention_bwd_d128`); or, at head_dim 64 and in
//!      `attention_bwd_keys_d128`, each warpgroup adds its own 64 keys' part
//!      of every column (no barrier between the warpgroups, which then
//!      overlap each other's arithmetic and matmuls more freely; twice the
//!      atomics).
//!
//!    The dS tiles alternate between two buffers, so that one barrier per
//!    query tile (after the dS stores) also orders the next-but-one tile's
//!    stores after this tile's dQ product. Once the tile's products are
//!    complete, its stage is released. The epilogue writes dK·scale and dV as bf16.
//! 3. [`attention_bwd_convert`]: dQ = scale·(the accumulator), to bf16.
//!
//! [`attention_bwd_tma_d128`] ([`DqSplit::TmaReduce`]) adds dQ
//! differently:
//! each warpgroup stores its 64 × 64 f32 part into a buffer of its own in
//! shared memory (in the swizzled layout of two boxes of a tensor map over
//! the accumulator), and at the next tile's start, once that tile's Sᵀ and
//! dPᵀ are issued and a barrier of the warpgroup has passed, one thread
//! adds the buffer into the accumulator with two bulk tensor reductions
//! (`cp.reduce.async.bulk.tensor`, one bulk group); it waits for the group
//! to have read the buffer before the consumers' barrier that precedes the
//! next stores. [`attention_bwd_tmaeager_d128`] issues them right after
//! the stores instead. The other kernels add dQ with one atomic per pair
//! (or quad) of entries.
//!
//! [`attention_bwd_tmap_d128`] ([`DqSplit::TmaPersistent`]) is
//! `attention_bwd_tma_d128` (the default at head_dim 128) in persistent blocks, one per
//! multiprocessor, each taking key tiles from a work counter as the
//! persistent forward takes query tiles (crate docs): the producer loads
//! the next item's K and V once both consumer warpgroups have released the
//! last ones (an mbarrier, `kv_empty`, after the item's last dQ product),
//! and its Q and dO tiles into the ring as before; the ring's stages and
//! dS buffers count on across items. A block's loop over 32 or more query
//! tiles is long enough that its start and drain cost little, and what the
//! persistent kernel must keep across items costs its 240-register
//! consumers a spill inside the loop: `tma` has been the faster of the two
//! since the dS stores became `stmatrix` (benches/README.md).
//!
//! This version does not overlap the softmax-gradient arithmetic of one
//! tile with the matmuls of the next.
//!
//! ```ignore
//! let mut bwd = Backward::new(&module, &stream, &q, &k, &v, &d_o, shape)?;
//! bwd.launch(&module, &stream, &o, &lse, &mut dq, &mut dk, &mut dv)?;
//! ```

use crate::{
    aligned_dynamic_shared, block_work, check_shape, exp2, kernel_function, mma_pv, mma_pv_registers, swizzled_offset, sync_warpgroup, Error,
    Group, Shape,
};
use crate::{hand_out_item, order_tma_reads, received_item, schedule_launch, virtual_block, Schedule, WorkCounter, BOX, ROW_BYTES};
use cuda_core::tensor_map::{TensorDataType, TensorMap};
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::AtomicF32;
use cuda_device::mbarrier::{self, MBarrier};
use cuda_device::wgmma::{self, pack_bf16x2};
use cuda_device::{kernel, ptx_asm, thread, tma, unroll, warp, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Keys per block (two consumer warpgroups of 64).
pub const BWD_BN: u32 = 128;
/// Queries per Q/dO tile (the N of Sᵀ and dPᵀ, the reduction of dV and dK).
pub const BWD_BM: u32 = 64;
/// Pipeline depth (Q/dO stages).
pub const BWD_STAGES: u32 = 3;
/// Threads per block of the main kernel (as the forward's).
pub const BWD_THREADS: u32 = 384;
/// Registers per thread of the producer warpgroup after `setmaxnreg`.
const PRODUCER_REGISTERS: u32 = 40;
/// Registers per thread of the consumer warpgroups: 40 + 2·232 = 3·168.
const CONSUMER_REGISTERS: u32 = 232;
/// The producer's registers in [`DqSplit::ColumnsWide`]: the fewest
/// `setmaxnreg` allows, which its TMA loop fits without spilling.
const WIDE_PRODUCER_REGISTERS: u32 = 24;
/// The consumers' registers in [`DqSplit::ColumnsWide`]: 24 + 2·240 is
/// within the 3·168 the launch bounds give the block's threads (each count
/// a multiple of 8).
const WIDE_CONSUMER_REGISTERS: u32 = 240;
/// Bytes of one warpgroup's dS tile (64 queries × 64 keys bf16, one box).
const DS_BYTES: u32 = 64 * 64 * 2;
/// Bytes of one box of the dQ accumulator's tensor map ([`DqSplit::TmaReduce`]):
/// 32 f32 columns (128 bytes) × [`BWD_BM`] rows, 128-byte swizzled.
const DQ_BOX_BYTES: u32 = 32 * 4 * BWD_BM;
/// Bytes of one warpgroup's f32 dQ part in shared memory
/// ([`DqSplit::TmaReduce`]): its 64 columns, two boxes.
const DQ_TILE_BYTES: u32 = 2 * DQ_BOX_BYTES;
/// Rows (warps) per block of the preprocessing kernel.
const PREP_ROWS: u32 = 8;
/// Bytes of one stage's log-sum-exp and D rows in shared memory
/// ([`DqSplit::Staged`]): [`BWD_BM`] f32 of each.
const STATS_BYTES: u32 = 2 * BWD_BM * 4;
/// Offset of the first stage's log-sum-exp and D rows from the barriers
/// (past them, 128-byte aligned).
const STATS_OFFSET: u32 = 128;
const _: () = assert!(8 * (3 + 2 * BWD_STAGES) <= STATS_OFFSET, "the barriers overlap the stats tiles");

/// Stores four 8×8 matrices of bf16, transposed, from this warp's fragments
/// (`stmatrix.sync.aligned.m8n8.x4.trans.shared.b16`): lane `l` gives the
/// 32-bit shared address of row `l % 8` of matrix `l / 8` (16 contiguous,
/// 16-byte-aligned bytes), and `f[m]` is its fragment of matrix `m`: the two
/// elements it holds in row `l / 4`, columns `2·(l % 4)` and `+1` (low half
/// first), which land in that column of memory rows `2·(l % 4)` and `+1`.
///
/// # Safety
/// Warp-wide (every lane, converged); each lane's row lies inside the
/// launch's dynamic shared memory and nobody else accesses the rows
/// concurrently.
#[inline(always)]
unsafe fn store_matrices_x4_trans(address: u32, f: [u32; 4]) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [{a}], {{{f0}, {f1}, {f2}, {f3}}};",
            a = in(u32) address,
            f0 = in(u32) f[0],
            f1 = in(u32) f[1],
            f2 = in(u32) f[2],
            f3 = in(u32) f[3]
        )
    };
}

/// The shared address, relative to a warpgroup's dS tile (queries × keys,
/// one 128-byte-swizzled box of 64 × 64), of the row that lane `lane` of
/// warp `warp` gives to the first [`store_matrices_x4_trans`] of its part
/// of dSᵀ; the `k`-th store's rows are `2048·k` bytes further. Store `k`
/// writes the fragments [`a_operand`]`(dsᵀ, k)`: matrices `m` = 0…3 of
/// keys 16·warp + 8·(m % 2)… and queries 16·k + 8·(m / 2)…, each query's
/// 8 keys one 16-byte chunk of its row.
const fn ds_row_offset(warp: u32, lane: u32) -> u32 {
    let (m, j) = (lane / 8, lane % 8);
    swizzled_offset(8 * (m / 2) + j, 16 * warp + 8 * (m % 2), 64)
}

// Every element of a thread's dSᵀ fragment lands at (query, key) of the
// tile (checked when the crate compiles): element
// 4i + 2h + e of thread (warp, lane) is key 16·warp + 8h + lane/4, query
// 8i + 2·(lane % 4) + e; it is fragment half e of matrix 2·(i % 2) + h of
// store i / 2, which the lane 8·m + 2·(lane % 4) + e gives the row of.
const _: () = {
    let mut t = 0;
    while t < 128 {
        let (warp, lane) = (t / 32, t % 32);
        let mut i = 0;
        while i < 8 {
            let mut h = 0;
            while h < 2 {
                let mut e = 0;
                while e < 2 {
                    let (key, query) = (16 * warp + 8 * h + lane / 4, 8 * i + 2 * (lane % 4) + e);
                    let m = 2 * (i % 2) + h;
                    let at = ds_row_offset(warp, 8 * m + 2 * (lane % 4) + e) + 2048 * (i / 2) + 2 * (lane / 4);
                    assert!(at == swizzled_offset(query, key, 64), "a dS element misses its place");
                    e += 1;
                }
                h += 1;
            }
            i += 1;
        }
        t += 1;
    }
};

/// Loads the f32 pair at a 32-bit shared address (8-byte aligned).
///
/// # Safety
/// `address` is inside the launch's dynamic shared memory, and no write to
/// it is in flight.
#[inline(always)]
unsafe fn load_shared_f32x2(address: u32) -> (f32, f32) {
    let (x, y): (f32, f32);
    // SAFETY: the caller's contract.
    unsafe { ptx_asm!("ld.shared.v2.f32 {{{x}, {y}}}, [{a}];", x = out(f32) x, y = out(f32) y, a = in(u32) address) };
    (x, y)
}

/// Stores the f32 pair (`x`, `y`) at the 32-bit shared address
/// (`base` ^ `flip`) + `offset` (8-byte aligned), computed inside the PTX:
/// with `flip` and `offset` constants, the compiler keeps `base` alone in
/// a register across a loop rather than hoisting each store's address
/// into one of its own.
///
/// # Safety
/// The address is inside the launch's dynamic shared memory, and nobody
/// else accesses it concurrently (no asynchronous read of it in flight
/// either).
#[inline(always)]
unsafe fn store_shared_f32x2_at(base: u32, flip: u32, offset: u32, x: f32, y: f32) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "{{ .reg .b32 a; xor.b32 a, {b}, {f}; add.u32 a, a, {o}; st.shared.v2.f32 [a], {{{x}, {y}}}; }}",
            b = in(u32) base,
            f = in(u32) flip,
            o = in(u32) offset,
            x = in(f32) x,
            y = in(f32) y
        )
    };
}

/// Adds the box of f32 at shared address `src` into the box at (`x`, `y`)
/// (column, row) of the 2-D f32 tensor map `map`, in global memory, with
/// the bulk-copy engine (`cp.reduce.async.bulk.tensor.2d…add.tile`, sm_90),
/// in the current bulk group of this thread: each element is added as by
/// a relaxed device-scope atomic add. [`tma::commit_group`] closes the group;
/// [`tma::wait_group_read`] says when `src` may be rewritten.
///
/// # Safety
/// `map` is the generic address of a valid 2-D f32 tensor map whose box
/// `src` holds (in the map's swizzled layout, 1024-byte aligned for the
/// 128-byte swizzle), over memory that every concurrent access reaches
/// atomically; the box's contents were written before a
/// [`tma::fence_proxy_async_shared`] of each writing thread and a barrier
/// with them; nobody writes `src` until a `wait_group_read` of this thread
/// covers the group.
#[inline(always)]
unsafe fn bulk_reduce_add_2d(map: u64, src: u32, x: i32, y: i32) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(u64) map,
            x = in(i32) x,
            y = in(i32) y,
            s = in(u32) src
        )
    };
}

/// Copies `bytes` bytes from global memory at `src` to shared memory at
/// `dst` with the bulk-copy engine (`cp.async.bulk`, non-tensor), counted
/// in `bar`'s transaction bytes as a TMA tile load is.
///
/// # Safety
/// `src` and `dst` are 16-byte aligned and `bytes` a multiple of 16, both
/// ranges inside their allocations; nothing reads or writes `dst` until
/// `bar` completes; `bar` expects the bytes (`arrive_expect_tx`).
#[inline(always)]
unsafe fn bulk_load(dst: u32, src: *const f32, bytes: u32, bar: MBarrier) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {s}; cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [g], {n}, [{b}]; }}",
            d = in(u32) dst,
            s = in(u64) src as u64,
            n = in(u32) bytes,
            b = in(u32) bar.address()
        )
    };
}

/// Adds `x` and `y` to the f32 pair at `p` (8-byte aligned, global
/// memory) with one vector reduction, `red.relaxed.gpu.global.add.v2.f32`
/// (sm_90): half the requests of two scalar atomic adds, for the same
/// device-scope relaxed semantics ([`AtomicF32`]'s `fetch_add_scoped` has
/// no vector form).
///
/// # Safety
/// `p` points at two f32 in global memory that every concurrent access
/// reaches atomically.
#[inline(always)]
unsafe fn red_add_pair(p: *const AtomicF32, x: f32, y: f32) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {a}; red.relaxed.gpu.global.add.v2.f32 [g], {{{x}, {y}}}; }}",
            a = in(u64) p as u64,
            x = in(f32) x,
            y = in(f32) y
        )
    };
}

/// Adds the four f32 in `v` to the four at `p` (16-byte aligned, global
/// memory) with one vector reduction, `red.relaxed.gpu.global.add.v4.f32`
/// (sm_90, PTX ISA 8.1): as [`red_add_pair`], half its requests for the
/// same entries.
///
/// # Safety
/// `p` points at four f32 in global memory that every concurrent access
/// reaches atomically.
#[inline(always)]
unsafe fn red_add_quad(p: *const AtomicF32, v: [f32; 4]) {
    // SAFETY: the caller's contract.
    unsafe {
        ptx_asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {a}; red.relaxed.gpu.global.add.v4.f32 [g], {{{x}, {y}, {z}, {w}}}; }}",
            a = in(u64) p as u64,
            x = in(f32) v[0],
            y = in(f32) v[1],
            z = in(f32) v[2],
            w = in(f32) v[3]
        )
    };
}

/// Waits until the 256 threads of both consumer warpgroups have arrived
/// (named barrier 3; 1 and 2 are the warpgroups' own).
#[inline(always)]
fn sync_consumers() {
    // SAFETY: a barrier; both consumer warpgroups call it together.
    unsafe { ptx_asm!("bar.sync 3, 256;") };
}

/// Byte offset of dQ entry (`row`, `col`) (row < [`BWD_BM`], col < 64) in a
/// warpgroup's dQ buffer ([`DqSplit::TmaReduce`]): the layout a TMA box of
/// the accumulator's map has in shared memory, box `col / 32` of 32 f32
/// columns, rows of 128 bytes, the 16-byte chunk index XORed with `row % 8`
/// (the 128-byte swizzle; the buffer is 1024-aligned).
const fn dq_buffer_offset(row: u32, col: u32) -> u32 {
    (col / 32) * DQ_BOX_BYTES + row * 128 + (((col % 32) / 4) ^ (row % 8)) * 16 + (col % 32 % 4) * 4
}

/// The fragment thread with row `r` and first column `c0` (module docs)
/// stores, in its store `k` (0…7), its pair i = [`dq_pair_of`]`(k, c0)`
/// of dQ columns 8i + c0, 8i + c0 + 1 of row `r` at (`base` ^ `flip`) +
/// `offset` of the buffer, `base` = this function's value and (`flip`,
/// `offset`) = [`dq_pair_place`]`(k)`; row `r + 8`'s pair 1024 bytes
/// further ([`dq_buffer_offset`] written so: with (c % 32) / 4 =
/// 2·(i % 4) + c0 / 4, bits that do not overlap, the chunk's XOR splits
/// into the thread's part and 32·(k % 4)).
///
/// Why the order: a warp's 8-byte stores go to the banks half a warp at a
/// time. Half a warp holds 4 rows (chunk XORs `r % 8` of 0…3 or 4…7) and
/// two column chunks (`c0 / 4`): stored in the same order, its 16 pairs
/// would fill 4 of the row's 8 chunks, two pairs a bank, twice the
/// wavefronts. The lanes with `c0 / 4` = 1 store pair k ^ 2 instead
/// (chunk bit 2 flipped, the XOR by 64 here), and the half warp fills all 8.
const fn dq_thread_base(r: u32, c0: u32) -> u32 {
    (r * 128 + 16 * ((c0 / 4) ^ (r % 8)) + 4 * (c0 % 4)) ^ (64 * (c0 / 4))
}

/// The pair (0…7) that the thread with first column `c0` stores in its
/// store `k` ([`dq_thread_base`]).
const fn dq_pair_of(k: u32, c0: u32) -> u32 {
    k ^ (2 * (c0 / 4))
}

/// The XOR and the offset of store `k` (0…7) for [`dq_thread_base`].
const fn dq_pair_place(k: u32) -> (u32, u32) {
    (32 * (k % 4), (k / 4) * DQ_BOX_BYTES)
}

// The stores' places are the map's layout, for every consumer thread and
// pair (checked when the crate compiles).
const _: () = {
    let mut t = 0;
    while t < 128 {
        let (r, c0) = (16 * (t / 32) + t % 32 / 4, 2 * (t % 4));
        let mut k = 0;
        while k < 8 {
            let (flip, offset) = dq_pair_place(k);
            let (at, i) = ((dq_thread_base(r, c0) ^ flip) + offset, dq_pair_of(k, c0));
            assert!(at == dq_buffer_offset(r, 8 * i + c0) && at + 1024 == dq_buffer_offset(r + 8, 8 * i + c0), "a dQ store misses its place");
            k += 1;
        }
        t += 1;
    }
};

/// Adds warpgroup `wg`'s dQ part into the accumulator
/// ([`DqSplit::TmaReduce`]): its buffer at `buffer` holds the two boxes of
/// the accumulator's map `map_dq` at columns 64·wg… and rows `row`…; after
/// a barrier of the warpgroup, its thread `t` = 0 issues both boxes'
/// reductions as one bulk group. Warpgroup-wide.
///
/// # Safety
/// `map_dq` is the generic address of the dQ accumulator's tensor map (f32,
/// boxes of 32 columns × [`BWD_BM`] rows, 128-byte swizzle) and `row` a
/// row of it; every thread of the warpgroup stored its part of the buffer
/// in that layout and then ran [`tma::fence_proxy_async_shared`]; nobody
/// writes the buffer until thread 0 waits for the group
/// ([`tma::wait_group_read`]) and a barrier tells the others.
#[inline(always)]
unsafe fn reduce_dq(wg: u32, t: u32, map_dq: u64, buffer: u32, row: u32) {
    sync_warpgroup(wg);
    if t == 0 {
        // SAFETY: the caller's contract; both boxes lie in the buffer
        // (1024-aligned, DQ_BOX_BYTES each).
        unsafe {
            bulk_reduce_add_2d(map_dq, buffer, (64 * wg) as i32, row as i32);
            bulk_reduce_add_2d(map_dq, buffer + DQ_BOX_BYTES, (64 * wg + 32) as i32, row as i32);
        }
        tma::commit_group();
    }
}

/// The register-A operand of k step `k` (columns 16k…16k+15) of a 64×64
/// f32 fragment, rounded to bf16 and packed (the wgmma module's layout).
#[inline(always)]
fn a_operand(x: &[f32; 32], k: usize) -> [u32; 4] {
    [
        pack_bf16x2(x[8 * k], x[8 * k + 1]),
        pack_bf16x2(x[8 * k + 2], x[8 * k + 3]),
        pack_bf16x2(x[8 * k + 4], x[8 * k + 5]),
        pack_bf16x2(x[8 * k + 6], x[8 * k + 7]),
    ]
}

/// D = rowsum(dO∘O) in f32, one warp per row (`rows` = batch·heads·seq
/// rows of `head_dim` elements). Launch with `PREP_ROWS`·32 threads per
/// block and ⌈rows / PREP_ROWS⌉ blocks.
#[kernel]
pub fn attention_bwd_prep(o: &[u32], d_o: &[u16], head_dim: u32, mut delta: DisjointSlice<f32>) {
    let lane = thread::threadIdx_x() % 32;
    let row = thread::blockIdx_x() * PREP_ROWS + thread::threadIdx_x() / 32;
    if row as usize >= delta.len() {
        return;
    }
    let words = head_dim / 2;
    let mut sum = 0.0f32;
    let mut w = lane;
    while w < words {
        let idx = (row * words + w) as usize;
        let pair = o[idx];
        let lo = f32::from_bits(pair << 16);
        let hi = f32::from_bits(pair & 0xffff_0000);
        sum += lo * f32::from_bits((d_o[2 * idx] as u32) << 16) + hi * f32::from_bits((d_o[2 * idx + 1] as u32) << 16);
        w += 32;
    }
    sum += warp::shfl_xor(warp::FULL_MASK, sum, 16);
    sum += warp::shfl_xor(warp::FULL_MASK, sum, 8);
    sum += warp::shfl_xor(warp::FULL_MASK, sum, 4);
    sum += warp::shfl_xor(warp::FULL_MASK, sum, 2);
    sum += warp::shfl_xor(warp::FULL_MASK, sum, 1);
    if lane == 0 {
        // SAFETY: row < delta.len(), checked above; one lane of one warp
        // per row writes it.
        unsafe { *delta.get_unchecked_mut(row as usize) = sum };
    }
}

/// dQ (bf16 pairs) = `scale` · the f32 accumulator `acc`, one thread per
/// word.
#[kernel]
pub fn attention_bwd_convert(acc: &[f32], scale: f32, mut dq: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = 2 * idx.get();
    // dQ may be longer than the accumulator's pairs (the launch covers those).
    if i + 1 < acc.len() {
        if let Some(w) = dq.get_mut(idx) {
            *w = pack_bf16x2(acc[i] * scale, acc[i + 1] * scale);
        }
    }
}

/// The softmax scale 1/√d.
#[inline(always)]
const fn softmax_scale(head_dim: u32) -> f32 {
    if head_dim == 64 {
        0.125
    } else {
        0.088_388_35
    }
}

/// Issues and commits Xᵀ = A·Bᵀ for the warpgroup's 64 rows of the key
/// tile at `a` (rows 64·wg… of a [`BWD_BN`]-row tile: K or V) and the
/// [`BWD_BM`]-row query tile at `b` (Q or dO), both 128-byte-swizzled boxes
/// of 64 columns; HD/16 k steps.
///
/// # Safety
/// Warpgroup-wide with the same addresses; the tiles are not rewritten and
/// `acc` not touched until a `wait_group` says the group is done.
#[inline(always)]
unsafe fn issue_transposed<const HD: u32>(acc: &mut [f32; 32], a: u32, b: u32) {
    wgmma::fence();
    unroll!(full, for kk in 0..HD / 16 {
        let da = wgmma::kmajor_b128(a, BWD_BN, kk);
        let db = wgmma::kmajor_b128(b, BWD_BM, kk);
        // SAFETY: the caller's contract; the first step ignores the old values.
        unsafe { wgmma::m64n64k16_f32_bf16(acc, da, db, kk > 0) };
    });
    wgmma::commit_group();
}

/// The register-A operands of all four k steps of a 64×64 f32 fragment
/// ([`a_operand`]).
#[inline(always)]
fn a_operands(x: &[f32; 32]) -> [[u32; 4]; 4] {
    [a_operand(x, 0), a_operand(x, 1), a_operand(x, 2), a_operand(x, 3)]
}

/// Issues and commits `acc` += Xᵀ·B for Xᵀ (64 keys × [`BWD_BM`] queries)
/// in registers (`a`: bf16, packed by [`a_operands`]) and the query tile B
/// at `b` (Q or dO: rows along the reduction, an MN-major B; its boxes of
/// 64 columns are [`BWD_BM`] rows apart).
///
/// # Safety
/// As [`issue_transposed`], for `acc`, the registers of `a` and the tile
/// at `b`.
#[inline(always)]
unsafe fn issue_registers_trans_b<const R: usize>(acc: &mut [f32; R], a: &[[u32; 4]; 4], b: u32) {
    wgmma::fence();
    unroll!(full, for k in 0..BWD_BM / 16 {
        let db = wgmma::mnmajor_b128(b, BWD_BM, k);
        // SAFETY: the caller's contract.
        unsafe { mma_pv_registers(acc, a[k as usize], db) };
    });
    wgmma::commit_group();
}

/// The main kernel's body for head dimension HD (R = HD/2 accumulators per
/// thread); dQ split between the warpgroups by columns (`DQ_COLUMNS`, head
/// dim 128 only) or by keys ([`DqSplit`]); the producer warpgroup keeps
/// `PRODUCER_REGS` registers per thread and the consumers get
/// `CONSUMER_REGS` (`setmaxnreg`). With `STAGED` the producer also copies
/// each query tile's log-sum-exp and D rows into the tile's stage, from
/// where the consumers read them ([`DqSplit::Staged`]); without it the
/// consumers load them from global memory. With `RED4` (`DQ_COLUMNS`
/// only) dQ is added four columns at a time ([`DqSplit::Red4`]). With
/// `TMA_DQ` (`DQ_COLUMNS` only) each warpgroup stores its dQ part to
/// shared memory and one thread adds it into the accumulator through
/// `map_dq` with a bulk tensor reduction, at the next tile's start behind
/// its Sᵀ and dPᵀ ([`DqSplit::TmaReduce`]), or with `TMA_EAGER` right after
/// the stores ([`DqSplit::TmaEager`]); the other kernels ignore `map_dq`.
/// See the module docs.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward<
    const HD: u32,
    const R: usize,
    const DQ_COLUMNS: bool,
    const PRODUCER_REGS: u32,
    const CONSUMER_REGS: u32,
    const STAGED: bool,
    const RED4: bool,
    const TMA_DQ: bool,
    const TMA_EAGER: bool,
    const PERSISTENT: bool,
>(
    map_q: u64,
    map_k: u64,
    map_v: u64,
    map_do: u64,
    map_dq: u64,
    shape: Shape,
    schedule: Schedule,
    lse: &[f32],
    delta: &[f32],
    dq_acc: &[AtomicF32],
    dk: &mut DisjointSlice<u32>,
    dv: &mut DisjointSlice<u32>,
) {
    let boxes = HD / BOX;
    let base = aligned_dynamic_shared();
    // One K or V tile: `boxes` boxes of BWD_BN rows; one Q or dO tile:
    // `boxes` boxes of BWD_BM rows.
    let kv_bytes = boxes * BWD_BN * ROW_BYTES;
    let qd_bytes = boxes * BWD_BM * ROW_BYTES;
    let k_tile = base;
    let v_tile = base + kv_bytes;
    let q_tile = |s: u32| base + 2 * kv_bytes + s * 2 * qd_bytes;
    let do_tile = |s: u32| q_tile(s) + qd_bytes;
    // Two dS buffers (by tile parity) of two warpgroup tiles each.
    let ds_tile = |buf: u32, wg: u32| q_tile(BWD_STAGES) + (2 * buf + wg) * DS_BYTES;
    // TMA_DQ: each warpgroup's f32 dQ part (two boxes of the accumulator's
    // map), 1024-aligned as the 128-byte swizzle needs; then the barriers.
    let dq_tile = |wg: u32| ds_tile(2, 0) + wg * DQ_TILE_BYTES;
    let bars = ds_tile(2, 0) + if TMA_DQ { 2 * DQ_TILE_BYTES } else { 0 };
    // Stage s's log-sum-exp (BWD_BM f32), then its D (STAGED only).
    let stats_tile = |s: u32| bars + STATS_OFFSET + s * STATS_BYTES;
    // SAFETY (all three): 8-byte aligned words after the tiles, inside the
    // launch's dynamic shared memory, used only as these barriers.
    let kv_full = unsafe { MBarrier::from_address(bars) };
    let full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + s)) };
    let empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + BWD_STAGES + s)) };
    // Persistent only: K and V released by every consumer thread, and the
    // work item whose K and V the producer loads (`NO_ITEM`: none left).
    let kv_empty = unsafe { MBarrier::from_address(bars + 8 * (1 + 2 * BWD_STAGES)) };
    let item_slot = bars + 8 * (2 + 2 * BWD_STAGES);
    let key_tiles = shape.seq / BWD_BN;
    // The (batch·head, key tile) of a work item: heads in groups of G, key
    // tiles along y ([`bwd_launch_config`]), key tile 0 first (causal, it
    // sees the most query tiles); the block's own, or item `v` of the
    // persistent schedule in the grid's dispatch order.
    let work = |v: u32| {
        if PERSISTENT {
            block_work(virtual_block(v, schedule.group, key_tiles), schedule.group, key_tiles, false)
        } else {
            block_work((thread::blockIdx_x(), thread::blockIdx_y(), thread::blockIdx_z()), thread::gridDim_x(), key_tiles, false)
        }
    };
    // The last group's blocks past the last head leave before anything
    // another thread waits for (the barriers' initialisation and
    // `sync_threads` below), all threads of the block alike.
    if !PERSISTENT && work(0).0 >= shape.batch_heads {
        return;
    }
    let tid = thread::threadIdx_x();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + barrier publish it.
        unsafe {
            kv_full.init(1);
            for s in 0..BWD_STAGES {
                full(s).init(1);
                empty(s).init(256);
            }
            if PERSISTENT {
                kv_empty.init(256);
            }
        }
        mbarrier::fence_init();
    }
    thread::sync_threads();

    let q_tiles = shape.seq / BWD_BM;
    // Causal: queries before an item's first key see none of its keys.
    let first_tile = |key0: u32| if shape.causal { key0 / BWD_BM } else { 0 };
    let warp_index = warp::shfl_idx(warp::FULL_MASK, tid / 32, 0);
    // The parity of the `n / STAGES`-th completion of a stage's barriers
    // (`n` counts the block's Q/dO tiles over all its items).
    let phase = |n: u32| (n / BWD_STAGES) & 1;

    if warp_index >= 8 {
        warpgroup::decrease_max_registers::<PRODUCER_REGS>();
        if warp_index == 8 && warp::elect_one(warp::FULL_MASK) {
            tma::prefetch_tensor_map(map_q);
            tma::prefetch_tensor_map(map_k);
            tma::prefetch_tensor_map(map_v);
            tma::prefetch_tensor_map(map_do);
            if TMA_DQ {
                tma::prefetch_tensor_map(map_dq);
            }
            let mut items = 0u32;
            let mut n = 0;
            loop {
                let (bh, kt) = if PERSISTENT {
                    // SAFETY: this lane alone hands out items, `items` so
                    // far, each followed by kv_full's arrival below; the
                    // counter is `Backward`'s own word (0 when the launch
                    // starts); kv_empty completes once every consumer thread
                    // is done with an item's K and V.
                    let item = unsafe { hand_out_item(schedule, items, kv_full, kv_empty, item_slot, |v| work(v).0 < shape.batch_heads) };
                    let Some(v) = item else { break };
                    work(v)
                } else {
                    if items > 0 {
                        break;
                    }
                    work(0)
                };
                let seq_row0 = bh * shape.seq;
                let key0 = kt * BWD_BN;
                kv_full.arrive_expect_tx(2 * kv_bytes);
                for c in 0..boxes {
                    // SAFETY: valid maps (host); the K and V tiles are
                    // 1024-aligned and free (the first item's, or released by
                    // kv_empty); `kv_full` expects every box's bytes.
                    unsafe {
                        tma::load_2d(k_tile + c * BWD_BN * ROW_BYTES, map_k, kv_full, (c * BOX) as i32, (seq_row0 + key0) as i32);
                        tma::load_2d(v_tile + c * BWD_BN * ROW_BYTES, map_v, kv_full, (c * BOX) as i32, (seq_row0 + key0) as i32);
                    }
                }
                let mut j = first_tile(key0);
                while j < q_tiles {
                    let s = n % BWD_STAGES;
                    let row = (seq_row0 + j * BWD_BM) as i32;
                    if n >= BWD_STAGES {
                        empty(s).wait(phase(n - BWD_STAGES));
                    }
                    full(s).arrive_expect_tx(2 * qd_bytes + if STAGED { STATS_BYTES } else { 0 });
                    for c in 0..boxes {
                        // SAFETY: valid maps; the stage is free (its empty
                        // barrier completed, or it was never used) and
                        // 1024-aligned; the full barrier expects the bytes.
                        unsafe {
                            tma::load_2d(q_tile(s) + c * BWD_BM * ROW_BYTES, map_q, full(s), (c * BOX) as i32, row);
                            tma::load_2d(do_tile(s) + c * BWD_BM * ROW_BYTES, map_do, full(s), (c * BOX) as i32, row);
                        }
                    }
                    if STAGED {
                        let first = row as usize;
                        // SAFETY: rows first…first+BWD_BM of lse and delta exist
                        // (both are batch·heads·seq long: host checks, and the
                        // kernel's own scratch); their byte offsets are
                        // multiples of 256 and the stats tiles 128-aligned; the
                        // stage is free as above and `full(s)` expects the bytes.
                        unsafe {
                            bulk_load(stats_tile(s), lse.as_ptr().add(first), BWD_BM * 4, full(s));
                            bulk_load(stats_tile(s) + BWD_BM * 4, delta.as_ptr().add(first), BWD_BM * 4, full(s));
                        }
                    }
                    n += 1;
                    j += 1;
                }
                items += 1;
            }
        }
        return;
    }

    // Consumer warpgroup `wg`: keys 64·wg… of the block's tile. This thread
    // holds fragment rows `r` and `r + 8` (keys) and columns c0 + 8i and
    // c0 + 8i + 1 (queries of the tile, or d for dQ/dK/dV).
    warpgroup::increase_max_registers::<CONSUMER_REGS>();
    let wg = warp_index / 4;
    let t = tid % 128;
    let lane = t % 32;
    let r = 16 * (t / 32) + lane / 4;
    let c0 = 2 * (lane % 4);
    let k_rows = k_tile + 64 * wg * ROW_BYTES;
    let v_rows = v_tile + 64 * wg * ROW_BYTES;
    let log2e = core::f32::consts::LOG2_E;
    let scale_log2 = softmax_scale(HD) * log2e;
    let mut acc_s = wgmma::zeroed::<32>();
    let mut acc_dp = wgmma::zeroed::<32>();
    let mut items = 0u32;
    let mut n = 0;
    loop {
        if !PERSISTENT && items > 0 {
            break;
        }
        kv_full.wait(items & 1);
        let (bh, kt) = if PERSISTENT {
            // SAFETY: kv_full completed (waited for just above) after the
            // producer wrote the slot; this thread releases the item later.
            let Some(v) = (unsafe { received_item(item_slot) }) else { break };
            work(v)
        } else {
            work(0)
        };
        let seq_row0 = bh * shape.seq;
        let key0 = kt * BWD_BN;
        let my_key = key0 + 64 * wg + r;
        let mut acc_dv = wgmma::zeroed::<R>();
        let mut acc_dk = wgmma::zeroed::<R>();
        let mut j = first_tile(key0);
        while j < q_tiles {
            let s = n % BWD_STAGES;
            let q0 = j * BWD_BM;
            // This thread's first column's row in lse and delta. D is read
            // where it is used (loaded up front it would cost registers the
            // hd-128 kernels do not have).
            let col = (seq_row0 + q0 + c0) as usize;
            // The log-sum-exp (log2 domain) of this thread's columns, loaded
            // before the products so that its latency hides behind them.
            let mut lse2 = [0.0f32; 16];
            // STAGED: read from the stage once it is full (below).
            if !STAGED {
                unroll!(full, for i in 0..8usize {
                    // SAFETY: col + 8i + 1 < batch·heads·seq, the length of lse
                    // (host checks).
                    unsafe {
                        lse2[2 * i] = *lse.get_unchecked(col + 8 * i) * log2e;
                        lse2[2 * i + 1] = *lse.get_unchecked(col + 8 * i + 1) * log2e;
                    }
                });
            }
            full(s).wait(phase(n));
            // SAFETY (every issue_* and wgmma below): the whole warpgroup runs
            // them with the same addresses; their operands are not rewritten and
            // their stage not released before the wait_group that follows.
            unsafe {
                issue_transposed::<HD>(&mut acc_s, k_rows, q_tile(s));
                issue_transposed::<HD>(&mut acc_dp, v_rows, do_tile(s));
            }
            if TMA_DQ && !TMA_EAGER && j > first_tile(key0) {
                // The last tile's dQ part, in this warpgroup's buffer since its
                // end, is added into the accumulator now, behind this tile's Sᵀ
                // and dPᵀ: the products start before the reduction is issued
                // (dQ's accumulators are dead already, so nothing more is
                // held across them).
                // SAFETY: the host passes the accumulator's map with TMA_DQ;
                // every thread stored and fenced its part at the last tile's
                // end; the buffer is rewritten only after thread 0's
                // wait_group_read and the consumers' barrier below.
                unsafe { reduce_dq(wg, t, map_dq, dq_tile(wg), seq_row0 + q0 - BWD_BM) };
            }
            // Sᵀ is done (groups complete in order); dPᵀ may still run.
            wgmma::wait_group::<1>();
            let mask = shape.causal && q0 < key0 + BWD_BN;
            let mut p = wgmma::zeroed::<32>();
            unroll!(full, for i in 0..8u32 {
                let q = q0 + 8 * i + c0;
                let i = i as usize;
                let (la, lb) = if STAGED {
                    // SAFETY: this thread's two columns of the stage's
                    // log-sum-exp, 8-byte aligned (c0 is even), complete since
                    // `full(s)` completed; rewritten only after this tile
                    // releases the stage.
                    let (a, b) = unsafe { load_shared_f32x2(stats_tile(s) + 4 * (c0 + 8 * i as u32)) };
                    (a * log2e, b * log2e)
                } else {
                    (lse2[2 * i], lse2[2 * i + 1])
                };
                // Sᵀ·scale − lse in one rounding (`fma`), as the forward.
                p[4 * i] = exp2(acc_s[4 * i].mul_add(scale_log2, -la));
                p[4 * i + 1] = exp2(acc_s[4 * i + 1].mul_add(scale_log2, -lb));
                p[4 * i + 2] = exp2(acc_s[4 * i + 2].mul_add(scale_log2, -la));
                p[4 * i + 3] = exp2(acc_s[4 * i + 3].mul_add(scale_log2, -lb));
                if mask {
                    if my_key > q {
                        p[4 * i] = 0.0;
                    }
                    if my_key > q + 1 {
                        p[4 * i + 1] = 0.0;
                    }
                    if my_key + 8 > q {
                        p[4 * i + 2] = 0.0;
                    }
                    if my_key + 8 > q + 1 {
                        p[4 * i + 3] = 0.0;
                    }
                }
            });
            unsafe { issue_registers_trans_b(&mut acc_dv, &a_operands(&p), do_tile(s)) };
            // dPᵀ is done; dV += Pᵀ·dO may still run.
            wgmma::wait_group::<1>();
            // The dS buffer of this tile's parity: the dQ product that last
            // read it (two tiles ago) is complete in every warp that ran it,
            // since each of them has since passed the barrier after the last
            // tile's dS stores (a warp's own wait_group covers only its part of
            // a wgmma; the barrier covers the others').
            let ds_base = ds_tile(n % 2, wg);
            let mut ds = wgmma::zeroed::<32>();
            unroll!(full, for i in 0..8u32 {
                let c = 8 * i + c0;
                let (da, db) = if STAGED {
                    // SAFETY: as for the log-sum-exp above, the stage's D.
                    unsafe { load_shared_f32x2(stats_tile(s) + BWD_BM * 4 + 4 * c) }
                } else {
                    // SAFETY: as for lse.
                    unsafe { (*delta.get_unchecked(col + 8 * i as usize), *delta.get_unchecked(col + 8 * i as usize + 1)) }
                };
                let i = i as usize;
                ds[4 * i] = p[4 * i] * (acc_dp[4 * i] - da);
                ds[4 * i + 1] = p[4 * i + 1] * (acc_dp[4 * i + 1] - db);
                ds[4 * i + 2] = p[4 * i + 2] * (acc_dp[4 * i + 2] - da);
                ds[4 * i + 3] = p[4 * i + 3] * (acc_dp[4 * i + 3] - db);
            });
            // dSᵀ in bf16: the A operand of dK += dSᵀ·Q, and, transposed by
            // `stmatrix` into the warpgroup's dS tile (queries × keys), dQ's.
            let ds_a = a_operands(&ds);
            let ds_rows = ds_base + ds_row_offset(t / 32, lane);
            unroll!(full, for k in 0..4u32 {
                // SAFETY: the whole warp stores (every lane runs the loop);
                // the rows lie in this warpgroup's dS tile, and no one reads
                // it: every warp's part of the last dQ product that read the
                // buffer is complete (see `ds_base`).
                unsafe { store_matrices_x4_trans(ds_rows + 2048 * k, ds_a[k as usize]) };
            });
            unsafe { issue_registers_trans_b(&mut acc_dk, &ds_a, q_tile(s)) };
            // The dS stores (generic proxy) visible to wgmma (async proxy), from
            // every warp of the warpgroup (of both at head_dim 128).
            tma::fence_proxy_async_shared();
            if TMA_DQ && t == 0 {
                // The reduction of the last tile's dQ part has read its buffer
                // (the barrier below tells the warpgroup, which then rewrites it).
                tma::wait_group_read::<0>();
            }
            if DQ_COLUMNS {
                sync_consumers();
            } else {
                sync_warpgroup(wg);
            }
            // dQ is issued behind dV and dK without waiting for them; once all
            // three are done the stage's Q and dO are no longer read.
            let acc = dq_acc.as_ptr();
            if DQ_COLUMNS {
                // dQ's columns 64·wg… over all BWD_BN keys: A is the block's
                // whole dS tile (the two warpgroups' tiles side by side are its
                // two boxes of 64 keys), B box wg of K (MN-major, BWD_BN rows
                // along the reduction).
                let mut acc_dq = wgmma::zeroed::<32>();
                wgmma::fence();
                unroll!(full, for k in 0..BWD_BN / 16 {
                    let da = wgmma::kmajor_b128(ds_tile(n % 2, 0), 64, k);
                    let db = wgmma::mnmajor_b128(k_tile + wg * BWD_BN * ROW_BYTES, BWD_BN, k);
                    unsafe { wgmma::m64n64k16_f32_bf16_trans_b(&mut acc_dq, da, db, true) };
                });
                wgmma::commit_group();
                wgmma::wait_group::<0>();
                empty(s).arrive();
                // dQ's rows q0 + r and q0 + r + 8 of this (batch, head).
                let top = ((seq_row0 + q0 + r) * HD + 64 * wg + c0) as usize;
                let bottom = top + 8 * HD as usize;
                if TMA_DQ {
                    // Into the warpgroup's buffer in the map's layout: box
                    // c / 32 of columns, row-major rows of 128 bytes whose
                    // 16-byte chunks are swizzled by the row (each of a warp's
                    // stores then touches every bank twice, the fewest for its
                    // 256 bytes). Added by one bulk group at the next tile's
                    // start (or after the loop), or TMA_EAGER right below.
                    // The pairs' places are one base register XORed and offset
                    // by constants ([`dq_thread_base`]); the buffer is
                    // 1024-aligned, so adding it changes none of the bits the
                    // XOR flips.
                    let dq_base = dq_tile(wg) + dq_thread_base(r, c0);
                    // The lanes whose pairs go in the other order
                    // ([`dq_thread_base`]): the pairs are picked by selects,
                    // as registers cannot be indexed by a lane's value.
                    let swapped = dq_pair_of(0, c0) != 0;
                    unroll!(full, for k in 0..8u32 {
                        let (flip, offset) = dq_pair_place(k);
                        let (mine, other) = (4 * k as usize, 4 * dq_pair_of(k, 4) as usize);
                        let pair = |e: usize| if swapped { acc_dq[other + e] } else { acc_dq[mine + e] };
                        // SAFETY: inside this warpgroup's buffer (rows < 64,
                        // columns < 64), 8-byte aligned (c0 even); each pair
                        // belongs to this thread alone; the last reduction
                        // that read the buffer is done (its issuing thread
                        // waited before the barrier above).
                        unsafe {
                            store_shared_f32x2_at(dq_base, flip, offset, pair(0), pair(1));
                            store_shared_f32x2_at(dq_base, flip, offset + 8 * 128, pair(2), pair(3));
                        }
                    });
                    // This thread's stores visible to the bulk reduction
                    // (async proxy) that one thread issues after a barrier.
                    tma::fence_proxy_async_shared();
                    if TMA_EAGER {
                        // SAFETY: as at the loop's start (every thread has
                        // stored and fenced its part just above).
                        unsafe { reduce_dq(wg, t, map_dq, dq_tile(wg), seq_row0 + q0) };
                    }
                } else if RED4 {
                    // Lanes 2m and 2m+1 hold columns c0, c0+1 and c0+2, c0+3
                    // (c0 of the even lane a multiple of 4) of rows r and r+8:
                    // the even lane takes the odd one's row-r pair and adds row
                    // r's four columns, the odd lane the even one's row-(r+8)
                    // pair and adds row r+8's.
                    // Chosen by bit masks rather than branches, so that the
                    // shuffles stay in code every lane runs.
                    let odd = lane % 2;
                    let mask = 0u32.wrapping_sub(odd);
                    let pick = |when_odd: f32, when_even: f32| f32::from_bits((when_odd.to_bits() & mask) | (when_even.to_bits() & !mask));
                    let base = top + odd as usize * (8 * HD as usize - 2);
                    unroll!(full, for i in 0..8usize {
                        let (t0, t1, b0, b1) = (acc_dq[4 * i], acc_dq[4 * i + 1], acc_dq[4 * i + 2], acc_dq[4 * i + 3]);
                        let got0 = warp::shfl_xor(warp::FULL_MASK, pick(t0, b0), 1);
                        let got1 = warp::shfl_xor(warp::FULL_MASK, pick(t1, b1), 1);
                        let at = base + 8 * i;
                        let v = [pick(got0, t0), pick(got1, t1), pick(b0, got0), pick(b1, got1)];
                        // SAFETY: inside the accumulator (batch·heads·seq·HD
                        // floats, host checks); 16-byte aligned: the index is a
                        // multiple of 4 (HD, 64, 8i and the even lane's c0 are;
                        // the odd lane's c0 - 2 is the even lane's c0); every
                        // access to it in this kernel is an atomic add.
                        unsafe { red_add_quad(acc.add(at), v) };
                    });
                } else {
                    unroll!(full, for i in 0..8usize {
                        // SAFETY: inside the accumulator (batch·heads·seq·HD
                        // floats, host checks), 8-byte aligned (even index);
                        // every access to it in this kernel is an atomic add.
                        unsafe {
                            red_add_pair(acc.add(top + 8 * i), acc_dq[4 * i], acc_dq[4 * i + 1]);
                            red_add_pair(acc.add(bottom + 8 * i), acc_dq[4 * i + 2], acc_dq[4 * i + 3]);
                        }
                    });
                }
            } else {
                // dQ's part from this warpgroup's 64 keys, every column: A its
                // dS tile, B its 64 rows of K (MN-major).
                let mut acc_dq = wgmma::zeroed::<R>();
                wgmma::fence();
                unroll!(full, for k in 0..4u32 {
                    let da = wgmma::kmajor_b128(ds_base, 64, k);
                    let db = wgmma::mnmajor_b128(k_rows, BWD_BN, k);
                    unsafe { mma_pv(&mut acc_dq, da, db) };
                });
                wgmma::commit_group();
                wgmma::wait_group::<0>();
                empty(s).arrive();
                let top = ((seq_row0 + q0 + r) * HD + c0) as usize;
                let bottom = top + 8 * HD as usize;
                unroll!(full, for i in 0..R / 4 {
                    // SAFETY: as above.
                    unsafe {
                        red_add_pair(acc.add(top + 8 * i), acc_dq[4 * i], acc_dq[4 * i + 1]);
                        red_add_pair(acc.add(bottom + 8 * i), acc_dq[4 * i + 2], acc_dq[4 * i + 3]);
                    }
                });
            }
            n += 1;
            j += 1;
        }
        if TMA_DQ && j > first_tile(key0) {
            // The last tile's dQ part (TMA_EAGER: issued already); the
            // reductions must have read the buffer before the block's shared
            // memory goes.
            if !TMA_EAGER {
                // SAFETY: as in the loop; the buffer is not written again.
                unsafe { reduce_dq(wg, t, map_dq, dq_tile(wg), seq_row0 + (j - 1) * BWD_BM) };
            }
            if t == 0 {
                tma::wait_group::<0>();
            }
        }

        if PERSISTENT {
            // K and V are read no more (every product of the item is done).
            kv_empty.arrive();
        }

        // Epilogue: dK·scale and dV, bf16, rows `r` and `r + 8` of the
        // warpgroup's keys.
        let scale = softmax_scale(HD);
        let row = seq_row0 + my_key;
        unroll!(full, for i in 0..R / 4 {
            let top = ((row * HD + c0 + 8 * i as u32) / 2) as usize;
            let bottom = (((row + 8) * HD + c0 + 8 * i as u32) / 2) as usize;
            if bottom < dk.len() && bottom < dv.len() {
                // SAFETY: both indices are below both lengths; the (row,
                // column pair)s of a fragment belong to this thread alone and
                // the blocks' and warpgroups' keys are disjoint.
                unsafe {
                    *dk.get_unchecked_mut(top) = pack_bf16x2(acc_dk[4 * i] * scale, acc_dk[4 * i + 1] * scale);
                    *dk.get_unchecked_mut(bottom) = pack_bf16x2(acc_dk[4 * i + 2] * scale, acc_dk[4 * i + 3] * scale);
                    *dv.get_unchecked_mut(top) = pack_bf16x2(acc_dv[4 * i], acc_dv[4 * i + 1]);
                    *dv.get_unchecked_mut(bottom) = pack_bf16x2(acc_dv[4 * i + 2], acc_dv[4 * i + 3]);
                }
            }
        });
        items += 1;
    }
}

/// Defines one backward kernel: a `#[kernel]` wrapper of [`backward`]
/// with its const parameters (in `backward`'s order) and, with `map_dq`,
/// the tensor map of the dQ accumulator ([`DqSplit::TmaReduce`]); the
/// kernels without it pass 0. One definition keeps every variant's
/// parameter list and launch bounds the same, so that
/// [`Backward::launch`] passes the same arguments to each.
macro_rules! bwd_kernel {
    ($(#[$doc:meta])* $name:ident <$($param:tt),*>) => {
        $(#[$doc])*
        #[kernel(launch_bounds(384, 1))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            map_q: u64,
            map_k: u64,
            map_v: u64,
            map_do: u64,
            shape: Shape,
            schedule: Schedule,
            lse: &[f32],
            delta: &[f32],
            dq_acc: &[AtomicF32],
            mut dk: DisjointSlice<u32>,
            mut dv: DisjointSlice<u32>,
        ) {
            backward::<$($param),*>(map_q, map_k, map_v, map_do, 0, shape, schedule, lse, delta, dq_acc, &mut dk, &mut dv);
        }
    };
    ($(#[$doc:meta])* $name:ident <$($param:tt),*> map_dq) => {
        $(#[$doc])*
        #[kernel(launch_bounds(384, 1))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            map_q: u64,
            map_k: u64,
            map_v: u64,
            map_do: u64,
            map_dq: u64,
            shape: Shape,
            schedule: Schedule,
            lse: &[f32],
            delta: &[f32],
            dq_acc: &[AtomicF32],
            mut dk: DisjointSlice<u32>,
            mut dv: DisjointSlice<u32>,
        ) {
            backward::<$($param),*>(map_q, map_k, map_v, map_do, map_dq, shape, schedule, lse, delta, dq_acc, &mut dk, &mut dv);
        }
    };
}

bwd_kernel! {
    /// Attention backward for head_dim 64 (module docs). Launch with
    /// [`BWD_THREADS`] threads, grid (G, seq/[`BWD_BN`], ⌈batch·heads/G⌉)
    /// for a group of G heads ([`bwd_launch_config`]),
    /// [`bwd_shared_bytes`]`(64)` of dynamic shared memory; the maps of K and V
    /// have boxes of 64×[`BWD_BN`] (d × rows), those of Q and dO 64×[`BWD_BM`],
    /// all with the 128-byte swizzle. `lse` and `delta` are per row (f32),
    /// `dq_acc` the zeroed f32 dQ accumulator.
    attention_bwd_d64 <64, 32, false, PRODUCER_REGISTERS, CONSUMER_REGISTERS, false, false, false, false, false>
}

bwd_kernel! {
    /// Attention backward for head_dim 128; as [`attention_bwd_d64`] with
    /// [`bwd_shared_bytes`]`(128)`.
    attention_bwd_d128 <128, 64, true, PRODUCER_REGISTERS, CONSUMER_REGISTERS, false, false, false, false, false>
}

bwd_kernel! {
    /// [`attention_bwd_d128`] with dQ split between the warpgroups by keys
    /// ([`DqSplit::Keys`]): no barrier between the warpgroups, twice the atomic
    /// adds.
    attention_bwd_keys_d128 <128, 64, false, PRODUCER_REGISTERS, CONSUMER_REGISTERS, false, false, false, false, false>
}

bwd_kernel! {
    /// [`attention_bwd_d128`] with the registers moved from the producer
    /// warpgroup to the consumers ([`DqSplit::ColumnsWide`]): the same code
    /// and launch, `setmaxnreg` to 24 registers for the producer and 240 for
    /// the consumers.
    attention_bwd_wide_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, false, false, false, false, false>
}

bwd_kernel! {
    /// [`attention_bwd_wide_d128`] with each query tile's log-sum-exp and D
    /// copied into its stage by the producer ([`DqSplit::Staged`]).
    attention_bwd_staged_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, true, false, false, false, false>
}

bwd_kernel! {
    /// [`attention_bwd_staged_d128`] with dQ added four columns at a time
    /// ([`DqSplit::Red4`]).
    attention_bwd_red4_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, true, true, false, false, false>
}

bwd_kernel! {
    /// [`attention_bwd_staged_d128`] with dQ added by bulk tensor reductions
    /// ([`DqSplit::TmaReduce`]): `map_dq` is the tensor map of `dq_acc` (f32,
    /// `[batch·heads·seq][128]`, boxes of 32 columns × [`BWD_BM`] rows, the
    /// 128-byte swizzle); [`bwd_shared_bytes_for`]`(128, DqSplit::TmaReduce)`
    /// of dynamic shared memory.
    attention_bwd_tma_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, true, false, true, false, false> map_dq
}

bwd_kernel! {
    /// [`attention_bwd_tma_d128`] with each tile's dQ reductions issued right
    /// after its stores rather than at the next tile's start
    /// ([`DqSplit::TmaEager`]); the same parameters and shared memory.
    attention_bwd_tmaeager_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, true, false, true, true, false> map_dq
}

bwd_kernel! {
    /// [`attention_bwd_tma_d128`], persistent ([`DqSplit::TmaPersistent`]):
    /// launch one block per multiprocessor with the [`Schedule`] of
    /// [`Backward::launch`]; the same shared memory.
    attention_bwd_tmap_d128 <128, 64, true, WIDE_PRODUCER_REGISTERS, WIDE_CONSUMER_REGISTERS, true, false, true, false, true> map_dq
}

// ---------------------------------------------------------------------------
// Host side.

/// How the main kernel's two consumer warpgroups share dQ = dS·K of a query
/// tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DqSplit {
    /// Each computes 64 of dQ's columns over the block's 128 keys, after a
    /// barrier of both warpgroups (their dS tiles are one operand): one
    /// atomic add per dQ entry and block.
    Columns,
    /// Each computes every column over its own 64 keys: no barrier between
    /// the warpgroups, two atomic adds per dQ entry and block. The only
    /// split at head_dim 64 (64 columns split in two would need descriptors
    /// that start inside a swizzle atom).
    Keys,
    /// [`DqSplit::Columns`] with 240 registers per consumer thread and 24
    /// for the producer instead of 232 and 40 (head_dim 128 only). At 232
    /// ptxas cannot keep the accumulators of the wgmma groups in flight
    /// (dV, dK, Sᵀ, dPᵀ, dQ) in registers and serialises every wgmma of the
    /// kernel (its info message C7512: each is issued after a wait for the
    /// one before); at 240 the groups overlap as the code asks.
    ColumnsWide,
    /// [`DqSplit::ColumnsWide`] with each query tile's log-sum-exp and D
    /// (64 f32 each) copied by the producer into the tile's stage with the
    /// bulk-copy engine, counted in the stage's full barrier, and read by
    /// the consumers from shared memory where they are used (head_dim 128
    /// only). The consumers then hold no registers for the log-sum-exp
    /// across the Sᵀ and dPᵀ products and do not wait for D's global loads
    /// between dPᵀ and dS.
    Staged,
    /// [`DqSplit::Staged`] with dQ added into global memory four columns
    /// at a time (`red.global.add.v4.f32`, after one exchange of a pair
    /// between neighbouring lanes) instead of two: half the reductions
    /// (head_dim 128 only).
    Red4,
    /// [`DqSplit::Staged`] with each warpgroup's dQ part stored (f32) to a
    /// 16 KiB buffer in shared memory and added into the accumulator by one
    /// thread with two bulk tensor reductions (`cp.reduce.async.bulk.tensor`,
    /// a tensor map over the accumulator) instead of 32 vector atomics a
    /// thread. dQ's accumulators are free once stored, and the reduction is
    /// issued at the next tile's start, behind its Sᵀ and dPᵀ products
    /// (head_dim 128 only; the most shared memory of the kernels,
    /// [`bwd_shared_bytes_for`]). The default at head_dim 128: the fastest
    /// of the kernels on the H100 and the H200 (benches/README.md).
    TmaReduce,
    /// [`DqSplit::TmaReduce`] with each tile's reductions issued right
    /// after its dQ stores (a barrier of the warpgroup between), not behind
    /// the next tile's Sᵀ and dPᵀ: what the deferral is worth (head_dim 128
    /// only).
    TmaEager,
    /// [`DqSplit::TmaReduce`] in persistent blocks: one per multiprocessor,
    /// each taking work items (a key tile of a head) from a counter in
    /// device memory until none is left, loading the next item's K and V
    /// once both consumer warpgroups are done with the last one's, as the
    /// persistent forward does ([`crate::Tile::persistent`]; head_dim 128
    /// only). A backward block's loop is long enough that the pipeline's
    /// start and drain matter less than in the forward, and the state kept
    /// across items costs a register spill in the loop: 1–3 % slower than
    /// [`DqSplit::TmaReduce`] on the H100 (benches/README.md).
    TmaPersistent,
}

/// The environment variable with which the example's and the benchmarks'
/// timing runs pick the backward kernels ([`DqSplit::select`]), e.g.
/// `OXIDE_ATTN_BWD=all` or `OXIDE_ATTN_BWD=columns,wide`.
pub const BWD_ENV: &str = "OXIDE_ATTN_BWD";

impl DqSplit {
    /// The splits that `head_dim` has kernels for, the default first.
    pub fn available(head_dim: u32) -> &'static [DqSplit] {
        if head_dim == 64 {
            &[DqSplit::Keys]
        } else {
            &[DqSplit::TmaReduce, DqSplit::TmaPersistent, DqSplit::Staged, DqSplit::Columns, DqSplit::Keys, DqSplit::ColumnsWide, DqSplit::Red4, DqSplit::TmaEager]
        }
    }

    /// The split's name, as [`DqSplit::parse`] reads it: `columns`, `keys`
    /// `wide`, `staged`, `red4`, `tma`, `tmaeager` or `tmap`.
    pub fn name(self) -> &'static str {
        match self {
            DqSplit::Columns => "columns",
            DqSplit::Keys => "keys",
            DqSplit::ColumnsWide => "wide",
            DqSplit::Staged => "staged",
            DqSplit::Red4 => "red4",
            DqSplit::TmaReduce => "tma",
            DqSplit::TmaEager => "tmaeager",
            DqSplit::TmaPersistent => "tmap",
        }
    }

    /// Reads a split's name ([`DqSplit::name`]); None for anything else.
    pub fn parse(name: &str) -> Option<DqSplit> {
        [DqSplit::Columns, DqSplit::Keys, DqSplit::ColumnsWide, DqSplit::Staged, DqSplit::Red4, DqSplit::TmaReduce, DqSplit::TmaEager, DqSplit::TmaPersistent]
            .into_iter().find(|s| s.name() == name.trim())
    }

    /// The splits that `spec` names for `head_dim`: `all` (every available
    /// one), or names separated by commas, those without a kernel at this
    /// head_dim skipped; the default (the first available) when `spec` is
    /// None, empty or names none of them.
    pub fn select(spec: Option<&str>, head_dim: u32) -> Vec<DqSplit> {
        crate::select_named(spec, DqSplit::available(head_dim), DqSplit::parse)
    }

    /// Whether the kernel adds dQ by bulk tensor reductions (it takes the
    /// accumulator's tensor map and the shared memory for its buffers).
    pub const fn reduces_in_bulk(self) -> bool {
        matches!(self, DqSplit::TmaReduce | DqSplit::TmaEager | DqSplit::TmaPersistent)
    }

    /// [`DqSplit::select`] of the environment variable [`BWD_ENV`].
    pub fn from_env(head_dim: u32) -> Vec<DqSplit> {
        DqSplit::select(std::env::var(BWD_ENV).ok().as_deref(), head_dim)
    }
}

/// Dynamic shared memory of the main kernel for `head_dim`: the K and V
/// tiles, [`BWD_STAGES`] Q and dO tiles, two buffers of two dS tiles, the
/// barriers, each stage's log-sum-exp and D rows (used by
/// [`DqSplit::Staged`] only), 1024 bytes of alignment slack.
pub const fn bwd_shared_bytes(head_dim: u32) -> u32 {
    let boxes = head_dim / BOX;
    2 * boxes * BWD_BN * ROW_BYTES + BWD_STAGES * 2 * boxes * BWD_BM * ROW_BYTES + 4 * DS_BYTES + STATS_OFFSET + BWD_STAGES * STATS_BYTES + 1024
}

/// Dynamic shared memory of the main kernel for `head_dim` and `split`:
/// [`bwd_shared_bytes`], and for [`DqSplit::TmaReduce`] and
/// [`DqSplit::TmaEager`] the two
/// warpgroups' f32 dQ buffers (16 KiB each, before the barriers). The
/// other kernels keep the smaller size (and so more of the L1 cache).
pub const fn bwd_shared_bytes_for(head_dim: u32, split: DqSplit) -> u32 {
    bwd_shared_bytes(head_dim) + if split.reduces_in_bulk() { 2 * DQ_TILE_BYTES } else { 0 }
}

/// The main kernel's function name for `head_dim` and `split` (one of
/// [`DqSplit::available`]`(head_dim)`).
pub fn bwd_kernel_name(head_dim: u32, split: DqSplit) -> &'static str {
    match (head_dim, split) {
        (64, _) => "attention_bwd_d64",
        (_, DqSplit::Columns) => "attention_bwd_d128",
        (_, DqSplit::Keys) => "attention_bwd_keys_d128",
        (_, DqSplit::ColumnsWide) => "attention_bwd_wide_d128",
        (_, DqSplit::Staged) => "attention_bwd_staged_d128",
        (_, DqSplit::Red4) => "attention_bwd_red4_d128",
        (_, DqSplit::TmaReduce) => "attention_bwd_tma_d128",
        (_, DqSplit::TmaEager) => "attention_bwd_tmaeager_d128",
        (_, DqSplit::TmaPersistent) => "attention_bwd_tmap_d128",
    }
}

/// The main kernel's launch shape for `shape` (which [`check_shape`]
/// accepted) and `split`, with the (batch, head)s in groups of `group`
/// (clamped to 1..=batch·heads; [`Group`]): grid (G, key tiles,
/// ⌈batch·heads/G⌉), read by the kernels as head z·G + x and key tile y,
/// so that the hardware (x fastest) runs key tile 0 of every head of a
/// group, then key tile 1, and so on; G = 1 is one head after the other.
pub fn bwd_launch_config(shape: Shape, split: DqSplit, group: u32) -> LaunchConfig {
    let g = group.clamp(1, shape.batch_heads.max(1));
    LaunchConfig {
        grid_dim: (g, shape.seq / BWD_BN, shape.batch_heads.div_ceil(g)),
        block_dim: (BWD_THREADS, 1, 1),
        shared_mem_bytes: bwd_shared_bytes_for(shape.head_dim, split),
    }
}

/// Heads per group of the backward's causal launches by default.
///
/// Measured, not modelled: on the H200, sweeping G over 1…32 (twice, at
/// seq 2048, 4096 and 8192, head_dim 128) put 8 within 1 % of the best G
/// at every shape, where the forward's L2 model (`group_fitting` with a
/// head's Q, dO, dQ accumulator, log-sum-exp and D) chose 13, 7 and 3 heads
/// and was the slowest choice but G = 1 at 4096 and 8192: a group size
/// that leaves a ragged last group (64 heads in groups of 7) costs more
/// than the L2 it saves. benches/README.md has the sweep.
pub const BWD_CAUSAL_GROUP: u32 = 8;

/// The backward's default head group for `shape`: [`BWD_CAUSAL_GROUP`]
/// heads (at most batch·heads) for causal, 1 for non-causal (uniform work;
/// the concurrent blocks of one head share its Q and dO best).
pub fn bwd_default_group(shape: Shape) -> u32 {
    if shape.causal { BWD_CAUSAL_GROUP.min(shape.batch_heads.max(1)) } else { 1 }
}

/// A tensor map of a `[rows][head_dim]` bf16 tensor with boxes of 64
/// columns × `box_rows` rows and the 128-byte swizzle, uploaded.
fn upload_map(stream: &CudaStream, tensor: &DeviceBuffer<u16>, shape: Shape, box_rows: u32) -> Result<DeviceBuffer<TensorMap>, Error> {
    let map = TensorMap::matrix_b128(TensorDataType::BF16, tensor.device_ptr(), shape.rows() as u64, shape.head_dim as u64, box_rows)
        .encode()?;
    Ok(map.upload(stream)?)
}

/// The tensor map of the f32 dQ accumulator (`[rows][head_dim]`) that
/// [`attention_bwd_tma_d128`] and [`attention_bwd_tmaeager_d128`] reduce
/// into: boxes of 32 columns (128 bytes)
/// × [`BWD_BM`] rows with the 128-byte swizzle, uploaded.
fn upload_accumulator_map(stream: &CudaStream, acc: &DeviceBuffer<f32>, shape: Shape) -> Result<DeviceBuffer<TensorMap>, Error> {
    let map = TensorMap::matrix_b128(TensorDataType::F32, acc.device_ptr(), shape.rows() as u64, shape.head_dim as u64, BWD_BM).encode()?;
    Ok(map.upload(stream)?)
}

/// One backward problem set up for repeated launches: the shape checked,
/// the tensor maps of Q, K, V and dO uploaded, the scratch buffers (D and
/// the f32 dQ accumulator) allocated, the main kernel's shared memory limit
/// raised, the head group chosen ([`bwd_default_group`] unless
/// [`Backward::set_group`] says otherwise). It borrows Q, K, V and
/// dO (the maps hold their addresses).
pub struct Backward<'a> {
    shape: Shape,
    split: DqSplit,
    group: u32,
    maps: [DeviceBuffer<TensorMap>; 4],
    /// The tensor map of `dq_acc` (the splits that
    /// [`DqSplit::reduces_in_bulk`] only).
    dq_map: Option<DeviceBuffer<TensorMap>>,
    d_o: &'a DeviceBuffer<u16>,
    delta: DeviceBuffer<f32>,
    dq_acc: DeviceBuffer<f32>,
    /// Q, K and V, which the main kernel reads through the maps (with dO).
    inputs: [&'a DeviceBuffer<u16>; 3],
    /// The persistent kernel's work counter; None for the others.
    work: Option<WorkCounter>,
}

impl<'a> Backward<'a> {
    /// Prepares the backward pass for `q`, `k`, `v` and `d_o` (bf16 bits,
    /// `[batch·heads][seq][head_dim]` row-major) with the default split of
    /// dQ (the first of [`DqSplit::available`]). Fails on a shape the
    /// kernels do not support ([`check_shape`]), on buffers shorter than
    /// the shape says, and on driver errors.
    pub fn new(
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        d_o: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Backward<'a>, Error> {
        let split = DqSplit::available(shape.head_dim)[0];
        Self::with_split(split, module, stream, q, k, v, d_o, shape)
    }

    /// As [`Backward::new`], with dQ split by `split`; fails if the head
    /// dimension has no kernel for it ([`DqSplit::available`]).
    #[allow(clippy::too_many_arguments)]
    pub fn with_split(
        split: DqSplit,
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        d_o: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Backward<'a>, Error> {
        check_shape(shape)?;
        if !DqSplit::available(shape.head_dim).contains(&split) {
            return Err(format!("head_dim {} has no kernel with dQ split by {split:?}", shape.head_dim).into());
        }
        let n = shape.elements();
        for (name, t) in [("Q", q), ("K", k), ("V", v), ("dO", d_o)] {
            if t.len() < n {
                return Err(format!("{name} needs {n} elements for {shape:?}; it has {}", t.len()).into());
            }
        }
        let maps = [
            upload_map(stream, q, shape, BWD_BM)?,
            upload_map(stream, k, shape, BWD_BN)?,
            upload_map(stream, v, shape, BWD_BN)?,
            upload_map(stream, d_o, shape, BWD_BM)?,
        ];
        kernel_function(module, bwd_kernel_name(shape.head_dim, split))?
            .set_max_dynamic_shared_memory(bwd_shared_bytes_for(shape.head_dim, split))?;
        let dq_acc = DeviceBuffer::zeroed(stream, n)?;
        // The map holds the accumulator's address: the buffer lives as long
        // as the map and is never reallocated.
        let dq_map = if split.reduces_in_bulk() { Some(upload_accumulator_map(stream, &dq_acc, shape)?) } else { None };
        let delta = DeviceBuffer::zeroed(stream, shape.rows())?;
        let group = bwd_default_group(shape);
        let work = if split == DqSplit::TmaPersistent { Some(WorkCounter::new(stream)?) } else { None };
        Ok(Backward { shape, split, group, maps, dq_map, d_o, delta, dq_acc, inputs: [q, k, v], work })
    }

    /// Launches the main kernel from now on with the head group `group`
    /// ([`Group::heads`]: [`Group::Auto`] is [`bwd_default_group`] for this
    /// shape).
    pub fn set_group(&mut self, group: Group) {
        self.group = group.heads(self.shape, bwd_default_group(self.shape));
    }

    /// The number of heads per group the main kernel's launches interleave
    /// ([`bwd_launch_config`]).
    pub fn group(&self) -> u32 {
        self.group
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The split of dQ between the warpgroups.
    pub fn split(&self) -> DqSplit {
        self.split
    }

    /// Launches the backward pass on `stream` (asynchronously): from the
    /// forward's output `o` (elements/2 words) and log-sum-exp `lse` (one
    /// f32 per row), writes `dq`, `dk`, `dv` (elements/2 words each, bf16
    /// pairs). `module` must be the one passed to [`Backward::new`].
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &mut self,
        module: &KernelModule,
        stream: &CudaStream,
        o: &DeviceBuffer<u32>,
        lse: &DeviceBuffer<f32>,
        dq: &mut DeviceBuffer<u32>,
        dk: &mut DeviceBuffer<u32>,
        dv: &mut DeviceBuffer<u32>,
    ) -> Result<(), Error> {
        let shape = self.shape;
        let (words, rows) = (shape.elements() / 2, shape.rows());
        if o.len() < words || lse.len() < rows || dq.len() < words || dk.len() < words || dv.len() < words {
            return Err(format!(
                "O, dQ, dK, dV need {words} words and LSE {rows} floats for {shape:?}; they have {}, {}, {}, {} and {}",
                o.len(),
                dq.len(),
                dk.len(),
                dv.len(),
                lse.len()
            )
            .into());
        }
        let d_o = self.d_o;
        let prep =
            LaunchConfig { grid_dim: (rows.div_ceil(PREP_ROWS as usize) as u32, 1, 1), block_dim: (32 * PREP_ROWS, 1, 1), shared_mem_bytes: 0 };
        cuda_launch! { kernel: attention_bwd_prep, stream: stream, module: module, config: prep,
        args: [slice(*o), slice(*d_o), shape.head_dim, slice_mut(self.delta)] }?;
        self.dq_acc.memset(stream, 0)?;
        order_tma_reads(stream, &self.maps, &[self.inputs[0], self.inputs[1], self.inputs[2], d_o])?;
        if let Some(map) = &self.dq_map {
            // Its tensor, the accumulator, is ordered as a write by the
            // typed launch (`acc`).
            map.order_read(stream)?;
        }
        let (pq, pk, pv, pd) = (self.maps[0].device_ptr(), self.maps[1].device_ptr(), self.maps[2].device_ptr(), self.maps[3].device_ptr());
        let mut config = bwd_launch_config(shape, self.split, self.group);
        // The counter's guard is held until the kernel is queued.
        let (schedule, counter) = schedule_launch(self.work.as_ref(), &mut config, stream)?;
        let pq_acc = self.dq_map.as_ref().map_or(0, |m| m.device_ptr());
        let acc = self.dq_acc.as_atomic();
        // Every backward kernel takes the arguments `bwd_kernel!` gives it;
        // those of the bulk reductions take the dQ accumulator's map too.
        macro_rules! launch {
            ($kernel:ident $(, $map_dq:expr)?) => {
                cuda_launch! { kernel: $kernel, stream: stream, module: module, config: config,
                    args: [pq, pk, pv, pd, $($map_dq,)? shape, schedule, slice(*lse), slice(self.delta), acc, slice_mut(*dk), slice_mut(*dv)] }?
            };
        }
        match (shape.head_dim, self.split) {
            (64, _) => launch!(attention_bwd_d64),
            (_, DqSplit::Columns) => launch!(attention_bwd_d128),
            (_, DqSplit::Keys) => launch!(attention_bwd_keys_d128),
            (_, DqSplit::ColumnsWide) => launch!(attention_bwd_wide_d128),
            (_, DqSplit::Staged) => launch!(attention_bwd_staged_d128),
            (_, DqSplit::Red4) => launch!(attention_bwd_red4_d128),
            (_, DqSplit::TmaReduce) => launch!(attention_bwd_tma_d128, pq_acc),
            (_, DqSplit::TmaEager) => launch!(attention_bwd_tmaeager_d128, pq_acc),
            (_, DqSplit::TmaPersistent) => launch!(attention_bwd_tmap_d128, pq_acc),
        }
        drop(counter);
        cuda_launch! { kernel: attention_bwd_convert, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(words as u32),
        args: [slice(self.dq_acc), softmax_scale(shape.head_dim), slice_mut(*dq)] }?;
        Ok(())
    }
}

/// Gradients of one (batch, head) from the CPU references: dQ, dK, dV
/// (`seq × head_dim` row-major), and for each entry the sum of the absolute
/// values of the terms it adds up (the scale of its rounding error; see
/// [`Gradients::tolerance`]).
#[derive(Clone, Debug, Default)]
pub struct Gradients {
    /// dQ = scale·dS·K.
    pub dq: Vec<f32>,
    /// dK = scale·dSᵀ·Q.
    pub dk: Vec<f32>,
    /// dV = Pᵀ·dO.
    pub dv: Vec<f32>,
    /// scale·Σ_j a_ij·|K_jc| with a_ij = P_ij·(|dP_ij| + Σ_c |dO_ic·O_ic|).
    pub dq_abs: Vec<f32>,
    /// scale·Σ_i a_ij·|Q_ic|.
    pub dk_abs: Vec<f32>,
    /// Σ_i P_ij·|dO_ic|.
    pub dv_abs: Vec<f32>,
}

impl Gradients {
    /// The bound on |GPU − reference| for an entry whose reference value is
    /// `value` and whose terms' absolute values sum to `abs`:
    /// 2⁻⁷·abs + 2⁻⁷·|value|. The GPU rounds P and dS to bf16 before the
    /// products (≤ 2⁻⁹ of each term) and the output to bf16 (≤ 2⁻⁹·|value|).
    /// It computes D from the forward's bf16 O: the final rounding moves D_i
    /// by ≤ 2⁻⁹·Σ_c |dO_ic·O_ic| and so dS_ij by ≤ 2⁻⁹·P_ij·Σ_c |dO_ic·O_ic|
    /// (inside a_ij); O's own error from the forward's bf16 P is a sum of
    /// independent roundings over keys and columns, far below that in D
    /// (not a worst case: the one statistical step of the bound).
    /// `ex2.approx` and the f32 accumulation order add far less. The bound
    /// is at least twice the sum of those (2⁻⁸·abs + 2⁻⁹·|value|). A
    /// dropped or doubled tile, a wrong mask, layout, scale or D moves
    /// entries by a large fraction of `abs`.
    pub fn tolerance(value: f32, abs: f32) -> f32 {
        (abs + value.abs()) / 128.0
    }
}

/// The f32 CPU reference of the backward pass for one (batch, head) `bh`,
/// from bf16 inputs given as f32 (`q`, `k`, `v`, `d_o` hold every (batch,
/// head)). The softmax is recomputed from Q and K (not from the forward's
/// log-sum-exp), then the textbook gradients: dV = Pᵀ·dO, dP = dO·Vᵀ,
/// dS = P∘(dP − rowsum(P∘dP)), dQ = scale·dS·K, dK = scale·dSᵀ·Q.
pub fn reference_backward(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], shape: Shape, bh: usize) -> Gradients {
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    let base = bh * s * d;
    let row = |t: &[f32], i: usize| -> Vec<f32> { t[base + i * d..base + (i + 1) * d].to_vec() };
    let rows = |t: &[f32]| -> Vec<Vec<f32>> { (0..s).map(|i| row(t, i)).collect() };
    let (q, k, v, d_o) = (rows(q), rows(k), rows(v), rows(d_o));
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let scale = 1.0 / (d as f32).sqrt();
    let zero = || vec![0.0f32; s * d];
    let mut g = Gradients { dq: zero(), dk: zero(), dv: zero(), dq_abs: zero(), dk_abs: zero(), dv_abs: zero() };
    for i in 0..s {
        let keys = if shape.causal { i + 1 } else { s };
        let scores: Vec<f32> = (0..keys).map(|j| dot(&q[i], &k[j]) * scale).collect();
        let max = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mut p: Vec<f32> = scores.iter().map(|x| (x - max).exp()).collect();
        let sum: f32 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= sum);
        let dp: Vec<f32> = (0..keys).map(|j| dot(&d_o[i], &v[j])).collect();
        let di: f32 = p.iter().zip(&dp).map(|(a, b)| a * b).sum();
        // Σ_c |dO_ic·O_ic|, O_i = Σ_j P_ij·V_j.
        let o: Vec<f32> = (0..d).map(|c| (0..keys).map(|j| p[j] * v[j][c]).sum()).collect();
        let e: f32 = o.iter().zip(&d_o[i]).map(|(a, b)| (a * b).abs()).sum();
        for j in 0..keys {
            let ds = p[j] * (dp[j] - di);
            let a = p[j] * (dp[j].abs() + e);
            for c in 0..d {
                g.dv[j * d + c] += p[j] * d_o[i][c];
                g.dq[i * d + c] += scale * ds * k[j][c];
                g.dk[j * d + c] += scale * ds * q[i][c];
                g.dv_abs[j * d + c] += p[j] * d_o[i][c].abs();
                g.dq_abs[i * d + c] += scale * a * k[j][c].abs();
                g.dk_abs[j * d + c] += scale * a * q[i][c].abs();
            }
        }
    }
    g
}

/// The CPU reference of the gradients' row `r` of one (batch, head) `bh`
/// (dQ's row of query r, dK's and dV's rows of key r), from the forward's
/// log-sum-exp `lse` and the output `o` (every row of every (batch, head);
/// both as the GPU computed them) instead of a recomputed softmax: O(seq·d)
/// work per row instead of the whole problem's O(seq²·d), for sampled
/// checks of large shapes. Returns a [`Gradients`] whose vectors are that
/// one row each (`head_dim` entries).
#[allow(clippy::too_many_arguments)]
pub fn reference_gradient_row(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], o: &[f32], lse: &[f32], shape: Shape, bh: usize, r: usize) -> Gradients {
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    let base = bh * s * d;
    fn at(t: &[f32], base: usize, d: usize, i: usize) -> &[f32] {
        &t[base + i * d..base + (i + 1) * d]
    }
    let at = |t, i| at(t, base, d, i);
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let scale = 1.0 / (d as f32).sqrt();
    // P_ij, D_i and Σ_c |dO_ic·O_ic| for query i.
    let p = |i: usize, j: usize| -> f32 {
        if shape.causal && j > i {
            0.0
        } else {
            (dot(at(q, i), at(k, j)) * scale - lse[bh * s + i]).exp()
        }
    };
    let delta = |i: usize| dot(at(d_o, i), at(o, i));
    let delta_abs = |i: usize| at(d_o, i).iter().zip(at(o, i)).map(|(a, b)| (a * b).abs()).sum::<f32>();
    let zero = || vec![0.0f32; d];
    let mut g = Gradients { dq: zero(), dk: zero(), dv: zero(), dq_abs: zero(), dk_abs: zero(), dv_abs: zero() };
    // Query r: dQ_r = scale·Σ_j dS_rj·K_j.
    let (di, ei) = (delta(r), delta_abs(r));
    for j in 0..s {
        let pij = p(r, j);
        if pij == 0.0 {
            continue;
        }
        let dp = dot(at(d_o, r), at(v, j));
        let (ds, a) = (pij * (dp - di), pij * (dp.abs() + ei));
        for c in 0..d {
            g.dq[c] += scale * ds * at(k, j)[c];
            g.dq_abs[c] += scale * a * at(k, j)[c].abs();
        }
    }
    // Key r: dV_r = Σ_i P_ir·dO_i, dK_r = scale·Σ_i dS_ir·Q_i.
    for i in 0..s {
        let pir = p(i, r);
        if pir == 0.0 {
            continue;
        }
        let dp = dot(at(d_o, i), at(v, r));
        let (ds, a) = (pir * (dp - delta(i)), pir * (dp.abs() + delta_abs(i)));
        for c in 0..d {
            g.dv[c] += pir * at(d_o, i)[c];
            g.dv_abs[c] += pir * at(d_o, i)[c].abs();
            g.dk[c] += scale * ds * at(q, i)[c];
            g.dk_abs[c] += scale * a * at(q, i)[c].abs();
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_and_launch_shape() {
        // Every kernel fits the H200's 227 KiB opt-in limit; only the
        // bulk-reduction kernel asks for its dQ buffers.
        for hd in [64, 128] {
            for &split in DqSplit::available(hd) {
                assert!(bwd_shared_bytes_for(hd, split) <= 227 * 1024, "{hd} {split:?}");
            }
        }
        assert_eq!(bwd_shared_bytes_for(128, DqSplit::Staged), bwd_shared_bytes(128));
        assert_eq!(bwd_shared_bytes_for(128, DqSplit::TmaReduce), bwd_shared_bytes(128) + 2 * 64 * 64 * 4);
        // The dQ buffers start 1024-aligned (the 128-byte swizzle), right
        // after the dS tiles, which end 1024-aligned.
        assert_eq!((2 * 2 * BWD_BN * ROW_BYTES + BWD_STAGES * 2 * 2 * BWD_BM * ROW_BYTES + 4 * DS_BYTES) % 1024, 0);
        assert_eq!(DQ_TILE_BYTES % 1024, 0);
        let shape = Shape { batch_heads: 3, seq: 1024, head_dim: 128, causal: true };
        let c = bwd_launch_config(shape, DqSplit::Staged, 1);
        assert_eq!(c.grid_dim, (1, 8, 3));
        assert_eq!(c.block_dim, (384, 1, 1));
        assert_eq!(c.shared_mem_bytes, bwd_shared_bytes(128));
        assert_eq!(bwd_launch_config(shape, DqSplit::TmaReduce, 1).shared_mem_bytes, bwd_shared_bytes_for(128, DqSplit::TmaReduce));
        // Head groups: a partial last group, all heads, clamped sizes.
        assert_eq!(bwd_launch_config(shape, DqSplit::Staged, 2).grid_dim, (2, 8, 2));
        assert_eq!(bwd_launch_config(shape, DqSplit::Staged, 3).grid_dim, (3, 8, 1));
        assert_eq!(bwd_launch_config(shape, DqSplit::Staged, 9).grid_dim, (3, 8, 1));
        assert_eq!(bwd_launch_config(shape, DqSplit::Staged, 0).grid_dim, (1, 8, 3));
        // The kernels' reading of the grid, in dispatch order (x fastest):
        // key tile 0 of both heads of the first group, then key tile 1, …,
        // then the partial group's head 2; nothing twice, nothing missed.
        let (gx, gy, gz) = bwd_launch_config(shape, DqSplit::Staged, 2).grid_dim;
        let order: Vec<(u32, u32)> = (0..gz)
            .flat_map(|z| (0..gy).flat_map(move |y| (0..gx).map(move |x| block_work((x, y, z), gx, shape.seq / BWD_BN, false))))
            .filter(|&(bh, _)| bh < shape.batch_heads)
            .collect();
        assert_eq!(&order[..4], &[(0, 0), (1, 0), (0, 1), (1, 1)]);
        assert_eq!(&order[16..19], &[(2, 0), (2, 1), (2, 2)]);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..3).flat_map(|bh| (0..8).map(move |kt| (bh, kt))).collect::<Vec<_>>());
        // The default: BWD_CAUSAL_GROUP heads for causal, at most all of
        // them; one for non-causal.
        let bench = Shape { batch_heads: 128, seq: 2048, head_dim: 128, causal: true };
        assert_eq!(bwd_default_group(bench), 8);
        assert_eq!(bwd_default_group(Shape { seq: 8192, batch_heads: 32, ..bench }), 8);
        assert_eq!(bwd_default_group(Shape { causal: false, ..bench }), 1);
        assert_eq!(bwd_default_group(Shape { batch_heads: 3, ..bench }), 3);
        assert_eq!(bwd_default_group(Shape { batch_heads: 0, ..bench }), 1);
        assert_eq!(bwd_shared_bytes_for(128, DqSplit::TmaEager), bwd_shared_bytes_for(128, DqSplit::TmaReduce));
        assert_eq!(bwd_shared_bytes_for(128, DqSplit::TmaPersistent), bwd_shared_bytes_for(128, DqSplit::TmaReduce));
        assert_eq!(bwd_kernel_name(64, DqSplit::Keys), "attention_bwd_d64");
        assert_eq!(bwd_kernel_name(128, DqSplit::Columns), "attention_bwd_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::Keys), "attention_bwd_keys_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::ColumnsWide), "attention_bwd_wide_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::Staged), "attention_bwd_staged_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::Red4), "attention_bwd_red4_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::TmaReduce), "attention_bwd_tma_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::TmaEager), "attention_bwd_tmaeager_d128");
        assert_eq!(bwd_kernel_name(128, DqSplit::TmaPersistent), "attention_bwd_tmap_d128");

        assert_eq!(DqSplit::available(64), &[DqSplit::Keys]);
        assert_eq!(DqSplit::available(128)[0], DqSplit::TmaReduce);
    }

    #[test]
    fn split_names_and_selection() {
        for &s in DqSplit::available(128) {
            assert_eq!(DqSplit::parse(s.name()), Some(s));
        }
        assert_eq!(DqSplit::parse(" wide "), Some(DqSplit::ColumnsWide));
        assert_eq!(DqSplit::parse("staged"), Some(DqSplit::Staged));
        assert_eq!(DqSplit::parse("tma"), Some(DqSplit::TmaReduce));
        assert_eq!(DqSplit::parse("tmaeager"), Some(DqSplit::TmaEager));
        assert_eq!(DqSplit::parse("tmap"), Some(DqSplit::TmaPersistent));
        assert_eq!(DqSplit::parse("rows"), None);
        assert_eq!(DqSplit::select(None, 128), vec![DqSplit::TmaReduce]);
        assert_eq!(DqSplit::select(Some("all"), 128), DqSplit::available(128).to_vec());
        assert_eq!(DqSplit::select(Some("wide,columns"), 128), vec![DqSplit::ColumnsWide, DqSplit::Columns]);
        assert_eq!(DqSplit::select(Some("staged,tma"), 128), vec![DqSplit::Staged, DqSplit::TmaReduce]);
        assert_eq!(DqSplit::select(Some("tma"), 64), vec![DqSplit::Keys]);
        // head_dim 64 has only the keys split: the others are skipped and
        // its default stands in when nothing is left.
        assert_eq!(DqSplit::select(Some("wide"), 64), vec![DqSplit::Keys]);
        assert_eq!(DqSplit::select(Some("all"), 64), vec![DqSplit::Keys]);
        assert_eq!(DqSplit::select(Some("nonsense"), 128), vec![DqSplit::TmaReduce]);
    }

    /// The dQ buffer's stores ([`DqSplit::TmaReduce`]): every thread's
    /// places, base ^ flip + offset, are the map's swizzled layout of its
    /// fragment entries; together they cover the 16 KiB buffer once; and
    /// each half warp's store (8-byte stores reach the banks half a warp
    /// at a time) touches every 16-byte bank group with two lanes: one
    /// wavefront, no bank conflict (regression: in one order for every
    /// lane, half a warp filled 4 groups with 4 lanes each, and ncu counted
    /// four wavefronts a store where two do).
    #[test]
    fn dq_buffer_places() {
        let mut seen = vec![false; (DQ_TILE_BYTES / 8) as usize];
        for warp in 0..4u32 {
            for k in 0..8u32 {
                for half in 0..2u32 {
                    for half_warp in 0..2u32 {
                        let mut groups = [0u32; 8];
                        for lane in 16 * half_warp..16 * half_warp + 16 {
                            let (r, c0) = (16 * warp + lane / 4, 2 * (lane % 4));
                            let (flip, offset) = dq_pair_place(k);
                            let i = dq_pair_of(k, c0);
                            let at = (dq_thread_base(r, c0) ^ flip) + offset + 1024 * half;
                            assert_eq!(at, dq_buffer_offset(r + 8 * half, 8 * i + c0), "warp {warp} lane {lane} k {k} half {half}");
                            assert_eq!(at + 4, dq_buffer_offset(r + 8 * half, 8 * i + c0 + 1));
                            assert_eq!(at % 8, 0);
                            assert!(at < DQ_TILE_BYTES);
                            assert!(!std::mem::replace(&mut seen[(at / 8) as usize], true), "{at} stored twice");
                            groups[(at % 128 / 16) as usize] += 1;
                        }
                        // 16 lanes × 8 bytes over 8 groups of 16 bytes.
                        assert_eq!(groups, [2; 8], "warp {warp} k {k} half {half} half warp {half_warp}");
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
        // The layout is TMA's 128-byte swizzle of 32-column boxes.
        assert_eq!(dq_buffer_offset(0, 0), 0);
        assert_eq!(dq_buffer_offset(1, 0), 128 + 16);
        assert_eq!(dq_buffer_offset(3, 37), DQ_BOX_BYTES + 3 * 128 + 16 * (1 ^ 3) + 4);
    }

    /// The reference against finite differences of the loss L = Σ dO∘O, O
    /// from the forward reference: dL/dX for a few entries of Q, K and V.
    #[test]
    fn reference_matches_finite_differences() {
        for causal in [false, true] {
            let shape = Shape { batch_heads: 1, seq: 128, head_dim: 64, causal };
            let n = shape.elements();
            let mut state = 0x1234_5678_9abc_def1u64;
            let mut rand = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            };
            let mut q: Vec<f32> = (0..n).map(|_| 2.0 * rand()).collect();
            let mut k: Vec<f32> = (0..n).map(|_| rand()).collect();
            let mut v: Vec<f32> = (0..n).map(|_| rand()).collect();
            let d_o: Vec<f32> = (0..n).map(|_| rand()).collect();
            let Gradients { dq, dk, dv, .. } = reference_backward(&q, &k, &v, &d_o, shape, 0);
            // The loss in f64 over every row, from f32 forward rows.
            let loss = |q: &[f32], k: &[f32], v: &[f32]| -> f64 {
                (0..128)
                    .map(|i| {
                        let (o, _) = crate::reference_row(q, k, v, shape, 0, i);
                        o.iter().zip(&d_o[i * 64..(i + 1) * 64]).map(|(a, b)| (*a as f64) * (*b as f64)).sum::<f64>()
                    })
                    .sum()
            };
            let h = 1e-2f32;
            for (which, idx) in [(0, 5 * 64 + 3), (0, 100 * 64 + 17), (1, 2 * 64 + 9), (1, 77 * 64 + 40), (2, 64 + 1), (2, 120 * 64 + 63)] {
                let grad = [&dq, &dk, &dv][which][idx];
                let t = match which {
                    0 => &mut q,
                    1 => &mut k,
                    _ => &mut v,
                };
                let x = t[idx];
                t[idx] = x + h;
                let up = loss(&q, &k, &v);
                let t = match which {
                    0 => &mut q,
                    1 => &mut k,
                    _ => &mut v,
                };
                t[idx] = x - h;
                let down = loss(&q, &k, &v);
                let t = match which {
                    0 => &mut q,
                    1 => &mut k,
                    _ => &mut v,
                };
                t[idx] = x;
                let numeric = ((up - down) / (2.0 * h as f64)) as f32;
                assert!(
                    (numeric - grad).abs() <= 2e-3 + 2e-2 * grad.abs(),
                    "causal {causal} tensor {which} index {idx}: {grad} vs finite difference {numeric}"
                );
            }
        }
    }

    /// The sampled-row reference (from O and the log-sum-exp) agrees with
    /// the full one (softmax recomputed) on every row.
    #[test]
    fn row_reference_matches_full_reference() {
        for causal in [false, true] {
            let shape = Shape { batch_heads: 2, seq: 128, head_dim: 64, causal };
            let n = shape.elements();
            let mut state = 0x0ddb_a11c_afe5_eed5u64;
            let mut rand = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            };
            let q: Vec<f32> = (0..n).map(|_| 3.0 * rand()).collect();
            let (k, v, d_o): (Vec<f32>, Vec<f32>, Vec<f32>) =
                ((0..n).map(|_| rand()).collect(), (0..n).map(|_| rand()).collect(), (0..n).map(|_| rand()).collect());
            let (mut o, mut lse) = (vec![0.0f32; n], vec![0.0f32; shape.rows()]);
            for row in 0..shape.rows() {
                let (out, l) = crate::reference_row(&q, &k, &v, shape, row / 128, row % 128);
                o[row * 64..(row + 1) * 64].copy_from_slice(&out);
                lse[row] = l;
            }
            let full = reference_backward(&q, &k, &v, &d_o, shape, 1);
            for r in [0, 1, 63, 64, 127] {
                let g = reference_gradient_row(&q, &k, &v, &d_o, &o, &lse, shape, 1, r);
                for c in 0..64 {
                    let i = r * 64 + c;
                    for (name, a, b, abs) in [
                        ("dq", g.dq[c], full.dq[i], full.dq_abs[i]),
                        ("dk", g.dk[c], full.dk[i], full.dk_abs[i]),
                        ("dv", g.dv[c], full.dv[i], full.dv_abs[i]),
                    ] {
                        assert!((a - b).abs() <= 1e-4 * (1.0 + abs), "causal {causal} {name}[{r}][{c}]: {a} vs {b}");
                    }
                    assert!((g.dq_abs[c] - full.dq_abs[i]).abs() <= 1e-3 * (1.0 + full.dq_abs[i]));
                }
            }
        }
    }
}
