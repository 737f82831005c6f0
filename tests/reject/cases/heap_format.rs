//! format! in a kernel builds a String on the host heap.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn formatted(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let s = format!("thread {}", idx.get());
    if let Some(o) = out.get_mut(idx) {
        *o = s.len() as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: formatted, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `alloc::fmt::format` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
//~ AT src/main.rs:9:13
//~ NOTE in kernel `reject_case::formatted`
//~ NOTE call chain: `reject_case::formatted` → `alloc::fmt::format` →
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
