//! Wrong answers oxide once gave, each under the name of what went wrong.
//! Every mismatch the random differential tester (tests/fuzz) or a user
//! finds gets a case here before it is fixed, so it stays fixed.

use crate::compare::Compare::Exact;
use crate::harness::Suite;

/// A byte argument the callee reads sign-extended: the caller stores it
/// into a 32-bit parameter slot, the callee loads it with `ld.param.s8`.
#[inline(never)]
fn byte_sign_extended(x: u8) -> i16 {
    (x as i8) as i16
}

/// A byte result the caller reads sign-extended.
#[inline(never)]
fn low_byte(x: u64) -> u8 {
    x as u8
}

/// Record 4 of tests/fuzz seed 1012 function 388, as the generator wrote it.
#[inline(never)]
fn fuzz_s1012_f388(v0: u64, v2: f32, v3: f64) -> i32 {
    let v6: u32 = (17u32.count_zeros()).wrapping_mul((v3 as f32) as u32);
    let a8: [i32; 3] = [!(v0 as i32), { let (r, o) = (v2 as i32).overflowing_neg(); if o { !r } else { r } }, 512814470];
    a8.iter().rev().fold(v6 as i32, |acc, &e| acc.max(e))
}

pub fn run(s: &mut Suite) {
    // Issue 16: ptxas kept `neg.s16` of -32768 as +32768 in its 32-bit
    // register (PtxasHazards.def).
    s.case("regress/i16_zero_overflowing_sub_flag", Exact, |a, _| {
        0i16.overflowing_sub(a as i16).1 as u128
    });
    s.case("regress/i16_neg_then_saturating_sub", Exact, |a, b| {
        (a as i16).wrapping_neg().saturating_sub(b as i16) as u16 as u128
    });
    s.case("regress/i16_neg_then_checked_div", Exact, |a, b| {
        (a as i16).wrapping_neg().checked_div(b as i16).unwrap_or(99) as u16 as u128
    });
    s.case("regress/i16_neg_widened_high_half", Exact, |a, _| {
        ((a as i16).wrapping_neg() as u128) >> 64
    });
    s.case("regress/i16_neg_then_overflowing_add_flag", Exact, |a, b| {
        (a as i16).wrapping_neg().overflowing_add(b as i16).1 as u128
    });
    // Issue 16: ptxas assumed `abs.s64` is never negative.
    s.case("regress/i64_abs_then_checked_add_is_none", Exact, |a, b| {
        (b as i64).checked_add((a as i64).wrapping_abs()).is_none() as u128
    });
    s.case("regress/i32_abs_is_negative", Exact, |a, _| {
        ((a as i32).wrapping_abs() < 0) as u128
    });
    // tests/fuzz seed 100: where ptxas inlined a call it forwarded the 32
    // bits a caller stored for a u8 argument (or a callee for a u8 result)
    // without the byte load's sign extension (PtxasHazards.def).
    s.case("regress/i8_argument_sign_extended", Exact, |a, _| {
        byte_sign_extended(a as u8) as u16 as u128 | ((byte_sign_extended(a as u8) == -1) as u128) << 16
    });
    s.case("regress/i8_result_sign_extended", Exact, |a, _| {
        let b = low_byte(a) as i8;
        (b as i16 as u16 as u128) | ((b == -1) as u128) << 16
    });
    // tests/fuzz seed 3: the backend narrowed an i128 `abs` of a value
    // with 64 sign bits to `abs.s64`, which ptxas assumes is never negative
    // (PtxasHazards.def).
    s.case("regress/i128_abs_diff_of_sign_extended", Exact, |a, b| {
        ((a as i32 as i128) >> (b as u32 & 127)).abs_diff((a as i64 as i128).wrapping_shr(b as u32))
    });
    // tests/fuzz seed 105: the backend's split of an i128 shift by a run-time
    // amount shifted a 64-bit half by up to 127, then folded `!(1 << s)` into
    // a 64-bit rotate, so s >= 64 lost the low word's ones
    // (Optimize/ExpandWideShifts.cpp).
    s.case("regress/i128_not_shl_past_64", Exact, |_, b| {
        (-1i128 ^ (1i128 << (b as u32 & 127))) as u128
    });
    s.case("regress/u128_not_lshr_past_64", Exact, |_, b| {
        !((1u128 << 127) >> (b as u32 & 127))
    });
    s.case("regress/i128_not_ashr_past_64", Exact, |a, b| {
        !(((a as i64 as i128) << 64) >> (b as u32 & 127)) as u128
    });
    s.case("regress/u128_rotate_not_one", Exact, |a, b| {
        (!1u128).rotate_left(b as u32) ^ (!(1u128 << 64)).rotate_right(a as u32)
    });
    // tests/fuzz seed 1018: the `sub.u16 d, 0, a` that once replaced
    // `neg.s16` lost its negation where ptxas fused it into a three-way
    // 16-bit maximum (VIMNMX3.U16x2), which has no negated operand
    // (PtxasHazards.def).
    s.case("regress/u16_negation_in_max_chain", Exact, |a, b| {
        let (x, y) = (a as u32, b as u32);
        let v = [(x as u16) << (y & 15), (x.rotate_left(7) as u16).wrapping_neg(), x as u16, y as u16, 4];
        *v.iter().max().unwrap() as u128
    });
    s.case("regress/u16_times_max_in_max_chain", Exact, |a, b| {
        let (x, y) = (a as u32, b as u32);
        let v = [(x as u16) << (y & 15), 65535u16.wrapping_mul(x.rotate_left(7) as u16), 4, y as u16];
        *v.iter().max().unwrap() as u128
    });
    // tests/fuzz seed 1012 function 388: ptxas fused a `neg.s32` into a
    // three-way signed maximum (VIMNMX3) and dropped the negation, so
    // max(a, -x, b) came back as max(a, x, b) (PtxasHazards.def). Built
    // without the fix, this case failed on the H200 for 1296 of its 5476
    // input pairs, in debug and release builds alike.
    s.case("regress/fuzz_s1012_f388_negation_in_max_chain", Exact, |a, b| {
        let v2 = f32::from_bits((b as u32) >> 1 | 0x4000_0000);
        fuzz_s1012_f388(a, v2, f64::from_bits(a.rotate_left(29))) as u32 as u128
    });
    // tests/fuzz seed 1019: ptxas folds `abs.f32(x) > c` to true for a
    // negative constant `c`, wrong for a NaN (PtxasHazards.def).
    s.case("regress/f32_abs_of_nan_compared", Exact, |a, _| {
        let x = f32::from_bits(a as u32).abs();
        (x > f32::from_bits(0xf207_d8ae)) as u128 | ((x > 0.5) as u128) << 1 | ((x >= -1.0) as u128) << 2 | ((x != -3.0) as u128) << 3
    });
    s.case("regress/f64_abs_of_nan_compared", Exact, |a, _| {
        let x = f64::from_bits(a).abs();
        (x > -2.7e30) as u128 | ((x > 0.5) as u128) << 1 | ((x >= -1.0) as u128) << 2 | ((x != -3.0) as u128) << 3
    });
    // Issue 16: in the dev profile (this suite's), core's `clamp` asserts
    // `min <= max` with a `{:?}` message whose `fmt` methods live in libcore:
    // the device link refused it ("string formatting … is not available").
    macro_rules! clamp_cases {
        ($($name:literal: $t:ty),*) => {$(
            s.case($name, Exact, |a, _| (a as $t).clamp(3, 7) as u128);
        )*};
    }
    clamp_cases!(
        "regress/debug_clamp_u8": u8, "regress/debug_clamp_u16": u16, "regress/debug_clamp_u32": u32,
        "regress/debug_clamp_u64": u64, "regress/debug_clamp_u128": u128, "regress/debug_clamp_usize": usize,
        "regress/debug_clamp_i8": i8, "regress/debug_clamp_i16": i16, "regress/debug_clamp_i32": i32,
        "regress/debug_clamp_i64": i64, "regress/debug_clamp_i128": i128, "regress/debug_clamp_isize": isize
    );
    s.case("regress/debug_clamp_f32", Exact, |a, _| (f32::from_bits(a as u32)).clamp(-3.5, 7.25).to_bits() as u128);
    // Issue 16: a debug build shares generic instances between crates; a zip
    // of `slice::Iter<u16>`s linked to the instance of
    // `TrustedRandomAccessNoCoerce::size` an rlib of the standard library
    // made, whose body the device link did not have.
    s.case("regress/debug_zip_filter_count_u16", Exact, |a, b| {
        let x = [a as u16, b as u16, (a >> 16) as u16, (b >> 16) as u16];
        x.iter().zip(x.iter()).filter(|(p, q)| p == q).count() as u128
    });
    s.case("regress/debug_zip_filter_count_u16_pairs", Exact, |a, b| {
        let x = [a as u16, b as u16, (a >> 16) as u16, (b >> 16) as u16];
        let y = [b as u16, a as u16, (a >> 16) as u16, 7];
        x.iter().zip(y.iter()).filter(|(p, q)| p == q).count() as u128
    });
}
