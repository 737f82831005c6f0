//! No device buffer holds a ThreadIndex: it is not `DeviceRepr`. Otherwise
//! one launch could store its indices (or the host zeroes) and the next read
//! element 0's index in every thread.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn save(mut saved: DisjointSlice<ThreadIndex>) {
    let idx = thread::index_1d();
    if let Some(s) = saved.get_mut(idx) {
        *s = idx;
    }
}

#[kernel]
pub fn replay(saved: &[ThreadIndex], mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(saved[0]) {
        *o += 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut saved = DeviceBuffer::<ThreadIndex>::zeroed(&stream, 256).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let config = LaunchConfig::for_num_elems(256);
    cuda_launch! { kernel: save, stream: stream, module: module, config: config, args: [&mut saved] }.unwrap();
    cuda_launch! { kernel: replay, stream: stream, module: module, config: config, args: [&saved, &mut out] }.unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `zeroed` exists for struct `DeviceBuffer<ThreadIndex>`, but its trait bounds were not satisfied
//~ NOTE the following trait bounds were not satisfied
//~ AT src/main.rs:26:50
