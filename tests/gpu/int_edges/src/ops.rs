//! The operations of the sweep, one table: a name and a body each, so that
//! the kernel and the CPU evaluate exactly the same expression and a
//! mismatch is reported by name.

use crate::edge::Edge;

/// `Some(v)`: v's lanes; `None`: a value no `Some` produces in lane 1's low bit.
#[inline(always)]
fn opt<T: Edge>(o: Option<T>) -> [u128; 2] {
    match o {
        Some(v) => {
            let [x, c] = v.lanes();
            [x, c << 1 | 1]
        }
        None => [0, 0],
    }
}

#[inline(always)]
fn with_flag<T: Edge>((v, overflowed): (T, bool)) -> [u128; 2] {
    let [x, c] = v.lanes();
    [x, c << 1 | overflowed as u128]
}

#[inline(always)]
fn number(n: u128) -> [u128; 2] {
    [n, 0]
}

macro_rules! table {
    ($($name:literal => |$a:ident, $b:ident| $body:expr,)*) => {
        const NAMES: &[&str] = &[$($name),*];
        /// How many operations the table has.
        pub const COUNT: u32 = NAMES.len() as u32;

        /// The operation's name, for reports.
        pub fn name(op: u32) -> &'static str {
            NAMES.get(op as usize).copied().unwrap_or("?")
        }

        /// Operation `op` on `(a, b)`: its result's two lanes (`Edge::lanes`).
        #[inline(never)]
        pub fn evaluate<T: Edge>(op: u32, a: T, b: T) -> [u128; 2] {
            let mut next = 0u32;
            $(
                if op == next {
                    let ($a, $b) = (a, b);
                    return $body;
                }
                next += 1;
            )*
            let _ = next;
            [u128::MAX, u128::MAX]
        }
    };
}

table! {
    "wrapping_add" => |a, b| a.wrapping_add_(b).lanes(),
    "wrapping_sub" => |a, b| a.wrapping_sub_(b).lanes(),
    "wrapping_mul" => |a, b| a.wrapping_mul_(b).lanes(),
    "wrapping_neg" => |a, _b| a.wrapping_neg_().lanes(),
    "wrapping_abs" => |a, _b| a.wrapping_abs_().lanes(),
    "unsigned_abs" => |a, _b| number(a.unsigned_abs_()),
    "checked_add" => |a, b| opt(a.checked_add_(b)),
    "checked_sub" => |a, b| opt(a.checked_sub_(b)),
    "checked_mul" => |a, b| opt(a.checked_mul_(b)),
    "checked_div" => |a, b| opt(a.checked_div_(b)),
    "checked_rem" => |a, b| opt(a.checked_rem_(b)),
    "checked_div_euclid" => |a, b| opt(a.checked_div_euclid_(b)),
    "checked_rem_euclid" => |a, b| opt(a.checked_rem_euclid_(b)),
    "checked_neg" => |a, _b| opt(a.checked_neg_()),
    "checked_abs" => |a, _b| opt(a.checked_abs_()),
    "checked_shl" => |a, b| opt(a.checked_shl_(b.bits() as u32)),
    "checked_shr" => |a, b| opt(a.checked_shr_(b.bits() as u32)),
    "checked_pow" => |a, b| opt(a.checked_pow_(b.bits() as u32)),
    "checked_ilog2" => |a, _b| match a.checked_ilog2_() { Some(n) => [n as u128, 1], None => [0, 0] },
    "checked_isqrt" => |a, _b| opt(a.checked_isqrt_()),
    "saturating_add" => |a, b| a.saturating_add_(b).lanes(),
    "saturating_sub" => |a, b| a.saturating_sub_(b).lanes(),
    "saturating_mul" => |a, b| a.saturating_mul_(b).lanes(),
    "saturating_pow" => |a, b| a.saturating_pow_(b.bits() as u32).lanes(),
    "saturating_neg" => |a, _b| a.saturating_neg_().lanes(),
    "saturating_abs" => |a, _b| a.saturating_abs_().lanes(),
    "overflowing_add" => |a, b| with_flag(a.overflowing_add_(b)),
    "overflowing_sub" => |a, b| with_flag(a.overflowing_sub_(b)),
    "overflowing_mul" => |a, b| with_flag(a.overflowing_mul_(b)),
    "overflowing_neg" => |a, _b| with_flag(a.overflowing_neg_()),
    "overflowing_shl" => |a, b| with_flag(a.overflowing_shl_(b.bits() as u32)),
    "overflowing_pow" => |a, b| with_flag(a.overflowing_pow_(b.bits() as u32)),
    "wrapping_shl" => |a, b| a.wrapping_shl_(b.bits() as u32).lanes(),
    "wrapping_shr" => |a, b| a.wrapping_shr_(b.bits() as u32).lanes(),
    "wrapping_pow" => |a, b| a.wrapping_pow_(b.bits() as u32).lanes(),
    "rotate_left" => |a, b| a.rotate_left_(b.bits() as u32).lanes(),
    "rotate_right" => |a, b| a.rotate_right_(b.bits() as u32).lanes(),
    "min" => |a, b| (if a < b { a } else { b }).lanes(),
    "max" => |a, b| (if a > b { a } else { b }).lanes(),
    "clamp_to_b_and_3" => |a, b| {
        let three = T::from_wide(3);
        let (lo, hi) = if b < three { (b, three) } else { (three, b) };
        (if a < lo { lo } else if a > hi { hi } else { a }).lanes()
    },
    "abs_diff" => |a, b| number(a.abs_diff_(b)),
    "signum" => |a, _b| a.signum_().lanes(),
    "leading_zeros" => |a, _b| number(a.leading_zeros_() as u128),
    "trailing_zeros" => |a, _b| number(a.trailing_zeros_() as u128),
    "count_ones" => |a, _b| number(a.count_ones_() as u128),
    "swap_bytes" => |a, _b| a.swap_bytes_().lanes(),
    "reverse_bits" => |a, _b| a.reverse_bits_().lanes(),
    "mul_hi" => |a, b| a.mul_hi(b).lanes(),
    "as_f32" => |a, _b| number(a.to_f32_bits() as u128),
    "as_f64" => |a, _b| number(a.to_f64_bits() as u128),
    "from_f32_bits" => |a, _b| T::from_f32_bits(a.bits() as u32).lanes(),
    "from_f64_bits" => |a, b| T::from_f64_bits(a.bits() as u64 ^ (b.bits() as u64).rotate_left(32)).lanes(),
    "as_u8" => |a, _b| a.cast_to(0),
    "as_u16" => |a, _b| a.cast_to(1),
    "as_u32" => |a, _b| a.cast_to(2),
    "as_u64" => |a, _b| a.cast_to(3),
    "as_u128" => |a, _b| a.cast_to(4),
    "as_usize" => |a, _b| a.cast_to(5),
    "as_i8" => |a, _b| a.cast_to(6),
    "as_i16" => |a, _b| a.cast_to(7),
    "as_i32" => |a, _b| a.cast_to(8),
    "as_i64" => |a, _b| a.cast_to(9),
    "as_i128" => |a, _b| a.cast_to(10),
    "as_isize" => |a, _b| a.cast_to(11),
    // The shapes of issue 16's wrong answers, generalised to every type.
    "neg_then_saturating_sub" => |a, b| a.wrapping_neg_().saturating_sub_(b).lanes(),
    "neg_then_checked_div" => |a, b| opt(a.wrapping_neg_().checked_div_(b)),
    "neg_then_overflowing_add" => |a, b| with_flag(a.wrapping_neg_().overflowing_add_(b)),
    "abs_then_checked_add" => |a, b| opt(b.checked_add_(a.wrapping_abs_())),
    "zero_overflowing_sub" => |a, _b| with_flag(T::from_wide(0).overflowing_sub_(a)),
    "neg_widened_high_half" => |a, _b| number((a.wrapping_neg_().wide() as u128) >> 64),
    "neg_less_than" => |a, b| number((a.wrapping_neg_() < b) as u128),
    "abs_less_than" => |a, b| number((a.wrapping_abs_() < b) as u128),
    "unsigned_abs_plus" => |a, b| number(a.unsigned_abs_().wrapping_add(b.bits())),
}
