//! `f32` and `f64`: arithmetic, comparisons, casts both ways, sign and
//! rounding operations, min/max/clamp, and the `std` math functions.
//!
//! Where IEEE 754 (and Rust) define the result exactly (+ - * / sqrt mul_add,
//! the rounding functions, casts), it must match bit for bit, up to NaN
//! payloads, which Rust leaves unspecified (`F32Ulp(0)`, or packed results
//! whose NaNs `encode::Bits` makes canonical). The operations Rust defines as
//! bit manipulations (neg, abs, copysign) must match to the last bit, NaN
//! payloads included (`Exact`), and so must a NaN that a comparison and a
//! select merely copy. The transcendental functions come from
//! libdevice on the GPU and from the system's libm on the CPU; neither is
//! correctly rounded, so each has the smallest bound measured to hold on the
//! H200 for these inputs.
//!
//! Most cases exist for both widths, written once in a macro that takes the
//! ulp bound of each width.

use crate::compare::Compare::{Exact, F32Ulp, F64Ulp};
use crate::encode::{f32_of, f32_result, f64_of, f64_result, lanes};
use crate::harness::Suite;

pub fn run(s: &mut Suite) {
    arithmetic(s);
    sign_and_rounding(s);
    comparisons(s);
    casts(s);
    math_functions(s);
}

/// A case over `x` (from `a`) and `y` (from `b`) for `f32`, then for `f64`,
/// compared in ulps; `$body` returns a float of the same width.
macro_rules! both_widths {
    ($s:ident, $name:literal, f32: $ulp32:expr, f64: $ulp64:expr, |$x:ident, $y:ident| $body:expr) => {{
        $s.case(concat!("f32/", $name), F32Ulp($ulp32), |a, b| {
            let ($x, $y) = (f32_of(a), f32_of(b));
            f32_result($body)
        });
        $s.case(concat!("f64/", $name), F64Ulp($ulp64), |a, b| {
            let ($x, $y) = (f64_of(a), f64_of(b));
            f64_result($body)
        });
    }};
}

/// Like [`both_widths`], for a body that packs its own `u128` (compared as `$mode`).
macro_rules! both_widths_packed {
    ($s:ident, $name:literal, $mode:expr, |$x:ident, $y:ident| $body:expr) => {{
        $s.case(concat!("f32/", $name), $mode, |a, b| {
            let ($x, $y) = (f32_of(a), f32_of(b));
            $body
        });
        $s.case(concat!("f64/", $name), $mode, |a, b| {
            let ($x, $y) = (f64_of(a), f64_of(b));
            $body
        });
    }};
}

fn arithmetic(s: &mut Suite) {
    both_widths!(s, "add", f32: 0, f64: 0, |x, y| x + y);
    both_widths!(s, "sub", f32: 0, f64: 0, |x, y| x - y);
    both_widths!(s, "mul", f32: 0, f64: 0, |x, y| x * y);
    both_widths!(s, "div", f32: 0, f64: 0, |x, y| x / y);
    // `%` is fmod: exact by definition (the remainder is representable).
    both_widths!(s, "rem", f32: 0, f64: 0, |x, y| x % y);
    both_widths!(s, "sqrt", f32: 0, f64: 0, |x, _y| x.sqrt());
    // The rounding error of x * y, which only a true fused multiply-add
    // computes (it is 0 if the product is rounded first): checks both that
    // mul_add fuses and that the plain `x * y` next to it is not fused.
    both_widths!(s, "mul_add_residual", f32: 0, f64: 0, |x, y| x.mul_add(y, -(x * y)));
    both_widths!(s, "mul_add", f32: 0, f64: 0, |x, y| x.mul_add(y, y + 0.75));
}

fn sign_and_rounding(s: &mut Suite) {
    // Rust defines these as bit operations that keep NaN payloads.
    both_widths_packed!(s, "neg_abs", Exact, |x, _y| lanes([
        (-x).to_bits(),
        x.abs().to_bits()
    ]));
    both_widths_packed!(s, "copysign", Exact, |x, y| lanes([
        x.copysign(y).to_bits(),
        y.copysign(x).to_bits()
    ]));
    both_widths_packed!(s, "floor_ceil", Exact, |x, _y| lanes([x.floor(), x.ceil()]));
    both_widths_packed!(s, "round_trunc", Exact, |x, _y| lanes([
        x.round(),
        x.trunc()
    ]));
    both_widths_packed!(s, "round_ties_even_fract", Exact, |x, _y| lanes([
        x.round_ties_even(),
        x.fract()
    ]));
    // A comparison and a select copy a NaN, so its payload must survive.
    both_widths_packed!(s, "select_keeps_nan_payload", Exact, |x, _y| {
        let at_least_half = if x < 0.5 { 0.5 } else { x };
        at_least_half.to_bits() as u128
    });
    // min(-0, +0) may be either zero in Rust, so `+ 0.0` turns -0 into +0
    // before comparing.
    both_widths_packed!(s, "min_max", Exact, |x, y| lanes([
        x.min(y) + 0.0,
        x.max(y) + 0.0
    ]));
    // Fully specified; the bounds are constants because clamp panics when
    // min > max.
    both_widths_packed!(s, "clamp", Exact, |x, _y| lanes([
        x.clamp(-1.5, 1000.0),
        x.clamp(0.0, 0.0)
    ]));
}

/// The IEEE comparisons and the total order of `x` and `y`, and the
/// classification of `x`, as bits.
fn comparisons(s: &mut Suite) {
    both_widths_packed!(s, "compare", Exact, |x, y| {
        let ordering = |o: Option<core::cmp::Ordering>| o.map_or(3u8, |o| (o as i8 + 1) as u8);
        let relations = lanes([x < y, x <= y, x == y, x != y, x > y, x >= y]);
        let classes = lanes([
            x.is_nan(),
            x.is_infinite(),
            x.is_finite(),
            x.is_normal(),
            x.is_subnormal(),
            x.is_sign_negative(),
        ]);
        let orders = lanes([
            ordering(x.partial_cmp(&y)),
            x.total_cmp(&y) as i8 as u8,
            x.classify() as u8,
        ]);
        relations | classes << 8 | orders << 16
    });
}

fn casts(s: &mut Suite) {
    // Float to integer saturates, and NaN becomes 0.
    both_widths_packed!(s, "to_int_narrow", Exact, |x, _y| {
        lanes([
            x as i8 as u32,
            x as u8 as u32,
            x as i16 as u32,
            x as u16 as u32,
        ]) | lanes([x as i32 as u32, x as u32]) << 64
    });
    both_widths_packed!(s, "to_int64", Exact, |x, _y| lanes([
        x as i64 as u64,
        x as u64
    ]));
    // 128-bit conversions: saturating, expanded to integer code on the GPU.
    both_widths_packed!(s, "to_i128", Exact, |x, _y| x as i128 as u128);
    both_widths_packed!(s, "to_u128", Exact, |x, _y| x as u128);
    // Integer to float rounds to nearest, ties to even.
    s.case("f32/from_int32", Exact, |a, _| {
        lanes([a as i32 as f32, a as u32 as f32])
    });
    s.case("f64/from_int32", Exact, |a, _| {
        lanes([a as i32 as f64, a as u32 as f64])
    });
    s.case("f32/from_int64", Exact, |a, _| {
        lanes([a as i64 as f32, a as f32])
    });
    s.case("f64/from_int64", Exact, |a, _| {
        lanes([a as i64 as f64, a as f64])
    });
    {
        use crate::encode::wide;
        s.case("f32/from_int128", Exact, |a, b| {
            lanes([wide(a, b) as i128 as f32, wide(a, b) as f32])
        });
        s.case("f64/from_int128", Exact, |a, b| {
            lanes([wide(a, b) as i128 as f64, wide(a, b) as f64])
        });
    }
    s.case("f32/to_f64", F64Ulp(0), |a, _| f64_result(f32_of(a) as f64));
    s.case("f64/to_f32", F32Ulp(0), |a, _| f32_result(f64_of(a) as f32));
}

/// The standard math functions, each within the smallest bound (in ulps)
/// that holds for these inputs on the H200: libdevice on the GPU against
/// glibc's libm on the CPU, neither correctly rounded.
fn math_functions(s: &mut Suite) {
    both_widths!(s, "cbrt", f32: 1, f64: 0, |x, _y| x.cbrt());
    both_widths!(s, "exp", f32: 1, f64: 0, |x, _y| x.exp());
    both_widths!(s, "exp2", f32: 0, f64: 1, |x, _y| x.exp2());
    both_widths!(s, "ln", f32: 1, f64: 0, |x, _y| x.ln());
    both_widths!(s, "log2", f32: 0, f64: 1, |x, _y| x.log2());
    both_widths!(s, "log10", f32: 1, f64: 1, |x, _y| x.log10());
    both_widths!(s, "powf", f32: 1, f64: 1, |x, y| x.quieted().powf(y.quieted()));
    // Small exponents, positive and negative.
    both_widths!(s, "powi", f32: 0, f64: 0, |x, y| x.powi(y.to_bits() as i32 % 16));
    both_widths!(s, "sin", f32: 1, f64: 1, |x, _y| x.sin());
    both_widths!(s, "cos", f32: 1, f64: 1, |x, _y| x.cos());
    both_widths!(s, "tan", f32: 1, f64: 1, |x, _y| x.tan());
    both_widths!(s, "asin", f32: 0, f64: 0, |x, _y| x.asin());
    both_widths!(s, "acos", f32: 0, f64: 0, |x, _y| x.acos());
    both_widths!(s, "atan", f32: 1, f64: 1, |x, _y| x.atan());
    both_widths!(s, "atan2", f32: 1, f64: 1, |x, y| y.atan2(x));
    both_widths!(s, "sinh", f32: 1, f64: 0, |x, _y| x.sinh());
    both_widths!(s, "cosh", f32: 1, f64: 0, |x, _y| x.cosh());
    both_widths!(s, "tanh", f32: 1, f64: 1, |x, _y| x.tanh());
    both_widths!(s, "hypot", f32: 1, f64: 1, |x, y| x.quieted().hypot(y.quieted()));
}

/// Signalling NaNs made quiet, for pow and hypot. IEEE 754 gives
/// pow(NaN, 0) = 1 and hypot(inf, NaN) = inf for a quiet NaN but NaN for a
/// signalling one; glibc follows that and libdevice does not. Rust does not
/// specify signalling NaNs, so these cases only compare quiet ones.
trait Quieted {
    fn quieted(self) -> Self;
}

impl Quieted for f32 {
    fn quieted(self) -> f32 {
        if self.is_nan() {
            f32::NAN
        } else {
            self
        }
    }
}

impl Quieted for f64 {
    fn quieted(self) -> f64 {
        if self.is_nan() {
            f64::NAN
        } else {
            self
        }
    }
}
