//! Warp-level reduce and scan with a [`ReduceOp`], for the user's own
//! kernels (device code).
//!
//! The full-warp forms take no mask: all 32 lanes call them together. The
//! inclusive scan is five `shfl.up` steps (Hillis–Steele), which keep the
//! element order, so the operator need not be commutative; the reduce is
//! cuda-device's `shfl.xor` butterfly ([`cuda_device::warp::reduce`]), which
//! gives every lane the result and needs a commutative operator. The
//! `_masked` forms take any member mask, gaps included, and are
//! cuda-device's general scans ([`cuda_device::warp::inclusive_scan`]) with
//! the operator's identity.
//!
//! ```
//! use cuda_device::{kernel, thread, DisjointSlice};
//! use cuda_prims::{op::Sum, warp};
//!
//! /// Running sums within each warp of the launch.
//! #[kernel]
//! pub fn warp_running_sums(input: &[u32], mut out: DisjointSlice<u32>) {
//!     let idx = thread::index_1d();
//!     let x = input.get(idx.get()).copied().unwrap_or(0);
//!     // Every lane takes part, in range or not.
//!     let running = warp::inclusive_scan(x, Sum);
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = running;
//!     }
//! }
//! ```

use crate::op::ReduceOp;
use cuda_device::warp::{self as dw, Shuffle, FULL_MASK};

/// `value` combined over the 32 lanes of the warp, in every lane (a
/// butterfly: `op` must be commutative as well as associative).
#[inline(always)]
pub fn reduce<T: Shuffle, Op: ReduceOp<T>>(value: T, op: Op) -> T {
    dw::reduce(value, |a, b| op.combine(a, b))
}

/// Inclusive scan over the 32 lanes in lane order: lane `l` gets
/// `v0 op v1 op … op vl`. Every lane must call it.
#[inline(always)]
pub fn inclusive_scan<T: Shuffle, Op: ReduceOp<T>>(value: T, op: Op) -> T {
    let lane = dw::lane_id();
    let mut v = value;
    let mut delta = 1;
    while delta < dw::WARP_SIZE {
        // All lanes shuffle; those with no lane `delta` below keep theirs.
        let below = dw::shfl_up(FULL_MASK, v, delta);
        if lane >= delta {
            v = op.combine(below, v);
        }
        delta *= 2;
    }
    v
}

/// Exclusive scan over the 32 lanes in lane order and the warp's total:
/// lane 0 gets `op.identity()`, lane `l > 0` gets `v0 op … op v(l-1)`;
/// every lane gets the total of all 32. Every lane must call it.
#[inline(always)]
pub fn exclusive_scan<T: Shuffle, Op: ReduceOp<T>>(value: T, op: Op) -> (T, T) {
    let inclusive = inclusive_scan(value, op);
    let total = dw::shfl_idx(FULL_MASK, inclusive, dw::WARP_SIZE - 1);
    let before = dw::shfl_up(FULL_MASK, inclusive, 1);
    let exclusive = if dw::lane_id() == 0 { op.identity() } else { before };
    (exclusive, total)
}

/// `value` combined over the lanes of `mask` in lane order, in every lane
/// of `mask` (any mask, gaps included; the operator need not be
/// commutative). A lane outside `mask` may call too and gets its own value.
#[inline(always)]
pub fn reduce_masked<T: Shuffle, Op: ReduceOp<T>>(mask: u32, value: T, op: Op) -> T {
    dw::reduce_masked(mask, value, |a, b| op.combine(a, b))
}

/// Inclusive scan over the lanes of `mask` in lane order (see
/// [`cuda_device::warp::inclusive_scan`] for the rules on `mask`).
#[inline(always)]
pub fn inclusive_scan_masked<T: Shuffle, Op: ReduceOp<T>>(mask: u32, value: T, op: Op) -> T {
    dw::inclusive_scan(mask, value, |a, b| op.combine(a, b))
}

/// Exclusive scan over the lanes of `mask` in lane order: the lowest lane
/// of `mask` (and any lane outside it) gets `op.identity()`.
#[inline(always)]
pub fn exclusive_scan_masked<T: Shuffle, Op: ReduceOp<T>>(mask: u32, value: T, op: Op) -> T {
    dw::exclusive_scan(mask, value, op.identity(), |a, b| op.combine(a, b))
}
