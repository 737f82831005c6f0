//! Control flow: `match` with guards, ranges and bindings, `if let`,
//! `let … else`, `while`, `loop` with `break value`, labelled breaks and
//! continues, early returns. Every loop is bounded for every input.

use crate::compare::Compare::Exact;
use crate::encode::lanes;
use crate::harness::Suite;

/// A classification with guards, ranges, bindings and or-patterns.
fn classify(x: i32, y: i32) -> u32 {
    match (x, y) {
        (0, 0) => 1,
        (0, _) | (_, 0) => 2,
        (i32::MIN, _) => 3,
        (small @ -9..=9, _) if small == y => 4,
        (a, b) if a.wrapping_add(b) == 0 => 5,
        (1..=127, 128..) => 6,
        (a, _) if a % 2 == 0 => 7 + (a & 0xF0) as u32,
        _ => 0xFFFF,
    }
}

/// `let … else`: the first of two nonzero bytes of `x`, and their sum.
fn first_two_nonzero_bytes(x: u64) -> u32 {
    let mut bytes = x.to_le_bytes().into_iter().filter(|&c| c != 0);
    let Some(first) = bytes.next() else {
        return 0x10000;
    };
    let Some(second) = bytes.next() else {
        return 0x20000 | first as u32;
    };
    (first as u32) << 8 | second as u32
}

/// The number of decimal digits of `x` with a `while` loop.
fn decimal_digits(mut x: u64) -> u32 {
    let mut digits = 1;
    while x >= 10 {
        x /= 10;
        digits += 1;
    }
    digits
}

/// The first index at which the sum of `x`'s bytes exceeds `limit`, with
/// `loop` and `break value`.
fn prefix_sum_passes(x: u64, limit: u32) -> u32 {
    let bytes = x.to_le_bytes();
    let mut i = 0;
    let mut sum = 0u32;
    loop {
        if i == bytes.len() {
            break 0x100;
        }
        sum += bytes[i] as u32;
        if sum > limit {
            break i as u32;
        }
        i += 1;
    }
}

/// Searches a 8×8 grid of bits for the first row whose bit count equals a
/// column index, with labelled `continue` and `break`.
fn labelled_search(grid: u64, key: u64) -> u32 {
    let mut found = 0xFFu32;
    let mut visited = 0u32;
    'rows: for row in 0..8u32 {
        let bits = (grid >> (8 * row)) as u8;
        if bits == 0 {
            continue 'rows;
        }
        for column in 0..8u32 {
            visited += 1;
            if (key >> (row * 8 + column)) & 1 == 1 && bits.count_ones() == column {
                found = row << 4 | column;
                break 'rows;
            }
            if column > bits.count_ones() + 2 {
                continue 'rows;
            }
        }
    }
    found | visited << 8
}

pub fn run(s: &mut Suite) {
    s.case("ctl/match_guards", Exact, |a, b| {
        lanes([
            classify(a as i32, b as i32),
            classify(b as i32, a as i32),
            classify(a as i8 as i32, a as i8 as i32),
        ])
    });
    s.case("ctl/if_let_else_if", Exact, |a, b| {
        let n = (a as u32).checked_sub(b as u32);
        let code = if let Some(0) = n {
            1
        } else if let Some(d @ 1..=100) = n {
            2 + d
        } else if let (Some(_), true) = (n, a > b) {
            200
        } else {
            300
        };
        code as u128
    });
    s.case("ctl/let_else", Exact, |a, b| {
        lanes([first_two_nonzero_bytes(a), first_two_nonzero_bytes(b)])
    });
    s.case("ctl/while_loop", Exact, |a, b| {
        lanes([decimal_digits(a), decimal_digits(b), decimal_digits(a ^ b)])
    });
    s.case("ctl/loop_break_value", Exact, |a, b| {
        lanes([
            prefix_sum_passes(a, b as u32 & 0x3FF),
            prefix_sum_passes(b, 100),
        ])
    });
    s.case("ctl/labelled_break", Exact, |a, b| {
        lanes([labelled_search(a, b), labelled_search(b, !a)])
    });
}
