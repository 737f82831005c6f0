//! A CUDA C++ kernel's `float*` parameter (declared `*mut f32` in
//! `extern_kernels!`) takes `&mut buffer`: a shared borrow, which the
//! kernel could write through while another argument reads the same buffer,
//! does not compile.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{extern_kernels, load_kernel_module};

extern_kernels! {
    /// `extern "C" __global__ void scale(const float *in, float *out, int n)`.
    fn scale(input: *const f32, output: *mut f32, n: i32);
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let input = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    // SAFETY: not reached: the call does not compile.
    unsafe { scale(&module, &stream, LaunchConfig::for_num_elems(64), &input, &input, 64) }.unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `&DeviceBuffer<f32>` cannot be passed for a CUDA C++ kernel parameter declared `*mut f32`
//~ NOTE a `*mut T` parameter takes `&mut buffer`
//~ AT src/main.rs:19
