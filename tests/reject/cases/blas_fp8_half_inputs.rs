//! f16 inputs to the FP8 matmul: it takes f8e4m3 or f8e5m2 (f16 goes
//! through `BlasLt::matmul`).
use cuda_blas::{BlasLt, Epilogue, Fp8Scales, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f16;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f16>::zeroed(&stream, 256).unwrap();
    let one = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let mut c = DeviceBuffer::<f16>::zeroed(&stream, 256).unwrap();
    let cfg = GemmConfig::row_major(16, 16, 16).transpose_b();
    lt.matmul_fp8(&cfg, Fp8Scales::new(&one, &one), Epilogue::None, a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR f16` is not an FP8 type cuBLASLt multiplies
//~ NOTE for f16, bf16 or f32 use `BlasLt::matmul`
