//! GPU test: one buffer used from two streams gets the values of the order
//! the program wrote, with no event of its own.
//!
//! Work on two streams runs unordered on the GPU, and the `&mut` borrow a
//! launch takes ends when the launch returns, long before the kernel runs.
//! Each case below queues a slow kernel on stream A (every thread waits on
//! the GPU's timer before touching memory) and then, at once, a conflicting
//! use of the same buffer on stream B. Without the ordering cuda-core keeps
//! per buffer, B's copy or kernel would run while A's kernel still waits and
//! see (or clobber) the values from before it:
//!
//! * read after write: a copy on B of what a kernel on A writes;
//! * write after read: a memset on B of what a kernel on A still has to read;
//! * write after write: a fill on B of what a kernel on A writes;
//! * kernel after kernel: a kernel on B reading what a kernel on A writes;
//! * free after use: a buffer of A dropped while a kernel on B writes it
//!   (its free on A waits, so the memory A allocates next is not written).
//!
//! Both streams are non-blocking, so nothing but the buffers' own ordering
//! orders them. On the CPU emulator every submission runs at once, so there
//! the program checks the values only; the race it guards against needs a GPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Waits `delay_ns` on the GPU's global timer.
fn wait_ns(delay_ns: u64) {
    let start = thread::globaltimer();
    while thread::globaltimer().wrapping_sub(start) < delay_ns {}
}

/// After the delay, `out[i] = value`.
#[kernel]
pub fn slow_fill(mut out: DisjointSlice<u32>, value: u32, delay_ns: u64) {
    wait_ns(delay_ns);
    if let Some(x) = out.get_mut(thread::index_1d()) {
        *x = value;
    }
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

/// `out[i] = src[i] + 1`, at once.
#[kernel]
pub fn add_one(src: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(x) = out.get_mut(idx) {
        *x = src[i].wrapping_add(1);
    }
}

const N: usize = 1 << 16;

/// Fails with `case` unless every element of `got` is `want(i)`.
fn expect(case: &str, got: &[u32], want: impl Fn(usize) -> u32) -> Result<(), String> {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        None => {
            println!("  {case}: {} elements as ordered", got.len());
            Ok(())
        }
        Some(i) => Err(format!(
            "{case}: element {i} is {} where the program's order gives {} ({} of {} wrong)",
            got[i],
            want(i),
            (0..got.len()).filter(|&j| got[j] != want(j)).count(),
            got.len()
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let (a, b) = (ctx.new_stream_non_blocking()?, ctx.new_stream_non_blocking()?);
    let module = load_kernel_module(&ctx, "stream_order")?;
    // Long enough on a GPU for B's work to be queued and started well before
    // A's kernel touches memory. The emulator runs each submission to the
    // end before the next, so a delay there would only cost time.
    let delay_ns: u64 = if ctx.backend().is_emulated() { 0 } else { 20_000_000 };
    let config = LaunchConfig::for_num_elems(N as u32);
    let initial: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();

    // Read after write: B copies what A's kernel writes.
    let mut buf = DeviceBuffer::from_host(&a, &initial)?;
    a.synchronize()?;
    cuda_launch! { kernel: slow_fill, stream: a, module: module, config: config,
                   args: [slice_mut(buf), 7u32, delay_ns] }?;
    expect("copy on B after a kernel on A writes", &buf.to_host_vec(&b)?, |_| 7)?;

    // Write after read: B overwrites what A's kernel has yet to read.
    let src = {
        let mut s = DeviceBuffer::from_host(&a, &initial)?;
        a.synchronize()?;
        let mut out = DeviceBuffer::<u32>::zeroed(&a, N)?;
        a.synchronize()?;
        cuda_launch! { kernel: slow_copy, stream: a, module: module, config: config,
                       args: [slice(s), slice_mut(out), delay_ns] }?;
        s.memset(&b, 0)?;
        expect("kernel on A reads before a memset on B", &out.to_host_vec(&a)?, |i| initial[i])?;
        s
    };
    expect("the memset on B after it", &src.to_host_vec(&b)?, |_| 0)?;

    // Write after write: B's fill lands after A's kernel.
    cuda_launch! { kernel: slow_fill, stream: a, module: module, config: config,
                   args: [slice_mut(buf), 1u32, delay_ns] }?;
    buf.fill(&b, 2u32)?;
    expect("fill on B after a kernel on A writes", &buf.to_host_vec(&a)?, |_| 2)?;

    // Kernel after kernel: B's kernel reads what A's kernel writes.
    let mut out = DeviceBuffer::<u32>::zeroed(&b, N)?;
    b.synchronize()?;
    cuda_launch! { kernel: slow_fill, stream: a, module: module, config: config,
                   args: [slice_mut(buf), 41u32, delay_ns] }?;
    cuda_launch! { kernel: add_one, stream: b, module: module, config: config,
                   args: [slice(buf), slice_mut(out)] }?;
    expect("kernel on B after a kernel on A writes", &out.to_host_vec(&b)?, |_| 42)?;

    // Free after a kernel on another stream: a buffer allocated on A (and
    // used there only until then, so it has no record of its uses yet) is
    // written by a slow kernel on B and dropped at once. Its free on A must
    // wait for B's kernel: the pool hands the same memory to the next
    // allocation on A, which A fills before B's kernel would write it.
    let mut victim = DeviceBuffer::<u32>::zeroed(&a, N)?;
    a.synchronize()?;
    cuda_launch! { kernel: slow_fill, stream: b, module: module, config: config,
                   args: [slice_mut(victim), 9u32, delay_ns] }?;
    drop(victim);
    let mut reused = DeviceBuffer::<u32>::zeroed(&a, N)?;
    reused.fill(&a, 5u32)?;
    b.synchronize()?;
    expect("memory freed on A after a kernel on B writes it", &reused.to_host_vec(&a)?, |_| 5)?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("✓ SUCCESS: uses of one buffer on two streams ran in the program's order");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
