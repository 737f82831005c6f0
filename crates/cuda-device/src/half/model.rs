//! The CPU model of the half-precision instructions: what the GPU computes,
//! bit for bit, in portable Rust.
//!
//! Every `PureAsm` stub of `Stubs.def` that `cuda_device::half` calls is, on
//! the host, the function of the same name here (build.rs writes the call).
//! On the device the stub becomes the PTX instruction instead, so a kernel
//! run on the CPU (`--emulate=host`), a kernel run on the device-code
//! emulator (ptx-vm, which has its own soft float) and a kernel run on the
//! GPU agree, and host code that uses [`f16`](super::f16) gets the same
//! numbers as the kernels.
//!
//! # Why computing in f64 and rounding once is exact
//!
//! Widening a binary16 or bfloat16 value to f64 is exact. For `+ - * /` (and
//! square root) on operands of a format with `p` significand bits, rounding
//! the exact result first to a format with `p' >= 2p + 2` bits and then to
//! the `p`-bit format gives the correctly rounded result (double rounding is
//! innocuous: Figueroa, "When is double rounding innocuous?", 1995). f64 has
//! p' = 53; binary16 has p = 11 and bfloat16 p = 8, so 24 and 18 bits would
//! do, and even f32 (p' = 24) is enough for binary16. f32 is not used for
//! bfloat16, though: bfloat16 shares f32's exponent range, so a bfloat16
//! result near the subnormal range would be computed in f32's subnormals,
//! where f32 has fewer than 18 bits; f64 is normal across both formats'
//! ranges (products down to 2^-266, quotients up to 2^261), so one rule
//! covers both. Products are even exact in f64 (at most 22 significant bits).
//!
//! A fused multiply-add is not one of those operations: `a*b` (exact in f64)
//! plus `c` is rounded to f64 with its error recovered exactly (TwoSum), the
//! f64 sum is made *round-to-odd* (an inexact sum with an even last bit
//! moves to the odd neighbour on the error's side), and round-to-odd to at
//! least `p + 2` bits followed by round-to-nearest to `p` bits is correctly
//! rounded (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
//! proved algorithms using rounding to odd", 2008).
//!
//! # NaN
//!
//! PTX's f16/bf16 arithmetic and its `cvt` from f32 return the canonical
//! NaN (every bit but the sign set: `0x7fff`), whatever NaN came in; so do
//! these functions, and `cvt.f32.f16` gives the canonical f32 NaN. The
//! conversions to and from f64 keep the NaN instead, as the H200 does: the
//! sign and the leading fraction bits, with the quiet bit set
//! (`f16_from_f64`, `f16_to_f64`; ptx-vm's `cvt` follows the same rules).
//! `neg`, `abs` and comparisons are bit operations in `half` itself and keep
//! payloads.

/// A direction to round an exact value to the format.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// To nearest, ties to even (`.rn`).
    NearestEven,
    /// Toward zero (`.rz`).
    TowardZero,
    /// Toward negative infinity (`.rm`).
    Down,
    /// Toward positive infinity (`.rp`).
    Up,
}

/// A 16-bit IEEE-style binary format: 1 sign bit, `exp_bits`, `frac_bits`.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    exp_bits: u32,
    frac_bits: u32,
}

/// IEEE 754 binary16.
pub(crate) const F16: Format = Format { exp_bits: 5, frac_bits: 10 };
/// bfloat16: f32's exponent, 7 fraction bits.
pub(crate) const BF16: Format = Format { exp_bits: 8, frac_bits: 7 };

/// The NaN PTX's half-precision instructions return.
pub(crate) const CANONICAL_NAN: u16 = 0x7fff;

impl Format {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }
    /// The bits of +infinity.
    fn infinity(self) -> u16 {
        (((1u32 << self.exp_bits) - 1) << self.frac_bits) as u16
    }
    /// The bits of the largest finite value.
    fn max_finite(self) -> u16 {
        self.infinity() - 1
    }
}

/// `2^e` as an f64, for `e` in f64's normal exponent range.
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The exact value of `bits` in `fmt` (the canonical f64 NaN for a NaN).
pub(crate) fn widen(fmt: Format, bits: u16) -> f64 {
    let negative = bits & 0x8000 != 0;
    let exponent = ((bits >> fmt.frac_bits) as u32 & ((1 << fmt.exp_bits) - 1)) as i32;
    let fraction = (bits as u32 & ((1 << fmt.frac_bits) - 1)) as f64;
    let frac_bits = fmt.frac_bits as i32;
    let magnitude = if exponent == (1 << fmt.exp_bits) - 1 {
        if fraction != 0.0 {
            return f64::from_bits(0x7fff_ffff_ffff_ffff);
        }
        f64::INFINITY
    } else if exponent == 0 {
        fraction * pow2(1 - fmt.bias() - frac_bits)
    } else {
        (fraction + pow2(frac_bits)) * pow2(exponent - fmt.bias() - frac_bits)
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// `x` rounded once to `fmt` in `mode`: subnormals kept, overflow to
/// infinity (or to the largest finite value where `mode` rounds toward it),
/// NaN to the canonical NaN.
pub(crate) fn narrow(fmt: Format, x: f64, mode: Mode) -> u16 {
    let bits = x.to_bits();
    let negative = bits >> 63 != 0;
    let sign = if negative { 0x8000u16 } else { 0 };
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    if x.is_infinite() {
        return sign | fmt.infinity();
    }
    if x == 0.0 {
        return sign;
    }
    // |x| = significand * 2^exponent, significand an integer.
    let field = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (significand, exponent) = if field == 0 { (fraction, -1074) } else { (fraction | 1 << 52, field - 1075) };
    // The position of the leading bit: |x| is in [2^top, 2^(top + 1)).
    let top = exponent + 63 - significand.leading_zeros() as i32;
    let frac_bits = fmt.frac_bits as i32;
    let min_exponent = 1 - fmt.bias();
    let overflow = || {
        let to_infinity = match mode {
            Mode::NearestEven => true,
            Mode::TowardZero => false,
            Mode::Down => negative,
            Mode::Up => !negative,
        };
        sign | if to_infinity { fmt.infinity() } else { fmt.max_finite() }
    };
    if top > fmt.bias() {
        return overflow();
    }
    // The unit of the last place of the result (subnormals share the
    // smallest normal binade's).
    let quantum = top.max(min_exponent) - frac_bits;
    let shift = quantum - exponent;
    let (kept, remainder, half) = if shift <= 0 {
        (significand << -shift, 0u64, 1u64)
    } else if shift > 60 {
        // Far below half a unit (the significand has at most 53 bits).
        (0, 1, 1 << 60)
    } else {
        (significand >> shift, significand & ((1 << shift) - 1), 1u64 << (shift - 1))
    };
    let round_up = match mode {
        Mode::NearestEven => remainder > half || (remainder == half && kept & 1 == 1),
        Mode::TowardZero => false,
        Mode::Down => negative && remainder != 0,
        Mode::Up => !negative && remainder != 0,
    };
    let rounded = kept + round_up as u64;
    // A carry out of the significand moves into the exponent field, which
    // is what IEEE's encoding makes of `steps << frac_bits` + significand.
    let steps = (quantum - (min_exponent - frac_bits)) as u64;
    let encoded = (steps << frac_bits) + rounded;
    if encoded >= fmt.infinity() as u64 {
        return overflow();
    }
    sign | encoded as u16
}

/// `a * b + c` rounded once to nearest even in `fmt` (see the module docs).
fn fused(fmt: Format, a: u16, b: u16, c: u16) -> u16 {
    let product = widen(fmt, a) * widen(fmt, b);
    let addend = widen(fmt, c);
    let sum = product + addend;
    if !sum.is_finite() {
        return narrow(fmt, sum, Mode::NearestEven);
    }
    // TwoSum: `sum + error` is exactly `product + addend`.
    let product_part = sum - addend;
    let addend_part = sum - product_part;
    let error = (product - product_part) + (addend - addend_part);
    let odd = if error != 0.0 && sum.to_bits() & 1 == 0 {
        // The neighbour of `sum` on the error's side, one unit away in the
        // last place (`sum` is nonzero here: a zero sum is exact).
        let away_from_zero = (error > 0.0) == (sum > 0.0);
        let bits = sum.to_bits();
        f64::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
    } else {
        sum
    };
    narrow(fmt, odd, Mode::NearestEven)
}

/// The square root of `h` rounded once to nearest even in `fmt`: the
/// significand's integer square root with its inexactness folded into the
/// last bit (round-to-odd, far more than `p + 2` bits), then rounded.
fn root(fmt: Format, h: u16) -> u16 {
    let x = widen(fmt, h);
    if x.is_nan() || x < 0.0 {
        return CANONICAL_NAN;
    }
    if x == 0.0 || x.is_infinite() {
        return h; // sqrt(±0) = ±0, sqrt(+inf) = +inf
    }
    // x = significand * 2^exponent, exactly (a nonzero f16/bf16 value is an
    // f64 normal); scaled so the exponent is even and the significand fills
    // 63 or 64 bits.
    let bits = x.to_bits();
    let significand = (bits & ((1 << 52) - 1)) | 1 << 52;
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let shift = if (exponent - 10).rem_euclid(2) == 0 { 10 } else { 11 };
    let scaled = significand << shift;
    let floor = scaled.isqrt();
    let odd = if floor * floor == scaled { floor } else { floor | 1 };
    narrow(fmt, odd as f64 * pow2((exponent - shift) / 2), Mode::NearestEven)
}

/// `sqrt.rn.f32` between conversions, for f16.
pub(crate) fn f16_sqrt(a: u16) -> u16 {
    root(F16, a)
}

/// `sqrt.rn.f32` between conversions, for bf16.
pub(crate) fn bf16_sqrt(a: u16) -> u16 {
    root(BF16, a)
}

fn lanes(x: u32) -> (u16, u16) {
    (x as u16, (x >> 16) as u16)
}

fn pack(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

macro_rules! format_ops {
    ($fmt:expr, $add:ident, $mul:ident, $fma:ident, $add2:ident, $mul2:ident, $fma2:ident,
     $from:ident, $from_rz:ident, $from_rm:ident, $from_rp:ident, $from2:ident, $from2_rz:ident) => {
        /// `cvt.rn` from f32.
        pub(crate) fn $from(x: f32) -> u16 {
            narrow($fmt, x as f64, Mode::NearestEven)
        }
        /// `cvt.rz` from f32.
        pub(crate) fn $from_rz(x: f32) -> u16 {
            narrow($fmt, x as f64, Mode::TowardZero)
        }
        /// `cvt.rm` from f32.
        pub(crate) fn $from_rm(x: f32) -> u16 {
            narrow($fmt, x as f64, Mode::Down)
        }
        /// `cvt.rp` from f32.
        pub(crate) fn $from_rp(x: f32) -> u16 {
            narrow($fmt, x as f64, Mode::Up)
        }
        /// `add.rn`.
        pub(crate) fn $add(a: u16, b: u16) -> u16 {
            narrow($fmt, widen($fmt, a) + widen($fmt, b), Mode::NearestEven)
        }
        /// `mul.rn`.
        pub(crate) fn $mul(a: u16, b: u16) -> u16 {
            narrow($fmt, widen($fmt, a) * widen($fmt, b), Mode::NearestEven)
        }
        /// `fma.rn`.
        pub(crate) fn $fma(a: u16, b: u16, c: u16) -> u16 {
            fused($fmt, a, b, c)
        }
        /// `add.rn` on both lanes.
        pub(crate) fn $add2(a: u32, b: u32) -> u32 {
            let ((a0, a1), (b0, b1)) = (lanes(a), lanes(b));
            pack($add(a0, b0), $add(a1, b1))
        }
        /// `mul.rn` on both lanes.
        pub(crate) fn $mul2(a: u32, b: u32) -> u32 {
            let ((a0, a1), (b0, b1)) = (lanes(a), lanes(b));
            pack($mul(a0, b0), $mul(a1, b1))
        }
        /// `fma.rn` on both lanes.
        pub(crate) fn $fma2(a: u32, b: u32, c: u32) -> u32 {
            let ((a0, a1), (b0, b1), (c0, c1)) = (lanes(a), lanes(b), lanes(c));
            pack($fma(a0, b0, c0), $fma(a1, b1, c1))
        }
        /// `cvt.rn` of two f32 into one register: `hi` in bits 16–31.
        pub(crate) fn $from2(hi: f32, lo: f32) -> u32 {
            pack($from(lo), $from(hi))
        }
        /// `cvt.rz` of two f32 into one register: `hi` in bits 16–31.
        pub(crate) fn $from2_rz(hi: f32, lo: f32) -> u32 {
            pack($from_rz(lo), $from_rz(hi))
        }
    };
}

format_ops!(F16, f16_add, f16_mul, f16_fma, f16x2_add, f16x2_mul, f16x2_fma,
    f16_from_f32, f16_from_f32_rz, f16_from_f32_rm, f16_from_f32_rp, f16x2_from_f32, f16x2_from_f32_rz);
format_ops!(BF16, bf16_add, bf16_mul, bf16_fma, bf16x2_add, bf16x2_mul, bf16x2_fma,
    bf16_from_f32, bf16_from_f32_rz, bf16_from_f32_rm, bf16_from_f32_rp, bf16x2_from_f32, bf16x2_from_f32_rz);

/// `cvt.rn.f16.f64`: one rounding, straight from f64. A NaN keeps its sign
/// and the top 10 bits of its fraction, quieted.
pub(crate) fn f16_from_f64(x: f64) -> u16 {
    if x.is_nan() {
        let bits = x.to_bits();
        let sign = ((bits >> 48) & 0x8000) as u16;
        return sign | 0x7e00 | ((bits >> 42) & 0x3ff) as u16;
    }
    narrow(F16, x, Mode::NearestEven)
}

/// `cvt.f32.f16` (exact).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let wide = widen(F16, h);
    if wide.is_nan() {
        f32::from_bits(0x7fff_ffff)
    } else {
        wide as f32
    }
}

/// `cvt.f64.f16` (exact). A NaN keeps its sign and fraction, quieted.
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
        let sign = ((h & 0x8000) as u64) << 48;
        return f64::from_bits(sign | 0x7ff8_0000_0000_0000 | ((h & 0x3ff) as u64) << 42);
    }
    widen(F16, h)
}

/// An OCP FP8 format: 1 sign bit, `exp_bits`, `frac_bits`, and the code of
/// its largest finite magnitude (E4M3 spends its top exponent on normal
/// values and keeps only `0x7f` for NaN; E5M2 is IEEE-like, with infinities).
#[derive(Clone, Copy)]
pub(crate) struct Fp8 {
    exp_bits: u32,
    frac_bits: u32,
    max_finite: u8,
}

/// OCP E4M3 (CUDA's `__nv_fp8_e4m3`): largest finite 448, no infinity.
pub(crate) const E4M3: Fp8 = Fp8 { exp_bits: 4, frac_bits: 3, max_finite: 0x7e };
/// OCP E5M2 (CUDA's `__nv_fp8_e5m2`): largest finite 57344.
pub(crate) const E5M2: Fp8 = Fp8 { exp_bits: 5, frac_bits: 2, max_finite: 0x7b };

/// The NaN that a narrowing to FP8 returns for any NaN, in both formats
/// (the sign is dropped, as `cvt` drops it going to f16).
pub(crate) const FP8_NAN: u8 = 0x7f;

impl Fp8 {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }
    /// Whether `bits` (sign ignored) is a NaN.
    pub(crate) fn is_nan(self, bits: u8) -> bool {
        let magnitude = bits & 0x7f;
        if self.exp_bits == 4 {
            magnitude == 0x7f
        } else {
            magnitude > 0x7c
        }
    }
}

/// `cvt.rn.satfinite` of an exact value to `fmt`: rounded once to nearest
/// even, a magnitude past the largest finite one (infinity included)
/// saturated to it with its sign, any NaN to [`FP8_NAN`].
pub(crate) fn narrow_fp8(fmt: Fp8, x: f64) -> u8 {
    if x.is_nan() {
        return FP8_NAN;
    }
    let bits = x.to_bits();
    let sign = if bits >> 63 != 0 { 0x80u8 } else { 0 };
    if x == 0.0 {
        return sign;
    }
    let field = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (significand, exponent) = if field == 0 { (fraction, -1074) } else { (fraction | 1 << 52, field - 1075) };
    let top = exponent + 63 - significand.leading_zeros() as i32;
    // Two binades past the top one round to nothing finite (infinity too).
    if top > fmt.bias() + 1 {
        return sign | fmt.max_finite;
    }
    let frac_bits = fmt.frac_bits as i32;
    let min_exponent = 1 - fmt.bias();
    let quantum = top.max(min_exponent) - frac_bits;
    // `exponent` is at most `top - 52`, far below `quantum`: shift > 0.
    let shift = quantum - exponent;
    let (kept, remainder, half) = if shift > 60 {
        (0, 1, 1u64 << 60)
    } else {
        (significand >> shift, significand & ((1 << shift) - 1), 1u64 << (shift - 1))
    };
    let round_up = remainder > half || (remainder == half && kept & 1 == 1);
    let rounded = kept + round_up as u64;
    // As in `narrow`: a carry out of the significand lands in the exponent.
    let steps = (quantum - (min_exponent - frac_bits)) as u64;
    let encoded = (steps << frac_bits) + rounded;
    sign | encoded.min(fmt.max_finite as u64) as u8
}

/// The exact value of `bits` in `fmt` (the canonical f64 NaN for a NaN).
pub(crate) fn widen_fp8(fmt: Fp8, bits: u8) -> f64 {
    if fmt.is_nan(bits) {
        return f64::from_bits(0x7fff_ffff_ffff_ffff);
    }
    let magnitude = bits & 0x7f;
    let exponent = (magnitude >> fmt.frac_bits) as i32;
    let fraction = (magnitude & ((1 << fmt.frac_bits) - 1)) as f64;
    let frac_bits = fmt.frac_bits as i32;
    let value = if fmt.exp_bits == 5 && exponent == 31 {
        f64::INFINITY
    } else if exponent == 0 {
        fraction * pow2(1 - fmt.bias() - frac_bits)
    } else {
        (fraction + pow2(frac_bits)) * pow2(exponent - fmt.bias() - frac_bits)
    };
    if bits & 0x80 != 0 {
        -value
    } else {
        value
    }
}

/// One FP8 value widened to f16 (exact; a NaN becomes the canonical
/// `0x7fff`, its sign dropped).
pub(crate) fn fp8_to_f16(fmt: Fp8, bits: u8) -> u16 {
    if fmt.is_nan(bits) {
        return CANONICAL_NAN;
    }
    narrow(F16, widen_fp8(fmt, bits), Mode::NearestEven)
}

fn fp8_lanes(x: u16) -> (u8, u8) {
    (x as u8, (x >> 8) as u8)
}

fn fp8_pack(lo: u8, hi: u8) -> u16 {
    lo as u16 | (hi as u16) << 8
}

macro_rules! fp8_ops {
    ($fmt:expr, $from_f32:ident, $from_f16x2:ident, $to_f16x2:ident) => {
        /// `cvt.rn.satfinite` of two f32 into one 16-bit register: `hi` in bits 8–15.
        pub(crate) fn $from_f32(hi: f32, lo: f32) -> u16 {
            fp8_pack(narrow_fp8($fmt, lo as f64), narrow_fp8($fmt, hi as f64))
        }
        /// `cvt.rn.satfinite` of an f16 pair, lane by lane.
        pub(crate) fn $from_f16x2(x: u32) -> u16 {
            let (lo, hi) = lanes(x);
            fp8_pack(narrow_fp8($fmt, widen(F16, lo)), narrow_fp8($fmt, widen(F16, hi)))
        }
        /// `cvt.rn.f16x2` of an FP8 pair (exact), lane by lane.
        pub(crate) fn $to_f16x2(x: u16) -> u32 {
            let (lo, hi) = fp8_lanes(x);
            pack(fp8_to_f16($fmt, lo), fp8_to_f16($fmt, hi))
        }
    };
}

fp8_ops!(E4M3, f8e4m3x2_from_f32, f8e4m3x2_from_f16x2, f8e4m3x2_to_f16x2);
fp8_ops!(E5M2, f8e5m2x2_from_f32, f8e5m2x2_from_f16x2, f8e5m2x2_to_f16x2);
