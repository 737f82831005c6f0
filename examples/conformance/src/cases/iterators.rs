//! Slices and iterators over local arrays: adapters (`enumerate`, `zip`,
//! `map`, `filter`, `rev`, `step_by`, `chain`, `take_while`, …), consumers
//! (`fold`, `sum`, `count`, `position`, `max_by_key`, …), `chunks`,
//! `windows`, `split_at`, `iter_mut`, `sort_unstable` and `binary_search`.
//!
//! Every case starts from [`sixteen`], an array built from both inputs. Sums
//! that could overflow use `wrapping_add` (or widen first), since the dev
//! profile checks overflow.

use crate::compare::Compare::Exact;
use crate::encode::{lanes, opt};
use crate::harness::Suite;
use conformance_device::helpers::mix64;

/// Sixteen `u32`s from `a` and `b`: their halves, then mixes of them, so that
/// the array has repeats, zeros and order when the inputs do.
fn sixteen(a: u64, b: u64) -> [u32; 16] {
    core::array::from_fn(|i| match i {
        0 => a as u32,
        1 => (a >> 32) as u32,
        2 => b as u32,
        3 => (b >> 32) as u32,
        4..=7 => (a >> (8 * (i - 4))) as u32 & 0xFF,
        _ => mix64(a ^ b.rotate_left(i as u32)) as u32 >> (i % 5 * 7),
    })
}

/// A digest of an array, sensitive to the order of the elements.
fn digest(xs: &[u32]) -> u64 {
    xs.iter().fold(0u64, |h, &x| mix64(h ^ x as u64))
}

/// Sorts without `core`'s sort, which the device linker cannot build yet
/// (see `known_failures`), so that `binary_search` is tested regardless.
fn insertion_sort(xs: &mut [u32]) {
    for i in 1..xs.len() {
        let mut j = i;
        while j > 0 && xs[j - 1] > xs[j] {
            xs.swap(j - 1, j);
            j -= 1;
        }
    }
}

pub fn run(s: &mut Suite) {
    s.case("iter/fold_sum_rev", Exact, |a, b| {
        let xs = sixteen(a, b);
        let wide_sum: u64 = xs.iter().map(|&x| x as u64).sum();
        let reversed = xs.iter().rev().fold(0u32, |h, &x| h.rotate_left(5) ^ x);
        let weighted = xs.iter().enumerate().fold(0u32, |acc, (i, &x)| {
            acc.wrapping_add(x.wrapping_mul(i as u32 + 1))
        });
        lanes([wide_sum, reversed as u64 | (weighted as u64) << 32])
    });
    s.case("iter/zip_map_filter_count", Exact, |a, b| {
        let xs = sixteen(a, b);
        let ys = sixteen(b, a);
        let greater = xs.iter().zip(&ys).filter(|(x, y)| x > y).count();
        let odd_products = xs
            .iter()
            .zip(ys.iter())
            .map(|(&x, &y)| x.wrapping_mul(y))
            .filter(|p| p % 2 == 1)
            .count();
        let all_small = xs.iter().all(|&x| x < 1 << 20);
        let any_seventh = ys.iter().any(|&y| y % 7 == 0);
        lanes([
            greater as u32,
            odd_products as u32,
            all_small as u32,
            any_seventh as u32,
        ])
    });
    s.case("iter/iter_mut_enumerate", Exact, |a, b| {
        let mut xs = sixteen(a, b);
        for (i, x) in xs.iter_mut().enumerate() {
            *x = x.rotate_left(i as u32) ^ i as u32;
        }
        xs.iter_mut()
            .filter(|x| **x % 3 == 0)
            .for_each(|x| *x = !*x);
        digest(&xs) as u128
    });
    s.case("iter/step_by_chunks_windows", Exact, |a, b| {
        let xs = sixteen(a, b);
        let strided = xs
            .iter()
            .step_by(3)
            .fold(0u32, |h, &x| h ^ x.rotate_left(3));
        let chunk_maxima = xs
            .chunks(5)
            .map(|c| c.iter().copied().max().unwrap_or(0))
            .fold(0u32, |h, m| h.wrapping_add(m));
        let rising = xs.windows(3).filter(|w| w[0] < w[1] && w[1] < w[2]).count();
        let exact_chunks = xs
            .chunks_exact(4)
            .map(|c| c[0] ^ c[3])
            .fold(0u32, |h, x| h.rotate_left(1) ^ x);
        lanes([strided, chunk_maxima, rising as u32, exact_chunks])
    });
    s.case("iter/split_at_position", Exact, |a, b| {
        let xs = sixteen(a, b);
        let (left, right) = xs.split_at((a % 17) as usize);
        let position = right.iter().position(|&x| x & 1 == 1);
        let last_even = left.iter().rposition(|&x| x % 2 == 0);
        let max_key = xs
            .iter()
            .enumerate()
            .max_by(|(_, x), (_, y)| x.count_ones().cmp(&y.count_ones()))
            .map(|(i, _)| i);
        opt(position.map(|p| p as u32))
            ^ opt(last_even.map(|p| p as u32)) << 32
            ^ (max_key.unwrap_or(99) as u128) << 100
    });
    s.case("iter/chain_take_skip", Exact, |a, b| {
        let xs = sixteen(a, b);
        let head: u32 = xs
            .iter()
            .take_while(|&&x| x != 0)
            .fold(0u32, |h, &x| h.wrapping_add(x));
        let tail = xs
            .iter()
            .skip_while(|&&x| x > 255)
            .skip(2)
            .take(5)
            .fold(0u32, |h, &x| h ^ x);
        let chained = xs[..4]
            .iter()
            .chain(xs[12..].iter().rev())
            .fold(0u32, |h, &x| h.rotate_left(7) ^ x);
        let nth = xs.iter().rev().nth((b % 20) as usize).copied();
        lanes([head, tail, chained, nth.unwrap_or(0xDEAD)])
    });
    // The sorts reach core panic helpers that LowerPanics gives device bodies.
    s.case("iter/sort_unstable", Exact, |a, b| {
        let mut xs = sixteen(a, b);
        xs.sort_unstable();
        let sorted = xs.windows(2).all(|w| w[0] <= w[1]);
        (digest(&xs) as u128) << 1 | sorted as u128
    });
    // Keys with ties: sort_unstable may order equal keys either way, but the
    // same code on both sides must pick the same way.
    s.case("iter/sort_by_key_descending", Exact, |a, b| {
        let mut xs = sixteen(a, b);
        xs.sort_unstable_by(|x, y| y.cmp(x));
        let mut by_ones = sixteen(b, a);
        by_ones.sort_unstable_by_key(|x| x.count_ones());
        lanes([digest(&xs), digest(&by_ones)])
    });
    s.case("iter/binary_search", Exact, |a, b| {
        let mut xs = sixteen(a, b);
        insertion_sort(&mut xs);
        let encode = |r: Result<usize, usize>| match r {
            Ok(i) => i as u32,
            Err(i) => 0x100 | i as u32,
        };
        // A key that is present (the index found among equal elements is up to
        // the algorithm, so the value found is compared) and one most likely absent.
        let present = xs[(b % 16) as usize];
        lanes([
            encode(xs.binary_search(&present).map(|i| xs[i] as usize)),
            encode(xs.binary_search(&(a as u32 ^ 0x5555))),
            xs.partition_point(|&x| x < b as u32) as u32,
        ])
    });
    s.case("iter/max_by_key", Exact, |a, b| {
        let xs = sixteen(a, b);
        let widest = xs
            .iter()
            .enumerate()
            .max_by_key(|&(_, &x)| x.count_ones())
            .map(|(i, _)| i);
        let narrowest = xs.iter().min_by_key(|&&x| x.leading_zeros()).copied();
        lanes([widest.unwrap_or(99) as u32, narrowest.unwrap_or(7)])
    });
    s.case("iter/min_max_last", Exact, |a, b| {
        let xs = sixteen(a, b);
        let min = xs.iter().min().copied();
        let max = xs.iter().max().copied();
        let last_odd = xs.iter().rfind(|&&x| x % 2 == 1).copied();
        let min_by = xs
            .iter()
            .min_by(|x, y| x.trailing_zeros().cmp(&y.trailing_zeros()).then(y.cmp(x)))
            .copied();
        lanes([
            min.unwrap_or(1),
            max.unwrap_or(2),
            last_odd.unwrap_or(3),
            min_by.unwrap_or(4),
        ])
    });
}
