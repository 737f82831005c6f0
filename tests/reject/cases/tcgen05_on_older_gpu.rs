//! tcgen05 (Blackwell's tensor memory) exists only on the targets with the
//! `tcgen05` feature (sm_100a/f, sm_103a/f, sm_110a/f): built for sm_80 (the
//! default here), the call is refused at its line, naming a target to build
//! for, not left for ptxas to reject.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, tcgen05, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn tensor_memory(mut out: DisjointSlice<u32>) {
    tcgen05::relinquish_alloc_permit();
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
        kernel: tensor_memory, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `tcgen05_relinquish_alloc_permit` needs a target with tcgen05 (sm_100a, sm_100f
//~ AT src/main.rs:11:5
//~ NOTE build for one: `cargo oxide build --arch sm_100a`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
