//! A warp shuffle moves only plain values: lane 0's ThreadIndex in every
//! lane would hand the warp one element.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn shuffle_index(mut out: DisjointSlice<u32>) {
    let lane0 = warp::shfl_idx(u32::MAX, thread::index_1d(), 0);
    if let Some(o) = out.get_mut(lane0) {
        *o += 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: shuffle_index, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [&mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR the trait bound `ThreadIndex: Shuffle` is not satisfied
