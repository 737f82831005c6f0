//! The inputs every case runs on: the cross product of a list of interesting
//! 64-bit values with itself.
//!
//! One list serves every case because each case reinterprets the raw bits as
//! it needs (`a as i16`, `f32::from_bits(a as u32)`, `f64::from_bits(a)`, two
//! values joined into a `u128`, …). The list therefore mixes the edges of every
//! integer width with the special bit patterns of `f32` and `f64`; an integer
//! edge read as a float is one more odd float, and the reverse.

/// Integer edges: every width's MIN and MAX (signed ones sign-extended, the
/// bit patterns also zero-extended), powers of two and their neighbours,
/// shift amounts around the widths, and a few arbitrary constants.
const INTEGER_EDGES: &[u64] = &[
    0,
    1,
    3,
    7,
    31,
    32,
    63,
    64,
    65,
    127,                   // i8::MAX
    128,                   // i8::MIN as u8, 2^7
    255,                   // u8::MAX
    i8::MIN as u64,        // sign-extended
    32767,                 // i16::MAX
    32768,                 // i16::MIN as u16
    65535,                 // u16::MAX
    i16::MIN as u64,       // sign-extended
    0x7FFF_FFFF,           // i32::MAX
    0x8000_0000,           // i32::MIN as u32 (also -0.0f32)
    0x8000_0001,           // 2^31 + 1
    0xFFFF_FFFF,           // u32::MAX (also a negative f32 NaN)
    0x1_0000_0000,         // 2^32
    i32::MIN as u64,       // sign-extended
    i64::MAX as u64,       // 2^63 - 1
    i64::MIN as u64,       // 2^63 (also -0.0f64)
    (i64::MIN as u64) + 1, // 2^63 + 1
    u64::MAX,              // -1 at every signed width
    u64::MAX - 6,          // -7
    1_000_000_007,
    0x0123_4567_89AB_CDEF,
    0x9E37_79B9_7F4A_7C15,
    0xDEAD_BEEF_CAFE_F00D,
];

/// `f32` bit patterns, in the low 32 bits.
const F32_PATTERNS: &[u32] = &[
    0x7FC0_0000, // quiet NaN
    0xFFC0_0001, // negative NaN with a payload
    0x7F80_0001, // signalling NaN
    0x7F80_0000, // +inf
    0xFF80_0000, // -inf
    0x7F7F_FFFF, // MAX
    0xFF7F_FFFF, // MIN
    0x0080_0000, // MIN_POSITIVE
    0x007F_FFFF, // largest subnormal
    0x8000_0001, // smallest negative subnormal
    0x3F80_0000, // 1.0
    0xBF80_0000, // -1.0
    0x3F00_0000, // 0.5
    0x4049_0FDB, // pi
    0x5015_02F9, // 1e10
    0xAEDB_E6FF, // -1e-10
    0x3DCC_CCCD, // 0.1
    0x42B1_0000, // 88.5 (exp overflows just above)
    0x4B80_0001, // 2^24 + 2, where f32 stops holding every integer
    0x4F00_0000, // 2^31, the first f32 outside i32
    0xCF00_0000, // -2^31
    0x5F80_0000, // 2^64, the first f32 outside u64
];

/// `f64` bit patterns.
const F64_PATTERNS: &[u64] = &[
    0x7FF8_0000_0000_0000, // quiet NaN
    0xFFF8_0000_0000_0001, // negative NaN with a payload
    0x7FF0_0000_0000_0001, // signalling NaN
    0x7FF0_0000_0000_0000, // +inf
    0xFFF0_0000_0000_0000, // -inf
    0x7FEF_FFFF_FFFF_FFFF, // MAX
    0xFFEF_FFFF_FFFF_FFFF, // MIN
    0x0010_0000_0000_0000, // MIN_POSITIVE
    0x000F_FFFF_FFFF_FFFF, // largest subnormal
    0x3FF0_0000_0000_0000, // 1.0
    0xBFF0_0000_0000_0000, // -1.0
    0x3FE0_0000_0000_0000, // 0.5
    0x4009_21FB_5444_2D18, // pi
    0x4202_A05F_2000_0000, // 1e10
    0xBDDB_7CDF_D9D7_BDBB, // -1e-10
    0x3FB9_9999_9999_999A, // 0.1
    0x4086_2E42_FEFA_39EF, // 709.78, where exp overflows
    0x43E0_0000_0000_0000, // 2^63
    0xC3E0_0000_0000_0000, // -2^63
    0x43F0_0000_0000_0000, // 2^64
    0x7E37_E43C_8800_759C, // 1e300
];

/// The distinct interesting values, in a fixed order.
pub fn interesting_values() -> Vec<u64> {
    let mut values = Vec::new();
    let all = INTEGER_EDGES
        .iter()
        .copied()
        .chain(F32_PATTERNS.iter().map(|&bits| bits as u64))
        .chain(F64_PATTERNS.iter().copied());
    for value in all {
        // Some patterns are both (0x8000_0000 is i32::MIN and -0.0f32).
        if !values.contains(&value) {
            values.push(value);
        }
    }
    values
}

/// Every ordered pair of `values`, as two parallel columns `(a, b)`.
pub fn all_pairs(values: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let a = values
        .iter()
        .flat_map(|&x| values.iter().map(move |_| x))
        .collect();
    let b = values.iter().flat_map(|_| values.iter().copied()).collect();
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_patterns_mean_what_the_comments_say() {
        assert_eq!(f32::from_bits(0x5015_02F9), 1e10);
        assert_eq!(f32::from_bits(0xAEDB_E6FF), -1e-10);
        assert_eq!(f32::from_bits(0x4049_0FDB), std::f32::consts::PI);
        assert_eq!(f32::from_bits(0x3DCC_CCCD), 0.1);
        assert_eq!(f32::from_bits(0x4B80_0001), 16777218.0);
        assert_eq!(f64::from_bits(0x4202_A05F_2000_0000), 1e10);
        assert_eq!(f64::from_bits(0xBDDB_7CDF_D9D7_BDBB), -1e-10);
        assert_eq!(f64::from_bits(0x4009_21FB_5444_2D18), std::f64::consts::PI);
        assert_eq!(f64::from_bits(0x7E37_E43C_8800_759C), 1e300);
        assert!(f64::from_bits(0x4086_2E42_FEFA_39EF).exp().is_finite());
        assert!(f64::from_bits(0x4086_2E42_FEFA_39F0).exp().is_infinite());
    }

    #[test]
    fn pairs_cover_the_cross_product() {
        let values = interesting_values();
        let (a, b) = all_pairs(&values);
        assert_eq!(a.len(), values.len() * values.len());
        assert_eq!((a[1], b[1]), (values[0], values[1]));
    }
}
