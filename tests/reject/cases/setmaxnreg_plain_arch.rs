//! setmaxnreg exists only on the architecture-specific target (sm_90a): any
//! other --arch, plain sm_90 included, is refused at the call.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel(launch_bounds(256, 1))]
pub fn specialised(mut out: DisjointSlice<u32>) {
    warpgroup::increase_max_registers::<232>();
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: specialised, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `setmaxnreg_inc` needs the architecture-specific target sm_90a, but the kernels are being built for sm_
//~ AT src/main.rs:9:5
//~ NOTE build for it: `cargo oxide build --arch sm_90a` (or set OXIDE_ARCH)
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
