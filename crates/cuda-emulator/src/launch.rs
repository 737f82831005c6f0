//! An emulated launch: refused on a faulted context, else run now by the
//! executor [`choose`](crate::executor::choose) picks (streams run their
//! work at submission), with a kernel fault made sticky in the launch's
//! context as a GPU's would be.

use std::ffi::c_void;
use std::sync::OnceLock;

use cuda_driver_sys::{panic_record, CUfunction, CUstream, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_SUCCESS};

use crate::engine::{Fault, Grid, HostKernel};
use crate::error::LaunchError;
use crate::executor::{self, ExecError};
use crate::mode::Mode;
use crate::module::Function;

/// The process's mode, set when the emulated driver is made.
static MODE: OnceLock<Mode> = OnceLock::new();

/// Records the mode of this process's emulated launches (the first call wins).
pub(crate) fn set_mode(mode: Mode) {
    let _ = MODE.set(mode);
}

/// The mode of this process's emulated launches.
pub fn mode() -> Mode {
    MODE.get().copied().unwrap_or(Mode::DEFAULT)
}

/// One launch for [`launch`].
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// A function handle of the emulated driver (`cuModuleGetFunction`).
    pub function: CUfunction,
    /// Grid, block and dynamic shared memory.
    pub grid: Grid,
    /// Blocks per thread-block cluster (`cuLaunchKernelEx`'s attribute), if
    /// the launch has clusters; only device-code mode runs those.
    pub cluster: Option<(u32, u32, u32)>,
    /// A cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): every block
    /// of the grid is kept running at once, so that a grid-wide barrier
    /// completes. The caller has checked that the grid fits the emulated
    /// device's occupancy.
    pub cooperative: bool,
    /// `kernelParams`: one pointer per kernel parameter, to its bytes.
    pub params: *const *mut c_void,
    /// The kernel's host code, when the launch has it (`cuda-host` does).
    pub host_code: Option<&'a HostKernel>,
    /// The stream (null: the legacy default stream). A launch on a stream
    /// that captures is recorded into the capture's graph, not run.
    pub stream: CUstream,
}

/// Runs `launch` now. A kernel fault is not an error here, as on the GPU:
/// it makes the function's context fail with the GPU's sticky error
/// (`CUDA_ERROR_LAUNCH_FAILED`, or `CUDA_ERROR_ILLEGAL_ADDRESS` and its kin
/// for device code), reported by the next call that synchronises or submits
/// work; a device panic is in the context's panic record. An error means
/// nothing ran.
///
/// # Safety
/// `launch.function` must be a live function handle of the emulated
/// driver, `launch.params` what the kernel expects (`cuLaunchKernel`'s
/// contract), and the host code, if any, that kernel's.
pub unsafe fn launch(launch: &Launch<'_>) -> Result<(), LaunchError> {
    // SAFETY: the caller's contract; a function's module outlives it.
    let (function, module) = unsafe {
        let f = &*launch.function.cast::<Function>();
        (f, &*f.module)
    };
    let status = module.context.status();
    if status != CUDA_SUCCESS {
        return Err(LaunchError::Context(status));
    }
    let ptx_name = function.name.to_string_lossy();
    let name = launch.host_code.map(HostKernel::name).filter(|n| !n.is_empty()).unwrap_or(&ptx_name);
    // Known for free in device-code mode; host-code mode measures it only
    // for a launch with dynamic shared memory (ptxas refuses a kernel past
    // the limit anyway, when the build had it).
    if let Some(static_shared) = function.static_shared_if_known().filter(|&s| s > crate::limits::SHARED_PER_BLOCK) {
        return Err(LaunchError::Invalid {
            reason: format!(
                "kernel `{name}` declares {static_shared} bytes of static shared memory, more than the {} a GPU \
                 allows (ptxas refuses it); move the largest arrays to dynamic shared memory",
                crate::limits::SHARED_PER_BLOCK
            ),
        });
    }
    let dynamic = launch.grid.shared_mem_bytes;
    if dynamic > 0 && dynamic > function.max_dynamic_shared() {
        let static_shared = function.static_shared();
        let beside = if static_shared > 0 {
            format!(", beside its {static_shared} bytes of static shared memory")
        } else {
            String::new()
        };
        return Err(LaunchError::Invalid {
            reason: format!(
                "kernel `{name}`: the launch asks for {dynamic} bytes of dynamic shared memory, more than the \
                 kernel's limit of {}{beside} (raise it with CudaFunction::set_max_dynamic_shared_memory)",
                function.max_dynamic_shared()
            ),
        });
    }
    if let Some(host) = launch.host_code {
        *crate::graph::lock(&function.host_code) = Some(*host);
    }
    // SAFETY: the caller's contract (a live function, its parameters).
    if let Some(code) = unsafe { crate::driver::capture_launch(launch) } {
        return code;
    }
    let executor = executor::choose(mode(), launch.host_code, launch.cluster, name)?;
    let start = std::time::Instant::now();
    // SAFETY: the caller's contract.
    let result = unsafe { executor.run(function, name, launch.grid, launch.cluster, launch.cooperative, launch.params) };
    if trace() {
        let g = launch.grid;
        let seconds = start.elapsed().as_secs_f64();
        let instructions = match &result {
            Ok(Some(n)) => format!(", {n} PTX instructions ({:.1} M/s)", *n as f64 / seconds.max(1e-9) / 1e6),
            _ => String::new(),
        };
        eprintln!(
            "oxide emulator ({}): {name} grid {:?} block {:?}{} shared {} B: {:.3} ms{instructions}{}",
            executor.mode(),
            g.grid_dim,
            g.block_dim,
            launch.cluster.map(|c| format!(" cluster {c:?}")).unwrap_or_default()
                + if launch.cooperative { " cooperative" } else { "" },
            g.shared_mem_bytes,
            seconds * 1e3,
            if result.is_ok() { "" } else { " (failed)" }
        );
    }
    match result {
        Ok(_) => Ok(()),
        Err(ExecError::Refused(e)) => Err(e),
        Err(ExecError::DeviceFault { code, detail }) => {
            module.context.fail(code, detail);
            Ok(())
        }
        Err(ExecError::Fault(Fault::Panic(panic))) => {
            let record = module.panic_record();
            if record != 0 {
                // SAFETY: cuda-core stored its context's panic record in the slot.
                unsafe { panic_record::write(record as *mut panic_record::RawPanicRecord, &panic.record()) };
                module.context.fail(CUDA_ERROR_LAUNCH_FAILED, None);
            } else {
                module.context.fail(CUDA_ERROR_LAUNCH_FAILED, Some(format!("emulator: {panic}")));
            }
            Ok(())
        }
        Err(ExecError::Fault(Fault::IllegalAddress(message))) => {
            module.context.fail(CUDA_ERROR_ILLEGAL_ADDRESS, Some(message));
            Ok(())
        }
        Err(ExecError::Fault(Fault::Emulator(message))) => {
            module.context.fail(CUDA_ERROR_LAUNCH_FAILED, Some(message));
            Ok(())
        }
    }
}

/// Whether every emulated launch prints its kernel, shape and wall time to
/// stderr (`OXIDE_EMULATE_TRACE=1`).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var("OXIDE_EMULATE_TRACE").is_ok_and(|v| v.trim() == "1"))
}
