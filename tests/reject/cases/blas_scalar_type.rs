//! An f64 alpha for an f32 GEMM: alpha and beta have the GEMM's scalar
//! type (f32 for f32, f16 and bf16).
use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let cfg = GemmConfig::<f64>::row_major(2, 2, 2).scale(2.0, 0.0);
    blas.gemm(&cfg, a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR type mismatch resolving `<f32 as GemmElement>::Scalar == f64`
