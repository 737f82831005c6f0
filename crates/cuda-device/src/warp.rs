//! Warp-level operations: shuffles, votes, matches and reductions.
//!
//! Every collective here is the `.sync` form with an explicit member mask:
//! the threads named in `mask` must all execute the call (use [`FULL_MASK`]
//! when the whole warp does, or [`active_mask`]). Shuffles move 32-bit values
//! in one instruction and 64-bit values in two.
//!
//! Beyond the single instructions: the lane masks (`lanemask_lt` …),
//! [`elect_sync`] (which lane was elected), and scans and reductions over any
//! member mask, gaps included ([`inclusive_scan`], [`exclusive_scan`],
//! [`reduce_masked`] and their sums), which a lane outside the mask may call
//! without taking part.
//!
//! ```
//! use cuda_device::warp;
//!
//! /// The sum of `x` over the 32 lanes of a full warp, in every lane.
//! fn warp_total(x: f32) -> f32 {
//!     warp::sum(x)
//! }
//! ```

use crate::stubs;

/// The mask of all 32 lanes.
pub const FULL_MASK: u32 = u32::MAX;

/// Lane count of a warp.
pub const WARP_SIZE: u32 = 32;

/// The calling thread's lane (0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    stubs::__oxide_stub_lane_id()
}

/// The lanes below the calling one: bit `i` set for every `i < lane_id()`
/// (PTX `%lanemask_lt`). `(ballot & lanemask_lt()).count_ones()` is this
/// lane's rank among the lanes whose predicate held.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    stubs::__oxide_stub_lanemask_lt()
}

/// The calling lane and those below it (`%lanemask_le`).
#[inline(always)]
pub fn lanemask_le() -> u32 {
    stubs::__oxide_stub_lanemask_le()
}

/// The calling lane's own bit, `1 << lane_id()` (`%lanemask_eq`).
#[inline(always)]
pub fn lanemask_eq() -> u32 {
    stubs::__oxide_stub_lanemask_eq()
}

/// The calling lane and those above it (`%lanemask_ge`).
#[inline(always)]
pub fn lanemask_ge() -> u32 {
    stubs::__oxide_stub_lanemask_ge()
}

/// The lanes above the calling one (`%lanemask_gt`).
#[inline(always)]
pub fn lanemask_gt() -> u32 {
    stubs::__oxide_stub_lanemask_gt()
}

/// The lanes currently executing this call together (`__activemask()`).
#[inline(always)]
pub fn active_mask() -> u32 {
    stubs::__oxide_stub_active_mask()
}

/// Waits until the lanes of `mask` reach this point (`__syncwarp(mask)`).
#[inline(always)]
pub fn sync_warp(mask: u32) {
    stubs::__oxide_stub_sync_warp(mask)
}

/// A value a shuffle can move: 32-bit types in one shuffle, 64-bit in two.
pub trait Shuffle: Copy {
    /// Applies a 32-bit shuffle to each 32-bit half of the value.
    #[doc(hidden)]
    fn shuffle_with(self, shuffle: impl Fn(u32) -> u32) -> Self;
}

macro_rules! shuffle_32 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_with(self, shuffle: impl Fn(u32) -> u32) -> Self {
                let from: fn(u32) -> $t = $from;
                let to: fn($t) -> u32 = $to;
                from(shuffle(to(self)))
            }
        }
    )*};
}
macro_rules! shuffle_64 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_with(self, shuffle: impl Fn(u32) -> u32) -> Self {
                let from: fn(u64) -> $t = $from;
                let to: fn($t) -> u64 = $to;
                let bits = to(self);
                let lo = shuffle(bits as u32) as u64;
                let hi = shuffle((bits >> 32) as u32) as u64;
                from(hi << 32 | lo)
            }
        }
    )*};
}
shuffle_32! {
    u32: |x| x, |x| x;
    i32: |x| x as u32, |x| x as i32;
    f32: f32::to_bits, f32::from_bits;
}
shuffle_64! {
    u64: |x| x, |x| x;
    i64: |x| x as u64, |x| x as i64;
    f64: f64::to_bits, f64::from_bits;
}

/// `clamp` operand of `shfl.sync` for a full 32-lane segment.
const CLAMP_DOWN: u32 = 0x1f;
const CLAMP_UP: u32 = 0;

/// The value of `value` in lane `src_lane` (`__shfl_sync`).
#[inline(always)]
pub fn shfl_idx<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T {
    value.shuffle_with(|v| stubs::__oxide_stub_shfl_idx_u32(mask, v, src_lane, CLAMP_DOWN))
}

/// The value of lane `lane_id() - delta`, or the own value in the lowest
/// lanes (`__shfl_up_sync`).
#[inline(always)]
pub fn shfl_up<T: Shuffle>(mask: u32, value: T, delta: u32) -> T {
    value.shuffle_with(|v| stubs::__oxide_stub_shfl_up_u32(mask, v, delta, CLAMP_UP))
}

/// The value of lane `lane_id() + delta`, or the own value in the highest
/// lanes (`__shfl_down_sync`).
#[inline(always)]
pub fn shfl_down<T: Shuffle>(mask: u32, value: T, delta: u32) -> T {
    value.shuffle_with(|v| stubs::__oxide_stub_shfl_down_u32(mask, v, delta, CLAMP_DOWN))
}

/// The value of lane `lane_id() ^ lane_mask` (`__shfl_xor_sync`).
#[inline(always)]
pub fn shfl_xor<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T {
    value.shuffle_with(|v| stubs::__oxide_stub_shfl_xor_u32(mask, v, lane_mask, CLAMP_DOWN))
}

/// Whether `predicate` holds in every lane of `mask` (`__all_sync`).
#[inline(always)]
pub fn all(mask: u32, predicate: bool) -> bool {
    stubs::__oxide_stub_vote_all(mask, predicate)
}

/// Whether `predicate` holds in any lane of `mask` (`__any_sync`).
#[inline(always)]
pub fn any(mask: u32, predicate: bool) -> bool {
    stubs::__oxide_stub_vote_any(mask, predicate)
}

/// Bit `i` set when lane `i` passed `true` (`__ballot_sync`).
#[inline(always)]
pub fn ballot(mask: u32, predicate: bool) -> u32 {
    stubs::__oxide_stub_vote_ballot(mask, predicate)
}

/// The lanes of `mask` whose `value != 0` agrees with this lane's: the
/// [`ballot`] of `value != 0` where it holds, its complement where it does
/// not. The complement is the whole word's: it also sets the bits of lanes
/// outside `mask`, so keep `& mask` where `mask` is not [`FULL_MASK`].
///
/// One predicate for the vote and the complement (CUB's `MatchAny` step):
/// `ballot(mask, v != 0)` followed by `if v != 0 { b } else { !b }` compiles
/// to two bit tests a call. Eight calls, one per bit of a digit, give the
/// lanes whose digits equal this lane's (what [`match_any`] gives, without
/// the `match` instruction, whose time grows with the distinct values).
///
/// ```ignore
/// let mut peers = FULL_MASK;
/// for bit in 0..8 {
///     peers &= warp::ballot_agree(FULL_MASK, digit & (1 << bit));
/// }
/// ```
#[inline(always)]
pub fn ballot_agree(mask: u32, value: u32) -> u32 {
    stubs::__oxide_stub_vote_ballot_agree(mask, value)
}

/// A value `match_any` can compare: 32 or 64 bits.
pub trait MatchValue: Copy {
    #[doc(hidden)]
    fn match_any(self, mask: u32) -> u32;
}
impl MatchValue for u32 {
    #[inline(always)]
    fn match_any(self, mask: u32) -> u32 {
        stubs::__oxide_stub_match_any_u32(mask, self)
    }
}
impl MatchValue for u64 {
    #[inline(always)]
    fn match_any(self, mask: u32) -> u32 {
        stubs::__oxide_stub_match_any_u64(mask, self)
    }
}

/// The lanes of `mask` whose `value` equals this lane's (`__match_any_sync`, sm_70+).
#[inline(always)]
pub fn match_any<T: MatchValue>(mask: u32, value: T) -> u32 {
    value.match_any(mask)
}

/// `Some(m)` with `m = mask` if every lane of `mask` holds the same `value`,
/// else `None` (`__match_all_sync`, built from `match_any`).
#[inline(always)]
pub fn match_all<T: MatchValue>(mask: u32, value: T) -> Option<u32> {
    let same = value.match_any(mask);
    (same == mask).then_some(mask)
}

/// `true` in exactly one lane of `mask`, the same for all of them
/// (`elect.sync`, sm_90).
#[inline(always)]
pub fn elect_one(mask: u32) -> bool {
    stubs::__oxide_stub_elect_one(mask)
}

/// What [`elect_sync`] tells each lane of its mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Election {
    /// Whether the calling lane is the one elected.
    pub elected: bool,
    /// The elected lane, the same in every lane of the mask.
    pub leader: u32,
}

/// Elects one lane of `mask` and tells every lane of it which (`elect.sync`,
/// sm_90): `elected` is `true` in exactly that lane, `leader` is its lane
/// number everywhere. All lanes of `mask` must make the call. Built for an
/// older target it is a compile error naming the call; there,
/// `mask.trailing_zeros()` is a leader every lane agrees on without an
/// instruction.
#[inline(always)]
pub fn elect_sync(mask: u32) -> Election {
    let both = stubs::__oxide_stub_elect_sync(mask);
    Election { elected: both >> 32 & 1 != 0, leader: both as u32 }
}

macro_rules! redux {
    ($($(#[$doc:meta])* $name:ident($t:ty) => $stub:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(mask: u32, value: $t) -> $t {
            stubs::$stub(value, mask)
        }
    )*};
}
redux! {
    /// Sum over the lanes of `mask`, in one instruction (`redux.sync`, sm_80+).
    reduce_add_u32(u32) => __oxide_stub_redux_add_u32;
    /// Minimum over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_min_u32(u32) => __oxide_stub_redux_min_u32;
    /// Maximum over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_max_u32(u32) => __oxide_stub_redux_max_u32;
    /// Minimum over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_min_i32(i32) => __oxide_stub_redux_min_i32;
    /// Maximum over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_max_i32(i32) => __oxide_stub_redux_max_i32;
    /// Bitwise and over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_and_u32(u32) => __oxide_stub_redux_and_u32;
    /// Bitwise or over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_or_u32(u32) => __oxide_stub_redux_or_u32;
    /// Bitwise xor over the lanes of `mask` (`redux.sync`, sm_80+).
    reduce_xor_u32(u32) => __oxide_stub_redux_xor_u32;
}

/// Combines `value` over the 32 lanes of a full warp with `op` (a butterfly
/// of `shfl_xor`), so every lane gets the result.
#[inline(always)]
pub fn reduce<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    let mut v = value;
    let mut offset = 16;
    while offset > 0 {
        v = op(v, shfl_xor(FULL_MASK, v, offset));
        offset /= 2;
    }
    v
}

/// The sum of `value` over a full warp, in every lane.
#[inline(always)]
pub fn sum<T: Shuffle + core::ops::Add<Output = T>>(value: T) -> T {
    reduce(value, |a, b| a + b)
}

/// The minimum of `value` over a full warp, in every lane.
#[inline(always)]
pub fn min<T: Shuffle + PartialOrd>(value: T) -> T {
    reduce(value, |a, b| if b < a { b } else { a })
}

/// The maximum of `value` over a full warp, in every lane.
#[inline(always)]
pub fn max<T: Shuffle + PartialOrd>(value: T) -> T {
    reduce(value, |a, b| if b > a { b } else { a })
}

/// The lane of `mask` whose rank among the lanes of `mask` is `rank` (0 is
/// the lowest lane), or 32 if `mask` has no more than `rank` lanes: a binary
/// search on population counts, the same in every lane.
#[inline(always)]
fn nth_lane(mask: u32, rank: u32) -> u32 {
    if rank >= mask.count_ones() {
        return WARP_SIZE;
    }
    // Invariant: the answer is in [low, low + width), and `before` lanes of
    // `mask` lie below `low`.
    let (mut low, mut before, mut width) = (0u32, 0u32, WARP_SIZE);
    while width > 1 {
        width /= 2;
        let below_mid = (mask >> low & ((1u32 << width) - 1)).count_ones();
        if before + below_mid <= rank {
            before += below_mid;
            low += width;
        }
    }
    low
}

/// Inclusive scan of `value` over the lanes of `mask`, in lane order: the
/// lane of rank `r` among them gets `v0 op v1 op … op vr`, where `vk` is the
/// value of the lane of rank `k`. `mask` may be any set of lanes, gaps
/// included; `op` must be associative (it need not be commutative: operands
/// stay in lane order).
///
/// Every lane of `mask` must make the call (as for all `.sync`
/// collectives). A lane outside `mask` may call too: it takes no part, waits
/// for nobody and gets its own `value` back.
///
/// ```
/// use cuda_device::warp;
///
/// /// Where each lane with `keep` writes its item in a compacted output.
/// fn slot(keep: bool) -> u32 {
///     let kept = warp::ballot(warp::FULL_MASK, keep);
///     warp::exclusive_scan(kept, 1u32, 0, |a, b| a + b)
/// }
/// ```
#[inline(always)]
pub fn inclusive_scan<T: Shuffle>(mask: u32, value: T, op: impl Fn(T, T) -> T) -> T {
    if mask & lanemask_eq() == 0 {
        return value;
    }
    let rank = (mask & lanemask_lt()).count_ones();
    let members = mask.count_ones();
    let mut v = value;
    let mut distance = 1;
    while distance < members {
        // Every member shuffles (with the same mask); the lanes of rank
        // below `distance` read their own value and discard it.
        let from = if rank >= distance { nth_lane(mask, rank - distance) } else { lane_id() };
        let earlier = shfl_idx(mask, v, from);
        if rank >= distance {
            v = op(earlier, v);
        }
        distance *= 2;
    }
    v
}

/// Exclusive scan of `value` over the lanes of `mask`, in lane order: the
/// lowest lane of `mask` gets `identity`, the lane of rank `r > 0` gets
/// `v0 op … op v(r-1)`. Same rules as [`inclusive_scan`]; a lane outside
/// `mask` gets `identity`.
#[inline(always)]
pub fn exclusive_scan<T: Shuffle>(mask: u32, value: T, identity: T, op: impl Fn(T, T) -> T) -> T {
    if mask & lanemask_eq() == 0 {
        return identity;
    }
    let inclusive = inclusive_scan(mask, value, op);
    let rank = (mask & lanemask_lt()).count_ones();
    let from = if rank > 0 { nth_lane(mask, rank - 1) } else { lane_id() };
    let before = shfl_idx(mask, inclusive, from);
    if rank > 0 { before } else { identity }
}

/// `value` combined with `op` over the lanes of `mask`, in lane order, in
/// every lane of `mask`: [`inclusive_scan`]'s result in the highest lane,
/// handed to all. Same rules as [`inclusive_scan`]; a lane outside `mask` gets
/// its own `value`.
#[inline(always)]
pub fn reduce_masked<T: Shuffle>(mask: u32, value: T, op: impl Fn(T, T) -> T) -> T {
    if mask & lanemask_eq() == 0 {
        return value;
    }
    let inclusive = inclusive_scan(mask, value, op);
    shfl_idx(mask, inclusive, WARP_SIZE - 1 - mask.leading_zeros())
}

/// The sum of `value` over the lanes of `mask`, in every lane of `mask`
/// ([`reduce_masked`] with `+`).
#[inline(always)]
pub fn sum_masked<T: Shuffle + core::ops::Add<Output = T>>(mask: u32, value: T) -> T {
    reduce_masked(mask, value, |a, b| a + b)
}

/// Running sums over the lanes of `mask` ([`inclusive_scan`] with `+`).
#[inline(always)]
pub fn inclusive_sum<T: Shuffle + core::ops::Add<Output = T>>(mask: u32, value: T) -> T {
    inclusive_scan(mask, value, |a, b| a + b)
}

/// Sums of the lanes of `mask` below each lane ([`exclusive_scan`] with `+`
/// and `T::default()`, zero for the number types, as identity).
#[inline(always)]
pub fn exclusive_sum<T: Shuffle + Default + core::ops::Add<Output = T>>(mask: u32, value: T) -> T {
    exclusive_scan(mask, value, T::default(), |a, b| a + b)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::nth_lane;
    use std::vec::Vec;

    #[test]
    fn nth_lane_counts_set_bits_from_the_bottom() {
        for mask in [u32::MAX, 0x8000_0001, 0b1011_0100, 0x5555_5555, 0xf0f0_0000, 1, 0] {
            let lanes: Vec<u32> = (0..32).filter(|l| mask >> l & 1 != 0).collect();
            for rank in 0..33 {
                let want = lanes.get(rank as usize).copied().unwrap_or(32);
                assert_eq!(nth_lane(mask, rank), want, "mask {mask:#x} rank {rank}");
            }
        }
    }
}
