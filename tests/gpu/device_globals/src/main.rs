//! GPU test: device globals (`#[device_global]`, CUDA's `__device__`
//! variables) and statics reached only through other statics' initialisers.
//! Kernels count into an atomic device global, bin values into an array of
//! atomics, write a plain array global (each thread its own element, through
//! `as_mut_ptr`) and read a global the host set before the launch; the host
//! reads every global back through the module and compares with the same
//! Rust run on the CPU. Then the host resets the counter and counts again (a
//! write between launches is seen, the old count is gone). Last, kernels
//! walk statics that only initialisers name: a slice of the interior of a
//! table, a start and a one-past-the-end pointer, a table of byte strings, a
//! reference to a reference, and a device global whose initialiser points
//! into a table. Exits non-zero on any difference.

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::AtomicF32;
use cuda_device::{device_global, kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const N: usize = 1000;
const BINS: usize = 16;

#[device_global]
static ODD: AtomicU32 = AtomicU32::new(0);

#[device_global]
static HISTOGRAM: [AtomicU32; BINS] = [const { AtomicU32::new(0) }; BINS];

#[device_global]
static TOTAL: AtomicF32 = AtomicF32::new(0.0);

#[device_global]
static SQUARES: [u32; N] = [0; N];

#[device_global]
static SCALE: u32 = 1;

fn bin(value: u32) -> usize {
    (value.wrapping_mul(2654435761) >> 28) as usize % BINS
}

#[kernel]
pub fn count(values: &[u32]) {
    let i = thread::index_1d().get();
    if let Some(&v) = values.get(i) {
        if v % 2 == 1 {
            ODD.fetch_add(1, Relaxed);
        }
        HISTOGRAM[bin(v)].fetch_add(1, Relaxed);
        TOTAL.fetch_add((v % 8) as f32, Relaxed);
    }
}

#[kernel]
pub fn square_and_scale(values: &[u32], mut scaled: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out) = scaled.get_mut(idx) {
        let v = values[i];
        *out = v.wrapping_mul(*SCALE);
        if i < N {
            // SAFETY: thread i alone writes element i of SQUARES, and no
            // thread of this launch reads it.
            unsafe { SQUARES.as_mut_ptr().cast::<u32>().add(i).write(v.wrapping_mul(v)) };
        }
    }
}

// --- Statics reached only through other statics' initialisers --------------

static TABLE: [u32; 8] = [3, 1, 4, 1, 5, 9, 2, 6];
/// A slice of the interior of TABLE: its pointer is TABLE + 8 bytes.
static MIDDLE: &[u32] = {
    let (_, rest) = TABLE.split_at(2);
    rest.split_at(4).0
};

/// A start and a one-past-the-end pointer into TABLE.
#[derive(Clone, Copy)]
struct Span {
    start: *const u32,
    end: *const u32,
}
// SAFETY: the pointers are into an immutable static.
unsafe impl Sync for Span {}
/// Indexed by thread, so the device keeps the pointers themselves (not
/// values folded from them): TABLE's start, an interior pointer, and TABLE's
/// one-past-the-end pointer twice (once as an empty span's start).
static SPANS: [Span; 3] = [
    Span { start: TABLE.as_ptr(), end: TABLE.as_ptr_range().end },
    Span { start: MIDDLE.as_ptr(), end: TABLE.as_ptr_range().end },
    Span { start: TABLE.as_ptr_range().end, end: TABLE.as_ptr_range().end },
];

static WORDS: [&[u8]; 3] = [b"device", b"", b"globals!"];
static NESTED: [&&u32; 2] = [&&42, &&7];

/// A device global whose initialiser points into a table only it names.
#[device_global]
static WINDOW: &'static [u32] = {
    let (_, rest) = [10, 20, 30, 40, 50].as_slice().split_at(1);
    rest.split_at(3).0
};

/// What thread `i` reads through the statics (the index keeps every load a
/// load of the static, not a constant the optimiser folded).
fn through_initialisers(i: usize) -> [u32; 5] {
    let middle = MIDDLE[i % MIDDLE.len()] * 10 + MIDDLE.len() as u32;
    let span = SPANS[i % SPANS.len()];
    let mut walked = 0u32;
    let mut p = span.start;
    while p != span.end {
        // SAFETY: p runs from the span's start to its end, exclusive, inside TABLE.
        walked = walked * 7 + unsafe { *p };
        p = unsafe { p.add(1) };
    }
    let word = WORDS[i % WORDS.len()];
    let words = word.len() as u32 * 1000 + word.last().copied().unwrap_or(0) as u32;
    let window = WINDOW[i % WINDOW.len()] + WINDOW.len() as u32 * 1000;
    [middle, walked, words, **NESTED[i % NESTED.len()], window]
}

#[kernel]
pub fn read_through_initialisers(mut out: DisjointSlice<[u32; 5]>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = through_initialisers(i);
    }
}

fn values() -> Vec<u32> {
    (0..N as u32).map(|i| i.wrapping_mul(2246822519).rotate_left(13) % 1_000_003).collect()
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, gpu: T, cpu: T) -> bool {
    if gpu == cpu {
        println!("ok    {what}");
        true
    } else {
        println!("FAIL  {what}: GPU {gpu:?} CPU {cpu:?}");
        false
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "device_globals")?;
    let input = values();
    let values_dev = DeviceBuffer::from_host(&stream, &input)?;
    let mut ok = true;

    // The CPU's answers.
    let odd = input.iter().filter(|&&v| v % 2 == 1).count() as u32;
    let mut histogram = [0u32; BINS];
    for &v in &input {
        histogram[bin(v)] += 1;
    }
    let total: f32 = input.iter().map(|&v| (v % 8) as f32).sum();

    // Initial values, as the module was loaded.
    ok &= check("initial SCALE", module.read_global(&SCALE)?, 1);
    ok &= check("initial ODD", module.read_global(&ODD)?.into_inner(), 0);

    cuda_launch! {
        kernel: count, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(values_dev)]
    }?;
    ok &= check("atomic counter", module.read_global(&ODD)?.into_inner(), odd);
    let gpu_histogram = module.read_global(&HISTOGRAM)?.map(AtomicU32::into_inner);
    ok &= check("histogram of atomics", gpu_histogram, histogram);
    // Small integers: every partial sum is exact in f32, in any order.
    ok &= check("f32 atomic total", module.read_global(&TOTAL)?.into_inner(), total);

    // The host resets the counter; a second launch counts from zero.
    module.write_global(&ODD, AtomicU32::new(0))?;
    ok &= check("counter after reset", module.read_global(&ODD)?.into_inner(), 0);
    cuda_launch! {
        kernel: count, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(values_dev)]
    }?;
    ok &= check("counter counted again", module.read_global(&ODD)?.into_inner(), odd);
    ok &= check(
        "histogram kept counting",
        module.read_global(&HISTOGRAM)?.map(AtomicU32::into_inner),
        histogram.map(|h| 2 * h),
    );

    // A global set by the host before the launch; a plain array written by the kernel.
    module.write_global(&SCALE, 7)?;
    let mut scaled = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: square_and_scale, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(values_dev), slice_mut(scaled)]
    }?;
    let want_scaled: Vec<u32> = input.iter().map(|v| v.wrapping_mul(7)).collect();
    ok &= check("SCALE set by the host", scaled.to_host_vec(&stream)? == want_scaled, true);
    let squares = module.read_global(&SQUARES)?;
    let want_squares: Vec<u32> = input.iter().map(|v| v.wrapping_mul(*v)).collect();
    ok &= check("array written by the kernel", squares.to_vec() == want_squares, true);
    ok &= check("SCALE read back", module.read_global(&SCALE)?, 7);

    // Statics reached only through initialisers.
    let threads = 64;
    let mut through = DeviceBuffer::<[u32; 5]>::zeroed(&stream, threads)?;
    cuda_launch! {
        kernel: read_through_initialisers, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(threads as u32),
        args: [slice_mut(through)]
    }?;
    let want: Vec<[u32; 5]> = (0..threads).map(through_initialisers).collect();
    let gpu = through.to_host_vec(&stream)?;
    let first_difference = (0..threads).find(|&i| gpu[i] != want[i]);
    ok &= check(
        "statics through initialisers",
        first_difference.map(|i| (i, gpu[i])),
        first_difference.map(|i| (i, want[i])),
    );

    if ok {
        println!("✓ SUCCESS: device globals and statics through initialisers matched the CPU");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
