//! An FP8 bias for an FP8 matmul writing f32: cuBLASLt takes a bf16 bias
//! there (the bias type follows the output: `Fp8Output::Bias`).
use cuda_blas::{BlasLt, Epilogue, Fp8Scales, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f8e4m3;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f8e4m3>::zeroed(&stream, 256).unwrap();
    let bias = DeviceBuffer::<f8e4m3>::zeroed(&stream, 16).unwrap();
    let one = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 256).unwrap();
    let cfg = GemmConfig::row_major(16, 16, 16).transpose_b();
    lt.matmul_fp8(&cfg, Fp8Scales::new(&one, &one), Epilogue::Bias(bias.as_slice()), a.as_slice(), a.as_slice(), c.as_slice_mut())
        .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR type mismatch resolving `<f32 as Fp8Output>::Bias == f8e4m3`
