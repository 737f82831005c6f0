//! A ThreadIndex cannot be made from a number, so one published through an
//! atomic (as its `get()`) cannot come back as another thread's index.
use core::sync::atomic::{AtomicUsize, Ordering};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn index_through_atomic(slot: &[AtomicUsize], mut out: DisjointSlice<u32>) {
    slot[0].store(thread::index_1d().get(), Ordering::Relaxed);
    let someone: ThreadIndex = slot[0].load(Ordering::Relaxed).into();
    if let Some(o) = out.get_mut(someone) {
        *o += 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let slot = DeviceBuffer::<usize>::zeroed(&stream, 1).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: index_through_atomic, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [&slot, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR the trait bound `ThreadIndex: From<usize>` is not satisfied
