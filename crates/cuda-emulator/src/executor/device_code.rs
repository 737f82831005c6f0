//! The device-code executor: runs the PTX the device linker produced, on
//! the CPU. It proves oxide's output (the passes after rustc: bounds-check
//! versioning and hoisting, the unchecked entries, the atomics and panic
//! lowerings, shared-memory scheduling), which the host-code executor never
//! runs.
//!
//! This is where the `ptx-vm` interpreter plugs in; until it does, a launch
//! here is refused with [`LaunchError::DeviceCodeUnavailable`]. To plug it
//! in:
//!
//! 1. `crate::module::Module::load` parses the PTX once
//!    (`ptx_vm::Module::parse`; a `ParseError` makes `cuModuleLoadDataEx`
//!    fail with `CUDA_ERROR_INVALID_PTX` and the error as its log) and keeps
//!    the module's `.global`/`.const` variables among its globals
//!    (`module.global(name)`), so `cuModuleGetGlobal` finds them and
//!    `set_constant` writes what the device code reads.
//! 2. [`run`] below calls `ptx_vm::launch` with the parsed module, the
//!    function's PTX name, the grid (`LaunchDims`), one pointer per kernel
//!    parameter (`params`, as many as `module.kernel_params(name)` lists),
//!    and an `Environment` whose `valid_regions` are the driver's live
//!    allocations and module globals and whose `printf` is
//!    `crate::printf::print`.
//! 3. A `ptx_vm::Fault` becomes `ExecError::Fault(Fault::Emulator(..))` with its text (it names
//!    kernel, block and thread); a device panic's record is written by the
//!    device code itself, into the context's record, as on the GPU.
//! 4. `Mode::DEFAULT` becomes `Mode::DeviceCode`.

use std::ffi::c_void;

use super::ExecError;
use crate::engine::Grid;
use crate::error::LaunchError;
use crate::module::Function;

/// Runs `grid` of `function`'s PTX (`name` in reports: the Rust path where
/// the launch gave one, else the PTX name).
///
/// # Safety
/// `params` must be what the kernel expects (`cuLaunchKernel`'s contract).
pub(super) unsafe fn run(function: &Function, name: &str, grid: Grid, params: *const *mut c_void) -> Result<(), ExecError> {
    let _ = (grid, params); // for ptx_vm::launch (step 2 of the module docs)
    // SAFETY: a function's module outlives it.
    let module = unsafe { &*function.module };
    let kernel = name.to_string();
    let reason = match &module.ptx {
        None => "its module was loaded from a binary image (cubin or fatbin), not from PTX",
        Some(_) => "this build has no PTX interpreter yet (the ptx-vm crate)",
    };
    Err(ExecError::Refused(LaunchError::DeviceCodeUnavailable { kernel, reason }))
}
