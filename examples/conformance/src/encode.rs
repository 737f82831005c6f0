//! Reading a case's inputs and packing its results into one `u128`.
//!
//! These are ordinary functions of the binary crate that the cases call, so
//! the device linker compiles them for the GPU as well; they are generic and
//! inlined, and must stay total (no panics, no overflow) like the cases.

/// The low 32 bits of an input, as an `f32`.
pub fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

/// An input as an `f64`.
pub fn f64_of(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// Two inputs joined into one 128-bit value, `hi` in the upper half.
pub fn wide(hi: u64, lo: u64) -> u128 {
    (hi as u128) << 64 | lo as u128
}

/// A `f32` result, for the `F32Ulp` comparison.
pub fn f32_result(x: f32) -> u128 {
    x.to_bits() as u128
}

/// A `f64` result, for the `F64Ulp` comparison.
pub fn f64_result(x: f64) -> u128 {
    x.to_bits() as u128
}

/// A value as the zero-extended bit pattern of its own width.
pub trait Bits: Copy {
    /// The width in bits.
    const WIDTH: u32;
    /// The bit pattern, zero-extended to 128 bits.
    fn bits(self) -> u128;
}

macro_rules! impl_bits {
    ($($int:ty => $unsigned:ty),* $(,)?) => {$(
        impl Bits for $int {
            const WIDTH: u32 = <$int>::BITS;
            fn bits(self) -> u128 {
                self as $unsigned as u128
            }
        }
    )*};
}
impl_bits!(
    u8 => u8, u16 => u16, u32 => u32, u64 => u64, u128 => u128, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128, isize => usize,
);

impl Bits for bool {
    const WIDTH: u32 = 1;
    fn bits(self) -> u128 {
        self as u128
    }
}

/// Floats enter packed results in a canonical form: every NaN becomes the
/// same NaN, because Rust leaves the payload of computed NaNs unspecified and
/// the GPU's differ from the CPU's. Everything else (the sign of zero
/// included) is kept bit for bit.
impl Bits for f32 {
    const WIDTH: u32 = 32;
    fn bits(self) -> u128 {
        if self.is_nan() { f32::NAN } else { self }.to_bits() as u128
    }
}

/// See the `f32` implementation.
impl Bits for f64 {
    const WIDTH: u32 = 64;
    fn bits(self) -> u128 {
        if self.is_nan() { f64::NAN } else { self }.to_bits() as u128
    }
}

/// An `Option` of a type of at most 64 bits: the value's bits, and bit 64 set
/// when it is `Some`.
pub fn opt<T: Bits>(value: Option<T>) -> u128 {
    value.map_or(0, |v| v.bits() | 1 << 64)
}

/// A 128-bit `Option` has no spare bit; `None` becomes this value, which none
/// of the 128-bit cases computes for the suite's inputs.
pub const NONE_128: u128 = 0x4E4F_4E45_4E4F_4E45_4E4F_4E45_4E4F_4E45;

/// An `Option` of a 128-bit value (see [`NONE_128`]).
pub fn opt128<T: Bits>(value: Option<T>) -> u128 {
    value.map_or(NONE_128, Bits::bits)
}

/// A value with a flag above it (overflowing operations: the wrapped value and
/// whether it overflowed). A 128-bit value has no bit to spare, so there the
/// flag flips the top bit: not one-to-one, but a difference in either part
/// alone still shows.
pub fn with_flag<T: Bits>(value: T, flag: bool) -> u128 {
    if T::WIDTH < 128 {
        value.bits() | (flag as u128) << T::WIDTH
    } else {
        value.bits() ^ (flag as u128) << 127
    }
}

/// Values of one type side by side, the first in the lowest bits. Lanes past
/// 128 bits are lost, so callers keep `N * T::WIDTH <= 128`.
pub fn lanes<T: Bits, const N: usize>(values: [T; N]) -> u128 {
    let mut packed = 0;
    for (i, value) in values.into_iter().enumerate() {
        packed |= value.bits().checked_shl(i as u32 * T::WIDTH).unwrap_or(0);
    }
    packed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing() {
        assert_eq!(lanes([0x12u8, 0x34, 0xFF]), 0xFF3412);
        assert_eq!(lanes([-1i16, 2]), 0x0002_FFFF);
        assert_eq!(lanes([true, false, true]), 0b101);
        assert_eq!(opt(Some(-1i8)), 1 << 64 | 0xFF);
        assert_eq!(opt::<u32>(None), 0);
        assert_eq!(with_flag(200u8, true), 0x1C8);
        assert_eq!(lanes([f32::NAN, -f32::NAN]), lanes([f32::NAN, f32::NAN]));
        assert_ne!(lanes([0.0f32]), lanes([-0.0f32]));
        assert_eq!(wide(1, 2), 1 << 64 | 2);
    }
}
