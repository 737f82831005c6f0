//! GPU test: code of `core` that only a debug build sends to the device
//! compiles and gives the CPU's answers (issue 16 §2).
//!
//! In the dev profile (how scripts/test.sh builds this program) rustc shares
//! generic code between crates and keeps core's asserts, so a kernel reaches
//! parts of core its own crate does not contain:
//!   * `x.clamp(lo, hi)` on every integer and float type asserts `lo <= hi`
//!     with a formatted message (`{:?}` of the bounds), whose `fmt` methods
//!     live in libcore;
//!   * `a.iter().zip(b.iter())` over `[u16; 4]` calls an instance of
//!     `TrustedRandomAccessNoCoerce::size` that another crate of the
//!     standard library already made (`miniz_oxide`'s), for every element
//!     type here;
//!   * `write!` into a buffer on the stack runs core's formatting itself
//!     (`core::fmt::write`, integer and float `Display` and `Debug`, padding,
//!     a derived `Debug`), and
//!     `str::parse`, `char::is_alphabetic`, `sort_unstable`, `str::find` and
//!     `==` on strings run core's parsers, Unicode tables, sort, substring
//!     search and byte comparison (libc's `memcmp` and `bcmp` on the host).
//! Each thread's results are compared with the same functions on the CPU.
//! Prints one line per check, then `✓ SUCCESS: …` (exit 0), or what
//! differed (exit 1).

use core::fmt::Write;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, embedded_modules, load_kernel_module, KernelModule};
use std::process::ExitCode;
use std::sync::Arc;

/// The element types of the programs: every integer and float type
/// (`Unpin`, as cuda-host asks of a by-value kernel argument of a generic type).
pub trait Element: Copy + PartialOrd + PartialEq + DeviceRepr + Unpin + std::fmt::Debug + 'static {
    /// `self.clamp(lo, hi)`: `Ord::clamp` for integers, the inherent
    /// `clamp` for floats.
    fn clamp_to(self, lo: Self, hi: Self) -> Self;
    /// Some values to clamp, from `i` (the same on both sides).
    fn sample(i: usize) -> Self;
}

macro_rules! integer_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn clamp_to(self, lo: Self, hi: Self) -> Self { Ord::clamp(self, lo, hi) }
            fn sample(i: usize) -> Self { (i % 11) as $t }
        }
    )*};
}
integer_element!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);
impl Element for f32 {
    fn clamp_to(self, lo: Self, hi: Self) -> Self { f32::clamp(self, lo, hi) }
    fn sample(i: usize) -> Self { (i % 11) as f32 * 0.75 }
}
impl Element for f64 {
    fn clamp_to(self, lo: Self, hi: Self) -> Self { f64::clamp(self, lo, hi) }
    fn sample(i: usize) -> Self { (i % 11) as f64 * 0.75 }
}

/// What one thread of `clamp_zip` computes.
fn clamp_zip_one<T: Element>(a: &[T], i: usize, lo: T, hi: T) -> (T, u32) {
    let x = [a[i], a[(i + 1) % a.len()], lo, hi];
    let y = [a[i], lo, a[(i + 2) % a.len()], hi];
    let equal = x.iter().zip(y.iter()).filter(|(p, q)| p == q).count();
    (a[i].clamp_to(lo, hi), equal as u32)
}

/// The two programs, per element: `a[i].clamp(lo, hi)`, and how many
/// pairs of a zip of two `[T; 4]` are equal.
#[kernel]
pub fn clamp_zip<T: Element>(a: &[T], lo: T, hi: T, mut clamped: DisjointSlice<T>, mut equal: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i < a.len() {
        let (c, e) = clamp_zip_one(a, i, lo, hi);
        if let Some(slot) = clamped.get_mut(idx) {
            *slot = c;
        }
        if let Some(slot) = equal.get_mut(idx) {
            *slot = e;
        }
    }
}

/// The bytes of text one thread of `core_text` writes.
const TEXT: usize = 128;

/// A fixed buffer `core::fmt::Write` writes into (the rest is dropped).
struct Text {
    bytes: [u8; TEXT],
    len: usize,
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            if self.len < self.bytes.len() {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
        Ok(())
    }
}

/// A struct whose derived Debug runs core's `debug_struct` builder.
#[derive(Debug)]
#[allow(dead_code)] // its fields are read only through that Debug
struct Sample {
    x: u32,
    ratio: f64,
    label: &'static str,
}

/// What one thread of `core_text` writes: core's formatting, parsing,
/// Unicode tables, sort, search and comparison on `x` and `f`, as text.
fn core_text_one(x: u32, f: f32) -> [u8; TEXT] {
    let mut t = Text { bytes: [0; TEXT], len: 0 };
    let parsed: u32 = "4096".parse().unwrap_or(0);
    let alpha = char::from_u32(0x41 + x % 64).is_some_and(char::is_alphabetic);
    let mut sorted = [x % 7, 3, x % 5, 1];
    sorted.sort_unstable();
    let word = ["beta", "gamma", "alpha"][x as usize % 3];
    let found = "alphabet, beta".find(word).map_or(-1, |at| at as i32);
    let _ = write!(t, "{x:>5}|{:#x}|{f:.2}|{f}|{}|{alpha}|{sorted:?}", x.wrapping_mul(parsed), -(x as i64));
    let _ = write!(t, "|{found}|{}", (word == "beta") as u8);
    let sample = Sample { x: x % 10, ratio: x as f64 / 7.0, label: "\"q\"\n" };
    let _ = write!(t, "|{sample:?}");
    t.bytes
}

#[kernel]
pub fn core_text(x: &[u32], f: &[f32], mut out: DisjointSlice<[u8; TEXT]>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i < x.len() && i < f.len() {
        if let Some(slot) = out.get_mut(idx) {
            *slot = core_text_one(x[i], f[i]);
        }
    }
}

const N: usize = 64;

/// Runs `clamp_zip::<T>` and compares it with the CPU; the number of results.
fn check_element<T: Element>(stream: &Arc<CudaStream>, module: &KernelModule, failures: &mut Vec<String>) -> Result<usize, Box<dyn std::error::Error>> {
    let a: Vec<T> = (0..N).map(T::sample).collect();
    let (lo, hi) = (T::sample(3), T::sample(7));
    let a_dev = DeviceBuffer::from_host(stream, &a)?;
    let mut clamped = DeviceBuffer::<T>::zeroed(stream, N)?;
    let mut equal = DeviceBuffer::<u32>::zeroed(stream, N)?;
    cuda_launch! {
        kernel: clamp_zip::<T>, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(a_dev), lo, hi, slice_mut(clamped), slice_mut(equal)]
    }?;
    let (clamped, equal) = (clamped.to_host_vec(stream)?, equal.to_host_vec(stream)?);
    let name = std::any::type_name::<T>();
    let bad: Vec<usize> = (0..N).filter(|&i| (clamped[i], equal[i]) != clamp_zip_one(&a, i, lo, hi)).collect();
    match bad.first() {
        None => println!("ok    clamp and zip over {name}: {N} threads"),
        Some(&i) => {
            let cpu = clamp_zip_one(&a, i, lo, hi);
            failures.push(format!("{name}: {} threads differ; thread {i}: GPU {:?} CPU {cpu:?}", bad.len(), (clamped[i], equal[i])));
        }
    }
    Ok(N)
}

fn run() -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "core_paths")?;
    let mut failures = Vec::new();
    let mut results = 0;
    macro_rules! each_element {
        ($($t:ty),*) => {$( results += check_element::<$t>(&stream, &module, &mut failures)?; )*};
    }
    each_element!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

    let x: Vec<u32> = (0..N as u32).map(|i| i * 977 + 5).collect();
    let f: Vec<f32> = (0..N).map(|i| i as f32 * 1.25 - 20.0).collect();
    let (x_dev, f_dev) = (DeviceBuffer::from_host(&stream, &x)?, DeviceBuffer::from_host(&stream, &f)?);
    let mut out = DeviceBuffer::<[u8; TEXT]>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: core_text, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(x_dev), slice(f_dev), slice_mut(out)]
    }?;
    // Float formatting is reached through core::fmt's vtables, which the
    // driver cannot see: the launch must have raised the stack to the
    // linker's bound (the GPU faults with an illegal address otherwise).
    let need = embedded_modules()
        .iter()
        .flat_map(|m| &m.kernels)
        .find(|k| k.rust_path.ends_with("core_text"))
        .ok_or("core_text is not in the kernel table")?
        .stack
        .bytes()?;
    let stack = ctx.stack_size()?;
    // float_to_decimal_common_exact alone has a frame above the driver's
    // default of 1 KiB: a bound below it missed the calls through vtables.
    if need <= 1024 {
        failures.push(format!("core_text: its stack bound of {need} bytes leaves out core::fmt's float formatting"));
    }
    if stack < need {
        failures.push(format!("core_text: the stack is {stack} bytes after its launch, below its need of {need}"));
    } else {
        println!("ok    stack raised for core_text: {stack} bytes per thread (need {need})");
    }
    let out = out.to_host_vec(&stream)?;
    let text = |b: &[u8; TEXT]| String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(TEXT)]).into_owned();
    let bad: Vec<usize> = (0..N).filter(|&i| out[i] != core_text_one(x[i], f[i])).collect();
    match bad.first() {
        None => println!("ok    core's formatting, parsing, Unicode, sort, search and comparison: {N} threads (thread 1: `{}`)", text(&out[1])),
        Some(&i) => failures.push(format!("core_text: {} threads differ; thread {i}: GPU `{}` CPU `{}`", bad.len(), text(&out[i]), text(&core_text_one(x[i], f[i])))),
    }
    results += N;
    if failures.is_empty() {
        println!("✓ SUCCESS: {results} results of core's code matched the CPU");
    }
    Ok(failures)
}

fn main() -> ExitCode {
    match run() {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            for f in failures {
                println!("FAIL  {f}");
            }
            ExitCode::FAILURE
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
