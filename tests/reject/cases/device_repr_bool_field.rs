//! A struct with a `bool` field in device memory: 0 and 1 are its only
//! values, and a kernel could write 2. The derive's bound names the field's type.
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};

#[derive(Clone, Copy, DeviceRepr)]
pub struct Sample {
    pub value: f32,
    pub valid: bool,
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let _ = DeviceBuffer::<Sample>::zeroed(&stream, 4).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `bool` cannot live in device memory: it is not DeviceRepr
//~ AT src/main.rs:8:16
