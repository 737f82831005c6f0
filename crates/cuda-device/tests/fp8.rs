//! The FP8 CPU model of `cuda_device::half` against an independent oracle:
//! every pattern decoded with `powi`, and narrowing by searching the sorted
//! finite values for the nearest one (ties to the even pattern), saturated.

use cuda_device::half::{f16, f16x2, f8e4m3, f8e4m3x2, f8e5m2, f8e5m2x2};

/// A format for the oracle.
#[derive(Clone, Copy)]
struct Fmt {
    frac: i32,
    bias: i32,
    /// Whether the top exponent is infinity/NaN (E5M2) rather than values (E4M3).
    ieee_top: bool,
    max: u8,
}
const E4M3: Fmt = Fmt { frac: 3, bias: 7, ieee_top: false, max: 0x7e };
const E5M2: Fmt = Fmt { frac: 2, bias: 15, ieee_top: true, max: 0x7b };

/// What a pattern is, by the OCP definition.
fn decode(fmt: Fmt, bits: u8) -> f64 {
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((bits & 0x7f) >> fmt.frac) as i32;
    let f = (bits & ((1 << fmt.frac) - 1)) as f64 / 2f64.powi(fmt.frac);
    let top = (1 << (7 - fmt.frac)) - 1;
    if fmt.ieee_top && e == top {
        return if f == 0.0 { sign * f64::INFINITY } else { f64::NAN };
    }
    if !fmt.ieee_top && bits & 0x7f == 0x7f {
        return f64::NAN;
    }
    if e == 0 {
        sign * f * 2f64.powi(1 - fmt.bias)
    } else {
        sign * (1.0 + f) * 2f64.powi(e - fmt.bias)
    }
}

/// `cvt.rn.satfinite` by search: the nearest finite value, ties to the
/// even pattern, saturated; NaN to 0x7f.
fn oracle(fmt: Fmt, x: f64) -> u8 {
    if x.is_nan() {
        return 0x7f;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    let mut best = 0u8;
    for bits in 0..=fmt.max {
        let (v, b) = (decode(fmt, bits), decode(fmt, best));
        if (v - a).abs() < (b - a).abs() || ((v - a).abs() == (b - a).abs() && bits & 1 == 0 && v != b) {
            best = bits;
        }
    }
    // Past the largest value (by any amount) is the largest value.
    if a > decode(fmt, fmt.max) {
        best = fmt.max;
    }
    sign | best
}

fn e4m3(x: f32) -> u8 {
    f8e4m3::from_f32(x).to_bits()
}
fn e5m2(x: f32) -> u8 {
    f8e5m2::from_f32(x).to_bits()
}

#[test]
fn every_pattern_widens_exactly_and_round_trips() {
    for bits in 0..=255u8 {
        for (fmt, wide, back) in [
            (E4M3, f8e4m3::from_bits(bits).to_f32(), e4m3(f8e4m3::from_bits(bits).to_f32())),
            (E5M2, f8e5m2::from_bits(bits).to_f32(), e5m2(f8e5m2::from_bits(bits).to_f32())),
        ] {
            let exact = decode(fmt, bits);
            if exact.is_nan() {
                assert_eq!(wide.to_bits(), 0x7fff_ffff, "{bits:#x}: canonical f32 NaN");
                assert_eq!(back, 0x7f, "{bits:#x}: NaN narrows to 0x7f");
            } else if exact.is_infinite() {
                assert_eq!(wide as f64, exact, "{bits:#x}");
                assert_eq!(back, (bits & 0x80) | fmt.max, "{bits:#x}: infinity saturates");
            } else {
                assert_eq!(wide as f64, exact, "{bits:#x}");
                assert_eq!(wide.is_sign_negative(), bits & 0x80 != 0, "{bits:#x}: the sign of zero");
                assert_eq!(back, bits, "{bits:#x}: round trip");
            }
        }
    }
}

#[test]
fn widening_to_f16_is_exact() {
    for bits in 0..=255u8 {
        let h = f8e4m3::from_bits(bits).to_f16();
        if bits & 0x7f == 0x7f {
            assert_eq!(h.to_bits(), 0x7fff);
        } else {
            assert_eq!(h.to_f64(), decode(E4M3, bits), "{bits:#x}");
        }
        // E5M2 is binary16's top byte; a NaN is canonicalised.
        let h = f8e5m2::from_bits(bits).to_f16();
        if bits & 0x7f > 0x7c {
            assert_eq!(h.to_bits(), 0x7fff);
        } else {
            assert_eq!(h.to_bits(), (bits as u16) << 8, "{bits:#x}");
        }
    }
}

#[test]
fn edge_values() {
    assert_eq!(f8e4m3::MAX.to_f32(), 448.0);
    assert_eq!(f8e5m2::MAX.to_f32(), 57344.0);
    assert_eq!(f8e4m3::MIN_POSITIVE.to_f32(), 2f32.powi(-6));
    assert_eq!(f8e5m2::MIN_POSITIVE.to_f32(), 2f32.powi(-14));
    assert_eq!(f8e4m3::MIN_POSITIVE_SUBNORMAL.to_f32(), 2f32.powi(-9));
    assert_eq!(f8e5m2::MIN_POSITIVE_SUBNORMAL.to_f32(), 2f32.powi(-16));
    assert_eq!(f8e4m3::ONE.to_f32(), 1.0);
    assert_eq!(f8e5m2::ONE.to_f32(), 1.0);
    assert_eq!(f8e4m3::EPSILON.to_f32(), 0.125);
    assert_eq!(f8e5m2::EPSILON.to_f32(), 0.25);
    // Saturation: 464 is the tie between 448 and the NaN code's slot.
    for x in [449.0, 463.9, 464.0, 464.1, 480.0, 1e30, f32::MAX, f32::INFINITY] {
        assert_eq!(e4m3(x), 0x7e, "{x}");
        assert_eq!(e4m3(-x), 0xfe, "{}", -x);
    }
    for x in [57345.0, 61439.0, 61440.0, 65536.0, f32::MAX, f32::INFINITY] {
        assert_eq!(e5m2(x), 0x7b, "{x}");
        assert_eq!(e5m2(-x), 0xfb, "{}", -x);
    }
    // NaN of either sign is 0x7f in both formats.
    for nan in [f32::NAN, -f32::NAN, f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234)] {
        assert_eq!(e4m3(nan), 0x7f);
        assert_eq!(e5m2(nan), 0x7f);
        assert!(f8e4m3::from_f32(nan).is_nan() && f8e5m2::from_f32(nan).is_nan());
    }
    // Zeros keep their sign; f32's tiny values underflow to a signed zero.
    assert_eq!(e4m3(-0.0), 0x80);
    assert_eq!(e5m2(-0.0), 0x80);
    for x in [f32::MIN_POSITIVE, f32::from_bits(1), 2f32.powi(-11)] {
        assert_eq!(e4m3(x), 0x00);
        assert_eq!(e4m3(-x), 0x80);
    }
    for x in [f32::MIN_POSITIVE, f32::from_bits(1), 2f32.powi(-18)] {
        assert_eq!(e5m2(x), 0x00);
        assert_eq!(e5m2(-x), 0x80);
    }
    // Half the smallest subnormal is a tie to zero; just above it rounds up.
    assert_eq!(e4m3(2f32.powi(-10)), 0);
    assert_eq!(e4m3(2f32.powi(-10) * 1.0001), 1);
    assert_eq!(e4m3(1.5 * 2f32.powi(-9)), 2); // tie, to even
    assert_eq!(e5m2(2f32.powi(-17)), 0);
    assert_eq!(e5m2(3.0 * 2f32.powi(-17)), 2); // tie between 1 and 2, to even
    // Ties between normals: 1 + 1/16 is halfway to 1.125 in E4M3.
    assert_eq!(e4m3(1.0625), 0x38);
    assert_eq!(e4m3(1.1875), 0x3a); // between 1.125 and 1.25: to even (1.25)
    assert_eq!(f8e5m2::INFINITY.to_f32(), f32::INFINITY);
    assert!(f8e5m2::NEG_INFINITY.is_infinite());
    assert_eq!(f8e4m3::NEG_ZERO, f8e4m3::ZERO);
    assert!(f8e4m3::NAN != f8e4m3::NAN);
    assert!(f8e4m3::from_f32(2.0) > f8e4m3::ONE);
}

/// A deterministic stream of f32 bit patterns (xorshift).
fn patterns(n: usize) -> impl Iterator<Item = f32> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        f32::from_bits(s as u32)
    })
}

#[test]
fn narrowing_f32_matches_the_oracle() {
    // Random bits (mostly far out of range) and values spread over the
    // formats' own ranges, around every binade of both.
    let near = patterns(20_000).map(|x| {
        let bits = x.to_bits();
        // Exponent in [2^-20, 2^17): every FP8 binade, subnormals and beyond.
        let exp = 107 + (bits >> 23 & 0xff) % 37;
        f32::from_bits(bits & 0x807f_ffff | exp << 23)
    });
    for x in patterns(20_000).chain(near) {
        assert_eq!(e4m3(x), oracle(E4M3, x as f64), "E4M3 of {x:e} ({:#x})", x.to_bits());
        assert_eq!(e5m2(x), oracle(E5M2, x as f64), "E5M2 of {x:e} ({:#x})", x.to_bits());
    }
}

#[test]
fn narrowing_every_f16_matches_the_oracle() {
    for bits in 0..=u16::MAX {
        let h = f16::from_bits(bits);
        let x = if h.is_nan() { f64::NAN } else { h.to_f64() };
        assert_eq!(f8e4m3::from_f16(h).to_bits(), oracle(E4M3, x), "E4M3 of f16 {bits:#x}");
        assert_eq!(f8e5m2::from_f16(h).to_bits(), oracle(E5M2, x), "E5M2 of f16 {bits:#x}");
    }
}

#[test]
fn pairs_are_two_lanes() {
    let p = f8e4m3x2::from_f32s(0.3, -500.0);
    assert_eq!((p.lo().to_bits(), p.hi().to_bits()), (e4m3(0.3), 0xfe));
    assert_eq!(p.to_bits(), e4m3(0.3) as u16 | 0xfe00);
    assert_eq!(p.to_f32s(), (0.3125, -448.0));
    let h = f16x2::from_f32s(3.0, f32::NAN);
    let q = f8e5m2x2::from_f16x2(h);
    assert_eq!(q.to_bits(), 0x7f42);
    let back = q.to_f16x2();
    assert_eq!(back.lo().to_f32(), 3.0);
    assert_eq!(back.hi().to_bits(), 0x7fff);
    assert_eq!(f8e4m3x2::new(f8e4m3::ONE, f8e4m3::MAX).to_f32s(), (1.0, 448.0));
}
