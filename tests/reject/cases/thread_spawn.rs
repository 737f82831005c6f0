//! std::thread::spawn starts a host thread.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn spawn(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let h = std::thread::spawn(|| 1u32);
    if let Some(o) = out.get_mut(idx) {
        *o = h.join().unwrap_or(0);
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: spawn, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `std::thread::functions::spawn
//~ ERROR cannot be called on the GPU: host threads (std::thread) are not available in kernels
//~ AT src/main.rs:9:13
//~ ERROR JoinHandle<
//~ AT src/main.rs:11:16
//~ NOTE in kernel `reject_case::spawn`
//~ NOTE call chain: `reject_case::spawn` → `std::thread::functions::spawn
//~ ERROR oxide could not compile the kernels for the GPU (2 errors)
