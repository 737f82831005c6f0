//! std::env::var reads the host environment.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn env(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let n = std::env::var("N").map(|s| s.len()).unwrap_or(0);
    if let Some(o) = out.get_mut(idx) {
        *o = n as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: env, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `std::env::var
//~ ERROR cannot be called on the GPU: the host environment (std::env) is not available in kernels
//~ AT src/main.rs:9:13
//~ NOTE in kernel `reject_case::env`
//~ NOTE call chain: `reject_case::env` → `std::env::var
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
