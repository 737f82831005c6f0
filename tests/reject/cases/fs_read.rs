//! std::fs reads the host file system.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn read_file(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let ok = std::fs::metadata("/etc/hostname").is_ok();
    if let Some(o) = out.get_mut(idx) {
        *o = ok as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: read_file, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `std::fs::metadata
//~ ERROR cannot be called on the GPU: the host file system (std::fs) is not available in kernels
//~ AT src/main.rs:9:14
//~ NOTE in kernel `reject_case::read_file`
//~ NOTE call chain: `reject_case::read_file` → `std::fs::metadata
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
