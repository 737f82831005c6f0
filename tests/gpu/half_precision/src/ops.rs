//! The operations of the sweep, one table: a name and a body each, so the
//! kernel and the CPU evaluate the same expression and a mismatch is
//! reported by name. Inputs arrive as raw bits (`u64`); each body reads
//! them as the types it needs and returns its result's bits.

use cuda_device::half::{bf16, bf16x2, f16, f16x2, Rounding};

/// How many arguments an operation takes, and of what kind: that decides
/// which boundary values the host feeds it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One f32 (in `x`).
    F32,
    /// One f64 (in `x`).
    F64,
    /// One, two or three f16 (`x`, `y`, `z`).
    F16(u8),
    /// One, two or three bf16.
    BF16(u8),
    /// Two f32 (`x`, `y`) into a pair.
    F32Pair,
    /// Two or three packed pairs of f16 (each a pair of boundary values).
    F16x2(u8),
    /// Two or three packed pairs of bf16.
    BF16x2(u8),
    /// Every one of the 65,536 patterns (`x`).
    AllPatterns,
}

/// Whether the result is an exact widening, whose NaN payload the GPU may
/// pick differently from the CPU model (any NaN is accepted for a NaN).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The bits must match.
    Bits,
    /// An f32 result in the low word (equal bits, or both NaN); the high
    /// word, if any, equal.
    F32,
    /// An f64 result: equal bits, or both NaN.
    F64,
    /// Two f32 in the low and high words: per word, equal bits or both NaN.
    F32Pair,
}

fn h(x: u64) -> f16 {
    f16::from_bits(x as u16)
}
fn b(x: u64) -> bf16 {
    bf16::from_bits(x as u16)
}
fn h2(x: u64) -> f16x2 {
    f16x2::from_bits(x as u32)
}
fn b2(x: u64) -> bf16x2 {
    bf16x2::from_bits(x as u32)
}
fn f(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
fn d(x: u64) -> f64 {
    f64::from_bits(x)
}
fn f32s((lo, hi): (f32, f32)) -> u64 {
    lo.to_bits() as u64 | (hi.to_bits() as u64) << 32
}

macro_rules! table {
    ($($name:literal, $shape:expr, $check:ident => |$x:ident, $y:ident, $z:ident| $body:expr,)*) => {
        const NAMES: &[&str] = &[$($name),*];
        /// How many operations the table has.
        pub const COUNT: u32 = NAMES.len() as u32;

        /// The operation's name, for reports.
        pub fn name(op: u32) -> &'static str {
            NAMES.get(op as usize).copied().unwrap_or("?")
        }

        /// The operation's arguments.
        pub fn shape(op: u32) -> Shape {
            [$($shape),*][op as usize]
        }

        /// How its result is compared.
        pub fn check(op: u32) -> Check {
            [$(Check::$check),*][op as usize]
        }

        /// Operation `op` on `x, y, z`, as result bits (the same code on
        /// both sides).
        #[inline(always)]
        #[allow(unused_variables)]
        pub fn evaluate(op: u32, x: u64, y: u64, z: u64) -> u64 {
            let mut i = 0u32;
            $(
                if op == i {
                    let ($x, $y, $z) = (x, y, z);
                    return $body;
                }
                i += 1;
            )*
            let _ = i;
            u64::MAX
        }
    };
}

table! {
    "f16::from_f32", Shape::F32, Bits => |x, y, z| f16::from_f32(f(x)).to_bits() as u64,
    "f16::from_f32 rz", Shape::F32, Bits => |x, y, z| f16::from_f32_rounded(f(x), Rounding::TowardZero).to_bits() as u64,
    "f16::from_f32 rm", Shape::F32, Bits => |x, y, z| f16::from_f32_rounded(f(x), Rounding::Down).to_bits() as u64,
    "f16::from_f32 rp", Shape::F32, Bits => |x, y, z| f16::from_f32_rounded(f(x), Rounding::Up).to_bits() as u64,
    "f16::from_f64", Shape::F64, Bits => |x, y, z| f16::from_f64(d(x)).to_bits() as u64,
    "f16::to_f32", Shape::F16(1), F32 => |x, y, z| h(x).to_f32().to_bits() as u64,
    "f16::to_f64", Shape::F16(1), F64 => |x, y, z| h(x).to_f64().to_bits(),
    "f16 +", Shape::F16(2), Bits => |x, y, z| (h(x) + h(y)).to_bits() as u64,
    "f16 -", Shape::F16(2), Bits => |x, y, z| (h(x) - h(y)).to_bits() as u64,
    "f16 *", Shape::F16(2), Bits => |x, y, z| (h(x) * h(y)).to_bits() as u64,
    "f16 /", Shape::F16(2), Bits => |x, y, z| (h(x) / h(y)).to_bits() as u64,
    "f16 sqrt", Shape::F16(1), Bits => |x, y, z| h(x).sqrt().to_bits() as u64,
    "f16 neg", Shape::F16(1), Bits => |x, y, z| (-h(x)).to_bits() as u64,
    "f16 compound", Shape::F16(2), Bits => |x, y, z| {
        let mut v = h(x);
        v += h(y);
        v *= h(y);
        v -= h(x);
        v /= h(y);
        v.to_bits() as u64
    },
    "f16 mul_add", Shape::F16(3), Bits => |x, y, z| h(x).mul_add(h(y), h(z)).to_bits() as u64,
    "f16 == < <= partial_cmp", Shape::F16(2), Bits => |x, y, z| {
        let (p, q) = (h(x), h(y));
        (p == q) as u64 | ((p < q) as u64) << 1 | ((p <= q) as u64) << 2 | ((p > q) as u64) << 3 | (p.partial_cmp(&q).is_none() as u64) << 4
    },
    "bf16::from_f32", Shape::F32, Bits => |x, y, z| bf16::from_f32(f(x)).to_bits() as u64,
    "bf16::from_f32 rz", Shape::F32, Bits => |x, y, z| bf16::from_f32_rounded(f(x), Rounding::TowardZero).to_bits() as u64,
    "bf16::from_f32 rm", Shape::F32, Bits => |x, y, z| bf16::from_f32_rounded(f(x), Rounding::Down).to_bits() as u64,
    "bf16::from_f32 rp", Shape::F32, Bits => |x, y, z| bf16::from_f32_rounded(f(x), Rounding::Up).to_bits() as u64,
    "bf16::from_f64", Shape::F64, Bits => |x, y, z| bf16::from_f64(d(x)).to_bits() as u64,
    "bf16::to_f32", Shape::BF16(1), F32 => |x, y, z| b(x).to_f32().to_bits() as u64,
    "bf16 +", Shape::BF16(2), Bits => |x, y, z| (b(x) + b(y)).to_bits() as u64,
    "bf16 -", Shape::BF16(2), Bits => |x, y, z| (b(x) - b(y)).to_bits() as u64,
    "bf16 *", Shape::BF16(2), Bits => |x, y, z| (b(x) * b(y)).to_bits() as u64,
    "bf16 /", Shape::BF16(2), Bits => |x, y, z| (b(x) / b(y)).to_bits() as u64,
    "bf16 sqrt", Shape::BF16(1), Bits => |x, y, z| b(x).sqrt().to_bits() as u64,
    "bf16 mul_add", Shape::BF16(3), Bits => |x, y, z| b(x).mul_add(b(y), b(z)).to_bits() as u64,
    "bf16 == < <= partial_cmp", Shape::BF16(2), Bits => |x, y, z| {
        let (p, q) = (b(x), b(y));
        (p == q) as u64 | ((p < q) as u64) << 1 | ((p <= q) as u64) << 2 | ((p > q) as u64) << 3 | (p.partial_cmp(&q).is_none() as u64) << 4
    },
    "f16 every pattern to_f32, back", Shape::AllPatterns, F32 => |x, y, z| {
        let wide = h(x).to_f32();
        wide.to_bits() as u64 | (f16::from_f32(wide).to_bits() as u64) << 32
    },
    "f16 every pattern sqrt", Shape::AllPatterns, Bits => |x, y, z| h(x).sqrt().to_bits() as u64,
    "bf16 every pattern sqrt", Shape::AllPatterns, Bits => |x, y, z| b(x).sqrt().to_bits() as u64,
    "f16x2::from_f32s", Shape::F32Pair, Bits => |x, y, z| f16x2::from_f32s(f(x), f(y)).to_bits() as u64,
    "f16x2::from_f32s_toward_zero", Shape::F32Pair, Bits => |x, y, z| f16x2::from_f32s_toward_zero(f(x), f(y)).to_bits() as u64,
    "f16x2::to_f32s", Shape::F16x2(1), F32Pair => |x, y, z| f32s(h2(x).to_f32s()),
    "f16x2 +", Shape::F16x2(2), Bits => |x, y, z| (h2(x) + h2(y)).to_bits() as u64,
    "f16x2 -", Shape::F16x2(2), Bits => |x, y, z| (h2(x) - h2(y)).to_bits() as u64,
    "f16x2 *", Shape::F16x2(2), Bits => |x, y, z| (h2(x) * h2(y)).to_bits() as u64,
    "f16x2 mul_add", Shape::F16x2(3), Bits => |x, y, z| h2(x).mul_add(h2(y), h2(z)).to_bits() as u64,
    "bf16x2::from_f32s", Shape::F32Pair, Bits => |x, y, z| bf16x2::from_f32s(f(x), f(y)).to_bits() as u64,
    "bf16x2::from_f32s_toward_zero", Shape::F32Pair, Bits => |x, y, z| bf16x2::from_f32s_toward_zero(f(x), f(y)).to_bits() as u64,
    "bf16x2::to_f32s", Shape::BF16x2(1), F32Pair => |x, y, z| f32s(b2(x).to_f32s()),
    "bf16x2 +", Shape::BF16x2(2), Bits => |x, y, z| (b2(x) + b2(y)).to_bits() as u64,
    "bf16x2 -", Shape::BF16x2(2), Bits => |x, y, z| (b2(x) - b2(y)).to_bits() as u64,
    "bf16x2 *", Shape::BF16x2(2), Bits => |x, y, z| (b2(x) * b2(y)).to_bits() as u64,
    "bf16x2 mul_add", Shape::BF16x2(3), Bits => |x, y, z| b2(x).mul_add(b2(y), b2(z)).to_bits() as u64,
}
