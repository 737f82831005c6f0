//! Integer semantics, as PTX defines them, on canonical register values
//! (zero-extended from the operation's width).
//!
//! It owns the exact result of every integer instruction at every width:
//! wrapping arithmetic, `mul.hi`/`.wide`, `mad` with saturation and carries,
//! division (by zero: the GPU's machine-specific values, see [`div`]),
//! shifts by any amount (an amount of the width or more shifts everything
//! out, `shr.s` filling with the sign), bit-field and byte-permute
//! operations, and the packed 16x2 forms.

use crate::program::{mask, IntOp, IntUnOp};

/// Sign-extends the low `bits` bits of `v` to 64.
#[inline(always)]
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

#[inline(always)]
pub fn shl(a: u64, b: u64, bits: u32) -> u64 {
    if b >= bits as u64 {
        0
    } else {
        (a << b) & mask(bits)
    }
}

#[inline(always)]
pub fn shr_u(a: u64, b: u64, bits: u32) -> u64 {
    if b >= bits as u64 {
        0
    } else {
        (a & mask(bits)) >> b
    }
}

#[inline(always)]
pub fn shr_s(a: u64, b: u64, bits: u32) -> u64 {
    let x = sext(a, bits);
    let b = b.min(63);
    ((x >> b) as u64) & mask(bits)
}

/// Unsigned and signed division and remainder. Division by zero has no
/// defined result in PTX; the VM returns what the GPU's division sequence
/// produces: an all-ones unsigned quotient (a signed quotient of -1, or 1
/// for a negative dividend) and the dividend as the remainder. `MIN / -1`
/// wraps to `MIN` with remainder 0.
pub fn div(op: IntOp, bits: u32, a: u64, b: u64) -> u64 {
    let m = mask(bits);
    let (a_u, b_u) = (a & m, b & m);
    let (a_s, b_s) = (sext(a, bits), sext(b, bits));
    let r = match op {
        IntOp::DivU => a_u.checked_div(b_u).unwrap_or(m),
        IntOp::RemU => {
            if b_u == 0 {
                a_u
            } else {
                a_u % b_u
            }
        }
        IntOp::DivS => {
            if b_s == 0 {
                if a_s < 0 {
                    1
                } else {
                    u64::MAX
                }
            } else {
                a_s.wrapping_div(b_s) as u64
            }
        }
        _ => {
            if b_s == 0 {
                a_s as u64
            } else {
                a_s.wrapping_rem(b_s) as u64
            }
        }
    };
    r & m
}

fn lanes16(a: u64, b: u64, f: impl Fn(u64, u64) -> u64) -> u64 {
    let lo = f(a & 0xffff, b & 0xffff) & 0xffff;
    let hi = f((a >> 16) & 0xffff, (b >> 16) & 0xffff) & 0xffff;
    hi << 16 | lo
}

/// The binary operations of [`IntOp`].
pub fn int_op(op: IntOp, bits: u32, a: u64, b: u64) -> u64 {
    let m = mask(bits);
    match op {
        IntOp::MulHiU => (((a & m) as u128 * (b & m) as u128) >> bits) as u64 & m,
        IntOp::MulHiS => ((sext(a, bits) as i128 * sext(b, bits) as i128) >> bits) as u64 & m,
        IntOp::DivU | IntOp::DivS | IntOp::RemU | IntOp::RemS => div(op, bits, a, b),
        IntOp::MinU => (a & m).min(b & m),
        IntOp::MaxU => (a & m).max(b & m),
        IntOp::MinS => sext(a, bits).min(sext(b, bits)) as u64 & m,
        IntOp::MaxS => sext(a, bits).max(sext(b, bits)) as u64 & m,
        IntOp::AddSatS => {
            (sext(a, 32) + sext(b, 32)).clamp(i32::MIN as i64, i32::MAX as i64) as u64 & m
        }
        IntOp::SubSatS => {
            (sext(a, 32) - sext(b, 32)).clamp(i32::MIN as i64, i32::MAX as i64) as u64 & m
        }
        IntOp::Mul24LoU => ((a & 0xff_ffff) * (b & 0xff_ffff)) & 0xffff_ffff,
        IntOp::Mul24HiU => ((a & 0xff_ffff) * (b & 0xff_ffff)) >> 16 & 0xffff_ffff,
        IntOp::Mul24LoS => (sext(a, 24) * sext(b, 24)) as u64 & 0xffff_ffff,
        IntOp::Mul24HiS => ((sext(a, 24) * sext(b, 24)) >> 16) as u64 & 0xffff_ffff,
        IntOp::MinU16x2 => lanes16(a, b, |x, y| x.min(y)),
        IntOp::MaxU16x2 => lanes16(a, b, |x, y| x.max(y)),
        IntOp::MinS16x2 => lanes16(a, b, |x, y| sext(x, 16).min(sext(y, 16)) as u64),
        IntOp::MaxS16x2 => lanes16(a, b, |x, y| sext(x, 16).max(sext(y, 16)) as u64),
        IntOp::AddU16x2 => lanes16(a, b, |x, y| x.wrapping_add(y)),
        IntOp::SubU16x2 => lanes16(a, b, |x, y| x.wrapping_sub(y)),
        IntOp::BmskClamp | IntOp::BmskWrap => {
            let (pos, width) = if op == IntOp::BmskWrap {
                (a & 31, b & 31)
            } else {
                (a.min(32), b.min(32))
            };
            if pos >= 32 {
                0
            } else {
                (mask(width as u32) << pos) & 0xffff_ffff
            }
        }
        IntOp::SzextClampS | IntOp::SzextClampU | IntOp::SzextWrapS | IntOp::SzextWrapU => {
            let n = match op {
                IntOp::SzextWrapS | IntOp::SzextWrapU => (b & 31) as u32,
                _ => b.min(32) as u32,
            };
            let signed = matches!(op, IntOp::SzextClampS | IntOp::SzextWrapS);
            if n == 0 {
                0
            } else if signed {
                sext(a, n) as u64 & 0xffff_ffff
            } else {
                a & mask(n)
            }
        }
    }
}

/// The unary operations of [`IntUnOp`].
pub fn int_un(op: IntUnOp, bits: u32, a: u64) -> u64 {
    let m = mask(bits);
    let a = a & m;
    match op {
        IntUnOp::AbsS => sext(a, bits).wrapping_abs() as u64 & m,
        IntUnOp::NegS => a.wrapping_neg() & m,
        IntUnOp::Popc => a.count_ones() as u64,
        IntUnOp::Clz => (a.leading_zeros() - (64 - bits)) as u64,
        IntUnOp::Brev => a.reverse_bits() >> (64 - bits),
        IntUnOp::Cnot => (a == 0) as u64,
        IntUnOp::BfindU | IntUnOp::BfindS | IntUnOp::BfindShiftU | IntUnOp::BfindShiftS => {
            let signed = matches!(op, IntUnOp::BfindS | IntUnOp::BfindShiftS);
            let x = if signed && sext(a, bits) < 0 {
                !a & m
            } else {
                a
            };
            if x == 0 {
                return 0xffff_ffff;
            }
            let pos = 63 - x.leading_zeros() as u64;
            if matches!(op, IntUnOp::BfindShiftU | IntUnOp::BfindShiftS) {
                bits as u64 - 1 - pos
            } else {
                pos
            }
        }
    }
}

/// `mul.wide`: the full product of two `bits`-bit values.
pub fn mul_wide(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    if signed {
        (sext(a, bits).wrapping_mul(sext(b, bits))) as u64 & mask(2 * bits)
    } else {
        ((a & mask(bits)).wrapping_mul(b & mask(bits))) & mask(2 * bits)
    }
}

/// `mad.lo/.hi/.wide` (`sat` only for `.hi.s32`: the sum saturates).
pub fn mad(
    kind: crate::program::MadKind,
    bits: u32,
    signed: bool,
    sat: bool,
    a: u64,
    b: u64,
    c: u64,
) -> u64 {
    use crate::program::MadKind;
    let m = mask(bits);
    match kind {
        MadKind::Lo => a.wrapping_mul(b).wrapping_add(c) & m,
        MadKind::Wide => mul_wide(a, b, bits, signed).wrapping_add(c) & mask(2 * bits),
        MadKind::Hi => {
            let hi = if signed { IntOp::MulHiS } else { IntOp::MulHiU };
            let h = int_op(hi, bits, a, b);
            if sat && signed && bits == 32 {
                (sext(h, 32) + sext(c, 32)).clamp(i32::MIN as i64, i32::MAX as i64) as u64 & m
            } else {
                h.wrapping_add(c) & m
            }
        }
    }
}

/// `bfe`: extracts `len` bits at `pos` (both taken mod 256), zero- or
/// sign-extended.
pub fn bfe(a: u64, pos: u64, len: u64, bits: u32, signed: bool) -> u64 {
    let msb = bits as u64 - 1;
    let pos = pos & 0xff;
    let len = len & 0xff;
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..bits as u64 {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// `bfi`: inserts the low `len` bits of `a` into `b` at `pos`.
pub fn bfi(a: u64, b: u64, pos: u64, len: u64, bits: u32) -> u64 {
    let msb = bits as u64 - 1;
    let (pos, len) = (pos & 0xff, len & 0xff);
    let mut f = b & mask(bits);
    let mut i = 0;
    while i < len && pos + i <= msb {
        f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
        i += 1;
    }
    f
}

/// `prmt.b32{.mode}` (mode 0 generic; 1.. f4e b4e rc8 ecl ecr rc16).
pub fn prmt(a: u64, b: u64, c: u64, mode: u8) -> u64 {
    let src = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    let byte = |i: u64| (src >> (8 * (i & 7))) & 0xff;
    let mut d = 0u64;
    if mode == 0 {
        for k in 0..4 {
            let sel = (c >> (4 * k)) & 0xf;
            let mut v = byte(sel & 7);
            if sel & 8 != 0 {
                v = if v & 0x80 != 0 { 0xff } else { 0 };
            }
            d |= v << (8 * k);
        }
        return d;
    }
    let s = c & 3;
    // For each mode and selector, the source byte of d.b0 .. d.b3.
    let picks: [u64; 4] = match mode {
        // f4e: forward 4 extract.
        1 => [s, s + 1, s + 2, s + 3],
        // b4e: backward 4 extract.
        2 => [
            s,
            s.wrapping_sub(1) & 7,
            s.wrapping_sub(2) & 7,
            s.wrapping_sub(3) & 7,
        ],
        // rc8: replicate the selected byte.
        3 => [s; 4],
        // ecl: edge clamp left.
        4 => [s, 1.max(s), 2.max(s), 3],
        // ecr: edge clamp right.
        5 => [0, 1.min(s), 2.min(s), 3.min(s)],
        // rc16: replicate the selected half.
        _ => {
            let h = (s & 1) * 2;
            [h, h + 1, h, h + 1]
        }
    };
    for (k, p) in picks.iter().enumerate() {
        d |= byte(*p) << (8 * k);
    }
    d
}

/// `shf.l`/`shf.r` of the 64-bit value `b:a` by `c` (taken mod 32 with
/// `.wrap`, clamped to 32 with `.clamp`).
pub fn shf(a: u64, b: u64, c: u64, left: bool, wrap: bool) -> u64 {
    let n = if wrap { c & 31 } else { c.min(32) };
    let v = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    if left {
        ((v << n) >> 32) & 0xffff_ffff
    } else {
        (v >> n) & 0xffff_ffff
    }
}

/// `fns.b32`: the position of the `offset`-th set bit of `mask` from `base`.
pub fn fns(mask: u64, base: u64, offset: u64) -> u64 {
    let offset = offset as u32 as i32;
    let base = (base & 0xffff_ffff) as i64;
    if offset == 0 {
        return if base < 32 && (mask >> base) & 1 == 1 {
            base as u64
        } else {
            0xffff_ffff
        };
    }
    let mut count = offset.unsigned_abs() - 1;
    let inc: i64 = if offset > 0 { 1 } else { -1 };
    let mut pos = base;
    while (0..32).contains(&pos) {
        if (mask >> pos) & 1 == 1 {
            if count == 0 {
                return pos as u64;
            }
            count -= 1;
        }
        pos += inc;
    }
    0xffff_ffff
}

/// `lop3.b32`: each result bit is bit `(a<<2)|(b<<1)|c` of `lut`.
pub fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let mut d = 0u64;
    for idx in 0..8u8 {
        if lut >> idx & 1 == 1 {
            let ta = if idx & 4 != 0 { a } else { !a };
            let tb = if idx & 2 != 0 { b } else { !b };
            let tc = if idx & 1 != 0 { c } else { !c };
            d |= ta & tb & tc;
        }
    }
    d & 0xffff_ffff
}

/// `sad`: `c + |a - b|`.
pub fn sad(a: u64, b: u64, c: u64, bits: u32, signed: bool) -> u64 {
    let diff = if signed {
        sext(a, bits).abs_diff(sext(b, bits))
    } else {
        (a & mask(bits)).abs_diff(b & mask(bits))
    };
    c.wrapping_add(diff) & mask(bits)
}

/// `dp4a` / `dp2a.lo|hi`.
pub fn dp(a: u64, b: u64, c: u64, a_signed: bool, b_signed: bool, dp2a_hi: Option<bool>) -> u64 {
    let part = |v: u64, i: u32, bits: u32, signed: bool| -> i64 {
        let x = (v >> (i * bits)) & mask(bits);
        if signed {
            sext(x, bits)
        } else {
            x as i64
        }
    };
    let mut acc = c as u32 as i64;
    match dp2a_hi {
        None => {
            for i in 0..4 {
                acc = acc.wrapping_add(part(a, i, 8, a_signed) * part(b, i, 8, b_signed));
            }
        }
        Some(hi) => {
            let first = if hi { 2 } else { 0 };
            for i in 0..2 {
                acc = acc.wrapping_add(part(a, i, 16, a_signed) * part(b, first + i, 8, b_signed));
            }
        }
    }
    acc as u64 & 0xffff_ffff
}

/// An integer comparison of `bits`-bit values.
#[inline(always)]
pub fn int_cmp(cmp: crate::program::Cmp, signed: bool, bits: u32, a: u64, b: u64) -> bool {
    use crate::program::Cmp;
    use std::cmp::Ordering;
    let ord = if signed {
        sext(a, bits).cmp(&sext(b, bits))
    } else {
        (a & mask(bits)).cmp(&(b & mask(bits)))
    };
    match cmp {
        Cmp::Eq | Cmp::Equ => ord == Ordering::Equal,
        Cmp::Ne | Cmp::Neu => ord != Ordering::Equal,
        Cmp::Lt | Cmp::Ltu => ord == Ordering::Less,
        Cmp::Le | Cmp::Leu => ord != Ordering::Greater,
        Cmp::Gt | Cmp::Gtu => ord == Ordering::Greater,
        Cmp::Ge | Cmp::Geu => ord != Ordering::Less,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_by_any_amount() {
        assert_eq!(shl(1, 31, 32), 0x8000_0000);
        assert_eq!(shl(1, 32, 32), 0);
        assert_eq!(shl(1, u64::MAX, 64), 0);
        assert_eq!(shr_u(0x8000_0000, 31, 32), 1);
        assert_eq!(shr_u(0x8000_0000, 32, 32), 0);
        assert_eq!(shr_s(0x8000_0000, 31, 32), 0xffff_ffff);
        assert_eq!(shr_s(0x8000_0000, 1000, 32), 0xffff_ffff);
        assert_eq!(shr_s(0x4000, 1000, 16), 0);
        assert_eq!(shr_s(0x8000, 0, 16), 0x8000);
    }

    #[test]
    fn division_edges() {
        assert_eq!(
            div(IntOp::DivS, 32, i32::MIN as u32 as u64, 0xffff_ffff),
            i32::MIN as u32 as u64
        );
        assert_eq!(div(IntOp::RemS, 32, i32::MIN as u32 as u64, 0xffff_ffff), 0);
        assert_eq!(div(IntOp::DivU, 32, 7, 0), 0xffff_ffff);
        assert_eq!(div(IntOp::RemU, 64, 7, 0), 7);
        assert_eq!(
            div(IntOp::DivS, 16, (-7i16) as u16 as u64, 2),
            (-3i16) as u16 as u64
        );
        assert_eq!(
            div(IntOp::RemS, 16, (-7i16) as u16 as u64, 2),
            (-1i16) as u16 as u64
        );
    }

    #[test]
    fn bit_fields() {
        assert_eq!(bfe(0xF0, 4, 4, 32, false), 0xF);
        assert_eq!(bfe(0xF0, 4, 4, 32, true), 0xffff_ffff);
        assert_eq!(bfe(0x8000_0000, 31, 200, 32, true), 0xffff_ffff);
        assert_eq!(bfe(0xF0, 4, 0, 32, true), 0);
        assert_eq!(bfi(0xF, 0, 28, 8, 32), 0xF000_0000);
        assert_eq!(bfi(0xF, 0x1234, 40, 8, 32), 0x1234);
        assert_eq!(int_un(IntUnOp::BfindU, 32, 0), 0xffff_ffff);
        assert_eq!(int_un(IntUnOp::BfindS, 32, 0xffff_ffff), 0xffff_ffff);
        assert_eq!(int_un(IntUnOp::BfindShiftU, 32, 1), 31);
        assert_eq!(int_un(IntUnOp::Clz, 32, 0), 32);
        assert_eq!(int_un(IntUnOp::Clz, 64, 1), 63);
        assert_eq!(int_un(IntUnOp::Brev, 32, 1), 0x8000_0000);
        assert_eq!(fns(0xaaaa_aaaa, 3, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, (-1i32) as u32 as u64), 1);
        assert_eq!(fns(0, 0, 1), 0xffff_ffff);
    }

    #[test]
    fn byte_permutes_and_funnel_shifts() {
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x3210, 0), 0x4433_2211);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x7654, 0), 0x8877_6655);
        assert_eq!(prmt(0x0000_0080, 0, 0x8888, 0), 0xffff_ffff);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 1, 1), 0x5544_3322);
        assert_eq!(prmt(0x4433_2211, 0, 2, 3), 0x3333_3333);
        assert_eq!(prmt(0x4433_2211, 0, 1, 4), 0x4433_2222);
        assert_eq!(prmt(0x4433_2211, 0, 1, 5), 0x2222_2211);
        assert_eq!(prmt(0x4433_2211, 0, 1, 6), 0x4433_4433);
        assert_eq!(shf(0x8000_0000, 0x1, 1, true, true), 0x3);
        assert_eq!(shf(0x1, 0x2, 33, true, false), 0x1);
        assert_eq!(shf(0x1, 0x2, 1, false, true), 0);
        assert_eq!(lop3(0xF0, 0xCC, 0xAA, 0x80), 0x80);
    }

    #[test]
    fn wide_and_high_products() {
        assert_eq!(int_op(IntOp::MulHiU, 64, u64::MAX, u64::MAX), u64::MAX - 1);
        assert_eq!(int_op(IntOp::MulHiS, 32, 0xffff_ffff, 0xffff_ffff), 0);
        assert_eq!(mul_wide(0xffff_ffff, 0xffff_ffff, 32, true), 1);
        assert_eq!(mul_wide(0xffff_ffff, 2, 32, false), 0x1_ffff_fffe);
        assert_eq!(int_un(IntUnOp::AbsS, 32, 0x8000_0000), 0x8000_0000);
        assert_eq!(int_op(IntOp::AddSatS, 32, 0x7fff_ffff, 1), 0x7fff_ffff);
        assert_eq!(dp(0x0102_0304, 0xffff_ffff, 10, false, true, None), 0);
    }
}
