//! The device-code executor: runs the PTX the device linker produced on the
//! `ptx-vm` virtual machine. It proves oxide's output (the passes after
//! rustc: bounds-check versioning and hoisting, the unchecked entries, the
//! atomics and panic lowerings, shared-memory scheduling, and LLVM's NVPTX
//! instruction selection), which the host-code executor never runs; not
//! ptxas's translation to SASS, nor the hardware.
//!
//! How it is wired:
//!
//! 1. A module is parsed and decoded once, when it is loaded
//!    (`crate::module::Module::load`); a text that does not parse makes
//!    `cuModuleLoadDataEx` fail with `CUDA_ERROR_INVALID_PTX` and the
//!    parser's message in the JIT error log. The module's `.global` and
//!    `.const` variables live in the VM module and are the module's globals:
//!    `cuModuleGetGlobal` answers their addresses, so cuda-core's
//!    panic-record slot and `KernelModule::set_constant` write what the
//!    device code reads.
//! 2. [`run`] calls `ptx_vm::launch` with the function's PTX name, the
//!    launch's grid and cluster shape, its `kernelParams`, and
//!    [`DriverMemory`]: the memory the kernel may touch is the emulated
//!    driver's live allocations (device memory, pinned host memory) and the
//!    module's own variables; `vprintf` goes to the emulator's printf
//!    formatter (`crate::printf`).
//! 3. A kernel that can reach what the VM does not implement (wgmma, TMA
//!    bulk copies, `mma`, textures) is refused before anything runs, with a
//!    message naming the instruction and pointing at `OXIDE_EMULATE=host`.
//!    A launch the kernel does not accept (its `.reqntid`, `.maxntid`,
//!    parameters) is refused as the GPU's `CUDA_ERROR_INVALID_VALUE` would.
//! 4. A fault of the running kernel becomes the context's sticky error, with
//!    the VM's report (it names the kernel, the block, the thread and the
//!    PTX instruction) as its detail: an access outside every allocation is
//!    `CUDA_ERROR_ILLEGAL_ADDRESS`, a misaligned one
//!    `CUDA_ERROR_MISALIGNED_ADDRESS`, a launch past its time budget
//!    `CUDA_ERROR_LAUNCH_TIMEOUT`, the rest (a trap, a deadlock)
//!    `CUDA_ERROR_LAUNCH_FAILED`. A device panic is a trap after the device
//!    code has written the context's panic record itself, as on the GPU: the
//!    error then carries that `DevicePanic` and no further detail.
//!
//! Knobs: `OXIDE_EMULATE_THREADS` (worker threads, as for host code) and
//! `OXIDE_EMULATE_TIMEOUT_S`, the wall-clock budget of one launch (120 s;
//! 0: none), which ends a spin-wait that can never finish.

use std::ffi::c_void;
use std::ops::Range;
use std::time::Duration;

use cuda_driver_sys::{panic_record, CUresult, CUDA_ERROR_LAUNCH_FAILED};
use ptx_vm::{Fault, LaunchDims, LaunchOptions};

use super::ExecError;
use crate::engine::Grid;
use crate::error::LaunchError;
use crate::module::{Code, Function, Module};

/// `CUDA_ERROR_ILLEGAL_ADDRESS`.
const ILLEGAL_ADDRESS: CUresult = 700;
/// `CUDA_ERROR_LAUNCH_TIMEOUT`.
const LAUNCH_TIMEOUT: CUresult = 702;
/// `CUDA_ERROR_MISALIGNED_ADDRESS`.
const MISALIGNED_ADDRESS: CUresult = 716;

/// The environment of a launch: the emulated driver's memory and printf.
pub(crate) struct DriverMemory;

impl ptx_vm::Environment for DriverMemory {
    fn valid_regions(&self) -> Vec<Range<u64>> {
        crate::memory::allocations()
    }

    fn printf(&self, format: &[u8], args: *const u8) {
        // SAFETY: ptx-vm's contract: `args` is CUDA's vprintf buffer for
        // `format`, its `%s` arguments host pointers valid during the call.
        unsafe { crate::printf::print_vprintf(format, args) }
    }

    fn set_conditional(&self, handle: u64, value: u32) -> Result<(), String> {
        crate::graph::set_conditional(handle, value)
    }
}

/// Runs `grid` of `function`'s PTX, in clusters of `cluster` blocks if
/// given (`name` in reports: the Rust path where the launch gave one, else
/// the PTX name). Returns the instructions executed.
///
/// # Safety
/// `params` must be what the kernel expects (`cuLaunchKernel`'s contract).
pub(super) unsafe fn run(
    function: &Function,
    name: &str,
    grid: Grid,
    cluster: Option<(u32, u32, u32)>,
    cooperative: bool,
    params: *const *mut c_void,
) -> Result<Option<u64>, ExecError> {
    // SAFETY: a function's module outlives it.
    let module = unsafe { &*function.module };
    let unavailable = |reason: &str| {
        ExecError::Refused(LaunchError::DeviceCodeUnavailable { kernel: name.to_string(), reason: reason.to_string() })
    };
    let program = match &module.code {
        Code::Program(program) => program,
        Code::Binary => {
            return Err(unavailable(
                "its module was loaded from a binary image (cubin or fatbin), and the emulator runs PTX \
                 (load the PTX: cuda-host's load_kernel_module does)",
            ))
        }
        Code::Unparsed { .. } => return Err(unavailable("its module was loaded in host-code mode, without parsing its PTX")),
    };
    let ptx_name = function.name.to_string_lossy();
    let Some(kernel) = program.kernel(&ptx_name) else {
        let reason = format!("cannot launch kernel `{name}`: the module has no kernel `{ptx_name}`");
        return Err(ExecError::Refused(LaunchError::Invalid { reason }));
    };
    let count = kernel.kernel_params.len();
    let params: &[*const u8] = if count == 0 {
        &[]
    } else if params.is_null() {
        let reason = format!("cannot launch kernel `{name}`: it takes {count} parameters and kernelParams is null");
        return Err(ExecError::Refused(LaunchError::Invalid { reason }));
    } else {
        // SAFETY: one pointer per kernel parameter (the caller's contract).
        unsafe { std::slice::from_raw_parts(params.cast::<*const u8>(), count) }
    };
    let dims = LaunchDims { grid: grid.grid_dim, block: grid.block_dim, dynamic_shared_bytes: grid.shared_mem_bytes };
    let blocks = grid.grid_dim.0 as usize * grid.grid_dim.1 as usize * grid.grid_dim.2 as usize;
    let defaults = LaunchOptions::default();
    let options = LaunchOptions {
        workers: crate::engine::workers(),
        timeout: timeout(),
        cluster,
        // A cooperative grid runs all at once: the workers keep every block
        // resident and interleave them, so a grid-wide barrier completes.
        resident: if cooperative { blocks.max(defaults.resident) } else { defaults.resident },
        ..defaults
    };
    match ptx_vm::launch(program, &ptx_name, dims, params, &DriverMemory, &options) {
        Ok(stats) => Ok(Some(stats.instructions)),
        Err(fault) => Err(classify(named(fault, name), module)),
    }
}

/// The launch budget: `OXIDE_EMULATE_TIMEOUT_S` seconds (0: none), else
/// ptx-vm's default.
fn timeout() -> Duration {
    let limit = std::env::var("OXIDE_EMULATE_TIMEOUT_S").ok().and_then(|v| v.trim().parse::<f64>().ok());
    match limit {
        Some(0.0) => Duration::MAX,
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
        _ => LaunchOptions::default().timeout,
    }
}

/// `fault` naming the kernel `name` (the Rust path) rather than its PTX
/// entry, which the VM knows it by.
fn named(mut fault: Fault, name: &str) -> Fault {
    let kernel = match &mut fault {
        Fault::Trap { kernel, .. }
        | Fault::MemoryViolation { kernel, .. }
        | Fault::MisalignedAddress { kernel, .. }
        | Fault::Deadlock { kernel, .. }
        | Fault::Timeout { kernel, .. }
        | Fault::Unsupported { kernel, .. }
        | Fault::ExecutionError { kernel, .. }
        | Fault::InvalidLaunch { kernel, .. } => kernel,
    };
    *kernel = name.to_string();
    fault
}

/// What a VM fault means for the launch and its context.
fn classify(fault: Fault, module: &Module) -> ExecError {
    let sticky = |code: CUresult, fault: &Fault| ExecError::DeviceFault { code, detail: Some(format!("ptx-vm: {fault}")) };
    match fault {
        Fault::Unsupported { kernel, at, reason } => ExecError::Refused(LaunchError::DeviceCodeUnavailable {
            kernel,
            reason: format!("it can reach {at}, which the PTX VM does not implement ({reason})"),
        }),
        Fault::InvalidLaunch { .. } => ExecError::Refused(LaunchError::Invalid { reason: fault.to_string() }),
        Fault::Trap { .. } if recorded_panic(module) => ExecError::DeviceFault { code: CUDA_ERROR_LAUNCH_FAILED, detail: None },
        Fault::MemoryViolation { .. } => sticky(ILLEGAL_ADDRESS, &fault),
        Fault::MisalignedAddress { .. } => sticky(MISALIGNED_ADDRESS, &fault),
        Fault::Timeout { .. } => sticky(LAUNCH_TIMEOUT, &fault),
        Fault::Trap { .. } | Fault::Deadlock { .. } | Fault::ExecutionError { .. } => sticky(CUDA_ERROR_LAUNCH_FAILED, &fault),
    }
}

/// Whether the device code filled the context's panic record (the module's
/// `__oxide_panic_record` points at it) before it trapped.
fn recorded_panic(module: &Module) -> bool {
    let record = module.panic_record();
    // SAFETY: cuda-core stored its context's live panic record in the slot.
    record != 0 && unsafe { panic_record::read(record as *const panic_record::RawPanicRecord) }.is_some()
}
