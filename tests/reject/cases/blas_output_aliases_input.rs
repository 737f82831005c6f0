//! The same buffer as A and as C: cuBLAS would read what it is writing.
//! C's `&mut` borrow excludes it.
use cuda_blas::{Blas, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = Blas::new(&stream).unwrap();
    let b = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    blas.gemm(&GemmConfig::row_major(2, 2, 2), c.as_slice(), b.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot borrow `c` as mutable because it is also borrowed as immutable
