//! A condition handle cannot come out of device memory either: a buffer of
//! handles would let a kernel read any bytes as one (zeroed, or written as
//! numbers), so `ConditionHandle` is not `DeviceRepr`.
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_device::graph::ConditionHandle;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let _handles = DeviceBuffer::<ConditionHandle>::zeroed(&stream, 4).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `zeroed` exists for struct `DeviceBuffer<ConditionHandle>`, but its trait bounds were not satisfied
//~ AT src/main.rs:10:53
