//! Stream compaction (CUB's `DeviceSelect` and `DevicePartition`): the
//! elements a predicate or a flag keeps, in their order, and how many.
//!
//! One pass, on the scan's machinery: each block takes the next tile, loads
//! it (16-byte vectors), decides per element, counts what it keeps (each
//! thread's offset within the tile: by default from warp ballots of the
//! bits of its per-vector counts and their population counts, then one
//! barrier for the warps' totals; `rank=scan` in `OXIDE_PRIMS_SELECT`
//! takes the generic block scan of the counts instead, one warp scan per
//! vector), looks back over the preceding tiles' counts (decoupled
//! look-back, as [`scan`](crate::scan)) for the number kept before the tile,
//! and writes its kept elements there: a selection stages each warp's kept
//! elements in shared memory and writes them with consecutive lanes, all
//! the warp's vectors at once for elements of up to 4 bytes and one vector
//! at a time for wider ones ([`Store`]; `store=direct` stores each element
//! from registers, as partitions do).
//! The last tile writes the total. By default blocks of up to
//! [`BOUNDED_THREADS`] run kernels whose registers ptxas fits to
//! [`BOUNDED_BLOCKS`] blocks per multiprocessor (`unbounded` lifts that).
//!
//! [`partition_if`] also writes the rejected elements, after the selected
//! ones, in reverse order (as CUB's `DevicePartition::If`): the output is a
//! permutation of the input.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::select;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let data = DeviceBuffer::from_host(&stream, &[5u32, 12, 7, 30, 1])?;
//! let mut out = DeviceBuffer::<u32>::zeroed(&stream, 5)?;
//! let kept = select::select_if(&module, &stream, &data, &mut out, |x: u32| x > 6)?;
//! assert_eq!(&out.to_host_vec(&stream)?[..kept], [12, 7, 30]);
//! # Ok(())
//! # }
//! ```

use crate::error::check_len;
use crate::knobs;
use crate::op::{Element, Sum};
use crate::scan::{first_lane, tile_config, tile_len, with_look_back, LookBackTuning, Pass, ScanTuning, TileShape, TileStatus, MAX_THREADS, MAX_WARPS};
use crate::temp;
use crate::tile;
use crate::PrimsError;
use core::sync::atomic::AtomicU64;
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, unroll, warp, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// What decides whether an element is kept: a predicate on it ([`If`]) or
/// the flag beside it ([`Flagged`]).
pub trait Selector<T>: Copy + Unpin + 'static {
    /// Whether the kernel reads a flag per element.
    const FLAGS: bool;
    /// Whether `item` (whose flag is `flag`, 0 without flags) is kept.
    fn keep(&self, item: T, flag: u8) -> bool;
}

/// Keeps the elements for which the closure returns `true`.
#[derive(Clone, Copy, Debug)]
pub struct If<P>(pub P);

impl<T, P: Fn(T) -> bool + Copy + Unpin + 'static> Selector<T> for If<P> {
    const FLAGS: bool = false;
    #[inline(always)]
    fn keep(&self, item: T, _flag: u8) -> bool {
        (self.0)(item)
    }
}

/// Keeps the elements whose flag is not zero.
#[derive(Clone, Copy, Debug)]
pub struct Flagged;

impl<T> Selector<T> for Flagged {
    const FLAGS: bool = true;
    #[inline(always)]
    fn keep(&self, _item: T, flag: u8) -> bool {
        flag != 0
    }
}

/// How a tile's threads find their offsets among the tile's kept elements.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Warp ballots of the bits of each thread's per-vector counts and
    /// their population counts below the lane; the warps' totals summed by
    /// every thread from shared memory after one barrier. No shuffles.
    Ballot,
    /// The generic block scan of the counts ([`tile::scan_runs`]): one
    /// warp scan of shuffles per vector, then a warp scan of the warps'
    /// totals.
    Scan,
}

/// The selection's knobs: the tiles and look-back of [`ScanTuning`] and
/// how threads are ranked.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectTuning {
    /// Tiles and look-back.
    pub scan: ScanTuning,
    /// How offsets within a tile are found.
    pub rank: Rank,
    /// Whether blocks of at most [`BOUNDED_THREADS`] threads (with
    /// [`Rank::Ballot`]) run the instance compiled for
    /// [`BOUNDED_BLOCKS`] blocks per multiprocessor: ptxas then fits its
    /// registers to that many blocks (spilling if it must).
    pub bounded: bool,
    /// How kept elements reach memory (ballot ranking, selections only;
    /// partitions store directly).
    pub store: Store,
}

/// How a selection's kept elements reach memory. A knob (`store=` in
/// `OXIDE_PRIMS_SELECT`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// One store per kept element, from registers (`store=direct`).
    Direct,
    /// Through a staging area per warp, one vector of the warp at a time
    /// ([`store_by_warp`], `store=warp`).
    Warp,
    /// Through a staging area per warp that holds all its vectors
    /// ([`store_by_warp_run`], `store=run`): the warp's whole run of kept
    /// elements is written in one pass, so its store instructions each
    /// cover 32 elements and only the run's two ends share sectors with
    /// other warps. Needs `threads · V · 16` bytes of dynamic shared
    /// memory; a shape that needs more than 48 KiB stores by `Warp`.
    Run,
    /// `Run` for elements of at most 4 bytes, `Warp` for wider ones
    /// (`store=auto`, the default): on the H200 the whole run is the faster
    /// of the two for 4-byte elements and the slower for 8-byte ones
    /// (benches/README.md).
    Auto,
}

/// `select_tiles`' `STAGE` values, one per [`Store`].
const STAGE_DIRECT: u8 = 0;
const STAGE_VECTOR: u8 = 1;
const STAGE_RUN: u8 = 2;

/// The dynamic shared memory a launch may take without opting in.
const DEFAULT_SHARED_LIMIT: usize = 48 * 1024;

/// Bytes of the staging area of a whole run ([`Store::Run`]) in tiles of
/// `shape`.
const fn run_area(shape: TileShape) -> usize {
    shape.threads as usize * shape.vectors * 16
}

/// Threads per block of the register-bounded instances (`bounded` in
/// [`SelectTuning`]).
pub const BOUNDED_THREADS: u32 = 256;
/// Blocks per multiprocessor the register-bounded instances are compiled
/// for: all the registers of a multiprocessor over this many blocks of
/// [`BOUNDED_THREADS`].
pub const BOUNDED_BLOCKS: u32 = 4;

impl SelectTuning {
    /// The defaults: [`ScanTuning::SELECT`], ranked by ballots, the
    /// register-bounded instances, stores staged per warp as
    /// [`Store::Auto`] picks (the fastest against CUB on the H200,
    /// benches/README.md).
    pub const DEFAULT: SelectTuning = SelectTuning { scan: ScanTuning::SELECT, rank: Rank::Ballot, bounded: true, store: Store::Auto };

    /// Whether tiles of `shape` run the register-bounded instance.
    const fn bounded_for(&self, shape: TileShape) -> bool {
        self.bounded && shape.threads <= BOUNDED_THREADS
    }

    /// How a selection (or, with `PARTITION`, a partition) of `T` stores
    /// under `self`: [`Store::Auto`] resolved. Partitions store directly
    /// (their rejected elements go from the end); a run's area must fit the
    /// launch's shared memory without opting in.
    const fn store_for<T, const PARTITION: bool>(&self) -> Store {
        let wide = core::mem::size_of::<T>() > 4;
        let fits = run_area(self.scan.shape::<T>()) <= DEFAULT_SHARED_LIMIT;
        match self.store {
            _ if PARTITION => Store::Direct,
            Store::Auto if wide => Store::Warp,
            Store::Run | Store::Auto if !fits => Store::Warp,
            Store::Auto => Store::Run,
            store => store,
        }
    }

    /// Whether a selection (`PARTITION`: a partition) of `T` under `self`
    /// runs the `select_tiles` instance of `vectors` vectors a thread,
    /// ranked by ballots or not, register-bounded or not, storing by
    /// `stage`: with [`DEFAULT`](Self::DEFAULT), the one instance a build
    /// without the `tuning` feature compiles (see the [crate
    /// docs](crate#features)).
    const fn runs_select_instance<T, const PARTITION: bool>(&self, vectors: usize, ballot: bool, bounded: bool, stage: u8) -> bool {
        let shape = self.scan.shape::<T>();
        if shape.vectors != vectors {
            return false;
        }
        match self.rank {
            Rank::Scan => !ballot && stage == STAGE_DIRECT,
            Rank::Ballot => {
                let want = match self.store_for::<T, PARTITION>() {
                    Store::Direct => STAGE_DIRECT,
                    Store::Warp => STAGE_VECTOR,
                    _ => STAGE_RUN,
                };
                ballot && bounded == self.bounded_for(shape) && stage == want
            }
        }
    }

    /// `OXIDE_PRIMS_SELECT` (read once) applied to [`DEFAULT`](Self::DEFAULT).
    pub fn from_env() -> SelectTuning {
        static TUNING: std::sync::OnceLock<SelectTuning> = std::sync::OnceLock::new();
        *TUNING.get_or_init(|| Self::DEFAULT.parse(&knobs::spec("OXIDE_PRIMS_SELECT")))
    }

    /// `self` changed by the comma list `spec`: `rank=ballot|scan`,
    /// `bounded` / `unbounded` (the register-bounded instances for blocks
    /// of at most [`BOUNDED_THREADS`], ranked by ballots),
    /// `store=auto|warp|run|direct` (with ballots), and every item
    /// [`ScanTuning::parse`] takes (unknown items are ignored with a
    /// warning, as there).
    pub fn parse(self, spec: &str) -> SelectTuning {
        let mut t = self;
        let mut rest = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "rank=ballot" => t.rank = Rank::Ballot,
                "rank=scan" => t.rank = Rank::Scan,
                "bounded" => t.bounded = true,
                "unbounded" => t.bounded = false,
                "store=warp" => t.store = Store::Warp,
                "store=run" => t.store = Store::Run,
                "store=direct" => t.store = Store::Direct,
                "store=auto" => t.store = Store::Auto,
                _ => rest.push(item),
            }
        }
        t.scan = t.scan.parse("OXIDE_PRIMS_SELECT", &rest.join(","));
        t
    }
}

/// Bits of a count of kept elements in one vector (0 ..= `lanes`).
#[inline(always)]
const fn count_bits<T>() -> u32 {
    u32::BITS - (tile::lanes::<T>() as u32).leading_zeros()
}

/// The exclusive prefixes, in tile order within the block, of this
/// thread's `V` runs whose counts of kept elements are `runs` (each at
/// most `lanes::<T>()`), and the block's total: [`tile::scan_runs`]'s
/// result, found by ballots. Per vector, one ballot per bit of the counts
/// gives, with the population counts of the lanes below, the kept
/// elements of the warp's vector before this lane; after one barrier every
/// thread sums the warps' totals before its own from shared memory
/// (uniform addresses: broadcasts), so no step waits on a shuffle.
///
/// # Safety
/// All `warps · 32` threads of the block call it (`warps` ≤ `MAX_WARPS`),
/// `slots` holds `warps` u32 of block-shared memory used by nothing else
/// until a barrier after.
#[inline(always)]
unsafe fn ballot_runs<T, const V: usize>(runs: [u32; V], slots: *mut u32, warps: usize) -> ([u32; V], u32) {
    let below = warp::lanemask_lt();
    let mut prefixes = [0u32; V];
    let mut warp_total = 0u32;
    let mut j = 0;
    unroll!(full, while j < V {
        let mut before = 0u32;
        let mut total = 0u32;
        let mut b = 0;
        while b < count_bits::<T>() {
            let set = warp::ballot(warp::FULL_MASK, runs[j] >> b & 1 != 0);
            before += (set & below).count_ones() << b;
            total += set.count_ones() << b;
            b += 1;
        }
        prefixes[j] = warp_total + before;
        warp_total += total;
        j += 1;
    });
    if warps == 1 {
        return (prefixes, warp_total);
    }
    let w = thread::threadIdx_x() as usize / 32;
    if first_lane() {
        // SAFETY: one writer per warp, slot w < warps; read after the barrier.
        unsafe { slots.add(w).write(warp_total) };
    }
    thread::sync_threads();
    let mut warp_prefix = 0u32;
    let mut block_total = 0u32;
    let mut k = 0;
    unroll!(full, while k < MAX_WARPS {
        if k < warps {
            // SAFETY: slot k < warps was written before the barrier.
            let t = unsafe { slots.add(k).read() };
            if k < w {
                warp_prefix += t;
            }
            block_total += t;
        }
        k += 1;
    });
    j = 0;
    unroll!(full, while j < V {
        prefixes[j] += warp_prefix;
        j += 1;
    });
    (prefixes, block_total)
}

/// Writes this thread's kept elements (bit `j · lanes + e` of `keep`: element
/// `e` of vector `j`, whose exclusive prefix in the tile is `prefixes[j]`)
/// to `dst` from `tile_prefix` on, a warp's vector at a time: each lane puts
/// its kept elements at their rank within the warp's vector in the warp's
/// staging area, then the warp writes the vector's run of kept elements
/// out with consecutive lanes at consecutive addresses (whole sectors,
/// where one store per element from registers leaves each warp store
/// instruction a part of every sector it touches). No block barrier: the
/// area is the warp's own.
///
/// # Safety
/// All 32 lanes of the warp call it with the same `tile_prefix`; `stage`
/// is this warp's `32 · lanes` elements of block-shared memory, used by
/// nothing else; `dst` holds the selection (every slot written is the
/// kept element's own, as in the direct store).
#[inline(always)]
unsafe fn store_by_warp<T: Element, const V: usize>(
    dst: *mut T,
    stage: *mut T,
    v: &tile::Vectors<V>,
    keep: u32,
    prefixes: [u32; V],
    tile_prefix: usize,
    lane: usize,
) {
    let lanes = tile::lanes::<T>();
    let mut j = 0;
    unroll!(full, while j < V {
        let mine = keep >> (j * lanes) & ((1u32 << lanes) - 1);
        // The warp's vector keeps the tile's elements start .. end.
        let start = warp::shfl_idx(warp::FULL_MASK, prefixes[j], 0);
        let end = warp::shfl_idx(warp::FULL_MASK, prefixes[j] + mine.count_ones(), 31);
        // SAFETY: the ranks from prefixes[j] - start on stay below
        // end - start <= 32 · lanes: inside the warp's area.
        unsafe { stage_kept::<T, V>(stage, v, j, mine, (prefixes[j] - start) as usize) };
        warp::sync_warp(warp::FULL_MASK);
        let total = (end - start) as usize;
        let base = tile_prefix + start as usize;
        let mut q = 0;
        while q < lanes {
            let p = q * 32 + lane;
            if p < total {
                // SAFETY: slot p of the area was written before the warp's
                // barrier; base + p is the p-th kept element's own slot.
                unsafe { dst.add(base + p).write(stage.add(p).read()) };
            }
            q += 1;
        }
        // The next vector reuses the area.
        warp::sync_warp(warp::FULL_MASK);
        j += 1;
    });
}

/// Puts this lane's kept elements of vector `j` (bit `e` of `mine`: its
/// element `e`) at ranks `first`, `first + 1`, … of the warp's staging
/// area, in order.
///
/// # Safety
/// `stage` holds `first + mine.count_ones()` elements, which no other lane
/// writes.
#[inline(always)]
unsafe fn stage_kept<T: Element, const V: usize>(stage: *mut T, v: &tile::Vectors<V>, j: usize, mine: u32, first: usize) {
    let lanes = tile::lanes::<T>();
    let mut r = first;
    let mut e = 0;
    while e < lanes {
        if mine >> e & 1 != 0 {
            // SAFETY: r < first + mine.count_ones(): the caller's promise.
            unsafe { stage.add(r).write(tile::get::<T, V>(v, j * lanes + e)) };
            r += 1;
        }
        e += 1;
    }
}

/// [`store_by_warp`] for all `V` vectors at once: the warp's vectors are
/// consecutive pieces of the tile, so its kept elements are one run of the
/// output, from the first lane's prefix of vector 0 to the last lane's end
/// of vector `V - 1`. Each lane puts its kept elements at their rank within
/// that run in the warp's staging area, then the warp writes the run out,
/// 32 consecutive elements a store, as many stores as the run needs (one
/// per 32 kept elements, where `store_by_warp` issues `lanes` per vector,
/// kept or not). No block barrier: the area is the warp's own.
///
/// # Safety
/// As [`store_by_warp`], with `stage` this warp's `V · 32 · lanes`
/// elements of block-shared memory.
#[inline(always)]
unsafe fn store_by_warp_run<T: Element, const V: usize>(
    dst: *mut T,
    stage: *mut T,
    v: &tile::Vectors<V>,
    keep: u32,
    prefixes: [u32; V],
    tile_prefix: usize,
    lane: usize,
) {
    let lanes = tile::lanes::<T>();
    let lane_mask = (1u32 << lanes) - 1;
    let last = keep >> ((V - 1) * lanes) & lane_mask;
    // The warp keeps the tile's elements start .. end.
    let start = warp::shfl_idx(warp::FULL_MASK, prefixes[0], 0);
    let end = warp::shfl_idx(warp::FULL_MASK, prefixes[V - 1] + last.count_ones(), 31);
    let mut j = 0;
    unroll!(full, while j < V {
        let mine = keep >> (j * lanes) & lane_mask;
        // SAFETY: the ranks from prefixes[j] - start on stay below
        // end - start <= V · 32 · lanes: inside the warp's area.
        unsafe { stage_kept::<T, V>(stage, v, j, mine, (prefixes[j] - start) as usize) };
        j += 1;
    });
    warp::sync_warp(warp::FULL_MASK);
    let total = (end - start) as usize;
    let base = tile_prefix + start as usize;
    // The same for every lane: the warp's stores stay converged.
    let rounds = total.div_ceil(32);
    let mut q = 0;
    while q < rounds {
        let p = q * 32 + lane;
        if p < total {
            // SAFETY: slot p of the area was written before the warp's
            // barrier; base + p is the p-th kept element's own slot.
            unsafe { dst.add(base + p).write(stage.add(p).read()) };
        }
        q += 1;
    }
}

/// One tile of a selection (`PARTITION`: the rejected elements too, from
/// the end backwards), in the scan's tile layout (`src/tile.rs`), `V`
/// vectors per thread (at most 32 elements: one bit each); `BALLOT`: ranked
/// by [`Rank::Ballot`], else by [`Rank::Scan`]; `STAGE` (selections with
/// `BALLOT`): stored directly ([`Store::Direct`]), by `store_by_warp`
/// ([`Store::Warp`]) or by `store_by_warp_run` in the launch's dynamic
/// shared memory ([`Store::Run`], `threads · V · 16` bytes); compiled for blocks of at
/// most `MAX_T` threads, `MIN_B` of them per multiprocessor (0: no bound
/// on the registers).
/// Launched like [`scan_tiles`](crate::scan::scan_tiles); `count[0]`
/// receives the number kept.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(MAX_T, MIN_B))]
pub fn select_tiles<
    T: Element,
    S: Selector<T>,
    const PARTITION: bool,
    const V: usize,
    const BALLOT: bool,
    const STAGE: u8,
    const MAX_T: u32,
    const MIN_B: u32,
>(
    input: &[T],
    flags: &[u8],
    select: S,
    mut out: DisjointSlice<T>,
    mut count: DisjointSlice<u64>,
    status: &[AtomicU64],
    tuning: LookBackTuning,
    pass: Pass,
) {
    shared! { static COUNTS: [u32; MAX_WARPS + 1]; }
    shared! { static TILE: [u32; 1]; }
    let tiles = TileStatus::<u32>::new(status, tuning, pass);
    let tid = thread::threadIdx_x() as usize;
    let (warp_index, lane) = (tid / 32, tid % 32);
    // SAFETY: all threads are here; TILE serves nothing else.
    let tile = unsafe { tiles.block_tile(TILE.as_mut_ptr()) };
    let threads = thread::blockDim_x() as usize;
    tuning.prefetch_ahead::<T, V>(input, tile, threads);
    let n = input.len();
    let lanes = tile::lanes::<T>();
    let tile_len = threads * tile::items::<T, V>();
    let tile_start = tile * tile_len;
    let full = tile_start + tile_len <= n;
    // SAFETY: the input is a DeviceBuffer's (16-byte aligned).
    let v = unsafe { tile::load::<T, V>(input, tile_start, warp_index, lane, full, T::default()) };
    // The host launches only the instances whose items fit the bits of
    // `keep` (`tile::with_vectors!`); the others exist but never run.
    debug_assert!(tile::items::<T, V>() <= 32);
    // Bit k: element k of this thread is kept.
    let mut keep = 0u32;
    let mut runs = [0u32; V];
    let mut j = 0;
    unroll!(full, while j < V {
        let first = tile::vector_start::<T, V>(tile_start, warp_index, lane, j);
        let mut e = 0;
        while e < lanes {
            let i = first + e;
            let flag = if S::FLAGS { flags.get(i).copied().unwrap_or(0) } else { 0 };
            if (full || i < n) && select.keep(tile::get::<T, V>(&v, j * lanes + e), flag) {
                keep |= 1 << (j * lanes + e);
                runs[j] += 1;
            }
            e += 1;
        }
        j += 1;
    });
    let slots = COUNTS.as_mut_ptr();
    // SAFETY: COUNTS holds MAX_WARPS + 1 u32, the launch at most MAX_WARPS
    // warps (the host's shapes); all threads are here; the
    // last slot is written only after the scan's barrier.
    let (run_prefixes, tile_kept) = if BALLOT {
        unsafe { ballot_runs::<T, V>(runs, slots, threads / 32) }
    } else {
        unsafe { tile::scan_runs::<u32, Sum, V>(runs, Sum, slots, threads / 32) }
    };
    let prefix_slot = unsafe { slots.add(MAX_WARPS) };
    if tid < 32 {
        // SAFETY: this block's tile; with `block_order` (the default)
        // blocks start in index order, else tile numbers come from the
        // counter in start order.
        let prefix = unsafe { tiles.tile_prefix(tile, tile_kept, Sum) };
        if first_lane() {
            // SAFETY: one writer; read by all after the barrier below.
            unsafe { prefix_slot.write(prefix) };
        }
    }
    thread::sync_threads();
    // SAFETY: written before the barrier.
    let tile_prefix = unsafe { prefix_slot.read() } as usize;
    let dst = out.as_mut_ptr();
    j = 0;
    if STAGE == STAGE_RUN && BALLOT && !PARTITION {
        // SAFETY: every lane of every warp is here; the launch provides
        // `threads · V · 16` bytes (16-byte aligned), of which slice
        // `warp_index` (V warp vectors) is this warp's alone; the prefixes
        // are the tile's exclusive ones.
        unsafe {
            let (area, _) = cuda_device::dynamic_shared::<T>();
            let stage = area.add(warp_index * V * 32 * lanes);
            store_by_warp_run::<T, V>(dst, stage, &v, keep, run_prefixes, tile_prefix, lane);
        }
        j = V;
    } else if STAGE == STAGE_VECTOR && BALLOT && !PARTITION {
        // A warp's 32 vectors of 16 bytes.
        shared! { static STAGE_AREA: [u64; MAX_WARPS * 64]; }
        // SAFETY: every lane of every warp is here; the area's slice
        // `warp_index` is this warp's alone (warp_index < MAX_WARPS), 8-byte
        // aligned; the prefixes are the tile's exclusive ones.
        unsafe {
            let stage = (STAGE_AREA.as_mut_ptr() as *mut T).add(warp_index * 32 * lanes);
            store_by_warp::<T, V>(dst, stage, &v, keep, run_prefixes, tile_prefix, lane);
        }
        j = V;
    }
    unroll!(full, while j < V {
        let first = tile::vector_start::<T, V>(tile_start, warp_index, lane, j);
        let mut selected = tile_prefix + run_prefixes[j] as usize;
        let mut e = 0;
        while e < lanes {
            let i = first + e;
            let k = j * lanes + e;
            if full || i < n {
                if keep >> k & 1 != 0 {
                    // SAFETY: `selected` (elements kept before element i)
                    // is unique to element i and below the number kept <= n
                    // = out.len().
                    unsafe { dst.add(selected).write(tile::get::<T, V>(&v, k)) };
                    selected += 1;
                } else if PARTITION {
                    // SAFETY: i - selected rejected elements lie before
                    // element i: its slot from the end is unique and in bounds.
                    unsafe { dst.add(n - 1 - (i - selected)).write(tile::get::<T, V>(&v, k)) };
                }
            }
            e += 1;
        }
        j += 1;
    });
    if tid == 0 && tile + 1 == thread::gridDim_x() as usize && !count.is_empty() {
        // SAFETY: one thread of the last tile writes the count.
        unsafe { *count.get_unchecked_mut(0) = (tile_prefix + tile_kept as usize) as u64 };
    }
}

#[allow(clippy::too_many_arguments)]
fn run<T: Element, S: Selector<T>, const PARTITION: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
    select: S,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    select_tuning: &SelectTuning,
    what: &'static str,
) -> Result<(), PrimsError> {
    check_len(what, input.len(), out.len())?;
    check_len("select: count", 1, count.len())?;
    let n = input.len();
    if n >= u32::MAX as usize {
        return Err(PrimsError::TooLarge { what, len: n, max: u32::MAX as usize - 1 });
    }
    if n == 0 {
        count.memset(stream, 0)?;
        return Ok(());
    }
    debug_assert_eq!(input.device_ptr() % 16, 0);
    let tuning = select_tuning.scan;
    let shape = tuning.shape::<T>();
    let tiles = n.div_ceil(tile_len::<T>(shape));
    let look_back: LookBackTuning = tuning.look_back_for::<T>(stream, tiles, n)?;
    let config = tile_config(tiles, shape);
    let bounded = select_tuning.bounded_for(shape);
    let store = select_tuning.store_for::<T, PARTITION>();
    let run_bytes = run_area(shape);
    let run_config = LaunchConfig { shared_mem_bytes: run_bytes as u32, ..config };
    with_look_back::<u32>(module, stream, tiles, &tuning, what, |words, pass| {
        let status = words.as_atomic::<AtomicU64>();
        // Only the default's instance without the `tuning` feature: a
        // branch on a constant is not compiled into the instances it
        // cannot reach.
        macro_rules! compiled {
            ($v:literal, $ballot:literal, $bounded:literal, $stage:expr) => {
                knobs::EVERY_INSTANCE || SelectTuning::DEFAULT.runs_select_instance::<T, PARTITION>($v, $ballot, $bounded, $stage)
            };
        }
        macro_rules! launch_bounded {
            ($v:literal, $stage:expr, $config:expr) => {
                if const { compiled!($v, true, true, $stage) } {
                    cuda_launch! {
                        kernel: select_tiles::<T, S, PARTITION, $v, true, { $stage }, BOUNDED_THREADS, BOUNDED_BLOCKS>,
                        stream: stream, module: module, config: $config,
                        args: [slice(*input), slice(*flags), select, slice_mut(*out), slice_mut(*count), status, look_back, pass]
                    }?
                } else {
                    return Err(knobs::not_compiled(what));
                }
            };
        }
        macro_rules! launch_ballot {
            ($v:literal, $stage:expr, $config:expr) => {
                if const { compiled!($v, true, false, $stage) } {
                    cuda_launch! {
                        kernel: select_tiles::<T, S, PARTITION, $v, true, { $stage }, { MAX_THREADS as u32 }, 0>, stream: stream, module: module, config: $config,
                        args: [slice(*input), slice(*flags), select, slice_mut(*out), slice_mut(*count), status, look_back, pass]
                    }?
                } else {
                    return Err(knobs::not_compiled(what));
                }
            };
        }
        macro_rules! launch_scan {
            ($v:literal) => {
                if const { compiled!($v, false, false, STAGE_DIRECT) } {
                    cuda_launch! {
                        kernel: select_tiles::<T, S, PARTITION, $v, false, STAGE_DIRECT, { MAX_THREADS as u32 }, 0>, stream: stream, module: module, config: config,
                        args: [slice(*input), slice(*flags), select, slice_mut(*out), slice_mut(*count), status, look_back, pass]
                    }?
                } else {
                    return Err(knobs::not_compiled(what));
                }
            };
        }
        macro_rules! launch_bounded_direct {
            ($v:literal) => {
                launch_bounded!($v, STAGE_DIRECT, config)
            };
        }
        macro_rules! launch_bounded_vector {
            ($v:literal) => {
                launch_bounded!($v, STAGE_VECTOR, config)
            };
        }
        macro_rules! launch_bounded_run {
            ($v:literal) => {
                launch_bounded!($v, STAGE_RUN, run_config)
            };
        }
        macro_rules! launch_ballot_direct {
            ($v:literal) => {
                launch_ballot!($v, STAGE_DIRECT, config)
            };
        }
        macro_rules! launch_ballot_vector {
            ($v:literal) => {
                launch_ballot!($v, STAGE_VECTOR, config)
            };
        }
        macro_rules! launch_ballot_run {
            ($v:literal) => {
                launch_ballot!($v, STAGE_RUN, run_config)
            };
        }
        match (select_tuning.rank, bounded, store) {
            (Rank::Ballot, true, Store::Direct) => crate::tile::with_vectors!(T, shape.vectors, launch_bounded_direct),
            (Rank::Ballot, true, Store::Warp) => crate::tile::with_vectors!(T, shape.vectors, launch_bounded_vector),
            (Rank::Ballot, true, Store::Run) => crate::tile::with_vectors!(T, shape.vectors, launch_bounded_run),
            (Rank::Ballot, false, Store::Direct) => crate::tile::with_vectors!(T, shape.vectors, launch_ballot_direct),
            (Rank::Ballot, false, Store::Warp) => crate::tile::with_vectors!(T, shape.vectors, launch_ballot_vector),
            (Rank::Ballot, false, Store::Run) => crate::tile::with_vectors!(T, shape.vectors, launch_ballot_run),
            (Rank::Scan, ..) => crate::tile::with_vectors!(T, shape.vectors, launch_scan),
            (Rank::Ballot, _, Store::Auto) => unreachable!("`store` resolves Store::Auto"),
        }
        Ok(())
    })
}

/// Elements of `T` per tile of a selection under the tuning in force (the
/// boundaries a test must cover). A test hook.
#[doc(hidden)]
pub fn tile_elements<T>() -> usize {
    tile_len::<T>(SelectTuning::from_env().scan.shape::<T>())
}

/// The number in `count` read back (synchronises `stream`).
fn read_count(stream: &CudaStream, count: &DeviceBuffer<u64>) -> Result<usize, PrimsError> {
    Ok(count.to_host_vec(stream)?[0] as usize)
}

/// The elements of `input` for which `predicate` holds, in order, at the
/// start of `out` (as long as `input`), and their number in `count[0]`;
/// nothing is synchronised.
pub fn select_if_into<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    predicate: P,
) -> Result<(), PrimsError> {
    let no_flags = temp::zeroed::<u8>(stream, 0)?;
    run::<T, If<P>, false>(module, stream, input, &no_flags, If(predicate), out, count, &SelectTuning::from_env(), "select_if: output")
}

/// [`select_if_into`] under `tuning` instead of the one in force: a test
/// hook, so that a test reaches the paths the default does not take (the
/// tile counter, `ticket`) in the same process. Only with the `tuning`
/// feature (see the [crate docs](crate#features)).
#[doc(hidden)]
#[cfg(feature = "tuning")]
pub fn select_if_into_with_tuning<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    predicate: P,
    tuning: &SelectTuning,
) -> Result<(), PrimsError> {
    let no_flags = temp::zeroed::<u8>(stream, 0)?;
    run::<T, If<P>, false>(module, stream, input, &no_flags, If(predicate), out, count, tuning, "select_if: output")
}

/// [`select_if_into`], returning the number selected (synchronises `stream`).
pub fn select_if<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    predicate: P,
) -> Result<usize, PrimsError> {
    let mut count = temp::scratch::<u64>(stream, 1)?;
    select_if_into(module, stream, input, out, &mut count, predicate)?;
    read_count(stream, &count)
}

/// The elements of `input` whose flag in `flags` (same length) is not
/// zero, in order, at the start of `out`; returns their number
/// (synchronises `stream`).
pub fn select_flagged<T: Element>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
    out: &mut DeviceBuffer<T>,
) -> Result<usize, PrimsError> {
    check_len("select_flagged: flags", input.len(), flags.len())?;
    let mut count = temp::scratch::<u64>(stream, 1)?;
    run::<T, Flagged, false>(module, stream, input, flags, Flagged, out, &mut count, &SelectTuning::from_env(), "select_flagged: output")?;
    read_count(stream, &count)
}

/// Partitions `input` into `out` (same length): the elements for which
/// `predicate` holds first, in order, then the others in reverse order;
/// returns the number of the first (synchronises `stream`).
pub fn partition_if<T: Element, P: Fn(T) -> bool + Copy + Unpin + 'static>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    predicate: P,
) -> Result<usize, PrimsError> {
    let no_flags = temp::zeroed::<u8>(stream, 0)?;
    let mut count = temp::scratch::<u64>(stream, 1)?;
    run::<T, If<P>, true>(module, stream, input, &no_flags, If(predicate), out, &mut count, &SelectTuning::from_env(), "partition_if: output")?;
    read_count(stream, &count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_parses_rank_and_passes_the_rest_on() {
        assert_eq!(SelectTuning::DEFAULT.parse("").rank, Rank::Ballot);
        let t = SelectTuning::DEFAULT.parse("rank=scan, threads=128,vectors=8,ticket,block-order");
        assert_eq!(t.rank, Rank::Scan);
        assert_eq!(t.scan.narrow.threads, 128);
        assert_eq!(t.scan.narrow.vectors, 8);
        assert!(t.scan.look_back.block_order);
        assert_eq!(t.scan.wide, ScanTuning::SELECT.wide);
        assert_eq!(SelectTuning::DEFAULT.parse("rank=scan,rank=ballot").rank, Rank::Ballot);
        // An unknown rank is ignored (with a warning), as unknown items are.
        assert_eq!(SelectTuning::DEFAULT.parse("rank=other").rank, Rank::Ballot);
        assert!(SelectTuning::DEFAULT.parse("").bounded);
        assert!(!SelectTuning::DEFAULT.parse("unbounded").bounded);
        assert!(SelectTuning::DEFAULT.parse("unbounded,bounded,threads=256").bounded);
        assert!(!SelectTuning::DEFAULT.parse("bounded,unbounded").bounded);
        assert_eq!(SelectTuning::DEFAULT.parse("").store, Store::Auto);
        assert_eq!(SelectTuning::DEFAULT.parse("store=warp,store=auto").store, Store::Auto);
        assert_eq!(SelectTuning::DEFAULT.parse("store=direct").store, Store::Direct);
        assert_eq!(SelectTuning::DEFAULT.parse("store=direct,store=warp").store, Store::Warp);
        assert_eq!(SelectTuning::DEFAULT.parse("store=run").store, Store::Run);
        assert_eq!(SelectTuning::DEFAULT.parse("store=run,store=direct").store, Store::Direct);
    }

    #[test]
    fn count_bits_hold_a_vector_count() {
        assert_eq!(count_bits::<u32>(), 3);
        assert_eq!(count_bits::<u64>(), 2);
    }
}
