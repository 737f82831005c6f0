//! A cuBLASLt matmul with an epilogue on f64: cuBLASLt's epilogues take
//! f32, f16 and bf16.
use cuda_blas::{BlasLt, Epilogue, GemmConfig};
use cuda_core::{CudaContext, DeviceBuffer};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let lt = BlasLt::new(&stream).unwrap();
    let a = DeviceBuffer::<f64>::zeroed(&stream, 4).unwrap();
    let mut c = DeviceBuffer::<f64>::zeroed(&stream, 4).unwrap();
    lt.matmul(&GemmConfig::row_major(2, 2, 2), Epilogue::Relu, a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cuBLASLt epilogues take f32, f16 or bf16, not `f64`
