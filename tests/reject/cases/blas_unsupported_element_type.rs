//! A GEMM of i32 buffers: cuBLAS multiplies f32, f64, f16 and bf16 only.
use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::<i32>::zeroed(&stream, 4).unwrap();
    let mut c = DeviceBuffer::<i32>::zeroed(&stream, 4).unwrap();
    blas.gemm(&GemmConfig::<f32>::row_major(2, 2, 2), a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `i32` is not an element type cuBLAS multiplies
//~ NOTE cuda-blas GEMMs take f32, f64, f16 or bf16
