//! `#[device] #[no_mangle]` exports a function to CUDA C++, which calls it
//! with the C calling convention: a Rust-ABI function cannot be exported, and
//! neither can a generic one.
use cuda_device::device;

#[device]
#[no_mangle]
pub fn twice(x: f32) -> f32 {
    x * 2.0
}

#[device]
#[no_mangle]
pub extern "C" fn first<T: Copy>(x: T) -> T {
    x
}

fn main() {
    let _ = twice(1.0);
    let _ = first(1u32);
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR a `#[device] #[no_mangle]` function is exported to CUDA C++, which calls it with the C calling convention: write `pub extern "C" fn`
//~ AT src/main.rs:7:1
//~ ERROR an exported `#[device]` function cannot be generic: CUDA C++ calls one function by one name
//~ AT src/main.rs:14:19
