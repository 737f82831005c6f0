//! `Edge`: the integer operations the sweep applies, for every integer type,
//! through one trait so that a single generic kernel covers them all.
//!
//! Signed-only operations get the unsigned type's nearest meaning
//! (`wrapping_abs` is the value itself), so every operation is defined for
//! every type and the table in `ops.rs` stays one list.

/// An integer type under test.
pub trait Edge: Copy + PartialEq + PartialOrd + core::fmt::Debug {
    const BITS: u32;
    /// The values the sweep pairs with each other.
    fn boundary_values() -> Vec<Self>;
    /// The bits, zero-extended to 128.
    fn bits(self) -> u128;
    /// `self as i128` (sign- or zero-extended, wrapped for u128).
    fn wide(self) -> i128;
    fn from_wide(v: i128) -> Self;
    fn is_negative_(self) -> bool;
    fn wrapping_add_(self, b: Self) -> Self;
    fn wrapping_sub_(self, b: Self) -> Self;
    fn wrapping_mul_(self, b: Self) -> Self;
    fn wrapping_div_(self, b: Self) -> Self;
    fn wrapping_neg_(self) -> Self;
    fn wrapping_abs_(self) -> Self;
    fn wrapping_shl_(self, b: u32) -> Self;
    fn wrapping_shr_(self, b: u32) -> Self;
    fn wrapping_pow_(self, e: u32) -> Self;
    fn unsigned_abs_(self) -> u128;
    fn checked_add_(self, b: Self) -> Option<Self>;
    fn checked_sub_(self, b: Self) -> Option<Self>;
    fn checked_mul_(self, b: Self) -> Option<Self>;
    fn checked_div_(self, b: Self) -> Option<Self>;
    fn checked_rem_(self, b: Self) -> Option<Self>;
    fn checked_div_euclid_(self, b: Self) -> Option<Self>;
    fn checked_rem_euclid_(self, b: Self) -> Option<Self>;
    fn checked_neg_(self) -> Option<Self>;
    fn checked_abs_(self) -> Option<Self>;
    fn checked_shl_(self, b: u32) -> Option<Self>;
    fn checked_shr_(self, b: u32) -> Option<Self>;
    fn checked_pow_(self, e: u32) -> Option<Self>;
    fn checked_ilog2_(self) -> Option<u32>;
    fn checked_isqrt_(self) -> Option<Self>;
    fn saturating_add_(self, b: Self) -> Self;
    fn saturating_sub_(self, b: Self) -> Self;
    fn saturating_mul_(self, b: Self) -> Self;
    fn saturating_pow_(self, e: u32) -> Self;
    fn saturating_neg_(self) -> Self;
    fn saturating_abs_(self) -> Self;
    fn overflowing_add_(self, b: Self) -> (Self, bool);
    fn overflowing_sub_(self, b: Self) -> (Self, bool);
    fn overflowing_mul_(self, b: Self) -> (Self, bool);
    fn overflowing_neg_(self) -> (Self, bool);
    fn overflowing_shl_(self, b: u32) -> (Self, bool);
    fn overflowing_pow_(self, e: u32) -> (Self, bool);
    fn rotate_left_(self, b: u32) -> Self;
    fn rotate_right_(self, b: u32) -> Self;
    fn abs_diff_(self, b: Self) -> u128;
    fn signum_(self) -> Self;
    fn leading_zeros_(self) -> u32;
    fn trailing_zeros_(self) -> u32;
    fn count_ones_(self) -> u32;
    fn swap_bytes_(self) -> Self;
    fn reverse_bits_(self) -> Self;
    /// The high half of the full product `self * b`.
    fn mul_hi(self, b: Self) -> Self;
    /// `self as <type number t>` (0..12, the order of `CAST_TARGETS`), checked
    /// through the target's own consumers.
    fn cast_to(self, target: u32) -> [u128; 2];
    fn to_f32_bits(self) -> u32;
    fn to_f64_bits(self) -> u64;
    fn from_f32_bits(bits: u32) -> Self;
    fn from_f64_bits(bits: u64) -> Self;
    /// The result as bits and as seen by signed consumers in the same
    /// function: compare with zero, arithmetic shift, widening, division,
    /// float conversion.
    #[inline(always)]
    fn lanes(self) -> [u128; 2] {
        let sign_fill = self.wrapping_shr_(Self::BITS - 1);
        let third = self.wrapping_div_(Self::from_wide(3));
        let consumers = (self.wide() as u128).rotate_left(17)
            ^ ((sign_fill.wide() as u128) << 3)
            ^ (third.wide() as u128).rotate_left(41)
            ^ (self.is_negative_() as u128)
            ^ ((self > Self::from_wide(0)) as u128) << 1
            ^ (self.to_f64_bits() as u128).rotate_left(90);
        [self.bits(), consumers]
    }
}



macro_rules! common {
    ($t:ty) => {
        const BITS: u32 = <$t>::BITS;
        #[inline(always)] fn bits(self) -> u128 { self as u128 & (u128::MAX >> (128 - <$t>::BITS)) }
        #[inline(always)] fn wide(self) -> i128 { self as i128 }
        #[inline(always)] fn from_wide(v: i128) -> Self { v as $t }
        #[inline(always)] fn wrapping_add_(self, b: Self) -> Self { self.wrapping_add(b) }
        #[inline(always)] fn wrapping_sub_(self, b: Self) -> Self { self.wrapping_sub(b) }
        #[inline(always)] fn wrapping_mul_(self, b: Self) -> Self { self.wrapping_mul(b) }
        #[inline(always)] fn wrapping_div_(self, b: Self) -> Self { self.wrapping_div(b) }
        #[inline(always)] fn wrapping_neg_(self) -> Self { self.wrapping_neg() }
        #[inline(always)] fn wrapping_shl_(self, b: u32) -> Self { self.wrapping_shl(b) }
        #[inline(always)] fn wrapping_shr_(self, b: u32) -> Self { self.wrapping_shr(b) }
        #[inline(always)] fn wrapping_pow_(self, e: u32) -> Self { self.wrapping_pow(e) }
        #[inline(always)] fn checked_add_(self, b: Self) -> Option<Self> { self.checked_add(b) }
        #[inline(always)] fn checked_sub_(self, b: Self) -> Option<Self> { self.checked_sub(b) }
        #[inline(always)] fn checked_mul_(self, b: Self) -> Option<Self> { self.checked_mul(b) }
        #[inline(always)] fn checked_div_(self, b: Self) -> Option<Self> { self.checked_div(b) }
        #[inline(always)] fn checked_rem_(self, b: Self) -> Option<Self> { self.checked_rem(b) }
        #[inline(always)] fn checked_div_euclid_(self, b: Self) -> Option<Self> { self.checked_div_euclid(b) }
        #[inline(always)] fn checked_rem_euclid_(self, b: Self) -> Option<Self> { self.checked_rem_euclid(b) }
        #[inline(always)] fn checked_neg_(self) -> Option<Self> { self.checked_neg() }
        #[inline(always)] fn checked_shl_(self, b: u32) -> Option<Self> { self.checked_shl(b) }
        #[inline(always)] fn checked_shr_(self, b: u32) -> Option<Self> { self.checked_shr(b) }
        #[inline(always)] fn checked_pow_(self, e: u32) -> Option<Self> { self.checked_pow(e) }
        #[inline(always)] fn checked_ilog2_(self) -> Option<u32> { self.checked_ilog2() }
        #[inline(always)] fn saturating_add_(self, b: Self) -> Self { self.saturating_add(b) }
        #[inline(always)] fn saturating_sub_(self, b: Self) -> Self { self.saturating_sub(b) }
        #[inline(always)] fn saturating_mul_(self, b: Self) -> Self { self.saturating_mul(b) }
        #[inline(always)] fn saturating_pow_(self, e: u32) -> Self { self.saturating_pow(e) }
        #[inline(always)] fn overflowing_add_(self, b: Self) -> (Self, bool) { self.overflowing_add(b) }
        #[inline(always)] fn overflowing_sub_(self, b: Self) -> (Self, bool) { self.overflowing_sub(b) }
        #[inline(always)] fn overflowing_mul_(self, b: Self) -> (Self, bool) { self.overflowing_mul(b) }
        #[inline(always)] fn overflowing_neg_(self) -> (Self, bool) { self.overflowing_neg() }
        #[inline(always)] fn overflowing_shl_(self, b: u32) -> (Self, bool) { self.overflowing_shl(b) }
        #[inline(always)] fn overflowing_pow_(self, e: u32) -> (Self, bool) { self.overflowing_pow(e) }
        #[inline(always)] fn rotate_left_(self, b: u32) -> Self { self.rotate_left(b) }
        #[inline(always)] fn rotate_right_(self, b: u32) -> Self { self.rotate_right(b) }
        #[inline(always)] fn abs_diff_(self, b: Self) -> u128 { self.abs_diff(b) as u128 }
        #[inline(always)] fn leading_zeros_(self) -> u32 { self.leading_zeros() }
        #[inline(always)] fn trailing_zeros_(self) -> u32 { self.trailing_zeros() }
        #[inline(always)] fn count_ones_(self) -> u32 { self.count_ones() }
        #[inline(always)] fn swap_bytes_(self) -> Self { self.swap_bytes() }
        #[inline(always)] fn reverse_bits_(self) -> Self { self.reverse_bits() }
        #[inline(always)] fn to_f32_bits(self) -> u32 { (self as f32).to_bits() }
        #[inline(always)] fn to_f64_bits(self) -> u64 { (self as f64).to_bits() }
        #[inline(always)] fn from_f32_bits(bits: u32) -> Self { f32::from_bits(bits) as $t }
        #[inline(always)] fn from_f64_bits(bits: u64) -> Self { f64::from_bits(bits) as $t }
        #[inline(always)]
        fn cast_to(self, target: u32) -> [u128; 2] {
            match target {
                0 => (self as u8).lanes(),
                1 => (self as u16).lanes(),
                2 => (self as u32).lanes(),
                3 => (self as u64).lanes(),
                4 => (self as u128).lanes(),
                5 => (self as usize).lanes(),
                6 => (self as i8).lanes(),
                7 => (self as i16).lanes(),
                8 => (self as i32).lanes(),
                9 => (self as i64).lanes(),
                10 => (self as i128).lanes(),
                _ => (self as isize).lanes(),
            }
        }
    };
}

macro_rules! signed {
    ($($t:ident => $wide:ident),*) => {$(
        impl Edge for $t {
            common!($t);
            fn boundary_values() -> Vec<Self> {
                let b = <$t>::BITS as $t;
                vec![<$t>::MIN, <$t>::MIN + 1, <$t>::MIN / 2, -3, -2, -1, 0, 1, 2, 3, b - 1, b, b + 1,
                     <$t>::MAX / 2, <$t>::MAX - 1, <$t>::MAX, 0x5555_5555_5555_5555_5555_5555_5555_5555u128 as $t,
                     0xAAAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAAu128 as $t]
            }
            #[inline(always)] fn is_negative_(self) -> bool { self < 0 }
            #[inline(always)] fn wrapping_abs_(self) -> Self { self.wrapping_abs() }
            #[inline(always)] fn unsigned_abs_(self) -> u128 { self.unsigned_abs() as u128 }
            #[inline(always)] fn checked_abs_(self) -> Option<Self> { self.checked_abs() }
            #[inline(always)] fn checked_isqrt_(self) -> Option<Self> { self.checked_isqrt() }
            #[inline(always)] fn saturating_neg_(self) -> Self { self.saturating_neg() }
            #[inline(always)] fn saturating_abs_(self) -> Self { self.saturating_abs() }
            #[inline(always)] fn signum_(self) -> Self { self.signum() }
            #[inline(always)]
            fn mul_hi(self, b: Self) -> Self {
                mul_hi_signed!(self, b, $t, $wide)
            }
        }
    )*};
}

macro_rules! unsigned {
    ($($t:ident => $wide:ident),*) => {$(
        impl Edge for $t {
            common!($t);
            fn boundary_values() -> Vec<Self> {
                let b = <$t>::BITS as $t;
                vec![0, 1, 2, 3, b - 1, b, b + 1, <$t>::MAX / 2, <$t>::MAX / 2 + 1, <$t>::MAX - 1, <$t>::MAX,
                     0x5555_5555_5555_5555_5555_5555_5555_5555u128 as $t,
                     0xAAAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAAu128 as $t]
            }
            #[inline(always)] fn is_negative_(self) -> bool { false }
            #[inline(always)] fn wrapping_abs_(self) -> Self { self }
            #[inline(always)] fn unsigned_abs_(self) -> u128 { self as u128 }
            #[inline(always)] fn checked_abs_(self) -> Option<Self> { Some(self) }
            #[inline(always)] fn checked_isqrt_(self) -> Option<Self> { Some(self.isqrt()) }
            #[inline(always)] fn saturating_neg_(self) -> Self { 0 }
            #[inline(always)] fn saturating_abs_(self) -> Self { self }
            #[inline(always)] fn signum_(self) -> Self { self.min(1) }
            #[inline(always)]
            fn mul_hi(self, b: Self) -> Self {
                mul_hi_unsigned!(self, b, $t, $wide)
            }
        }
    )*};
}

/// The high half through the next wider type, or by 64-bit limbs for 128.
macro_rules! mul_hi_unsigned {
    ($a:expr, $b:expr, u128, $wide:ident) => { mul_hi_u128($a, $b) };
    ($a:expr, $b:expr, $t:ident, $wide:ident) => { (($a as $wide * $b as $wide) >> <$t>::BITS) as $t };
}
macro_rules! mul_hi_signed {
    ($a:expr, $b:expr, i128, $wide:ident) => {{
        // The unsigned high half, corrected for each negative operand.
        let (a, b) = ($a, $b);
        let mut hi = mul_hi_u128(a as u128, b as u128) as i128;
        if a < 0 { hi = hi.wrapping_sub(b); }
        if b < 0 { hi = hi.wrapping_sub(a); }
        hi
    }};
    ($a:expr, $b:expr, $t:ident, $wide:ident) => { (($a as $wide).wrapping_mul($b as $wide) >> <$t>::BITS) as $t };
}

#[inline(always)]
fn mul_hi_u128(a: u128, b: u128) -> u128 {
    let (a_lo, a_hi) = (a as u64 as u128, a >> 64);
    let (b_lo, b_hi) = (b as u64 as u128, b >> 64);
    let lo_lo = a_lo * b_lo;
    let hi_lo = a_hi * b_lo;
    let lo_hi = a_lo * b_hi;
    let hi_hi = a_hi * b_hi;
    let middle = (lo_lo >> 64) + (hi_lo as u64 as u128) + (lo_hi as u64 as u128);
    hi_hi + (hi_lo >> 64) + (lo_hi >> 64) + (middle >> 64)
}

signed!(i8 => i16, i16 => i32, i32 => i64, i64 => i128, i128 => i128, isize => i128);
unsigned!(u8 => u16, u16 => u32, u32 => u64, u64 => u128, u128 => u128, usize => u128);
