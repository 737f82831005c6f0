//! std::time::Instant::now reads a host clock.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn timed(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let t = std::time::Instant::now();
    if let Some(o) = out.get_mut(idx) {
        *o = t.elapsed().as_nanos() as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: timed, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `<std::time::Instant>::now` cannot be called on the GPU: host clocks (std::time) are not available in kernels; use cuda_device::thread::clock64
//~ AT src/main.rs:9:13
//~ ERROR `<std::time::Instant>::elapsed` cannot be called on the GPU: host clocks (std::time) are not available in kernels
//~ AT src/main.rs:11:16
//~ NOTE in kernel `reject_case::timed`
//~ NOTE call chain: `reject_case::timed` → `<std::time::Instant>::now`
//~ ERROR oxide could not compile the kernels for the GPU (2 errors)
