//! A GEMM of an f32 A with an f16 B: A, B and C have one element type.
use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f16;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let b = DeviceBuffer::<f16>::zeroed(&stream, 4).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    blas.gemm(&GemmConfig::row_major(2, 2, 2), a.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR mismatched types
//~ NOTE expected struct `DeviceSlice<'_, f32>`
