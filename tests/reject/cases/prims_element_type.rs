//! A device-wide reduce of bytes: cuda-prims' primitives take 4- and
//! 8-byte integers and floats.
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_host::load_kernel_module;
use cuda_prims::{op::Sum, reduce};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let bytes = DeviceBuffer::from_host(&stream, &[1u8, 2, 3]).unwrap();
    let _ = reduce::reduce(&module, &stream, &bytes, Sum);
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `u8` is not an element type of cuda-prims' device-wide primitives
//~ NOTE the device-wide primitives take buffers of u32, i32, u64, i64, f32 or f64
