//! An atomic read-modify-write of a host static from a kernel writes host memory.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::sync::atomic::{AtomicU32, Ordering};

static HITS: AtomicU32 = AtomicU32::new(0);

#[kernel]
pub fn count_atomic(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let n = HITS.fetch_add(1, Ordering::Relaxed);
    if let Some(o) = out.get_mut(idx) {
        *o = n;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: count_atomic, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel writes the host static `reject_case::HITS`: host statics are not shared with the GPU
//~ AT src/main.rs:12:18
//~ NOTE in kernel `reject_case::count_atomic`
//~ NOTE fetch_add` (an atomic read-modify-write is a write too)
//~ NOTE call chain: `reject_case::count_atomic`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
