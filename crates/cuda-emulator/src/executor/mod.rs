//! Executors: what runs an emulated launch, chosen per launch.
//!
//! [`choose`] picks from the process's [`Mode`] and what the launch carries:
//! in device-code mode the module's PTX, on the `ptx-vm` virtual machine
//! (any launch: `cuda_launch!`, a typed launcher, a raw
//! `cuda_core::launch_kernel`, clusters); in host-code mode the kernel's
//! host code (`cuda-host` hands it over with every `cuda_launch!` and typed
//! launch; a raw PTX launch has none, and a cluster launch cannot run
//! there: both are refused). Both executors answer the same way: the launch
//! ran, the kernel faulted (the fault becomes sticky in the context), or the
//! launch was refused before anything ran.

mod device_code;
mod host_code;

use std::ffi::c_void;

use cuda_driver_sys::CUresult;

use crate::engine::{Fault, Grid, HostKernel};
use crate::error::LaunchError;
use crate::module::Function;
use crate::mode::Mode;

/// What runs one emulated launch.
#[derive(Clone, Copy, Debug)]
pub enum Executor<'a> {
    /// The kernel's Rust code, compiled for the host (the host-code engine).
    HostCode(&'a HostKernel),
    /// The PTX of the kernel's module, on the PTX VM (the device-code executor).
    DeviceCode,
}

/// Why an executor did not finish a launch.
pub(crate) enum ExecError {
    /// The kernel's host code faulted: the launch happened, its context is
    /// now unusable (a panic is written to the context's record).
    Fault(Fault),
    /// The device code faulted: the context fails with `code`, and `detail`
    /// explains it (none for a device panic, whose record the device code
    /// wrote itself, as on the GPU).
    DeviceFault {
        /// The sticky error, as a GPU would give it.
        code: CUresult,
        /// The VM's report.
        detail: Option<String>,
    },
    /// Nothing ran.
    Refused(LaunchError),
}

/// The executor for a launch of `kernel` (its name in reports) in `mode`,
/// given the host code and the cluster shape the launch carries, if any.
pub fn choose<'a>(
    mode: Mode,
    host_code: Option<&'a HostKernel>,
    cluster: Option<(u32, u32, u32)>,
    kernel: &str,
) -> Result<Executor<'a>, LaunchError> {
    match (mode, host_code) {
        (Mode::DeviceCode, _) => Ok(Executor::DeviceCode),
        (Mode::HostCode, _) if cluster.is_some() => {
            Err(LaunchError::ClustersNeedDeviceCode { kernel: kernel.to_string() })
        }
        (Mode::HostCode, Some(host)) => Ok(Executor::HostCode(host)),
        (Mode::HostCode, None) => Err(LaunchError::NoHostCode { kernel: kernel.to_string() }),
    }
}

impl Executor<'_> {
    /// The mode this executor runs.
    pub fn mode(&self) -> Mode {
        match self {
            Executor::HostCode(_) => Mode::HostCode,
            Executor::DeviceCode => Mode::DeviceCode,
        }
    }

    /// Runs the launch of `function` (`name` in reports) with `grid`, in
    /// clusters of `cluster` blocks if given (device code only), and
    /// `kernelParams` `params`. Returns the PTX instructions executed where
    /// the executor counts them (device code).
    ///
    /// # Safety
    /// `params` must be what the kernel expects (`cuLaunchKernel`'s contract)
    /// and, for host code, what that host code expects.
    pub(crate) unsafe fn run(
        &self,
        function: &Function,
        name: &str,
        grid: Grid,
        cluster: Option<(u32, u32, u32)>,
        cooperative: bool,
        params: *const *mut c_void,
    ) -> Result<Option<u64>, ExecError> {
        match self {
            // SAFETY: the caller's contract.
            Executor::HostCode(kernel) => unsafe { host_code::run(grid, kernel, cooperative, params) }.map(|()| None).map_err(ExecError::Fault),
            // SAFETY: the caller's contract.
            Executor::DeviceCode => unsafe { device_code::run(function, name, grid, cluster, cooperative, params) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_and_the_launch_pick_the_executor() {
        let body = || {};
        let host = HostKernel::from_fn(&body);
        let ok = |r: Result<Executor<'_>, LaunchError>| r.map(|e| e.mode());
        assert!(matches!(choose(Mode::HostCode, Some(&host), None, "k"), Ok(Executor::HostCode(h)) if std::ptr::eq(h, &host)));
        assert_eq!(ok(choose(Mode::DeviceCode, Some(&host), None, "k")), Ok(Mode::DeviceCode));
        assert_eq!(ok(choose(Mode::DeviceCode, None, None, "k")), Ok(Mode::DeviceCode));
        assert_eq!(ok(choose(Mode::DeviceCode, Some(&host), Some((2, 1, 1)), "k")), Ok(Mode::DeviceCode));
        let refused = choose(Mode::HostCode, None, None, "scale").unwrap_err();
        assert_eq!(refused, LaunchError::NoHostCode { kernel: "scale".into() });
        assert!(refused.to_string().contains("cannot run kernel `scale`"), "{refused}");
        assert!(refused.to_string().contains("OXIDE_EMULATE=ptx"), "{refused}");
        let clusters = choose(Mode::HostCode, Some(&host), Some((2, 1, 1)), "reduce").unwrap_err();
        assert_eq!(clusters, LaunchError::ClustersNeedDeviceCode { kernel: "reduce".into() });
        // `OXIDE_EMULATE=1` runs the device linker's output.
        assert_eq!(Mode::DEFAULT, Mode::DeviceCode);
    }
}
