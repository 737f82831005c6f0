//! Warp-level operations: shuffles, votes, matches and reductions.
//!
//! Every collective here is the `.sync` form with an explicit member mask:
//! the threads named in `mask` must all execute the call (use [`FULL_MASK`]
//! when the whole warp does, or [`active_mask`]). Shuffles move 32-bit values
//! in one instruction and 64-bit values in two.
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
