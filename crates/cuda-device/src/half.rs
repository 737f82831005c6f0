//! Half precision: [`f16`](struct@f16) (IEEE 754 binary16), [`bf16`] (bfloat16) and their
//! packed pairs [`f16x2`] and [`bf16x2`], for kernels and host code alike,
//! atomic adds of pairs and of single values ([`AtomicF16x2`],
//! [`AtomicBF16x2`], [`AtomicF16`], [`AtomicBF16`]) in kernels, and the FP8
//! storage formats [`f8e4m3`] and [`f8e5m2`] with their pairs ([`fp8`]).
//!
//! Each type is a `u16` (`u32` for a pair) with the format's bits, so a
//! `DeviceBuffer<f16>` holds what CUDA C++'s `__half` arrays hold and what
//! the `half` crate's types hold; the names follow that crate (`from_f32`,
//! `to_f32`, `from_bits`, `INFINITY`, `EPSILON`, …).
//!
//! ```
//! use cuda_device::half::{bf16, f16, f16x2};
//! use cuda_device::{kernel, thread, DisjointSlice};
//!
//! /// `out[i] = a[i] * b[i] + c`, rounded once (`fma.rn.f16`).
//! #[kernel]
//! pub fn axpy_half(a: &[f16], b: &[f16], c: f32, mut out: DisjointSlice<f16>) {
//!     let idx = thread::index_1d();
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = a[idx.get()].mul_add(b[idx.get()], f16::from_f32(c));
//!     }
//! }
//!
//! // The same operations on the host give the GPU's bits.
//! let x = f16::from_f32(0.1);
//! assert_eq!(x.to_bits(), 0x2e66);
//! assert_eq!((x + x).to_f32(), 0.199951171875);
//! assert_eq!(f16::from_f32(65520.0), f16::INFINITY); // past MAX + ulp/2
//! assert_eq!(bf16::from_f64(1.0 + 1.0 / 256.0), bf16::ONE); // a tie, to even
//! let pair = f16x2::from_f32s(1.5, -2.0) * f16x2::from_f32s(2.0, 0.25);
//! assert_eq!(pair.to_f32s(), (3.0, -0.5));
//! ```
//!
//! # On the GPU
//!
//! Conversions and arithmetic are PTX's own instructions: `cvt.rn.f16.f32`
//! (and `.rz .rm .rp`), `cvt.rn.f16.f64`, `cvt.f32.f16`, `add/mul/fma.rn.f16`,
//! the packed `add/mul/fma.rn.f16x2` (HADD2, HMUL2, HFMA2) and
//! `cvt.rn.f16x2.f32`; for bf16 `cvt.rn.bf16.f32` and `fma.rn.bf16`/`bf16x2`
//! (a bf16 add is `fma(a, 1, b)`, a multiply `fma(a, b, -0)`: the same exact
//! value rounded once). They are `PureAsm` stubs (Stubs.def), so the
//! optimiser merges and moves them like arithmetic. bf16 needs sm_80; f16
//! works on every architecture oxide builds for, except the f32-pair
//! conversion [`f16x2::from_f32s`], which needs sm_80 as well. The atomics
//! are `atom.add.noftz.f16x2`, `.f16`, and `.bf16x2`, `.bf16` (sm_90),
//! relaxed at device scope; on the CPU emulator they are host atomics around
//! the CPU model. PTX has no scalar f16/bf16 atomic min or max. The FP8
//! conversions need sm_89 ([`fp8`] says which instructions).
//!
//! Division has no PTX instruction: it is an f32 division for f16 (exact
//! after one rounding, see [`model`]) and an f64 division for bf16, then one
//! conversion. A square root is `sqrt.rn.f32` between conversions (exact
//! for both formats, by the same argument). Widening a bf16 is a shift, and narrowing an f64 to bf16 is
//! integer code (`cvt.rn.bf16.f64` needs sm_90); both are the same Rust on
//! the host and the device.
//!
//! # On the host
//!
//! Each instruction is its CPU model ([`model`]): the exact operation,
//! rounded once, NaN results as the GPU's canonical NaN (`0x7fff`). Host
//! code, kernels emulated on the CPU (`--emulate=host`) and the device-code
//! emulator all give the GPU's bits.
//!
//! # Comparisons and NaN
//!
//! `==` and `<` are IEEE's: NaN is unordered and unequal to itself, and
//! `-0.0 == +0.0`. Negation and [`abs`](f16::abs) flip or clear the sign bit
//! and keep a NaN's payload, as the GPU's `neg` and `abs` do; everything that
//! rounds returns the canonical NaN.

pub mod model;
pub mod fp8;

pub use fp8::{f8e4m3, f8e4m3x2, f8e5m2, f8e5m2x2};

use crate::stubs;
use core::cell::UnsafeCell;
use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// IEEE 754 binary16: 1 sign bit, 5 exponent bits, 10 fraction bits
/// (CUDA's `__half`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f16(u16);

/// bfloat16: 1 sign bit, f32's 8 exponent bits, 7 fraction bits — the top
/// half of an f32 (CUDA's `__nv_bfloat16`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct bf16(u16);

/// Two [`f16`](struct@f16) in one 32-bit word, lane 0 in bits 0–15 (CUDA's `__half2`);
/// its arithmetic is one paired instruction for both lanes.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f16x2(u32);

/// Two [`bf16`] in one 32-bit word, lane 0 in bits 0–15 (CUDA's
/// `__nv_bfloat162`); its arithmetic is one paired instruction.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct bf16x2(u32);

/// How `f16::from_f32_rounded` and `bf16::from_f32_rounded` round a value
/// the format cannot hold (PTX's `cvt` rounding modifiers).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rounding {
    /// To the nearest value, ties to the even one (`.rn`, the default).
    NearestEven,
    /// Toward zero (`.rz`); never overflows to infinity.
    TowardZero,
    /// Toward negative infinity (`.rm`).
    Down,
    /// Toward positive infinity (`.rp`).
    Up,
}

/// What f16 and bf16 share: the bit-level constants and operations.
macro_rules! half_common {
    ($t:ident, $frac_bits:literal, $exp_mask:literal) => {
        impl $t {
            /// The value with these bits.
            #[inline(always)]
            pub const fn from_bits(bits: u16) -> Self {
                Self(bits)
            }
            /// The bits of the value.
            #[inline(always)]
            pub const fn to_bits(self) -> u16 {
                self.0
            }
            /// +0.0.
            pub const ZERO: Self = Self(0);
            /// -0.0.
            pub const NEG_ZERO: Self = Self(0x8000);
            /// The largest finite value's negation.
            pub const MIN: Self = Self(Self::MAX.0 | 0x8000);
            /// +∞.
            pub const INFINITY: Self = Self($exp_mask);
            /// −∞.
            pub const NEG_INFINITY: Self = Self($exp_mask | 0x8000);
            /// The smallest positive subnormal value.
            pub const MIN_POSITIVE_SUBNORMAL: Self = Self(1);
            /// The number of significand bits, the implicit one included.
            pub const MANTISSA_DIGITS: u32 = $frac_bits + 1;

            /// Whether the value is a NaN.
            #[inline(always)]
            pub const fn is_nan(self) -> bool {
                self.0 & 0x7fff > $exp_mask
            }
            /// Whether the value is +∞ or −∞.
            #[inline(always)]
            pub const fn is_infinite(self) -> bool {
                self.0 & 0x7fff == $exp_mask
            }
            /// Whether the value is neither infinite nor NaN.
            #[inline(always)]
            pub const fn is_finite(self) -> bool {
                self.0 & 0x7fff < $exp_mask
            }
            /// Whether the value is subnormal (nonzero, below the smallest
            /// normal value in magnitude).
            #[inline(always)]
            pub const fn is_subnormal(self) -> bool {
                self.0 & $exp_mask == 0 && self.0 & 0x7fff != 0
            }
            /// Whether the sign bit is set (−0.0 and NaNs with it included).
            #[inline(always)]
            pub const fn is_sign_negative(self) -> bool {
                self.0 & 0x8000 != 0
            }
            /// Whether the sign bit is clear.
            #[inline(always)]
            pub const fn is_sign_positive(self) -> bool {
                !self.is_sign_negative()
            }
            /// The magnitude: the sign bit cleared (a NaN keeps its payload).
            #[inline(always)]
            pub const fn abs(self) -> Self {
                Self(self.0 & 0x7fff)
            }
            /// `self`'s magnitude with `sign`'s sign bit.
            #[inline(always)]
            pub const fn copysign(self, sign: Self) -> Self {
                Self(self.0 & 0x7fff | sign.0 & 0x8000)
            }
            /// The value as an f64 (exact).
            #[inline(always)]
            pub fn to_f64(self) -> f64 {
                self.widen_to_f64()
            }
        }

        impl Neg for $t {
            type Output = Self;
            /// Flips the sign bit (a NaN keeps its payload), as PTX's `neg` does.
            #[inline(always)]
            fn neg(self) -> Self {
                Self(self.0 ^ 0x8000)
            }
        }

        impl Sub for $t {
            type Output = Self;
            /// `self + (-rhs)`, which is IEEE's definition of subtraction.
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self {
                self + -rhs
            }
        }

        impl PartialEq for $t {
            /// IEEE equality: NaN equals nothing, −0.0 equals +0.0.
            #[inline(always)]
            fn eq(&self, other: &Self) -> bool {
                !self.is_nan() && !other.is_nan() && (self.0 == other.0 || (self.0 | other.0) & 0x7fff == 0)
            }
        }

        impl PartialOrd for $t {
            /// IEEE order: `None` when either side is NaN.
            #[inline(always)]
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl From<$t> for f32 {
            #[inline(always)]
            fn from(x: $t) -> f32 {
                x.to_f32()
            }
        }

        impl From<$t> for f64 {
            #[inline(always)]
            fn from(x: $t) -> f64 {
                x.to_f64()
            }
        }

        impl AddAssign for $t {
            #[inline(always)]
            fn add_assign(&mut self, rhs: Self) {
                *self = *self + rhs;
            }
        }
        impl SubAssign for $t {
            #[inline(always)]
            fn sub_assign(&mut self, rhs: Self) {
                *self = *self - rhs;
            }
        }
        impl MulAssign for $t {
            #[inline(always)]
            fn mul_assign(&mut self, rhs: Self) {
                *self = *self * rhs;
            }
        }
        impl DivAssign for $t {
            #[inline(always)]
            fn div_assign(&mut self, rhs: Self) {
                *self = *self / rhs;
            }
        }
    };
}

half_common!(f16, 10, 0x7c00);
half_common!(bf16, 7, 0x7f80);

impl f16 {
    /// 1.0.
    pub const ONE: Self = Self(0x3c00);
    /// -1.0.
    pub const NEG_ONE: Self = Self(0xbc00);
    /// The largest finite value, 65504.
    pub const MAX: Self = Self(0x7bff);
    /// The smallest positive normal value, 2⁻¹⁴.
    pub const MIN_POSITIVE: Self = Self(0x0400);
    /// The gap between 1.0 and the next value, 2⁻¹⁰.
    pub const EPSILON: Self = Self(0x1400);
    /// A quiet NaN (the one `f32::NAN` narrows to in the `half` crate;
    /// arithmetic returns the GPU's canonical `0x7fff` instead).
    pub const NAN: Self = Self(0x7e00);

    /// `x` rounded to the nearest f16, ties to even (`cvt.rn.f16.f32`):
    /// past [`MAX`](Self::MAX) by half a unit or more becomes infinity,
    /// below the smallest subnormal by half or more becomes zero.
    #[inline(always)]
    pub fn from_f32(x: f32) -> Self {
        Self(stubs::__oxide_stub_f16_from_f32(x))
    }

    /// `x` rounded to f16 as `rounding` says (`cvt.rn/.rz/.rm/.rp.f16.f32`).
    #[inline(always)]
    pub fn from_f32_rounded(x: f32, rounding: Rounding) -> Self {
        Self(match rounding {
            Rounding::NearestEven => stubs::__oxide_stub_f16_from_f32(x),
            Rounding::TowardZero => stubs::__oxide_stub_f16_from_f32_rz(x),
            Rounding::Down => stubs::__oxide_stub_f16_from_f32_rm(x),
            Rounding::Up => stubs::__oxide_stub_f16_from_f32_rp(x),
        })
    }

    /// `x` rounded once to the nearest f16, ties to even (`cvt.rn.f16.f64`;
    /// not through f32, which could round twice).
    #[inline(always)]
    pub fn from_f64(x: f64) -> Self {
        Self(stubs::__oxide_stub_f16_from_f64(x))
    }

    /// The value as an f32 (exact; `cvt.f32.f16`).
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        stubs::__oxide_stub_f16_to_f32(self.0)
    }

    #[inline(always)]
    fn widen_to_f64(self) -> f64 {
        stubs::__oxide_stub_f16_to_f64(self.0)
    }

    /// The square root, rounded once (f32's `sqrt.rn` between exact
    /// conversions; NaN for a negative value, −0.0 for −0.0).
    #[inline(always)]
    pub fn sqrt(self) -> Self {
        Self(stubs::__oxide_stub_f16_sqrt(self.0))
    }

    /// `self * a + b` rounded once (`fma.rn.f16`).
    #[inline(always)]
    pub fn mul_add(self, a: Self, b: Self) -> Self {
        Self(stubs::__oxide_stub_f16_fma(self.0, a.0, b.0))
    }
}

impl Add for f16 {
    type Output = Self;
    /// `add.rn.f16`.
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        Self(stubs::__oxide_stub_f16_add(self.0, rhs.0))
    }
}

impl Mul for f16 {
    type Output = Self;
    /// `mul.rn.f16`.
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        Self(stubs::__oxide_stub_f16_mul(self.0, rhs.0))
    }
}

impl Div for f16 {
    type Output = Self;
    /// An f32 division rounded to f16: correctly rounded (f32's 24 bits are
    /// at least twice f16's 11 plus two, and every f16 quotient is an f32
    /// normal), PTX having no f16 division.
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        Self::from_f32(self.to_f32() / rhs.to_f32())
    }
}

impl bf16 {
    /// 1.0.
    pub const ONE: Self = Self(0x3f80);
    /// -1.0.
    pub const NEG_ONE: Self = Self(0xbf80);
    /// The largest finite value, about 3.39e38.
    pub const MAX: Self = Self(0x7f7f);
    /// The smallest positive normal value, 2⁻¹²⁶.
    pub const MIN_POSITIVE: Self = Self(0x0080);
    /// The gap between 1.0 and the next value, 2⁻⁷.
    pub const EPSILON: Self = Self(0x3c00);
    /// A quiet NaN (`f32::NAN`'s top half; arithmetic returns the GPU's
    /// canonical `0x7fff` instead).
    pub const NAN: Self = Self(0x7fc0);

    /// `x` rounded to the nearest bf16, ties to even (`cvt.rn.bf16.f32`).
    #[inline(always)]
    pub fn from_f32(x: f32) -> Self {
        Self(stubs::__oxide_stub_bf16_from_f32(x))
    }

    /// `x` rounded to bf16 as `rounding` says (`cvt.rn/.rz/.rm/.rp.bf16.f32`).
    #[inline(always)]
    pub fn from_f32_rounded(x: f32, rounding: Rounding) -> Self {
        Self(match rounding {
            Rounding::NearestEven => stubs::__oxide_stub_bf16_from_f32(x),
            Rounding::TowardZero => stubs::__oxide_stub_bf16_from_f32_rz(x),
            Rounding::Down => stubs::__oxide_stub_bf16_from_f32_rm(x),
            Rounding::Up => stubs::__oxide_stub_bf16_from_f32_rp(x),
        })
    }

    /// `x` rounded once to the nearest bf16, ties to even. Integer code on
    /// host and device alike (`cvt.rn.bf16.f64` needs sm_90).
    #[inline(always)]
    pub fn from_f64(x: f64) -> Self {
        Self(model::narrow(model::BF16, x, model::Mode::NearestEven))
    }

    /// The value as an f32 (exact: the bits are f32's top half).
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }

    #[inline(always)]
    fn widen_to_f64(self) -> f64 {
        self.to_f32() as f64
    }

    /// The square root, rounded once (f32's `sqrt.rn` between exact
    /// conversions; NaN for a negative value, −0.0 for −0.0).
    #[inline(always)]
    pub fn sqrt(self) -> Self {
        Self(stubs::__oxide_stub_bf16_sqrt(self.0))
    }

    /// `self * a + b` rounded once (`fma.rn.bf16`).
    #[inline(always)]
    pub fn mul_add(self, a: Self, b: Self) -> Self {
        Self(stubs::__oxide_stub_bf16_fma(self.0, a.0, b.0))
    }
}

impl Add for bf16 {
    type Output = Self;
    /// `fma.rn.bf16` of `self * 1 + rhs`.
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        Self(stubs::__oxide_stub_bf16_add(self.0, rhs.0))
    }
}

impl Mul for bf16 {
    type Output = Self;
    /// `fma.rn.bf16` of `self * rhs + -0`.
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        Self(stubs::__oxide_stub_bf16_mul(self.0, rhs.0))
    }
}

impl Div for bf16 {
    type Output = Self;
    /// An f64 division rounded once to bf16 (correctly rounded: see
    /// [`model`]), PTX having no bf16 division.
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        Self::from_f64(self.to_f64() / rhs.to_f64())
    }
}

/// What f16x2 and bf16x2 share.
macro_rules! pair {
    ($t:ident, $lane:ident, $add:ident, $mul:ident, $fma:ident, $from:ident, $from_rz:ident) => {
        impl $t {
            /// The pair `(lo, hi)`: `lo` in bits 0–15.
            #[inline(always)]
            pub const fn new(lo: $lane, hi: $lane) -> Self {
                Self(lo.0 as u32 | (hi.0 as u32) << 16)
            }
            /// The pair with these bits.
            #[inline(always)]
            pub const fn from_bits(bits: u32) -> Self {
                Self(bits)
            }
            /// The bits of the pair.
            #[inline(always)]
            pub const fn to_bits(self) -> u32 {
                self.0
            }
            /// Lane 0 (bits 0–15).
            #[inline(always)]
            pub const fn lo(self) -> $lane {
                $lane(self.0 as u16)
            }
            /// Lane 1 (bits 16–31).
            #[inline(always)]
            pub const fn hi(self) -> $lane {
                $lane((self.0 >> 16) as u16)
            }
            /// Both lanes rounded to nearest even, in one instruction.
            #[inline(always)]
            pub fn from_f32s(lo: f32, hi: f32) -> Self {
                Self(stubs::$from(hi, lo))
            }
            /// Both lanes rounded toward zero, in one instruction.
            #[inline(always)]
            pub fn from_f32s_toward_zero(lo: f32, hi: f32) -> Self {
                Self(stubs::$from_rz(hi, lo))
            }
            /// Both lanes as f32 (exact): `(lo, hi)`.
            #[inline(always)]
            pub fn to_f32s(self) -> (f32, f32) {
                (self.lo().to_f32(), self.hi().to_f32())
            }
            /// `self * a + b` in each lane, each rounded once, in one instruction.
            #[inline(always)]
            pub fn mul_add(self, a: Self, b: Self) -> Self {
                Self(stubs::$fma(self.0, a.0, b.0))
            }
        }

        impl Add for $t {
            type Output = Self;
            /// Both lanes, in one instruction.
            #[inline(always)]
            fn add(self, rhs: Self) -> Self {
                Self(stubs::$add(self.0, rhs.0))
            }
        }

        impl Sub for $t {
            type Output = Self;
            /// `self + (-rhs)`, both lanes.
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self {
                self + -rhs
            }
        }

        impl Mul for $t {
            type Output = Self;
            /// Both lanes, in one instruction.
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self {
                Self(stubs::$mul(self.0, rhs.0))
            }
        }

        impl Neg for $t {
            type Output = Self;
            /// Flips both sign bits.
            #[inline(always)]
            fn neg(self) -> Self {
                Self(self.0 ^ 0x8000_8000)
            }
        }

        impl AddAssign for $t {
            #[inline(always)]
            fn add_assign(&mut self, rhs: Self) {
                *self = *self + rhs;
            }
        }
        impl SubAssign for $t {
            #[inline(always)]
            fn sub_assign(&mut self, rhs: Self) {
                *self = *self - rhs;
            }
        }
        impl MulAssign for $t {
            #[inline(always)]
            fn mul_assign(&mut self, rhs: Self) {
                *self = *self * rhs;
            }
        }

        impl PartialEq for $t {
            /// Both lanes equal as IEEE values.
            #[inline(always)]
            fn eq(&self, other: &Self) -> bool {
                self.lo() == other.lo() && self.hi() == other.hi()
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($t)).field(&self.lo()).field(&self.hi()).finish()
            }
        }
    };
}

pair!(f16x2, f16, __oxide_stub_f16x2_add, __oxide_stub_f16x2_mul, __oxide_stub_f16x2_fma,
    __oxide_stub_f16x2_from_f32, __oxide_stub_f16x2_from_f32_rz);
pair!(bf16x2, bf16, __oxide_stub_bf16x2_add, __oxide_stub_bf16x2_mul, __oxide_stub_bf16x2_fma,
    __oxide_stub_bf16x2_from_f32, __oxide_stub_bf16x2_from_f32_rz);

/// An atomic half-precision value or pair: `$bits` is the integer atomic of
/// its size (for loads), `$align` its alignment, `$what` what an add adds to.
macro_rules! atomic_half {
    ($(#[$doc:meta])* $name:ident, $t:ident, $stub:ident, $bits:ident, $align:literal, $what:literal) => {
        $(#[$doc])*
        #[repr(C, align($align))]
        pub struct $name {
            value: UnsafeCell<$t>,
        }

        // SAFETY: every access through a shared reference is atomic.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `value`.
            pub const fn new(value: $t) -> Self {
                Self { value: UnsafeCell::new(value) }
            }

            /// The atomic at `ptr`: an element of a device buffer or of a
            /// shared array, for example.
            ///
            /// # Safety
            /// `ptr` is valid for reads and writes for `'a`, aligned to its
            /// size, and every access to it during `'a` is atomic.
            #[inline(always)]
            pub const unsafe fn from_ptr<'a>(ptr: *mut $t) -> &'a Self {
                // SAFETY: same layout as the value; the caller vouches for the rest.
                unsafe { &*(ptr as *const Self) }
            }

            /// A pointer to the value.
            #[inline(always)]
            pub const fn as_ptr(&self) -> *mut $t {
                self.value.get()
            }

            /// The value, through exclusive access (no atomic needed).
            #[inline(always)]
            pub fn get_mut(&mut self) -> &mut $t {
                self.value.get_mut()
            }

            /// The value, consuming the atomic.
            #[inline(always)]
            pub fn into_inner(self) -> $t {
                self.value.into_inner()
            }

            #[doc = concat!("Adds `value` to ", $what, " in one atomic instruction,")]
            /// rounded to nearest even (subnormals kept), and returns the
            /// value it replaced. Relaxed, at device scope: order it
            /// against other memory with [`crate::fence`].
            #[inline(always)]
            pub fn fetch_add(&self, value: $t) -> $t {
                $t(stubs::$stub(self.as_ptr() as usize as u64, value.0))
            }

            /// Loads the value (relaxed).
            #[inline(always)]
            pub fn load(&self) -> $t {
                // SAFETY: a live atomic's value, aligned to its size, only
                // accessed atomically.
                let bits = unsafe { core::sync::atomic::$bits::from_ptr(self.as_ptr().cast()) };
                $t(bits.load(core::sync::atomic::Ordering::Relaxed))
            }
        }
    };
}

atomic_half!(
    /// An [`f16x2`] that threads add to atomically (`atom.add.noftz.f16x2`,
    /// CUDA's `atomicAdd(__half2*)`); the order of concurrent adds decides
    /// the rounding, as on the GPU.
    AtomicF16x2, f16x2, __oxide_stub_f16x2_atomic_add, AtomicU32, 4, "both lanes"
);
atomic_half!(
    /// A [`bf16x2`] that threads add to atomically
    /// (`atom.add.noftz.bf16x2`, sm_90).
    AtomicBF16x2, bf16x2, __oxide_stub_bf16x2_atomic_add, AtomicU32, 4, "both lanes"
);
atomic_half!(
    /// An [`f16`](struct@f16) that threads add to atomically
    /// (`atom.add.noftz.f16`, CUDA's `atomicAdd(__half*)`); the order of
    /// concurrent adds decides the rounding, as on the GPU. PTX has no
    /// scalar f16 atomic min or max.
    AtomicF16, f16, __oxide_stub_f16_atomic_add, AtomicU16, 2, "the value"
);
atomic_half!(
    /// A [`bf16`] that threads add to atomically (`atom.add.noftz.bf16`,
    /// sm_90; CUDA's `atomicAdd(__nv_bfloat16*)`).
    AtomicBF16, bf16, __oxide_stub_bf16_atomic_add, AtomicU16, 2, "the value"
);
