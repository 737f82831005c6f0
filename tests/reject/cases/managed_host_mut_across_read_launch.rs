//! A `&mut [T]` of a managed buffer from `host_mut()` held across a launch
//! that reads the buffer: the host's writes would race with the kernel's
//! reads. The mutable borrow makes the launch's `slice` a borrow error.
use cuda_core::{CudaContext, LaunchConfig, ManagedBuffer};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn copy(src: &[f32], mut dst: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(x) = dst.get_mut(idx) {
        *x = src[i];
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut src = ManagedBuffer::<f32>::zeroed(&ctx, 64).unwrap();
    let mut dst = ManagedBuffer::<f32>::zeroed(&ctx, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let writing = src.host_mut().unwrap();
    cuda_launch! {
        kernel: copy, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(src), slice_mut(dst)]
    }
    .unwrap();
    writing[0] = 3.0;
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot borrow `src` as immutable because it is also borrowed as mutable
