//! An atomic view of a buffer (`as_atomic`) and a plain `&[u32]` of the same
//! buffer in one launch: the kernel's non-atomic reads would race with the
//! atomics (and may use the read-only cache). The view holds the buffer's
//! mutable borrow, so the borrow checker refuses the second argument.
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn count(bins: &[AtomicU32], seen: &[u32]) {
    let i = thread::index_1d().get();
    bins[i % bins.len()].fetch_add(seen[i % seen.len()], Relaxed);
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut bins = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let view = bins.as_atomic::<AtomicU32>();
    cuda_launch! {
        kernel: count, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [view, slice(bins)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot borrow `bins` as immutable because it is also borrowed as mutable
