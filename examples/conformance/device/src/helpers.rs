//! `#[device]` functions that the binary's cases call across the crate
//! boundary: plain, recursive, looping and generic ones.
//!
//! All of them are total: they never panic and never overflow (the suite is
//! built in the dev profile, where an overflowing `+` would panic), so they can
//! be called with any input.

use cuda_device::device;

/// Greatest common divisor by Euclid's recursion. The depth is bounded (at
/// most about 93 calls for `u64`, the Fibonacci worst case), so it also tests
/// recursion on the device, which needs a call stack.
#[device]
pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The `n`-th Fibonacci number by naive double recursion; `n` is reduced to
/// `0..=15` so that the tree of calls stays small.
#[device]
pub fn fib(n: u32) -> u64 {
    let n = n % 16;
    if n < 2 {
        n as u64
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// The SplitMix64 finaliser: a bijective mix of the bits of `x`.
#[device]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The integer square root by Newton's iteration, written independently of
/// `u64::isqrt` so that the two can be compared.
#[device]
pub fn isqrt_newton(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    // Start above the root; every step then decreases until it stops.
    let mut x = 1u64 << (64 - n.leading_zeros()).div_ceil(2);
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// The number of Collatz steps from `n` to 1, giving up after `limit` steps
/// (and on values whose next step would overflow).
#[device]
pub fn collatz_steps(mut n: u64, limit: u32) -> u32 {
    let mut steps = 0;
    while n > 1 && steps < limit {
        n = if n.is_multiple_of(2) {
            n / 2
        } else {
            match n.checked_mul(3).and_then(|m| m.checked_add(1)) {
                Some(next) => next,
                None => break,
            }
        };
        steps += 1;
    }
    steps
}

/// The largest element of `xs` (the first of equal ones), or `None` when
/// empty: a generic device function, instantiated by the calling crate.
#[device]
pub fn largest<T: PartialOrd + Copy>(xs: &[T]) -> Option<T> {
    let (&first, rest) = xs.split_first()?;
    Some(
        rest.iter()
            .fold(first, |best, &x| if x > best { x } else { best }),
    )
}
