//! Enums: payloads, explicit discriminants, niches (`Option<NonZeroU32>`,
//! `Option<char>`, `Option<Option<bool>>`, an enum inside a niche), and the
//! `Option` / `Result` combinators.

use crate::compare::Compare::Exact;
use crate::encode::{lanes, opt};
use crate::harness::Suite;
use std::num::{NonZeroU32, NonZeroU64};

/// An instruction with payloads of different shapes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Add(u32, u32),
    Negate(i64),
    Scale { factor: u16, value: u64 },
    Nop,
}

impl Op {
    fn decode(a: u64, b: u64) -> Op {
        match a % 4 {
            0 => Op::Add(a as u32, b as u32),
            1 => Op::Negate(b as i64),
            2 => Op::Scale {
                factor: (a >> 8) as u16,
                value: b,
            },
            _ => Op::Nop,
        }
    }

    fn eval(self) -> u64 {
        match self {
            Op::Add(x, y) => x.wrapping_add(y) as u64,
            Op::Negate(v) => v.wrapping_neg() as u64,
            Op::Scale { factor, value } => value.wrapping_mul(factor as u64),
            Op::Nop => 0xA5A5,
        }
    }
}

/// A field-less enum with chosen discriminants, converted both ways.
#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(u8)]
enum Level {
    Low = 3,
    Mid = 40,
    High = 200,
}

impl TryFrom<u8> for Level {
    type Error = u8;
    fn try_from(v: u8) -> Result<Level, u8> {
        match v {
            3 => Ok(Level::Low),
            40 => Ok(Level::Mid),
            200 => Ok(Level::High),
            other => Err(other),
        }
    }
}

/// An enum whose payload has a niche, nested in an `Option`: rustc stores
/// `None` in the niche, and the device must decode it the same way.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Tagged {
    Flag(bool),
    Count(NonZeroU64),
}

/// Why a parse failed.
#[derive(Clone, Copy, PartialEq, Debug)]
enum ParseError {
    Empty,
    TooLarge(u64),
    BadDigit { position: u8 },
}

/// Reads the low bytes of `x` as decimal digits (byte value % 16 must be
/// < 10) until a zero byte; `?` and early returns through `Result`.
fn parse_digits(x: u64) -> Result<u32, ParseError> {
    let bytes = x.to_le_bytes();
    let len = bytes.iter().position(|&c| c == 0).unwrap_or(8);
    if len == 0 {
        return Err(ParseError::Empty);
    }
    let mut value = 0u64;
    for (position, &c) in bytes[..len].iter().enumerate() {
        let digit = checked_digit(c).ok_or(ParseError::BadDigit {
            position: position as u8,
        })?;
        value = value * 10 + digit as u64;
    }
    u32::try_from(value).map_err(|_| ParseError::TooLarge(value))
}

fn checked_digit(c: u8) -> Option<u8> {
    Some(c % 16).filter(|&d| d < 10)
}

pub fn run(s: &mut Suite) {
    s.case("enum/payload_match", Exact, |a, b| {
        let op = Op::decode(a, b);
        let same = op == Op::decode(a, b ^ 1);
        (op.eval() as u128) << 1 | same as u128
    });
    s.case("enum/discriminants", Exact, |a, b| {
        let level = Level::try_from(a as u8);
        let fallback = match Level::try_from((b % 3) as u8 * 37 + 3) {
            Ok(level) => level,
            Err(_) => Level::High,
        };
        let encoded = match level {
            Ok(l) => l as u8 as u64 | 1 << 8,
            Err(raw) => raw as u64,
        };
        lanes([encoded, fallback as u64])
    });
    s.case("enum/nonzero_niche", Exact, |a, b| {
        let n = NonZeroU32::new(a as u32);
        let m = NonZeroU32::new(b as u32);
        // Same size as u32: None lives in the zero value.
        let size_ok = size_of::<Option<NonZeroU32>>() == size_of::<u32>();
        let product = n.and_then(|n| m.and_then(|m| n.checked_mul(m)));
        let zeros = n.map_or(u32::MAX, |n| n.trailing_zeros());
        opt(product.map(NonZeroU32::get)) | (zeros as u128) << 72 | (size_ok as u128) << 127
    });
    s.case("enum/char_and_nested_options", Exact, |a, b| {
        let c = char::from_u32(a as u32);
        let nested: Option<Option<bool>> = match b % 3 {
            0 => None,
            1 => Some(None),
            _ => Some(Some(b & 4 != 0)),
        };
        let nested_code = match nested {
            None => 0u64,
            Some(None) => 1,
            Some(Some(flag)) => 2 + flag as u64,
        };
        opt(c.map(u32::from)) | (nested_code as u128) << 72
    });
    s.case("enum/niche_in_enum", Exact, |a, b| {
        let tagged = if a & 1 == 0 {
            NonZeroU64::new(b).map(Tagged::Count)
        } else {
            Some(Tagged::Flag(b & 1 == 1))
        };
        let layout_ok = size_of::<Option<Tagged>>() == size_of::<Tagged>();
        let code = match tagged {
            None => 0,
            Some(Tagged::Flag(f)) => 1 + f as u64,
            Some(Tagged::Count(n)) => n.get().rotate_left(3) | 4,
        };
        lanes([code, layout_ok as u64])
    });
    s.case("enum/option_combinators", Exact, |a, b| {
        let x = (a as u32).checked_add(b as u32);
        let y = x
            .filter(|v| v % 3 != 0)
            .or_else(|| (b as u16).checked_mul(3).map(u32::from));
        let z = y.or_else(|| x.map(|v| v >> 3)).map_or(11, |v| v ^ 0x55);
        let w = x
            .and_then(|v| v.checked_sub(b as u32 >> 1))
            .unwrap_or_default();
        let mut slot = Some(a);
        let taken = slot.take();
        lanes([
            z,
            w,
            y.is_some_and(|v| v > 1000) as u32,
            (taken == Some(a) && slot.is_none()) as u32,
        ])
    });
    // Option::zip / xor / and / or and Result::unwrap_or: their functions keep
    // dead cleanup blocks that LowerUnwinding must remove.
    s.case("enum/option_zip_xor_and_or", Exact, |a, b| {
        let x = (a as u32).checked_add(b as u32);
        let y = (a as u16).checked_mul(b as u16);
        let zipped = x.zip(y).map_or(0, |(p, q)| (p as u64) << 16 | q as u64);
        let either = x.xor(y.map(u32::from)).unwrap_or(3);
        let both = x.and(y).unwrap_or(5);
        let first = x.or(y.map(u32::from)).unwrap_or(9);
        lanes([zipped, either as u64 | (both as u64) << 32]) ^ (first as u128) << 96
    });
    s.case("enum/result_unwrap_or", Exact, |a, b| {
        let parsed: Result<u32, ParseError> = parse_digits(a);
        lanes([
            parsed.unwrap_or(b as u32),
            Level::try_from(b as u8).map(|l| l as u32).unwrap_or(7),
        ])
    });
    s.case("enum/result_combinators", Exact, |a, b| {
        let parsed = parse_digits(a);
        let code = match parsed {
            Ok(v) => v as u64,
            Err(ParseError::Empty) => 1 << 40,
            Err(ParseError::TooLarge(v)) => 2 << 40 ^ v,
            Err(ParseError::BadDigit { position }) => 3 << 40 | position as u64,
        };
        let chained = parse_digits(b)
            .and_then(|v| v.checked_add(1).ok_or(ParseError::Empty))
            .map(|v| v as u64 * 2)
            .unwrap_or_else(|e| {
                if matches!(e, ParseError::BadDigit { .. }) {
                    9
                } else {
                    5
                }
            });
        lanes([code, chained])
    });
}
