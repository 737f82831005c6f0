//! Not an error: `#[device] #[no_mangle] pub extern "C" fn` exports a Rust
//! function to CUDA C++. No kernel calls it, yet it stays in the PTX as a
//! `.visible .func` under its own name, for nvcc-compiled code to link
//! against (tests/gpu/cxx_export); what it reaches is checked as a kernel's
//! code is. A package of exports alone, without a kernel, builds too.
use cuda_device::device;

#[device]
#[no_mangle]
pub extern "C" fn rust_twice(x: f32) -> f32 {
    x * 2.0
}

fn main() {
    println!("{}", rust_twice(1.0));
}

//~ PTX .visible .func  (.param .b32 func_retval0) rust_twice(
