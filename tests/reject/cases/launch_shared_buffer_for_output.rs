//! A shared borrow `&buffer` passed for a `DisjointSlice<f32>` (output)
//! parameter: writing needs the unique borrow `&mut buffer`.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn fill(value: f32, mut out: DisjointSlice<f32>) {
    if let Some(elem) = out.get_mut(thread::index_1d()) {
        *elem = value;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: fill, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [2.5f32, &out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `&DeviceBuffer<f32>` cannot be passed for a kernel parameter of type `DisjointSlice<f32>`
