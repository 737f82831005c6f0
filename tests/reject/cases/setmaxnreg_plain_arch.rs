//! setmaxnreg exists only on the architecture-specific targets (sm_90a and
//! the later `a`/`f` ones): any other --arch, plain sm_90 included, is
//! refused at the call, and the error lists the targets that have it.
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
//~ ERROR `setmaxnreg_inc` needs a target with setmaxnreg (sm_90a
//~ AT src/main.rs:10:5
//~ NOTE build for one: `cargo oxide build --arch sm_90a` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH); its PTX runs only on that GPU
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
