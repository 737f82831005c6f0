//! A kernel cannot read a mutable host static: the device only has the copy
//! made at link time, so the host's changes would never be seen.
use core::sync::atomic::{AtomicU32, Ordering};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
static LIMIT: AtomicU32 = AtomicU32::new(10);

#[kernel]
pub fn clamp_to_limit(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let limit = LIMIT.load(Ordering::Relaxed);
    if let Some(o) = out.get_mut(idx) {
        *o = (idx.get() as u32).min(limit);
    }
}

fn main() {
    LIMIT.store(20, Ordering::Relaxed);
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: clamp_to_limit, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel reads the mutable host static `reject_case::LIMIT`: host statics are not shared with the GPU
//~ ERROR or declare it `#[device_global]`
//~ AT src/main.rs:12
//~ NOTE in kernel `reject_case::clamp_to_limit`
//~ ERROR (1 error)
