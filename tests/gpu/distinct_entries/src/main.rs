//! GPU test: kernels whose host code is the same launch their own PTX.
//!
//! The host finds the PTX entry of a launch by the address of the kernel's
//! entry wrapper, and rustc's optimiser gives functions with the same
//! optimised code one address (MergeFunctions). `ptx_asm!` has no host
//! code, and its outputs were never written there: reading them was
//! undefined, so the optimiser folded away the host code after the first
//! inline PTX, kernels that differ only after it got one host wrapper in a
//! release build, and a launch of one ran the other's PTX without an error
//! (found in the attention example, whose `m192s2` launched `m192s2n`).
//! The host body of each `ptx_asm!` site now hands its outputs' places to
//! an opaque stub, so that code stays, and each wrapper also carries its
//! instance's name (docs/ABI.md §2, `entry_identity`).
//!
//! Each kernel here writes a different function of the lane: two plain
//! kernels, three instances of a const-generic one, and two instances of a
//! generic one taking closures of one function (whose instance names, the
//! closures' `main::{{closure}}`, are the same). Every element of each
//! output is checked, and the wrappers' addresses must differ. Meaningful in
//! a release build (`--release`, which CI runs emulated); a debug build does
//! not merge functions and passes trivially.
//!
//! Prints `PASS: ...` (exit 0), or each wrong kernel and `FAIL` (exit 1).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// The thread's lane, by inline PTX: the value the host code of the
/// kernels below used to lose.
#[inline(always)]
fn lane() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register; no memory.
    unsafe { ptx_asm!("mov.u32 {0}, %laneid;", out(u32) lane, options(pure, nomem)) };
    lane
}

/// Writes lane + 7.
#[kernel]
pub fn lane_plus_seven(mut out: DisjointSlice<u32>) {
    let value = lane() + 7;
    if let Some(slot) = out.get_mut(thread::index_1d()) {
        *slot = value;
    }
}

/// Writes lane + 9: without the fix, the same host code as
/// [`lane_plus_seven`].
#[kernel]
pub fn lane_plus_nine(mut out: DisjointSlice<u32>) {
    let value = lane() + 9;
    if let Some(slot) = out.get_mut(thread::index_1d()) {
        *slot = value;
    }
}

/// Writes lane + K: without the fix, every instance had the same host code.
#[kernel]
pub fn lane_plus<const K: u32>(mut out: DisjointSlice<u32>) {
    let value = lane() + K;
    if let Some(slot) = out.get_mut(thread::index_1d()) {
        *slot = value;
    }
}

/// Writes f(lane).
#[kernel]
pub fn lane_through<F: Fn(u32) -> u32 + Copy>(f: F, mut out: DisjointSlice<u32>) {
    let value = f(lane());
    if let Some(slot) = out.get_mut(thread::index_1d()) {
        *slot = value;
    }
}

const N: usize = 100;

/// The address of `entry`, the wrapper of `lane_through` for the closure
/// type of `_f` (which has no name to write).
fn entry_of<F: Fn(u32) -> u32 + Copy>(entry: unsafe fn(*const F, *const DisjointSlice<u32>), _f: F) -> usize {
    entry as usize
}

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
    let module = load_kernel_module(&ctx, "distinct_entries")?;
    let config = LaunchConfig::for_num_elems(N as u32);
    let plus_one = |x: u32| x + 1;
    let times_three = |x: u32| x * 3;
    // (name, the value wanted of each lane, what the kernel wrote)
    let mut results: Vec<(&str, fn(u32) -> u32, Vec<u32>)> = Vec::new();
    macro_rules! run_kernel {
        ($name:expr, $kernel:path, [$($arg:expr),*], $want:expr) => {{
            let mut out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
            cuda_launch! { kernel: $kernel, stream: stream, module: module, config: config, args: [$($arg,)* slice_mut(out)] }?;
            results.push(($name, $want, out.to_host_vec(&stream)?));
        }};
    }
    run_kernel!("lane_plus_seven", lane_plus_seven, [], |lane| lane + 7);
    run_kernel!("lane_plus_nine", lane_plus_nine, [], |lane| lane + 9);
    run_kernel!("lane_plus::<1>", lane_plus::<1>, [], |lane| lane + 1);
    run_kernel!("lane_plus::<2>", lane_plus::<2>, [], |lane| lane + 2);
    run_kernel!("lane_plus::<3>", lane_plus::<3>, [], |lane| lane + 3);
    run_kernel!("lane_through(x + 1)", lane_through, [plus_one], |lane| lane + 1);
    run_kernel!("lane_through(x * 3)", lane_through, [times_three], |lane| lane * 3);
    let mut ok = true;
    for (name, want, got) in &results {
        let wrong: Vec<usize> = (0..N).filter(|&i| got[i] != want((i % 32) as u32)).collect();
        if let Some(&first) = wrong.first() {
            ok = false;
            println!(
                "{name}: {} of {N} wrong, first at {first}: {} where {} is wanted (another kernel's PTX ran?)",
                wrong.len(),
                got[first],
                want((first % 32) as u32)
            );
        }
    }
    let entries = [
        ("lane_plus_seven", lane_plus_seven::__oxide_entry as usize),
        ("lane_plus_nine", lane_plus_nine::__oxide_entry as usize),
        ("lane_plus::<1>", lane_plus::<1>::__oxide_entry as usize),
        ("lane_plus::<2>", lane_plus::<2>::__oxide_entry as usize),
        ("lane_plus::<3>", lane_plus::<3>::__oxide_entry as usize),
        ("lane_through(x + 1)", entry_of(lane_through::__oxide_entry, plus_one)),
        ("lane_through(x * 3)", entry_of(lane_through::__oxide_entry, times_three)),
    ];
    for (i, (a, address_a)) in entries.iter().enumerate() {
        for (b, address_b) in &entries[i + 1..] {
            if address_a == address_b {
                ok = false;
                println!("{a} and {b} have one host entry address, {address_a:#x}");
            }
        }
    }
    if ok {
        println!("PASS: {} kernels with the same host code each ran its own PTX ({N} threads each)", results.len());
    } else {
        println!("FAIL");
    }
    Ok(ok)
}
