//! Box::new in a kernel needs the host allocator.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn boxed(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let b = Box::new(idx.get() as u32);
    if let Some(o) = out.get_mut(idx) {
        *o = *b;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: boxed, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR alloc::boxed::Box<
//~ ERROR ::new` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
//~ AT src/main.rs:9:13
//~ NOTE in kernel `reject_case::boxed`
//~ NOTE call chain: `reject_case::boxed` → `
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
