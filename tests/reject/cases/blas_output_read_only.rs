//! C passed as a read-only view: the GEMM writes it, so it takes the
//! unique `DeviceSliceMut`.
use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    blas.gemm(&GemmConfig::row_major(2, 2, 2), a.as_slice(), a.as_slice(), c.as_slice()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR mismatched types
//~ NOTE expected struct `DeviceSliceMut<'_, f32>`
