//! FP8 conversions are sm_89 instructions: a kernel that narrows to E4M3,
//! built for the default target (sm_80), is refused at the call, with the
//! flag that builds it for a GPU that has them.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::half::f8e4m3;
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn quantize(x: &[f32], mut out: DisjointSlice<f8e4m3>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = f8e4m3::from_f32(x[idx.get()]);
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let x = DeviceBuffer::from_host(&stream, &[1.0f32; 32]).unwrap();
    let mut out = DeviceBuffer::<f8e4m3>::zeroed(&stream, 32).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: quantize, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(32),
        args: [slice(x), slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `f8e4m3x2_from_f32` needs sm_89 or newer, but the kernels are being built for sm_80
//~ NOTE build for a newer GPU: `cargo oxide build --arch sm_89`
//~ ERROR oxide could not compile the kernels for the GPU
