//! The scalar types of generated programs: their names, widths, literals
//! and the values inputs are drawn from.

use crate::rng::Rng;

/// A scalar type a generated value can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    U8,
    U16,
    U32,
    U64,
    U128,
    Usize,
    I8,
    I16,
    I32,
    I64,
    I128,
    Isize,
    F32,
    F64,
    Bool,
}

use Ty::*;

impl Ty {
    /// Every integer type.
    pub const INTS: [Ty; 12] = [U8, U16, U32, U64, U128, Usize, I8, I16, I32, I64, I128, Isize];
    /// Every type a value can have.
    pub const ALL: [Ty; 15] = [U8, U16, U32, U64, U128, Usize, I8, I16, I32, I64, I128, Isize, F32, F64, Bool];

    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            U128 => "u128",
            Usize => "usize",
            I8 => "i8",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            I128 => "i128",
            Isize => "isize",
            F32 => "f32",
            F64 => "f64",
            Bool => "bool",
        }
    }

    /// The width in bits (usize and isize are 64 on both sides).
    pub fn bits(self) -> u32 {
        match self {
            U8 | I8 => 8,
            U16 | I16 => 16,
            U32 | I32 | F32 => 32,
            U64 | I64 | Usize | Isize | F64 => 64,
            U128 | I128 => 128,
            Bool => 1,
        }
    }


    pub fn is_signed(self) -> bool {
        matches!(self, I8 | I16 | I32 | I64 | I128 | Isize)
    }

    pub fn is_float(self) -> bool {
        matches!(self, F32 | F64)
    }

    /// The unsigned type of the same width (`unsigned_abs`, `abs_diff`).
    pub fn unsigned(self) -> Ty {
        match self {
            I8 => U8,
            I16 => U16,
            I32 => U32,
            I64 => U64,
            I128 => U128,
            Isize => Usize,
            t => t,
        }
    }

    /// `bits` masked to the type's width.
    pub fn mask(self, bits: u128) -> u128 {
        match self.bits() {
            128 => bits,
            n => bits & ((1u128 << n) - 1),
        }
    }

    /// A Rust expression of exactly this type and these bits.
    pub fn literal(self, bits: u128) -> String {
        let bits = self.mask(bits);
        match self {
            Bool => (bits != 0).to_string(),
            F32 => format!("f32::from_bits({:#x})", bits as u32),
            F64 => format!("f64::from_bits({:#x})", bits as u64),
            t if t.is_signed() => {
                let n = t.bits();
                let value = ((bits << (128 - n)) as i128) >> (128 - n);
                let min = if n == 128 { i128::MIN } else { -(1i128 << (n - 1)) };
                if value == min {
                    format!("{}::MIN", t.name())
                } else if value < 0 {
                    format!("({value}{})", t.name())
                } else {
                    format!("{value}{}", t.name())
                }
            }
            t => format!("{bits}{}", t.name()),
        }
    }

    /// Input bits for this type: often a boundary value, otherwise random.
    pub fn random_bits(self, r: &mut Rng) -> u128 {
        let wide = (r.next() as u128) << 64 | r.next() as u128;
        let n = self.bits();
        let bits = match self {
            Bool => r.below(2) as u128,
            F32 => {
                let special: [u32; 20] = [
                    0, 0x8000_0000, 0x3F80_0000, 0xBF80_0000, 0x3F00_0000, 0x4000_0000, 0x7F80_0000,
                    0xFF80_0000, 0x7FC0_0000, 0x7FA1_2345, 0x0080_0000, 0x0000_0001, 0x807F_FFFF,
                    0x7F7F_FFFF, 0xFF7F_FFFF, 0x4F00_0000, 0x5F00_0000, 0xCF00_0000, 0x4B7F_FFFF, 0x3EAA_AAAB,
                ];
                if r.chance(50) { *r.pick(&special) as u128 } else { wide as u32 as u128 }
            }
            F64 => {
                let special: [u64; 16] = [
                    0, 0x8000_0000_0000_0000, 0x3FF0_0000_0000_0000, 0xBFF0_0000_0000_0000,
                    0x3FE0_0000_0000_0000, 0x7FF0_0000_0000_0000, 0xFFF0_0000_0000_0000,
                    0x7FF8_0000_0000_0000, 0x0010_0000_0000_0000, 0x0000_0000_0000_0001,
                    0x7FEF_FFFF_FFFF_FFFF, 0x43E0_0000_0000_0000, 0x41E0_0000_0000_0000,
                    0xC3E0_0000_0000_0000, 0x4330_0000_0000_0001, 0x3FD5_5555_5555_5555,
                ];
                if r.chance(50) { *r.pick(&special) as u128 } else { wide as u64 as u128 }
            }
            _ => match r.below(8) {
                0 => 0,
                1 => 1,
                2 => self.mask(u128::MAX),                                   // -1 / MAX
                3 => if self.is_signed() { 1u128 << (n - 1) } else { self.mask(u128::MAX) }, // MIN / MAX
                4 => if self.is_signed() { (1u128 << (n - 1)) - 1 } else { 1u128 << (n - 1) }, // MAX / half
                5 => r.below(10) as u128,
                6 => {
                    let k = r.below(n as u64) as u32;
                    (1u128 << k).wrapping_add(r.below(3) as u128).wrapping_sub(1)
                }
                _ => wide,
            },
        };
        self.mask(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_have_the_exact_type_and_value() {
        assert_eq!(I8.literal(0x80), "i8::MIN");
        assert_eq!(I8.literal(0xFF), "(-1i8)");
        assert_eq!(I16.literal(0x1_7FFF), "32767i16");
        assert_eq!(U128.literal(u128::MAX), format!("{}u128", u128::MAX));
        assert_eq!(I128.literal(1u128 << 127), "i128::MIN");
        assert_eq!(F32.literal(0x7FC0_0000), "f32::from_bits(0x7fc00000)");
        assert_eq!(Bool.literal(2), "false");
    }

    #[test]
    fn random_bits_fit_the_type() {
        let mut r = Rng::new(1, 0);
        for t in Ty::ALL {
            for _ in 0..200 {
                let b = t.random_bits(&mut r);
                assert_eq!(b, t.mask(b), "{t:?}");
            }
        }
    }
}
