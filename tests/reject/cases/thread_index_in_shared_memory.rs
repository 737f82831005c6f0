//! A ThreadIndex cannot be put where another thread reads it: a `shared!`
//! array is a static, which must be `Sync`, and a ThreadIndex is neither
//! `Send` nor `Sync` (thread 0's index in every thread would hand them all
//! element 0).
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn share_index(mut out: DisjointSlice<u32>) {
    shared! { static INDICES: [ThreadIndex; 256]; }
    let first = INDICES.stage(thread::index_1d()).sync().get(0);
    if let Some(o) = out.get_mut(first) {
        *o += 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: share_index, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [&mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `*const ()` cannot be sent between threads safely
//~ NOTE required because it appears within the type `ThreadIndex`
//~ NOTE required for `SharedArray<ThreadIndex, 256>` to implement `Sync`
//~ NOTE required by a bound in `SharedArray::<T, N, A>::stage`
