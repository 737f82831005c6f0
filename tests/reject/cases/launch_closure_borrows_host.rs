//! A closure argument that borrows a host local (no `move`): the GPU would
//! receive the host address of `factor`.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn map<F: Fn(f32) -> f32 + Copy>(f: F, input: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = f(input[idx.get()]);
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let factor = 2.5f32;
    let scale = |x: f32| x * factor;
    let input = DeviceBuffer::from_host(&stream, &[1.0f32; 64]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: map, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [scale, &input, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR closure may outlive the current function, but it borrows `factor`
//~ AT src/main.rs:19
