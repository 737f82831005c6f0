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
//! The kernels ([`attention_fwd_d64`], [`attention_fwd_d128`], their
//! `_smem_` twins and the head_dim-64 tile shapes, one body):
//! by default a block owns 128 query rows of one (batch, head) and has 384
//! threads. Warps 0–7 are two consumer warpgroups of 64 query rows each;
//! warps 8–11 are the producer warpgroup, which gives most of its registers
//! to the consumers (`setmaxnreg`) and of which one lane issues TMA copies:
//! Q once, then K and V
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
//!   blocks start with the longest rows, see the order below);
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
//! The block's shape is a set of compile-time parameters ([`Tile`]): at
//! head_dim 64, where a KV tile carries half the matrix work of head_dim
//! 128 for the same softmax, there are kernels with 3 or 4 stages (the
//! tiles are half the bytes) and with three consumer warpgroups (192 query
//! rows, 512 threads, 160 registers per consumer thread), with the
//! pipeline above or without it (`…n`: each warpgroup runs its softmax and
//! P·V in turn, and only the warpgroups overlap each other). seq need not
//! be a multiple of 192: the last block's rows past seq are computed on
//! whatever TMA loads there and not stored, and a warpgroup whose rows are
//! all past seq only releases the stages. At head_dim 128 the choice is
//! smaller: 2 or 3 stages (3 fill the shared memory), with the pipeline or
//! without it, and (`m128s3pt`) the two consumer warpgroups taking turns
//! at the tensor cores ([`Tile::ping_pong`]), slower on the H100. A causal
//! warpgroup reads the KV tiles up to its own last row and masks every
//! tile that crosses its first row.
//! [`Tile::default_for`] picks the shape, the fastest measured: 128
//! rows and 3 stages with the pipeline at head_dim 128, 192 rows and 3
//! stages without it at head_dim 64, both persistent (`m128s3p`,
//! `m192s3np`, below); `OXIDE_ATTN_FWD` ([`TILE_ENV`]) names others for
//! the example and the benchmarks.
//!
//! A persistent kernel ([`Tile::persistent`], [`Schedule`]) launches one
//! block per multiprocessor; each block's producer takes work items (a
//! query tile of a head) from a counter in device memory, in the order the
//! grid below would dispatch its blocks, until none is left, so a block
//! that finishes early takes more, as the hardware's dispatch would give
//! it. The producer loads the next item's Q as soon as both consumer
//! warpgroups have issued their last Q·Kᵀ (an mbarrier, `q_empty`) and its
//! K and V into the ring as stages free up, while the consumers finish the
//! last P·V and store O: a new block would instead start with its pipeline
//! empty, a cost that weighs most where a query tile has few KV tiles
//! (short sequences, causal). The item's number travels to the
//! consumers in a shared word written before the producer's arrival on
//! Q's barrier. The launch's last fetch from the counter (each block
//! fetches exactly once past the last item) sets it back to 0;
//! [`Attention::launch`] orders each launch as a write of the counter's
//! buffer, so a launch on another stream waits for the last one, as two
//! launches at once would share it.
//!
//! The order of the blocks ([`launch_config`], [`Group`]): the grid is
//! (G, query tiles, ⌈batch·heads/G⌉), a block's head is z·G + x and its
//! query tile y (the last first when causal), so the hardware, which
//! dispatches x fastest, runs the (batch, head)s in groups of G, and within
//! a group one query tile of every head before the next tile. Causal query
//! tiles differ in work (tile i reads i + 1 KV tiles): one head at a time
//! (G = 1) ends the launch with the last heads' heavy and light tiles mixed,
//! and SMs idle while the last heavy ones finish; a group starts all its
//! heads' heaviest tiles first (the longest work first, as
//! FlashAttention-3 schedules it), and G is kept small enough that the
//! group's K and V stay in the L2 ([`default_group`]). Non-causal work is
//! uniform: G = 1, where the concurrent blocks of one head share its K and
//! V. `OXIDE_ATTN_GROUP` ([`GROUP_ENV`]) names other groups for the example's
//! and the benchmarks' timing runs.
//!
//! ```ignore
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let shape = Shape { batch_heads: 64, seq: 4096, head_dim: 128, causal: true };
//! let mut attn = Attention::new(&module, &stream, &q, &k, &v, shape)?;
//! attn.set_group(Group::Heads(8)); // optional: Group::Auto is the default
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
use core::sync::atomic::{AtomicU32, Ordering};
use cuda_device::atomic::{Scope, ScopedAtomic};
use std::sync::{Mutex, MutexGuard};

pub mod backward;
pub use backward::{reference_backward, reference_gradient_row, Backward, DqSplit, Gradients, BWD_ENV};

/// Query rows per block of the 128-row tiles ([`Tile::M128_S2`]: two
/// consumer warpgroups of 64); seq must be a multiple of it.
pub const BM: u32 = 128;
/// Keys per KV tile.
pub const BN: u32 = 128;
/// Elements of one swizzle box row (128 bytes of bf16).
const BOX: u32 = 64;
/// Bytes of one 128-byte-swizzled row.
const ROW_BYTES: u32 = 128;
/// Bytes of one warpgroup's P tile (64 rows × BN keys bf16, BN/64 boxes).
const P_BYTES: u32 = 64 * BN * 2;
/// Threads per block of the default tile: two consumer warpgroups and the
/// producer warpgroup (one warp of which issues the copies). A whole
/// producer warpgroup so that `setmaxnreg` can move its registers to the
/// consumers: ptxas gives each thread of a 288- or 384-thread block at most
/// 168, too few for the consumers' S and O fragments at head_dim 128.
pub const THREADS: u32 = 384;

/// The forward kernel's block shape: `consumers` warpgroups of 64 query
/// rows each (and the producer warpgroup), `stages` K/V stages in the TMA
/// ring, and whether each warpgroup overlaps its softmax with its own P·V
/// (`overlap`, the software pipeline of the module docs) or runs them one
/// after the other (only the warpgroups overlap each other: fewer live
/// registers, which three warpgroups of 160 registers need), and whether
/// the kernel is persistent (`persistent`: a block per multiprocessor
/// taking work items until none is left, [`Schedule`]). The kernels exist
/// for the shapes [`Tile::available`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Consumer warpgroups: 2 (128 query rows, 384 threads) or 3 (192
    /// rows, 512 threads).
    pub consumers: u32,
    /// K/V stages: 2 to 4.
    pub stages: u32,
    /// Softmax overlapped with the warpgroup's own P·V.
    pub overlap: bool,
    /// One block per multiprocessor, each taking work items (a query tile
    /// of a head) until none is left ([`Schedule`]), instead of one block
    /// per work item: a block loads the next item's tiles while its
    /// consumers finish the last one, where a new block would start with
    /// its pipeline empty.
    pub persistent: bool,
    /// The two consumer warpgroups take turns at the tensor cores
    /// (FlashAttention-3's ping-pong): one issues its Q·Kᵀ and P·V only
    /// after the other has issued its own, so that one's softmax runs under
    /// the other's matrix products, where without turns both warpgroups'
    /// products tend to run together and then both softmaxes. Two consumer
    /// warpgroups with the overlap only.
    pub ping_pong: bool,
}

impl Tile {
    /// 128 rows, 2 stages: the only shape for [`Variant::SharedP`].
    pub const M128_S2: Tile = Tile { consumers: 2, stages: 2, overlap: true, persistent: false, ping_pong: false };
    /// 128 rows, 3 stages: the fastest of [`Tile::D128`] on the H200 one
    /// block per work item (benches/README.md).
    pub const M128_S3: Tile = Tile { consumers: 2, stages: 3, overlap: true, persistent: false, ping_pong: false };
    /// 192 rows, 3 stages, no overlap within a warpgroup: the fastest of
    /// [`Tile::D64`] on the H200 one block per work item
    /// (benches/README.md).
    pub const M192_S3N: Tile = Tile { consumers: 3, stages: 3, overlap: false, persistent: false, ping_pong: false };
    /// [`Tile::M128_S3`], persistent: the default at head_dim 128, faster
    /// than it at every bench shape (benches/README.md).
    pub const M128_S3P: Tile = Tile { persistent: true, ..Tile::M128_S3 };
    /// [`Tile::M192_S3N`], persistent: the default at head_dim 64, faster
    /// than it at every bench shape (benches/README.md).
    pub const M192_S3NP: Tile = Tile { persistent: true, ..Tile::M192_S3N };
    /// [`Tile::M128_S3P`] with the consumer warpgroups taking turns
    /// ([`Tile::ping_pong`]): 0.3–4 % slower than it at every bench shape
    /// on the H100 (benches/README.md), kept for other GPUs and shapes.
    pub const M128_S3PT: Tile = Tile { ping_pong: true, ..Tile::M128_S3P };
    /// The shapes with a head_dim-128 kernel (P in registers), the
    /// default first: a full K/V tile is twice the bytes of head_dim 64's,
    /// so three stages just fit the shared memory and three consumer
    /// warpgroups would not fit the registers.
    pub const D128: [Tile; 6] = [
        Tile::M128_S3P,
        Tile::M128_S3PT,
        Tile::M128_S3,
        Tile::M128_S2,
        Tile { consumers: 2, stages: 2, overlap: false, persistent: false, ping_pong: false },
        Tile { consumers: 2, stages: 3, overlap: false, persistent: false, ping_pong: false },
    ];
    /// The shapes with a head_dim-64 kernel (P in registers), the default
    /// first: half-size K/V tiles leave room for deeper rings, and three
    /// consumer warpgroups give the tensor cores more independent work per
    /// KV tile to overlap with the softmax.
    pub const D64: [Tile; 9] = [
        Tile::M192_S3NP,
        Tile::M192_S3N,
        Tile::M128_S2,
        Tile { consumers: 2, stages: 3, overlap: true, persistent: false, ping_pong: false },
        Tile { consumers: 2, stages: 4, overlap: true, persistent: false, ping_pong: false },
        Tile { consumers: 3, stages: 2, overlap: true, persistent: false, ping_pong: false },
        Tile { consumers: 3, stages: 3, overlap: true, persistent: false, ping_pong: false },
        Tile { consumers: 3, stages: 4, overlap: true, persistent: false, ping_pong: false },
        Tile { consumers: 3, stages: 2, overlap: false, persistent: false, ping_pong: false },
    ];

    /// Query rows per block.
    pub const fn rows(self) -> u32 {
        64 * self.consumers
    }

    /// Threads per block: the consumer warpgroups and the producer's.
    pub const fn threads(self) -> u32 {
        128 * (self.consumers + 1)
    }

    /// The tiles with a kernel for `head_dim` and `variant`, the default
    /// first.
    pub fn available(head_dim: u32, variant: Variant) -> &'static [Tile] {
        match (head_dim, variant) {
            (64, Variant::RegisterP) => &Tile::D64,
            (128, Variant::RegisterP) => &Tile::D128,
            _ => &[Tile::M128_S2],
        }
    }

    /// The tile [`Attention::new`] uses for `head_dim`.
    pub fn default_for(head_dim: u32) -> Tile {
        if head_dim == 64 { Tile::M192_S3NP } else { Tile::M128_S3P }
    }

    /// The tile's name, `m{rows}s{stages}`, with `n` after it without the
    /// overlap, then `p` when persistent and then `t` when the warpgroups
    /// take turns (as [`Tile::parse`] reads it).
    pub fn name(self) -> String {
        format!(
            "m{}s{}{}{}{}",
            self.rows(),
            self.stages,
            if self.overlap { "" } else { "n" },
            if self.persistent { "p" } else { "" },
            if self.ping_pong { "t" } else { "" }
        )
    }

    /// Reads a tile name: `m{rows}s{stages}`, `m{rows}` (2 stages) or
    /// `s{stages}` (128 rows), each with `n` after it for no overlap, then
    /// `p` for persistent and then `t` for turns; None for anything else or
    /// rows that are not a whole number of warpgroups.
    pub fn parse(name: &str) -> Option<Tile> {
        let name = name.trim();
        let (name, ping_pong) = match name.strip_suffix('t') {
            Some(rest) => (rest, true),
            None => (name, false),
        };
        let (name, persistent) = match name.strip_suffix('p') {
            Some(rest) => (rest, true),
            None => (name, false),
        };
        let (name, overlap) = match name.strip_suffix('n') {
            Some(rest) => (rest, false),
            None => (name, true),
        };
        let (rows, stages) = match (name.strip_prefix('m'), name.strip_prefix('s')) {
            (Some(rest), _) => match rest.split_once('s') {
                Some((m, s)) => (m.parse::<u32>().ok()?, s.parse::<u32>().ok()?),
                None => (rest.parse::<u32>().ok()?, 2),
            },
            (None, Some(s)) => (BM, s.parse::<u32>().ok()?),
            _ => return None,
        };
        (rows > 0 && rows.is_multiple_of(64)).then_some(Tile { consumers: rows / 64, stages, overlap, persistent, ping_pong })
    }

    /// The tiles that `spec` names for `head_dim` (P in registers): `all`
    /// (every available one), or tile names separated by commas, those
    /// without a kernel at this head_dim skipped; the default tile when
    /// `spec` is None, empty or names none of them.
    pub fn select(spec: Option<&str>, head_dim: u32) -> Vec<Tile> {
        // The first available tile is the default (a test checks it).
        select_named(spec, Tile::available(head_dim, Variant::RegisterP), Tile::parse)
    }

    /// [`Tile::select`] of the environment variable [`TILE_ENV`].
    pub fn from_env(head_dim: u32) -> Vec<Tile> {
        Tile::select(std::env::var(TILE_ENV).ok().as_deref(), head_dim)
    }
}

/// The kernels that `spec` names among `available` (the default first):
/// `all` (every one), or names separated by commas that `parse` reads,
/// those not available skipped; the default when `spec` is None, empty or
/// names none of them. Shared by [`Tile::select`] and
/// [`DqSplit::select`].
pub(crate) fn select_named<T: Copy + PartialEq>(spec: Option<&str>, available: &[T], parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
    let mut chosen: Vec<T> = match spec.map(str::trim) {
        Some("all") => available.to_vec(),
        Some(list) => list.split(',').filter_map(parse).filter(|k| available.contains(k)).collect(),
        None => Vec::new(),
    };
    chosen.dedup();
    if chosen.is_empty() {
        chosen.push(available[0]);
    }
    chosen
}

/// The environment variable with which the example's and the benchmarks'
/// timing runs pick forward tiles ([`Tile::select`]), e.g.
/// `OXIDE_ATTN_FWD=all` or `OXIDE_ATTN_FWD=m128s2,m192s3`.
pub const TILE_ENV: &str = "OXIDE_ATTN_FWD";

/// The environment variable with which the example's and the benchmarks'
/// timing runs pick the forward's head groups ([`Group::select`]), e.g.
/// `OXIDE_ATTN_GROUP=1,8,16,auto`.
pub const GROUP_ENV: &str = "OXIDE_ATTN_GROUP";

/// The largest grid y and z the hardware launches.
const MAX_GRID_YZ: u32 = 65535;

/// `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE` (cuda.h): the L2's size in bytes.
const L2_CACHE_SIZE_ATTRIBUTE: i32 = 38;

/// The L2 size assumed where the driver does not report one (the
/// emulator): a Hopper's, which the kernels need anyway.
const FALLBACK_L2_BYTES: u64 = 50 << 20;

/// The share of the L2 (one part in this many) that the data a group's
/// blocks share (the forward's K and V) may fill: the rest is for what
/// streams through it once (the forward's Q tiles, O rows and log-sum-exp),
/// which would otherwise evict tiles that other blocks of the group still
/// read. [`GROUP_ENV`] measures other sizes.
const L2_SHARE: u64 = 2;

/// How many (batch, head)s a launch interleaves ([`launch_config`], and
/// the backward's [`backward::bwd_launch_config`]): the heads are taken in
/// groups of G, and within a group the blocks are dispatched tile by tile
/// (for causal, the heaviest tile of every head of the group first), then
/// the next group. G = 1 is one head after the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The pass's default ([`default_group`], [`backward::bwd_default_group`]):
    /// for causal, the forward takes as many heads as keep the data their
    /// blocks share in a share of the L2 and the backward
    /// [`backward::BWD_CAUSAL_GROUP`] heads; one head for non-causal.
    Auto,
    /// This many heads (at least 1), at most batch·heads (more are
    /// clamped).
    Heads(u32),
}

impl Group {
    /// The group size for `shape`, in 1..=batch·heads: `auto` (the pass's
    /// default for the shape) for [`Group::Auto`].
    pub fn heads(self, shape: Shape, auto: u32) -> u32 {
        let g = match self {
            Group::Auto => auto,
            Group::Heads(g) => g,
        };
        g.clamp(1, shape.batch_heads.max(1))
    }

    /// The group's name in benchmark rows: `gauto` or `g{heads}`.
    pub fn name(self) -> String {
        match self {
            Group::Auto => "gauto".to_string(),
            Group::Heads(g) => format!("g{g}"),
        }
    }

    /// Reads one group: `auto` or a positive number of heads.
    pub fn parse(text: &str) -> Result<Group, String> {
        let text = text.trim();
        if text == "auto" {
            return Ok(Group::Auto);
        }
        match text.parse::<u32>() {
            Ok(g) if g > 0 => Ok(Group::Heads(g)),
            _ => Err(format!("{GROUP_ENV}: {text:?} is not a head group (`auto` or a number of heads ≥ 1)")),
        }
    }

    /// The groups that `spec` names, separated by commas, in order without
    /// repeats: [`Group::Auto`] alone when `spec` is None or blank; an
    /// error naming the first entry that is not a group, so that a typo in
    /// a measurement does not silently time the default instead.
    pub fn select(spec: Option<&str>) -> Result<Vec<Group>, String> {
        let Some(spec) = spec.filter(|s| !s.trim().is_empty()) else {
            return Ok(vec![Group::Auto]);
        };
        let mut chosen = Vec::new();
        for entry in spec.split(',') {
            let group = Group::parse(entry)?;
            if !chosen.contains(&group) {
                chosen.push(group);
            }
        }
        Ok(chosen)
    }

    /// [`Group::select`] of the environment variable [`GROUP_ENV`].
    pub fn from_env() -> Result<Vec<Group>, String> {
        Group::select(std::env::var(GROUP_ENV).ok().as_deref())
    }
}

/// The forward's default head group for `shape` on a GPU with `l2_bytes`
/// of L2. Causal: the query tiles of one head differ in work (tile i reads
/// i + 1 KV tiles), so with one head at a time the launch's tail is the
/// light tiles of the last heads mixed with their heavy ones; interleaving
/// G heads puts the heavy tiles of all of them first (the longest work
/// first), while G heads' K and V (seq·head_dim bf16 each), which every
/// block of a head reads, still fit a share of the L2 (`L2_SHARE`).
/// Non-causal: 1, as the work is uniform and the concurrent blocks of one
/// head share its K and V best.
pub fn default_group(shape: Shape, l2_bytes: u64) -> u32 {
    group_fitting(shape, l2_bytes, 2 * 2 * shape.seq as u64 * shape.head_dim as u64)
}

/// The head group of [`default_group`] for heads of which every block
/// reads `head_bytes`: for causal, as many heads as fit the L2's share,
/// then evened out (as many groups, G as small as that allows) so that the
/// last group has few empty blocks; 1 for non-causal.
pub(crate) fn group_fitting(shape: Shape, l2_bytes: u64, head_bytes: u64) -> u32 {
    let heads = shape.batch_heads.max(1);
    if !shape.causal {
        return 1;
    }
    let fit = (l2_bytes / L2_SHARE / head_bytes.max(1)).clamp(1, heads as u64) as u32;
    heads.div_ceil(heads.div_ceil(fit))
}

/// The L2 size of the stream's GPU in bytes, as the driver reports it
/// (a Hopper's, `FALLBACK_L2_BYTES`, where it does not).
pub fn l2_bytes(stream: &CudaStream) -> u64 {
    match stream.context().attribute(L2_CACHE_SIZE_ATTRIBUTE) {
        Ok(bytes) if bytes > 0 => bytes as u64,
        _ => FALLBACK_L2_BYTES,
    }
}

/// The problem shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Shape {
    /// batch × heads: the independent attention problems.
    pub batch_heads: u32,
    /// Sequence length (queries = keys), a multiple of [`BN`].
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

/// How a persistent forward kernel ([`Tile::persistent`]) takes its work:
/// every block fetches the next work item from a counter in device memory
/// until none is left, so the blocks that finish early take more (the
/// hardware's dynamic dispatch of a non-persistent grid, kept by a grid of
/// one block per multiprocessor), and a block loads the next item's Q, K
/// and V while its consumers finish the last one. Item `v` is the block the
/// non-persistent grid of the same head group would dispatch `v`-th
/// (`virtual_block`). The kernels that are not persistent ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Schedule {
    /// The device address of the launch's work counter, a `u32` that is 0
    /// when the launch starts (the launch's last fetch sets it back to 0);
    /// 0 for a kernel that is not persistent.
    pub counter: u64,
    /// The heads per group, G ([`Group`]).
    pub group: u32,
    /// The work items: G × query tiles × ⌈batch·heads / G⌉, those past the
    /// last head skipped.
    pub items: u32,
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
pub(crate) unsafe fn store_shared(address: u32, value: u32) {
    // SAFETY: the caller's contract.
    unsafe { ptx_asm!("st.shared.u32 [{a}], {v};", a = in(u32) address, v = in(u32) value) };
}

/// Loads a 32-bit word from a 32-bit shared address.
///
/// # Safety
/// `address` is 4-byte aligned, inside the launch's dynamic shared memory,
/// and nobody writes it concurrently.
#[inline(always)]
unsafe fn load_shared(address: u32) -> u32 {
    let value: u32;
    // SAFETY: the caller's contract.
    unsafe { ptx_asm!("ld.shared.u32 {v}, [{a}];", v = out(u32) value, a = in(u32) address) };
    value
}

/// Waits until the 128 threads of warpgroup `wg` (0, 1 or 2, warp-uniform)
/// have arrived: named barrier 1 + wg (barrier 0 is `sync_threads`). The
/// barrier number is an immediate: with a register, ptxas reserves all 16.
#[inline(always)]
fn sync_warpgroup(wg: u32) {
    // SAFETY: a barrier; the whole warpgroup calls it together.
    unsafe {
        if wg == 0 {
            ptx_asm!("bar.sync 1, 128;")
        } else if wg == 1 {
            ptx_asm!("bar.sync 2, 128;")
        } else {
            ptx_asm!("bar.sync 3, 128;")
        }
    }
}

/// Waits for consumer warpgroup `wg`'s (0 or 1, warp-uniform) turn to
/// issue matrix products ([`Tile::ping_pong`]): named barrier 4 + wg,
/// complete once its 128 threads wait there and the other warpgroup's 128
/// have passed it the turn ([`pass_turn`]). Turns strictly alternate: a
/// warpgroup passes only after taking, and takes only after the other
/// passed.
#[inline(always)]
fn take_turn(wg: u32) {
    // SAFETY: a barrier that only the two consumer warpgroups use, each
    // whole warpgroup together.
    unsafe {
        if wg == 0 {
            ptx_asm!("bar.sync 4, 256;")
        } else {
            ptx_asm!("bar.sync 5, 256;")
        }
    }
}

/// Gives the turn from consumer warpgroup `wg` to the other one (arrives
/// on its barrier without waiting, [`take_turn`]). Issued products run on
/// after it: only their issue order is arranged.
#[inline(always)]
fn pass_turn(wg: u32) {
    // SAFETY: as take_turn.
    unsafe {
        if wg == 0 {
            ptx_asm!("bar.arrive 5, 256;")
        } else {
            ptx_asm!("bar.arrive 4, 256;")
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
/// the warpgroup's 64 query rows of the block's Q tile (`q_box_rows` rows
/// per box),
/// `k` the K tile, both in 128-byte-swizzled boxes of 64 columns; head_dim
/// HD is HD/16 k steps, four per box.
///
/// # Safety
/// Warpgroup-wide with the same addresses; the tiles are not rewritten and
/// `acc_s` not touched until a `wait_group` says the group is done.
#[inline(always)]
unsafe fn issue_qk<const HD: u32>(acc_s: &mut [f32; 64], q: u32, q_box_rows: u32, k: u32) {
    wgmma::fence();
    unroll!(full, for kk in 0..HD / 16 {
        let da = wgmma::kmajor_b128(q, q_box_rows, kk);
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

/// The causal mask of a tile that crosses the diagonal: key (column) c of
/// the tile is visible to the thread's first row iff c <= `limit` (the
/// row's position minus the tile's first key; negative when the row sees
/// none of the tile), to its second row (8 further) iff c <= `limit` + 8.
#[inline(always)]
fn mask_diagonal(acc_s: &mut [f32; 64], limit: i32, lane: u32) {
    let c0 = 2 * (lane % 4) as i32;
    unroll!(full, for i in 0..16i32 {
        let c = 8 * i + c0;
        let i = i as usize;
        if c > limit {
            acc_s[4 * i] = f32::NEG_INFINITY;
        }
        if c + 1 > limit {
            acc_s[4 * i + 1] = f32::NEG_INFINITY;
        }
        if c > limit + 8 {
            acc_s[4 * i + 2] = f32::NEG_INFINITY;
        }
        if c + 1 > limit + 8 {
            acc_s[4 * i + 3] = f32::NEG_INFINITY;
        }
    });
}

/// One step of the online softmax on a copy of a 64×128 S fragment (a
/// copy: masking it in place would write the registers of the next Q·Kᵀ
/// while a P·V is in flight, and ptxas then serialises every wgmma, C7513),
/// masked when `diagonal` ([`mask_diagonal`]'s `limit`): new row maxima
/// (over the quad that holds a row), the factors 2^(old − new max) that
/// rescale O and the sums (returned), and P = 2^(S·scale − max) rounded to
/// bf16 and packed in wgmma's register-A layout: k step k (keys
/// 16k…16k+15) is column blocks 2k and 2k + 1 of the fragment.
#[inline(always)]
fn softmax(mut acc_s: [f32; 64], diagonal: bool, limit: i32, lane: u32, st: &mut Softmax, scale_log2: f32) -> (f32, f32, [[u32; 4]; 8]) {
    if diagonal {
        mask_diagonal(&mut acc_s, limit, lane);
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
    // the new maxima are finite; the first step's factors are 2^-inf = 0. A
    // later tile may mask a whole row (three consumer warpgroups): its
    // maximum stays, its factor is 1 and its weights are 2^-inf = 0.
    let n0 = st.m0.max(x0 * scale_log2);
    let n1 = st.m1.max(x1 * scale_log2);
    let alpha0 = exp2(st.m0 - n0);
    let alpha1 = exp2(st.m1 - n1);
    st.m0 = n0;
    st.m1 = n1;
    let (mut sum0, mut sum1) = (0.0f32, 0.0f32);
    let mut p = [[0u32; 4]; 8];
    // S·scale − max in one rounding (`fma`): one instruction an element
    // where the product and the difference are two, on the path between
    // two matrix products.
    unroll!(full, for i in 0..16usize {
        let p00 = exp2(acc_s[4 * i].mul_add(scale_log2, -n0));
        let p01 = exp2(acc_s[4 * i + 1].mul_add(scale_log2, -n0));
        let p10 = exp2(acc_s[4 * i + 2].mul_add(scale_log2, -n1));
        let p11 = exp2(acc_s[4 * i + 3].mul_add(scale_log2, -n1));
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

/// The grid indices (x, y, z) that block `v` of the non-persistent grid
/// for head groups of `group` and `q_tiles` query tiles has, in the
/// hardware's dispatch order (x fastest, then y, then z): a persistent
/// kernel takes its work items in that order ([`Schedule`]).
#[inline(always)]
pub(crate) const fn virtual_block(v: u32, group: u32, q_tiles: u32) -> (u32, u32, u32) {
    // Both are at least 1 (the host's grid); saying so spares the kernel
    // a division-by-zero panic path.
    let (group, q_tiles) = (if group == 0 { 1 } else { group }, if q_tiles == 0 { 1 } else { q_tiles });
    let rest = v / group;
    (v % group, rest % q_tiles, rest / q_tiles)
}

/// The slot value that tells a persistent kernel's consumers that no work
/// item is left.
const NO_ITEM: u32 = u32::MAX;

/// The producer's side of a persistent kernel's hand-off ([`Schedule`]):
/// takes work items from the launch's counter until one that `usable`
/// accepts (the grid's blocks past the last head are not), waits until the
/// consumers are done with the last item (`released`, its
/// `handed - 1`-th phase) and writes the item into `slot`, for the
/// consumers to read once the producer's next arrival on its `loaded`
/// barrier completes. None: no item is left; `slot` then holds
/// [`NO_ITEM`], published by an arrival on `loaded`. Each block takes
/// exactly one number past the work, so the last of those is the launch's
/// last take, after which the counter is set back to 0 for the next launch
/// (stream order).
///
/// # Safety
/// One thread of the block calls it, `handed` times before (each time
/// followed by one arrival on `loaded`); `schedule.counter` is a device
/// word only ever accessed atomically, 0 when the launch started; `slot` a
/// 4-byte aligned shared word that only this hand-off uses; `released`
/// completes a phase once every consumer is done with an item.
#[inline(always)]
pub(crate) unsafe fn hand_out_item(
    schedule: Schedule,
    handed: u32,
    loaded: MBarrier,
    released: MBarrier,
    slot: u32,
    usable: impl Fn(u32) -> bool,
) -> Option<u32> {
    // SAFETY: the caller's contract.
    let counter = unsafe { AtomicU32::from_ptr(schedule.counter as *mut u32) };
    loop {
        let v = counter.fetch_add_scoped(1, Scope::Device, Ordering::Relaxed);
        if v < schedule.items && !usable(v) {
            continue;
        }
        if v >= schedule.items && v == schedule.items + thread::gridDim_x() - 1 {
            counter.store_scoped(0, Scope::Device, Ordering::Relaxed);
        }
        if handed > 0 {
            released.wait((handed - 1) & 1);
        }
        let item = if v < schedule.items { v } else { NO_ITEM };
        // SAFETY: every consumer has read the last item (`released`), and
        // none reads the slot again before `loaded` completes.
        unsafe { store_shared(slot, item) };
        if item == NO_ITEM {
            loaded.arrive();
            return None;
        }
        return Some(item);
    }
}

/// The consumers' side of [`hand_out_item`]: the item in `slot`, None when
/// none is left.
///
/// # Safety
/// The producer's arrival on the hand-off's `loaded` barrier that followed
/// its write of `slot` has completed (the caller waited for it), and the
/// caller has not yet released the item.
#[inline(always)]
pub(crate) unsafe fn received_item(slot: u32) -> Option<u32> {
    // SAFETY: the caller's contract.
    let v = unsafe { load_shared(slot) };
    (v != NO_ITEM).then_some(v)
}

/// The (batch·head, query tile) of the forward's block `block` (its
/// blockIdx x, y, z) in a grid `grid_x` wide ([`launch_config`]): heads in
/// groups of `grid_x`, z the group and x the head in it, y the query tile
/// (of `q_tiles`), so that the hardware, which dispatches x fastest, runs
/// every head of a group on one query tile before the next. Causal: the
/// last query tile (the longest rows) first, as it finishes last otherwise.
/// The head may be past the last one (a partial last group).
#[inline(always)]
pub(crate) const fn block_work(block: (u32, u32, u32), grid_x: u32, q_tiles: u32, causal: bool) -> (u32, u32) {
    let (x, y, z) = block;
    (z * grid_x + x, if causal { q_tiles - 1 - y } else { y })
}

/// The kernel's body for head dimension HD (64 or 128; R = HD/2
/// accumulators per thread), P kept in registers (`P_REGS`) or passed
/// through shared memory, CW consumer warpgroups (2 or 3: 64·CW query rows
/// per block), a ring of STAGES K/V stages, (P in registers) the softmax
/// overlapped with the warpgroup's own P·V or not (OVERLAP), and one work
/// item per block or as many as the block takes from `schedule`
/// (PERSISTENT), and (two overlapping warpgroups) the warpgroups taking
/// turns at the tensor cores or not (PING_PONG, [`Tile::ping_pong`]). See
/// the module docs.
#[inline(always)]
fn forward<
    const HD: u32,
    const R: usize,
    const P_REGS: bool,
    const CW: u32,
    const STAGES: u32,
    const OVERLAP: bool,
    const PERSISTENT: bool,
    const PING_PONG: bool,
>(
    map_q: u64,
    map_k: u64,
    map_v: u64,
    shape: Shape,
    schedule: Schedule,
    o: &mut DisjointSlice<u32>,
    lse: &mut DisjointSlice<f32>,
) {
    // Turns alternate between exactly two warpgroups that issue as many
    // products per item: with 128-row blocks and 128-key tiles both read
    // the same KV tiles, causal or not.
    const { assert!(!PING_PONG || (CW == 2 && P_REGS && OVERLAP && BM == BN)) };
    let bm = 64 * CW;
    let boxes = HD / BOX;
    let base = aligned_dynamic_shared();
    let q_tile = base;
    // One K or V tile: `boxes` boxes of BN rows.
    let kv_bytes = boxes * BN * ROW_BYTES;
    let k_tile = |s: u32| base + boxes * bm * ROW_BYTES + s * 2 * kv_bytes;
    let v_tile = |s: u32| k_tile(s) + kv_bytes;
    let p_tile = |wg: u32| k_tile(STAGES) + wg * P_BYTES;
    let bars = if P_REGS { k_tile(STAGES) } else { p_tile(CW) };
    // SAFETY (all six): 8-byte aligned words after the tiles, inside the
    // launch's dynamic shared memory, used only as these barriers.
    let q_full = unsafe { MBarrier::from_address(bars) };
    let k_full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + s)) };
    let v_full = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + STAGES + s)) };
    let k_empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + 2 * STAGES + s)) };
    let v_empty = |s: u32| unsafe { MBarrier::from_address(bars + 8 * (1 + 3 * STAGES + s)) };
    // Persistent only: Q's tile released by every consumer thread, and the
    // work item whose Q the producer loads (`NO_ITEM`: none is left).
    let q_empty = unsafe { MBarrier::from_address(bars + 8 * (1 + 4 * STAGES)) };
    let item_slot = bars + 8 * (2 + 4 * STAGES);
    let q_tiles = shape.seq.div_ceil(bm);
    if !PERSISTENT {
        let (bh, _) = block_work(
            (thread::blockIdx_x(), thread::blockIdx_y(), thread::blockIdx_z()),
            thread::gridDim_x(),
            q_tiles,
            shape.causal,
        );
        // The last group may be partial: its blocks past the last head
        // leave before anything another thread waits for (the barriers'
        // initialisation and `sync_threads` below), all threads of the
        // block alike.
        if bh >= shape.batch_heads {
            return;
        }
    }
    // The (batch·head, query tile) of a work item: the block's own, or
    // item `v` of the persistent schedule (the hardware's dispatch order
    // of the non-persistent grid, [`virtual_block`]).
    let work = |v: u32| {
        let block = if PERSISTENT {
            virtual_block(v, schedule.group, q_tiles)
        } else {
            (thread::blockIdx_x(), thread::blockIdx_y(), thread::blockIdx_z())
        };
        block_work(block, if PERSISTENT { schedule.group } else { thread::gridDim_x() }, q_tiles, shape.causal)
    };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + barrier publish it.
        unsafe {
            q_full.init(1);
            for s in 0..STAGES {
                k_full(s).init(1);
                v_full(s).init(1);
                k_empty(s).init(128 * CW);
                v_empty(s).init(128 * CW);
            }
            if PERSISTENT {
                q_empty.init(128 * CW);
            }
        }
        mbarrier::fence_init();
    }
    thread::sync_threads();

    let all_tiles = shape.seq / BN;
    // KV tiles up to the one that holds `last` (a query), for causal.
    let tiles_to = |last: u32| if shape.causal { (last / BN + 1).min(all_tiles) } else { all_tiles };
    let warp_index = warp::shfl_idx(warp::FULL_MASK, tid / 32, 0);
    // The ring's position of the block's `g`-th KV tile (over all its work
    // items): its stage and the parity of that stage's barriers' phase.
    let stage = |g: u32| g % STAGES;
    let phase = |g: u32| (g / STAGES) & 1;

    if warp_index >= 4 * CW {
        if CW == 2 {
            // 40 + 2·232 = 3·168: the 384-thread block's registers.
            warpgroup::decrease_max_registers::<40>();
        } else {
            // 32 + 3·160 = 4·128: the 512-thread block's.
            warpgroup::decrease_max_registers::<32>();
        }
        if warp_index == 4 * CW && warp::elect_one(warp::FULL_MASK) {
            tma::prefetch_tensor_map(map_q);
            tma::prefetch_tensor_map(map_k);
            tma::prefetch_tensor_map(map_v);
            let mut items = 0u32;
            let mut g = 0u32;
            loop {
                let (bh, qt) = if PERSISTENT {
                    // SAFETY: this lane alone hands out items, `items` so
                    // far, each followed by q_full's arrival below; the
                    // counter is `Attention`'s own word (0 when the launch
                    // starts); q_empty completes once every consumer thread
                    // is done with an item's Q.
                    let item = unsafe { hand_out_item(schedule, items, q_full, q_empty, item_slot, |v| work(v).0 < shape.batch_heads) };
                    let Some(v) = item else { break };
                    work(v)
                } else {
                    if items > 0 {
                        break;
                    }
                    work(0)
                };
                let kv_row0 = bh * shape.seq;
                let q0 = qt * bm;
                let kv_tiles = tiles_to(q0 + bm - 1);
                q_full.arrive_expect_tx(boxes * bm * ROW_BYTES);
                for c in 0..boxes {
                    // SAFETY: valid map (host) with boxes of `bm` rows; the
                    // Q tile is 1024-aligned and free (the first item's, or
                    // released by q_empty); `q_full` expects every box's
                    // bytes (TMA counts the zeros it writes for rows past
                    // the tensor too).
                    unsafe { tma::load_2d(q_tile + c * bm * ROW_BYTES, map_q, q_full, (c * BOX) as i32, (kv_row0 + q0) as i32) };
                }
                // K and V stages are released separately (K once Q·Kᵀ is
                // done, V once P·V is), so K tiles run ahead of the V tiles.
                let mut j = 0;
                while j < kv_tiles {
                    let s = stage(g);
                    let row = (kv_row0 + j * BN) as i32;
                    if g >= STAGES {
                        k_empty(s).wait(phase(g - STAGES));
                    }
                    k_full(s).arrive_expect_tx(kv_bytes);
                    for c in 0..boxes {
                        // SAFETY: valid map; the stage is free (its empty
                        // barrier completed, or it was never used) and
                        // 1024-aligned; the full barrier expects the bytes.
                        unsafe { tma::load_2d(k_tile(s) + c * BN * ROW_BYTES, map_k, k_full(s), (c * BOX) as i32, row) };
                    }
                    if g >= STAGES {
                        v_empty(s).wait(phase(g - STAGES));
                    }
                    v_full(s).arrive_expect_tx(kv_bytes);
                    for c in 0..boxes {
                        // SAFETY: as above.
                        unsafe { tma::load_2d(v_tile(s) + c * BN * ROW_BYTES, map_v, v_full(s), (c * BOX) as i32, row) };
                    }
                    j += 1;
                    g += 1;
                }
                items += 1;
            }
        }
        return;
    }

    // Consumer warpgroup `wg`: query rows 64·wg… of the block's tile. This
    // thread holds rows `r` and `r + 8` of the warpgroup's 64 (wgmma docs).
    if CW == 2 {
        warpgroup::increase_max_registers::<232>();
    } else {
        warpgroup::increase_max_registers::<160>();
    }
    let wg = warp_index / 4;
    let t = tid % 128;
    let lane = t % 32;
    let r = 16 * (t / 32) + lane / 4;
    let q_rows = q_tile + wg * 64 * ROW_BYTES;
    let scale_log2 = if HD == 64 { 0.125 * core::f32::consts::LOG2_E } else { 0.088_388_35 * core::f32::consts::LOG2_E };
    // Ping-pong: each issue of products (a Q·Kᵀ and the P·V before it, or
    // one alone at an item's start and end) is a turn; warpgroup 0 takes
    // the first, warpgroup 1's pass of a turn it never took lets it.
    if PING_PONG && wg == 1 {
        pass_turn(wg);
    }
    let mut items = 0u32;
    // The block's KV tiles before this item's (the ring's position).
    let mut g0 = 0u32;
    loop {
        if !PERSISTENT && items > 0 {
            break;
        }
        q_full.wait(items & 1);
        let (bh, qt) = if PERSISTENT {
            // SAFETY: q_full completed (waited for just above) after the
            // producer wrote the slot; this thread releases the item later.
            let Some(v) = (unsafe { received_item(item_slot) }) else { break };
            work(v)
        } else {
            work(0)
        };
        let kv_row0 = bh * shape.seq;
        // The block's first query (in its head). With 192 rows the last
        // block may run past seq: its Q rows there are the next head's (or
        // TMA's zeros past the tensor), computed like the others and never
        // stored.
        let q0 = qt * bm;
        let kv_tiles = tiles_to(q0 + bm - 1);
        // The warpgroup's first query (in its head); seq is a multiple of
        // 64, so its 64 rows are all in the sequence or all past it.
        let wg_q0 = q0 + 64 * wg;
        // The KV tiles this warpgroup reads: causal, up to the one that
        // holds its last row, one fewer than the block's for warpgroup 0 of
        // three; none for rows past the sequence (the last block of 192).
        let wg_tiles = if wg_q0 >= shape.seq { 0 } else { tiles_to(wg_q0 + 63) };
        // The tiles from `from` on, which the warpgroup does not read: their
        // stages still wait for its arrivals when a later tile of this item
        // or (persistent) of a later item reuses them. Each after its tile
        // has landed, so that it counts for that tile's use of the stage
        // and not an earlier one's. Without persistence the producer only
        // waits for the release of tiles j + STAGES < kv_tiles, which every
        // warpgroup with rows in the sequence reads (STAGES ≥ 2): only a
        // warpgroup without rows releases any.
        let release_skipped = |from: u32| {
            let mut j = from;
            while j < kv_tiles {
                let s = stage(g0 + j);
                k_full(s).wait(phase(g0 + j));
                k_empty(s).arrive();
                v_full(s).wait(phase(g0 + j));
                v_empty(s).arrive();
                j += 1;
            }
        };
        if wg_tiles == 0 {
            if PERSISTENT {
                q_empty.arrive();
            }
            release_skipped(0);
            g0 += kv_tiles;
            items += 1;
            continue;
        }
        let mut acc_o = wgmma::zeroed::<R>();
        let mut acc_s = wgmma::zeroed::<64>();
        let mut st = Softmax { m0: f32::NEG_INFINITY, m1: f32::NEG_INFINITY, l0: 0.0, l1: 0.0 };
        // Tile j needs the causal mask when its last key is past the
        // warpgroup's first row; `limit(j)`: the thread's first row minus
        // the tile's first key.
        let diagonal = |j: u32| shape.causal && (j + 1) * BN - 1 > wg_q0;
        let limit = |j: u32| (wg_q0 + r) as i32 - (j * BN) as i32;
        // S_j = Q·K_jᵀ, waited for, K_j's stage released, and its softmax:
        // (alpha0, alpha1, P_j). Every variant's step begins so.
        macro_rules! scores {
            ($j:expr) => {{
                let j = $j;
                let s = stage(g0 + j);
                k_full(s).wait(phase(g0 + j));
                if PING_PONG {
                    take_turn(wg);
                }
                // SAFETY (this and every issue_* below): the whole
                // warpgroup runs them with the same addresses; their
                // operands are not rewritten and their stages not released
                // before the wait_group that follows.
                unsafe { issue_qk::<HD>(&mut acc_s, q_rows, bm, k_tile(s)) };
                if PING_PONG {
                    pass_turn(wg);
                }
                wgmma::wait_group::<0>();
                k_empty(s).arrive();
                softmax(acc_s, diagonal(j), limit(j), lane, &mut st, scale_log2)
            }};
        }
        if P_REGS && OVERLAP {
            // Software-pipelined (FlashAttention-3's intra-warpgroup
            // overlap): in step j the tensor cores run Q·K_jᵀ and then
            // P_{j-1}·V_{j-1} while the warpgroup waits only for the first,
            // and the softmax of S_j runs during the second. O is rescaled
            // once P_{j-1}·V_{j-1} is done, before P_j·V_j is issued (after
            // Q·K_{j+1}ᵀ's issue instead, as FlashAttention-3 does, measured
            // 0.5–1 % slower on the H100: benches/README.md).
            let (_, _, first) = scores!(0);
            // Step j: Q·K_jᵀ, then P_{j-1}·V_{j-1} with `$p`; returns P_j.
            macro_rules! step {
                ($j:expr, $p:expr) => {{
                    let j = $j;
                    let (s, sp) = (stage(g0 + j), stage(g0 + j - 1));
                    k_full(s).wait(phase(g0 + j));
                    if PING_PONG {
                        take_turn(wg);
                    }
                    unsafe { issue_qk::<HD>(&mut acc_s, q_rows, bm, k_tile(s)) };
                    v_full(sp).wait(phase(g0 + j - 1));
                    unsafe { issue_pv_registers(&mut acc_o, &$p, v_tile(sp)) };
                    if PING_PONG {
                        pass_turn(wg);
                    }
                    // S_j is done (groups complete in order); P·V still runs.
                    wgmma::wait_group::<1>();
                    k_empty(s).arrive();
                    let (alpha0, alpha1, next) = softmax(acc_s, diagonal(j), limit(j), lane, &mut st, scale_log2);
                    wgmma::wait_group::<0>();
                    v_empty(sp).arrive();
                    rescale(&mut acc_o, alpha0, alpha1);
                    next
                }};
            }
            // The last tile's P·V; Q is no longer read.
            macro_rules! last {
                ($p:expr) => {{
                    let sp = stage(g0 + wg_tiles - 1);
                    if PERSISTENT {
                        q_empty.arrive();
                    }
                    v_full(sp).wait(phase(g0 + wg_tiles - 1));
                    if PING_PONG {
                        take_turn(wg);
                    }
                    unsafe { issue_pv_registers(&mut acc_o, &$p, v_tile(sp)) };
                    if PING_PONG {
                        pass_turn(wg);
                    }
                    wgmma::wait_group::<0>();
                    v_empty(sp).arrive();
                }};
            }
            // Two P buffers taking turns: the softmax must not write the
            // registers a P·V in flight reads (ptxas would serialise every
            // wgmma, C7513), which one loop-carried P would (its next value
            // is computed while the last one is being multiplied).
            let mut pa = first;
            let mut j = 1;
            loop {
                if j >= wg_tiles {
                    last!(pa);
                    break;
                }
                let pb = step!(j, pa);
                j += 1;
                if j >= wg_tiles {
                    last!(pb);
                    break;
                }
                pa = step!(j, pb);
                j += 1;
            }
        } else if P_REGS {
            // One tile after the other: S, its softmax and O's rescaling,
            // then P·V, each waited for.
            let mut j = 0;
            while j < wg_tiles {
                let s = stage(g0 + j);
                let (alpha0, alpha1, p) = scores!(j);
                if PERSISTENT && j + 1 == wg_tiles {
                    q_empty.arrive();
                }
                rescale(&mut acc_o, alpha0, alpha1);
                v_full(s).wait(phase(g0 + j));
                // SAFETY: as above.
                unsafe { issue_pv_registers(&mut acc_o, &p, v_tile(s)) };
                wgmma::wait_group::<0>();
                v_empty(s).arrive();
                j += 1;
            }
        } else {
            let p_base = p_tile(wg);
            let c0 = 2 * (lane % 4);
            let mut j = 0;
            while j < wg_tiles {
                let s = stage(g0 + j);
                let (alpha0, alpha1, p) = scores!(j);
                if PERSISTENT && j + 1 == wg_tiles {
                    q_empty.arrive();
                }
                unroll!(full, for i in 0..16u32 {
                    // SAFETY: inside this warpgroup's P tile; each (row,
                    // column pair) belongs to this thread alone, and the last
                    // P·V that read the tile completed (wait_group below, and
                    // the Q·Kᵀ before this point is warpgroup-collective).
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
                v_full(s).wait(phase(g0 + j));
                // SAFETY: as above.
                unsafe { issue_pv_shared(&mut acc_o, p_base, v_tile(s)) };
                wgmma::wait_group::<0>();
                v_empty(s).arrive();
                j += 1;
            }
        }
        if PERSISTENT {
            release_skipped(wg_tiles);
        }
        let Softmax { m0, m1, mut l0, mut l1 } = st;

        // Epilogue: the row sums over the quad, O / l, log-sum-exp.
        l0 += warp::shfl_xor(warp::FULL_MASK, l0, 1);
        l0 += warp::shfl_xor(warp::FULL_MASK, l0, 2);
        l1 += warp::shfl_xor(warp::FULL_MASK, l1, 1);
        l1 += warp::shfl_xor(warp::FULL_MASK, l1, 2);
        // l ≥ 1: the row's maximum contributes 2⁰.
        let (inv0, inv1) = (recip(l0), recip(l1));
        let row = kv_row0 + wg_q0 + r;
        let col = 2 * (lane % 4);
        unroll!(full, for i in 0..R / 4 {
            let top = ((row * HD + col + 8 * i as u32) / 2) as usize;
            let bottom = (((row + 8) * HD + col + 8 * i as u32) / 2) as usize;
            if bottom < o.len() {
                // SAFETY: both indices are below o.len(); the (row, column
                // pair)s of a fragment belong to this thread alone and the
                // work items' and warpgroups' rows are disjoint.
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
        g0 += kv_tiles;
        items += 1;
    }
}


/// Attention forward for head_dim 64 (module docs), [`Tile::M128_S2`].
/// Launch with [`THREADS`] threads, grid (G, seq/128, ⌈batch·heads/G⌉)
/// for a group of G heads ([`launch_config`]), [`shared_bytes`] of dynamic
/// shared memory; the maps have boxes of
/// 64×128 (d × rows) and the 128-byte swizzle.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d64(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 2, 2, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64`] with 3 K/V stages.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d64_m128s3(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 2, 3, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64`] with 4 K/V stages.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d64_m128s4(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 2, 4, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64`] with 192 query rows per block: three consumer
/// warpgroups and the producer, 512 threads, grid (G, ⌈seq/192⌉,
/// ⌈batch·heads/G⌉); the Q map's boxes are 64×192.
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s2(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 2, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64_m192s2`] with 3 K/V stages.
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s3(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 3, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64_m192s2`] with 4 K/V stages.
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s4(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 4, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64_m192s2`] without the overlap of a warpgroup's
/// softmax and its own P·V ([`Tile::overlap`]).
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s2n(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 2, false, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64_m192s3`] without the overlap ([`Tile::overlap`]).
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s3n(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 3, false, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64_m192s3n`], persistent ([`Tile::persistent`]):
/// launch one block per multiprocessor with the [`Schedule`] of
/// [`Attention::launch`].
#[kernel(launch_bounds(512, 1))]
pub fn attention_fwd_d64_m192s3np(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, true, 3, 3, false, true, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// Attention forward for head_dim 128; as [`attention_fwd_d64`].
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 2, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128`] with 3 K/V stages (the most that fit the
/// shared memory at head_dim 128).
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128_m128s3(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 3, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128_m128s3`], persistent ([`Tile::persistent`]):
/// launch one block per multiprocessor with the [`Schedule`] of
/// [`Attention::launch`].
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128_m128s3p(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 3, true, true, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128_m128s3p`] with the consumer warpgroups taking
/// turns ([`Tile::ping_pong`]).
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128_m128s3pt(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 3, true, true, true>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128`] without the overlap ([`Tile::overlap`]).
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128_m128s2n(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 2, false, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128_m128s3`] without the overlap ([`Tile::overlap`]).
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_d128_m128s3n(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, true, 2, 3, false, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d64`] with P passed to P·V through shared memory
/// (128-byte swizzle, [`swizzled_offset`]) instead of registers: the
/// cross-check of [`Variant::SharedP`].
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_smem_d64(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<64, 32, false, 2, 2, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

/// [`attention_fwd_d128`] with P through shared memory.
#[kernel(launch_bounds(384, 1))]
pub fn attention_fwd_smem_d128(map_q: u64, map_k: u64, map_v: u64, shape: Shape, schedule: Schedule, mut o: DisjointSlice<u32>, mut lse: DisjointSlice<f32>) {
    forward::<128, 64, false, 2, 2, true, false, false>(map_q, map_k, map_v, shape, schedule, &mut o, &mut lse);
}

// ---------------------------------------------------------------------------
// Host side: shape check, tensor maps, shared memory, launch shape.

/// The error type of the host functions.
///
/// `Send` and `Sync`, so that a launch can run inside
/// `CudaStream::capture` (which records it into a CUDA graph) or on
/// another thread and hand its error back.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Dynamic shared memory of the kernel for `head_dim`, `tile` and
/// `variant`: the Q tile, the stages' K and V tiles, a P tile per consumer
/// warpgroup ([`Variant::SharedP`] only), the barriers, 1024 bytes of
/// alignment slack.
pub const fn shared_bytes(head_dim: u32, tile: Tile, variant: Variant) -> u32 {
    let boxes = head_dim / BOX;
    let p = match variant {
        Variant::RegisterP => 0,
        Variant::SharedP => tile.consumers * P_BYTES,
    };
    // A persistent kernel's Q-empty barrier and work-item slot.
    let persistent = if tile.persistent { 16 } else { 0 };
    boxes * tile.rows() * ROW_BYTES + tile.stages * 2 * boxes * BN * ROW_BYTES + p + 8 * (1 + 4 * tile.stages) + persistent + 1024
}

/// Whether the kernels support `shape`: head_dim 64 or 128, seq a non-zero
/// multiple of 128 (a ragged last KV tile is not masked: pad the sequence;
/// a block of 192 query rows may run past seq), at least one (batch,
/// head), and every element addressable with 32-bit indices.
pub fn check_shape(shape: Shape) -> Result<(), String> {
    if shape.head_dim != 64 && shape.head_dim != 128 {
        return Err(format!("head_dim must be 64 or 128, not {} ({shape:?})", shape.head_dim));
    }
    if shape.seq == 0 || !shape.seq.is_multiple_of(BN) {
        return Err(format!(
            "seq must be a non-zero multiple of {BN} (the kernels do not mask a ragged last tile; pad the sequence), not {} ({shape:?})",
            shape.seq
        ));
    }
    if shape.batch_heads == 0 || shape.batch_heads > MAX_GRID_YZ {
        return Err(format!(
            "batch·heads must be 1..={MAX_GRID_YZ} (the grid's z counts groups of heads, of one head at worst), not {} ({shape:?})",
            shape.batch_heads
        ));
    }
    if shape.seq / BM > MAX_GRID_YZ {
        return Err(format!(
            "seq must be at most {} (the grid's y counts query tiles, at most {MAX_GRID_YZ}), not {} ({shape:?})",
            MAX_GRID_YZ * BM,
            shape.seq
        ));
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

/// Every forward kernel: head_dim, variant, tile, function name.
const KERNELS: [(u32, Variant, Tile, &str); 17] = [
    (64, Variant::RegisterP, Tile::M128_S2, "attention_fwd_d64"),
    (64, Variant::RegisterP, Tile { consumers: 2, stages: 3, overlap: true, persistent: false, ping_pong: false }, "attention_fwd_d64_m128s3"),
    (64, Variant::RegisterP, Tile { consumers: 2, stages: 4, overlap: true, persistent: false, ping_pong: false }, "attention_fwd_d64_m128s4"),
    (64, Variant::RegisterP, Tile { consumers: 3, stages: 2, overlap: true, persistent: false, ping_pong: false }, "attention_fwd_d64_m192s2"),
    (64, Variant::RegisterP, Tile { consumers: 3, stages: 3, overlap: true, persistent: false, ping_pong: false }, "attention_fwd_d64_m192s3"),
    (64, Variant::RegisterP, Tile { consumers: 3, stages: 4, overlap: true, persistent: false, ping_pong: false }, "attention_fwd_d64_m192s4"),
    (64, Variant::RegisterP, Tile { consumers: 3, stages: 2, overlap: false, persistent: false, ping_pong: false }, "attention_fwd_d64_m192s2n"),
    (64, Variant::RegisterP, Tile::M192_S3N, "attention_fwd_d64_m192s3n"),
    (64, Variant::RegisterP, Tile::M192_S3NP, "attention_fwd_d64_m192s3np"),
    (128, Variant::RegisterP, Tile::M128_S2, "attention_fwd_d128"),
    (128, Variant::RegisterP, Tile::M128_S3, "attention_fwd_d128_m128s3"),
    (128, Variant::RegisterP, Tile::M128_S3P, "attention_fwd_d128_m128s3p"),
    (128, Variant::RegisterP, Tile::M128_S3PT, "attention_fwd_d128_m128s3pt"),
    (128, Variant::RegisterP, Tile { consumers: 2, stages: 2, overlap: false, persistent: false, ping_pong: false }, "attention_fwd_d128_m128s2n"),
    (128, Variant::RegisterP, Tile { consumers: 2, stages: 3, overlap: false, persistent: false, ping_pong: false }, "attention_fwd_d128_m128s3n"),
    (64, Variant::SharedP, Tile::M128_S2, "attention_fwd_smem_d64"),
    (128, Variant::SharedP, Tile::M128_S2, "attention_fwd_smem_d128"),
];

/// Calls macro `$then` with every forward kernel's identifier: the one list
/// from which [`Attention::launch`] dispatches and [`LAUNCHED`] is made (a
/// test checks that it covers [`KERNELS`]).
macro_rules! forward_kernels {
    ($then:ident) => {
        $then!(
            attention_fwd_d64,
            attention_fwd_d64_m128s3,
            attention_fwd_d64_m128s4,
            attention_fwd_d64_m192s2,
            attention_fwd_d64_m192s3,
            attention_fwd_d64_m192s4,
            attention_fwd_d64_m192s2n,
            attention_fwd_d64_m192s3n,
            attention_fwd_d64_m192s3np,
            attention_fwd_d128,
            attention_fwd_d128_m128s3,
            attention_fwd_d128_m128s3p,
            attention_fwd_d128_m128s3pt,
            attention_fwd_d128_m128s2n,
            attention_fwd_d128_m128s3n,
            attention_fwd_smem_d64,
            attention_fwd_smem_d128
        )
    };
}

/// The names of the kernels [`Attention::launch`] can launch.
#[cfg(test)]
const LAUNCHED: &[&str] = {
    macro_rules! names {
        ($($kernel:ident),*) => { &[$(stringify!($kernel)),*] };
    }
    forward_kernels!(names)
};

/// The kernel function name for `head_dim`, `variant` and `tile`, or None
/// where there is no such kernel ([`Tile::available`]).
pub fn kernel_name(head_dim: u32, variant: Variant, tile: Tile) -> Option<&'static str> {
    KERNELS.iter().find(|k| k.0 == head_dim && k.1 == variant && k.2 == tile).map(|k| k.3)
}

/// The launch shape for `shape` (which [`check_shape`] accepted), `tile`
/// and `variant`, with the (batch, head)s in groups of `group` (clamped to
/// 1..=batch·heads; [`Group`]): grid (G, query tiles, ⌈batch·heads/G⌉),
/// which the kernels read as head z·G + x and query tile y. The hardware
/// dispatches x fastest, then y, then z: G = 1 is query tile by query tile
/// of one head, then the next head; a larger G runs a query tile of every
/// head of the group before the next tile. The last group's blocks past
/// batch·heads return at once.
pub fn launch_config(shape: Shape, tile: Tile, variant: Variant, group: u32) -> LaunchConfig {
    let g = group.clamp(1, shape.batch_heads.max(1));
    LaunchConfig {
        grid_dim: (g, shape.seq.div_ceil(tile.rows()), shape.batch_heads.div_ceil(g)),
        block_dim: (tile.threads(), 1, 1),
        shared_mem_bytes: shared_bytes(shape.head_dim, tile, variant),
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
/// 128-byte swizzle and boxes of `box_rows` rows, uploaded to the GPU.
fn upload_map(stream: &CudaStream, tensor: &DeviceBuffer<u16>, shape: Shape, box_rows: u32) -> Result<DeviceBuffer<TensorMap>, Error> {
    let map = TensorMap::matrix_b128(TensorDataType::BF16, tensor.device_ptr(), shape.rows() as u64, shape.head_dim as u64, box_rows)
        .encode()?;
    Ok(map.upload(stream)?)
}

/// One attention problem set up for repeated launches: the shape checked,
/// the tensor maps of Q, K, V encoded and uploaded, the kernel's dynamic
/// shared memory limit raised, the head group chosen ([`Group::Auto`] for
/// the GPU's L2 unless [`Attention::set_group`] says otherwise). It borrows Q, K, V because the tensor maps
/// hold their addresses; each launch reads their current contents.
pub struct Attention<'a> {
    shape: Shape,
    variant: Variant,
    tile: Tile,
    kernel: &'static str,
    maps: [DeviceBuffer<TensorMap>; 3],
    l2_bytes: u64,
    group: u32,
    /// The persistent kernels' work counter; None for the others.
    work: Option<WorkCounter>,
    /// Q, K and V, which the kernels read through the maps.
    inputs: [&'a DeviceBuffer<u16>; 3],
}

/// A persistent kernel's work counter ([`Schedule::counter`]). Each launch
/// leaves it 0 at its end, so a launch must not start before the last one
/// has ended: every launch orders itself as a write of the word
/// ([`DeviceBuffer::order_write`]), which on another stream waits for the
/// last launch (and holds the word's free back until the launch is done),
/// under the lock, so that two threads' launches are ordered one after the
/// other.
pub(crate) struct WorkCounter {
    pub(crate) word: Mutex<DeviceBuffer<u32>>,
    /// The GPU's multiprocessors: the grid of a persistent launch.
    pub(crate) sms: u32,
}

impl WorkCounter {
    /// A zeroed counter on `stream`'s device.
    pub(crate) fn new(stream: &CudaStream) -> Result<WorkCounter, Error> {
        Ok(WorkCounter { word: Mutex::new(DeviceBuffer::zeroed(stream, 1)?), sms: stream.context().multiprocessor_count()? })
    }
}

/// A persistent launch's hold on its [`WorkCounter`], kept until the
/// kernel is queued.
pub(crate) type CounterLock<'w> = MutexGuard<'w, DeviceBuffer<u32>>;

/// The [`Schedule`] of a launch whose non-persistent grid is `config`'s;
/// with a work counter (a persistent kernel), the grid becomes one block
/// per multiprocessor (at most one per item), the counter is ordered as
/// the launch's write on `stream`, and its lock is returned, to be held
/// until the kernel is queued ([`WorkCounter`]).
pub(crate) fn schedule_launch<'w>(
    work: Option<&'w WorkCounter>,
    config: &mut LaunchConfig,
    stream: &CudaStream,
) -> Result<(Schedule, Option<CounterLock<'w>>), Error> {
    let (gx, gy, gz) = config.grid_dim;
    let mut schedule = Schedule { counter: 0, group: gx, items: gx * gy * gz };
    let Some(work) = work else { return Ok((schedule, None)) };
    // The blocks take the grid's blocks as work items, in the order the
    // hardware would dispatch them.
    config.grid_dim = (work.sms.min(schedule.items), 1, 1);
    let mut word = work.word.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    word.order_write(stream)?;
    schedule.counter = word.device_ptr();
    Ok((schedule, Some(word)))
}

/// Orders a launch on `stream` that reads `tensors` through their tensor
/// `maps` (TMA): the launch arguments are addresses, which the typed
/// launch cannot see, so the buffers are ordered here as the launch's
/// reads: it waits for their last writes on other streams, and their later
/// writes and frees (on other streams) wait for it.
pub(crate) fn order_tma_reads(stream: &CudaStream, maps: &[DeviceBuffer<TensorMap>], tensors: &[&DeviceBuffer<u16>]) -> Result<(), Error> {
    for map in maps {
        map.order_read(stream)?;
    }
    for tensor in tensors {
        tensor.order_read(stream)?;
    }
    Ok(())
}

impl<'a> Attention<'a> {
    /// Prepares the forward pass for `q`, `k`, `v` (bf16 bits,
    /// `[batch·heads][seq][head_dim]` row-major) with the default kernel
    /// ([`Variant::RegisterP`], [`Tile::default_for`] the head_dim). Fails
    /// on a shape the kernels do not support ([`check_shape`]), on buffers
    /// shorter than the shape says, and on driver errors.
    pub fn new(
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Attention<'a>, Error> {
        Self::with_kernel(Variant::RegisterP, Tile::default_for(shape.head_dim), module, stream, q, k, v, shape)
    }

    /// As [`Attention::new`], with the kernel `variant` (default tile).
    pub fn with_variant(
        variant: Variant,
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Attention<'a>, Error> {
        let tile = if variant == Variant::RegisterP { Tile::default_for(shape.head_dim) } else { Tile::M128_S2 };
        Self::with_kernel(variant, tile, module, stream, q, k, v, shape)
    }

    /// As [`Attention::new`], with the kernel `variant` and `tile`; fails
    /// where there is no such kernel for the head_dim ([`Tile::available`]).
    #[allow(clippy::too_many_arguments)]
    pub fn with_kernel(
        variant: Variant,
        tile: Tile,
        module: &KernelModule,
        stream: &CudaStream,
        q: &'a DeviceBuffer<u16>,
        k: &'a DeviceBuffer<u16>,
        v: &'a DeviceBuffer<u16>,
        shape: Shape,
    ) -> Result<Attention<'a>, Error> {
        check_shape(shape)?;
        let kernel = kernel_name(shape.head_dim, variant, tile)
            .ok_or_else(|| format!("no {variant:?} kernel with tile {} for head_dim {}", tile.name(), shape.head_dim))?;
        let n = shape.elements();
        for (name, t) in [("Q", q), ("K", k), ("V", v)] {
            if t.len() < n {
                return Err(format!("{name} needs {n} elements for {shape:?}; it has {}", t.len()).into());
            }
        }
        let maps = [upload_map(stream, q, shape, tile.rows())?, upload_map(stream, k, shape, BN)?, upload_map(stream, v, shape, BN)?];
        kernel_function(module, kernel)?.set_max_dynamic_shared_memory(shared_bytes(shape.head_dim, tile, variant))?;
        let l2_bytes = l2_bytes(stream);
        let group = default_group(shape, l2_bytes);
        let work = if tile.persistent {
            Some(WorkCounter::new(stream)?)
        } else {
            None
        };
        Ok(Attention { shape, variant, tile, kernel, maps, l2_bytes, group, work, inputs: [q, k, v] })
    }

    /// Launches from now on with the head group `group` ([`Group::heads`]:
    /// [`Group::Auto`] is [`default_group`] for this shape and the GPU's L2).
    pub fn set_group(&mut self, group: Group) {
        self.group = group.heads(self.shape, default_group(self.shape, self.l2_bytes));
    }

    /// The number of heads per group the launches interleave
    /// ([`launch_config`]).
    pub fn group(&self) -> u32 {
        self.group
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The kernel variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The kernel's tile.
    pub fn tile(&self) -> Tile {
        self.tile
    }

    /// The kernel's function name.
    pub fn kernel_name(&self) -> &'static str {
        self.kernel
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
        let mut config = launch_config(shape, self.tile, self.variant, self.group);
        // The counter's guard is held until the kernel is queued.
        let (schedule, counter) = schedule_launch(self.work.as_ref(), &mut config, stream)?;
        order_tma_reads(stream, &self.maps, &self.inputs)?;
        let (pq, pk, pv) = (self.maps[0].device_ptr(), self.maps[1].device_ptr(), self.maps[2].device_ptr());
        // The kernel whose name `new` looked up in KERNELS.
        macro_rules! launch_by_name {
            ($($kernel:ident),*) => {
                match self.kernel {
                    $(stringify!($kernel) => cuda_launch! { kernel: $kernel, stream: stream, module: module,
                        config: config, args: [pq, pk, pv, shape, schedule, slice_mut(*o), slice_mut(*lse)] }?,)*
                    other => return Err(format!("kernel {other} has no launch").into()),
                }
            };
        }
        forward_kernels!(launch_by_name);
        drop(counter);
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
        assert!(check_shape(Shape { batch_heads: 65535, seq: 128, ..ok }).is_ok());
        let e = check_shape(Shape { batch_heads: 65536, seq: 128, ..ok }).unwrap_err();
        assert!(e.contains("1..=65535"), "{e}");
        // Few enough elements, but more query tiles than the grid's y holds.
        let long = Shape { batch_heads: 1, seq: 65535 * 128, head_dim: 64, causal: true };
        assert!(check_shape(long).is_ok());
        let e = check_shape(Shape { seq: 65536 * 128, ..long }).unwrap_err();
        assert!(e.contains("grid's y"), "{e}");
    }

    #[test]
    fn launch_geometry() {
        let shape = Shape { batch_heads: 3, seq: 1024, head_dim: 128, causal: false };
        let c = launch_config(shape, Tile::M128_S2, Variant::RegisterP, 1);
        assert_eq!(c.grid_dim, (1, 8, 3));
        assert_eq!(c.block_dim, (384, 1, 1));
        // 192 rows: the last block runs past seq.
        let m192 = Tile { consumers: 3, stages: 3, overlap: true, persistent: false, ping_pong: false };
        let c = launch_config(Shape { head_dim: 64, ..shape }, m192, Variant::RegisterP, 1);
        assert_eq!(c.grid_dim, (1, 6, 3));
        assert_eq!(c.block_dim, (512, 1, 1));
        // Groups of 2 of the 3 heads: the second group is partial.
        assert_eq!(launch_config(shape, Tile::M128_S2, Variant::RegisterP, 2).grid_dim, (2, 8, 2));
        // A group of every head; larger ones are clamped, 0 is 1.
        assert_eq!(launch_config(shape, Tile::M128_S2, Variant::RegisterP, 3).grid_dim, (3, 8, 1));
        assert_eq!(launch_config(shape, Tile::M128_S2, Variant::RegisterP, 64).grid_dim, (3, 8, 1));
        assert_eq!(launch_config(shape, Tile::M128_S2, Variant::RegisterP, 0).grid_dim, (1, 8, 3));
        // Every kernel fits the H200's 227 KiB opt-in limit.
        for &(hd, variant, tile, _) in &KERNELS {
            assert!(shared_bytes(hd, tile, variant) <= 227 * 1024, "{hd} {variant:?} {tile:?}");
        }
        // The default kernels' layout: Q, two stages of K and V, two P tiles
        // for SharedP, 9 barriers, the slack.
        assert_eq!(shared_bytes(128, Tile::M128_S2, Variant::SharedP), 32768 + 2 * 65536 + 2 * 16384 + 72 + 1024);
        assert_eq!(shared_bytes(64, m192, Variant::RegisterP), 24576 + 3 * 32768 + 8 * 13 + 1024);
        assert_eq!(Shape { causal: true, ..shape }.flops() * 2.0, shape.flops());
        assert_eq!(shape.flops(), 4.0 * 3.0 * 1024.0 * 1024.0 * 128.0);
    }

    /// The blocks of a launch in the hardware's dispatch order (x fastest,
    /// then y, then z), each as the (head, query tile) the kernel reads from
    /// its indices ([`block_work`]), the blocks past the last head left out.
    fn dispatch_order(shape: Shape, tile: Tile, group: u32) -> Vec<(u32, u32)> {
        let (gx, gy, gz) = launch_config(shape, tile, Variant::RegisterP, group).grid_dim;
        let q_tiles = shape.seq.div_ceil(tile.rows());
        assert_eq!(gy, q_tiles);
        let mut order = Vec::new();
        for z in 0..gz {
            for y in 0..gy {
                for x in 0..gx {
                    let (bh, qt) = block_work((x, y, z), gx, q_tiles, shape.causal);
                    if bh < shape.batch_heads {
                        order.push((bh, qt));
                    }
                }
            }
        }
        order
    }

    #[test]
    fn persistent_items_are_the_grid_in_dispatch_order() {
        for causal in [false, true] {
            for (tile, bh) in [(Tile::M128_S3, 5), (Tile::M192_S3N, 7)] {
                let shape = Shape { batch_heads: bh, seq: 1024, head_dim: 128, causal };
                for group in [1, 2, 3, 100] {
                    let (gx, gy, gz) = launch_config(shape, tile, Variant::RegisterP, group).grid_dim;
                    let taken: Vec<(u32, u32)> = (0..gx * gy * gz)
                        .map(|v| block_work(virtual_block(v, gx, gy), gx, gy, causal))
                        .filter(|&(h, _)| h < bh)
                        .collect();
                    assert_eq!(taken, dispatch_order(shape, tile, group), "{tile:?} causal {causal} group {group}");
                }
            }
        }
    }

    #[test]
    fn head_groups_cover_every_block_once_in_order() {
        let causal = Shape { batch_heads: 5, seq: 512, head_dim: 128, causal: true };
        let tile = Tile::M128_S3;
        // G = 1: the order before groups, each head's tiles (the heaviest
        // first when causal) and then the next head.
        let one: Vec<(u32, u32)> = (0..5).flat_map(|bh| (0..4).rev().map(move |qt| (bh, qt))).collect();
        assert_eq!(dispatch_order(causal, tile, 1), one);
        let plain = Shape { causal: false, ..causal };
        assert_eq!(dispatch_order(plain, tile, 1), (0..5).flat_map(|bh| (0..4).map(move |qt| (bh, qt))).collect::<Vec<_>>());
        // G = 2: heads 0 and 1 tile by tile, heaviest first; then 2 and 3;
        // then head 4 alone (the partial group).
        let two = dispatch_order(causal, tile, 2);
        assert_eq!(&two[..8], &[(0, 3), (1, 3), (0, 2), (1, 2), (0, 1), (1, 1), (0, 0), (1, 0)]);
        assert_eq!(&two[8..10], &[(2, 3), (3, 3)]);
        assert_eq!(&two[16..], &[(4, 3), (4, 2), (4, 1), (4, 0)]);
        // Every G (clamped past batch·heads) launches each block once.
        for g in [1, 2, 3, 4, 5, 6, 100] {
            let mut blocks = dispatch_order(causal, tile, g);
            blocks.sort();
            let want: Vec<(u32, u32)> = (0..5).flat_map(|bh| (0..4).map(move |qt| (bh, qt))).collect();
            assert_eq!(blocks, want, "group {g}");
        }
        // G ≥ batch·heads: all heads' heaviest tiles first.
        assert_eq!(dispatch_order(causal, tile, 100)[..5], [(0, 3), (1, 3), (2, 3), (3, 3), (4, 3)]);
        // 192-row tiles: ⌈seq/192⌉ query tiles per head.
        let m192 = Shape { head_dim: 64, seq: 640, ..causal };
        assert_eq!(dispatch_order(m192, Tile::M192_S3N, 4).len(), 5 * 4);
    }

    #[test]
    fn default_groups_fit_a_share_of_the_l2() {
        let l2 = 48u64 << 20;
        // K and V of a head at seq 2048, head_dim 128: 1 MiB; half the L2
        // holds 24 such heads, and 128 heads in 6 groups need 22 each.
        let shape = Shape { batch_heads: 128, seq: 2048, head_dim: 128, causal: true };
        assert_eq!(default_group(shape, l2), 22);
        // 2 MiB a head: 12 fit; 64 heads in 6 groups of 11.
        assert_eq!(default_group(Shape { batch_heads: 64, seq: 4096, ..shape }, l2), 11);
        // Exactly divisible: 4 MiB a head, 6 fit, 36 heads in 6 groups.
        assert_eq!(default_group(Shape { batch_heads: 36, seq: 8192, ..shape }, l2), 6);
        // Fewer heads than fit: all of them.
        assert_eq!(default_group(Shape { batch_heads: 5, ..shape }, l2), 5);
        // A head larger than the share: one at a time.
        assert_eq!(default_group(Shape { seq: 1 << 20, ..shape }, l2), 1);
        assert_eq!(default_group(shape, 0), 1);
        // Non-causal: one head at a time.
        assert_eq!(default_group(Shape { causal: false, ..shape }, l2), 1);
        // Group::heads: Auto is the pass's default; explicit sizes clamp.
        assert_eq!(Group::Auto.heads(shape, 22), 22);
        assert_eq!(Group::Auto.heads(shape, 1000), 128);
        assert_eq!(Group::Heads(16).heads(shape, 22), 16);
        assert_eq!(Group::Heads(1000).heads(shape, 22), 128);
        assert_eq!(Group::Heads(0).heads(shape, 22), 1);
        assert_eq!(Group::Heads(8).heads(Shape { causal: false, ..shape }, 1), 8);
    }

    #[test]
    fn groups_are_parsed_or_refused() {
        assert_eq!(Group::select(None), Ok(vec![Group::Auto]));
        assert_eq!(Group::select(Some(" ")), Ok(vec![Group::Auto]));
        assert_eq!(Group::select(Some("8")), Ok(vec![Group::Heads(8)]));
        assert_eq!(
            Group::select(Some("1, 8,16,32,auto,8")),
            Ok(vec![Group::Heads(1), Group::Heads(8), Group::Heads(16), Group::Heads(32), Group::Auto])
        );
        for bad in ["0", "-1", "x", "8,,16", "8;16", "1.5", "g8"] {
            let e = Group::select(Some(bad)).unwrap_err();
            assert!(e.contains(GROUP_ENV) && e.contains("not a head group"), "{bad}: {e}");
        }
        let e = Group::select(Some("1,sixteen")).unwrap_err();
        assert!(e.contains("\"sixteen\""), "{e}");
        assert_eq!(Group::Heads(16).name(), "g16");
        assert_eq!(Group::Auto.name(), "gauto");
        for g in [Group::Auto, Group::Heads(3)] {
            assert_eq!(Group::parse(g.name().trim_start_matches('g')), Ok(g));
        }
    }

    #[test]
    fn every_shape_variant_and_tile_has_its_own_kernel() {
        let mut names = Vec::new();
        for hd in [64, 128] {
            for variant in Variant::ALL {
                let tiles = Tile::available(hd, variant);
                assert_eq!(tiles[0], if variant == Variant::RegisterP { Tile::default_for(hd) } else { Tile::M128_S2 });
                for &tile in tiles {
                    names.push(kernel_name(hd, variant, tile).unwrap());
                }
            }
        }
        assert_eq!(names[0], "attention_fwd_d64_m192s3np");
        assert_eq!(names.len(), KERNELS.len());
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KERNELS.len());
        // Every kernel in the table can be launched, and nothing else.
        let mut launched = LAUNCHED.to_vec();
        launched.sort();
        assert_eq!(names, launched);
        assert_eq!(kernel_name(128, Variant::RegisterP, Tile { consumers: 3, stages: 2, overlap: true, persistent: false, ping_pong: false }), None);
        assert_eq!(kernel_name(64, Variant::SharedP, Tile { consumers: 2, stages: 3, overlap: true, persistent: false, ping_pong: false }), None);
        assert_eq!(kernel_name(64, Variant::RegisterP, Tile { consumers: 3, stages: 4, overlap: true, persistent: false, ping_pong: false }), Some("attention_fwd_d64_m192s4"));
        assert_eq!(kernel_name(64, Variant::RegisterP, Tile { consumers: 3, stages: 3, overlap: false, persistent: false, ping_pong: false }), Some("attention_fwd_d64_m192s3n"));
        assert_eq!(kernel_name(128, Variant::RegisterP, Tile::M128_S3P), Some("attention_fwd_d128_m128s3p"));
    }

    #[test]
    fn tiles_are_named_and_selected() {
        for tile in Tile::D64.into_iter().chain(Tile::D128) {
            assert_eq!(Tile::parse(&tile.name()), Some(tile));
        }
        assert_eq!(Tile::M128_S2.name(), "m128s2");
        assert_eq!(Tile::parse("m192"), Some(Tile { consumers: 3, stages: 2, overlap: true, persistent: false, ping_pong: false }));
        assert_eq!(Tile::parse("s3"), Some(Tile { consumers: 2, stages: 3, overlap: true, persistent: false, ping_pong: false }));
        assert_eq!(Tile::parse(" m192s4 "), Some(Tile { consumers: 3, stages: 4, overlap: true, persistent: false, ping_pong: false }));
        assert_eq!(Tile::parse("m192s3n"), Some(Tile { consumers: 3, stages: 3, overlap: false, persistent: false, ping_pong: false }));
        assert_eq!(Tile::parse("m192n"), Some(Tile { consumers: 3, stages: 2, overlap: false, persistent: false, ping_pong: false }));
        assert_eq!(Tile::parse("m128s3p"), Some(Tile::M128_S3P));
        assert_eq!(Tile::parse("m192s3np"), Some(Tile::M192_S3NP));
        assert_eq!(Tile::M192_S3NP.name(), "m192s3np");
        assert_eq!(Tile::parse("m128s3pn"), None);
        assert_eq!(Tile::parse("m128s3pt"), Some(Tile::M128_S3PT));
        assert_eq!(Tile::M128_S3PT.name(), "m128s3pt");
        assert_eq!(Tile::parse("m128s3tp"), None);
        assert_eq!(Tile::parse("m100s2"), None);
        assert_eq!(Tile::parse("x"), None);
        assert_eq!(Tile::parse("m192sx"), None);
        assert_eq!(Tile::select(None, 64), vec![Tile::M192_S3NP]);
        assert_eq!(Tile::select(None, 128), vec![Tile::M128_S3P]);
        assert_eq!(Tile::select(Some("all"), 64), Tile::D64.to_vec());
        assert_eq!(Tile::select(Some("all"), 128), Tile::D128.to_vec());
        assert_eq!(Tile::select(Some("m128s3n,m192s3"), 128), vec![Tile { consumers: 2, stages: 3, overlap: false, persistent: false, ping_pong: false }]);
        let three = vec![
            Tile { consumers: 3, stages: 3, overlap: true, persistent: false, ping_pong: false },
            Tile { consumers: 2, stages: 4, overlap: true, persistent: false, ping_pong: false },
            Tile { consumers: 3, stages: 2, overlap: false, persistent: false, ping_pong: false },
        ];
        assert_eq!(Tile::select(Some("m192s3,s4,m256s2,junk,m192n,s3n"), 64), three);
        // None of them exists at head_dim 128: the default.
        assert_eq!(Tile::select(Some("m192s3,s4"), 128), vec![Tile::M128_S3P]);
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
