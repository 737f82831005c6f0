//! The host-code executor: the kernel's own Rust code, compiled for the
//! host, run by the engine (`crate::engine`). It proves the Rust: the
//! kernel's logic with CUDA's semantics, debuggable with gdb; not what the
//! device linker made of it.

use std::ffi::c_void;

use crate::engine::{self, Fault, Grid, HostKernel};

/// Runs `grid` with `kernel`.
///
/// # Safety
/// `params` must be what `kernel` expects, valid until this returns.
pub(super) unsafe fn run(grid: Grid, kernel: &HostKernel, cooperative: bool, params: *const *mut c_void) -> Result<(), Fault> {
    crate::hooks::install();
    // SAFETY: the caller's contract.
    unsafe { engine::run(grid, kernel, cooperative, params) }
}
