//! `#[kernel(cluster_dims(..))]` needs thread-block clusters (sm_90 and
//! newer): built for sm_80 (the default here), the kernel is refused, and the
//! error names the targets that have clusters.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel(cluster_dims(2, 1, 1))]
pub fn paired(mut out: DisjointSlice<u32>) {
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
        kernel: paired, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::paired` has cluster_dims, but the kernels are being built for sm_80, which has no thread-block clusters
//~ NOTE clusters need sm_90,
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
