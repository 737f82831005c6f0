//! A kernel cannot write a host static mut.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
static mut COUNTER: u32 = 0;

#[kernel]
pub fn count(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    unsafe { COUNTER += 1 };
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
        kernel: count, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel writes the host static `reject_case::COUNTER`: host statics are not shared with the GPU
//~ ERROR declare it `#[device_global]` to keep it in GPU memory
//~ AT src/main.rs:10:14
//~ NOTE in kernel `reject_case::count`
//~ NOTE call chain: `reject_case::count`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
