//! Floating-point semantics: f16, bf16, tf32, f32, f64 and the packed
//! f16x2/bf16x2, as PTX defines them.
//!
//! It owns:
//! - exact rounding in every IEEE mode. Round-to-nearest-even f32/f64
//!   `add sub mul div sqrt fma` use the host's IEEE operations (correctly
//!   rounded); every other mode and format goes through a small software
//!   float (`Unpacked` and [`round_pack`]): operands are decoded into an
//!   exact integer significand and exponent, the operation is carried out
//!   exactly (or with a sticky bit far below the rounding position), and the
//!   result is rounded once. The host's rounding mode is never changed.
//! - NaN results: arithmetic producing a NaN returns the canonical NaN
//!   (`0x7fffffff` for f32, the same pattern for the other widths); `neg`,
//!   `abs` and `copysign` are bit operations that keep payloads, as the GPU
//!   does.
//! - `.ftz` (f32 only: subnormal inputs and results become signed zeros) and
//!   `.sat` (clamp to [0, 1], NaN to +0).
//! - conversions (`cvt`) between every pair of integer and float types with
//!   `.rn .rz .rm .rp .rna` and `.rni .rzi .rmi .rpi`, saturation of
//!   float-to-integer results (NaN becomes 0 from f32 and halves to 8–32
//!   bits, the sign bit alone from f64 or to 64 bits, as an H100 gives it),
//!   `.sat`, `.relu`,
//!   `.satfinite`.
//! - the `.approx` instructions (`rcp sqrt rsqrt ex2 lg2 sin cos tanh`,
//!   `div.approx`, `div.full`): computed with the host's f64 math and rounded
//!   to the destination, which is at least as accurate as the errors the PTX
//!   ISA documents for them; results can differ from the hardware's in the
//!   last bits.

use crate::program::{Cmp, FOp, FTy, Rnd, TestClass};

/// An IEEE binary format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub exp_bits: u32,
    pub frac_bits: u32,
}

pub const F16: Format = Format {
    exp_bits: 5,
    frac_bits: 10,
};
pub const BF16: Format = Format {
    exp_bits: 8,
    frac_bits: 7,
};
pub const F32: Format = Format {
    exp_bits: 8,
    frac_bits: 23,
};
pub const F64: Format = Format {
    exp_bits: 11,
    frac_bits: 52,
};

impl Format {
    fn width(self) -> u32 {
        1 + self.exp_bits + self.frac_bits
    }
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }
    fn sign_bit(self) -> u64 {
        1 << (self.exp_bits + self.frac_bits)
    }
    fn exp_mask(self) -> u64 {
        ((1u64 << self.exp_bits) - 1) << self.frac_bits
    }
    fn frac_mask(self) -> u64 {
        (1u64 << self.frac_bits) - 1
    }
    /// The canonical NaN: every bit but the sign set.
    pub fn nan(self) -> u64 {
        self.sign_bit() - 1
    }
    fn inf(self, sign: bool) -> u64 {
        self.exp_mask() | if sign { self.sign_bit() } else { 0 }
    }
    fn max_finite(self, sign: bool) -> u64 {
        (self.exp_mask() - (1 << self.frac_bits))
            | self.frac_mask()
            | if sign { self.sign_bit() } else { 0 }
    }
    fn zero(self, sign: bool) -> u64 {
        if sign {
            self.sign_bit()
        } else {
            0
        }
    }
    pub fn is_nan(self, b: u64) -> bool {
        b & self.exp_mask() == self.exp_mask() && b & self.frac_mask() != 0
    }
    fn is_subnormal(self, b: u64) -> bool {
        b & self.exp_mask() == 0 && b & self.frac_mask() != 0
    }
    fn sign(self, b: u64) -> bool {
        b & self.sign_bit() != 0
    }
    fn abs(self, b: u64) -> u64 {
        b & !self.sign_bit()
    }
}

/// A decoded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Val {
    Zero(bool),
    Inf(bool),
    NaN,
    /// `(-1)^sign * mant * 2^exp`, `mant != 0`.
    Fin(bool, i32, u128),
}

fn unpack(fmt: Format, b: u64) -> Val {
    let sign = fmt.sign(b);
    let e = ((b & fmt.exp_mask()) >> fmt.frac_bits) as i32;
    let f = b & fmt.frac_mask();
    if e == (1 << fmt.exp_bits) - 1 {
        return if f == 0 { Val::Inf(sign) } else { Val::NaN };
    }
    if e == 0 {
        if f == 0 {
            return Val::Zero(sign);
        }
        return Val::Fin(sign, 1 - fmt.bias() - fmt.frac_bits as i32, f as u128);
    }
    Val::Fin(
        sign,
        e - fmt.bias() - fmt.frac_bits as i32,
        (f | (1 << fmt.frac_bits)) as u128,
    )
}

/// Whether rounding `q` (with the dropped part `rem` out of `half*2`) goes up
/// in magnitude.
fn round_up(
    mode: Rnd,
    sign: bool,
    q_odd: bool,
    above_half: bool,
    at_half: bool,
    inexact: bool,
) -> bool {
    match mode {
        Rnd::Rz | Rnd::Rzi => false,
        Rnd::Rm | Rnd::Rmi => sign && inexact,
        Rnd::Rp | Rnd::Rpi => !sign && inexact,
        Rnd::Rna => above_half || at_half,
        _ => above_half || (at_half && q_odd),
    }
}

/// Rounds `(-1)^sign * mant * 2^exp` (mant > 0; its lowest bit may be a
/// sticky bit standing for "a little more") to `fmt` in `mode`.
pub(crate) fn round_pack(fmt: Format, sign: bool, exp: i32, mant: u128, mode: Rnd) -> u64 {
    debug_assert!(mant != 0);
    let p = fmt.frac_bits as i32 + 1;
    let msb = 127 - mant.leading_zeros() as i32;
    let e = exp + msb;
    let emin = 1 - fmt.bias();
    let ulp_exp = if e < emin {
        emin - (p - 1)
    } else {
        e - (p - 1)
    };
    let shift = ulp_exp - exp;
    let (mut q, mut qe) = if shift <= 0 {
        (mant << (-shift) as u32, ulp_exp)
    } else {
        let (q, above, at, inexact) = if shift >= 129 {
            (0u128, false, false, true)
        } else if shift == 128 {
            let half = 1u128 << 127;
            (0, mant > half, mant == half, true)
        } else {
            let q = mant >> shift;
            let rem = mant & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            (q, rem > half, rem == half, rem != 0)
        };
        let up = round_up(mode, sign, q & 1 == 1, above, at, inexact);
        (q + up as u128, ulp_exp)
    };
    if q == 0 {
        return fmt.zero(sign);
    }
    if q >= 1u128 << p {
        q >>= 1;
        qe += 1;
    }
    let s = if sign { fmt.sign_bit() } else { 0 };
    if q >= 1u128 << (p - 1) {
        let biased = qe + (p - 1) + fmt.bias();
        if biased >= (1 << fmt.exp_bits) - 1 {
            let to_inf = match mode {
                Rnd::Rz | Rnd::Rzi => false,
                Rnd::Rm | Rnd::Rmi => sign,
                Rnd::Rp | Rnd::Rpi => !sign,
                _ => true,
            };
            return if to_inf {
                fmt.inf(sign)
            } else {
                fmt.max_finite(sign)
            };
        }
        s | (biased as u64) << fmt.frac_bits | (q as u64 & fmt.frac_mask())
    } else {
        s | q as u64
    }
}

/// Brings a significand's top bit to bit 125 (exactly: only left shifts).
fn normalise(exp: i32, mant: u128) -> (i32, u128) {
    let msb = 127 - mant.leading_zeros() as i32;
    let sh = 125 - msb;
    if sh >= 0 {
        (exp - sh, mant << sh as u32)
    } else {
        let sh = (-sh) as u32;
        let lost = mant & ((1u128 << sh) - 1) != 0;
        (exp + sh as i32, (mant >> sh) | lost as u128)
    }
}

/// The sign of an exact zero sum: + except when rounding down.
fn zero_sum_sign(mode: Rnd) -> bool {
    matches!(mode, Rnd::Rm | Rnd::Rmi)
}

/// Exact sum of two finite nonzero values, rounded once.
fn add_finite(fmt: Format, mode: Rnd, a: (bool, i32, u128), b: (bool, i32, u128)) -> u64 {
    let (sa, ea, ma) = a;
    let (sb, eb, mb) = b;
    let (ea, ma) = normalise(ea, ma);
    let (eb, mb) = normalise(eb, mb);
    let ((sa, ea, ma), (sb, eb, mb)) = if (ea, ma) >= (eb, mb) {
        ((sa, ea, ma), (sb, eb, mb))
    } else {
        ((sb, eb, mb), (sa, ea, ma))
    };
    let d = (ea - eb) as u32;
    let mb = if d == 0 {
        mb
    } else if d < 126 {
        (mb >> d) | ((mb & ((1u128 << d) - 1)) != 0) as u128
    } else {
        1
    };
    if sa == sb {
        round_pack(fmt, sa, ea, ma + mb, mode)
    } else {
        let m = ma - mb;
        if m == 0 {
            return fmt.zero(zero_sum_sign(mode));
        }
        round_pack(fmt, sa, ea, m, mode)
    }
}

fn soft_add(fmt: Format, mode: Rnd, x: u64, y: u64) -> u64 {
    match (unpack(fmt, x), unpack(fmt, y)) {
        (Val::NaN, _) | (_, Val::NaN) => fmt.nan(),
        (Val::Inf(a), Val::Inf(b)) if a != b => fmt.nan(),
        (Val::Inf(a), _) | (_, Val::Inf(a)) => fmt.inf(a),
        (Val::Zero(a), Val::Zero(b)) => fmt.zero(if a == b { a } else { zero_sum_sign(mode) }),
        (Val::Zero(_), Val::Fin(..)) => y,
        (Val::Fin(..), Val::Zero(_)) => x,
        (Val::Fin(sa, ea, ma), Val::Fin(sb, eb, mb)) => {
            add_finite(fmt, mode, (sa, ea, ma), (sb, eb, mb))
        }
    }
}

fn soft_mul(fmt: Format, mode: Rnd, x: u64, y: u64) -> u64 {
    match (unpack(fmt, x), unpack(fmt, y)) {
        (Val::NaN, _) | (_, Val::NaN) => fmt.nan(),
        (Val::Inf(_), Val::Zero(_)) | (Val::Zero(_), Val::Inf(_)) => fmt.nan(),
        (Val::Inf(a), v) | (v, Val::Inf(a)) => fmt.inf(a ^ sign_of(v)),
        (Val::Zero(a), v) | (v, Val::Zero(a)) => fmt.zero(a ^ sign_of(v)),
        (Val::Fin(sa, ea, ma), Val::Fin(sb, eb, mb)) => {
            round_pack(fmt, sa ^ sb, ea + eb, ma * mb, mode)
        }
    }
}

fn sign_of(v: Val) -> bool {
    match v {
        Val::Zero(s) | Val::Inf(s) | Val::Fin(s, ..) => s,
        Val::NaN => false,
    }
}

fn soft_fma(fmt: Format, mode: Rnd, x: u64, y: u64, z: u64) -> u64 {
    let (a, b, c) = (unpack(fmt, x), unpack(fmt, y), unpack(fmt, z));
    if matches!(a, Val::NaN) || matches!(b, Val::NaN) || matches!(c, Val::NaN) {
        return fmt.nan();
    }
    let ps = sign_of(a) ^ sign_of(b);
    let product_inf = matches!(a, Val::Inf(_)) || matches!(b, Val::Inf(_));
    let product_zero = matches!(a, Val::Zero(_)) || matches!(b, Val::Zero(_));
    if product_inf && product_zero {
        return fmt.nan();
    }
    if product_inf {
        if let Val::Inf(cs) = c {
            if cs != ps {
                return fmt.nan();
            }
        }
        return fmt.inf(ps);
    }
    if let Val::Inf(cs) = c {
        return fmt.inf(cs);
    }
    if product_zero {
        return match c {
            Val::Zero(cs) => fmt.zero(if cs == ps { cs } else { zero_sum_sign(mode) }),
            _ => z,
        };
    }
    let (Val::Fin(_, ea, ma), Val::Fin(_, eb, mb)) = (a, b) else {
        return fmt.nan();
    };
    let p = (ps, ea + eb, ma * mb);
    match c {
        Val::Zero(_) => round_pack(fmt, p.0, p.1, p.2, mode),
        Val::Fin(sc, ec, mc) => add_finite(fmt, mode, p, (sc, ec, mc)),
        _ => fmt.nan(),
    }
}

fn soft_div(fmt: Format, mode: Rnd, x: u64, y: u64) -> u64 {
    match (unpack(fmt, x), unpack(fmt, y)) {
        (Val::NaN, _) | (_, Val::NaN) => fmt.nan(),
        (Val::Inf(_), Val::Inf(_)) | (Val::Zero(_), Val::Zero(_)) => fmt.nan(),
        (Val::Inf(a), v) => fmt.inf(a ^ sign_of(v)),
        (v, Val::Inf(b)) => fmt.zero(b ^ sign_of(v)),
        (Val::Zero(a), v) => fmt.zero(a ^ sign_of(v)),
        (v, Val::Zero(b)) => fmt.inf(b ^ sign_of(v)),
        (Val::Fin(sa, ea, ma), Val::Fin(sb, eb, mb)) => {
            let sh = ma.leading_zeros() as i32 - 1;
            let num = ma << sh as u32;
            let q = num / mb;
            let rem = num % mb;
            round_pack(fmt, sa ^ sb, ea - sh - eb, q | (rem != 0) as u128, mode)
        }
    }
}

fn soft_sqrt(fmt: Format, mode: Rnd, x: u64) -> u64 {
    match unpack(fmt, x) {
        Val::NaN => fmt.nan(),
        Val::Zero(_) => x,
        Val::Inf(false) => x,
        Val::Inf(true) | Val::Fin(true, ..) => fmt.nan(),
        Val::Fin(false, e, m) => {
            let (mut e, mut m) = (e, m);
            if e & 1 != 0 {
                m <<= 1;
                e -= 1;
            }
            // Scale by an even power of two so the root has plenty of bits.
            let msb = 127 - m.leading_zeros() as i32;
            let mut sh = 124 - msb;
            if sh & 1 != 0 {
                sh -= 1;
            }
            let m = m << sh as u32;
            let r = m.isqrt();
            let exact = r * r == m;
            round_pack(fmt, false, (e - sh) / 2, r | (!exact) as u128, mode)
        }
    }
}

/// Rounds to an integral value in the same format (`cvt.rni.f32.f32`).
fn soft_round_int(fmt: Format, mode: Rnd, x: u64) -> u64 {
    match unpack(fmt, x) {
        Val::NaN => fmt.nan(),
        Val::Zero(_) | Val::Inf(_) => x,
        Val::Fin(sign, e, m) => {
            if e >= 0 {
                return x;
            }
            let sh = (-e) as u32;
            let (q, above, at, inexact) = if sh >= 128 {
                (0u128, false, false, true)
            } else {
                let q = m >> sh;
                let rem = m & ((1u128 << sh) - 1);
                let half = 1u128 << (sh - 1);
                (q, rem > half, rem == half, rem != 0)
            };
            let q = q + round_up(mode, sign, q & 1 == 1, above, at, inexact) as u128;
            if q == 0 {
                fmt.zero(sign)
            } else {
                round_pack(fmt, sign, 0, q, Rnd::Rn)
            }
        }
    }
}

// ---- the formats' own operations -------------------------------------------

fn fmt_of(ty: FTy) -> Format {
    match ty {
        FTy::F16 | FTy::F16x2 => F16,
        FTy::BF16 | FTy::BF16x2 => BF16,
        FTy::F32 => F32,
        FTy::F64 => F64,
    }
}

/// Flushes a subnormal to a zero of the same sign.
fn flush(fmt: Format, b: u64) -> u64 {
    if fmt.is_subnormal(b) {
        b & fmt.sign_bit()
    } else {
        b
    }
}

fn sat01(fmt: Format, b: u64) -> u64 {
    if fmt.is_nan(b) || fmt.sign(b) {
        // NaN and every negative value (and -0) clamp to +0.
        return 0;
    }
    let one = unpack_one(fmt);
    if b > one {
        one
    } else {
        b
    }
}

fn unpack_one(fmt: Format) -> u64 {
    (fmt.bias() as u64) << fmt.frac_bits
}

fn to_f64(fmt: Format, b: u64) -> f64 {
    if fmt == F64 {
        return f64::from_bits(b);
    }
    // Every narrower format's values are normal f64 values.
    match unpack(fmt, b) {
        Val::NaN => f64::NAN,
        Val::Zero(s) => {
            if s {
                -0.0
            } else {
                0.0
            }
        }
        Val::Inf(s) => {
            if s {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Val::Fin(s, e, m) => {
            let v = m as f64 * 2f64.powi(e);
            if s {
                -v
            } else {
                v
            }
        }
    }
}

fn from_f64(fmt: Format, v: f64, mode: Rnd) -> u64 {
    if fmt == F64 {
        return if v.is_nan() { F64.nan() } else { v.to_bits() };
    }
    convert_float(F64, fmt, v.to_bits(), mode)
}

/// Converts between float formats, rounding in `mode`; NaN becomes the
/// destination's canonical NaN.
pub(crate) fn convert_float(from: Format, to: Format, b: u64, mode: Rnd) -> u64 {
    match unpack(from, b) {
        Val::NaN => to.nan(),
        Val::Zero(s) => to.zero(s),
        Val::Inf(s) => to.inf(s),
        Val::Fin(s, e, m) => round_pack(to, s, e, m, mode),
    }
}

/// The NaN a float-to-float `cvt` gives for the NaN `b`, as the H200 does
/// (measured): conversions from f64, and widenings to f64, keep the sign and
/// the leading fraction bits and set the quiet bit; bf16 to f32 keeps every
/// bit (a shift); f32 to f16/bf16 and f16 to f32 give the canonical NaN.
pub(crate) fn convert_nan(from: Format, to: Format, b: u64) -> u64 {
    let keeps_payload = from == F64 || to == F64 || (from == BF16 && to == F32);
    if !keeps_payload || from == to {
        return to.nan();
    }
    let sign = if from.sign(b) { to.sign_bit() } else { 0 };
    let fraction = b & from.frac_mask();
    let fraction = if from.frac_bits > to.frac_bits {
        fraction >> (from.frac_bits - to.frac_bits)
    } else {
        fraction << (to.frac_bits - from.frac_bits)
    };
    let quiet = if from == BF16 && to == F32 { 0 } else { 1 << (to.frac_bits - 1) };
    sign | to.exp_mask() | fraction | quiet
}

/// `f64` → a narrower float's bits, as `cvt.rn` rounds it (once, straight
/// from f64; a NaN as [`convert_nan`] says).
pub(crate) fn f64_to(to: Format, v: f64) -> u64 {
    if v.is_nan() {
        return convert_nan(F64, to, v.to_bits());
    }
    convert_float(F64, to, v.to_bits(), Rnd::Rn)
}

/// An OCP 8-bit float format of `cvt` (`.e4m3x2`, `.e5m2x2` lanes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    /// 4 exponent bits, 3 fraction bits: no infinity, NaN only at `0x7f`
    /// (sign aside), largest finite 448.
    E4M3,
    /// 5 exponent bits, 2 fraction bits: binary16's top byte.
    E5M2,
}

/// The IEEE-style format whose codes are E4M3's for the value scaled by
/// 2⁻⁸: one more exponent bit (bias 15 instead of 7) moves E4M3's top
/// binade, which holds values, below the format's own infinity.
const E4M3_SCALED: Format = Format {
    exp_bits: 5,
    frac_bits: 3,
};
const E5M2: Format = Format {
    exp_bits: 5,
    frac_bits: 2,
};

impl Fp8 {
    /// The IEEE-style format to round in, the scale into it, the code of
    /// the largest finite magnitude.
    fn layout(self) -> (Format, i32, u64) {
        match self {
            Fp8::E4M3 => (E4M3_SCALED, -8, 0x7e),
            Fp8::E5M2 => (E5M2, 0, 0x7b),
        }
    }
}

/// `cvt.rn.satfinite` of one `from` value to `to`: rounded once to nearest
/// even, saturated to the largest finite magnitude (infinities too), any
/// NaN to `0x7f`.
pub fn to_fp8(from: Format, b: u64, to: Fp8) -> u64 {
    let (fmt, scale, max) = to.layout();
    let (sign, code) = match unpack(from, b) {
        Val::NaN => return 0x7f,
        Val::Zero(s) => return (s as u64) << 7,
        Val::Inf(s) => return (s as u64) << 7 | max,
        Val::Fin(s, e, m) => (s, round_pack(fmt, s, e + scale, m, Rnd::Rn)),
    };
    (sign as u64) << 7 | (code & (fmt.sign_bit() - 1)).min(max)
}

/// `cvt.rn.f16x2` of one FP8 value: exact; a NaN gives the canonical f16 NaN.
pub fn fp8_to_f16(b: u64, from: Fp8) -> u64 {
    let b = b & 0xff;
    let nan = match from {
        Fp8::E4M3 => b & 0x7f == 0x7f,
        Fp8::E5M2 => b & 0x7f > 0x7c,
    };
    if nan {
        return F16.nan();
    }
    let (fmt, scale, _) = from.layout();
    match unpack(fmt, (b & 0x80) << (fmt.width() - 8) | b & 0x7f) {
        Val::Zero(s) => F16.zero(s),
        Val::Inf(s) => F16.inf(s),
        Val::Fin(s, e, m) => round_pack(F16, s, e - scale, m, Rnd::Rn),
        Val::NaN => F16.nan(),
    }
}

/// `f32` → `f16` bits.
pub fn f32_to_f16(v: f32, mode: Rnd) -> u16 {
    convert_float(F32, F16, v.to_bits() as u64, mode) as u16
}

/// `f32` → `bf16` bits.
pub fn f32_to_bf16(v: f32, mode: Rnd) -> u16 {
    convert_float(F32, BF16, v.to_bits() as u64, mode) as u16
}

/// `f16` bits → `f32` (exact).
#[cfg(test)]
fn f16_to_f32(b: u16) -> f32 {
    f32::from_bits(convert_float(F16, F32, b as u64, Rnd::Rn) as u32)
}

fn host_rn(ty: FTy, op: FOp, a: u64, b: u64, c: u64) -> Option<u64> {
    match ty {
        FTy::F32 => {
            let (x, y, z) = (
                f32::from_bits(a as u32),
                f32::from_bits(b as u32),
                f32::from_bits(c as u32),
            );
            let r = match op {
                FOp::Add => x + y,
                FOp::Sub => x - y,
                FOp::Mul => x * y,
                FOp::Div => x / y,
                FOp::Fma => x.mul_add(y, z),
                FOp::Sqrt => x.sqrt(),
                FOp::Rcp => 1.0 / x,
                _ => return None,
            };
            Some(if r.is_nan() {
                F32.nan()
            } else {
                r.to_bits() as u64
            })
        }
        FTy::F64 => {
            let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
            let r = match op {
                FOp::Add => x + y,
                FOp::Sub => x - y,
                FOp::Mul => x * y,
                FOp::Div => x / y,
                FOp::Fma => x.mul_add(y, z),
                FOp::Sqrt => x.sqrt(),
                FOp::Rcp => 1.0 / x,
                _ => return None,
            };
            Some(if r.is_nan() { F64.nan() } else { r.to_bits() })
        }
        _ => None,
    }
}

fn min_max(fmt: Format, a: u64, b: u64, max: bool, nan: bool) -> u64 {
    let (an, bn) = (fmt.is_nan(a), fmt.is_nan(b));
    if an || bn {
        if nan || (an && bn) {
            return fmt.nan();
        }
        return if an { b } else { a };
    }
    let (x, y) = (to_f64(fmt, a), to_f64(fmt, b));
    if x == y {
        // +0.0 > -0.0.
        let a_neg = fmt.sign(a);
        let pick_a = if max { !a_neg } else { a_neg };
        return if pick_a { a } else { b };
    }
    if (x < y) != max {
        a
    } else {
        b
    }
}

/// One lane of a float operation.
#[allow(clippy::too_many_arguments)] // the instruction's modifiers and operands
fn lane(op: FOp, ty: FTy, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    let fmt = fmt_of(ty);
    // Only f32 has a flush-to-zero mode; f16/bf16 instructions keep
    // subnormals, f64 ones ignore the modifier where they accept it.
    let ftz = ftz && ty == FTy::F32;
    let (a, b, c) = if ftz {
        (flush(fmt, a), flush(fmt, b), flush(fmt, c))
    } else {
        (a, b, c)
    };
    let mode = match rnd {
        Rnd::Default => Rnd::Rn,
        r => r,
    };
    let r = match op {
        FOp::Neg => return a ^ fmt.sign_bit(),
        FOp::Abs => return fmt.abs(a),
        // Copy the sign of `a` onto `b`.
        FOp::Copysign => return (b & !fmt.sign_bit()) | (a & fmt.sign_bit()),
        FOp::Min => min_max(fmt, a, b, false, false),
        FOp::Max => min_max(fmt, a, b, true, false),
        FOp::MinNaN => min_max(fmt, a, b, false, true),
        FOp::MaxNaN => min_max(fmt, a, b, true, true),
        FOp::Add | FOp::Sub | FOp::Mul | FOp::Div | FOp::Fma | FOp::Sqrt | FOp::Rcp => {
            let host = if mode == Rnd::Rn {
                host_rn(ty, op, a, b, c)
            } else {
                None
            };
            match host {
                Some(r) => r,
                None => match op {
                    FOp::Add => soft_add(fmt, mode, a, b),
                    FOp::Sub => soft_add(fmt, mode, a, b ^ fmt.sign_bit()),
                    FOp::Mul => soft_mul(fmt, mode, a, b),
                    FOp::Div => soft_div(fmt, mode, a, b),
                    FOp::Fma => soft_fma(fmt, mode, a, b, c),
                    FOp::Sqrt => soft_sqrt(fmt, mode, a),
                    _ => soft_div(fmt, mode, unpack_one(fmt), a),
                },
            }
        }
        FOp::DivFull => host_rn(FTy::F32, FOp::Div, a, b, 0).unwrap_or(fmt.nan()),
        FOp::DivApprox => {
            // `a * (1/b)` within 2 ulp, except that a divisor above 2^126
            // in magnitude gives 0 (NaN for an infinite dividend), as the
            // PTX ISA documents; modelled as the correctly rounded quotient.
            let huge = to_f64(fmt, b).abs() > 2f64.powi(126)
                && !fmt.is_nan(b)
                && to_f64(fmt, b).is_finite();
            if ty == FTy::F32 && huge {
                if matches!(unpack(fmt, a), Val::Inf(_)) || fmt.is_nan(a) {
                    fmt.nan()
                } else {
                    fmt.zero(fmt.sign(a) ^ fmt.sign(b))
                }
            } else {
                from_f64(fmt, to_f64(fmt, a) / to_f64(fmt, b), Rnd::Rn)
            }
        }
        FOp::RcpApprox | FOp::RcpApproxF64 => from_f64(fmt, 1.0 / to_f64(fmt, a), Rnd::Rn),
        FOp::SqrtApprox => from_f64(fmt, to_f64(fmt, a).sqrt(), Rnd::Rn),
        FOp::Rsqrt | FOp::RsqrtApproxF64 => from_f64(fmt, 1.0 / to_f64(fmt, a).sqrt(), Rnd::Rn),
        FOp::Sin => {
            let x = to_f64(fmt, a);
            from_f64(
                fmt,
                if x.is_infinite() { f64::NAN } else { x.sin() },
                Rnd::Rn,
            )
        }
        FOp::Cos => {
            let x = to_f64(fmt, a);
            from_f64(
                fmt,
                if x.is_infinite() { f64::NAN } else { x.cos() },
                Rnd::Rn,
            )
        }
        FOp::Lg2 => from_f64(fmt, to_f64(fmt, a).log2(), Rnd::Rn),
        FOp::Ex2 => from_f64(fmt, to_f64(fmt, a).exp2(), Rnd::Rn),
        FOp::Tanh => from_f64(fmt, to_f64(fmt, a).tanh(), Rnd::Rn),
    };
    let r = if ftz { flush(fmt, r) } else { r };
    if sat {
        sat01(fmt, r)
    } else {
        r
    }
}

/// Executes a float operation on register values.
#[allow(clippy::too_many_arguments)] // the instruction's modifiers and operands
pub fn float_op(op: FOp, ty: FTy, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    match ty {
        FTy::F16x2 | FTy::BF16x2 => {
            let lo = lane(op, ty, rnd, ftz, sat, a & 0xffff, b & 0xffff, c & 0xffff);
            let hi = lane(
                op,
                ty,
                rnd,
                ftz,
                sat,
                (a >> 16) & 0xffff,
                (b >> 16) & 0xffff,
                (c >> 16) & 0xffff,
            );
            (hi & 0xffff) << 16 | (lo & 0xffff)
        }
        _ => lane(op, ty, rnd, ftz, sat, a, b, c) & crate::program::mask(fmt_of(ty).width()),
    }
}

/// A float comparison.
pub fn float_cmp(cmp: Cmp, ty: FTy, ftz: bool, a: u64, b: u64) -> bool {
    let fmt = fmt_of(ty);
    let (a, b) = if ftz && ty == FTy::F32 {
        (flush(fmt, a), flush(fmt, b))
    } else {
        (a, b)
    };
    let unordered = fmt.is_nan(a) || fmt.is_nan(b);
    let (x, y) = (to_f64(fmt, a), to_f64(fmt, b));
    match cmp {
        Cmp::Eq => !unordered && x == y,
        Cmp::Ne => !unordered && x != y,
        Cmp::Lt => !unordered && x < y,
        Cmp::Le => !unordered && x <= y,
        Cmp::Gt => !unordered && x > y,
        Cmp::Ge => !unordered && x >= y,
        Cmp::Equ => unordered || x == y,
        Cmp::Neu => unordered || x != y,
        Cmp::Ltu => unordered || x < y,
        Cmp::Leu => unordered || x <= y,
        Cmp::Gtu => unordered || x > y,
        Cmp::Geu => unordered || x >= y,
        Cmp::Num => !unordered,
        Cmp::Nan => unordered,
    }
}

/// `testp`.
pub fn float_test(class: TestClass, ty: FTy, a: u64) -> bool {
    let fmt = fmt_of(ty);
    let v = unpack(fmt, a);
    match class {
        TestClass::Finite => matches!(v, Val::Zero(_) | Val::Fin(..)),
        TestClass::Infinite => matches!(v, Val::Inf(_)),
        TestClass::Number => !matches!(v, Val::NaN),
        TestClass::NotANumber => matches!(v, Val::NaN),
        TestClass::Normal => matches!(v, Val::Fin(..)) && !fmt.is_subnormal(a),
        TestClass::Subnormal => fmt.is_subnormal(a),
    }
}

/// Whether a value of `ty` is negative (for `slct.f32`), NaN counting as
/// not negative.
pub fn float_is_negative(ty: FTy, ftz: bool, a: u64) -> bool {
    let fmt = fmt_of(ty);
    let a = if ftz { flush(fmt, a) } else { a };
    !fmt.is_nan(a) && to_f64(fmt, a) < 0.0
}

// ---- conversions -------------------------------------------------------------

/// A `cvt` source or destination, as the conversion sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumTy {
    Int {
        bits: u8,
        signed: bool,
    },
    Float(Format),
    /// f32 storage with a 10-bit mantissa.
    Tf32,
}

fn int_range(bits: u8, signed: bool) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// Float → integer: round in `mode` (default toward zero), saturate to the
/// destination's range. NaN gives what an H100 gives (`cvt.rzi` of each
/// source and width, measured): 0 from f32 or a half (f16, bf16) to at most
/// 32 bits; from f64, or to 64 bits, the destination's sign bit alone
/// (0x80, 0x8000, …), for unsigned destinations too.
fn float_to_int(fmt: Format, b: u64, mode: Rnd, bits: u8, signed: bool) -> u64 {
    let (lo, hi) = int_range(bits, signed);
    let v: i128 = match unpack(fmt, b) {
        Val::NaN if fmt == F64 || bits == 64 => return 1u64 << (bits - 1),
        Val::NaN | Val::Zero(_) => 0,
        Val::Inf(s) => {
            if s {
                lo
            } else {
                hi
            }
        }
        Val::Fin(sign, e, m) => {
            let mag: u128 = if e >= 0 {
                if e >= 100 {
                    u128::MAX
                } else {
                    m.checked_shl(e as u32)
                        .filter(|x| x >> e == m)
                        .unwrap_or(u128::MAX)
                }
            } else {
                let sh = (-e) as u32;
                let (q, above, at, inexact) = if sh >= 128 {
                    (0u128, false, false, true)
                } else {
                    let q = m >> sh;
                    let rem = m & ((1u128 << sh) - 1);
                    let half = 1u128 << (sh - 1);
                    (q, rem > half, rem == half, rem != 0)
                };
                let mode = if mode == Rnd::Default { Rnd::Rzi } else { mode };
                q + round_up(mode, sign, q & 1 == 1, above, at, inexact) as u128
            };
            let mag = mag.min(1u128 << 100) as i128;
            if sign {
                -mag
            } else {
                mag
            }
        }
    };
    (v.clamp(lo, hi) as u64) & crate::program::mask(bits as u32)
}

/// Integer → float, rounded in `mode` (default nearest-even).
fn int_to_float(fmt: Format, v: u64, bits: u8, signed: bool, mode: Rnd) -> u64 {
    let (sign, mag) = if signed {
        let x = ((v << (64 - bits)) as i64) >> (64 - bits);
        (x < 0, x.unsigned_abs())
    } else {
        (false, v & crate::program::mask(bits as u32))
    };
    if mag == 0 {
        return fmt.zero(false);
    }
    let mode = match mode {
        Rnd::Default => Rnd::Rn,
        r => r,
    };
    round_pack(fmt, sign, 0, mag as u128, mode)
}

/// `cvt` of one value. `ftz` flushes f32 subnormal sources and results;
/// `sat` clamps a float result to [0, 1] (an integer result to the
/// destination range); `relu` clamps negative results to +0 and NaN to the
/// canonical NaN; `satfinite` turns infinities into the largest finite value
/// and NaN into NaN.
#[allow(clippy::too_many_arguments)] // the instruction's modifiers and operand
pub fn convert(
    dst: NumTy,
    src: NumTy,
    mode: Rnd,
    ftz: bool,
    sat: bool,
    relu: bool,
    satfinite: bool,
    v: u64,
) -> u64 {
    // A tf32 source is an f32 whose low fraction bits are zero.
    let src = if src == NumTy::Tf32 {
        NumTy::Float(F32)
    } else {
        src
    };
    match (dst, src) {
        (
            NumTy::Int {
                bits: db,
                signed: ds,
            },
            NumTy::Int {
                bits: sb,
                signed: ss,
            },
        ) => {
            let x: i128 = if ss {
                (((v << (64 - sb)) as i64) >> (64 - sb)) as i128
            } else {
                (v & crate::program::mask(sb as u32)) as i128
            };
            if sat {
                let (lo, hi) = int_range(db, ds);
                (x.clamp(lo, hi) as u64) & crate::program::mask(db as u32)
            } else {
                (x as u64) & crate::program::mask(db as u32)
            }
        }
        (NumTy::Int { bits, signed }, NumTy::Float(f)) => {
            let v = if ftz && f == F32 { flush(f, v) } else { v };
            float_to_int(f, v, mode, bits, signed)
        }
        (NumTy::Float(f), NumTy::Int { bits, signed }) => {
            let r = int_to_float(f, v, bits, signed, mode);
            let r = if sat { sat01(f, r) } else { r };
            finish_float(f, r, ftz, relu, satfinite)
        }
        (NumTy::Float(to), NumTy::Float(from)) => {
            let v = if ftz && from == F32 {
                flush(from, v)
            } else {
                v
            };
            let r = match mode {
                _ if from != to && from.is_nan(v) => convert_nan(from, to, v),
                Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi => {
                    let inter = soft_round_int(from, mode, v);
                    convert_float(from, to, inter, Rnd::Rn)
                }
                Rnd::Default if from == to => {
                    if from.is_nan(v) {
                        to.nan()
                    } else {
                        v
                    }
                }
                Rnd::Default => convert_float(from, to, v, Rnd::Rn),
                m => convert_float(from, to, v, m),
            };
            let r = if sat { sat01(to, r) } else { r };
            let r = if ftz && to == F32 { flush(to, r) } else { r };
            finish_float(to, r, false, relu, satfinite)
        }
        (NumTy::Tf32, NumTy::Float(from)) => {
            // tf32 keeps f32's range and the top 10 fraction bits.
            let v = if from == F32 {
                v
            } else {
                convert_float(from, F32, v, Rnd::Rn)
            };
            let tf = Format {
                exp_bits: 8,
                frac_bits: 10,
            };
            let mode = if mode == Rnd::Default { Rnd::Rna } else { mode };
            let r = match unpack(F32, v) {
                Val::NaN => return F32.nan(),
                Val::Zero(_) | Val::Inf(_) => v,
                Val::Fin(s, e, m) => {
                    let r = round_pack(tf, s, e, m, mode);
                    convert_float(tf, F32, r, Rnd::Rn)
                }
            };
            finish_float(F32, r, false, relu, satfinite)
        }
        (NumTy::Tf32, _) | (_, NumTy::Tf32) => v,
    }
}

fn finish_float(f: Format, r: u64, ftz: bool, relu: bool, satfinite: bool) -> u64 {
    let mut r = if ftz && f == F32 { flush(f, r) } else { r };
    if relu {
        if f.is_nan(r) {
            r = f.nan();
        } else if f.sign(r) {
            r = 0;
        }
    }
    if satfinite && !f.is_nan(r) && f.abs(r) == f.inf(false) {
        r = f.max_finite(f.sign(r));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add32(mode: Rnd, a: f32, b: f32) -> f32 {
        f32::from_bits(float_op(
            FOp::Add,
            FTy::F32,
            mode,
            false,
            false,
            a.to_bits() as u64,
            b.to_bits() as u64,
            0,
        ) as u32)
    }

    #[test]
    fn directed_rounding_of_a_tiny_addend() {
        let tiny = f32::from_bits(1); // 2^-149
        assert_eq!(add32(Rnd::Rn, 1.0, -tiny), 1.0);
        assert_eq!(add32(Rnd::Rz, 1.0, -tiny), f32::from_bits(0x3F7F_FFFF));
        assert_eq!(add32(Rnd::Rm, 1.0, -tiny), f32::from_bits(0x3F7F_FFFF));
        assert_eq!(add32(Rnd::Rp, 1.0, tiny), f32::from_bits(0x3F80_0001));
        assert_eq!(add32(Rnd::Rp, 1.0, -tiny), 1.0);
        assert_eq!(add32(Rnd::Rm, 1.0, -1.0).to_bits(), 0x8000_0000);
        assert_eq!(add32(Rnd::Rz, 1.0, -1.0).to_bits(), 0);
    }

    #[test]
    fn soft_float_agrees_with_the_host_in_round_to_nearest() {
        let vals: Vec<u64> = vec![
            0x3FF0_0000_0000_0000,
            0x3FF0_0000_0000_0001,
            0x0000_0000_0000_0001,
            0x000F_FFFF_FFFF_FFFF,
            0x7FEF_FFFF_FFFF_FFFF,
            0xC009_21FB_5444_2D18,
            0x4005_BF0A_8B14_5769,
            0x8010_0000_0000_0000,
            0x3CA0_0000_0000_0000,
        ];
        for &a in &vals {
            for &b in &vals {
                for &c in &vals {
                    let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
                    assert_eq!(soft_add(F64, Rnd::Rn, a, b), (x + y).to_bits(), "{x} + {y}");
                    assert_eq!(soft_mul(F64, Rnd::Rn, a, b), (x * y).to_bits(), "{x} * {y}");
                    assert_eq!(soft_div(F64, Rnd::Rn, a, b), (x / y).to_bits(), "{x} / {y}");
                    assert_eq!(
                        soft_fma(F64, Rnd::Rn, a, b, c),
                        x.mul_add(y, z).to_bits(),
                        "fma({x}, {y}, {z})"
                    );
                }
                let x = f64::from_bits(a);
                if x >= 0.0 {
                    assert_eq!(soft_sqrt(F64, Rnd::Rn, a), x.sqrt().to_bits(), "sqrt({x})");
                }
            }
        }
    }

    #[test]
    fn directed_modes_bracket_the_exact_result() {
        // 1/3 is inexact: RZ and RM equal (positive), RP is one ulp above.
        let one = 1f64.to_bits();
        let three = 3f64.to_bits();
        let rz = soft_div(F64, Rnd::Rz, one, three);
        let rm = soft_div(F64, Rnd::Rm, one, three);
        let rp = soft_div(F64, Rnd::Rp, one, three);
        assert_eq!(rz, rm);
        assert_eq!(rp, rz + 1);
        // Overflow: RZ stops at MAX, RN goes to infinity.
        let max = f64::MAX.to_bits();
        assert_eq!(soft_add(F64, Rnd::Rz, max, max), max);
        assert_eq!(soft_add(F64, Rnd::Rn, max, max), f64::INFINITY.to_bits());
        assert_eq!(soft_add(F64, Rnd::Rm, max, max), max);
        assert_eq!(
            soft_mul(F64, Rnd::Rp, (-f64::MAX).to_bits(), 2f64.to_bits()),
            (-f64::MAX).to_bits()
        );
    }

    /// NaN to an integer, pair by pair, as an H100 converts it (`cvt.rzi`
    /// of each pair in a CUDA C++ probe, every pair below measured): 0 from
    /// f32, f16 and bf16 to 8–32 bits, the sign bit alone from f64 or to 64
    /// bits, signed or not. Every other value rounds toward zero and
    /// saturates there, as Rust's `as` does.
    #[test]
    fn nan_to_integer_as_the_gpu_gives_it() {
        let nan32 = f32::NAN.to_bits() as u64;
        let nan64 = f64::NAN.to_bits();
        let nan16 = 0x7e00u64;
        let cvt = |src: NumTy, bits: u8, signed: bool, v: u64| {
            convert(NumTy::Int { bits, signed }, src, Rnd::Rzi, false, false, false, false, v)
        };
        for signed in [true, false] {
            assert_eq!(cvt(NumTy::Float(F32), 8, signed, nan32), 0);
            assert_eq!(cvt(NumTy::Float(F32), 16, signed, nan32), 0);
            assert_eq!(cvt(NumTy::Float(F32), 32, signed, nan32), 0);
            assert_eq!(cvt(NumTy::Float(F16), 32, signed, nan16), 0);
            assert_eq!(cvt(NumTy::Float(F32), 64, signed, nan32), 0x8000_0000_0000_0000);
            assert_eq!(cvt(NumTy::Float(F16), 64, signed, nan16), 0x8000_0000_0000_0000);
            assert_eq!(cvt(NumTy::Float(BF16), 32, signed, 0x7fc0), 0);
            assert_eq!(cvt(NumTy::Float(BF16), 64, signed, 0x7fc0), 0x8000_0000_0000_0000);
            assert_eq!(cvt(NumTy::Float(F64), 8, signed, nan64), 0x80);
            assert_eq!(cvt(NumTy::Float(F64), 16, signed, nan64), 0x8000);
            assert_eq!(cvt(NumTy::Float(F64), 32, signed, nan64), 0x8000_0000);
            assert_eq!(cvt(NumTy::Float(F64), 64, signed, nan64), 0x8000_0000_0000_0000);
            assert_eq!(cvt(NumTy::Float(F64), 64, signed, nan64 | 1 << 63), 0x8000_0000_0000_0000);
        }
        // Not NaN: saturation, whatever the pair.
        assert_eq!(cvt(NumTy::Float(F64), 32, false, (-1e30f64).to_bits()), 0);
        assert_eq!(cvt(NumTy::Float(F64), 64, false, 1.9e19f64.to_bits()), u64::MAX);
        assert_eq!(cvt(NumTy::Float(F32), 64, true, f32::NEG_INFINITY.to_bits() as u64), 1 << 63);
    }

    #[test]
    fn conversions_round_and_saturate() {
        let f = |x: f32| x.to_bits() as u64;
        let to_s32 = |mode, x: f32| {
            convert(
                NumTy::Int {
                    bits: 32,
                    signed: true,
                },
                NumTy::Float(F32),
                mode,
                false,
                false,
                false,
                false,
                f(x),
            ) as u32 as i32
        };
        assert_eq!(to_s32(Rnd::Rni, 2.5), 2);
        assert_eq!(to_s32(Rnd::Rni, 3.5), 4);
        assert_eq!(to_s32(Rnd::Rmi, -0.5), -1);
        assert_eq!(to_s32(Rnd::Rpi, -0.5), 0);
        assert_eq!(to_s32(Rnd::Rzi, 1e20), i32::MAX);
        assert_eq!(to_s32(Rnd::Rzi, -1e20), i32::MIN);
        assert_eq!(to_s32(Rnd::Rzi, f32::NAN), 0);
        assert_eq!(to_s32(Rnd::Rzi, -f32::NAN), 0);
        let to_u8 = |x: f32| {
            convert(
                NumTy::Int {
                    bits: 8,
                    signed: false,
                },
                NumTy::Float(F32),
                Rnd::Rzi,
                false,
                false,
                false,
                false,
                f(x),
            )
        };
        assert_eq!(to_u8(-3.0), 0);
        assert_eq!(to_u8(300.0), 255);
        // u64::MAX to f32 in every mode.
        let from_u64 = |mode| {
            convert(
                NumTy::Float(F32),
                NumTy::Int {
                    bits: 64,
                    signed: false,
                },
                mode,
                false,
                false,
                false,
                false,
                u64::MAX,
            ) as u32
        };
        assert_eq!(f32::from_bits(from_u64(Rnd::Rn)), 18446744073709551616.0);
        assert_eq!(from_u64(Rnd::Rz), 0x5F7F_FFFF);
        // f64 → f32 directed, and an f32 rounded to an integral f32.
        let third = (1.0f64 / 3.0).to_bits();
        let rz = convert(
            NumTy::Float(F32),
            NumTy::Float(F64),
            Rnd::Rz,
            false,
            false,
            false,
            false,
            third,
        );
        let rp = convert(
            NumTy::Float(F32),
            NumTy::Float(F64),
            Rnd::Rp,
            false,
            false,
            false,
            false,
            third,
        );
        assert_eq!(rp, rz + 1);
        let neg_half = convert(
            NumTy::Float(F32),
            NumTy::Float(F32),
            Rnd::Rni,
            false,
            false,
            false,
            false,
            f(-0.5),
        );
        assert_eq!(neg_half, 0x8000_0000);
        // .sat clamps and sends NaN to +0.
        let sat = convert(
            NumTy::Float(F32),
            NumTy::Float(F32),
            Rnd::Default,
            false,
            true,
            false,
            false,
            F32.nan(),
        );
        assert_eq!(sat, 0);
        // FP8: saturation, ties, NaN, and exact widening.
        let f32b = |x: f32| x.to_bits() as u64;
        assert_eq!(to_fp8(F32, f32b(448.0), Fp8::E4M3), 0x7e);
        assert_eq!(to_fp8(F32, f32b(464.0), Fp8::E4M3), 0x7e);
        assert_eq!(to_fp8(F32, f32b(-1e9), Fp8::E4M3), 0xfe);
        assert_eq!(to_fp8(F32, f32b(f32::INFINITY), Fp8::E5M2), 0x7b);
        assert_eq!(to_fp8(F32, f32b(-f32::NAN), Fp8::E5M2), 0x7f);
        assert_eq!(to_fp8(F32, f32b(1.0625), Fp8::E4M3), 0x38);
        assert_eq!(to_fp8(F32, f32b(-0.0), Fp8::E4M3), 0x80);
        assert_eq!(to_fp8(F32, f32b(2f32.powi(-9)), Fp8::E4M3), 0x01);
        assert_eq!(to_fp8(F16, 0xc200, Fp8::E5M2), 0xc2);
        assert_eq!(fp8_to_f16(0x7e, Fp8::E4M3), 0x5f00); // 448
        assert_eq!(fp8_to_f16(0x01, Fp8::E4M3), 0x1800); // 2^-9
        assert_eq!(fp8_to_f16(0xff, Fp8::E4M3), 0x7fff);
        assert_eq!(fp8_to_f16(0xfc, Fp8::E5M2), 0xfc00);
        for b in 0..=255u64 {
            for fmt in [Fp8::E4M3, Fp8::E5M2] {
                let h = fp8_to_f16(b, fmt);
                if !F16.is_nan(h) && h & 0x7fff != 0x7c00 {
                    assert_eq!(to_fp8(F16, h, fmt), b, "{fmt:?} {b:#x}");
                }
            }
        }
        // f16 round trip of the largest finite half, and overflow.
        assert_eq!(f32_to_f16(65504.0, Rnd::Rn), 0x7BFF);
        assert_eq!(f32_to_f16(65520.0, Rnd::Rn), 0x7C00);
        assert_eq!(f32_to_f16(65520.0, Rnd::Rz), 0x7BFF);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }

    #[test]
    fn min_max_nan_and_signed_zero() {
        let f = |x: f32| x.to_bits() as u64;
        let op = |o, a, b| float_op(o, FTy::F32, Rnd::Default, false, false, a, b, 0);
        assert_eq!(op(FOp::Min, f(0.0), f(-0.0)), f(-0.0));
        assert_eq!(op(FOp::Max, f(-0.0), f(0.0)), f(0.0));
        assert_eq!(op(FOp::Min, F32.nan(), f(2.0)), f(2.0));
        assert_eq!(op(FOp::MinNaN, 0x7FC0_0001, f(2.0)), 0x7FFF_FFFF);
        assert_eq!(op(FOp::Add, 0x7FC0_0001, f(2.0)), 0x7FFF_FFFF);
        assert_eq!(op(FOp::Neg, 0x7FC0_0001, 0), 0xFFC0_0001);
    }
}
