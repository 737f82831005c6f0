//! Names the CUDA C++ file whose device functions the kernels call. The
//! device linker (oxide-link) compiles it with nvcc for the link's GPU target
//! and links it with the kernels; cargo relinks when it changes. Its header
//! directory goes to nvcc as `-I` (a relative path is this package's).
fn main() {
    println!("cargo::rerun-if-changed=src/ops.cu");
    println!("cargo::rerun-if-changed=include");
    println!("cargo::rustc-link-arg=--oxide-device-source=src/ops.cu");
    println!("cargo::rustc-link-arg=--oxide-nvcc-flag=-Iinclude");
}
