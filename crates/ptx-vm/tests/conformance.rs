//! Cases of examples/conformance run from their PTX on the VM and compared
//! with the case's Rust closure on the CPU.
//!
//! tests/fixtures/conformance_slice.ptx holds six instances of
//! `conformance_device::run_case` (`out[i] = f(a[i], b[i])`), cut from
//! `cargo oxide pipeline conformance` with the `slice_ptx` example; each
//! test below names the case, and its closure is copied from
//! examples/conformance/src/cases (the entry of each case was read from the
//! host LLVM IR's debug info, which names the closure of each instance).

mod common;

use common::*;
use ptx_vm::Module;

fn module() -> Module {
    Module::parse(&fixture("conformance_slice.ptx")).unwrap()
}

/// Integer edges and special float bit patterns, as every pair `(a, b)`.
fn inputs() -> (Vec<u64>, Vec<u64>) {
    let mut v: Vec<u64> = vec![
        0,
        1,
        3,
        31,
        32,
        63,
        64,
        127,
        128,
        255,
        0xFFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF,
        1 << 32,
        i64::MAX as u64,
        i64::MIN as u64,
        u64::MAX,
        u64::MAX - 6,
        1_000_000_007,
        0x0123_4567_89AB_CDEF,
        0x9E37_79B9_7F4A_7C15,
    ];
    // f32 patterns in the low bits.
    for f in [
        0x7FC0_0000u32,
        0xFFC0_0001,
        0x7F80_0000,
        0xFF80_0000,
        0x7F7F_FFFF,
        0x0080_0000,
        0x007F_FFFF,
        0x8000_0001,
        0x3F80_0000,
        0xC049_0FDB,
        0x3EAA_AAAB,
    ] {
        v.push(f as u64);
    }
    // f64 patterns.
    for d in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        -0.0,
        1.0,
        -2.5,
        1e300,
        1.0 / 3.0,
    ] {
        v.push(d.to_bits());
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in &v {
        for &y in &v {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

/// Runs the instance `entry` over the inputs.
fn run_case(entry: &str) -> (Vec<u64>, Vec<u64>, Vec<u128>) {
    let module = module();
    let (a, b) = inputs();
    let mut out = vec![0x5EED_5EED_5EED_5EED_5EED_5EED_5EED_5EEDu128; a.len()];
    let env = Env::new().with(&a).with(&b).with(&out);
    // The closures capture nothing: a zero-sized parameter is one byte.
    let params = Params::new()
        .value(0u8)
        .slice(&a)
        .slice(&b)
        .slice_mut(&mut out);
    let n = a.len() as u32;
    run(
        &module,
        entry,
        dims((n.div_ceil(256), 1, 1), (256, 1, 1)),
        &params,
        &env,
    )
    .unwrap();
    (a, b, out)
}

fn lanes32(v: [u32; 4]) -> u128 {
    v.iter()
        .enumerate()
        .fold(0, |acc, (i, &x)| acc | (x as u128) << (32 * i))
}

fn lanes64(v: [u64; 2]) -> u128 {
    (v[1] as u128) << 64 | v[0] as u128
}

fn wide(hi: u64, lo: u64) -> u128 {
    (hi as u128) << 64 | lo as u128
}

fn check(entry: &str, case: impl Fn(u64, u64) -> u128, same: impl Fn(u128, u128) -> bool) {
    let (a, b, out) = run_case(entry);
    for i in 0..a.len() {
        let want = case(a[i], b[i]);
        assert!(
            same(out[i], want),
            "a={:#x} b={:#x}: VM {:#x}, CPU {:#x}",
            a[i],
            b[i],
            out[i],
            want
        );
    }
}

fn exact(x: u128, y: u128) -> bool {
    x == y
}

// From conformance/src/cases/closures.rs.
fn double(x: u32) -> u32 {
    x.wrapping_mul(2)
}
fn square(x: u32) -> u32 {
    x.wrapping_mul(x)
}
fn invert(x: u32) -> u32 {
    !x
}
fn apply_n<F: Fn(u32) -> u32>(f: F, x: u32, n: u32) -> u32 {
    (0..n).fold(x, |acc, _| f(acc))
}

/// closure/fn_pointers: calls through a table of function pointers (PTX
/// indirect calls with a prototype) and through `&dyn Fn`.
#[test]
fn fn_pointers() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17h77dfc05181188142E",
        |a, b| {
            let table: [fn(u32) -> u32; 4] = [double, square, invert, |x| x.swap_bytes()];
            let f = table[(a % 4) as usize];
            let g = table[(b % 4) as usize];
            let chosen: &dyn Fn(u32) -> u32 = if a > b { &f } else { &g };
            lanes32([
                f(b as u32),
                g(a as u32),
                chosen(a as u32 ^ b as u32),
                apply_n(f, b as u32, 3),
            ])
        },
        exact,
    );
}

// From conformance/device/src/helpers.rs.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
fn fib(n: u32) -> u64 {
    let n = n % 16;
    if n < 2 {
        n as u64
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// device/gcd_recursive: a recursive `.func` (call stack, parameters).
#[test]
fn gcd_recursive() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17haf2bb6fc2a1c6247E",
        |a, b| {
            lanes64([
                gcd(a, b),
                gcd(a as u32 as u64, (b as u16 as u64).wrapping_mul(a & 0xFFF)),
            ])
        },
        exact,
    );
}

/// device/fib_recursive: double recursion.
#[test]
fn fib_recursive() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17h473dd275c686d1a1E",
        |a, b| lanes64([fib(a as u32), fib(b as u32)]),
        exact,
    );
}

/// int/u128_wrapping_mul: 128-bit products from mul.lo/mul.hi and carries.
#[test]
fn u128_wrapping_mul() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17hd05b6ff77039de35E",
        |a, b| wide(a, b).wrapping_mul(wide(b, a)),
        exact,
    );
}

fn same_f32(x: u128, y: u128) -> bool {
    let (x, y) = (f32::from_bits(x as u32), f32::from_bits(y as u32));
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

fn same_f64(x: u128, y: u128) -> bool {
    let (x, y) = (f64::from_bits(x as u64), f64::from_bits(y as u64));
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

/// f32/rem: `%` on f32, which LLVM's NVPTX backend lowers with div.approx,
/// cvt.rzi, fma.rn and fma.rz (exact directed rounding matters here).
#[test]
fn f32_rem() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17h21caf513c233aefeE",
        |a, b| (f32::from_bits(a as u32) % f32::from_bits(b as u32)).to_bits() as u128,
        same_f32,
    );
}

/// f64/div: div.rn.f64, correctly rounded, NaN up to payload.
#[test]
fn f64_div() {
    check(
        "_ZN18conformance_device29__oxide_kernel_entry_run_case17ha97c0d88084241a1E",
        |a, b| (f64::from_bits(a) / f64::from_bits(b)).to_bits() as u128,
        same_f64,
    );
}
