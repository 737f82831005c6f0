//! A SharedArray outside shared memory (a local) is the thread's own: after
//! `stage`/`sync`, `get(i)` would read slots no other thread wrote. Only
//! `shared!` makes one; `SharedArray::uninit` is unsafe.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice, SharedArray};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn local_stage(mut out: DisjointSlice<u32>) {
    let tile = SharedArray::<u32, 256>::uninit();
    let view = tile.stage(thread::threadIdx_x()).sync();
    let other = view.get(255 - thread::threadIdx_x() as usize);
    view.done();
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = other;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: local_stage, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [&mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR call to unsafe function `SharedArray::<T, N, A>::uninit` is unsafe and requires unsafe
