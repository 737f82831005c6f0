//! FP8: [`f8e4m3`] and [`f8e5m2`] (the OCP 8-bit formats, bit-compatible
//! with CUDA's `__nv_fp8_e4m3` and `__nv_fp8_e5m2`) and their pairs
//! [`f8e4m3x2`] and [`f8e5m2x2`], for storage and conversion.
//!
//! FP8 is a storage format: PTX converts it to and from f32 and f16 and
//! feeds it to tensor cores, but has no FP8 arithmetic. Compute in f16 or
//! f32 and narrow the result.
//!
//! ```
//! use cuda_device::half::{f16, f8e4m3, f8e5m2, f8e4m3x2};
//!
//! assert_eq!(f8e4m3::from_f32(0.3).to_f32(), 0.3125); // the nearest of 0.28125, 0.3125
//! assert_eq!(f8e4m3::from_f32(1.0e6), f8e4m3::MAX); // saturates: 448
//! assert_eq!(f8e4m3::from_f32(f32::NEG_INFINITY), f8e4m3::MIN); // -448, never infinity
//! assert!(f8e4m3::from_f32(f32::NAN).is_nan());
//! assert_eq!(f8e5m2::from_f32(f32::INFINITY).to_f32(), 57344.0); // satfinite, too
//! assert_eq!(f8e5m2::from_f16(f16::from_f32(-3.0)).to_bits(), 0xc2);
//! let pair = f8e4m3x2::from_f32s(1.5, -2.25);
//! assert_eq!(pair.to_f32s(), (1.5, -2.25));
//! ```
//!
//! # Rounding, saturation and NaN
//!
//! Narrowing rounds once to nearest even and saturates (`cvt.rn.satfinite`,
//! the only narrowing PTX has): a magnitude past the largest finite value
//! — infinity included — becomes that value with its sign, so E5M2's
//! infinities are never produced by a conversion, only read. Any NaN
//! becomes `0x7f` (the sign is dropped). Widening is exact; a NaN widens to
//! the canonical f16 NaN `0x7fff` (f32 NaN `0x7fffffff`).
//!
//! E4M3 has no infinity: its largest exponent holds normal values up to
//! 448, and only `0x7f`/`0xff` are NaN. E5M2 is binary16's top byte: it has
//! ±∞ (`0x7c`/`0xfc`) and NaNs, largest finite value 57344.
//!
//! # On the GPU
//!
//! The conversions are `cvt.rn.satfinite.e4m3x2.f32` (and `.e5m2x2`,
//! `.f16x2` sources) and `cvt.rn.f16x2.e4m3x2` (`.e5m2x2`), which need sm_89;
//! a kernel that converts FP8 for an older target is a compile error. A
//! single value goes through the pair instruction (the other lane is
//! zero). Widening to f32 is `cvt.rn.f16x2` then `cvt.f32.f16`, both exact.
//! On the host, each instruction is its CPU model ([`super::model`]), bit for
//! bit.

use super::{f16, f16x2};
use crate::stubs;
use core::cmp::Ordering;
use core::fmt;
use core::ops::Neg;

/// OCP FP8 E4M3: 1 sign bit, 4 exponent bits (bias 7), 3 fraction bits; no
/// infinity, NaN only at `0x7f`/`0xff`, largest finite 448 (CUDA's
/// `__nv_fp8_e4m3`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f8e4m3(u8);

/// OCP FP8 E5M2: 1 sign bit, 5 exponent bits (bias 15), 2 fraction bits —
/// binary16's top byte, with its infinities and NaNs; largest finite 57344
/// (CUDA's `__nv_fp8_e5m2`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f8e5m2(u8);

/// Two [`f8e4m3`] in 16 bits, lane 0 in bits 0–7 (CUDA's `__nv_fp8x2_e4m3`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f8e4m3x2(u16);

/// Two [`f8e5m2`] in 16 bits, lane 0 in bits 0–7 (CUDA's `__nv_fp8x2_e5m2`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f8e5m2x2(u16);

macro_rules! fp8 {
    ($t:ident, $pair:ident, $fmt:ident, $from_f32:ident, $from_f16x2:ident, $to_f16x2:ident) => {
        impl $t {
            /// The value with these bits.
            #[inline(always)]
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
            /// The bits of the value.
            #[inline(always)]
            pub const fn to_bits(self) -> u8 {
                self.0
            }
            /// +0.0.
            pub const ZERO: Self = Self(0);
            /// -0.0.
            pub const NEG_ZERO: Self = Self(0x80);
            /// The largest finite value's negation.
            pub const MIN: Self = Self(Self::MAX.0 | 0x80);
            /// The smallest positive subnormal value.
            pub const MIN_POSITIVE_SUBNORMAL: Self = Self(1);
            /// The NaN every narrowing of a NaN gives (`0x7f`).
            pub const NAN: Self = Self(0x7f);

            /// `x` rounded to the nearest value, ties to even, saturated to
            /// ±[`MAX`](Self::MAX) (infinities included); a NaN gives
            /// [`NAN`](Self::NAN). `cvt.rn.satfinite` (sm_89).
            #[inline(always)]
            pub fn from_f32(x: f32) -> Self {
                Self(stubs::$from_f32(0.0, x) as u8)
            }

            /// `x` rounded and saturated as [`from_f32`](Self::from_f32)
            /// does (one rounding: every f16 is an f32).
            #[inline(always)]
            pub fn from_f16(x: f16) -> Self {
                Self(stubs::$from_f16x2(x.to_bits() as u32) as u8)
            }

            /// The value as an f16 (exact; a NaN gives f16's canonical NaN).
            #[inline(always)]
            pub fn to_f16(self) -> f16 {
                f16::from_bits(stubs::$to_f16x2(self.0 as u16) as u16)
            }

            /// The value as an f32 (exact; a NaN gives f32's canonical NaN).
            #[inline(always)]
            pub fn to_f32(self) -> f32 {
                self.to_f16().to_f32()
            }

            /// Whether the value is a NaN.
            #[inline(always)]
            pub fn is_nan(self) -> bool {
                super::model::$fmt.is_nan(self.0)
            }

            /// Whether the sign bit is set (−0.0 included).
            #[inline(always)]
            pub const fn is_sign_negative(self) -> bool {
                self.0 & 0x80 != 0
            }

            /// The magnitude: the sign bit cleared.
            #[inline(always)]
            pub const fn abs(self) -> Self {
                Self(self.0 & 0x7f)
            }
        }

        impl Neg for $t {
            type Output = Self;
            /// Flips the sign bit.
            #[inline(always)]
            fn neg(self) -> Self {
                Self(self.0 ^ 0x80)
            }
        }

        impl PartialEq for $t {
            /// IEEE equality: NaN equals nothing, −0.0 equals +0.0.
            #[inline(always)]
            fn eq(&self, other: &Self) -> bool {
                !self.is_nan() && !other.is_nan() && (self.0 == other.0 || (self.0 | other.0) & 0x7f == 0)
            }
        }

        impl PartialOrd for $t {
            /// IEEE order: `None` when either side is NaN.
            #[inline(always)]
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        // Formatting widens with the CPU model, not the sm_89 instruction:
        // core::fmt calls these through `dyn`, so the device linker keeps
        // them for every kernel that formats anything (a bounds-check
        // panic), and an sm_89 instruction here would stop every build for
        // an older GPU. The model is exact, so the text is the same.
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&(super::model::widen_fp8(super::model::$fmt, self.0) as f32), f)
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&(super::model::widen_fp8(super::model::$fmt, self.0) as f32), f)
            }
        }

        impl From<$t> for f32 {
            #[inline(always)]
            fn from(x: $t) -> f32 {
                x.to_f32()
            }
        }

        impl From<$t> for f16 {
            #[inline(always)]
            fn from(x: $t) -> f16 {
                x.to_f16()
            }
        }

        impl $pair {
            /// The pair `(lo, hi)`: `lo` in bits 0–7.
            #[inline(always)]
            pub const fn new(lo: $t, hi: $t) -> Self {
                Self(lo.0 as u16 | (hi.0 as u16) << 8)
            }
            /// The pair with these bits.
            #[inline(always)]
            pub const fn from_bits(bits: u16) -> Self {
                Self(bits)
            }
            /// The bits of the pair.
            #[inline(always)]
            pub const fn to_bits(self) -> u16 {
                self.0
            }
            /// Lane 0 (bits 0–7).
            #[inline(always)]
            pub const fn lo(self) -> $t {
                $t(self.0 as u8)
            }
            /// Lane 1 (bits 8–15).
            #[inline(always)]
            pub const fn hi(self) -> $t {
                $t((self.0 >> 8) as u8)
            }
            /// Both lanes narrowed as [`from_f32`]($t::from_f32) does, in
            /// one instruction.
            #[inline(always)]
            pub fn from_f32s(lo: f32, hi: f32) -> Self {
                Self(stubs::$from_f32(hi, lo))
            }
            /// Both lanes of an f16 pair narrowed, in one instruction.
            #[inline(always)]
            pub fn from_f16x2(x: f16x2) -> Self {
                Self(stubs::$from_f16x2(x.to_bits()))
            }
            /// Both lanes widened to f16 (exact), in one instruction.
            #[inline(always)]
            pub fn to_f16x2(self) -> f16x2 {
                f16x2::from_bits(stubs::$to_f16x2(self.0))
            }
            /// Both lanes as f32 (exact): `(lo, hi)`.
            #[inline(always)]
            pub fn to_f32s(self) -> (f32, f32) {
                self.to_f16x2().to_f32s()
            }
        }

        impl PartialEq for $pair {
            /// Both lanes equal as IEEE values.
            #[inline(always)]
            fn eq(&self, other: &Self) -> bool {
                self.lo() == other.lo() && self.hi() == other.hi()
            }
        }

        impl fmt::Debug for $pair {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($pair)).field(&self.lo()).field(&self.hi()).finish()
            }
        }
    };
}

fp8!(f8e4m3, f8e4m3x2, E4M3, __oxide_stub_f8e4m3x2_from_f32, __oxide_stub_f8e4m3x2_from_f16x2,
    __oxide_stub_f8e4m3x2_to_f16x2);
fp8!(f8e5m2, f8e5m2x2, E5M2, __oxide_stub_f8e5m2x2_from_f32, __oxide_stub_f8e5m2x2_from_f16x2,
    __oxide_stub_f8e5m2x2_to_f16x2);

impl f8e4m3 {
    /// 1.0.
    pub const ONE: Self = Self(0x38);
    /// The largest finite value, 448.
    pub const MAX: Self = Self(0x7e);
    /// The smallest positive normal value, 2⁻⁶.
    pub const MIN_POSITIVE: Self = Self(0x08);
    /// The gap between 1.0 and the next value, 2⁻³.
    pub const EPSILON: Self = Self(0x20);
}

impl f8e5m2 {
    /// 1.0.
    pub const ONE: Self = Self(0x3c);
    /// The largest finite value, 57344.
    pub const MAX: Self = Self(0x7b);
    /// The smallest positive normal value, 2⁻¹⁴.
    pub const MIN_POSITIVE: Self = Self(0x04);
    /// The gap between 1.0 and the next value, 2⁻².
    pub const EPSILON: Self = Self(0x34);
    /// +∞ (read from memory only: conversions saturate instead).
    pub const INFINITY: Self = Self(0x7c);
    /// −∞.
    pub const NEG_INFINITY: Self = Self(0xfc);

    /// Whether the value is +∞ or −∞.
    #[inline(always)]
    pub const fn is_infinite(self) -> bool {
        self.0 & 0x7f == 0x7c
    }
}
