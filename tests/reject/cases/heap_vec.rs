//! A Vec built in a kernel needs the host allocator.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn fill(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let v: Vec<u32> = vec![1; 4];
    if let Some(o) = out.get_mut(idx) {
        *o = v[0];
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: fill, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `alloc::vec::from_elem
//~ ERROR cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
//~ AT src/main.rs:9:23
//~ NOTE in kernel `reject_case::fill`
//~ NOTE call chain: `reject_case::fill` → `alloc::vec::from_elem
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
