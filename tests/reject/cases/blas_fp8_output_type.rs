//! An FP8 matmul writing f64: FP8 matmuls write f32, f16 or bf16.
use cuda_blas::{BlasLt, Epilogue, Fp8Scales, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f8e4m3;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f8e4m3>::zeroed(&stream, 256).unwrap();
    let one = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let mut c = DeviceBuffer::<f64>::zeroed(&stream, 256).unwrap();
    let cfg = GemmConfig::row_major(16, 16, 16).transpose_b();
    lt.matmul_fp8(&cfg, Fp8Scales::new(&one, &one), Epilogue::None, a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR an FP8 matmul cannot write `f64`
//~ NOTE FP8 matmuls write f32, f16 or bf16
