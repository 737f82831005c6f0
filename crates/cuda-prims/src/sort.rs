//! Device-wide radix sort: keys only ([`sort_keys`]) and key–value pairs
//! ([`sort_pairs`]), ascending or descending, stable.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_host::load_kernel_module;
//! use cuda_prims::sort::{sort_pairs, Order};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! // The program's image holds this crate's kernels.
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let keys = DeviceBuffer::from_host(&stream, &[3.5f32, -1.0, 2.0, -1.0])?;
//! let values = DeviceBuffer::from_host(&stream, &[0u32, 1, 2, 3])?;
//! let mut keys_out = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
//! let mut values_out = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
//! sort_pairs(&module, &stream, &keys, &values, &mut keys_out, &mut values_out, Order::Ascending)?;
//! assert_eq!(keys_out.to_host_vec(&stream)?, [-1.0, -1.0, 2.0, 3.5]);
//! assert_eq!(values_out.to_host_vec(&stream)?, [1, 3, 2, 0]); // stable
//! # Ok(())
//! # }
//! ```
//!
//! # Order of keys
//! Keys are compared by their *order bits*, an unsigned integer of the key's
//! width that increases with the key ([`RadixKey::order_bits`]):
//! unsigned keys as they are; signed keys with the sign bit flipped; `f32`
//! keys with the sign bit flipped when it is clear and every bit flipped
//! when it is set, after `-0.0` is read as `+0.0`. So, as CUB's
//! `DeviceRadixSort` orders them: `-0.0` and `+0.0` are *equal* (they keep
//! their input order, and their bits), and NaNs sort by their bits — a NaN
//! with the sign bit set before `-inf`, one without it after `+inf`.
//! Descending order is the same order reversed, still stable: equal keys
//! keep their input order in both directions.
//!
//! # How it runs (one sweep, least significant digit first)
//! One launch counts the 8-bit digits of every pass at once (a histogram of
//! 256 bins per pass, privatised in shared memory); then one launch per pass
//! scatters the keys. A block of the scatter takes the next tile of keys
//! (an atomic ticket, so tiles are taken in order: 256 threads × 24 keys of
//! 4 bytes, alone or with 4-byte values, or × 16 for 8-byte keys or
//! values), loads it with every
//! load in flight at once, counts its digits per warp (shared-memory
//! atomics) and publishes its 256 digit counts at once, before any key is
//! ranked, so that later tiles can look back. It then ranks each key within
//! its warp (eight ballots, one per digit bit, find the lanes of equal
//! digits) straight into its slot of the tile in digit order in shared
//! memory, and only then looks back over the counts of the tiles before it
//! (decoupled look-back, one thread per digit, a few predecessors per poll)
//! for each digit's place in the output; the tile is then written out from
//! shared memory in runs of equal digits; a tile with values then loads
//! them, exchanges them through the same shared memory by the keys' ranks
//! and writes them out the same way (a thread never holds keys and values
//! at once). Keys travel between passes as
//! their *ordered bits* ([`RadixKey::to_ordered`]): the first pass maps
//! each key once on load, the last maps it back once on store, and the
//! passes between move bare unsigned integers, so a digit of any key type
//! costs a shift and a mask. Ordered bits keep `-0.0` one below `+0.0` (the
//! map must be reversible to keep its bits); when the digit count meets a
//! `-0.0`, the passes read it as `+0.0` in every digit, in a copy of their
//! code that only such sorts run. A tile's status is one 32-bit word per digit (two flag
//! bits above a 30-bit count), written and read whole with relaxed
//! device-scope accesses, no fence. Temporary storage (the other half of
//! the double buffer, the counts and two alternating regions of tile
//! statuses) is allocated on the
//! caller's stream and freed there: a program that sorts in a loop keeps
//! that memory in the device's pool by raising its release threshold
//! (`ctx.memory_pool()?.set_release_threshold(u64::MAX)`, see
//! `cuda_core::MemPool`), else each synchronisation hands it back.

use core::sync::atomic::{AtomicU32, Ordering};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{device, kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};
use crate::knobs;
use crate::temp;
use crate::PrimsError;

/// Bits of the key one pass sorts by.
const DIGIT_BITS: u32 = 8;
/// Values of one digit.
const RADIX: usize = 1 << DIGIT_BITS;
/// Threads per block of every sort kernel: one per digit.
const THREADS: usize = RADIX;
/// Warps per block.
const WARPS: usize = THREADS / 32;
/// Threads per block of the wide scatter instances of four-byte keys
/// ([`SortTuning::threads`]): CUB's onesweep block on sm_90. The first
/// [`RADIX`] threads take a digit each; the others only load, count, rank
/// and store keys.
const WIDE_THREADS: usize = 384;
/// Warps per block of the wide scatter.
const WIDE_WARPS: usize = WIDE_THREADS / 32;
/// Keys per thread of the digit count ([`radix_histogram`]).
const HISTOGRAM_ITEMS: usize = 16;
/// Keys a block of the digit count reads per step.
const HISTOGRAM_TILE: usize = THREADS * HISTOGRAM_ITEMS;
/// 8-byte words of the scatter's exchange buffer, which holds one tile of
/// keys or values: 16 per thread of 8 bytes, or up to 32 of 4 bytes.
const EXCHANGE_WORDS: usize = THREADS * 16;
/// Keys per thread of a scatter tile of 8-byte keys or of pairs.
const WIDE_ITEMS: usize = 16;
/// Keys per thread of a scatter tile of 4-byte keys alone, by default
/// ([`SortTuning::items`]).
const DEFAULT_ITEMS: usize = 24;
/// Keys per thread of a scatter tile of 4-byte keys with 4-byte values,
/// by default ([`SortTuning::pair_items`]): with the values loaded once the
/// keys are out ([`ValueLoad::After`]) a thread never holds keys, ranks and
/// values at once, and this tile fits four blocks per multiprocessor with
/// no spills (benches/README.md, "radix sort: pairs, values after the
/// keys").
const DEFAULT_PAIR_ITEMS: usize = 24;
/// Blocks per multiprocessor of a 256-thread tile of four-byte keys with
/// four-byte values, by default ([`SortTuning::pair_blocks`]; the wide
/// tile, the default, reads it as 2).
const DEFAULT_PAIR_BLOCKS: u32 = 4;
/// [`ValueLoad::Early`] as [`radix_scatter`]'s `VALUES`.
const VALUES_EARLY: u32 = 0;
/// [`ValueLoad::Late`] as [`radix_scatter`]'s `VALUES`.
const VALUES_LATE: u32 = 1;
/// [`ValueLoad::After`] as [`radix_scatter`]'s `VALUES`.
const VALUES_AFTER: u32 = 2;
/// Predecessors one look-back poll reads, by default ([`SortTuning::window`]).
const DEFAULT_WINDOW: u32 = 2;
/// The widest look-back window.
const MAX_WINDOW: usize = 4;
/// The most passes (64-bit keys).
const MAX_PASSES: usize = 8;
/// Slots of the scratch buffer between the histograms and the tile statuses:
/// one tile ticket per pass, and [`MINUS_ZERO_SLOT`].
const TICKETS: usize = 32;
/// The slot among [`TICKETS`] that the digit count sets to 1 when a key is
/// `-0.0`: then the scatter passes read `-0.0`'s ordered bits as `+0.0`'s
/// for every digit ([`RadixKey::merge_zeros`]); without one they skip that
/// test.
const MINUS_ZERO_SLOT: usize = TICKETS - 1;
/// The most keys one sort takes: a tile status packs a 30-bit count.
pub const MAX_LEN: usize = (1 << 30) - 1;
/// Tile status: this tile's own digit count is published.
const AGGREGATE: u32 = 1 << 30;
/// Tile status: the count of this digit in this tile and all before it.
const PREFIX: u32 = 2 << 30;
/// The count bits of a tile status.
const COUNT_MASK: u32 = (1 << 30) - 1;

mod sealed {
    pub trait Sealed {}
}

/// A key type the radix sort orders: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`.
pub trait RadixKey: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The key's width in bits.
    const BITS: u32;
    /// The unsigned integer whose order is the sort's order of keys (see
    /// the [module docs](self)), widened to `u64`.
    fn order_bits(self) -> u64;
    /// The 8-bit digit at `shift` of the order bits, of their complement
    /// when `descending`.
    fn digit(self, shift: u32, descending: bool) -> u32;
    /// The key whose every digit is the largest (255) in the given
    /// direction: the last key of all (order bits all ones, or all zeros
    /// when `descending`). The sort pads a ragged last tile with it, so
    /// that its padding ranks after every real key and no key needs a
    /// bounds test.
    fn padding(descending: bool) -> Self;
    /// The unsigned integer of the key's width (`u32` or `u64`) that the
    /// scatter passes hold the key as ([`to_ordered`](RadixKey::to_ordered)).
    type Bits: RadixKey;
    /// Whether [`to_ordered`](RadixKey::to_ordered) changes the bits (not
    /// for unsigned keys): the first pass maps on load and the last maps
    /// back on store only where it does.
    const MAPPED: bool;
    /// Whether the key has two zeros (`-0.0` and `+0.0`) that the sort
    /// takes as equal: floats.
    const SIGNED_ZERO: bool;
    /// The key as the scatter passes hold it, from the first pass's load to
    /// the last pass's store (and in the buffers between passes, which are
    /// the sort's own): its order bits, but `-0.0` one below `+0.0`, so
    /// that the map is reversible and keeps `-0.0`'s bits. Each digit is
    /// then a shift and a mask, as for unsigned keys.
    fn to_ordered(self) -> Self::Bits;
    /// [`to_ordered`](RadixKey::to_ordered)'s inverse.
    fn from_ordered(bits: Self::Bits) -> Self;
    /// Ordered bits ([`to_ordered`](RadixKey::to_ordered)) with `-0.0`'s
    /// read as `+0.0`'s: the order bits. The scatter applies it to each
    /// digit only in a sort whose keys hold a `-0.0`.
    fn merge_zeros(bits: Self::Bits) -> Self::Bits;
    /// `-0.0`'s ordered bits ([`to_ordered`](RadixKey::to_ordered)), `+0.0`'s
    /// less one (floats; no key of other types is mapped there).
    const MINUS_ZERO_BITS: Self::Bits;
    /// [`merge_zeros`](RadixKey::merge_zeros) with `-0.0`'s ordered bits
    /// given as `minus` ([`MINUS_ZERO_BITS`](RadixKey::MINUS_ZERO_BITS)):
    /// the scatter's ranking under fewer registers passes them read back
    /// from shared memory, so that the compiler cannot reuse the merged
    /// keys of the digit count there and hold them, one register a key,
    /// from the count to the ranking.
    fn merge_zeros_from(bits: Self::Bits, minus: Self::Bits) -> Self::Bits;
    /// Whether the key is `-0.0` (never, but for floats).
    fn is_minus_zero(self) -> bool;
}

macro_rules! radix_key {
    ($($t:ty, $bits:ty, $width:literal, |$k:ident| $order:expr, |$o:ident| $key:expr,
       $mapped:literal, $signed_zero:literal, |$tk:ident| $to:expr, |$fb:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl RadixKey for $t {
            const BITS: u32 = $width;
            type Bits = $bits;
            const MAPPED: bool = $mapped;
            const SIGNED_ZERO: bool = $signed_zero;
            #[inline(always)]
            fn to_ordered(self) -> $bits {
                let $tk = self;
                $to
            }
            #[inline(always)]
            fn from_ordered($fb: $bits) -> Self {
                $from
            }
            #[inline(always)]
            fn merge_zeros(bits: $bits) -> $bits {
                // `-0.0`'s ordered bits are `+0.0`'s less one (see
                // `float_ordered`); nothing else maps there.
                const MINUS: $bits = (1 << ($width - 1)) - 1;
                if $signed_zero && bits == MINUS { MINUS + 1 } else { bits }
            }
            const MINUS_ZERO_BITS: $bits = (1 << ($width - 1)) - 1;
            #[inline(always)]
            fn merge_zeros_from(bits: $bits, minus: $bits) -> $bits {
                if $signed_zero && bits == minus { minus.wrapping_add(1) } else { bits }
            }
            #[inline(always)]
            fn is_minus_zero(self) -> bool {
                $signed_zero && self.to_ordered() == (1 << ($width - 1)) - 1
            }
            #[inline(always)]
            fn order_bits(self) -> u64 {
                let $k = self;
                let o: $bits = $order;
                o as u64
            }
            #[inline(always)]
            fn digit(self, shift: u32, descending: bool) -> u32 {
                let $k = self;
                let o: $bits = $order;
                let o = if descending { !o } else { o };
                ((o >> shift) as u32) & (RADIX as u32 - 1)
            }
            #[inline(always)]
            fn padding(descending: bool) -> Self {
                let $o: $bits = if descending { 0 } else { !0 };
                $key
            }
        }
    )*};
}

/// The bits of an IEEE float whose order bits are `o` (sign bit `sign`):
/// [`float_order`]'s inverse, but for `-0.0`, which it reads as `+0.0`.
macro_rules! float_key {
    ($o:expr, $sign:expr) => {{
        let o = $o;
        if o & $sign != 0 { o & !$sign } else { !o }
    }};
}

/// The order bits of an IEEE float's bits `b` with sign bit `sign`:
/// `-0.0` as `+0.0`, then negative numbers flipped entirely, others by sign.
macro_rules! float_order {
    ($b:expr, $sign:expr) => {{
        let b = $b;
        let b = if b == $sign { 0 } else { b };
        if b & $sign != 0 { !b } else { b | $sign }
    }};
}

/// The ordered bits ([`RadixKey::to_ordered`]) of an IEEE float's bits
/// `b` (of the unsigned integer `$bits`, whose signed integer is
/// `$signed`): negative numbers flipped entirely, others by sign; `-0.0`
/// so becomes `+0.0`'s image less one. A shift and one three-input logic
/// operation.
macro_rules! float_ordered {
    ($b:expr, $bits:ty, $signed:ty) => {{
        let b: $bits = $b;
        // All ones for a negative key, else zero.
        let negative = ((b as $signed) >> (<$bits>::BITS - 1)) as $bits;
        b ^ (negative | 1 << (<$bits>::BITS - 1))
    }};
}

/// [`float_ordered!`]'s inverse: the float's bits from ordered bits `r`.
macro_rules! float_unordered {
    ($r:expr, $bits:ty, $signed:ty) => {{
        let r: $bits = $r;
        // All ones where the key was negative (the sign bit clear here).
        let negative = !((r as $signed) >> (<$bits>::BITS - 1)) as $bits;
        r ^ (negative | 1 << (<$bits>::BITS - 1))
    }};
}

// Each type: its order bits from a key `k`, and a key `o` whose order bits
// are `o` (for floats, the NaN or the key other than -0.0); whether its
// ordered bits differ from its bits and whether it has two zeros; its
// ordered bits from a key `k`, and the key from ordered bits `r`.
radix_key! {
    u32, u32, 32, |k| k, |o| o, false, false, |k| k, |r| r;
    i32, u32, 32, |k| (k as u32) ^ (1 << 31), |o| (o ^ (1 << 31)) as i32,
        true, false, |k| (k as u32) ^ (1 << 31), |r| (r ^ (1 << 31)) as i32;
    f32, u32, 32, |k| float_order!(k.to_bits(), 1u32 << 31), |o| f32::from_bits(float_key!(o, 1u32 << 31)),
        true, true, |k| float_ordered!(k.to_bits(), u32, i32), |r| f32::from_bits(float_unordered!(r, u32, i32));
    u64, u64, 64, |k| k, |o| o, false, false, |k| k, |r| r;
    i64, u64, 64, |k| (k as u64) ^ (1 << 63), |o| (o ^ (1 << 63)) as i64,
        true, false, |k| (k as u64) ^ (1 << 63), |r| (r ^ (1 << 63)) as i64;
    f64, u64, 64, |k| float_order!(k.to_bits(), 1u64 << 63), |o| f64::from_bits(float_key!(o, 1u64 << 63)),
        true, true, |k| float_ordered!(k.to_bits(), u64, i64), |r| f64::from_bits(float_unordered!(r, u64, i64));
}

/// Which way [`sort_keys`] and [`sort_pairs`] order the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Smallest key first.
    Ascending,
    /// Largest key first (equal keys still in input order).
    Descending,
}

// ---------------------------------------------------------------------------
// Device code

/// The scratch buffer's layout: `passes * RADIX` digit counts, [`TICKETS`]
/// tile tickets, then two regions of `tiles * RADIX` tile statuses, all
/// zeroed before the sort. Pass `p` uses region `p % 2`, and each of its
/// tiles zeroes its own statuses in the other region, which the pass before
/// used and the pass after will: the sort zeroes two regions, not one per
/// pass.
#[inline(always)]
fn status_base(passes: usize) -> usize {
    passes * RADIX + TICKETS
}

/// Counts the digits of every pass of every key: `scratch[p * 256 + d]` +=
/// the keys whose digit `p` is `d`; sets the slot `MINUS_ZERO_SLOT` when
/// a key is `-0.0`. Launch with `THREADS` threads.
#[kernel]
pub fn radix_histogram<K: RadixKey>(keys: &[K], descending: u32, mut scratch: DisjointSlice<u32>) {
    shared! { static COUNTS: [AtomicU32; MAX_PASSES * RADIX]; }
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let desc = descending != 0;
    let tid = thread::threadIdx_x() as usize;
    let mut b = tid;
    while b < passes * RADIX {
        // SAFETY: each thread zeroes its own bins; the barrier comes before
        // any atomic access.
        unsafe { COUNTS.write(b, AtomicU32::new(0)) };
        b += THREADS;
    }
    thread::sync_threads();

    let n = keys.len();
    let tiles = n.div_ceil(HISTOGRAM_TILE);
    let mut tile = thread::blockIdx_x() as usize;
    // Whether this thread met a `-0.0` (see `MINUS_ZERO_SLOT`).
    let mut minus_zero = false;
    while tile < tiles {
        let base = tile * HISTOGRAM_TILE;
        // All loads of the tile first, so that they are in flight together.
        let mut ks = [K::default(); HISTOGRAM_ITEMS];
        let mut valid = [false; HISTOGRAM_ITEMS];
        #[unroll]
        for i in 0..HISTOGRAM_ITEMS {
            let idx = base + i * THREADS + tid;
            if idx < n {
                ks[i] = keys[idx];
                valid[i] = true;
            }
        }
        #[unroll]
        for i in 0..HISTOGRAM_ITEMS {
            if valid[i] {
                if K::SIGNED_ZERO {
                    minus_zero |= ks[i].is_minus_zero();
                }
                #[unroll]
                for p in 0..passes {
                    let d = ks[i].digit(p as u32 * DIGIT_BITS, desc) as usize;
                    // SAFETY: initialised above, before the barrier.
                    unsafe { COUNTS.get_ref(p * RADIX + d) }.fetch_add_scoped(1, Scope::Block, Ordering::Relaxed);
                }
            }
        }
        tile += thread::gridDim_x() as usize;
    }
    thread::sync_threads();

    let global = scratch.as_mut_ptr();
    if minus_zero {
        // SAFETY: the slot lies inside the scratch buffer (after the
        // counts) and is only accessed atomically during this launch.
        unsafe { AtomicU32::from_ptr(global.add(passes * RADIX + MINUS_ZERO_SLOT)) }.store_scoped(1, Scope::Device, Ordering::Relaxed);
    }
    let mut b = tid;
    while b < passes * RADIX {
        // SAFETY: every bin was initialised before the barriers.
        let count = unsafe { COUNTS.get_ref(b) }.load_scoped(Scope::Block, Ordering::Relaxed);
        if count > 0 {
            // SAFETY: the scratch buffer holds at least `passes * RADIX`
            // counts (the host allocates it so) and is only accessed
            // atomically during this launch.
            unsafe { AtomicU32::from_ptr(global.add(b)) }.fetch_add_scoped(count, Scope::Device, Ordering::Relaxed);
        }
        b += THREADS;
    }
}

/// A shared array's pointer, hidden from address-space inference in debug
/// builds: there the standard library's null checks of raw-pointer accesses
/// would compare a shared address with null converted to the shared space,
/// which PTX leaves undefined (and the emulator rejects). Release builds
/// have no such checks and keep the `ld.shared`/`st.shared` forms.
#[inline(always)]
pub(crate) fn shared_ptr<T>(p: *mut T) -> *mut T {
    if cfg!(debug_assertions) {
        // SAFETY: reads a local variable.
        unsafe { core::ptr::read_volatile(&p) }
    } else {
        p
    }
}

/// Inclusive sum over the lanes of a full warp.
#[inline(always)]
pub(crate) fn warp_inclusive_sum(x: u64) -> u64 {
    let lane = warp::lane_id();
    let mut sum = x;
    let mut delta = 1;
    while delta < warp::WARP_SIZE {
        let below = warp::shfl_up(warp::FULL_MASK, sum, delta);
        if lane >= delta {
            sum = sum.wrapping_add(below);
        }
        delta *= 2;
    }
    sum
}

/// Exclusive sum over the [`THREADS`] threads of the block, in thread
/// order; `totals` is shared scratch of [`WARPS`] slots. Every thread of the
/// block must call it (it waits at two barriers).
///
/// # Safety
/// `totals` points to [`WARPS`] slots of shared memory that no other code
/// touches during the call.
#[inline(always)]
pub(crate) unsafe fn block_exclusive_sum(x: u64, totals: *mut u64) -> u64 {
    block_exclusive_sum_of::<THREADS>(x, totals)
}

/// [`block_exclusive_sum`] for a block of `BT` threads (a multiple of 32);
/// `totals` has `BT / 32` slots.
///
/// # Safety
/// As [`block_exclusive_sum`]'s.
#[inline(always)]
unsafe fn block_exclusive_sum_of<const BT: usize>(x: u64, totals: *mut u64) -> u64 {
    let inclusive = warp_inclusive_sum(x);
    let w = thread::threadIdx_x() as usize / 32;
    if warp::lane_id() == 31 {
        *totals.add(w) = inclusive;
    }
    thread::sync_threads();
    let mut before = 0u64;
    for i in 0..BT / 32 {
        if i < w {
            before = before.wrapping_add(*totals.add(i));
        }
    }
    thread::sync_threads();
    before.wrapping_add(inclusive).wrapping_sub(x)
}

/// One pass of the sort: moves each key (and, with `PAIRS`, its value) of
/// `keys_in` to its place by digit `pass` in `keys_out`. Launch with
/// `BT` threads and `tiles` blocks of `BT * ITEMS` keys after
/// [`radix_histogram`] filled the counts of `scratch`; `look_back` is a
/// [`SortTuning::look_back_word`]. `VALUES` says when a tile loads its
/// values ([`ValueLoad`] as a number: `ValueLoad::word`).
///
/// Between the first pass's load and the last pass's store the keys are
/// their ordered bits ([`RadixKey::to_ordered`]): the first pass maps them
/// on load, the last maps them back on store, and the passes between read
/// and write the ordered bits (in the sort's own buffer and, for odd
/// passes, in `keys_out` before the last pass overwrites it). Each digit is
/// then a shift and a mask as for unsigned keys, but when the keys hold a
/// `-0.0` (`MINUS_ZERO_SLOT`): then every digit reads `-0.0` as `+0.0`,
/// in a second copy of the pass's code, so that the usual one has no such
/// test.
///
/// A tile, in order: count its digits per warp (shared-memory atomics, no
/// ranking yet), publish the tile's 256 counts, scan them for the tile's
/// digit starts, rank each key within its warp (`match_digit`) straight into
/// its slot of the tile in digit order, look back over the tiles before for
/// each digit's place in the output (thread `d` for digit `d`), then write
/// the tile out from shared memory in runs of equal digits. Publishing
/// before the ranking shortens what a later tile waits for; looking back
/// after it gives the earlier tiles that time to finish theirs.
// `BLOCKS` blocks per multiprocessor: the host picks three (80 registers)
// for every instance but pairs with 8-byte keys or values, and four-byte
// pairs of more than 16 keys per thread that hold their values through the
// look-back, which spilled there and get two; and four (64 registers) for
// four-byte keys alone at 16 or 24 keys per thread and four-byte pairs
// under `SortTuning::blocks` and `SortTuning::pair_blocks`. `BT` threads a
// block: `THREADS`, or `WIDE_THREADS` for four-byte keys alone under
// `SortTuning::threads` (three blocks, 56 registers: CUB's shape for f32).
#[kernel(launch_bounds(BT, BLOCKS))]
#[allow(clippy::too_many_arguments)]
pub fn radix_scatter<K: RadixKey, V: Copy + Default, const PAIRS: bool, const ITEMS: usize, const BLOCKS: u32, const VALUES: u32, const BT: usize>(
    keys_in: &[K],
    values_in: &[V],
    mut keys_out: DisjointSlice<K>,
    mut values_out: DisjointSlice<V>,
    mut scratch: DisjointSlice<u32>,
    pass: u32,
    descending: u32,
    tiles: u32,
    look_back: u32,
) {
    // The tile in digit order: its keys, later its values.
    shared! { static EXCHANGE: [u64; EXCHANGE_WORDS]; }
    // Per warp and digit: the warp's count of the digit, then the next free
    // slot of the tile for the warp's keys of that digit.
    shared! { static WARP_COUNTS: [u32; WARPS * RADIX]; }
    // Per digit: output index minus slot in the tile for the keys of the digit.
    shared! { static ADJUST: [u32; RADIX]; }
    shared! { static TOTALS: [u64; WARPS]; }
    // `WARP_COUNTS` and `TOTALS` of a wide block, arrays of their own so
    // that the 256-thread instances keep their shared memory.
    shared! { static WIDE_WARP_COUNTS: [u32; WIDE_WARPS * RADIX]; }
    shared! { static WIDE_TOTALS: [u64; WIDE_WARPS]; }
    // The tile's number, and the digit's shift again (in an instance of
    // fewer registers, with the direction above it; see the ranking).
    shared! { static TICKET: [u32; 2]; }
    // `-0.0`'s ordered bits, read back by the ranking of a sort that holds
    // one in an instance of fewer registers (see `RadixKey::merge_zeros_from`).
    shared! { static MINUS_ZERO: [u64; 1]; }

    // A tile wider than the exchange, or a block of another width: no
    // instance the host launches has one (`scatter_pass` picks them); a
    // guard against a future one.
    if BT * ITEMS * size_of::<K>().max(if PAIRS { size_of::<V>() } else { 0 }) > EXCHANGE_WORDS * 8 || (BT != THREADS && BT != WIDE_THREADS) {
        return;
    }
    let wide = BT > THREADS;
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let scratch = scratch.as_mut_ptr();
    let shared = Shared {
        exchange: shared_ptr(EXCHANGE.as_mut_ptr()),
        warp_counts: shared_ptr(if wide { WIDE_WARP_COUNTS.as_mut_ptr() } else { WARP_COUNTS.as_mut_ptr() }),
        adjust: shared_ptr(ADJUST.as_mut_ptr()),
        totals: shared_ptr(if wide { WIDE_TOTALS.as_mut_ptr() } else { TOTALS.as_mut_ptr() }),
        ticket: shared_ptr(TICKET.as_mut_ptr()),
        minus_zero: shared_ptr(MINUS_ZERO.as_mut_ptr()),
    };
    let (keys_out, values_out) = (keys_out.as_mut_ptr(), values_out.as_mut_ptr());
    // SAFETY: the slot lies inside the scratch buffer; the digit count
    // wrote it before this launch and nothing writes it during it.
    let minus_zero = K::SIGNED_ZERO && unsafe { *scratch.add(passes * RADIX + MINUS_ZERO_SLOT) } != 0;
    // SAFETY: the host's buffers and this block's shared arrays, as
    // `scatter_tile` requires.
    unsafe {
        if minus_zero {
            scatter_tile::<K, V, PAIRS, ITEMS, VALUES, true, BT, BLOCKS>(keys_in, values_in, keys_out, values_out, scratch, shared, pass, descending, tiles, look_back);
        } else {
            scatter_tile::<K, V, PAIRS, ITEMS, VALUES, false, BT, BLOCKS>(keys_in, values_in, keys_out, values_out, scratch, shared, pass, descending, tiles, look_back);
        }
    }
}

/// The shared arrays of [`radix_scatter`], for [`scatter_tile`].
#[derive(Clone, Copy)]
struct Shared {
    exchange: *mut u64,
    warp_counts: *mut u32,
    adjust: *mut u32,
    totals: *mut u64,
    ticket: *mut u32,
    minus_zero: *mut u64,
}

/// The digit at `shift` of ordered bits `bits`; with `MERGE`, `-0.0`'s read
/// as `+0.0`'s ([`RadixKey::merge_zeros`]).
#[inline(always)]
fn ordered_digit<K: RadixKey, const MERGE: bool>(bits: K::Bits, shift: u32, descending: bool) -> u32 {
    let bits = if MERGE { K::merge_zeros(bits) } else { bits };
    bits.digit(shift, descending)
}

/// One tile of [`radix_scatter`], whose arguments it takes (the outputs as
/// pointers, the shared arrays in `shared`); `MERGE`: read `-0.0` as `+0.0`
/// in every digit (the keys hold one).
///
/// # Safety
/// As [`radix_scatter`]'s launch: the buffers the host passes, `shared`
/// this block's arrays; every thread of the block calls it.
#[device]
#[inline(always)]
// Per-key loops index arrays: unrolled, every index is a constant and
// the arrays stay in registers.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn scatter_tile<K: RadixKey, V: Copy + Default, const PAIRS: bool, const ITEMS: usize, const VALUES: u32, const MERGE: bool, const BT: usize, const BLOCKS: u32>(
    keys_in: &[K],
    values_in: &[V],
    keys_out: *mut K,
    values_out: *mut V,
    scratch: *mut u32,
    shared: Shared,
    pass: u32,
    descending: u32,
    tiles: u32,
    look_back: u32,
) {
    let tile_len = BT * ITEMS;
    // A block wider than one thread a digit.
    let wide = BT > THREADS;
    // Keys alone under fewer than the 80 registers of three blocks of 256
    // (see the ranking; pairs keep their code).
    let tight = wide || (BLOCKS > 3 && !PAIRS);
    let desc = descending != 0;
    let tid = thread::threadIdx_x() as usize;
    let lane = warp::lane_id();
    let w = tid / 32;
    let n = keys_in.len();
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let shift = pass * DIGIT_BITS;
    // Map on load in the first pass, back on store in the last.
    let first = pass == 0;
    let last = pass as usize == passes - 1;
    let tiles = tiles as usize;
    let Shared { exchange, warp_counts, adjust, totals, ticket, minus_zero } = shared;

    // SAFETY (shared memory, this whole function): every index below is in
    // bounds by construction (digits < RADIX, slots < the tile, w < WARPS,
    // and the tile fits the exchange, checked by the kernel), and each
    // phase's writes are separated from the next phase's reads by a
    // barrier (or, within a warp's ranking, by `sync_warp`).
    unsafe {
        // `BT / 32` warps of `RADIX` counts: `RADIX / 32` a thread.
        #[unroll]
        for i in 0..RADIX / 32 {
            *warp_counts.add(i * BT + tid) = 0;
        }
        if tid == 0 {
            // SAFETY: the ticket of this pass is inside the scratch buffer,
            // only accessed atomically.
            *ticket = if look_back & BLOCK_ORDER_BIT != 0 {
                thread::blockIdx_x()
            } else {
                AtomicU32::from_ptr(scratch.add(passes * RADIX + pass as usize)).fetch_add_scoped(1, Scope::Device, Ordering::Relaxed)
            };
            *ticket.add(1) = if tight { shift | descending << 8 } else { shift };
            if MERGE && tight {
                // A `K::Bits` (4 or 8 bytes) in a slot of 8.
                *minus_zero.cast::<K::Bits>() = K::MINUS_ZERO_BITS;
            }
        }
    }
    thread::sync_threads();
    let tile = unsafe { *ticket } as usize;
    let tile_base = tile * tile_len;
    let in_tile = (n - tile_base).min(tile_len);
    let full = in_tile == tile_len;

    // Load warp-striped: warp w owns 32 * ITEMS consecutive keys, item i of
    // lane l is key 32 * i + l of them, so the ranking below visits a warp's
    // keys in input order (which keeps the sort stable). A full tile loads
    // without bounds checks, every load issued before any is used. Past the
    // end of a ragged tile: the padding, whose digits are all the largest.
    // The first pass reads keys and maps them; later passes read the
    // ordered bits the pass before wrote.
    let warp_first = w * 32 * ITEMS;
    let ordered_in = keys_in.as_ptr().cast::<K::Bits>();
    let mut keys = [K::Bits::default(); ITEMS];
    macro_rules! load_keys {
        ($read:expr) => {
            let read = $read;
            if full {
                cuda_device::unroll!(full, for i in 0..ITEMS {
                    // The tile is full, so every index is below n.
                    keys[i] = read(tile_base + warp_first + i * 32 + lane as usize);
                });
            } else {
                cuda_device::unroll!(full, for i in 0..ITEMS {
                    let j = warp_first + i * 32 + lane as usize;
                    // tile_base + j < n.
                    keys[i] = if j < in_tile { read(tile_base + j) } else { K::Bits::padding(desc) };
                });
            }
        };
    }
    // SAFETY (the reads): only indices below n (see `load_keys`); `K::Bits`
    // has `K`'s size, and the pass before wrote ordered bits there (or, for
    // unsigned keys, they are the keys).
    if K::MAPPED && first {
        load_keys!(|j: usize| unsafe { (*keys_in.get_unchecked(j)).to_ordered() });
    } else {
        load_keys!(|j: usize| unsafe { *ordered_in.add(j) });
    }
    // The values with the keys (`ValueLoad::Early`), after the ranking
    // (`Late`) or once the keys are out (`After`).
    let mut values = [V::default(); ITEMS];
    macro_rules! load_values {
        () => {
            if full {
                cuda_device::unroll!(full, for i in 0..ITEMS {
                    // SAFETY: as for the keys (the host checks the lengths).
                    values[i] = unsafe { *values_in.get_unchecked(tile_base + warp_first + i * 32 + lane as usize) };
                });
            } else {
                cuda_device::unroll!(full, for i in 0..ITEMS {
                    let j = warp_first + i * 32 + lane as usize;
                    if j < in_tile {
                        values[i] = unsafe { *values_in.get_unchecked(tile_base + j) };
                    }
                });
            }
        };
    }
    if PAIRS && VALUES == VALUES_EARLY {
        load_values!();
    }
    let in_tile32 = in_tile as u32;

    // The warp's digit counts (ranks come later, once the counts are out).
    let own_counts = unsafe { warp_counts.add(w * RADIX) };
    #[unroll]
    for i in 0..ITEMS {
        let d = ordered_digit::<K, MERGE>(keys[i], shift, desc) as usize;
        // SAFETY: zeroed before the barrier above; atomics among the warp.
        unsafe { AtomicU32::from_ptr(own_counts.add(d)) }.fetch_add_scoped(1, Scope::Block, Ordering::Relaxed);
    }
    thread::sync_threads();

    // Thread d: the tile's count of digit d and each warp's start among them.
    // A wide block's threads past the digits (`has_digit` false) take no
    // part but in the block's scan, with a count of zero; their `d` names
    // a digit's slots that they never touch.
    let has_digit = !wide || tid < RADIX;
    let d = if wide { tid % RADIX } else { tid };
    let mut warp_start = [0u32; WARPS];
    let mut count = 0u32;
    if !wide {
        #[unroll]
        for i in 0..WARPS {
            warp_start[i] = count;
            count = count.wrapping_add(unsafe { *warp_counts.add(i * RADIX + d) });
        }
    } else if has_digit {
        // The warps' starts are taken after the scan, from the counts read
        // again: held through it, they were one register per warp.
        #[unroll]
        for i in 0..BT / 32 {
            count = count.wrapping_add(unsafe { *warp_counts.add(i * RADIX + d) });
        }
    }
    // Publish this tile's count at once, so later tiles can look back.
    let region = |p: u32| status_base(passes) + (p as usize % 2) * tiles * RADIX;
    let statuses = unsafe { scratch.add(region(pass)) };
    // SAFETY: the statuses of this pass lie inside the scratch buffer and
    // are only accessed atomically.
    let own_status = unsafe { AtomicU32::from_ptr(statuses.add(tile * RADIX + d)) };
    if has_digit {
        own_status.store_scoped(if tile == 0 { PREFIX } else { AGGREGATE } | count, Scope::Device, Ordering::Relaxed);
    }

    // One scan for both the tile's digit starts (low word, < 2^30) and the
    // pass's global digit starts (high word), which never carry into each
    // other.
    let global_count = if has_digit { unsafe { *scratch.add(pass as usize * RADIX + d) } } else { 0 };
    let both = unsafe { block_exclusive_sum_of::<BT>((global_count as u64) << 32 | count as u64, totals) };
    let tile_start = both as u32;
    let digit_start = (both >> 32) as u32;
    if !wide {
        #[unroll]
        for i in 0..WARPS {
            unsafe { *warp_counts.add(i * RADIX + d) = tile_start + warp_start[i] };
        }
    } else if has_digit {
        let mut start = tile_start;
        #[unroll]
        for i in 0..BT / 32 {
            let slot = unsafe { warp_counts.add(i * RADIX + d) };
            let warp_count = unsafe { *slot };
            unsafe { *slot = start };
            start = start.wrapping_add(warp_count);
        }
    }
    thread::sync_threads();

    // Rank within the warp: lanes with equal digits take
    // consecutive slots after the ones the warp gave that digit before; each
    // key goes to its slot at once. The digits are computed again, from a
    // shift read back from shared memory: with the same shift, the compiler
    // kept every digit of the count above in a register of its own until
    // here (one more register per key, past the budget of three blocks per
    // multiprocessor). Under fewer registers (`tight`) two more values are
    // read back, for the same reason: the direction (the count's keys
    // flipped for it were reused here, held in between), and, in a sort
    // that holds a `-0.0`, `-0.0`'s bits to merge the zeros with (likewise
    // the count's merged keys; both spilled at four blocks).
    let rank_word = unsafe { *ticket.add(1) };
    let (rank_shift, rank_desc) = if tight { (rank_word & 0xff, rank_word >> 8 != 0) } else { (rank_word, desc) };
    let rank_minus = if MERGE && tight { unsafe { *minus_zero.cast::<K::Bits>() } } else { K::MINUS_ZERO_BITS };
    let keys_exchange = exchange.cast::<K::Bits>();
    let mut ranks = [0u32; ITEMS];
    #[unroll]
    for i in 0..ITEMS {
        let bits = if MERGE { K::merge_zeros_from(keys[i], rank_minus) } else { keys[i] };
        let d = bits.digit(rank_shift, rank_desc);
        let peers = match_digit(d);
        let below = (peers & warp::lanemask_lt()).count_ones();
        let leader = 31 - peers.leading_zeros();
        let mut before = 0;
        if warp::lane_id() == leader {
            // SAFETY: only the leader of a digit's lanes touches its counter.
            unsafe {
                before = *own_counts.add(d as usize);
                *own_counts.add(d as usize) = before + peers.count_ones();
            }
        }
        let rank = warp::shfl_idx(warp::FULL_MASK, before, leader) + below;
        unsafe { *keys_exchange.add(rank as usize) = keys[i] };
        if PAIRS {
            ranks[i] = rank;
        }
        warp::sync_warp(warp::FULL_MASK);
    }

    // The values' loads, in flight during the look-back.
    if PAIRS && VALUES == VALUES_LATE {
        load_values!();
    }

    // Decoupled look-back: the keys of digit d in the tiles before this one.
    if has_digit {
        let earlier = if tile > 0 {
            // SAFETY: as for `own_status`; only tiles before this one are read.
            let earlier = unsafe { look_back_digit(statuses.add(d), tile, look_back) };
            own_status.store_scoped(PREFIX | (earlier + count), Scope::Device, Ordering::Relaxed);
            earlier
        } else {
            0
        };
        // SAFETY: inside the scratch buffer; no block of this launch reads the
        // other region, and the next pass starts after this launch ends.
        unsafe { *scratch.add(region(pass + 1) + tile * RADIX + d) = 0 };
        unsafe { *adjust.add(d) = digit_start.wrapping_add(earlier).wrapping_sub(tile_start) };
    }
    thread::sync_threads();

    // Out in runs of equal digits: slot j of the tile goes to adjust[d] + j.
    // A full tile writes every slot with no bounds check: a test per slot
    // became a branch per key, with its convergence barrier, about as many
    // instructions again as the store's own. The last pass maps the keys
    // back; the passes before store their ordered bits.
    let ordered_out = keys_out.cast::<K::Bits>();
    // The slots' digits, four to a word, for the values.
    let mut slot_digits = [0u32; ITEMS];
    macro_rules! write_keys {
        ($in_bounds:expr, $store:expr) => {
            let in_bounds = $in_bounds;
            let store = $store;
            cuda_device::unroll!(full, for i in 0..ITEMS {
                let j = i * BT + tid;
                if in_bounds(j) {
                    let key = unsafe { *keys_exchange.add(j) };
                    let d = ordered_digit::<K, MERGE>(key, shift, desc);
                    if PAIRS {
                        slot_digits[i / 4] |= d << (8 * (i % 4));
                    }
                    let place = unsafe { *adjust.add(d as usize) }.wrapping_add(j as u32);
                    store(place as usize, key);
                }
            });
        };
    }
    // SAFETY (the stores): the places of a pass are a permutation of 0..n;
    // `K::Bits` has `K`'s size.
    let store_key = |place: usize, bits: K::Bits| unsafe { *keys_out.add(place) = K::from_ordered(bits) };
    let store_bits = |place: usize, bits: K::Bits| unsafe { *ordered_out.add(place) = bits };
    match (full, K::MAPPED && last) {
        (true, true) => {
            write_keys!(|_: usize| true, store_key);
        }
        (true, false) => {
            write_keys!(|_: usize| true, store_bits);
        }
        (false, true) => {
            write_keys!(|j: usize| (j as u32) < in_tile32, store_key);
        }
        (false, false) => {
            write_keys!(|j: usize| (j as u32) < in_tile32, store_bits);
        }
    }
    if !PAIRS {
        return;
    }
    // Loaded here, the values and the ranks are all a thread holds: no
    // keys, no look-back state; the loads are in flight through the
    // barrier.
    if VALUES == VALUES_AFTER {
        load_values!();
    }
    thread::sync_threads();
    let values_exchange = exchange.cast::<V>();
    #[unroll]
    for i in 0..ITEMS {
        unsafe { *values_exchange.add(ranks[i] as usize) = values[i] };
    }
    thread::sync_threads();
    macro_rules! write_values {
        ($in_bounds:expr) => {
            let in_bounds = $in_bounds;
            cuda_device::unroll!(full, for i in 0..ITEMS {
                let j = i * BT + tid;
                if in_bounds(j) {
                    let d = (slot_digits[i / 4] >> (8 * (i % 4))) & (RADIX as u32 - 1);
                    // SAFETY: as for the keys.
                    unsafe { *values_out.add((*adjust.add(d as usize)).wrapping_add(j as u32) as usize) = *values_exchange.add(j) };
                }
            });
        };
    }
    if full {
        write_values!(|_: usize| true);
    } else {
        write_values!(|j: usize| (j as u32) < in_tile32);
    }
}

/// The lanes of the warp whose 8-bit digit `d` equals this lane's, by one
/// ballot per bit ([`warp::ballot_agree`]), each keeping the lanes that agree on that bit: the mask
/// `match.any` gives, without the `MATCH.ANY` instruction, which CUB's
/// ranking avoids the same way for so few bits (its note: slower). See
/// benches/README.md, "radix sort: match.any against ballots".
#[inline(always)]
fn match_digit(d: u32) -> u32 {
    let mut peers = warp::FULL_MASK;
    cuda_device::unroll!(full, for bit in 0..DIGIT_BITS {
        peers &= warp::ballot_agree(warp::FULL_MASK, d & (1 << bit));
    });
    peers
}

/// The count of one digit in every tile before `tile` (> 0): the statuses
/// of that digit, `digit_statuses[t * RADIX]` for tile `t`, read from the
/// nearest back to the first that holds an inclusive count. `look_back`
/// ([`SortTuning::look_back_word`]) says how many predecessors one poll
/// reads together (a window) and how long to sleep before polling a window
/// again that has a status not yet published.
///
/// # Safety
/// `digit_statuses` points to the statuses of one digit of a pass, tiles
/// `0..tile` of which are (or will be) published by running blocks.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // as in `radix_scatter`
unsafe fn look_back_digit(digit_statuses: *mut u32, tile: usize, look_back: u32) -> u32 {
    let window = (look_back & 0xff) as usize;
    let delay = (look_back & !BLOCK_ORDER_BIT) >> 8;
    let status = |t: usize| unsafe { AtomicU32::from_ptr(digit_statuses.add(t * RADIX)) };
    let mut earlier = 0u32;
    // Predecessors `end - 1` down to `end - window` are the window.
    let mut end = tile;
    loop {
        // Slot k holds tile end - 1 - k; tiles before 0 read as an
        // inclusive zero (never reached past tile 0, whose is inclusive).
        let mut s = [PREFIX; MAX_WINDOW];
        for k in 0..MAX_WINDOW {
            if k < window && k < end {
                s[k] = status(end - 1 - k).load_scoped(Scope::Device, Ordering::Relaxed);
            }
        }
        // Until every status up to the nearest inclusive one is published.
        loop {
            let mut pending = false;
            let mut found = false;
                for k in 0..MAX_WINDOW {
                if k < window && !found && !pending {
                    pending = s[k] & (AGGREGATE | PREFIX) == 0;
                    found = s[k] & PREFIX != 0;
                }
            }
            if !pending {
                break;
            }
            if delay != 0 {
                thread::nanosleep(delay);
            }
                for k in 0..MAX_WINDOW {
                if k < window && s[k] & (AGGREGATE | PREFIX) == 0 {
                    s[k] = status(end - 1 - k).load_scoped(Scope::Device, Ordering::Relaxed);
                }
            }
        }
        let mut found = false;
        for k in 0..MAX_WINDOW {
            if k < window && !found {
                earlier += s[k] & COUNT_MASK;
                found = s[k] & PREFIX != 0;
            }
        }
        if found {
            return earlier;
        }
        end -= window;
    }
}

/// The look-back of one digit over statuses the caller prepared, by one
/// thread: `out[0]` = the digit's count in the tiles before `tile`, from
/// the statuses at `statuses[t * RADIX]`. A test hook: in a running sort a
/// look-back seldom needs a second window, so a test sets up statuses that
/// need them (see [`look_back_probe_run`]). Launch one thread.
#[doc(hidden)]
#[kernel]
pub fn sort_look_back_probe(mut statuses: DisjointSlice<u32>, tile: u32, look_back: u32, mut out: DisjointSlice<u32>) {
    if thread::threadIdx_x() == 0 && !out.is_empty() {
        // SAFETY: the host published every tile before `tile` (checked
        // there), `tile * RADIX` words long; one thread writes the result.
        unsafe {
            let earlier = look_back_digit(statuses.as_mut_ptr(), tile as usize, look_back);
            *out.get_unchecked_mut(0) = earlier;
        }
    }
}

/// A tile status as the scatter publishes it: the count of a digit in the
/// tile alone, or (`inclusive`) in the tile and every tile before it. A
/// test hook, for [`look_back_probe_run`].
#[doc(hidden)]
pub fn status_word(inclusive: bool, count: u32) -> u32 {
    assert!(count <= COUNT_MASK, "a tile status holds a 30-bit count");
    if inclusive { PREFIX | count } else { AGGREGATE | count }
}

/// Runs [`sort_look_back_probe`] under `tuning` for the tile after those
/// whose statuses ([`status_word`]) are given, tile 0 first (tile 0 is
/// always inclusive). A test hook.
#[doc(hidden)]
pub fn look_back_probe_run(module: &KernelModule, stream: &CudaStream, statuses: &[u32], tuning: SortTuning) -> Result<u32, PrimsError> {
    let tile = statuses.len();
    assert!(tile > 0 && statuses[0] & PREFIX != 0, "tile 0 is always inclusive");
    assert!(statuses.iter().all(|s| s & (AGGREGATE | PREFIX) != 0), "every tile before the probed one is published");
    let mut words = vec![0u32; tile * RADIX];
    for (t, &s) in statuses.iter().enumerate() {
        words[t * RADIX] = s;
    }
    let mut words = DeviceBuffer::from_host(stream, &words)?;
    let mut out = temp::zeroed::<u32>(stream, 1)?;
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: sort_look_back_probe, stream: stream, module: module, config: one,
        args: [slice_mut(words), tile as u32, tuning.look_back_word(), slice_mut(out)]
    }?;
    Ok(out.to_host_vec(stream)?[0])
}

// ---------------------------------------------------------------------------
// Host code

/// Sorts `keys_in` into `keys_out` (same length) by [`Order`], stably.
/// `keys_in` is left as it was; `keys_out` may not be `keys_in` (borrow
/// rules already say so). Runs on `stream`; temporary storage is allocated
/// and freed there.
///
/// ```no_run
/// # use cuda_core::{CudaContext, DeviceBuffer};
/// # use cuda_prims::sort::{sort_keys, Order};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// # let module = cuda_host::load_kernel_module(&ctx, "my_program")?;
/// let keys = DeviceBuffer::from_host(&stream, &[5u32, 1, 4])?;
/// let mut sorted = DeviceBuffer::<u32>::zeroed(&stream, 3)?;
/// sort_keys(&module, &stream, &keys, &mut sorted, Order::Descending)?;
/// assert_eq!(sorted.to_host_vec(&stream)?, [5, 4, 1]);
/// # Ok(())
/// # }
/// ```
pub fn sort_keys<K: RadixKey + DeviceRepr>(
    module: &KernelModule,
    stream: &CudaStream,
    keys_in: &DeviceBuffer<K>,
    keys_out: &mut DeviceBuffer<K>,
    order: Order,
) -> Result<(), PrimsError> {
    let no_values = temp::zeroed::<u32>(stream, 0)?;
    let mut no_values_out = temp::zeroed::<u32>(stream, 0)?;
    radix_sort::<K, u32, false>(module, stream, keys_in, keys_out, &no_values, &mut no_values_out, order)
}

/// Sorts `keys_in` into `keys_out` and moves each value of `values_in` with
/// its key into `values_out`; stable (values of equal keys stay in input
/// order). All four buffers have the same length; values are at most 8
/// bytes (sort `u32` indices to carry wider ones).
pub fn sort_pairs<K: RadixKey + DeviceRepr, V: DeviceRepr + Default>(
    module: &KernelModule,
    stream: &CudaStream,
    keys_in: &DeviceBuffer<K>,
    values_in: &DeviceBuffer<V>,
    keys_out: &mut DeviceBuffer<K>,
    values_out: &mut DeviceBuffer<V>,
    order: Order,
) -> Result<(), PrimsError> {
    let n = keys_in.len();
    for (what, found) in [("values_in", values_in.len()), ("values_out", values_out.len())] {
        if found != n {
            return Err(PrimsError::LengthMismatch { what, expected: n, found });
        }
    }
    if size_of::<V>() > 8 {
        return Err(PrimsError::ValueTooWide { size: size_of::<V>() });
    }
    radix_sort::<K, V, true>(module, stream, keys_in, keys_out, values_in, values_out, order)
}

/// The scratch words a sort of `n` keys of `passes` digits in tiles of
/// `tile` keys needs.
fn scratch_len(n: usize, passes: usize, tile: usize) -> usize {
    status_base(passes) + 2 * n.div_ceil(tile) * RADIX
}

/// Threads a block of the scatter for keys of `key_bytes` and values of
/// `value_bytes` (0: keys only): `tuning.threads` for 4-byte keys alone,
/// `tuning.pair_threads` for 4-byte keys with 4-byte values loaded after
/// the keys are out ([`ValueLoad::After`]), else [`THREADS`].
const fn block_threads(key_bytes: usize, value_bytes: usize, tuning: SortTuning) -> usize {
    match (key_bytes, value_bytes) {
        (4, 0) => tuning.threads,
        (4, 4) if matches!(tuning.values, ValueLoad::After) => tuning.pair_threads,
        _ => THREADS,
    }
}

/// Keys per thread of a scatter tile for keys of `key_bytes` and values of
/// `value_bytes` (0: keys only): 4-byte keys alone take `tuning.items`
/// (in a block of [`THREADS`] 16, 24 or 32, 20 read as 24; in a wide block
/// 16 or 20, others read as 20), with 4-byte values `tuning.pair_items`;
/// 8-byte keys or values (which fill the exchange buffer at 16) take 16.
const fn items_per_thread(key_bytes: usize, value_bytes: usize, tuning: SortTuning) -> usize {
    if key_bytes > 4 || value_bytes > 4 {
        WIDE_ITEMS
    } else if value_bytes > 0 {
        if block_threads(key_bytes, value_bytes, tuning) == WIDE_THREADS {
            if tuning.pair_items == 16 { 16 } else { 20 }
        } else if tuning.pair_items == 20 {
            DEFAULT_PAIR_ITEMS
        } else {
            tuning.pair_items
        }
    } else if block_threads(key_bytes, value_bytes, tuning) == WIDE_THREADS {
        if tuning.items == 16 { 16 } else { 20 }
    } else if tuning.items == 20 {
        DEFAULT_ITEMS
    } else {
        tuning.items
    }
}

/// Blocks per multiprocessor of the scatter instance for keys of
/// `key_bytes` and values of `value_bytes` (0: keys only) under `tuning`:
/// the instance's launch bound, so its register budget (65536 registers
/// over `blocks * 256` threads). Four-byte keys alone in tiles of 16 or 24
/// keys per thread take `tuning.blocks`, with four-byte values
/// `tuning.pair_blocks` (3 or 4); but 2 for pairs with 8-byte keys or
/// values, and for four-byte pairs of more than 16 keys per thread that
/// hold their values through the look-back (not [`ValueLoad::After`]);
/// four-byte keys alone in a wide block ([`WIDE_THREADS`]) 3 (56 registers)
/// or, at `tuning.blocks` 2, 2 (80 registers); four-byte pairs in a wide
/// block 2, or 3 at `tuning.pair_blocks` 3; everything else 3.
const fn scatter_blocks(key_bytes: usize, value_bytes: usize, tuning: SortTuning) -> u32 {
    let items = items_per_thread(key_bytes, value_bytes, tuning);
    if value_bytes > 0 && (key_bytes > 4 || value_bytes > 4 || (items > 16 && !matches!(tuning.values, ValueLoad::After))) {
        2
    } else if key_bytes > 4 {
        3
    } else if value_bytes > 0 && block_threads(key_bytes, value_bytes, tuning) == WIDE_THREADS {
        if tuning.pair_blocks == 3 { 3 } else { 2 }
    } else if value_bytes > 0 {
        if tuning.pair_blocks > 3 { tuning.pair_blocks } else { 3 }
    } else if block_threads(key_bytes, value_bytes, tuning) == WIDE_THREADS {
        if tuning.blocks == 2 { 2 } else { 3 }
    } else if items <= 24 {
        if tuning.blocks > 3 { tuning.blocks } else { 3 }
    } else {
        3
    }
}

/// Whether a sort of `K` keys (with `V` values where `PAIRS`) under
/// `tuning` runs the `radix_scatter` instance of `items` keys a thread,
/// `blocks` blocks a multiprocessor, values loaded at `values` (a
/// `VALUES_*`; four-byte pairs only, the others' instances take
/// [`VALUES_LATE`]) and `threads` threads a block: with
/// `SortTuning::default()`, the one instance a build without the `tuning`
/// feature compiles (see the [crate docs](crate#features)).
const fn runs_scatter_instance<K, V, const PAIRS: bool>(tuning: SortTuning, items: usize, blocks: u32, values: u32, threads: usize) -> bool {
    let (key_bytes, value_bytes) = (size_of::<K>(), if PAIRS { size_of::<V>() } else { 0 });
    let wanted_values = if PAIRS && key_bytes == 4 && value_bytes <= 4 {
        match tuning.values {
            ValueLoad::Early => VALUES_EARLY,
            ValueLoad::Late => VALUES_LATE,
            ValueLoad::After => VALUES_AFTER,
        }
    } else {
        VALUES_LATE
    };
    items == items_per_thread(key_bytes, value_bytes, tuning)
        && blocks == scatter_blocks(key_bytes, value_bytes, tuning)
        && threads == block_threads(key_bytes, value_bytes, tuning)
        && values == wanted_values
}

/// The keys one block of the scatter sorts into place (one tile) in a sort
/// of `key_bytes`-byte keys with `value_bytes`-byte values (0 for
/// [`sort_keys`]), under the tuning of `OXIDE_PRIMS_SORT`
/// ([`SortTuning::from_env`]). Tests use it for sizes around tile edges.
pub fn tile_len(key_bytes: usize, value_bytes: usize) -> usize {
    let tuning = SortTuning::from_env();
    block_threads(key_bytes, value_bytes, tuning) * items_per_thread(key_bytes, value_bytes, tuning)
}

/// One scatter pass from `keys_in`/`values_in` into `keys_out`/`values_out`
/// with the kernel instance of `threads` threads a block
/// ([`block_threads`]), `items` keys per thread and, where there is
/// one, of `blocks` blocks per multiprocessor ([`scatter_blocks`]) and of
/// values loaded at `values` (four-byte pairs; others load them after the
/// ranking).
#[allow(clippy::too_many_arguments)]
fn scatter_pass<K: RadixKey + DeviceRepr, V: DeviceRepr + Default, const PAIRS: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    keys_in: &DeviceBuffer<K>,
    values_in: &DeviceBuffer<V>,
    keys_out: &mut DeviceBuffer<K>,
    values_out: &mut DeviceBuffer<V>,
    scratch: &mut DeviceBuffer<u32>,
    pass: u32,
    descending: u32,
    tiles: usize,
    threads: usize,
    items: usize,
    blocks: u32,
    values: ValueLoad,
    look_back: u32,
) -> Result<(), PrimsError> {
    let config = LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (threads as u32, 1, 1), shared_mem_bytes: 0 };
    let tiles = tiles as u32;
    macro_rules! launch {
        ($items:literal, $blocks:literal) => {
            launch!($items, $blocks, 1)
        };
        ($items:literal, $blocks:literal, $values:literal) => {
            launch!($items, $blocks, $values, 256)
        };
        // `$values`: `VALUES_EARLY`, `VALUES_LATE` or `VALUES_AFTER` as a
        // literal, `$threads` `THREADS` or `WIDE_THREADS` (the launch names
        // the instance by its tokens).
        // Without the `tuning` feature only the default's instance: a
        // branch on a constant is not compiled into the instances it
        // cannot reach.
        ($items:literal, $blocks:literal, $values:literal, $threads:literal) => {
            if const { knobs::EVERY_INSTANCE || runs_scatter_instance::<K, V, PAIRS>(SortTuning::DEFAULT, $items, $blocks, $values, $threads) } {
                cuda_launch! {
                    kernel: radix_scatter::<K, V, PAIRS, $items, $blocks, $values, $threads>, stream: stream, module: module, config: config,
                    args: [slice(*keys_in), slice(*values_in), slice_mut(*keys_out), slice_mut(*values_out),
                           slice_mut(*scratch), pass, descending, tiles, look_back]
                }?
            } else {
                return Err(knobs::not_compiled("radix sort"));
            }
        };
    }
    // Only the instances a sort of K and V can take: a branch on a
    // constant is not compiled into the instances it cannot reach. Where
    // the values load is a choice only for four-byte keys and values.
    if const { PAIRS && size_of::<V>() > 4 } {
        launch!(16, 2);
    } else if const { K::BITS > 32 } {
        if const { PAIRS } {
            launch!(16, 2)
        } else {
            launch!(16, 3)
        }
    } else if const { PAIRS } {
        use ValueLoad::{After, Early, Late};
        if threads == WIDE_THREADS {
            // Only with the values after the keys (`block_threads`).
            match (items, blocks) {
                (16, _) => launch!(16, 3, 2, 384),
                (_, 2) => launch!(20, 2, 2, 384),
                _ => launch!(20, 3, 2, 384),
            }
            return Ok(());
        }
        match (items, blocks, values) {
            (24, 4, After) => launch!(24, 4, 2),
            (24, _, After) => launch!(24, 3, 2),
            (24, _, Late) => launch!(24, 2, 1),
            (24, _, Early) => launch!(24, 2, 0),
            (_, 4, After) => launch!(16, 4, 2),
            (_, 4, Late) => launch!(16, 4, 1),
            (_, 4, Early) => launch!(16, 4, 0),
            (_, _, After) => launch!(16, 3, 2),
            (_, _, Late) => launch!(16, 3, 1),
            (_, _, Early) => launch!(16, 3, 0),
        }
    } else if threads == WIDE_THREADS {
        match (items, blocks) {
            (16, _) => launch!(16, 3, 1, 384),
            (_, 2) => launch!(20, 2, 1, 384),
            _ => launch!(20, 3, 1, 384),
        }
    } else {
        match (items, blocks) {
            (16, 4) => launch!(16, 4),
            (16, _) => launch!(16, 3),
            (24, 4) => launch!(24, 4),
            (24, _) => launch!(24, 3),
            _ => launch!(32, 3),
        }
    }
    Ok(())
}

fn radix_sort<K: RadixKey + DeviceRepr, V: DeviceRepr + Default, const PAIRS: bool>(
    module: &KernelModule,
    stream: &CudaStream,
    keys_in: &DeviceBuffer<K>,
    keys_out: &mut DeviceBuffer<K>,
    values_in: &DeviceBuffer<V>,
    values_out: &mut DeviceBuffer<V>,
    order: Order,
) -> Result<(), PrimsError> {
    let n = keys_in.len();
    if keys_out.len() != n {
        return Err(PrimsError::LengthMismatch { what: "keys_out", expected: n, found: keys_out.len() });
    }
    if n > MAX_LEN {
        return Err(PrimsError::TooLarge { what: "radix sort", len: n, max: MAX_LEN });
    }
    if n == 0 {
        return Ok(());
    }
    let tuning = SortTuning::from_env();
    let value_bytes = if PAIRS { size_of::<V>() } else { 0 };
    let threads = block_threads(size_of::<K>(), value_bytes, tuning);
    let items = items_per_thread(size_of::<K>(), value_bytes, tuning);
    let blocks = scatter_blocks(size_of::<K>(), value_bytes, tuning);
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let tiles = n.div_ceil(threads * items);
    let descending = u32::from(order == Order::Descending);
    let mut scratch = temp::zeroed::<u32>(stream, scratch_len(n, passes, threads * items))?;
    // Scratch (written before read, as `temp::scratch` requires): every
    // pass writes all n elements of its output before the next pass (or the
    // caller) reads them.
    let mut keys_tmp = temp::scratch::<K>(stream, n)?;
    let mut values_tmp = temp::scratch::<V>(stream, values_in.len())?;

    let sms = stream.context().multiprocessor_count()? as usize;
    let config = LaunchConfig {
        grid_dim: (n.div_ceil(HISTOGRAM_TILE).min(sms * 8) as u32, 1, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    cuda_launch! {
        kernel: radix_histogram::<K>, stream: stream, module: module, config: config,
        args: [slice(*keys_in), descending, slice_mut(scratch)]
    }?;

    // An even number of passes: in -> tmp -> out -> tmp -> ... -> out.
    let look_back = tuning.look_back_word();
    for pass in 0..passes as u32 {
        let (s, t) = (&mut scratch, &mut keys_tmp);
        if pass == 0 {
            scatter_pass::<K, V, PAIRS>(module, stream, keys_in, values_in, t, &mut values_tmp, s, pass, descending, tiles, threads, items, blocks, tuning.values, look_back)?;
        } else if pass % 2 == 1 {
            scatter_pass::<K, V, PAIRS>(module, stream, t, &values_tmp, keys_out, values_out, s, pass, descending, tiles, threads, items, blocks, tuning.values, look_back)?;
        } else {
            scatter_pass::<K, V, PAIRS>(module, stream, keys_out, values_out, t, &mut values_tmp, s, pass, descending, tiles, threads, items, blocks, tuning.values, look_back)?;
        }
    }
    Ok(())
}

/// How the scatter passes run: a measurement knob (see
/// [`SortTuning::from_env`]). The default is the tuning the H200 measured
/// fastest (benches/README.md).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortTuning {
    /// Keys per thread of a tile of 4-byte keys sorted alone: 16, 24 or 32
    /// in a block of 256 threads, 16 or 20 in a wide one (see
    /// [`threads`](SortTuning::threads); 8-byte keys or values always take
    /// 16). Larger tiles mean fewer tiles to publish and look back over,
    /// and more registers per thread.
    pub items: usize,
    /// Threads a block of the scatter of 4-byte keys sorted alone: 256 (one
    /// a digit), or 384 (the default), CUB's block on sm_90, whose threads past the 256
    /// digits only load, count, rank and store keys; it runs three blocks a
    /// multiprocessor (56 registers; 36 warps where 256 × 3 is 24), or two
    /// at `blocks: 2`.
    pub threads: usize,
    /// The same for 4-byte keys with 4-byte values loaded once the keys
    /// are out ([`ValueLoad::After`]): 256, or 384 (the default) with 16 or 20 pairs a
    /// thread (`pair_items` 24 read as 20) and `pair_blocks` 3, or 2 (the
    /// default; 4 read as 2).
    pub pair_threads: usize,
    /// Keys per thread of a tile of 4-byte keys with 4-byte values: 16 or
    /// 24 (at 24, values loaded before the look-back, [`ValueLoad::Early`]
    /// or [`ValueLoad::Late`], run two blocks per multiprocessor: the ranks
    /// and values held through it need the registers).
    pub pair_items: usize,
    /// Blocks per multiprocessor, 3 or 4, of a tile of four-byte keys
    /// sorted alone at 16 or 24 keys per thread (at 32: always 3). Four
    /// blocks leave 64 registers a thread (three: 80) for a third more
    /// warps. In a wide block ([`threads`](SortTuning::threads) 384): 2 or
    /// 3 (4 read as 3).
    pub blocks: u32,
    /// The same for a tile of four-byte keys with four-byte values (but at
    /// `pair_items: 24` with values loaded before the look-back: 2). In a
    /// wide block 3, or 2 otherwise: the default 4 is the 256-thread
    /// tile's, so that `pair-threads=256` gives it back whole, and runs the
    /// wide tile at 2, which measured faster than 3 on an H100 and within a
    /// few hundredths of it on an H200 (benches/README.md, "H100, 2026-12-05").
    pub pair_blocks: u32,
    /// Predecessors a look-back reads per poll, 1 to 4 (1: one at a time,
    /// like CUB's onesweep).
    pub window: u32,
    /// Nanoseconds to sleep before polling again a window with a status not
    /// yet published; 0: poll again at once.
    pub poll_delay_ns: u32,
    /// When a tile of four-byte keys with four-byte values loads its
    /// values.
    pub values: ValueLoad,
    /// Take tile `blockIdx.x` instead of the pass's next ticket
    /// (`block-order`): saves thread 0 the ticket's atomic before the
    /// block's first barrier, and relies on a grid's blocks starting in
    /// index order, as the scan's and the select's default does
    /// ([`LookBackTuning::block_order`](crate::scan::LookBackTuning)).
    /// Off by default: not yet measured for the sort.
    pub block_order: bool,
}

/// The bit of [`SortTuning::look_back_word`] that asks for tiles in block
/// order (the delay is at most 2^20 ns, far below it).
const BLOCK_ORDER_BIT: u32 = 1 << 31;

/// When a scatter tile of four-byte keys with four-byte values loads its
/// values (a measurement knob, [`SortTuning::values`]); each choice trades
/// loads in flight against registers held.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueLoad {
    /// With the keys: the most loads in flight at once; the values are
    /// held through the count, the ranking and the look-back.
    Early,
    /// After the ranking: in flight during the look-back; held with the
    /// ranks through it and through the keys' write-out.
    Late,
    /// Once the keys are written out, as CUB's onesweep does: a thread
    /// then holds only the ranks, the values and the slots' digits, so a
    /// tile can be wider at the same registers; the loads are in flight
    /// only through the barrier before the values' exchange.
    After,
}

impl Default for SortTuning {
    fn default() -> SortTuning {
        SortTuning::DEFAULT
    }
}

impl SortTuning {
    /// The defaults ([`SortTuning::default`] in constant contexts).
    pub const DEFAULT: SortTuning = SortTuning {
        // The wide block (CUB's shape), for keys alone and for pairs: the
        // H200 measured it faster at 2^24 and up (benches/README.md, "H200,
        // 2026-12-04, evening"). It reads `items` 24 as 20 and `pair_blocks`
        // 4 as 2, so that `threads=256,pair-threads=256` gives back the
        // tiles of 256 threads whole.
        items: DEFAULT_ITEMS,
        threads: WIDE_THREADS,
        pair_threads: WIDE_THREADS,
        pair_items: DEFAULT_PAIR_ITEMS,
        blocks: 3,
        pair_blocks: DEFAULT_PAIR_BLOCKS,
        window: DEFAULT_WINDOW,
        poll_delay_ns: 0,
        values: ValueLoad::After,
        block_order: false,
    };

    /// The tuning named by `OXIDE_PRIMS_SORT` (read once): a comma list of
    /// `items=16|20|24|32`, `threads=256|384`, `pair-threads=256|384`,
    /// `pair-items=16|20|24` (20: wide blocks only), `blocks=2|3|4` and
    /// `pair-blocks=2|3|4` (2: wide blocks only),
    /// `window=1..4`, `delay=NS`, `values=early|late|after` and
    /// `block-order` / `ticket` changing the default;
    /// unset or empty: the default. For benchmarks comparing variants in
    /// one build.
    pub fn from_env() -> SortTuning {
        static TUNING: std::sync::OnceLock<SortTuning> = std::sync::OnceLock::new();
        *TUNING.get_or_init(|| Self::parse(&knobs::spec("OXIDE_PRIMS_SORT")))
    }

    /// Parses the `OXIDE_PRIMS_SORT` syntax; unknown items and values out of
    /// range are ignored with a warning on stderr (a measurement knob must
    /// not fail a run).
    pub fn parse(spec: &str) -> SortTuning {
        let mut t = SortTuning::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let value = |name: &str| item.strip_prefix(name).and_then(|s| s.parse::<u32>().ok());
            if let Some(items @ (16 | 20 | 24 | 32)) = value("items=") {
                t.items = items as usize;
            } else if let Some(threads @ (256 | 384)) = value("threads=") {
                t.threads = threads as usize;
            } else if let Some(threads @ (256 | 384)) = value("pair-threads=") {
                t.pair_threads = threads as usize;
            } else if let Some(items @ (16 | 20 | 24)) = value("pair-items=") {
                t.pair_items = items as usize;
            } else if let Some(blocks @ (2..=4)) = value("blocks=") {
                t.blocks = blocks;
            } else if let Some(blocks @ (2..=4)) = value("pair-blocks=") {
                t.pair_blocks = blocks;
            } else if let Some(window @ 1..=4) = value("window=") {
                t.window = window;
            } else if let Some(ns) = value("delay=") {
                t.poll_delay_ns = ns.min(1 << 20);
            } else if let Some(values) = item.strip_prefix("values=").and_then(|v| match v {
                "early" => Some(ValueLoad::Early),
                "late" => Some(ValueLoad::Late),
                "after" => Some(ValueLoad::After),
                _ => None,
            }) {
                t.values = values;
            } else if item == "block-order" || item == "ticket" {
                t.block_order = item == "block-order";
            } else {
                eprintln!("OXIDE_PRIMS_SORT: ignoring `{item}` (expected `items=16|20|24|32`, `threads=256|384`, `pair-threads=256|384`, `pair-items=16|20|24`, `blocks=2|3|4`, `pair-blocks=2|3|4`, `window=1..4`, `delay=NS`, `values=early|late|after`, `block-order` or `ticket`)");
            }
        }
        t
    }

    /// The look-back's settings as the scatter kernel takes them: the
    /// window in the low 8 bits, the delay above, and [`BLOCK_ORDER_BIT`]
    /// with `block_order`.
    pub fn look_back_word(&self) -> u32 {
        self.window | self.poll_delay_ns.min(1 << 20) << 8 | if self.block_order { BLOCK_ORDER_BIT } else { 0 }
    }
}

/// The stable order of `bits` by their low `passes` digits: not generic,
/// so it is compiled once here, at this crate's optimisation level (the
/// workspace optimises this crate in debug builds too).
fn counting_sort_order(bits: &[u64], passes: u32) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..bits.len()).collect();
    let mut next = vec![0usize; bits.len()];
    for pass in 0..passes {
        let digit = |i: usize| ((bits[i] >> (pass * DIGIT_BITS)) & (RADIX as u64 - 1)) as usize;
        let mut start = [0usize; RADIX + 1];
        for &i in &idx {
            start[digit(i) + 1] += 1;
        }
        for d in 0..RADIX {
            start[d + 1] += start[d];
        }
        for &i in &idx {
            let d = digit(i);
            next[start[d]] = i;
            start[d] += 1;
        }
        std::mem::swap(&mut idx, &mut next);
    }
    idx
}

/// The CPU's stable sort by the same order, for checks: what [`sort_keys`]
/// and [`sort_pairs`] must produce (`values` moved with their keys when it
/// has the keys' length, else ignored). A counting sort by 8-bit digits of
/// the order bits: linear time, so that even a debug build checks millions
/// of keys in seconds.
pub fn sort_on_cpu<K: RadixKey, V: Copy>(keys: &[K], values: &[V], order: Order) -> (Vec<K>, Vec<V>) {
    let flip = if order == Order::Descending { !0u64 } else { 0 };
    let bits: Vec<u64> = keys.iter().map(|k| k.order_bits() ^ flip).collect();
    let idx = counting_sort_order(&bits, K::BITS / DIGIT_BITS);
    let ks = idx.iter().map(|&i| keys[i]).collect();
    let vs = if values.len() == keys.len() { idx.iter().map(|&i| values[i]).collect() } else { Vec::new() };
    (ks, vs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_order_is_cubs() {
        let ordered = [f32::from_bits(0xFFC0_0000), f32::NEG_INFINITY, -1.0, -f32::MIN_POSITIVE, 0.0, f32::MIN_POSITIVE, 1.0, f32::INFINITY, f32::NAN];
        for pair in ordered.windows(2) {
            assert!(pair[0].order_bits() < pair[1].order_bits(), "{:?}", pair);
        }
        assert_eq!((-0.0f32).order_bits(), 0.0f32.order_bits());
        assert_eq!((-0.0f64).order_bits(), 0.0f64.order_bits());
        assert!((-1.0f64).order_bits() < (-0.5f64).order_bits());
    }

    /// Float keys at the edges of the order, in increasing order bits:
    /// NaNs and infinities of both signs, extremes, smallest normals,
    /// subnormals, zeros.
    fn f32_edges() -> Vec<f32> {
        [
            0xFFFF_FFFFu32, 0xFFC0_0000, 0xFF80_0001, 0xFF80_0000, 0xFF7F_FFFF, 0xBF80_0000, 0x8080_0000, 0x807F_FFFF,
            0x8000_0100, 0x8000_0001, 0x8000_0000, 0x0000_0000, 0x0000_0001, 0x0000_0100, 0x007F_FFFF, 0x0080_0000,
            0x3F80_0000, 0x7F7F_FFFF, 0x7F80_0000, 0x7F80_0001, 0x7FC0_0000, 0x7FFF_FFFF,
        ]
        .iter()
        .map(|&b| f32::from_bits(b))
        .collect()
    }

    #[test]
    fn ordered_bits_are_the_order_bits_but_minus_zero() {
        let edges = f32_edges();
        for &k in &edges {
            let o = k.to_ordered();
            // Reversible, bits and all.
            assert_eq!(f32::from_ordered(o).to_bits(), k.to_bits(), "{k:?}");
            // The order bits once -0.0 is read as +0.0.
            assert_eq!(f32::merge_zeros(o) as u64, k.order_bits(), "{k:?}");
            assert_eq!(k.is_minus_zero(), k.to_bits() == 0x8000_0000);
            if !k.is_minus_zero() {
                assert_eq!(o as u64, k.order_bits(), "{k:?}");
                // So every digit is the key's own, both ways.
                for p in 0..4 {
                    for desc in [false, true] {
                        assert_eq!(o.digit(p * 8, desc), k.digit(p * 8, desc), "{k:?} pass {p} desc {desc}");
                    }
                }
            }
        }
        // -0.0 sits just below +0.0, and sorts among the others as it should.
        assert_eq!((-0.0f32).to_ordered() + 1, 0.0f32.to_ordered());
        for pair in edges.windows(2) {
            assert!(pair[0].to_ordered() < pair[1].to_ordered(), "{pair:?}");
        }
        // The same for f64, and the integer keys (their ordered bits are
        // their order bits).
        for k in [f64::NEG_INFINITY, -1.5, -f64::from_bits(1), -0.0, 0.0, f64::from_bits(1), f64::MAX, f64::NAN, -f64::NAN] {
            assert_eq!(f64::from_ordered(k.to_ordered()).to_bits(), k.to_bits());
            assert_eq!(f64::merge_zeros(k.to_ordered()), k.order_bits());
            assert_eq!(k.is_minus_zero(), k.to_bits() == 1 << 63);
        }
        assert_eq!((-0.0f64).to_ordered() + 1, 0.0f64.to_ordered());
        for k in [i32::MIN, -1, 0, 1, i32::MAX] {
            assert_eq!(k.to_ordered() as u64, k.order_bits());
            assert_eq!(i32::from_ordered(k.to_ordered()), k);
        }
        for k in [i64::MIN, -1, 0, i64::MAX] {
            assert_eq!(k.to_ordered(), k.order_bits());
            assert_eq!(i64::from_ordered(k.to_ordered()), k);
        }
        assert_eq!(0xDEAD_BEEFu32.to_ordered(), 0xDEAD_BEEF);
        assert!(!u32::MAPPED && !u64::MAPPED && i32::MAPPED && f32::MAPPED && f64::MAPPED);
        assert!(f32::SIGNED_ZERO && f64::SIGNED_ZERO && !i32::SIGNED_ZERO && !u64::SIGNED_ZERO);
        assert!(MINUS_ZERO_SLOT >= MAX_PASSES);
    }

    /// The scatter's digits on the CPU: an LSD sort by the digits of the
    /// ordered bits (with `merge`, -0.0's read as +0.0's), as the passes
    /// take them. Without a -0.0 the plain digits give the sort's order;
    /// with one only the merged digits do.
    #[test]
    fn ordered_digits_sort_as_the_keys() {
        fn lsd(keys: &[f32], desc: bool, merge: bool) -> Vec<u32> {
            let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
            for p in 0..4 {
                let digit = |i: u32| {
                    let o = keys[i as usize].to_ordered();
                    let o = if merge { f32::merge_zeros(o) } else { o };
                    o.digit(p * 8, desc)
                };
                // A stable sort by the digit is one counting-sort pass.
                idx.sort_by_key(|&i| digit(i));
            }
            idx
        }
        let edges = f32_edges();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mixed: Vec<f32> = (0..200)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                edges[(state % edges.len() as u64) as usize]
            })
            .collect();
        assert!(mixed.iter().any(|k| k.is_minus_zero()) && mixed.iter().any(|k| k.to_bits() == 0));
        let plus: Vec<f32> = mixed.iter().map(|&k| if k.is_minus_zero() { 0.0 } else { k }).collect();
        let values: Vec<u32> = (0..200).collect();
        for order in [Order::Ascending, Order::Descending] {
            let desc = order == Order::Descending;
            assert_eq!(lsd(&mixed, desc, true), sort_on_cpu(&mixed, &values, order).1);
            assert_eq!(lsd(&plus, desc, false), sort_on_cpu(&plus, &values, order).1);
            // Unmerged digits take -0.0 before +0.0: not the sort's order.
            assert_ne!(lsd(&mixed, desc, false), sort_on_cpu(&mixed, &values, order).1);
        }
    }

    #[test]
    fn signed_order() {
        assert!((-5i32).order_bits() < 3i32.order_bits());
        assert!(i64::MIN.order_bits() < i64::MAX.order_bits());
        assert!(i32::MIN.order_bits() < (-1i32).order_bits());
    }

    #[test]
    fn padding_is_the_last_key_both_ways() {
        fn check<K: RadixKey>() {
            let all = if K::BITS == 64 { u64::MAX } else { (1 << K::BITS) - 1 };
            assert_eq!(K::padding(false).order_bits(), all);
            assert_eq!(K::padding(true).order_bits(), 0);
            for p in 0..K::BITS / DIGIT_BITS {
                assert_eq!(K::padding(false).digit(p * DIGIT_BITS, false), 255);
                assert_eq!(K::padding(true).digit(p * DIGIT_BITS, true), 255);
            }
        }
        check::<u32>();
        check::<i32>();
        check::<f32>();
        check::<u64>();
        check::<i64>();
        check::<f64>();
    }

    #[test]
    fn digits_compose_the_order_bits() {
        for k in [0u32, 1, 0xDEAD_BEEF, u32::MAX] {
            let mut bits = 0u64;
            let mut desc = 0u64;
            for p in 0..4 {
                bits |= (k.digit(p * 8, false) as u64) << (p * 8);
                desc |= (k.digit(p * 8, true) as u64) << (p * 8);
            }
            assert_eq!(bits, k.order_bits());
            assert_eq!(desc, !k.order_bits() & 0xFFFF_FFFF);
        }
    }

    #[test]
    fn cpu_sort_is_stable_both_ways() {
        let keys = [2.0f32, -0.0, 1.0, 0.0, 2.0];
        let values = [0u32, 1, 2, 3, 4];
        let (_, v) = sort_on_cpu(&keys, &values, Order::Ascending);
        assert_eq!(v, [1, 3, 2, 0, 4]);
        let (_, v) = sort_on_cpu(&keys, &values, Order::Descending);
        assert_eq!(v, [0, 4, 2, 1, 3]);
    }

    #[test]
    fn cpu_sort_is_the_std_stable_sort() {
        let mut state = 0x1234_5678_9ABC_DEF1u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials = [0.0f32, -0.0, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        let keys: Vec<f32> = (0..5000)
            .map(|i| if i % 7 == 0 { specials[i % 6] } else { ((next() % 200) as f32 - 100.0) / 8.0 })
            .collect();
        let values: Vec<u32> = (0..5000).collect();
        for order in [Order::Ascending, Order::Descending] {
            let mut idx: Vec<usize> = (0..keys.len()).collect();
            match order {
                Order::Ascending => idx.sort_by_key(|&i| keys[i].order_bits()),
                Order::Descending => idx.sort_by_key(|&i| std::cmp::Reverse(keys[i].order_bits())),
            }
            let (k, v) = sort_on_cpu(&keys, &values, order);
            assert_eq!(v, idx.iter().map(|&i| i as u32).collect::<Vec<_>>());
            assert!(k.iter().zip(&idx).all(|(a, &i)| a.to_bits() == keys[i].to_bits()));
        }
        let wide: Vec<u64> = (0..3000).map(|_| next() % 1000 << 40 | next() % 3).collect();
        let (k, _) = sort_on_cpu::<u64, u32>(&wide, &[], Order::Ascending);
        let mut want = wide.clone();
        want.sort();
        assert_eq!(k, want);
    }

    #[test]
    fn scratch_fits_every_pass() {
        assert_eq!(scratch_len(1, 4, 6144), 4 * RADIX + TICKETS + 2 * RADIX);
        assert_eq!(scratch_len(4097, 8, 4096), 8 * RADIX + TICKETS + 2 * 2 * RADIX);
    }

    /// The default's tiles in blocks of 256 threads.
    fn narrow() -> SortTuning {
        SortTuning { threads: THREADS, pair_threads: THREADS, ..SortTuning::default() }
    }

    #[test]
    fn the_default_takes_the_wide_blocks() {
        let t = SortTuning::default();
        assert_eq!((block_threads(4, 0, t), items_per_thread(4, 0, t), scatter_blocks(4, 0, t)), (WIDE_THREADS, 20, 3));
        // Pairs at two blocks a multiprocessor: on an H100 three missed
        // the target against CUB (benches/README.md, "H100, 2026-12-05").
        assert_eq!((block_threads(4, 4, t), items_per_thread(4, 4, t), scatter_blocks(4, 4, t)), (WIDE_THREADS, 20, 2));
        // The knob brings the blocks of 256 back whole.
        let n = SortTuning::parse("threads=256,pair-threads=256");
        assert_eq!(n, narrow());
        assert_eq!((block_threads(4, 0, n), items_per_thread(4, 0, n), scatter_blocks(4, 0, n)), (THREADS, 24, 3));
        assert_eq!((block_threads(4, 4, n), items_per_thread(4, 4, n), scatter_blocks(4, 4, n)), (THREADS, 24, 4));
    }

    #[test]
    fn tiles_fill_the_exchange() {
        let t = narrow();
        assert_eq!(items_per_thread(8, 0, t), WIDE_ITEMS);
        assert_eq!(items_per_thread(4, 8, t), WIDE_ITEMS);
        assert_eq!(items_per_thread(4, 4, t), t.pair_items);
        assert_eq!(items_per_thread(4, 0, t), t.items);
        assert_eq!(items_per_thread(4, 4, SortTuning { pair_items: 24, ..t }), 24);
        // Blocks per multiprocessor: the knob only where an instance has it.
        let four = SortTuning { blocks: 4, pair_blocks: 4, ..t };
        let three = SortTuning { blocks: 3, pair_blocks: 3, ..t };
        for (tuning, blocks) in [(four, 4), (three, 3)] {
            assert_eq!(scatter_blocks(4, 0, SortTuning { items: 16, ..tuning }), blocks);
            assert_eq!(scatter_blocks(4, 0, SortTuning { items: 24, ..tuning }), blocks);
            assert_eq!(scatter_blocks(4, 0, SortTuning { items: 32, ..tuning }), 3);
            for values in [ValueLoad::Early, ValueLoad::Late, ValueLoad::After] {
                assert_eq!(scatter_blocks(4, 4, SortTuning { pair_items: 16, values, ..tuning }), blocks);
            }
            // Wide pair tiles keep three or four blocks only with the
            // values loaded after the keys are out.
            assert_eq!(scatter_blocks(4, 4, SortTuning { pair_items: 24, values: ValueLoad::After, ..tuning }), blocks);
            assert_eq!(scatter_blocks(4, 4, SortTuning { pair_items: 24, values: ValueLoad::Late, ..tuning }), 2);
            assert_eq!(scatter_blocks(4, 4, SortTuning { pair_items: 24, values: ValueLoad::Early, ..tuning }), 2);
            assert_eq!(scatter_blocks(8, 0, tuning), 3);
            assert_eq!(scatter_blocks(8, 4, tuning), 2);
            assert_eq!(scatter_blocks(4, 8, tuning), 2);
        }
        for items in [16, 24, 32] {
            assert!(THREADS * items * 4 <= EXCHANGE_WORDS * 8);
        }
        assert!(THREADS * WIDE_ITEMS * 8 <= EXCHANGE_WORDS * 8);
    }

    #[test]
    fn wide_blocks_only_for_four_byte_keys_alone() {
        let t = narrow();
        let wide = SortTuning { threads: WIDE_THREADS, ..t };
        assert_eq!(block_threads(4, 0, t), THREADS);
        assert_eq!(block_threads(4, 0, wide), WIDE_THREADS);
        for (key_bytes, value_bytes) in [(4, 4), (8, 0), (8, 4), (4, 8)] {
            assert_eq!(block_threads(key_bytes, value_bytes, wide), THREADS);
            assert_eq!(items_per_thread(key_bytes, value_bytes, wide), items_per_thread(key_bytes, value_bytes, t));
            assert_eq!(scatter_blocks(key_bytes, value_bytes, wide), scatter_blocks(key_bytes, value_bytes, t));
        }
        // A wide block takes 16 or 20 keys a thread, at two or three blocks
        // per multiprocessor; a block of 256 reads 20 as 24 and 2 as 3.
        for (items, wide_items, items_256) in [(16, 16, 16), (20, 20, 24), (24, 20, 24), (32, 20, 32)] {
            assert_eq!(items_per_thread(4, 0, SortTuning { items, ..wide }), wide_items);
            assert_eq!(items_per_thread(4, 0, SortTuning { items, ..t }), items_256);
        }
        for (blocks, wide_blocks, blocks_256) in [(2, 2, 3), (3, 3, 3), (4, 3, 4)] {
            assert_eq!(scatter_blocks(4, 0, SortTuning { blocks, ..wide }), wide_blocks);
            assert_eq!(scatter_blocks(4, 0, SortTuning { blocks, ..t }), blocks_256);
        }
        for items in [16, 20] {
            assert!(WIDE_THREADS * items * 4 <= EXCHANGE_WORDS * 8);
        }
        // Wide pairs only with the values loaded after the keys.
        let wide_pairs = SortTuning { pair_threads: WIDE_THREADS, ..t };
        assert_eq!(block_threads(4, 4, wide_pairs), WIDE_THREADS);
        assert_eq!(items_per_thread(4, 4, wide_pairs), 20);
        assert_eq!(items_per_thread(4, 4, SortTuning { pair_items: 16, ..wide_pairs }), 16);
        // Two blocks a multiprocessor but at `pair_blocks: 3` (4, the
        // default, is the 256-thread tile's).
        assert_eq!(scatter_blocks(4, 4, wide_pairs), 2);
        assert_eq!(scatter_blocks(4, 4, SortTuning { pair_blocks: 2, ..wide_pairs }), 2);
        assert_eq!(scatter_blocks(4, 4, SortTuning { pair_blocks: 3, ..wide_pairs }), 3);
        for values in [ValueLoad::Early, ValueLoad::Late] {
            let narrow = SortTuning { values, ..wide_pairs };
            assert_eq!(block_threads(4, 4, narrow), THREADS);
            assert_eq!(items_per_thread(4, 4, narrow), 24);
            assert_eq!(scatter_blocks(4, 4, narrow), 2);
        }
        assert_eq!(items_per_thread(4, 4, SortTuning { pair_items: 20, ..t }), 24);
        assert_eq!(block_threads(8, 4, wide_pairs), THREADS);
        // Every warp's counts zeroed by `RADIX / 32` words a thread.
        assert_eq!(WIDE_WARPS * RADIX, RADIX / 32 * WIDE_THREADS);
        assert_eq!(WARPS * RADIX, RADIX / 32 * THREADS);
    }

    #[test]
    fn tuning_parses_the_knob() {
        assert_eq!(SortTuning::parse(""), SortTuning::default());
        assert_eq!(
            SortTuning::parse(" items=32, window=4 ,delay=300,pair-items=24"),
            SortTuning { items: 32, pair_items: 24, window: 4, poll_delay_ns: 300, ..SortTuning::default() }
        );
        // Unknown items and values out of range are ignored (with a warning).
        assert_eq!(SortTuning::parse("items=18,pair-items=32,threads=320,pair-threads=128,window=0,window=9,fast"), SortTuning::default());
        assert_eq!(
            SortTuning::parse("pair-threads=384,pair-items=20,pair-blocks=2"),
            SortTuning { pair_threads: WIDE_THREADS, pair_items: 20, pair_blocks: 2, ..SortTuning::default() }
        );
        assert_eq!(
            SortTuning::parse("threads=384,items=20,blocks=2"),
            SortTuning { threads: WIDE_THREADS, items: 20, blocks: 2, ..SortTuning::default() }
        );
        assert_eq!(
            SortTuning::parse("blocks=4,pair-blocks=3,blocks=5,pair-blocks=1"),
            SortTuning { blocks: 4, pair_blocks: 3, ..SortTuning::default() }
        );
        assert_eq!(SortTuning { window: 3, poll_delay_ns: 2, ..SortTuning::default() }.look_back_word(), 3 | 2 << 8);
        // Block order is the word's top bit, clear of the largest delay.
        assert!(!SortTuning::default().block_order);
        let ordered = SortTuning::parse("block-order,delay=9999999");
        assert!(ordered.block_order && ordered.poll_delay_ns == 1 << 20);
        assert_eq!(ordered.look_back_word(), DEFAULT_WINDOW | (1 << 20) << 8 | BLOCK_ORDER_BIT);
        assert!(!SortTuning::parse("block-order,ticket").block_order);
        assert_eq!(SortTuning::default().values, ValueLoad::After);
        assert_eq!(
            SortTuning::parse("values=early,pair-blocks=3"),
            SortTuning { values: ValueLoad::Early, pair_blocks: 3, ..SortTuning::default() }
        );
        assert_eq!(SortTuning::parse("values=late").values, ValueLoad::Late);
        assert_eq!(SortTuning::parse("values=early,values=after"), SortTuning::default());
        assert_eq!(SortTuning::parse("values=soon"), SortTuning::default());
        // The pairs' tiles before values loaded after the keys, by name.
        assert_eq!(
            SortTuning::parse("pair-items=16,pair-blocks=4,values=late"),
            SortTuning { pair_items: 16, pair_blocks: 4, values: ValueLoad::Late, ..SortTuning::default() }
        );
    }
}
