//! GPU test: loop unrolling hints (`unroll!`, `#[unroll]`) change the code,
//! never the results.
//!
//! Each kernel runs loops under every kind of hint — a full unroll of a
//! constant trip count (`#[unroll]`, `unroll!(full, …)`), a count over a
//! run-time trip count (`#[unroll(4)]`, `unroll!(3, …)` on a `while` loop),
//! no unrolling (`#[unroll(1)]`), nested and labelled loops with `break` and
//! `continue`, hints in `#[device]` functions — and the program compares
//! every result with the same Rust on the CPU. `cargo oxide inspect` shows
//! the unrolled bodies (docs in cuda_device::unroll).
//!
//! Prints `PASS: N results matched` (exit 0), or the mismatches and `FAIL`
//! (exit 1).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{device, kernel, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// How many results each thread writes.
const RESULTS: usize = 6;

/// A polynomial by Horner's rule over a fixed number of coefficients:
/// fully unrolled.
#[device]
pub fn horner(c: &[u32; 8], x: u32) -> u32 {
    let mut acc = 0u32;
    #[unroll]
    for k in 0..8 {
        acc = acc.wrapping_mul(x).wrapping_add(c[k]);
    }
    acc
}

/// The same computations, called by the kernel and by the CPU check.
#[device]
pub fn compute(data: &[u32], i: usize, n: usize) -> [u64; RESULTS] {
    let x = data[i];
    let coeffs = [3, 1, 4, 1, 5, 9, 2, 6];
    let mut r = [0u64; RESULTS];
    r[0] = horner(&coeffs, x) as u64;

    // A sum over a run-time number of elements, unrolled by 4.
    let len = (x as usize % 13) + i % 7;
    let mut sum = 0u64;
    #[unroll(4)]
    for k in 0..len {
        sum = sum.wrapping_mul(31).wrapping_add(data[(i + k) % n] as u64);
    }
    r[1] = sum;

    // Collatz steps: a while loop of unknown length, unrolled by 3.
    let mut y = x % 1000 + 1;
    let mut steps = 0u64;
    unroll!(3, while y != 1 {
        y = if y % 2 == 0 { y / 2 } else { 3 * y + 1 };
        steps += 1;
    });
    r[2] = steps;

    // Nested, labelled loops with break and continue: the inner one by 4,
    // the outer one by 2; then a loop of constant trip count kept rolled.
    let mut found = 0u64;
    #[unroll(2)]
    'rows: for row in 0..6u32 {
        if row == 5 && x % 11 == 0 {
            break 'rows;
        }
        let mut hits = 0u32;
        unroll!(4, for col in 0..4usize {
            let v = x.rotate_left(row.wrapping_mul(4).wrapping_add(col as u32));
            if v % 5 == 0 {
                continue;
            }
            hits = hits.wrapping_add(v % 7);
            found = found.wrapping_mul(3) ^ v as u64;
        });
        if hits % 3 == 0 {
            continue 'rows;
        }
        found = found.wrapping_add(hits as u64);
    }
    let mut rolled = 0u32;
    #[unroll(1)]
    for k in 0..4u32 {
        rolled = rolled.rotate_left(5) ^ (x >> k);
    }
    found ^= (rolled as u64) << 40;
    r[3] = found;

    // A loop that leaves early, under a count.
    let mut k = 0u32;
    let mut last = 0u32;
    unroll!(2, loop {
        last = last.wrapping_add(x >> (k % 32));
        k += 1;
        if k >= x % 9 + 1 {
            break;
        }
    });
    r[4] = (last as u64) << 8 | k as u64;

    // Floating point: a dot product of 8 terms, fully unrolled, in order.
    let mut dot = 0.0f32;
    unroll!(full, for k in 0..8usize {
        dot += (data[(i + k) % n] as f32 / 1e6) * (k as f32 + 0.5);
    });
    r[5] = dot.to_bits() as u64;
    r
}

#[kernel]
pub fn hinted(data: &[u32], mut out: DisjointSlice<[u64; RESULTS]>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i >= data.len() {
        return;
    }
    let r = compute(data, i, data.len());
    if let Some(slot) = out.get_mut(idx) {
        *slot = r;
    }
}

const NAMES: [&str; RESULTS] = ["horner (#[unroll])", "sum (#[unroll(4)])", "collatz (unroll!(3, while))", "nested labelled (4 in 2) + rolled", "loop/break (unroll!(2, loop))", "f32 dot (unroll!(full))"];

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "unroll_hints")?;
    let n = 777;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u32> = (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if i < 4 { [0, 1, u32::MAX, 0x8000_0000][i] } else { (state >> 16) as u32 }
        })
        .collect();
    let data_dev = DeviceBuffer::from_host(&stream, &data)?;
    let mut out = DeviceBuffer::<[u64; RESULTS]>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: hinted, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(data_dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let mut bad = 0;
    for i in 0..n {
        let want = compute(&data, i, n);
        for k in 0..RESULTS {
            if gpu[i][k] != want[k] {
                bad += 1;
                if bad <= 20 {
                    println!("mismatch: {} thread {i} (x={:#x}): gpu {:#x}, cpu {:#x}", NAMES[k], data[i], gpu[i][k], want[k]);
                }
            }
        }
    }
    let total = n * RESULTS;
    if bad == 0 {
        println!("PASS: {total} results matched ({n} threads, {RESULTS} hinted loops each)");
        Ok(true)
    } else {
        println!("FAIL: {bad} of {total} results differ");
        Ok(false)
    }
}
