//! Stream-ordered device memory: buffers are allocated on a stream from the
//! device's memory pool and freed on it, so dropping one never waits for
//! the GPU, and the pool hands the memory to the next allocation.
//!
//! Each case is built so that a wrong order would show in the values:
//!
//! * **a free waits for a kernel on another stream**: a slow kernel on
//!   stream B copies a buffer allocated on stream A; the buffer is dropped
//!   at once and a new one of the same size is allocated on A and filled
//!   with garbage. Had the free not waited for B's kernel, the pool could
//!   hand the same memory to the new buffer and the kernel would copy
//!   garbage.
//! * **a use on another stream waits for the allocation**: a buffer made on
//!   A is written by a kernel on B straight away.
//! * **a drop does not block**: dropping a buffer that a slow kernel still
//!   uses returns while the kernel runs (checked on a GPU; the emulator runs
//!   every submission to its end at once).
//! * **the pool reuses freed memory**: a thousand 1 MiB buffers allocated
//!   and dropped in turn on one stream never use more than one buffer's
//!   worth of memory at once, and the pool's counters say so.
//!
//! Every value is compared with the same computation on the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Waits `delay_ns` on the GPU's global timer.
fn wait_ns(delay_ns: u64) {
    let start = thread::globaltimer();
    while thread::globaltimer().wrapping_sub(start) < delay_ns {}
}

/// After the delay, `out[i] = src[i]`.
#[kernel]
pub fn slow_copy(src: &[u32], mut out: DisjointSlice<u32>, delay_ns: u64) {
    wait_ns(delay_ns);
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(x) = out.get_mut(idx) {
        *x = src[i];
    }
}

/// `out[i] = 3 * i + 1`.
#[kernel]
pub fn affine(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get() as u32;
    if let Some(x) = out.get_mut(idx) {
        *x = i.wrapping_mul(3).wrapping_add(1);
    }
}

const N: usize = 1 << 18;
const MIB: usize = 1 << 20;

fn check(case: &str, got: &[u32], want: impl Fn(usize) -> u32) -> Result<(), String> {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        None => {
            println!("  {case}: {} elements right", got.len());
            Ok(())
        }
        Some(i) => Err(format!(
            "{case}: element {i} is {:#x}, the CPU gives {:#x} ({} of {} wrong)",
            got[i],
            want(i),
            (0..got.len()).filter(|&j| got[j] != want(j)).count(),
            got.len()
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    if !ctx.has_memory_pools() {
        return Err("this device has no memory pools: buffers fall back to cuMemAlloc".into());
    }
    let emulated = ctx.backend().is_emulated();
    let (a, b) = (ctx.new_stream_non_blocking()?, ctx.new_stream_non_blocking()?);
    let module = load_kernel_module(&ctx, "stream_memory")?;
    let delay_ns: u64 = if emulated { 0 } else { 50_000_000 };
    let config = LaunchConfig::for_num_elems(N as u32);
    let initial: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();

    // A free on A waits for a kernel on B that reads the buffer.
    let src = DeviceBuffer::from_host(&a, &initial)?;
    let mut out = DeviceBuffer::<u32>::zeroed(&b, N)?;
    cuda_launch! { kernel: slow_copy, stream: b, module: module, config: config,
                   args: [slice(src), slice_mut(out), delay_ns] }?;
    drop(src);
    let mut junk = DeviceBuffer::<u32>::zeroed(&a, N)?;
    junk.fill(&a, 0xdead_beef)?;
    check("a kernel on B reads a buffer dropped on A meanwhile", &out.to_host_vec(&b)?, |i| initial[i])?;
    check("the buffer allocated after the drop", &junk.to_host_vec(&a)?, |_| 0xdead_beef)?;

    // A kernel on B writes a buffer allocated on A a moment before.
    let mut fresh = DeviceBuffer::<u32>::zeroed(&a, N)?;
    cuda_launch! { kernel: affine, stream: b, module: module, config: config, args: [slice_mut(fresh)] }?;
    check("a kernel on B writes a buffer just allocated on A", &fresh.to_host_vec(&b)?, |i| (i as u32) * 3 + 1)?;

    // A drop returns while a kernel still uses the buffer.
    let input = DeviceBuffer::from_host(&a, &initial)?;
    let mut copy = DeviceBuffer::<u32>::zeroed(&a, N)?;
    cuda_launch! { kernel: slow_copy, stream: a, module: module, config: config,
                   args: [slice(input), slice_mut(copy), delay_ns] }?;
    drop(input);
    let still_running = !a.is_complete()?;
    if !emulated && !still_running {
        return Err("dropping a buffer waited for the kernel that uses it".into());
    }
    println!("  a drop during a kernel that uses the buffer: returned {} the kernel ended",
             if still_running { "before" } else { "after (emulated: every submission runs at once)" });
    check("the kernel's copy of the dropped buffer", &copy.to_host_vec(&a)?, |i| initial[i])?;

    // The pool reuses what is freed on the same stream.
    let pool = ctx.memory_pool()?;
    pool.set_release_threshold(u64::MAX)?;
    if pool.release_threshold()? != u64::MAX {
        return Err("the pool's release threshold did not stick".into());
    }
    drop((out, junk, fresh, copy));
    a.synchronize()?;
    b.synchronize()?;
    let base = pool.used_bytes()?;
    pool.reset_peaks()?;
    for round in 0..1000u32 {
        let mut scratch = DeviceBuffer::<u32>::zeroed(&a, MIB / 4)?;
        scratch.fill(&a, round)?;
        if round % 250 == 0 {
            check(&format!("scratch buffer {round}"), &scratch.to_host_vec(&a)?[..4], |_| round)?;
        }
    }
    a.synchronize()?;
    let peak = pool.peak_used_bytes()?;
    println!("  1000 x 1 MiB allocated and dropped on one stream: peak use {} MiB above the rest", (peak - base) as f64 / MIB as f64);
    if peak - base > 2 * MIB as u64 {
        return Err(format!("the pool's peak grew to {} bytes above the rest: freed memory was not reused", peak - base).into());
    }
    if pool.used_bytes()? != base {
        return Err(format!("{} bytes are still in use after every scratch buffer was dropped", pool.used_bytes()? - base).into());
    }
    if pool.reserved_bytes()? < pool.used_bytes()? {
        return Err("the pool reserves less than its allocations use".into());
    }
    pool.trim_to(0)?;
    println!("  pool after trim_to(0): {} bytes reserved, {} used", pool.reserved_bytes()?, pool.used_bytes()?);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("✓ SUCCESS: stream-ordered allocation and free kept every use in order");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
