//! Integers of every width: wrapping, checked, saturating and overflowing
//! arithmetic, shifts, rotates, bit counts, powers, division and remainder.
//!
//! The suite is built in the dev profile, where a plain `+` that overflows
//! panics, so every operation here names its overflow behaviour. Division is
//! by values that may be zero (or -1 with MIN), always through an operation
//! that defines the result; a constant divisor would let the compiler replace
//! the division by a multiplication and test nothing.
//!
//! Several results that do not fit side by side in 128 bits are folded with
//! XOR after rotating them apart: not one-to-one, but a wrong value in any one
//! of them still changes the result.

use crate::compare::Compare::Exact;
use crate::encode::{lanes, opt, opt128, wide, with_flag, NONE_128};
use crate::harness::Suite;

pub fn run(s: &mut Suite) {
    eight_bit(s);
    sixteen_bit(s);
    thirty_two_bit(s);
    sixty_four_bit(s);
    one_twenty_eight_bit(s);
    pointer_sized(s);
}

fn eight_bit(s: &mut Suite) {
    s.case("int/u8_wrapping_add", Exact, |a, b| {
        (a as u8).wrapping_add(b as u8) as u128
    });
    s.case("int/u8_checked_mul", Exact, |a, b| {
        opt((a as u8).checked_mul(b as u8))
    });
    s.case("int/u8_saturating", Exact, |a, b| {
        let (x, y) = (a as u8, b as u8);
        lanes([
            x.saturating_add(y),
            x.saturating_sub(y),
            x.saturating_mul(y),
            x.saturating_pow(y as u32),
        ])
    });
    s.case("int/u8_overflowing_add_sub", Exact, |a, b| {
        let (x, y) = (a as u8, b as u8);
        let (sum, sum_overflowed) = x.overflowing_add(y);
        let (difference, difference_overflowed) = x.overflowing_sub(y);
        with_flag(sum, sum_overflowed) | with_flag(difference, difference_overflowed) << 16
    });
    // i8::MIN / -1 overflows: checked_div must say None, not trap.
    s.case("int/i8_checked_div", Exact, |a, b| {
        opt((a as i8).checked_div(b as i8))
    });
    s.case("int/i8_sign_ops", Exact, |a, _| {
        let x = a as i8;
        lanes([
            x.wrapping_neg(),
            x.wrapping_abs(),
            x.unsigned_abs() as i8,
            x.signum(),
            x.saturating_neg(),
        ])
    });
    s.case("int/i8_shifts", Exact, |a, b| {
        let (x, n) = (a as i8, b as u32);
        lanes([
            x.wrapping_shl(n),
            x.wrapping_shr(n),
            x >> (n % 8),
            x.rotate_left(n),
        ])
    });
}

fn sixteen_bit(s: &mut Suite) {
    s.case("int/u16_rotates", Exact, |a, b| {
        let (x, n) = (a as u16, b as u32);
        lanes([
            x.rotate_left(n),
            x.rotate_right(n),
            x.swap_bytes(),
            x.reverse_bits(),
        ])
    });
    s.case("int/u16_bit_counts", Exact, |a, _| {
        let x = a as u16;
        lanes([
            x.leading_zeros(),
            x.trailing_zeros(),
            x.count_ones(),
            x.leading_ones(),
        ])
    });
    s.case("int/i16_overflowing_mul", Exact, |a, b| {
        let (product, overflowed) = (a as i16).overflowing_mul(b as i16);
        with_flag(product, overflowed)
    });
    s.case("int/i16_checked_pow", Exact, |a, b| {
        opt((a as i16).checked_pow(b as u32))
    });
    s.case("int/i16_saturating_mul_sub", Exact, |a, b| {
        let (x, y) = (a as i16, b as i16);
        lanes([
            x.saturating_mul(y),
            x.saturating_sub(y),
            x.saturating_add(y),
            x.saturating_div(y | 1),
        ])
    });
}

fn thirty_two_bit(s: &mut Suite) {
    s.case("int/u32_wrapping_pow", Exact, |a, b| {
        (a as u32).wrapping_pow(b as u32) as u128
    });
    s.case("int/u32_checked_div_rem", Exact, |a, b| {
        let (x, y) = (a as u32, b as u32);
        match (x.checked_div(y), x.checked_rem(y)) {
            (Some(q), Some(r)) => lanes([q, r]) | 1 << 64,
            _ => 0,
        }
    });
    s.case("int/u32_bit_ops", Exact, |a, b| {
        let (x, y) = (a as u32, b as u32);
        lanes([
            x.count_ones() ^ y.leading_zeros() << 8 ^ x.trailing_zeros() << 16,
            x.reverse_bits(),
            x.swap_bytes(),
            x & !y,
        ])
    });
    s.case("int/u32_div_ceil_multiple", Exact, |a, b| {
        let (x, y) = (a as u32, b as u32);
        match y {
            0 => 0,
            _ => lanes([
                x.div_ceil(y),
                x.checked_next_multiple_of(y).unwrap_or(0),
                x.abs_diff(y),
                x.midpoint(y),
            ]),
        }
    });
    // i32::MIN / -1 wraps to i32::MIN with wrapping_div; zero is excluded.
    s.case("int/i32_wrapping_div_rem", Exact, |a, b| {
        let (x, y) = (a as i32, b as i32);
        if y == 0 {
            0
        } else {
            lanes([x.wrapping_div(y), x.wrapping_rem(y)])
        }
    });
    s.case("int/i32_euclid", Exact, |a, b| {
        let (x, y) = (a as i32, b as i32);
        opt(x.checked_div_euclid(y)) | opt(x.checked_rem_euclid(y)).rotate_left(32)
    });
    s.case("int/i32_shifts", Exact, |a, b| {
        let (x, n) = (a as i32, b as u32);
        lanes([
            x.wrapping_shl(n),
            x.wrapping_shr(n),
            x >> (n & 31),
            x.checked_shl(n).unwrap_or(0x5A5A),
        ])
    });
    s.case("int/i32_abs_diff_signum", Exact, |a, b| {
        let (x, y) = (a as i32, b as i32);
        lanes([
            x.abs_diff(y) as i32,
            x.signum(),
            x.wrapping_abs(),
            x.overflowing_neg().0,
        ])
    });
}

fn sixty_four_bit(s: &mut Suite) {
    s.case("int/u64_widening_mul", Exact, |a, b| a as u128 * b as u128);
    s.case("int/u64_checked_add", Exact, |a, b| opt(a.checked_add(b)));
    s.case("int/u64_checked_sub", Exact, |a, b| opt(a.checked_sub(b)));
    s.case("int/u64_div_rem", Exact, |a, b| {
        match (a.checked_div(b), a.checked_rem(b)) {
            (Some(q), Some(r)) => wide(q, r),
            _ => 0,
        }
    });
    s.case("int/u64_isqrt_ilog", Exact, |a, b| {
        let log = |l: Option<u32>| l.map_or(u8::MAX, |l| l as u8);
        lanes([
            log(a.checked_ilog2()),
            log(b.checked_ilog10()),
            log(a.checked_ilog(b)),
        ]) | (a.isqrt() as u128) << 64
    });
    s.case("int/u64_overflowing_pow", Exact, |a, b| {
        let (power, overflowed) = a.overflowing_pow(b as u32);
        with_flag(power, overflowed)
    });
    s.case("int/i64_checked_mul", Exact, |a, b| {
        opt((a as i64).checked_mul(b as i64))
    });
    s.case("int/i64_overflowing_sub", Exact, |a, b| {
        let (difference, overflowed) = (a as i64).overflowing_sub(b as i64);
        with_flag(difference, overflowed)
    });
    s.case("int/i64_saturating_pow", Exact, |a, b| {
        (a as i64).saturating_pow(b as u32) as u128
    });
    // Includes i64::MIN / -1, the one quotient that overflows; quotient and
    // remainder are None together (that, or a zero divisor).
    s.case("int/i64_checked_div_rem", Exact, |a, b| {
        let (x, y) = (a as i64, b as i64);
        match (x.checked_div(y), x.checked_rem(y)) {
            (Some(q), Some(r)) => lanes([q, r]),
            _ => NONE_128,
        }
    });
    s.case("int/i64_rotate_count", Exact, |a, b| {
        let x = a as i64;
        lanes([
            x.rotate_left(b as u32),
            x.count_ones() as i64 | (x.leading_zeros() as i64) << 8,
        ])
    });
}

fn one_twenty_eight_bit(s: &mut Suite) {
    s.case("int/u128_wrapping_mul", Exact, |a, b| {
        wide(a, b).wrapping_mul(wide(b, a))
    });
    // Divisors of every size: `b` shifted left by 0..=63 places.
    s.case("int/u128_checked_div", Exact, |a, b| {
        opt128(wide(a, b).checked_div((b as u128) << (a % 64)))
    });
    s.case("int/u128_checked_rem", Exact, |a, b| {
        opt128(wide(b, a).checked_rem((a as u128) << (b % 64)))
    });
    s.case("int/u128_shifts_rotates", Exact, |a, b| {
        let x = wide(a, b);
        let n = b as u32;
        x.wrapping_shl(n) ^ x.wrapping_shr(n).rotate_left(1) ^ x.rotate_left(n).rotate_left(2)
    });
    s.case("int/u128_bit_counts", Exact, |a, b| {
        let x = wide(a, b);
        lanes([
            x.leading_zeros(),
            x.trailing_zeros(),
            x.count_ones(),
            x.swap_bytes().leading_zeros(),
        ])
    });
    s.case("int/u128_overflowing_add", Exact, |a, b| {
        let (sum, overflowed) = wide(a, b).overflowing_add(wide(b, a));
        with_flag(sum, overflowed)
    });
    s.case("int/u128_checked_pow", Exact, |a, b| {
        opt128(wide(a, b).checked_pow(b as u32 % 70))
    });
    s.case("int/i128_wrapping_pow", Exact, |a, b| {
        (wide(b, a) as i128).wrapping_pow(a as u32) as u128
    });
    s.case("int/i128_wrapping_mul", Exact, |a, b| {
        (wide(a, b) as i128).wrapping_mul(a as i64 as i128) as u128
    });
    // The dividend reaches i128::MIN (a = i64::MIN) and the divisor -1 (b = u64::MAX).
    s.case("int/i128_checked_div", Exact, |a, b| {
        let dividend = ((a as i64 as i128) << 64) | a.wrapping_shl(1) as i128;
        opt128(dividend.checked_div(b as i64 as i128))
    });
    s.case("int/i128_checked_rem", Exact, |a, b| {
        let divisor = (wide(b, a) as i128) >> (a % 128);
        opt128((wide(a, b) as i128).checked_rem(divisor))
    });
    s.case("int/i128_saturating_add_sub", Exact, |a, b| {
        let (x, y) = (wide(a, b) as i128, wide(b, a) as i128);
        x.saturating_add(y) as u128 ^ (x.saturating_sub(y) as u128).rotate_left(64)
    });
    s.case("int/i128_shr_neg_abs", Exact, |a, b| {
        let x = wide(a, b) as i128;
        (x >> (b % 128)) as u128 ^ x.wrapping_neg() as u128 ^ x.unsigned_abs().rotate_left(17)
    });
}

fn pointer_sized(s: &mut Suite) {
    s.case("int/usize_isize", Exact, |a, b| {
        let (x, y) = (a as usize, b as isize);
        lanes([
            x.wrapping_add(y as usize) as u64,
            y.checked_rem(a as isize).unwrap_or(-3) as u64,
        ])
    });
}
