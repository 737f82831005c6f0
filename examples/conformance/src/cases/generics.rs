//! Generic functions and traits: monomorphisation over several types,
//! associated constants and types, default methods, const generics, operator
//! overloading, a hand-written `Iterator`, `impl Trait` in return position,
//! and trait objects (`&dyn Trait`, two implementations chosen at run time,
//! called through the vtable on the device).

use crate::compare::Compare::Exact;
use crate::encode::{lanes, wide, Bits};
use crate::harness::Suite;
use std::ops::{Add, Mul, Neg};

/// A numeric type the generic code below is written against.
trait Number: Copy + PartialOrd {
    const ZERO: Self;
    const NAME_LEN: u32;
    fn from_u64(x: u64) -> Self;
    fn combine(self, other: Self) -> Self;
    /// A default method that implementations keep.
    fn combine_thrice(self, other: Self) -> Self {
        self.combine(other).combine(other).combine(other)
    }
}

macro_rules! wrapping_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const ZERO: Self = 0;
            const NAME_LEN: u32 = stringify!($t).len() as u32;
            fn from_u64(x: u64) -> Self {
                x as $t
            }
            fn combine(self, other: Self) -> Self {
                self.wrapping_mul(3).wrapping_add(other)
            }
        }
    )*};
}
wrapping_number!(u8, i16, u32, i64, u128);

/// A float implementation whose `combine` is exact for small values.
impl Number for f64 {
    const ZERO: Self = 0.0;
    const NAME_LEN: u32 = 3;
    fn from_u64(x: u64) -> Self {
        (x % 1024) as f64
    }
    fn combine(self, other: Self) -> Self {
        self * 0.5 + other
    }
}

/// Generic over `T`: one instance per type it is called with.
fn fold_pairs<T: Number>(a: u64, b: u64) -> T {
    let (x, y) = (T::from_u64(a), T::from_u64(b));
    let mut acc = T::ZERO;
    for _ in 0..T::NAME_LEN {
        acc = acc.combine(if x > y { x } else { y });
    }
    acc.combine_thrice(x)
}

/// A fixed-size ring of `N` counters: const generics in a type and a method.
#[derive(Clone, Copy)]
struct Ring<const N: usize> {
    slots: [u32; N],
    next: usize,
}

impl<const N: usize> Ring<N> {
    const CAPACITY: usize = N;

    fn new() -> Self {
        Ring {
            slots: [0; N],
            next: 0,
        }
    }

    fn push(&mut self, x: u32) {
        self.slots[self.next] = self.slots[self.next].wrapping_add(x);
        self.next = (self.next + 1) % N;
    }

    fn checksum(&self) -> u32 {
        self.slots
            .iter()
            .fold(Self::CAPACITY as u32, |h, &x| h.rotate_left(3) ^ x)
    }
}

/// Fills rings of three sizes with the same stream of values.
fn rings<const N: usize>(a: u64, b: u64) -> u32 {
    let mut ring = Ring::<N>::new();
    for i in 0..20u32 {
        ring.push((a >> (i % 64)) as u32 ^ (b as u32).rotate_left(i));
    }
    ring.checksum()
}

/// A small Gaussian integer, with its arithmetic as operator overloads.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Gaussian {
    re: i32,
    im: i32,
}

impl Add for Gaussian {
    type Output = Gaussian;
    fn add(self, o: Gaussian) -> Gaussian {
        Gaussian {
            re: self.re.wrapping_add(o.re),
            im: self.im.wrapping_add(o.im),
        }
    }
}

impl Mul for Gaussian {
    type Output = Gaussian;
    fn mul(self, o: Gaussian) -> Gaussian {
        Gaussian {
            re: self
                .re
                .wrapping_mul(o.re)
                .wrapping_sub(self.im.wrapping_mul(o.im)),
            im: self
                .re
                .wrapping_mul(o.im)
                .wrapping_add(self.im.wrapping_mul(o.re)),
        }
    }
}

impl Neg for Gaussian {
    type Output = Gaussian;
    fn neg(self) -> Gaussian {
        Gaussian {
            re: self.re.wrapping_neg(),
            im: self.im.wrapping_neg(),
        }
    }
}

/// `x² + c`, generic over anything with the operators.
fn square_plus<T: Add<Output = T> + Mul<Output = T> + Copy>(x: T, c: T) -> T {
    x * x + c
}

/// A hand-written iterator: the xorshift sequence from a seed, `len` items.
struct XorShift {
    state: u64,
    len: u32,
}

impl Iterator for XorShift {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        Some(self.state)
    }
}

/// `impl Trait` in return position: an iterator whose type is unnamed.
fn odd_items(seed: u64, len: u32) -> impl Iterator<Item = u64> {
    XorShift {
        state: seed | 1,
        len,
    }
    .filter(|x| x % 2 == 1)
}

/// Something with an area, implemented by two shapes.
trait Shape {
    fn area(&self) -> u64;
    fn corners(&self) -> u32;
    fn describe(&self) -> u64 {
        self.area() << 4 | self.corners() as u64
    }
}

struct Rect {
    w: u32,
    h: u32,
}

struct Triangle {
    base: u32,
    height: u32,
}

impl Shape for Rect {
    fn area(&self) -> u64 {
        self.w as u64 * self.h as u64
    }
    fn corners(&self) -> u32 {
        4
    }
}

impl Shape for Triangle {
    fn area(&self) -> u64 {
        self.base as u64 * self.height as u64 / 2
    }
    fn corners(&self) -> u32 {
        3
    }
    fn describe(&self) -> u64 {
        !(self.area() << 2)
    }
}

/// Picks an implementation at run time; the caller sees only `&dyn Shape`.
fn pick<'s>(choose_rect: bool, rect: &'s Rect, triangle: &'s Triangle) -> &'s dyn Shape {
    if choose_rect {
        rect
    } else {
        triangle
    }
}

pub fn run(s: &mut Suite) {
    s.case("generic/monomorphised", Exact, |a, b| {
        let ints = lanes([
            fold_pairs::<u8>(a, b) as u32,
            fold_pairs::<i16>(a, b) as u32,
            fold_pairs::<u32>(a, b),
        ]);
        ints ^ (fold_pairs::<i64>(a, b) as u128) << 64 ^ fold_pairs::<u128>(b, a).rotate_left(32)
    });
    s.case("generic/float_impl", Exact, |a, b| {
        fold_pairs::<f64>(a, b).bits()
    });
    s.case("generic/assoc_consts", Exact, |_, _| {
        let consts = [
            u8::NAME_LEN,
            i16::NAME_LEN,
            u128::NAME_LEN,
            f64::NAME_LEN,
            Ring::<7>::CAPACITY as u32,
            <u32 as Bits>::WIDTH,
        ];
        lanes(consts.map(|c| c as u8))
    });
    s.case("generic/const_generics", Exact, |a, b| {
        lanes([
            rings::<1>(a, b),
            rings::<3>(a, b),
            rings::<8>(a, b),
            rings::<16>(b, a),
        ])
    });
    s.case("generic/operator_overloading", Exact, |a, b| {
        let z = Gaussian {
            re: a as i32,
            im: (a >> 32) as i32,
        };
        let c = Gaussian {
            re: b as i32,
            im: (b >> 32) as i32,
        };
        let w = -square_plus(square_plus(z, c), c);
        let n = square_plus(a as i64 as i128, b as i128);
        lanes([w.re, w.im]) ^ (n as u128).rotate_left(64)
    });
    s.case("generic/custom_iterator_impl_trait", Exact, |a, b| {
        let all = XorShift {
            state: a | 1,
            len: (b % 40) as u32,
        };
        let (count, last) = all.fold((0u32, 0u64), |(n, _), x| (n + 1, x));
        let odd_sum = odd_items(b, 25).fold(0u64, |h, x| h.wrapping_add(x));
        wide(odd_sum, last) ^ count as u128
    });
    s.case("generic/dyn_trait", Exact, |a, b| {
        let rect = Rect {
            w: a as u32,
            h: b as u32,
        };
        let triangle = Triangle {
            base: b as u32,
            height: (a >> 32) as u32,
        };
        let shape = pick(a & 1 == 1, &rect, &triangle);
        let other = pick(b & 1 == 0, &rect, &triangle);
        wide(shape.describe(), other.area() ^ other.corners() as u64)
    });
    s.case("generic/dyn_array", Exact, |a, b| {
        let rect = Rect {
            w: (a % 1000) as u32,
            h: (b % 1000) as u32,
        };
        let triangle = Triangle {
            base: (b >> 40) as u32,
            height: (a >> 40) as u32,
        };
        let shapes: [&dyn Shape; 4] = [&rect, &triangle, pick(a > b, &rect, &triangle), &triangle];
        let total = shapes
            .iter()
            .fold(0u64, |h, s| h.rotate_left(9) ^ s.describe());
        let corners: u32 = shapes.iter().map(|s| s.corners()).sum();
        wide(total, corners as u64)
    });
}
