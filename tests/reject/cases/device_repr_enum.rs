//! An enum in device memory: a kernel could write a byte that is no
//! variant, which safe code would then read as the enum. The derive
//! refuses it, says why, and what to store instead.
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};

#[derive(Clone, Copy, DeviceRepr)]
#[repr(u8)]
pub enum Op {
    Add,
    Mul,
    Max,
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let ops = DeviceBuffer::<Op>::zeroed(&stream, 4).unwrap();
    let _ = ops.to_host_vec(&stream);
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `Op` cannot derive DeviceRepr: its 8-bit representation has 253 bit patterns that are no variant (3 variants)
//~ AT src/main.rs:8:10
