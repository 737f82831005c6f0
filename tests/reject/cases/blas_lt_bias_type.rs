//! An f32 bias for an f16 cuBLASLt matmul: the bias has the matrices'
//! element type.
use cuda_blas::{BlasLt, Epilogue, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::half::f16;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f16>::zeroed(&stream, 4).unwrap();
    let bias = DeviceBuffer::<f32>::zeroed(&stream, 2).unwrap();
    let mut c = DeviceBuffer::<f16>::zeroed(&stream, 4).unwrap();
    let cfg = GemmConfig::row_major(2, 2, 2);
    lt.matmul(&cfg, Epilogue::Bias(bias.as_slice()), a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR arguments to this method are incorrect
//~ NOTE expected `DeviceSlice<'_, f32>`, found `DeviceSlice<'_, f16>`
