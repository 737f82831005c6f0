//! Calls into the `#[device]` functions of the `conformance-device` library:
//! across the crate boundary, recursive, looping, and generic (instantiated
//! here, defined there).

use crate::compare::Compare::Exact;
use crate::encode::{lanes, wide, Bits};
use crate::harness::Suite;
use conformance_device::helpers::{collatz_steps, fib, gcd, isqrt_newton, largest, mix64};

pub fn run(s: &mut Suite) {
    s.case("device/gcd_recursive", Exact, |a, b| {
        lanes([
            gcd(a, b),
            gcd(a as u32 as u64, (b as u16 as u64).wrapping_mul(a & 0xFFF)),
        ])
    });
    s.case("device/fib_recursive", Exact, |a, b| {
        lanes([fib(a as u32), fib(b as u32)])
    });
    s.case("device/mix64", Exact, |a, b| {
        wide(mix64(a), mix64(b ^ mix64(a)))
    });
    s.case("device/isqrt_newton", Exact, |a, _| {
        let root = isqrt_newton(a);
        // Also checks the answer: root² <= a < (root + 1)².
        let correct =
            root * root <= a && (root + 1).checked_mul(root + 1).is_none_or(|next| a < next);
        wide(root, a.isqrt()) ^ (correct as u128) << 127
    });
    s.case("device/collatz", Exact, |a, b| {
        lanes([collatz_steps(a, 1000), collatz_steps(b & 0xFFFF, 500)])
    });
    s.case("device/largest_generic", Exact, |a, b| {
        let bytes = a.to_le_bytes();
        let halves = [
            b as i16,
            (b >> 16) as i16,
            (b >> 32) as i16,
            (b >> 48) as i16,
        ];
        let floats = [f32::from_bits(a as u32), f32::from_bits(b as u32), 0.5];
        let empty: [u64; 0] = [];
        lanes([
            largest(&bytes).map_or(u32::MAX, u32::from),
            largest(&halves).map_or(u32::MAX, |h| h as u16 as u32),
            // Canonical NaNs: see f32/select_keeps_nan_payload for why.
            largest(&floats).map_or(u32::MAX, |f| f.bits() as u32),
            largest(&empty).is_none() as u32,
        ])
    });
}
