//! Closures: a case closure that captures host values by move (its captures
//! travel to the GPU as the bytes of the closure), closures made inside the
//! kernel body that borrow or mutate locals, closures returned from and passed
//! to functions, and calls through function pointers.

use crate::compare::Compare::Exact;
use crate::encode::lanes;
use crate::harness::Suite;

/// A closure returned from a function, capturing its argument by move.
fn adder(k: u32) -> impl Fn(u32) -> u32 + Copy {
    move |x| x.wrapping_add(k)
}

/// A higher-order function, one instance per closure type it is given.
fn apply_n<F: Fn(u32) -> u32>(f: F, x: u32, n: u32) -> u32 {
    (0..n).fold(x, |acc, _| f(acc))
}

/// Function composition: the result captures two closures.
fn compose<F: Fn(u32) -> u32, G: Fn(u32) -> u32>(f: F, g: G) -> impl Fn(u32) -> u32 {
    move |x| g(f(x))
}

fn double(x: u32) -> u32 {
    x.wrapping_mul(2)
}

fn square(x: u32) -> u32 {
    x.wrapping_mul(x)
}

fn invert(x: u32) -> u32 {
    !x
}

pub fn run(s: &mut Suite) {
    // Host values captured by move: the GPU must see exactly these bytes,
    // laid out as rustc laid out the closure.
    let salt = 0x9E37_79B9u32;
    let shift = 13u8;
    let table = [3u16, 1, 4, 1, 5, 9, 2, 6];
    let offset = -12345i64;
    s.case("closure/captures_by_move", Exact, move |a, b| {
        let picked = table[(a % 8) as usize] as u32;
        let mixed = (a as u32 ^ salt)
            .rotate_left(shift as u32)
            .wrapping_mul(picked | 1);
        lanes([mixed as u64, (b as i64).wrapping_add(offset) as u64])
    });
    s.case("closure/borrowing_and_mutating", Exact, |a, b| {
        let limit = (b % 50) as u32;
        let mut calls = 0u32;
        let mut total = 0u64;
        // Mutably captures `calls` and `total`, reads `limit` by reference.
        let mut feed = |x: u64| {
            calls += 1;
            if calls <= limit {
                total = total.wrapping_add(x);
            }
        };
        for i in 0..64 {
            feed(a.rotate_left(i));
        }
        let within = |x: u32| x < limit; // borrows `limit` again after `feed` is done
        lanes([calls as u64, total]) ^ (within(a as u32 % 64) as u128) << 127
    });
    s.case("closure/returned_and_composed", Exact, |a, b| {
        let add = adder(b as u32);
        let step = compose(add, |x| x.rotate_left(5));
        let twice = compose(&step, &step);
        lanes([
            add(a as u32),
            step(a as u32),
            twice(a as u32),
            apply_n(&step, a as u32, (b % 9) as u32),
        ])
    });
    s.case("closure/fn_pointers", Exact, |a, b| {
        let table: [fn(u32) -> u32; 4] = [double, square, invert, |x| x.swap_bytes()];
        let f = table[(a % 4) as usize];
        let g = table[(b % 4) as usize];
        let chosen: &dyn Fn(u32) -> u32 = if a > b { &f } else { &g };
        lanes([
            f(b as u32),
            g(a as u32),
            chosen(a as u32 ^ b as u32),
            apply_n(f, b as u32, 3),
        ])
    });
}
