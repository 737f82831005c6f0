//! SSE intrinsics (core::arch::x86_64::_mm_*) are x86 instructions.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn sse(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    use core::arch::x86_64::*;
    let v = unsafe { _mm_sqrt_ps(_mm_set1_ps(idx.get() as f32)) };
    let r = unsafe { _mm_cvtss_f32(v) };
    if let Some(o) = out.get_mut(idx) {
        *o = r as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: sse, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `core::core_arch::x86::sse::_mm_sqrt_ps` cannot be called on the GPU: x86 intrinsics are instructions of the host CPU
//~ AT src/main.rs:10:22
//~ ERROR `core::core_arch::x86::sse::_mm_cvtss_f32` cannot be called on the GPU: x86 intrinsics
//~ AT src/main.rs:11:22
//~ NOTE in kernel `reject_case::sse`
//~ ERROR oxide could not compile the kernels for the GPU (2 errors)
