//! Device-wide inclusive and exclusive scan (CUB's `DeviceScan`), in one
//! pass over the data: decoupled look-back.
//!
//! The input is cut into tiles of a block of threads × a few 16-byte
//! vectors per thread (by default 128 threads × 32 four-byte elements,
//! 256 threads × 16 eight-byte ones, the fastest measured; see
//! `ScanTuning`). Block `b` takes tile `b` (a grid's blocks start in
//! index order, on the GPU as in the emulators, so a tile's predecessors
//! belong to blocks that already run; CUB's scan relies on the same
//! order), loads its tile with coalesced 16-byte vector loads
//! (warp-striped: each thread holds four runs of consecutive elements, see
//! `src/tile.rs`), scans it (each run in order, one warp scan per
//! run, or with the `runs=shared` / `wide-runs=shared` knob one warp scan
//! per thread over runs staged in shared memory, see `RunScan`; then a
//! block scan of the warps' totals), and publishes the tile's total with a
//! flag: *partial* (the tile alone), as soon as it is known, before the
//! elements' results within the tile are computed. Its first warp then
//! looks back over the preceding tiles, 64 at a time, combining partial
//! totals until it meets a tile flagged *inclusive* (its total includes
//! everything before it), waiting only for the tiles after the nearest
//! inclusive one (a late tile before it does not hold the look-back up);
//! it publishes its own inclusive total and every thread adds the prefix
//! to its results. Each element is read once and written once (a
//! reduce-then-scan design reads it twice); a tile waits only for the
//! flags of its predecessors, not for their whole work.
//!
//! A tile's flag and total share one 64-bit word (two for 8-byte
//! elements), published with one relaxed device-scope store and read with
//! one relaxed load (cuda-device's scoped atomics): a reader that sees a
//! flag sees the total stored with it, so neither side needs a fence or a
//! second, dependent load (the layout is in `TileStatus`, src/scan.rs).
//!
//! The operator must be associative; it need not be commutative (the order
//! of the elements is kept). The exclusive scan starts from
//! `op.identity()` (0 for [`Sum`](crate::op::Sum), like CUB's
//! `ExclusiveSum`).
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::{op::Sum, scan};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let data = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4])?;
//! let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
//! scan::inclusive_scan(&module, &stream, &data, &mut out, Sum)?;
//! assert_eq!(out.to_host_vec(&stream)?, [1, 3, 6, 10]);
//! scan::exclusive_scan(&module, &stream, &data, &mut out, Sum)?;
//! assert_eq!(out.to_host_vec(&stream)?, [0, 1, 3, 6]);
//! # Ok(())
//! # }
//! ```

use crate::block::raw_exclusive_scan_warps_of;
use crate::error::check_len;
use crate::knobs;
use crate::op::{Element, ReduceOp};
use crate::temp;
use crate::tile::{self, from_bits, to_bits};
use crate::warp;
use crate::PrimsError;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};
use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig, TempBuffer};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::warp::{self as dw, FULL_MASK};
use cuda_device::{arch, kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// The most threads per block of the scan and select kernels (the size of
/// their shared arrays of warp totals).
pub(crate) const MAX_THREADS: usize = 384;

/// Warps per block at most.
pub(crate) const MAX_WARPS: usize = MAX_THREADS / 32;

/// A tile's flag: nothing published yet.
pub(crate) const INVALID: u32 = 0;
/// The tile's own total is published.
pub(crate) const PARTIAL: u32 = 1;
/// The total of the tile and all before it is published.
pub(crate) const INCLUSIVE: u32 = 2;

/// Predecessors each lane of the look-back warp reads per window. The
/// window's loads are issued together, so one poll round trip covers
/// [`WINDOW`] tiles. A look-back that finds no inclusive tile in its window
/// needs another round trip; the look-backs of a running scan keep up with
/// the tiles only while fewer than a window of tiles start per round trip,
/// and a wider window raises that bound at the price of one more load per
/// lane.
pub(crate) const TILES_PER_LANE: usize = 2;

/// Tiles read per look-back window (32 lanes × [`TILES_PER_LANE`]).
pub(crate) const WINDOW: usize = 32 * TILES_PER_LANE;

/// 64-bit status words per tile for elements of `T`: one for 4-byte
/// elements, two for 8-byte ones.
#[inline(always)]
pub(crate) const fn words_per_tile<T>() -> usize {
    core::mem::size_of::<T>() / 4
}

/// How the blocks of a look-back pass find their tile and wait for their
/// predecessors. Part of the measurement knob [`ScanTuning`]; the
/// default takes tiles in block order, as CUB does (the tile counter's
/// atomic and barrier before the first load measured 0.01–0.02 of CUB's
/// time at 2^28 elements and 0.08–0.14 at 2^22 on the H200,
/// benches/README.md), waits between polls as long as CUB does, which an
/// H200 run measured faster than polling at once, and waits only for the
/// flags that can change the result.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookBackTuning {
    /// Nanoseconds to sleep (`nanosleep`) between two polls of a window
    /// whose flags are not all published; 0: poll again at once.
    pub poll_delay_ns: u32,
    /// Nanoseconds to sleep after publishing the tile's partial total,
    /// before the first poll (giving the nearest predecessors time to
    /// publish); 0: none.
    pub first_poll_delay_ns: u32,
    /// Take tile `blockIdx.x` (the default) instead of the next number of
    /// the tile counter (`ticket` in the knob). Saves an atomic and a
    /// barrier before the loads, and relies on the blocks of a grid
    /// starting in index order, as CUB's look-back does: NVIDIA GPUs and
    /// both of oxide's emulators start them so (a block waiting for a
    /// predecessor that never started would wait for ever). The ticket
    /// needs no such order: whatever order blocks start in, a tile's
    /// predecessors were taken by blocks that already run.
    pub block_order: bool,
    /// Wait for every tile of a window to be published (as CUB does)
    /// instead of only for those after the nearest inclusive one.
    pub wait_all: bool,
    /// As a block starts its tile, its threads ask L2 for the input of the
    /// tile this many further on ([`tile::prefetch`]; 0: none), so that
    /// DRAM keeps reading while the blocks on the multiprocessors wait on
    /// their look-backs. Set per launch from the tuning's distance per
    /// multiprocessor ([`ScanTuning::prefetch_tiles`]).
    pub prefetch_tiles: u32,
    /// Bytes between two addresses a thread asks L2 for (32, 64 or 128):
    /// how much one request is trusted to fetch ([`ScanTuning::prefetch_step`]);
    /// or [`PREFETCH_BULK`]: one request for the whole tile.
    pub prefetch_step: u32,
}

/// The waits of the default tuning, CUB's: a predecessor that has not
/// published yet is usually an L2 round trip or two away.
const DEFAULT_POLL_DELAY_NS: u32 = 650;
const DEFAULT_FIRST_POLL_DELAY_NS: u32 = 1200;

impl Default for LookBackTuning {
    fn default() -> LookBackTuning {
        LookBackTuning {
            poll_delay_ns: DEFAULT_POLL_DELAY_NS,
            first_poll_delay_ns: DEFAULT_FIRST_POLL_DELAY_NS,
            block_order: true,
            wait_all: false,
            prefetch_tiles: 0,
            prefetch_step: DEFAULT_PREFETCH_STEP,
        }
    }
}

impl LookBackTuning {
    /// Applies one look-back item of a tuning knob (`delay=NS`,
    /// `first=NS`, `block-order`, `ticket`, `wait=all|nearest`); false if
    /// `item` is none of them.
    fn apply(&mut self, item: &str) -> bool {
        if item == "block-order" || item == "ticket" {
            self.block_order = item == "block-order";
        } else if item == "wait=all" || item == "wait=nearest" {
            self.wait_all = item == "wait=all";
        } else if let Some(ns) = item.strip_prefix("delay=").and_then(|s| s.parse::<u32>().ok()) {
            self.poll_delay_ns = ns.min(1 << 20);
        } else if let Some(ns) = item.strip_prefix("first=").and_then(|s| s.parse::<u32>().ok()) {
            self.first_poll_delay_ns = ns.min(1 << 20);
        } else {
            return false;
        }
        true
    }

    /// Asks L2 for the input of the tile [`prefetch_tiles`](Self::prefetch_tiles)
    /// after `tile` ([`tile::prefetch`]), if the launch prefetches; every
    /// thread of a block of `threads` calls it as the block starts `tile`.
    /// With [`PREFETCH_BULK`] the block's first thread asks for the whole
    /// tile in one request where the target has the instruction (sm_90 and
    /// newer, a test the device linker folds); elsewhere nothing is asked
    /// for (the per-thread requests of a step in bytes are a knob of their
    /// own, and lost to no prefetch at all on the H200).
    #[inline(always)]
    pub(crate) fn prefetch_ahead<T, const V: usize>(&self, input: &[T], tile: usize, threads: usize) {
        if self.prefetch_tiles == 0 {
            return;
        }
        let ahead = tile + self.prefetch_tiles as usize;
        if self.prefetch_step != PREFETCH_BULK {
            tile::prefetch::<T, V>(input, ahead, threads, self.prefetch_step as usize);
        } else if arch::compute_capability() >= 90 && thread::threadIdx_x() == 0 {
            tile::prefetch_whole::<T, V>(input, ahead, threads);
        }
    }

    /// The tuning a launch of `tiles` tiles takes: without the back-offs
    /// below `sleep_from` tiles (CUB sleeps only in grids of 500 blocks or
    /// more: in a short grid a predecessor is seldom late).
    pub(crate) fn for_grid(self, tiles: usize, sleep_from: usize) -> LookBackTuning {
        if tiles < sleep_from {
            LookBackTuning { poll_delay_ns: 0, first_poll_delay_ns: 0, ..self }
        } else {
            self
        }
    }
}

/// A tile shape: threads per block and 16-byte vectors per thread.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    /// Threads per block: a multiple of 32, at most 384 (CUB's largest
    /// among these tunings).
    pub threads: u32,
    /// 16-byte vectors per thread (4-byte elements: 4, 6 or 8; 8-byte
    /// elements: 4, 8 or 12).
    pub vectors: usize,
}

/// The tiles and look-back of a scan or a selection. A measurement knob
/// (see [`ScanTuning::scan_from_env`]); the defaults are CUB's sm_90
/// tunings for the same primitive (`tuning_scan.cuh`,
/// `tuning_select_if.cuh`), with the vector counts nearest to CUB's items
/// per thread.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanTuning {
    /// The tiles of 4-byte elements.
    pub narrow: TileShape,
    /// The tiles of 8-byte elements.
    pub wide: TileShape,
    /// How the look-back waits.
    pub look_back: LookBackTuning,
    /// Grids of fewer tiles than this poll without the back-offs.
    pub sleep_from: usize,
    /// How the scan combines a thread's runs across the warp, for 4-byte
    /// elements (select ignores it).
    pub runs: RunScan,
    /// The same for 8-byte elements.
    pub wide_runs: RunScan,
    /// How the pass's status words are zeroed before its tiles run.
    pub init: StatusInit,
    /// Whether the passes on a stream share status words the stream keeps
    /// between calls ([`Pass`], the default) instead of zeroing words of
    /// their own (`status=temp`).
    pub keep_status: bool,
    /// How far ahead a block asks L2 for a later tile's 4-byte elements,
    /// in tiles per [`PREFETCH_PER`] multiprocessors (0: no prefetch; see
    /// [`LookBackTuning::prefetch_tiles`]).
    pub prefetch: u32,
    /// The same for 8-byte elements.
    pub wide_prefetch: u32,
    /// Bytes between two addresses a thread asks L2 for: 32 (a sector, the
    /// default: every sector of the tile asked for, whatever one request
    /// fetches), 64 or 128 (a line: a quarter of the requests, enough if a
    /// request fills the line), or [`PREFETCH_BULK`] (one request per tile).
    /// `prefetch-step=` in the knobs.
    pub prefetch_step: u32,
    /// Prefetch only inputs larger than the GPU's L2 (`prefetch-when=past-l2`,
    /// the default) or at every size (`prefetch-when=always`). An input that
    /// fits in L2 is usually there already (written by the kernel before),
    /// and its calls lost to the requests on the H200.
    pub prefetch_past_l2: bool,
}

/// The step of the per-thread requests when none is named
/// (`prefetch-step=` a number in the knobs): a sector.
const DEFAULT_PREFETCH_STEP: u32 = 32;

/// [`ScanTuning::prefetch_step`] for one bulk request per tile
/// (`cache::prefetch_l2_bulk`) from the block's first thread, on targets
/// that have it (sm_90 and newer; none before). The default;
/// `prefetch-step=bulk` in the knobs.
pub const PREFETCH_BULK: u32 = 0;

/// The multiprocessors [`ScanTuning::prefetch`] counts its tiles per: a
/// distance that grows with the blocks a GPU holds at once, so that a
/// prefetched tile is read before later tiles' data evicts it from L2.
pub const PREFETCH_PER: u32 = 8;

/// The largest distance the knob takes (`prefetch=`), in tiles per
/// [`PREFETCH_PER`] multiprocessors.
const MAX_PREFETCH: u32 = 64;

/// How a look-back pass's status words (the tile counter and every tile's
/// flag) are zeroed before its tiles run: a fixed cost of every call,
/// which counts most where the data fits in L2 and the call takes a few
/// µs. A knob (`init=memset|kernel` in `OXIDE_PRIMS_SCAN` and
/// `OXIDE_PRIMS_SELECT`), read with `status=temp` only: the default,
/// `status=kept`, zeroes none per call (see [`Pass`]); a capture zeroes
/// words of its own either way.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusInit {
    /// A driver memset (`cuMemsetD8Async`; in a capture, a memset node).
    Memset,
    /// A kernel of this crate, [`clear_status`] (one thread per word), as
    /// CUB zeroes its tile states: a launch on the compute engine like the
    /// tiles' kernel after it, where the memset is the driver's own
    /// operation.
    Kernel,
}

/// How a tile's runs (a thread's vectors, `src/tile.rs`) get their
/// prefixes within the warp. A scan knob (`runs=`, `wide-runs=`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunScan {
    /// One warp scan (`shfl.up` steps) per run: `V` scans per thread, each
    /// shuffle moving 32 bits, so an 8-byte element doubles them and the
    /// scans of all runs are live at once (registers).
    Shuffle,
    /// The warp's run totals through shared memory (the launch's dynamic
    /// shared memory, a padded row of 32 runs per vector): each lane then
    /// combines `V` consecutive runs in order, the warp does one warp scan
    /// of the lanes' totals, and the runs' prefixes go back the same way.
    /// Two shared-memory round trips of `V` elements per thread instead of
    /// `V - 1` further warp scans.
    Shared,
}

impl ScanTuning {
    /// The scan's defaults, measured on the H200 (benches/README.md, "H200,
    /// 2026-12-03, evening"): 128 threads × 32 four-byte elements (CUB's
    /// sm_90 tile, 128 × 24, ran slower here at most sizes) and 256 × 16
    /// eight-byte ones (224 × 24 needs far more registers in this kernel
    /// and ran far slower; 128 × 16 ran slower too). CUB's tuning table
    /// names 224 × 24 for 8-byte sums, but its memory-bound scaling halves
    /// the items of 8-byte elements: CUB runs 224 × 12, which is
    /// `wide-threads=224,wide-vectors=6` here. Runs of 4-byte elements get
    /// their prefixes by warp shuffles ([`RunScan::Shuffle`]), runs of
    /// 8-byte ones through shared memory ([`RunScan::Shared`], "H200,
    /// 2026-12-04": the 8-byte sums' shuffles doubled the warp scans). The
    /// waits are CUB's. Each block asks L2 for a later tile in one bulk
    /// request, 6 and 3 tiles per [`PREFETCH_PER`] multiprocessors ahead
    /// (about 100 and 50 on the H200's 132), for inputs larger than the L2
    /// (benches/README.md, "H200, 2026-12-05": inputs past the L2 gained,
    /// smaller ones lost).
    pub const SCAN: ScanTuning = ScanTuning {
        narrow: TileShape { threads: 128, vectors: 8 },
        wide: TileShape { threads: 256, vectors: 8 },
        look_back: LookBackTuning {
            poll_delay_ns: DEFAULT_POLL_DELAY_NS,
            first_poll_delay_ns: DEFAULT_FIRST_POLL_DELAY_NS,
            block_order: true,
            wait_all: false,
            prefetch_tiles: 0,
            prefetch_step: DEFAULT_PREFETCH_STEP,
        },
        sleep_from: 500,
        runs: RunScan::Shuffle,
        wide_runs: RunScan::Shared,
        init: StatusInit::Memset,
        keep_status: true,
        prefetch: 6,
        wide_prefetch: 3,
        prefetch_step: PREFETCH_BULK,
        prefetch_past_l2: true,
    };

    /// The selection's defaults, measured on the H200 (benches/README.md,
    /// "H200, 2026-12-03, evening"): 256 threads × 24 four-byte elements
    /// and 256 × 16 eight-byte ones, where CUB's sm_90 `DeviceSelect::If`
    /// tiles (384 × 17 and 384 × 11, here 384 × 16 and 384 × 8) ran
    /// slower, the eight-byte one by much; the waits are CUB's for 4-byte
    /// elements; the prefetch is the scan's.
    pub const SELECT: ScanTuning = ScanTuning {
        narrow: TileShape { threads: 256, vectors: 6 },
        wide: TileShape { threads: 256, vectors: 8 },
        look_back: LookBackTuning { poll_delay_ns: 76, first_poll_delay_ns: 1150, block_order: true, wait_all: false, prefetch_tiles: 0, prefetch_step: DEFAULT_PREFETCH_STEP },
        sleep_from: 500,
        runs: RunScan::Shuffle,
        wide_runs: RunScan::Shuffle,
        init: StatusInit::Memset,
        keep_status: true,
        prefetch: 6,
        wide_prefetch: 3,
        prefetch_step: PREFETCH_BULK,
        prefetch_past_l2: true,
    };

    /// The scan's tuning: `OXIDE_PRIMS_SCAN` (read once) applied to
    /// [`SCAN`](Self::SCAN).
    pub fn scan_from_env() -> ScanTuning {
        static TUNING: std::sync::OnceLock<ScanTuning> = std::sync::OnceLock::new();
        *TUNING.get_or_init(|| Self::SCAN.parse_scan("OXIDE_PRIMS_SCAN", &knobs::spec("OXIDE_PRIMS_SCAN")))
    }

    /// `self` changed by the comma list `spec`: `threads=N`,
    /// `vectors=4|6|8` (4-byte elements), `wide-threads=N`,
    /// `wide-vectors=4|8|12` (8-byte elements; N a multiple of 32 up to
    /// 384), `delay=NS`, `first=NS`, `block-order`, `wait=all|nearest`,
    /// `sleep-from=TILES`, `prefetch=N` and `wide-prefetch=N` (tiles per
    /// [`PREFETCH_PER`] multiprocessors, at most 64; 0 turns the prefetch
    /// off), `prefetch-step=32|64|128|bulk` (bytes, or [`PREFETCH_BULK`]),
    /// `prefetch-when=past-l2|always`, `init=memset|kernel` ([`StatusInit`]),
    /// `status=temp|kept` (`keep_status`). Unknown items and values out of
    /// range are
    /// ignored with a warning on stderr naming `var` (a measurement knob
    /// must not fail a run).
    pub fn parse(self, var: &str, spec: &str) -> ScanTuning {
        self.parse_items(var, spec, false)
    }

    /// [`parse`](Self::parse) for the scan, which takes three items more:
    /// `wide-vectors=6` (8-byte elements; CUB's sm_90 tile for them is
    /// 224 threads × 12), `runs=shuffle|shared` and
    /// `wide-runs=shuffle|shared` ([`RunScan`], 4- and 8-byte elements).
    pub fn parse_scan(self, var: &str, spec: &str) -> ScanTuning {
        self.parse_items(var, spec, true)
    }

    fn parse_items(self, var: &str, spec: &str, scan: bool) -> ScanTuning {
        let mut t = self;
        let run_scan = |s: &str| match s {
            "shuffle" => Some(RunScan::Shuffle),
            "shared" => Some(RunScan::Shared),
            _ => None,
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let value = |name: &str| item.strip_prefix(name).and_then(|s| s.parse::<u32>().ok());
            let threads = |n: &u32| n.is_multiple_of(32) && (32..=MAX_THREADS as u32).contains(n);
            if let Some(n) = value("threads=").filter(threads) {
                t.narrow.threads = n;
            } else if let Some(n) = value("wide-threads=").filter(threads) {
                t.wide.threads = n;
            } else if let Some(v @ (4 | 6 | 8)) = value("vectors=") {
                t.narrow.vectors = v as usize;
            } else if let Some(v @ (4 | 8 | 12)) = value("wide-vectors=") {
                t.wide.vectors = v as usize;
            } else if let Some(6) = value("wide-vectors=").filter(|_| scan) {
                t.wide.vectors = 6;
            } else if let Some(r) = item.strip_prefix("runs=").and_then(run_scan).filter(|_| scan) {
                t.runs = r;
            } else if let Some(r) = item.strip_prefix("wide-runs=").and_then(run_scan).filter(|_| scan) {
                t.wide_runs = r;
            } else if let Some(n) = value("prefetch=").filter(|n| *n <= MAX_PREFETCH) {
                t.prefetch = n;
            } else if let Some(n) = value("wide-prefetch=").filter(|n| *n <= MAX_PREFETCH) {
                t.wide_prefetch = n;
            } else if let Some(n @ (32 | 64 | 128)) = value("prefetch-step=") {
                t.prefetch_step = n;
            } else if item == "prefetch-step=bulk" {
                t.prefetch_step = PREFETCH_BULK;
            } else if item == "prefetch-when=past-l2" || item == "prefetch-when=always" {
                t.prefetch_past_l2 = item == "prefetch-when=past-l2";
            } else if let Some(n) = value("sleep-from=") {
                t.sleep_from = n as usize;
            } else if item == "init=memset" || item == "init=kernel" {
                t.init = if item == "init=kernel" { StatusInit::Kernel } else { StatusInit::Memset };
            } else if item == "status=temp" || item == "status=kept" {
                t.keep_status = item == "status=kept";
            } else if !t.look_back.apply(item) {
                let scan_items = if scan { ", `wide-vectors=6`, `runs=shuffle|shared`, `wide-runs=shuffle|shared`" } else { "" };
                eprintln!(
                    "{var}: ignoring `{item}` (expected `threads=32..384`, `vectors=4|6|8`, `wide-threads=32..384`, \
                     `wide-vectors=4|8|12`, `delay=NS`, `first=NS`, `block-order|ticket`, `wait=all|nearest`, `sleep-from=TILES`, `prefetch=0..64`, `wide-prefetch=0..64`, `prefetch-step=32|64|128|bulk`, `prefetch-when=past-l2|always`, `init=memset|kernel` or `status=temp|kept`{scan_items})"
                );
            }
        }
        t
    }

    /// The look-back tuning of a grid of `tiles` tiles over `len` elements
    /// of `T` on `stream`'s GPU: [`LookBackTuning::for_grid`] with the
    /// prefetch distance for its multiprocessors, if this input is
    /// prefetched at all ([`prefetches`](Self::prefetches)).
    pub(crate) fn look_back_for<T>(&self, stream: &CudaStream, tiles: usize, len: usize) -> Result<LookBackTuning, PrimsError> {
        let mut look_back = self.look_back.for_grid(tiles, self.sleep_from);
        let ctx = stream.context();
        if self.prefetch_per::<T>() != 0 && self.prefetches(len * core::mem::size_of::<T>(), ctx.l2_cache_bytes()?) {
            look_back.prefetch_tiles = self.prefetch_tiles::<T>(ctx.multiprocessor_count()?);
            look_back.prefetch_step = self.prefetch_step;
        }
        Ok(look_back)
    }

    /// Whether an input of `bytes` is prefetched on a GPU whose L2 holds
    /// `l2_bytes` (0: a size the driver does not report, where every input is).
    pub fn prefetches(&self, bytes: usize, l2_bytes: usize) -> bool {
        !self.prefetch_past_l2 || bytes > l2_bytes
    }

    /// The tiles ahead a block of a grid on `multiprocessors` asks L2 for,
    /// for elements of `T` ([`LookBackTuning::prefetch_tiles`]).
    pub fn prefetch_tiles<T>(&self, multiprocessors: u32) -> u32 {
        self.prefetch_per::<T>() * multiprocessors / PREFETCH_PER
    }

    /// [`prefetch`](Self::prefetch) or [`wide_prefetch`](Self::wide_prefetch),
    /// as `T` is 4 or 8 bytes.
    fn prefetch_per<T>(&self) -> u32 {
        if core::mem::size_of::<T>() > 4 { self.wide_prefetch } else { self.prefetch }
    }

    /// The tile shape for elements of `T`.
    pub const fn shape<T>(&self) -> TileShape {
        if core::mem::size_of::<T>() > 4 { self.wide } else { self.narrow }
    }

    /// How the scan combines the runs of elements of `T`.
    pub const fn run_scan<T>(&self) -> RunScan {
        if core::mem::size_of::<T>() > 4 { self.wide_runs } else { self.runs }
    }

    /// Whether a scan of `T` under `self` runs the `scan_tiles` instance of
    /// `vectors` vectors a thread, with its runs through shared memory or
    /// not: with [`SCAN`](Self::SCAN), the one instance a build without the
    /// `tuning` feature compiles (see the [crate docs](crate#features)).
    const fn runs_scan_instance<T>(&self, vectors: usize, shared_runs: bool) -> bool {
        self.shape::<T>().vectors == vectors && matches!(self.run_scan::<T>(), RunScan::Shared) == shared_runs
    }
}

/// Which pass over a set of status words a launch is. A pass on words
/// zeroed for it alone is [`Pass::FRESH`] (in a capture, or with the knob
/// `status=temp`); words the stream keeps between passes (`KeptStatus` in
/// src/scan.rs, the default) are
/// zeroed once and then serve pass after pass: each pass tags its flags with
/// its own epoch (the flag's bits above the lowest two), so that a word of
/// an earlier pass reads as `INVALID`, and (under the `ticket` knob) takes
/// its tiles' tickets from the counter after those the earlier passes took.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// This pass's tag, below 2^30 (`MAX_EPOCH`); 0 on words zeroed for it
    /// alone.
    pub epoch: u32,
    /// The counter's value when this pass starts.
    pub ticket_base: u64,
}

/// The epochs a pass can have: a flag's 32 bits hold its state in the
/// lowest two and the epoch above them.
pub(crate) const MAX_EPOCH: u32 = 1 << 30;

impl Pass {
    /// A pass on words zeroed for it.
    pub const FRESH: Pass = Pass { epoch: 0, ticket_base: 0 };

    /// The state of a published flag word's low half, `INVALID` when
    /// another pass wrote it.
    #[inline(always)]
    fn flag_of(self, tagged: u32) -> u32 {
        if tagged >> 2 == self.epoch { tagged & 3 } else { INVALID }
    }
}

/// The look-back state of a pass: the tile counter in `words[0]`, then per
/// tile [`words_per_tile`] 64-bit words at `words[W·(1 + tile)..]` (`W` =
/// words per tile). Each word holds the tile's flag in its low 32 bits (its
/// state, tagged with the [`Pass`]'s epoch above the lowest two bits) and
/// 32 bits of the published total in its high 32 bits (the low half of an
/// 8-byte total in the first word, the high half in the second). A word is
/// written and read whole, with one relaxed device-scope store or load, so
/// a reader that sees a flag sees the total stored with it, with no fence
/// on either side. For 8-byte totals, a reader takes the pair only when
/// both words carry the same flag: each flag value is stored once per tile
/// with its halves, so equal flags mean halves of the same total; any other
/// pair reads as not yet published and is polled again.
#[derive(Clone, Copy)]
pub(crate) struct TileStatus<'a, T> {
    pub words: &'a [AtomicU64],
    pub tuning: LookBackTuning,
    pub pass: Pass,
    pub _element: PhantomData<T>,
}

impl<'a, T: Element> TileStatus<'a, T> {
    pub fn new(words: &'a [AtomicU64], tuning: LookBackTuning, pass: Pass) -> Self {
        TileStatus { words, tuning, pass, _element: PhantomData }
    }

    /// This block's tile: the block index with `block_order` (the
    /// default), else the next number of the counter (thread 0 takes it,
    /// the block reads it after a barrier).
    ///
    /// # Safety
    /// All threads of the block call it, and `slot` is block-shared memory
    /// that nothing else in the block accesses.
    #[inline(always)]
    pub unsafe fn block_tile(&self, slot: *mut u32) -> usize {
        if self.tuning.block_order {
            return thread::blockIdx_x() as usize;
        }
        if thread::threadIdx_x() == 0 {
            // Tickets before `ticket_base` were taken by earlier passes.
            let ticket = self.words[0].fetch_add_scoped(1, Scope::Device, Ordering::Relaxed);
            let tile = ticket.wrapping_sub(self.pass.ticket_base) as u32;
            // SAFETY: one thread writes the slot; the others read it after the barrier.
            slot.write(tile);
        }
        thread::sync_threads();
        // SAFETY: written before the barrier above, never again.
        slot.read() as usize
    }

    /// Publishes `total` for `tile` with `flag` (one thread).
    ///
    /// # Safety
    /// `tile` is this block's tile, below the number of tiles.
    #[inline(always)]
    pub unsafe fn publish(&self, tile: usize, flag: u32, total: T) {
        let w = words_per_tile::<T>();
        let bits = to_bits(total);
        let first = w * (1 + tile);
        let mut k = 0;
        while k < w {
            let half = (bits >> (32 * k)) & 0xffff_ffff;
            let tagged = flag | self.pass.epoch << 2;
            self.words.get_unchecked(first + k).store_scoped(tagged as u64 | half << 32, Scope::Device, Ordering::Relaxed);
            k += 1;
        }
    }

    /// The flag of `tile` and the total published with it (meaningless
    /// while the flag is `INVALID`). A word tagged with another pass's
    /// epoch reads as `INVALID`.
    #[inline(always)]
    fn read(&self, tile: usize) -> (u32, T) {
        let w = words_per_tile::<T>();
        let first = w * (1 + tile);
        // SAFETY (of the unchecked gets): the caller passes a tile below
        // the number of tiles, whose words follow the counter's.
        let lo = unsafe { self.words.get_unchecked(first) }.load_scoped(Scope::Device, Ordering::Relaxed);
        if w == 1 {
            return (self.pass.flag_of(lo as u32), from_bits(lo >> 32));
        }
        let hi = unsafe { self.words.get_unchecked(first + 1) }.load_scoped(Scope::Device, Ordering::Relaxed);
        let flag = if lo as u32 == hi as u32 { self.pass.flag_of(lo as u32) } else { INVALID };
        (flag, from_bits(lo >> 32 | hi & 0xffff_ffff_0000_0000))
    }

    /// The tile's exclusive prefix, by the 32 lanes of one warp (in every
    /// lane): [`publish_own`](Self::publish_own) then
    /// [`prefix_after_publish`](Self::prefix_after_publish).
    ///
    /// # Safety
    /// As [`look_back`](Self::look_back), and `tile` is this block's.
    #[inline(always)]
    pub unsafe fn tile_prefix<Op: ReduceOp<T>>(&self, tile: usize, total: T, op: Op) -> T {
        self.publish_own(tile, total);
        self.prefix_after_publish(tile, total, op)
    }

    /// Publishes the tile's own `total` (lane 0 of the calling warp): as
    /// its partial, or for tile 0 as its inclusive total. A kernel can call
    /// it as soon as it knows the total and do other work before
    /// [`prefix_after_publish`](Self::prefix_after_publish), so that the
    /// tiles after it see the total earlier.
    ///
    /// Each publication is guarded by its own [`first_lane`] test, not one
    /// `lane0` value kept across the look-back: with one such value,
    /// rustc's MIR jump threading (release builds) threaded the test after
    /// the look-back through it, leaving two calls, one for lane 0 and one
    /// for the others, so that the warp ran two copies of the loop diverged
    /// and met at every warp vote and shuffle.
    ///
    /// # Safety
    /// `tile` is this block's tile, below the number of tiles.
    #[inline(always)]
    pub unsafe fn publish_own(&self, tile: usize, total: T) {
        if first_lane() {
            self.publish(tile, if tile == 0 { INCLUSIVE } else { PARTIAL }, total);
        }
    }

    /// The tile's exclusive prefix once [`publish_own`](Self::publish_own)
    /// has published `total`, by the 32 lanes of one warp (in every lane):
    /// waits the first poll delay, looks back and publishes the tile's
    /// inclusive total; tile 0's prefix is the identity.
    ///
    /// # Safety
    /// As [`look_back`](Self::look_back), `tile` is this block's, and its
    /// total is published.
    #[inline(always)]
    pub unsafe fn prefix_after_publish<Op: ReduceOp<T>>(&self, tile: usize, total: T, op: Op) -> T {
        if tile == 0 {
            return op.identity();
        }
        if self.tuning.first_poll_delay_ns != 0 {
            thread::nanosleep(self.tuning.first_poll_delay_ns);
        }
        let prefix = self.look_back(tile, op);
        if first_lane() {
            self.publish(tile, INCLUSIVE, op.combine(prefix, total));
        }
        prefix
    }

    /// The combined totals of every tile before `tile` (> 0), by the 32
    /// lanes of one warp, [`WINDOW`] predecessors at a time: lane 31 reads
    /// the nearest [`TILES_PER_LANE`], lane 0 the farthest. The window's
    /// flags after its nearest inclusive tile (all of them if it has none;
    /// with `wait_all`, every flag of the window) are waited for, its
    /// totals combined in tile order from the nearest inclusive one on,
    /// and the window moves back until it meets one. The result is in
    /// every lane.
    ///
    /// # Safety
    /// Every tile before `tile` is (or will be) published by a running
    /// block, and `tile` is below the number of tiles.
    #[inline(always)]
    pub unsafe fn look_back<Op: ReduceOp<T>>(&self, tile: usize, op: Op) -> T {
        let lane = dw::lane_id() as isize;
        let mut prefix = op.identity();
        let mut end = tile as isize;
        loop {
            // This lane's tiles, in ascending order.
            let first = end - WINDOW as isize + lane * TILES_PER_LANE as isize;
            // Tiles before the first count as inclusive and empty.
            let mut flags = [INCLUSIVE; TILES_PER_LANE];
            let mut values = [op.identity(); TILES_PER_LANE];
            let mut k = 0;
            while k < TILES_PER_LANE {
                if first + k as isize >= 0 {
                    (flags[k], values[k]) = self.read((first + k as isize) as usize);
                }
                k += 1;
            }
            let (inclusive, nearest) = loop {
                let lane_flags = LaneFlags::of(&flags);
                let inclusive = dw::ballot(FULL_MASK, lane_flags.has_inclusive);
                // The nearest inclusive tile ends the look-back; tiles before
                // it are already in its total, so only the flags after it
                // (lanes above, and this lane's after its own inclusive)
                // are waited for.
                let nearest = if inclusive != 0 { 31 - inclusive.leading_zeros() } else { 0 };
                let waits = if self.tuning.wait_all {
                    lane_flags.any_invalid
                } else {
                    lane as u32 >= nearest && lane_flags.invalid_after_inclusive
                };
                if !dw::any(FULL_MASK, waits) {
                    break (inclusive, nearest);
                }
                if self.tuning.poll_delay_ns != 0 {
                    thread::nanosleep(self.tuning.poll_delay_ns);
                }
                k = 0;
                while k < TILES_PER_LANE {
                    // Only tiles at or after the first can be INVALID.
                    if flags[k] == INVALID {
                        (flags[k], values[k]) = self.read((first + k as isize) as usize);
                    }
                    k += 1;
                }
            };
            // This lane's totals from its nearest inclusive tile on (all of
            // them if it has none). An unpublished tile's total is combined
            // like the others: only lanes whose tiles after the nearest
            // inclusive one are all published keep theirs.
            let mut own = op.identity();
            k = 0;
            while k < TILES_PER_LANE {
                own = if flags[k] == INCLUSIVE { values[k] } else { op.combine(own, values[k]) };
                k += 1;
            }
            let v = if lane as u32 >= nearest { own } else { op.identity() };
            let window = dw::shfl_idx(FULL_MASK, warp::inclusive_scan(v, op), 31);
            prefix = op.combine(window, prefix);
            if inclusive != 0 {
                return prefix;
            }
            end -= WINDOW as isize;
        }
    }
}

/// What one lane of the look-back knows of its tiles' flags in a window.
struct LaneFlags {
    /// Whether one of its tiles is inclusive.
    has_inclusive: bool,
    /// Whether one of its tiles after its nearest inclusive one (any, if
    /// none is) is not published yet.
    invalid_after_inclusive: bool,
    /// Whether one of its tiles is not published yet.
    any_invalid: bool,
}

impl LaneFlags {
    /// The flags of the lane's tiles, in ascending order.
    #[inline(always)]
    fn of(flags: &[u32; TILES_PER_LANE]) -> Self {
        let mut s = LaneFlags { has_inclusive: false, invalid_after_inclusive: false, any_invalid: false };
        let mut k = 0;
        while k < TILES_PER_LANE {
            if flags[k] == INCLUSIVE {
                s.has_inclusive = true;
                s.invalid_after_inclusive = false;
            } else if flags[k] == INVALID {
                s.invalid_after_inclusive = true;
                s.any_invalid = true;
            }
            k += 1;
        }
        s
    }
}

/// Whether this thread is lane 0 of its warp: a fresh read of `%laneid`
/// at each use, a value MIR optimisations cannot thread branches on (see
/// [`TileStatus::tile_prefix`]).
#[inline(always)]
pub(crate) fn first_lane() -> bool {
    dw::lane_id() == 0
}

/// One tile of an inclusive (`INCLUSIVE_SCAN`) or exclusive scan of `input`
/// into `out`, `V` 16-byte vectors per thread, warp-striped
/// (`src/tile.rs`). Launched with a multiple of 32 threads per block, at
/// most `MAX_THREADS` (tiles of `blockDim.x · V` vectors), and one
/// block per tile; `status` 64-bit words for the counter and the tiles
/// (`TileStatus`), zeroed or kept for `pass` ([`Pass`]). Bounded for
/// `MAX_THREADS`-thread blocks, so that every shape the knob allows
/// launches, whatever the registers.
///
/// `SHARED_RUNS`: the runs get their prefixes through shared memory
/// ([`RunScan::Shared`]; the launch provides `shared_runs_bytes` of
/// dynamic shared memory), else by one warp scan each.
#[kernel(launch_bounds(MAX_THREADS))]
pub fn scan_tiles<T: Element, Op: ReduceOp<T>, const INCLUSIVE_SCAN: bool, const V: usize, const SHARED_RUNS: bool>(
    input: &[T],
    op: Op,
    mut out: DisjointSlice<T>,
    status: &[AtomicU64],
    tuning: LookBackTuning,
    pass: Pass,
) {
    // Warp totals (up to MAX_WARPS) then the tile's prefix, as Elements
    // of at most 8 bytes; and the tile number.
    shared! { static WORDS: [u64; MAX_WARPS + 1]; }
    shared! { static TILE: [u32; 1]; }
    let tiles = TileStatus::<T>::new(status, tuning, pass);
    let tid = thread::threadIdx_x() as usize;
    let (warp_index, lane) = (tid / 32, tid % 32);
    let threads = thread::blockDim_x() as usize;
    // SAFETY: all threads are here; TILE serves nothing else.
    let tile = unsafe { tiles.block_tile(TILE.as_mut_ptr()) };
    tuning.prefetch_ahead::<T, V>(input, tile, threads);
    let n = input.len();
    let tile_len = threads * tile::items::<T, V>();
    let tile_start = tile * tile_len;
    let full = tile_start + tile_len <= n;
    // SAFETY: the input is a DeviceBuffer's (16-byte aligned; the host checks).
    let mut v = unsafe { tile::load::<T, V>(input, tile_start, warp_index, lane, full, op.identity()) };
    let slots = WORDS.as_mut_ptr() as *mut T;
    // SAFETY: WORDS holds MAX_WARPS + 1 Elements, the launch at most
    // MAX_WARPS warps (the host's shapes); all threads are here; the prefix
    // slot (index MAX_WARPS) is written only after the scan's barrier.
    let (run_prefixes, tile_total) = if SHARED_RUNS {
        // SAFETY: as above; the launch provides `shared_runs_bytes` of
        // dynamic shared memory for this block's `threads` and `V`, which
        // nothing else uses.
        unsafe {
            let (runs, _) = cuda_device::dynamic_shared::<T>();
            scan_runs_shared::<T, Op, V>(tile::run_totals(&v, op), op, slots, threads / 32, runs)
        }
    } else {
        // SAFETY: as above.
        unsafe { tile::scan_runs::<T, Op, V>(tile::run_totals(&v, op), op, slots, threads / 32) }
    };
    let prefix_slot = unsafe { slots.add(MAX_WARPS) };
    if tid < 32 {
        // The tiles after this one wait for its total: it goes out before
        // this warp's share of the element work below, not after it.
        // SAFETY: this block's tile.
        unsafe { tiles.publish_own(tile, tile_total) };
    }
    // Each element's result within the tile, before the look-back: across
    // it only the elements stay live, not the runs' prefixes as well (the
    // look-back's registers count for every thread of the block). The
    // tile's prefix then goes in front of each result (associativity is
    // all that needs).
    let mut j = 0;
    unroll!(full, while j < V {
        let mut running = run_prefixes[j];
        let mut e = 0;
        while e < tile::lanes::<T>() {
            let k = j * tile::lanes::<T>() + e;
            let x = tile::get::<T, V>(&v, k);
            if INCLUSIVE_SCAN {
                running = op.combine(running, x);
                tile::set(&mut v, k, running);
            } else {
                tile::set(&mut v, k, running);
                running = op.combine(running, x);
            }
            e += 1;
        }
        j += 1;
    });
    if tid < 32 {
        // SAFETY: this block's tile; every tile before it was taken by a
        // block that runs (with `block_order`, the default, blocks start in
        // index order; else tile numbers come from the counter in start
        // order).
        let prefix = unsafe { tiles.prefix_after_publish(tile, tile_total, op) };
        if first_lane() {
            // SAFETY: one writer; read by all after the barrier below.
            unsafe { prefix_slot.write(prefix) };
        }
    }
    thread::sync_threads();
    // SAFETY: written before the barrier above.
    let tile_prefix = unsafe { prefix_slot.read() };
    let (mut k, items) = (0, tile::items::<T, V>());
    unroll!(full, while k < items {
        let x = tile::get::<T, V>(&v, k);
        tile::set(&mut v, k, op.combine(tile_prefix, x));
        k += 1;
    });
    let len = n.min(out.len());
    // SAFETY: `out` is a DeviceBuffer as long as the input (16-byte
    // aligned); this thread's elements of this tile are its own (tile
    // numbers are unique).
    unsafe { tile::store::<T, V>(out.as_mut_ptr(), len, &v, tile_start, warp_index, lane, full) };
}

/// Runs of `T` between two pads in a warp's rows of [`scan_runs_shared`].
/// 4-byte runs are accessed by the whole warp at once (32 banks): a pad
/// every 32 keeps the row stores (32 consecutive runs) and the strided
/// reads (every `V`-th run) on distinct banks, all but a lane or two at 6
/// and 12 vectors. 8-byte runs are accessed by half-warps (16 runs span
/// the 32 banks): a pad every 8 keeps each half-warp's stores and reads on
/// 12 to 16 distinct bank pairs at every vector count the knob allows (a
/// pad every 16 would leave only 6 to 8 at 6 and 12 vectors).
#[inline(always)]
const fn shared_run_period<T>() -> usize {
    if core::mem::size_of::<T>() > 4 { 8 } else { 32 }
}

/// Elements of a warp's rows of run totals in [`scan_runs_shared`]: `V`
/// rows of 32 runs and their pads.
#[inline(always)]
const fn shared_runs_per_warp<T>(vectors: usize) -> usize {
    32 * vectors + 32 * vectors / shared_run_period::<T>()
}

/// The position in a warp's padded rows (see [`scan_runs_shared`]) of the
/// warp's run `i` in tile order.
#[inline(always)]
const fn shared_run_slot<T>(i: usize) -> usize {
    i + i / shared_run_period::<T>()
}

/// Bytes of dynamic shared memory a [`RunScan::Shared`] launch of `shape`
/// needs for elements of `T`.
pub(crate) fn shared_runs_bytes<T>(shape: TileShape) -> usize {
    (shape.threads as usize / 32) * shared_runs_per_warp::<T>(shape.vectors) * core::mem::size_of::<T>()
}

/// [`tile::scan_runs`] with the runs' prefixes within the warp found
/// through shared memory instead of one warp scan per run.
///
/// A warp's runs in tile order are vector `j` of lane `l` at `i = 32·j +
/// l`. Each lane stores its `V` run totals at their tile-order places
/// (consecutive lanes, consecutive places), then reads back the `V`
/// consecutive runs `V·l ..` and combines them in order; one warp scan of
/// the lanes' totals gives each lane the prefix of its first run, and the
/// runs' prefixes go back to the places they came from for their owners
/// to read. The rows are padded ([`shared_run_period`]) so that both the
/// stores and the strided reads hit distinct banks. Only a warp barrier
/// separates the stores from the reads: a warp's rows are its own.
///
/// # Safety
/// As [`tile::scan_runs`], and `runs` is this block's dynamic shared
/// memory of [`shared_runs_bytes`] for `warps` warps and `V`, used by
/// nothing else.
#[inline(always)]
pub(crate) unsafe fn scan_runs_shared<T: Element, Op: ReduceOp<T>, const V: usize>(
    totals: [T; V],
    op: Op,
    slots: *mut T,
    warps: usize,
    runs: *mut T,
) -> ([T; V], T) {
    let lane = dw::lane_id() as usize;
    let row = runs.add((thread::threadIdx_x() as usize / 32) * shared_runs_per_warp::<T>(V));
    let mut j = 0;
    unroll!(full, while j < V {
        row.add(shared_run_slot::<T>(32 * j + lane)).write(totals[j]);
        j += 1;
    });
    dw::sync_warp(FULL_MASK);
    // This lane's consecutive runs, in order, and their total.
    let mine: [T; V] = core::array::from_fn(|k| row.add(shared_run_slot::<T>(V * lane + k)).read());
    let mut lane_total = mine[0];
    let mut k = 1;
    unroll!(full, while k < V {
        lane_total = op.combine(lane_total, mine[k]);
        k += 1;
    });
    let (before, warp_total) = warp::exclusive_scan(lane_total, op);
    // The places written here are those this lane read: no other lane's
    // reads to wait for.
    let mut running = before;
    k = 0;
    unroll!(full, while k < V {
        row.add(shared_run_slot::<T>(V * lane + k)).write(running);
        running = op.combine(running, mine[k]);
        k += 1;
    });
    dw::sync_warp(FULL_MASK);
    let (warp_prefix, block_total) = raw_exclusive_scan_warps_of::<T, Op>(warp_total, op, slots, warps);
    let prefixes: [T; V] = core::array::from_fn(|j| op.combine(warp_prefix, row.add(shared_run_slot::<T>(32 * j + lane)).read()));
    (prefixes, block_total)
}

/// The look-back of `tile` over flags and totals the caller prepared, by
/// one warp: `out[0]` = the combined totals before `tile`. A test hook: in
/// a running scan the windows beyond the first are rare, so a test sets up
/// the flags that need them (see [`look_back_probe_run`]). Launch one warp.
#[doc(hidden)]
#[kernel]
pub fn look_back_probe<T: Element, Op: ReduceOp<T>>(
    status: &[AtomicU64],
    op: Op,
    tile: usize,
    mut out: DisjointSlice<T>,
) {
    let tiles = TileStatus::<T>::new(status, LookBackTuning::default(), Pass::FRESH);
    // SAFETY: the host published every tile before `tile` (checked there).
    let prefix = unsafe { tiles.look_back(tile, op) };
    if thread::threadIdx_x() == 0 && !out.is_empty() {
        // SAFETY: one thread writes the one element.
        unsafe { *out.get_unchecked_mut(0) = prefix };
    }
}

/// Runs [`look_back_probe`] for the tile after those described: per tile
/// before it, whether it is flagged inclusive (else partial) and its two
/// totals. A test hook.
#[doc(hidden)]
pub fn look_back_probe_run<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    inclusive: &[bool],
    partials: &[T],
    inclusives: &[T],
    op: Op,
) -> Result<T, PrimsError> {
    look_back_probe_run_with_gaps(module, stream, inclusive, partials, inclusives, &[], op)
}

/// [`look_back_probe_run`] with the tiles of `unpublished` left
/// unpublished (flag `INVALID`), each before the last inclusive tile:
/// the look-back must not wait for them. A test hook.
#[doc(hidden)]
pub fn look_back_probe_run_with_gaps<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    inclusive: &[bool],
    partials: &[T],
    inclusives: &[T],
    unpublished: &[usize],
    op: Op,
) -> Result<T, PrimsError> {
    let tile = inclusive.len();
    assert!(tile > 0 && partials.len() == tile && inclusives.len() == tile, "one flag and two totals per tile before the probed one");
    assert!(inclusive[0], "tile 0 is always inclusive");
    let nearest = inclusive.iter().rposition(|&i| i).unwrap_or(0);
    assert!(unpublished.iter().all(|&t| t < nearest), "only tiles before the nearest inclusive one may stay unpublished (the probe would wait for the others forever)");
    // The status words as the kernels publish them (flag low, total's
    // 32-bit halves high), plus the probed tile's, unpublished.
    let w = words_per_tile::<T>();
    let mut words = vec![0u64; w * (tile + 2)];
    for t in 0..tile {
        let (flag, total) = if inclusive[t] { (INCLUSIVE, inclusives[t]) } else { (PARTIAL, partials[t]) };
        // An unpublished tile: its flag INVALID, its total some leftover.
        let flag = if unpublished.contains(&t) { INVALID } else { flag };
        let bits = to_bits(total);
        for k in 0..w {
            words[w * (1 + t) + k] = flag as u64 | ((bits >> (32 * k)) & 0xffff_ffff) << 32;
        }
    }
    let mut status = DeviceBuffer::from_host(stream, &words)?;
    let mut out = temp::scratch::<T>(stream, 1)?;
    let one_warp = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let status = status.as_atomic::<AtomicU64>();
    cuda_launch! {
        kernel: look_back_probe::<T, Op>, stream: stream, module: module, config: one_warp,
        args: [status, op, tile, slice_mut(out)]
    }?;
    Ok(out.to_host_vec(stream)?[0])
}

/// Threads per block of [`clear_status`].
const CLEAR_THREADS: u32 = 256;

/// Zeroes `words`, one word per thread: the counter and status words of a
/// look-back pass ([`StatusInit::Kernel`]), every flag `INVALID`. Launched
/// 1-D over at least `words.len()` threads.
#[kernel]
pub fn clear_status(mut words: DisjointSlice<u64>) {
    let i = thread::index_1d();
    if let Some(w) = words.get_mut(i) {
        *w = 0;
    }
}

/// Zeroed status words of one look-back pass over `tiles` tiles of
/// totals of `T` (the counter and the tiles' words, [`TileStatus`]): a
/// temporary of the stream, zeroed as `init` says before anything queued
/// after it.
fn fresh_status<'s, T: Element>(
    module: &KernelModule,
    stream: &'s CudaStream,
    tiles: usize,
    init: StatusInit,
) -> Result<TempBuffer<'s, u64>, PrimsError> {
    let len = words_per_tile::<T>() * (tiles + 1);
    Ok(match init {
        StatusInit::Memset => temp::zeroed(stream, len)?,
        StatusInit::Kernel => {
            // Every word is written by the launch below, queued before the
            // pass that reads them.
            let mut status = temp::scratch::<u64>(stream, len)?;
            let config = LaunchConfig {
                grid_dim: (len.div_ceil(CLEAR_THREADS as usize) as u32, 1, 1),
                block_dim: (CLEAR_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            cuda_launch! {
                kernel: clear_status, stream: stream, module: module, config: config,
                args: [slice_mut(status)]
            }?;
            status
        }
    })
}

/// Runs `launch`, the one launch of a look-back pass over `tiles` tiles of
/// totals of `T` on `stream`, with the pass's status words and [`Pass`]:
/// words zeroed for it ([`Pass::FRESH`]), or with `tuning.keep_status` the
/// stream's kept words ([`KeptStatus`]) where they can serve (not while the
/// stream captures a graph: each replay of a graph would run the same pass
/// again).
pub(crate) fn with_look_back<T: Element>(
    module: &KernelModule,
    stream: &CudaStream,
    tiles: usize,
    tuning: &ScanTuning,
    what: &'static str,
    launch: impl FnOnce(&mut DeviceBuffer<u64>, Pass) -> Result<(), PrimsError>,
) -> Result<(), PrimsError> {
    if tiles >= u32::MAX as usize {
        return Err(PrimsError::TooLarge { what, len: tiles, max: u32::MAX as usize - 1 });
    }
    if tuning.keep_status && !stream.is_capturing_in_driver()? {
        // A block-order pass takes no tickets.
        let tickets = if tuning.look_back.block_order { 0 } else { tiles as u64 };
        return KeptStatus::pass(stream, words_per_tile::<T>() * (tiles + 1), tickets, launch);
    }
    let mut status = fresh_status::<T>(module, stream, tiles, tuning.init)?;
    launch(&mut status, Pass::FRESH)
}

/// The status words a stream keeps between passes (`status=kept`, the
/// default), in the stream's own storage ([`CudaStream::with_local`]):
/// zeroed once, then each pass on the stream gets the next epoch (and, under
/// `ticket`, the counter's tickets after the earlier passes') ([`Pass`]), so that a call
/// neither allocates nor zeroes anything: one launch per call. One set
/// serves every element type and primitive: a word holds its flag in its
/// low half whatever the layout, so a word of another pass's layout reads
/// as another epoch's. The words are freed with the stream.
struct KeptStatus {
    words: DeviceBuffer<u64>,
    /// The last pass's epoch (0: none since the words were zeroed).
    epoch: u32,
    /// Tickets the passes since the zeroing took from the counter.
    tickets: u64,
}

impl KeptStatus {
    /// Runs `launch` (a pass taking `tickets` tickets) on `stream`'s kept
    /// words, at least `len` of them.
    fn pass(
        stream: &CudaStream,
        len: usize,
        tickets: u64,
        launch: impl FnOnce(&mut DeviceBuffer<u64>, Pass) -> Result<(), PrimsError>,
    ) -> Result<(), PrimsError> {
        // The stream's value stays locked across the launch, so that the
        // passes queue on the stream in the order of their epochs and
        // tickets.
        let init = || Ok(KeptStatus { words: DeviceBuffer::zeroed(stream, len)?, epoch: 0, tickets: 0 });
        stream.with_local(init, |entry: &mut KeptStatus| {
            if entry.words.len() < len {
                // Freed on the stream after the passes that used them.
                entry.words = DeviceBuffer::zeroed(stream, len.max(2 * entry.words.len()))?;
                (entry.epoch, entry.tickets) = (0, 0);
            } else if entry.epoch + 1 >= MAX_EPOCH {
                // Every epoch used: zeroed again, after the passes before.
                entry.words.memset(stream, 0)?;
                (entry.epoch, entry.tickets) = (0, 0);
            }
            let pass = Pass { epoch: entry.epoch + 1, ticket_base: entry.tickets };
            // The epoch is spent whatever happens; the tickets are taken
            // only by a pass that was queued.
            entry.epoch = pass.epoch;
            launch(&mut entry.words, pass)?;
            entry.tickets += tickets;
            Ok(())
        })
    }
}

pub(crate) fn tile_config(tiles: usize, shape: TileShape) -> LaunchConfig {
    LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (shape.threads, 1, 1), shared_mem_bytes: 0 }
}

/// Elements per tile of `shape` for elements of `T`.
pub(crate) fn tile_len<T>(shape: TileShape) -> usize {
    shape.threads as usize * shape.vectors * tile::lanes::<T>()
}

fn scan<T: Element, Op: ReduceOp<T>, const INCLUSIVE_SCAN: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
    tuning: &ScanTuning,
    what: &'static str,
) -> Result<(), PrimsError> {
    check_len(what, input.len(), out.len())?;
    let n = input.len();
    if n == 0 {
        return Ok(());
    }
    debug_assert_eq!(input.device_ptr() % 16, 0);
    let shape = tuning.shape::<T>();
    let tiles = n.div_ceil(tile_len::<T>(shape));
    let look_back = tuning.look_back_for::<T>(stream, tiles, n)?;
    let config = tile_config(tiles, shape);
    let shared_runs = tuning.run_scan::<T>() == RunScan::Shared;
    let shared_config = LaunchConfig { shared_mem_bytes: shared_runs_bytes::<T>(shape) as u32, ..config };
    with_look_back::<T>(module, stream, tiles, tuning, what, |words, pass| {
        let status = words.as_atomic::<AtomicU64>();
        // Only the default's instance without the `tuning` feature: a
        // branch on a constant is not compiled into the instances it
        // cannot reach.
        macro_rules! launch {
            ($v:literal) => {
                if shared_runs {
                    if const { knobs::EVERY_INSTANCE || ScanTuning::SCAN.runs_scan_instance::<T>($v, true) } {
                        cuda_launch! {
                            kernel: scan_tiles::<T, Op, INCLUSIVE_SCAN, $v, true>, stream: stream, module: module, config: shared_config,
                            args: [slice(*input), op, slice_mut(*out), status, look_back, pass]
                        }?
                    } else {
                        return Err(knobs::not_compiled(what));
                    }
                } else if const { knobs::EVERY_INSTANCE || ScanTuning::SCAN.runs_scan_instance::<T>($v, false) } {
                    cuda_launch! {
                        kernel: scan_tiles::<T, Op, INCLUSIVE_SCAN, $v, false>, stream: stream, module: module, config: config,
                        args: [slice(*input), op, slice_mut(*out), status, look_back, pass]
                    }?
                } else {
                    return Err(knobs::not_compiled(what));
                }
            };
        }
        // The vector counts `ScanTuning::parse_scan` accepts: those of
        // `tile::with_vectors!` and 6 for 8-byte elements.
        if const { core::mem::size_of::<T>() > 4 } {
            match shape.vectors {
                4 => launch!(4),
                6 => launch!(6),
                8 => launch!(8),
                _ => launch!(12),
            }
        } else {
            match shape.vectors {
                4 => launch!(4),
                6 => launch!(6),
                _ => launch!(8),
            }
        }
        Ok(())
    })
}

/// Elements of `T` per tile of the scan under the tuning in force (the
/// boundaries a test must cover). A test hook.
#[doc(hidden)]
pub fn tile_elements<T>() -> usize {
    tile_len::<T>(ScanTuning::scan_from_env().shape::<T>())
}

/// `out[i] = input[0] op … op input[i]`, on `stream` (`out` as long as
/// `input`). `op` must be associative.
pub fn inclusive_scan<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
) -> Result<(), PrimsError> {
    scan::<T, Op, true>(module, stream, input, out, op, &ScanTuning::scan_from_env(), "inclusive_scan: output")
}

/// `out[0] = op.identity()`, `out[i] = input[0] op … op input[i - 1]`, on
/// `stream` (`out` as long as `input`). `op` must be associative.
pub fn exclusive_scan<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
) -> Result<(), PrimsError> {
    scan::<T, Op, false>(module, stream, input, out, op, &ScanTuning::scan_from_env(), "exclusive_scan: output")
}

/// [`inclusive_scan`] (`inclusive`) or [`exclusive_scan`] under `tuning`
/// instead of the one in force: a test hook, so that a test reaches the
/// paths the default does not take (the tile counter, `ticket`) in the
/// same process. Only with the `tuning` feature (see the [crate
/// docs](crate#features)).
#[doc(hidden)]
#[cfg(feature = "tuning")]
pub fn scan_with_tuning<T: Element, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    op: Op,
    inclusive: bool,
    tuning: &ScanTuning,
) -> Result<(), PrimsError> {
    if inclusive {
        scan::<T, Op, true>(module, stream, input, out, op, tuning, "inclusive_scan: output")
    } else {
        scan::<T, Op, false>(module, stream, input, out, op, tuning, "exclusive_scan: output")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_parses_the_knob() {
        let parse = |spec| ScanTuning::SCAN.parse("OXIDE_PRIMS_SCAN", spec);
        assert_eq!(parse(""), ScanTuning::SCAN);
        assert_eq!(parse("delay=600").look_back, LookBackTuning { poll_delay_ns: 600, ..ScanTuning::SCAN.look_back });
        assert_eq!(
            parse(" ticket , delay=0,first=1200,wait=all").look_back,
            LookBackTuning { poll_delay_ns: 0, first_poll_delay_ns: 1200, block_order: false, wait_all: true, prefetch_tiles: 0, prefetch_step: DEFAULT_PREFETCH_STEP }
        );
        assert!(ScanTuning::SCAN.look_back.block_order && ScanTuning::SELECT.look_back.block_order);
        assert!(parse("ticket,block-order").look_back.block_order);
        let t = parse("threads=256,vectors=4,wide-threads=384,wide-vectors=8,sleep-from=0");
        assert_eq!(t.narrow, TileShape { threads: 256, vectors: 4 });
        assert_eq!(t.wide, TileShape { threads: 384, vectors: 8 });
        assert_eq!(t.sleep_from, 0);
        assert_eq!(t.shape::<u32>(), t.narrow);
        assert_eq!(t.shape::<f64>(), t.wide);
        // Unknown items, bad numbers and shapes the kernels have no
        // instance for are ignored (with a warning).
        assert_eq!(parse("fast,delay=x,threads=100,threads=512,vectors=12,wide-vectors=6,init=none"), ScanTuning::SCAN);
    }

    #[test]
    fn only_inputs_larger_than_the_l2_are_prefetched_by_default() {
        let l2 = 50 << 20;
        // The H200's L2: 2^22 four-byte elements fit (and lost to the
        // requests), 2^24 do not.
        assert!(!ScanTuning::SCAN.prefetches(4 << 22, l2));
        assert!(!ScanTuning::SCAN.prefetches(l2, l2));
        assert!(ScanTuning::SCAN.prefetches(l2 + 1, l2));
        assert!(ScanTuning::SELECT.prefetches(4 << 24, l2));
        // A GPU that does not report its L2 (0) prefetches every input.
        assert!(ScanTuning::SCAN.prefetches(16, 0));
        let always = ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-when=always");
        assert!(always.prefetches(16, l2) && !always.prefetch_past_l2);
        assert_eq!(always.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-when=past-l2"), ScanTuning::SCAN);
        assert_eq!(ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-when=never"), ScanTuning::SCAN);
    }

    #[test]
    fn the_prefetch_distance_grows_with_the_multiprocessors() {
        // The H200's 132 multiprocessors: about 100 tiles of 4-byte
        // elements ahead, 50 of 8-byte ones (the defaults).
        let h200 = ScanTuning::SCAN;
        assert_eq!(h200.prefetch_tiles::<u32>(132), 99);
        assert_eq!(h200.prefetch_tiles::<f32>(132), 99);
        assert_eq!(h200.prefetch_tiles::<u64>(132), 49);
        assert_eq!(h200.prefetch_tiles::<u32>(16), 12);
        assert_eq!(ScanTuning::SELECT.prefetch_tiles::<u32>(132), 99);
        let t = ScanTuning::SELECT.parse("OXIDE_PRIMS_SELECT", "prefetch=6,wide-prefetch=2");
        assert_eq!((t.prefetch_tiles::<u32>(132), t.prefetch_tiles::<u64>(132)), (99, 33));
        let off = h200.parse_scan("OXIDE_PRIMS_SCAN", "prefetch=0,wide-prefetch=0");
        assert_eq!((off.prefetch_tiles::<u32>(132), off.prefetch_tiles::<u64>(132)), (0, 0));
        // One bulk request per tile unless a step in bytes is named.
        assert_eq!(ScanTuning::SCAN.prefetch_step, PREFETCH_BULK);
        assert_eq!(ScanTuning::SELECT.prefetch_step, PREFETCH_BULK);
        assert_eq!(h200.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-step=128").prefetch_step, 128);
        assert_eq!(h200.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-step=48").prefetch_step, PREFETCH_BULK);
        assert_eq!(h200.parse_scan("OXIDE_PRIMS_SCAN", "prefetch-step=32,prefetch-step=bulk"), ScanTuning::SCAN);
        // Out of range or not a number: ignored (with a warning).
        assert_eq!(ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", "prefetch=65,wide-prefetch=x"), ScanTuning::SCAN);
        // Every launch's look-back starts with none; the host sets it.
        assert_eq!(ScanTuning::SCAN.look_back.prefetch_tiles, 0);
    }

    #[test]
    fn both_knobs_choose_how_the_status_is_zeroed() {
        assert_eq!(ScanTuning::SCAN.init, StatusInit::Memset);
        assert_eq!(ScanTuning::SELECT.init, StatusInit::Memset);
        let scan = ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", "init=kernel");
        assert_eq!(scan, ScanTuning { init: StatusInit::Kernel, ..ScanTuning::SCAN });
        assert_eq!(scan.parse_scan("OXIDE_PRIMS_SCAN", "init=memset"), ScanTuning::SCAN);
        let select = ScanTuning::SELECT.parse("OXIDE_PRIMS_SELECT", "threads=128, init=kernel");
        assert_eq!(select.init, StatusInit::Kernel);
        assert_eq!(select.narrow.threads, 128);
        assert!(ScanTuning::SCAN.keep_status && ScanTuning::SELECT.keep_status);
        let temp = ScanTuning::SELECT.parse("OXIDE_PRIMS_SELECT", "status=temp");
        assert_eq!(temp, ScanTuning { keep_status: false, ..ScanTuning::SELECT });
        assert_eq!(temp.parse("OXIDE_PRIMS_SELECT", "status=kept"), ScanTuning::SELECT);
        assert!(!ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", "status=temp,status=other").keep_status);
    }

    #[test]
    fn a_pass_reads_only_its_own_epochs_flags() {
        // Zeroed words: epoch 0, the flags as published.
        let fresh = Pass::FRESH;
        assert_eq!((fresh.flag_of(0), fresh.flag_of(PARTIAL), fresh.flag_of(INCLUSIVE)), (INVALID, PARTIAL, INCLUSIVE));
        // Kept words: the flags of this pass's epoch count, those of any
        // other pass (and zeroed words) read as unpublished.
        let pass = Pass { epoch: 7, ticket_base: 1 << 40 };
        assert_eq!(pass.flag_of(7 << 2 | PARTIAL), PARTIAL);
        assert_eq!(pass.flag_of(7 << 2 | INCLUSIVE), INCLUSIVE);
        for stale in [0, PARTIAL, INCLUSIVE, 6 << 2 | INCLUSIVE, 8 << 2 | PARTIAL, (MAX_EPOCH - 1) << 2 | INCLUSIVE] {
            assert_eq!(pass.flag_of(stale), INVALID, "{stale:#x}");
        }
        // The largest epoch still fits the flag with its state.
        let last = Pass { epoch: MAX_EPOCH - 1, ticket_base: 0 };
        assert_eq!(last.flag_of(INCLUSIVE | last.epoch << 2), INCLUSIVE);
    }

    #[test]
    fn scan_knob_takes_run_scans_and_cubs_wide_tile() {
        let scan = |spec| ScanTuning::SCAN.parse_scan("OXIDE_PRIMS_SCAN", spec);
        let t = scan("wide-threads=224,wide-vectors=6,wide-runs=shared");
        assert_eq!(t.wide, TileShape { threads: 224, vectors: 6 });
        assert_eq!((t.runs, t.wide_runs), (RunScan::Shuffle, RunScan::Shared));
        assert_eq!(t.run_scan::<u32>(), RunScan::Shuffle);
        assert_eq!(t.run_scan::<f64>(), RunScan::Shared);
        assert_eq!(scan("runs=shared,wide-runs=shuffle").runs, RunScan::Shared);
        assert_eq!(scan("runs=smem,vectors=12"), ScanTuning::SCAN, "unknown run scans and 4-byte vectors=12 are ignored");
        // Select has no instance of six 8-byte vectors nor a run scan
        // choice: its knob ignores them.
        let select = ScanTuning::SELECT.parse("OXIDE_PRIMS_SELECT", "wide-vectors=6,runs=shared,wide-runs=shared");
        assert_eq!(select, ScanTuning::SELECT);
    }

    #[test]
    fn shared_runs_slots_are_distinct_and_fit() {
        fn check<T>() {
            let size = core::mem::size_of::<T>();
            // Lanes served together: a warp for 4-byte accesses, a
            // half-warp for 8-byte ones (128 bytes, 32 banks of 4 bytes,
            // i.e. `group` element-wide bank sets).
            let group = if size > 4 { 16 } else { 32 };
            let distinct = |slots: &mut dyn Iterator<Item = usize>| {
                slots.map(|slot| slot % group).collect::<std::collections::HashSet<_>>().len()
            };
            for vectors in [4usize, 6, 8, 12] {
                let per_warp = shared_runs_per_warp::<T>(vectors);
                let mut seen = vec![false; per_warp];
                for i in 0..32 * vectors {
                    let slot = shared_run_slot::<T>(i);
                    assert!(slot < per_warp && !seen[slot], "run {i} of {vectors} vectors: slot {slot} taken or past the rows");
                    seen[slot] = true;
                }
                if vectors == 8 {
                    for k in 0..vectors {
                        let reads = (0..group).map(|l| shared_run_slot::<T>(vectors * l + k));
                        assert_eq!(distinct(&mut reads.collect::<Vec<_>>().into_iter()), group, "{size}-byte runs, 8 vectors, read {k}");
                    }
                }
                for first in (0..32).step_by(group) {
                    let lanes = first..first + group;
                    // The stores of vector j: distinct banks for all but at
                    // most one lane of the group.
                    for j in 0..vectors {
                        let got = distinct(&mut lanes.clone().map(|l| shared_run_slot::<T>(32 * j + l)));
                        assert!(got * 16 >= group * 15, "{size}-byte runs, {vectors} vectors, store {j}: {got} banks");
                    }
                    // The strided reads: at most a few lanes share a bank,
                    // none at 8 vectors.
                    for k in 0..vectors {
                        let got = distinct(&mut lanes.clone().map(|l| shared_run_slot::<T>(vectors * l + k)));
                        assert!(got * 16 >= group * 12, "{size}-byte runs, {vectors} vectors, read {k}: {got} banks");
                    }
                }
            }
        }
        check::<u32>();
        check::<u64>();
        assert_eq!(shared_runs_bytes::<u64>(TileShape { threads: 224, vectors: 6 }), 7 * (6 * 32 + 6 * 4) * 8);
        assert_eq!(shared_runs_bytes::<u32>(TileShape { threads: 128, vectors: 8 }), 4 * 8 * 33 * 4);
        assert!(shared_runs_bytes::<u64>(TileShape { threads: MAX_THREADS as u32, vectors: 12 }) <= 48 * 1024, "within the default limit");
    }

    #[test]
    fn short_grids_poll_without_back_offs() {
        let lb = ScanTuning::SCAN.look_back;
        assert_eq!(lb.for_grid(499, 500), LookBackTuning { poll_delay_ns: 0, first_poll_delay_ns: 0, ..lb });
        assert_eq!(lb.for_grid(500, 500), lb);
    }

    #[test]
    fn tile_lengths_follow_the_shape() {
        assert_eq!(tile_len::<u32>(ScanTuning::SCAN.narrow), 128 * 32);
        assert_eq!(tile_len::<u64>(ScanTuning::SCAN.wide), 256 * 16);
        assert_eq!(tile_len::<f32>(TileShape { threads: 384, vectors: 8 }), 384 * 32);
        assert_eq!(tile_len::<u64>(TileShape { threads: 224, vectors: 6 }), 224 * 12, "CUB's sm_90 tile for 8-byte sums");
    }

    #[test]
    fn totals_round_trip_through_status_bits() {
        assert_eq!(from_bits::<u32>(to_bits(0xdead_beef_u32)), 0xdead_beef);
        assert_eq!(to_bits(-1i32), 0xffff_ffff, "4-byte totals fill the low half only");
        assert_eq!(from_bits::<f32>(to_bits(-2.5f32)), -2.5);
        assert_eq!(from_bits::<u64>(to_bits(0x0123_4567_89ab_cdef_u64)), 0x0123_4567_89ab_cdef);
        assert_eq!(from_bits::<f64>(to_bits(f64::MIN_POSITIVE)), f64::MIN_POSITIVE);
        assert_eq!(words_per_tile::<u32>(), 1);
        assert_eq!(words_per_tile::<i64>(), 2);
    }
}
