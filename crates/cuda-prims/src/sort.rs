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
//! scatters the keys. A block of the scatter takes the next tile of
//! [`TILE`] keys (an atomic ticket, so tiles are taken in order), ranks each
//! key within the tile through per-warp digit counters in shared memory
//! (`match.any` finds the lanes of equal digits), publishes its 256 digit
//! counts, and looks back over the counts of the tiles before it
//! (decoupled look-back) for each digit's place in the output; the keys are
//! then exchanged through shared memory into digit order and written out in
//! runs. Temporary storage (the other half of the double buffer, the counts
//! and two alternating regions of tile statuses) is allocated on the
//! caller's stream and freed there: a program that sorts in a loop keeps
//! that memory in the device's pool by raising its release threshold
//! (`ctx.memory_pool()?.set_release_threshold(u64::MAX)`, see
//! `cuda_core::MemPool`), else each synchronisation hands it back.

use core::sync::atomic::{AtomicU32, Ordering};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};
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
/// Keys per thread and tile in the scatter.
const ITEMS: usize = 16;
/// Keys one block of the scatter sorts into place.
pub const TILE: usize = THREADS * ITEMS;
/// The most passes (64-bit keys).
const MAX_PASSES: usize = 8;
/// Slots of the scratch buffer between the histograms and the tile statuses:
/// one tile ticket per pass.
const TICKETS: usize = 32;
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
}

macro_rules! radix_key {
    ($($t:ty, $bits:ty, $width:literal, |$k:ident| $order:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl RadixKey for $t {
            const BITS: u32 = $width;
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
        }
    )*};
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

radix_key! {
    u32, u32, 32, |k| k;
    i32, u32, 32, |k| (k as u32) ^ (1 << 31);
    f32, u32, 32, |k| float_order!(k.to_bits(), 1u32 << 31);
    u64, u64, 64, |k| k;
    i64, u64, 64, |k| (k as u64) ^ (1 << 63);
    f64, u64, 64, |k| float_order!(k.to_bits(), 1u64 << 63);
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
/// the keys whose digit `p` is `d`. Launch with [`THREADS`] threads.
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
    let tiles = n.div_ceil(TILE);
    let mut tile = thread::blockIdx_x() as usize;
    while tile < tiles {
        let base = tile * TILE;
        // All loads of the tile first, so that they are in flight together.
        let mut ks = [K::default(); ITEMS];
        let mut valid = [false; ITEMS];
        #[unroll]
        for i in 0..ITEMS {
            let idx = base + i * THREADS + tid;
            if idx < n {
                ks[i] = keys[idx];
                valid[i] = true;
            }
        }
        #[unroll]
        for i in 0..ITEMS {
            if valid[i] {
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
    let inclusive = warp_inclusive_sum(x);
    let w = thread::threadIdx_x() as usize / 32;
    if warp::lane_id() == 31 {
        *totals.add(w) = inclusive;
    }
    thread::sync_threads();
    let mut before = 0u64;
    for i in 0..WARPS {
        if i < w {
            before = before.wrapping_add(*totals.add(i));
        }
    }
    thread::sync_threads();
    before.wrapping_add(inclusive).wrapping_sub(x)
}

/// One pass of the sort: moves each key (and value, when `values_in` has
/// the keys' length) of `keys_in` to its place by digit `pass` in
/// `keys_out`. Launch with [`THREADS`] threads and `tiles` blocks after
/// [`radix_histogram`] filled the counts of `scratch`.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn radix_scatter<K: RadixKey, V: Copy + Default>(
    keys_in: &[K],
    values_in: &[V],
    mut keys_out: DisjointSlice<K>,
    mut values_out: DisjointSlice<V>,
    mut scratch: DisjointSlice<u32>,
    pass: u32,
    descending: u32,
    tiles: u32,
) {
    // The tile in digit order (keys, then values), 8 bytes a slot.
    shared! { static EXCHANGE: [u64; TILE]; }
    // Per warp and digit: the keys of that digit the warp ranked so far,
    // then the warp's first slot among the tile's keys of that digit.
    shared! { static WARP_COUNTS: [u32; WARPS * RADIX]; }
    // Per digit: where the tile's keys of the digit start in the tile.
    shared! { static LOCAL_START: [u32; RADIX]; }
    // Per digit: output index minus tile index for the keys of the digit.
    shared! { static ADJUST: [u32; RADIX]; }
    shared! { static TOTALS: [u64; WARPS]; }
    shared! { static TICKET: [u32; 1]; }

    let desc = descending != 0;
    let tid = thread::threadIdx_x() as usize;
    let lane = warp::lane_id();
    let w = tid / 32;
    let n = keys_in.len();
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let shift = pass * DIGIT_BITS;
    let has_values = values_in.len() == n;
    let tiles = tiles as usize;
    let scratch = scratch.as_mut_ptr();
    let exchange = shared_ptr(EXCHANGE.as_mut_ptr());
    let warp_counts = shared_ptr(WARP_COUNTS.as_mut_ptr());
    let local_start = shared_ptr(LOCAL_START.as_mut_ptr());
    let adjust = shared_ptr(ADJUST.as_mut_ptr());

    // SAFETY (shared memory, this whole kernel): every index below is in
    // bounds by construction (digits < RADIX, ranks < TILE, w < WARPS), and
    // each phase's writes are separated from the next phase's reads by a
    // barrier (or, within a warp's ranking, by `sync_warp`).
    unsafe {
        #[unroll]
        for i in 0..WARPS {
            *warp_counts.add(i * RADIX + tid) = 0;
        }
        if tid == 0 {
            // SAFETY: the ticket of this pass is inside the scratch buffer,
            // only accessed atomically.
            let ticket = AtomicU32::from_ptr(scratch.add(passes * RADIX + pass as usize));
            *shared_ptr(TICKET.as_mut_ptr()) = ticket.fetch_add_scoped(1, Scope::Device, Ordering::Relaxed);
        }
    }
    thread::sync_threads();
    let tile = unsafe { *shared_ptr(TICKET.as_mut_ptr()) } as usize;
    let tile_base = tile * TILE;

    // Load warp-striped: warp w owns 32 * ITEMS consecutive keys, item i of
    // lane l is key 32 * i + l of them, so the ranking below visits a warp's
    // keys in input order (which keeps the sort stable).
    let warp_base = tile_base + w * 32 * ITEMS;
    let mut keys = [K::default(); ITEMS];
    let mut digits = [RADIX as u32; ITEMS];
    #[unroll]
    for i in 0..ITEMS {
        let idx = warp_base + i * 32 + lane as usize;
        if idx < n {
            keys[i] = keys_in[idx];
            digits[i] = keys[i].digit(shift, desc);
        }
    }

    // Rank within the warp: lanes with equal digits (match.any) take
    // consecutive slots after the ones the warp gave that digit before.
    let mut ranks = [0u32; ITEMS];
    let own_counts = unsafe { warp_counts.add(w * RADIX) };
    #[unroll]
    for i in 0..ITEMS {
        let d = digits[i];
        let peers = warp::match_any(warp::FULL_MASK, d);
        let below = (peers & warp::lanemask_lt()).count_ones();
        let leader = 31 - peers.leading_zeros();
        let mut before = 0;
        if lane == leader && (d as usize) < RADIX {
            // SAFETY: only the leader of a digit's lanes touches its counter.
            unsafe {
                before = *own_counts.add(d as usize);
                *own_counts.add(d as usize) = before + peers.count_ones();
            }
        }
        before = warp::shfl_idx(warp::FULL_MASK, before, leader);
        ranks[i] = before + below;
        warp::sync_warp(warp::FULL_MASK);
    }
    thread::sync_threads();

    // Thread d: the tile's count of digit d, each warp's start among them.
    let d = tid;
    let mut count = 0u32;
    #[unroll]
    for i in 0..WARPS {
        unsafe {
            let c = *warp_counts.add(i * RADIX + d);
            *warp_counts.add(i * RADIX + d) = count;
            count = count.wrapping_add(c);
        }
    }
    // Publish this tile's count at once, so later tiles can look back.
    let region = |p: u32| status_base(passes) + (p as usize % 2) * tiles * RADIX;
    let statuses = unsafe { scratch.add(region(pass)) };
    // SAFETY: the statuses of this pass lie inside the scratch buffer and
    // are only accessed atomically.
    let own_status = unsafe { AtomicU32::from_ptr(statuses.add(tile * RADIX + d)) };
    own_status.store_scoped(if tile == 0 { PREFIX } else { AGGREGATE } | count, Scope::Device, Ordering::Relaxed);

    // One scan for both the tile's digit starts (low word, < TILE) and the
    // pass's global digit starts (high word), which never carry into each
    // other.
    let global_count = unsafe { *scratch.add(pass as usize * RADIX + d) };
    let both = unsafe { block_exclusive_sum((global_count as u64) << 32 | count as u64, shared_ptr(TOTALS.as_mut_ptr())) };
    let tile_start = both as u32;
    let digit_start = (both >> 32) as u32;

    // Decoupled look-back: the keys of digit d in the tiles before this one.
    let mut earlier = 0u32;
    if tile > 0 {
        let mut t = tile;
        loop {
            t -= 1;
            // SAFETY: as for `own_status`.
            let status = unsafe { AtomicU32::from_ptr(statuses.add(t * RADIX + d)) };
            let mut s = status.load_scoped(Scope::Device, Ordering::Relaxed);
            while s & (AGGREGATE | PREFIX) == 0 {
                s = status.load_scoped(Scope::Device, Ordering::Relaxed);
            }
            earlier += s & COUNT_MASK;
            if s & PREFIX != 0 {
                break;
            }
        }
        own_status.store_scoped(PREFIX | (earlier + count), Scope::Device, Ordering::Relaxed);
    }
    // SAFETY: inside the scratch buffer; no block of this launch reads the
    // other region, and the next pass starts after this launch ends.
    unsafe { *scratch.add(region(pass + 1) + tile * RADIX + d) = 0 };
    unsafe {
        *local_start.add(d) = tile_start;
        *adjust.add(d) = digit_start.wrapping_add(earlier).wrapping_sub(tile_start);
    }
    thread::sync_threads();

    // Each key to its slot of the tile in digit order.
    let keys_exchange = exchange.cast::<K>();
    #[unroll]
    for i in 0..ITEMS {
        let d = digits[i] as usize;
        if d < RADIX {
            unsafe {
                ranks[i] += *local_start.add(d) + *warp_counts.add(w * RADIX + d);
                *keys_exchange.add(ranks[i] as usize) = keys[i];
            }
        }
    }
    thread::sync_threads();

    // Out in runs of equal digits: slot j of the tile goes to adjust[d] + j.
    let in_tile = n.saturating_sub(tile_base).min(TILE);
    let out = keys_out.as_mut_ptr();
    let mut places = [0u32; ITEMS];
    #[unroll]
    for i in 0..ITEMS {
        let j = i * THREADS + tid;
        if j < in_tile {
            unsafe {
                let key = *keys_exchange.add(j);
                let place = (*adjust.add(key.digit(shift, desc) as usize)).wrapping_add(j as u32);
                places[i] = place;
                // SAFETY: the places of a pass are a permutation of 0..n.
                *out.add(place as usize) = key;
            }
        }
    }
    if !has_values {
        return;
    }
    thread::sync_threads();
    let values_exchange = exchange.cast::<V>();
    #[unroll]
    for i in 0..ITEMS {
        let idx = warp_base + i * 32 + lane as usize;
        if idx < n {
            unsafe { *values_exchange.add(ranks[i] as usize) = values_in[idx] };
        }
    }
    thread::sync_threads();
    let out = values_out.as_mut_ptr();
    #[unroll]
    for i in 0..ITEMS {
        let j = i * THREADS + tid;
        if j < in_tile {
            // SAFETY: as for the keys.
            unsafe { *out.add(places[i] as usize) = *values_exchange.add(j) };
        }
    }
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
    radix_sort(module, stream, keys_in, keys_out, &no_values, &mut no_values_out, order)
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
    radix_sort(module, stream, keys_in, keys_out, values_in, values_out, order)
}

/// The scratch words a sort of `n` keys of `passes` digits needs.
fn scratch_len(n: usize, passes: usize) -> usize {
    status_base(passes) + 2 * n.div_ceil(TILE) * RADIX
}

fn radix_sort<K: RadixKey + DeviceRepr, V: DeviceRepr + Default>(
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
    let passes = (K::BITS / DIGIT_BITS) as usize;
    let tiles = n.div_ceil(TILE);
    let descending = u32::from(order == Order::Descending);
    let mut scratch = temp::zeroed::<u32>(stream, scratch_len(n, passes))?;
    // Scratch (written before read, as `temp::scratch` requires): every
    // pass writes all n elements of its output before the next pass (or the
    // caller) reads them.
    let mut keys_tmp = temp::scratch::<K>(stream, n)?;
    let mut values_tmp = temp::scratch::<V>(stream, values_in.len())?;

    let sms = stream.context().multiprocessor_count()? as usize;
    let config = LaunchConfig {
        grid_dim: (tiles.min(sms * 8) as u32, 1, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    cuda_launch! {
        kernel: radix_histogram::<K>, stream: stream, module: module, config: config,
        args: [slice(*keys_in), descending, slice_mut(scratch)]
    }?;

    // An even number of passes: in -> tmp -> out -> tmp -> ... -> out.
    let config = LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 };
    let tiles = tiles as u32;
    for pass in 0..passes as u32 {
        if pass == 0 {
            cuda_launch! {
                kernel: radix_scatter::<K, V>, stream: stream, module: module, config: config,
                args: [slice(*keys_in), slice(*values_in), slice_mut(keys_tmp), slice_mut(values_tmp),
                       slice_mut(scratch), pass, descending, tiles]
            }?;
        } else if pass % 2 == 1 {
            cuda_launch! {
                kernel: radix_scatter::<K, V>, stream: stream, module: module, config: config,
                args: [slice(keys_tmp), slice(values_tmp), slice_mut(*keys_out), slice_mut(*values_out),
                       slice_mut(scratch), pass, descending, tiles]
            }?;
        } else {
            cuda_launch! {
                kernel: radix_scatter::<K, V>, stream: stream, module: module, config: config,
                args: [slice(*keys_out), slice(*values_out), slice_mut(keys_tmp), slice_mut(values_tmp),
                       slice_mut(scratch), pass, descending, tiles]
            }?;
        }
    }
    Ok(())
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

    #[test]
    fn signed_order() {
        assert!((-5i32).order_bits() < 3i32.order_bits());
        assert!(i64::MIN.order_bits() < i64::MAX.order_bits());
        assert!(i32::MIN.order_bits() < (-1i32).order_bits());
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
        assert_eq!(scratch_len(1, 4), 4 * RADIX + TICKETS + 2 * RADIX);
        assert_eq!(scratch_len(TILE + 1, 8), 8 * RADIX + TICKETS + 2 * 2 * RADIX);
    }
}
