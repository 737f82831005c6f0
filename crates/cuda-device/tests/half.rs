//! The CPU model of `cuda_device::half` against an independent oracle: the
//! formats decoded with `powi`, and rounding by searching the sorted list of
//! every finite value for the nearest one (ties to the even bit pattern).

use cuda_device::half::{bf16, bf16x2, f16, f16x2, Rounding};

/// A format for the oracle: fraction bits and exponent bias.
#[derive(Clone, Copy)]
struct Fmt {
    frac: i32,
    bias: i32,
    exp_mask: u16,
}
const F16: Fmt = Fmt { frac: 10, bias: 15, exp_mask: 0x7c00 };
const BF16: Fmt = Fmt { frac: 7, bias: 127, exp_mask: 0x7f80 };

/// The value of a finite pattern, by the textbook formula.
fn decode(fmt: Fmt, bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((bits & fmt.exp_mask) >> fmt.frac) as i32;
    let f = (bits & ((1 << fmt.frac) - 1)) as f64 / 2f64.powi(fmt.frac);
    if e == 0 {
        sign * f * 2f64.powi(1 - fmt.bias)
    } else {
        sign * (1.0 + f) * 2f64.powi(e - fmt.bias)
    }
}

/// Every positive finite pattern in increasing order (bits increase with value).
fn positives(fmt: Fmt) -> Vec<(u16, f64)> {
    (0..fmt.exp_mask).map(|b| (b, decode(fmt, b))).collect()
}

/// The nearest pattern to `x` (an exact value), ties to even; overflow to
/// infinity past MAX plus half an ulp.
fn oracle(fmt: Fmt, table: &[(u16, f64)], x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let m = x.abs();
    let (max_bits, max) = table[table.len() - 1];
    let ulp = max - table[table.len() - 2].1;
    if m >= max + ulp / 2.0 {
        return sign | fmt.exp_mask;
    }
    let i = table.partition_point(|&(_, v)| v <= m);
    let (lo_bits, lo) = table[i - 1];
    if lo == m || i == table.len() {
        return sign | if i == table.len() { max_bits } else { lo_bits };
    }
    let (hi_bits, hi) = table[i];
    let pick = if m - lo < hi - m {
        lo_bits
    } else if m - lo > hi - m {
        hi_bits
    } else if lo_bits & 1 == 0 {
        lo_bits
    } else {
        hi_bits
    };
    sign | pick
}

#[test]
fn every_f16_round_trips_through_f32_and_f64() {
    for bits in 0..=u16::MAX {
        let h = f16::from_bits(bits);
        if h.is_nan() {
            assert!(h.to_f32().is_nan() && h.to_f64().is_nan(), "{bits:#06x}");
            assert_eq!(f16::from_f32(h.to_f32()).to_bits(), 0x7fff, "canonical NaN");
            continue;
        }
        let exact = match (h.is_infinite(), h.is_sign_negative()) {
            (true, true) => f64::NEG_INFINITY,
            (true, false) => f64::INFINITY,
            _ => decode(F16, bits),
        };
        assert_eq!(h.to_f64().to_bits(), exact.to_bits(), "{bits:#06x} to f64");
        assert_eq!((h.to_f32() as f64).to_bits(), exact.to_bits(), "{bits:#06x} to f32");
        assert_eq!(f16::from_f32(h.to_f32()).to_bits(), bits);
        assert_eq!(f16::from_f64(h.to_f64()).to_bits(), bits);
    }
}

#[test]
fn every_bf16_round_trips_through_f32_and_f64() {
    for bits in 0..=u16::MAX {
        let h = bf16::from_bits(bits);
        if h.is_nan() {
            assert!(h.to_f32().is_nan());
            assert_eq!(bf16::from_f32(h.to_f32()).to_bits(), 0x7fff);
            continue;
        }
        if h.is_finite() {
            assert_eq!(h.to_f64(), decode(BF16, bits), "{bits:#06x}");
        }
        assert_eq!(bf16::from_f32(h.to_f32()).to_bits(), bits);
        assert_eq!(bf16::from_f64(h.to_f64()).to_bits(), bits);
    }
}

/// Every halfway point between neighbours (and the f32/f64 values just
/// either side of it), for both formats and both source widths.
#[test]
fn halfway_cases_round_to_even_and_neighbours_round_to_nearest() {
    for (fmt, from32, from64) in [
        (F16, (|x| f16::from_f32(x).to_bits()) as fn(f32) -> u16, (|x| f16::from_f64(x).to_bits()) as fn(f64) -> u16),
        (BF16, |x| bf16::from_f32(x).to_bits(), |x| bf16::from_f64(x).to_bits()),
    ] {
        let table = positives(fmt);
        for w in table.windows(2) {
            let ((lo_bits, lo), (hi_bits, hi)) = (w[0], w[1]);
            let mid = (lo + hi) / 2.0;
            let even = if lo_bits & 1 == 0 { lo_bits } else { hi_bits };
            for sign in [1.0, -1.0] {
                let s = if sign < 0.0 { 0x8000 } else { 0 };
                let m = sign * mid;
                assert_eq!(from64(m), s | even, "{m:e}");
                assert_eq!(from64(next_toward_zero(m)), s | lo_bits, "below {m:e}");
                assert_eq!(from64(next_away(m)), s | hi_bits, "above {m:e}");
                let m32 = m as f32;
                if m32 as f64 == m {
                    assert_eq!(from32(m32), s | even, "{m:e} f32");
                    assert_eq!(from32(f32::from_bits(m32.to_bits() - 1)), s | lo_bits);
                    assert_eq!(from32(f32::from_bits(m32.to_bits() + 1)), s | hi_bits);
                }
            }
        }
    }
}

fn next_toward_zero(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}
fn next_away(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}

#[test]
fn boundaries_of_f32_to_f16() {
    assert_eq!(f16::from_f32(65504.0), f16::MAX);
    assert_eq!(f16::from_f32(65519.996), f16::MAX); // just below the overflow threshold
    assert_eq!(f16::from_f32(65520.0).to_bits(), 0x7c00); // MAX + ulp/2 ties to infinity
    assert_eq!(f16::from_f32(-1e9).to_bits(), 0xfc00);
    assert_eq!(f16::from_f32(2f32.powi(-24)), f16::MIN_POSITIVE_SUBNORMAL);
    assert_eq!(f16::from_f32(2f32.powi(-25)).to_bits(), 0); // half the smallest subnormal: to even, 0
    assert_eq!(f16::from_f32(f32::from_bits(2f32.powi(-25).to_bits() + 1)).to_bits(), 1);
    assert_eq!(f16::from_f32(-2f32.powi(-26)).to_bits(), 0x8000);
    assert_eq!(f16::from_f32(2f32.powi(-14)), f16::MIN_POSITIVE);
    assert_eq!(f16::from_f32(1.0 + 2f32.powi(-10)).to_bits() - f16::ONE.to_bits(), 1);
    assert_eq!(f16::from_f32(-0.0).to_bits(), 0x8000);
    assert_eq!(f16::from_f32(f32::INFINITY), f16::INFINITY);
    assert_eq!(f16::from_f32(f32::NAN).to_bits(), 0x7fff);
    assert!(f16::from_f32(f32::NAN).is_nan());
    // Directed rounding.
    let third = 1.0f32 / 3.0;
    let rz = f16::from_f32_rounded(third, Rounding::TowardZero).to_bits();
    assert_eq!(f16::from_f32_rounded(third, Rounding::Down).to_bits(), rz);
    assert_eq!(f16::from_f32_rounded(third, Rounding::Up).to_bits(), rz + 1);
    assert_eq!(f16::from_f32_rounded(-third, Rounding::Down).to_bits(), 0x8000 | (rz + 1));
    assert_eq!(f16::from_f32_rounded(1e6, Rounding::TowardZero), f16::MAX);
    assert_eq!(f16::from_f32_rounded(1e6, Rounding::Down), f16::MAX);
    assert_eq!(f16::from_f32_rounded(-1e6, Rounding::Down), f16::NEG_INFINITY);
    assert_eq!(f16::from_f32_rounded(-1e6, Rounding::Up), f16::MIN);
    assert_eq!(f16::from_f32_rounded(1e-30, Rounding::Up), f16::MIN_POSITIVE_SUBNORMAL);
    assert_eq!(bf16::from_f32_rounded(f32::MAX, Rounding::TowardZero), bf16::MAX);
    assert_eq!(bf16::from_f32(f32::MAX), bf16::INFINITY);
    assert_eq!(bf16::from_f32_rounded(f32::from_bits(1), Rounding::Up), bf16::MIN_POSITIVE_SUBNORMAL);
}

/// f64 → f16 is one rounding: a value just above a halfway point that f32
/// would round onto the halfway point (and then to even) goes up.
#[test]
fn f64_to_f16_does_not_round_twice() {
    let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    assert_eq!((x as f32) as f64, 1.0 + 2f64.powi(-11));
    assert_eq!(f16::from_f32(x as f32), f16::ONE);
    assert_eq!(f16::from_f64(x).to_bits(), 0x3c01);
    let y = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
    assert_eq!(bf16::from_f64(y).to_bits(), 0x3f81);
    assert_eq!(bf16::from_f32(y as f32), bf16::ONE);
}

/// A deterministic stream of patterns: a few of each kind, then spread.
fn samples(fmt: Fmt, n: usize) -> Vec<u16> {
    let mut v: Vec<u16> = vec![0, 0x8000, 1, 0x8001, fmt.exp_mask - 1, 0x8000 | (fmt.exp_mask - 1), 1 << fmt.frac, 0x8000 | 1 << fmt.frac];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    while v.len() < n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let bits = (state >> 20) as u16;
        if bits & 0x7fff < fmt.exp_mask {
            v.push(bits);
        }
    }
    v
}

#[test]
fn arithmetic_is_correctly_rounded() {
    for fmt in [F16, BF16] {
        let table = positives(fmt);
        let values = samples(fmt, 300);
        for &a in &values {
            for &b in &values {
                let (x, y) = (decode(fmt, a), decode(fmt, b));
                let (sum, product, quotient) = if fmt.frac == 10 {
                    let (p, q) = (f16::from_bits(a), f16::from_bits(b));
                    ((p + q).to_bits(), (p * q).to_bits(), (p / q).to_bits())
                } else {
                    let (p, q) = (bf16::from_bits(a), bf16::from_bits(b));
                    ((p + q).to_bits(), (p * q).to_bits(), (p / q).to_bits())
                };
                // f16 sums are exact in f64; bf16 sums may not be, but then
                // one operand is below half an ulp of the other's and the
                // f64 sum rounds to the same pattern (checked separately
                // below with exact integers for fma).
                if x + y != 0.0 {
                    assert_eq!(sum, oracle(fmt, &table, x + y), "{a:#06x} + {b:#06x}");
                } else {
                    let both_negative = a & 0x8000 != 0 && b & 0x8000 != 0;
                    assert_eq!(sum, if both_negative { 0x8000 } else { 0 }, "{a:#06x} + {b:#06x}");
                }
                let p = x * y; // exact: at most 22 significant bits
                let expected = if p == 0.0 { (a ^ b) & 0x8000 } else { oracle(fmt, &table, p) };
                assert_eq!(product, expected, "{a:#06x} * {b:#06x}");
                if y == 0.0 {
                    if x == 0.0 {
                        assert_eq!(quotient, 0x7fff);
                    } else {
                        assert_eq!(quotient, (a ^ b) & 0x8000 | fmt.exp_mask);
                    }
                } else if x != 0.0 {
                    // The nearest pattern to the exact quotient: between the
                    // oracle's answers for the f64 quotient's neighbours.
                    let q = x / y;
                    let candidates = [oracle(fmt, &table, next_toward_zero(q)), oracle(fmt, &table, q), oracle(fmt, &table, next_away(q))];
                    if candidates[0] == candidates[2] {
                        assert_eq!(quotient, candidates[1], "{a:#06x} / {b:#06x}");
                    } else {
                        assert!(candidates.contains(&quotient), "{a:#06x} / {b:#06x}");
                    }
                }
            }
        }
    }
}

/// `a * b + c` computed exactly in i128 units of 2^-80 (operands kept where
/// that is exact), rounded by the oracle.
#[test]
fn fma_is_rounded_once() {
    for fmt in [F16, BF16] {
        let table = positives(fmt);
        let values: Vec<u16> = samples(fmt, 90)
            .into_iter()
            .filter(|&b| {
                let v = decode(fmt, b).abs();
                v == 0.0 || (v >= 2f64.powi(-24) && v <= 65504.0)
            })
            .collect();
        let units = |v: f64| (v * 2f64.powi(40)) as i128; // every value kept is a multiple of 2^-40
        for &a in &values {
            for &b in &values {
                for &c in &values {
                    let (x, y, z) = (decode(fmt, a), decode(fmt, b), decode(fmt, c));
                    let exact = units(x) * units(y) + units(z) * (1i128 << 40); // units of 2^-80
                    let got = if fmt.frac == 10 {
                        f16::from_bits(a).mul_add(f16::from_bits(b), f16::from_bits(c)).to_bits()
                    } else {
                        bf16::from_bits(a).mul_add(bf16::from_bits(b), bf16::from_bits(c)).to_bits()
                    };
                    let expected = if exact == 0 {
                        let product_negative = (a ^ b) & 0x8000 != 0;
                        if x * y == 0.0 && product_negative && c & 0x8000 != 0 { 0x8000 } else { 0 }
                    } else {
                        // Split into a high part exact in f64 and the rest,
                        // whose sign decides a tie the high part lands on.
                        let value = exact as f64 * 2f64.powi(-80);
                        let rest = exact - (value * 2f64.powi(80)) as i128;
                        let nudged = if rest == 0 { value } else if (rest > 0) == (value > 0.0) { next_away(value) } else { next_toward_zero(value) };
                        let r = oracle(fmt, &table, value);
                        if rest != 0 && oracle(fmt, &table, nudged) != r {
                            // value sits on a tie; the remainder breaks it.
                            oracle(fmt, &table, nudged)
                        } else {
                            r
                        }
                    };
                    assert_eq!(got, expected, "fma({a:#06x}, {b:#06x}, {c:#06x})");
                }
            }
        }
    }
}

#[test]
fn specials_and_comparisons() {
    let nan = f16::NAN;
    assert!(nan != nan && !(nan < nan) && nan.partial_cmp(&f16::ONE).is_none());
    assert_eq!(f16::ZERO, f16::NEG_ZERO);
    assert!(f16::NEG_ZERO >= f16::ZERO && f16::NEG_ZERO <= f16::ZERO);
    assert!(f16::MIN < f16::NEG_ONE && f16::MAX < f16::INFINITY && f16::NEG_INFINITY < f16::MIN);
    assert!(bf16::MIN_POSITIVE_SUBNORMAL > bf16::ZERO);
    assert_eq!((f16::INFINITY - f16::INFINITY).to_bits(), 0x7fff);
    assert_eq!((f16::INFINITY * f16::ZERO).to_bits(), 0x7fff);
    assert_eq!((bf16::INFINITY + bf16::NEG_INFINITY).to_bits(), 0x7fff);
    assert_eq!((f16::ONE - f16::ONE).to_bits(), 0); // x - x is +0 to nearest
    assert_eq!((-f16::NAN).to_bits(), 0xfe00); // neg keeps the payload
    assert_eq!((f16::MAX + f16::MAX), f16::INFINITY);
    assert_eq!((f16::MIN_POSITIVE_SUBNORMAL * f16::from_f32(0.5)).to_bits(), 0); // tie to even 0
    assert_eq!(f16::ONE / f16::ZERO, f16::INFINITY);
    assert_eq!(bf16::NEG_ONE / bf16::ZERO, bf16::NEG_INFINITY);
    assert_eq!(f16::EPSILON.to_f32(), 2f32.powi(-10));
    assert_eq!(bf16::EPSILON.to_f32(), 2f32.powi(-7));
    assert_eq!(f16::MIN_POSITIVE.to_f32(), 2f32.powi(-14));
    assert_eq!(bf16::MAX.to_f32(), f32::from_bits(0x7f7f_0000));
    assert_eq!(format!("{} {:?}", f16::from_f32(1.5), bf16::from_f32(-2.0)), "1.5 -2.0");
    let mut x = f16::ONE;
    x += f16::ONE;
    x *= f16::from_f32(3.0);
    x -= f16::ONE;
    x /= f16::from_f32(2.0);
    assert_eq!(x.to_f32(), 2.5);
}

#[test]
fn packed_lanes_match_scalars() {
    let f = samples(F16, 40);
    let b = samples(BF16, 40);
    for i in 0..f.len() - 2 {
        let (a0, a1, c) = (f16::from_bits(f[i]), f16::from_bits(f[i + 1]), f16::from_bits(f[i + 2]));
        let p = f16x2::new(a0, a1);
        let q = f16x2::new(a1, c);
        assert_eq!((p + q).to_bits(), f16x2::new(a0 + a1, a1 + c).to_bits());
        assert_eq!((p * q).to_bits(), f16x2::new(a0 * a1, a1 * c).to_bits());
        assert_eq!((p - q).to_bits(), f16x2::new(a0 - a1, a1 - c).to_bits());
        assert_eq!(p.mul_add(q, p).to_bits(), f16x2::new(a0.mul_add(a1, a0), a1.mul_add(c, a1)).to_bits());
        let (x0, x1, z) = (bf16::from_bits(b[i]), bf16::from_bits(b[i + 1]), bf16::from_bits(b[i + 2]));
        let p = bf16x2::new(x0, x1);
        let q = bf16x2::new(x1, z);
        assert_eq!((p + q).to_bits(), bf16x2::new(x0 + x1, x1 + z).to_bits());
        assert_eq!((p * q).to_bits(), bf16x2::new(x0 * x1, x1 * z).to_bits());
        assert_eq!(p.mul_add(q, p).to_bits(), bf16x2::new(x0.mul_add(x1, x0), x1.mul_add(z, x1)).to_bits());
    }
    let pair = f16x2::from_f32s(0.1, -65520.0);
    assert_eq!(pair.lo(), f16::from_f32(0.1));
    assert_eq!(pair.hi(), f16::NEG_INFINITY);
    assert_eq!(f16x2::from_f32s_toward_zero(0.1, -65520.0).hi(), f16::MIN);
    assert_eq!(bf16x2::from_f32s(1.0, 3.0).to_f32s(), (1.0, 3.0));
    assert_eq!(bf16x2::from_f32s(1.0, 3.0).to_bits(), cuda_device::wgmma::pack_bf16x2(1.0, 3.0));
}

/// Every pattern of both formats: the root `r` of `x` is correct when `x`
/// lies between the squares of the midpoints around `r` (exact in f64: a
/// midpoint has at most 12 significant bits), a tie going to the even `r`.
#[test]
fn every_square_root_is_correctly_rounded() {
    for fmt in [F16, BF16] {
        for bits in 0..=u16::MAX {
            let r = if fmt.frac == 10 { f16::from_bits(bits).sqrt().to_bits() } else { bf16::from_bits(bits).sqrt().to_bits() };
            let exponent_field = bits & fmt.exp_mask;
            let nan = exponent_field == fmt.exp_mask && bits & !fmt.exp_mask & 0x7fff != 0;
            if nan || (bits & 0x8000 != 0 && bits != 0x8000) {
                assert_eq!(r, 0x7fff, "sqrt({bits:#06x})");
                continue;
            }
            if bits == 0 || bits == 0x8000 || bits == fmt.exp_mask {
                assert_eq!(r, bits, "sqrt({bits:#06x})");
                continue;
            }
            let x = decode(fmt, bits);
            let v = decode(fmt, r);
            let below = if r == 0 { 0.0 } else { decode(fmt, r - 1) };
            let above = decode(fmt, r + 1);
            let (low, high) = (((below + v) / 2.0).powi(2), ((v + above) / 2.0).powi(2));
            assert!(low <= x && x <= high, "sqrt({bits:#06x}) = {r:#06x}");
            if x == low || x == high {
                assert_eq!(r & 1, 0, "sqrt({bits:#06x}): a tie goes to even");
            }
        }
    }
    assert_eq!(f16::from_f32(2.25).sqrt().to_f32(), 1.5);
    assert_eq!(bf16::from_f32(-0.0).sqrt().to_bits(), 0x8000);
}
