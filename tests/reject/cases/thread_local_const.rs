//! thread_local! statics (const-initialised) live in host threads.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::cell::Cell;

thread_local! {
    static COUNT: Cell<u32> = const { Cell::new(0) };
}

#[kernel]
pub fn tls(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let n = COUNT.with(|c| { c.set(c.get() + 1); c.get() });
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
        kernel: tls, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR thread-local static `reject_case::COUNT` cannot be used on the GPU: thread-local statics (thread_local!) belong to host threads
//~ AT src/main.rs:14:19
//~ NOTE in kernel `reject_case::tls`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
