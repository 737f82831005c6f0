//! A kernel's condition handle cannot be made from a number in safe code:
//! `cudaGraphSetConditional` with a handle the driver did not make writes
//! where it says. Only the graph's `condition(..).handle()` gives one.
use cuda_device::graph::ConditionHandle;

fn main() {
    let forged = ConditionHandle::from_raw(0x1234);
    let _ = forged;
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR call to unsafe function `ConditionHandle::from_raw` is unsafe and requires unsafe
//~ AT src/main.rs:7:18
