//! println! writes to the host stdout.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn print(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    println!("thread {}", idx.get());
    if let Some(o) = out.get_mut(idx) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: print, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `std::io::stdio::_print` cannot be called on the GPU: host I/O (println!, print!, eprintln!, stdin, files) is not available in kernels
//~ AT src/main.rs:9:5
//~ NOTE in kernel `reject_case::print`
//~ NOTE call chain: `reject_case::print` → `std::io::stdio::_print`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
