//! conformance-device: the device half of the `conformance` example.
//!
//! Everything here is compiled for the GPU by the device linker when the
//! `conformance` binary links, although it lives in another crate. That is the
//! point of keeping it in a library: the suite checks cross-crate kernels (a
//! generic one instantiated by the binary, a plain one launched from it) and
//! cross-crate `#[device]` functions, alongside the semantics of the cases.
//!
//! The crate is `no_std`, like any code meant for the GPU; the host runs the
//! very same functions to compute the expected results.
#![no_std]

use cuda_device::{kernel, thread, DisjointSlice};

pub mod helpers;

/// The kernel behind every conformance case: `out[i] = f(a[i], b[i])`.
///
/// Each case is a distinct closure type, so each one is its own instance of
/// this kernel (its own PTX entry), instantiated where the binary launches it.
/// The closure returns `u128` so that any result (a 128-bit integer, a float's
/// bits, several packed fields) fits in one element.
#[kernel]
pub fn run_case<F: Fn(u64, u64) -> u128 + Copy>(
    f: F,
    a: &[u64],
    b: &[u64],
    mut out: DisjointSlice<u128>,
) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = f(a[i], b[i]);
    }
}

/// `out[i] = alpha * x[i] + y[i]`: a non-generic kernel defined in a library
/// and launched from the binary.
#[kernel]
pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = saxpy_element(alpha, x[i], y[i]);
    }
}

/// One element of [`saxpy`]; the host calls it to compute the expected result.
///
/// Rust does not allow the multiply and the add to be contracted into a fused
/// multiply-add, so the GPU must round twice, exactly like the CPU.
#[cuda_device::device]
pub fn saxpy_element(alpha: f32, x: f32, y: f32) -> f32 {
    alpha * x + y
}
