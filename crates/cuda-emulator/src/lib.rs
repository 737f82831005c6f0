//! Kernels on the CPU: the emulated device behind `OXIDE_EMULATE=1`
//! (`cargo oxide run --emulate`).
//!
//! With the variable set, this crate loads no driver: its emulated driver (`driver.rs`) stands in
//! for `libcuda.so.1` (device memory is host memory, streams run their work
//! at submission), and a launch through `cuda-host` (`cuda_launch!`, typed
//! launchers) runs the kernel's own Rust code, compiled for the host, on the
//! host's cores (`engine.rs`): blocks in parallel, the threads of a block as
//! fibers with real barriers, warp collectives as rendezvous of their lanes,
//! `shared!` memory per block, atomics as host atomics. The intrinsic stubs
//! answer from the emulated thread (`cuda_device::emulation`). A device panic
//! is the same error as on the GPU ([`DevicePanic`](crate::DevicePanic) in the
//! `DriverError`); what the GPU would not forgive (a barrier some thread of
//! the block never reaches, a shared-memory race between barriers, a shared
//! access out of bounds, a warp collective some lane of its mask never joins)
//! fails the launch with an explanation instead of hanging or corrupting.
//!
//! ```
//! use cuda_core::emulator::{self, Grid, HostKernel};
//! use cuda_device::{thread, warp};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! let total = AtomicU32::new(0);
//! let body = || {
//!     // Each warp sums its lane ids; lane 0 adds the sum.
//!     let sum = warp::reduce_add_u32(warp::FULL_MASK, warp::lane_id());
//!     thread::sync_threads();
//!     if warp::lane_id() == 0 {
//!         total.fetch_add(sum, Ordering::Relaxed);
//!     }
//! };
//! let grid = Grid { grid_dim: (4, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
//! emulator::run(grid, &HostKernel::from_fn(&body)).unwrap();
//! assert_eq!(total.load(Ordering::Relaxed), 4 * 2 * (0..32).sum::<u32>());
//! ```

mod driver;
mod engine;
mod fiber;
mod hooks;
mod printf;

use std::ffi::c_void;
use std::sync::OnceLock;

pub use engine::{Fault, Grid, HostKernel};
pub(crate) use driver::{fault_detail, symbol, unsupported};

use crate::error::{DriverError, ErrorKind};

/// The environment variable that selects the emulator.
pub const ENV: &str = "OXIDE_EMULATE";

/// Whether this process runs kernels on the CPU: [`ENV`] is set to `1`,
/// `true`, `yes` or `on` (read once, at the first use of the driver).
pub fn is_active() -> bool {
    static ACTIVE: OnceLock<bool> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        std::env::var(ENV).is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
    })
}

/// Whether every emulated launch prints its kernel, shape and wall time to
/// stderr (`OXIDE_EMULATE_TRACE=1`).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var("OXIDE_EMULATE_TRACE").is_ok_and(|v| v.trim() == "1"))
}

/// Installs the emulator's answers to the intrinsic stubs.
pub(crate) fn install_hooks() {
    hooks::install();
}

/// Runs `grid` with `kernel` on the CPU, outside any context: the core of an
/// emulated launch, for tests of kernel semantics. The kernel reads its
/// coordinates through `cuda_device::thread` and may use every intrinsic.
pub fn run(grid: Grid, kernel: &HostKernel) -> Result<(), Fault> {
    hooks::install();
    // SAFETY: a kernel made by `from_fn` ignores `params`; one made with
    // `HostKernel::new` promised to accept a null parameter array only if
    // it takes no parameters (`new`'s contract covers its launches).
    unsafe { engine::run(grid, kernel, std::ptr::null()) }
}

/// An emulated launch on the emulator's context: runs the grid now (streams
/// run their work at submission) and turns a fault into the sticky error a
/// GPU launch would give, with the panic written to the module's panic
/// record. Like a GPU launch, the launch itself succeeds: the fault is
/// reported by the next call that synchronises or submits work.
///
/// # Safety
/// `params` must be what `kernel` expects (`cuLaunchKernel`'s contract),
/// and `function` a handle of the emulated driver.
pub(crate) unsafe fn launch(
    name: &str,
    function: *mut c_void,
    grid: Grid,
    kernel: &HostKernel,
    params: *const *mut c_void,
) -> Result<(), DriverError> {
    let code = driver::sticky();
    if code != 0 {
        return Err(DriverError::from_code(code, "cuLaunchKernel"));
    }
    hooks::install();
    let start = std::time::Instant::now();
    // SAFETY: the caller's contract.
    let result = unsafe { engine::run(grid, kernel, params) };
    if trace() {
        eprintln!(
            "oxide emulator: {name} grid {:?} block {:?} shared {} B: {:.3} ms{}",
            grid.grid_dim,
            grid.block_dim,
            grid.shared_mem_bytes,
            start.elapsed().as_secs_f64() * 1e3,
            if result.is_ok() { "" } else { " (failed)" }
        );
    }
    match result {
        Ok(()) => Ok(()),
        Err(Fault::Panic(panic)) => {
            // SAFETY: `function` is an emulated function handle whose module
            // is loaded; its panic slot holds the record's address (or 0).
            let record = unsafe { *(*(*function.cast::<driver::Function>()).module).panic_slot };
            if record != 0 {
                // SAFETY: the slot was set by cuda-core to its panic record.
                unsafe { crate::panic::write_record(record, &panic) };
                driver::set_fault(719, None);
            } else {
                driver::set_fault(719, Some(format!("emulator: {panic}")));
            }
            Ok(())
        }
        Err(Fault::Emulator(message)) => {
            driver::set_fault(719, Some(message));
            Ok(())
        }
    }
}

/// The error for a launch the emulator cannot run: no host code.
pub(crate) fn no_host_code(kernel: &str) -> DriverError {
    DriverError::new(
        ErrorKind::InvalidArgument,
        format!(
            "the CPU emulator ({ENV}) cannot run kernel `{kernel}`: it was launched with \
             cuda_core::launch_kernel, which hands over PTX only. Launch it with cuda_launch! or a \
             #[cuda_module] launcher, which give the emulator the kernel's host code."
        ),
        "launch_kernel",
    )
}
