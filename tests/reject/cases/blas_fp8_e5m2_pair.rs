//! An FP8 matmul of E5M2 × E5M2: cuBLASLt has no such kernel (one factor
//! must be E4M3).
use cuda_blas::{BlasLt, Epilogue, Fp8Scales, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f8e5m2;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f8e5m2>::zeroed(&stream, 256).unwrap();
    let one = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 256).unwrap();
    let cfg = GemmConfig::row_major(16, 16, 16).transpose_b();
    lt.matmul_fp8(&cfg, Fp8Scales::new(&one, &one), Epilogue::None, a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cuBLASLt has no FP8 matmul of `f8e5m2` × `f8e5m2`
//~ NOTE store one factor as f8e4m3
