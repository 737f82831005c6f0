//! Executors: what runs an emulated launch, chosen per launch.
//!
//! [`choose`] picks from the process's [`Mode`] and what the launch carries:
//! in host-code mode the kernel's host code (`cuda-host` hands it over with
//! every `cuda_launch!` and typed launch; a raw PTX launch has none and is
//! refused), in device-code mode the module's PTX. Both executors answer the
//! same way: the launch ran, the kernel faulted (the fault becomes sticky in
//! the context), or the launch was refused before anything ran.

mod device_code;
mod host_code;

use std::ffi::c_void;

use crate::engine::{Fault, Grid, HostKernel};
use crate::error::LaunchError;
use crate::module::Function;
use crate::mode::Mode;

/// What runs one emulated launch.
#[derive(Clone, Copy, Debug)]
pub enum Executor<'a> {
    /// The kernel's Rust code, compiled for the host (the host-code engine).
    HostCode(&'a HostKernel),
    /// The PTX of the kernel's module (the device-code executor).
    DeviceCode,
}

/// Why an executor did not finish a launch.
pub(crate) enum ExecError {
    /// The kernel faulted: the launch happened, its context is now unusable.
    Fault(Fault),
    /// Nothing ran.
    Refused(LaunchError),
}

/// The executor for a launch of `kernel` (its PTX name) in `mode`, given
/// the host code the launch carries, if any.
pub fn choose<'a>(mode: Mode, host_code: Option<&'a HostKernel>, kernel: &str) -> Result<Executor<'a>, LaunchError> {
    match (mode, host_code) {
        (Mode::DeviceCode, _) => Ok(Executor::DeviceCode),
        (Mode::HostCode, Some(host)) => Ok(Executor::HostCode(host)),
        (Mode::HostCode, None) => Err(LaunchError::NoHostCode { kernel: kernel.to_string() }),
    }
}

impl Executor<'_> {
    /// Runs the launch of `function` (`name` in reports) with `grid` and
    /// `kernelParams` `params`.
    ///
    /// # Safety
    /// `params` must be what the kernel expects (`cuLaunchKernel`'s contract)
    /// and, for host code, what that host code expects.
    pub(crate) unsafe fn run(&self, function: &Function, name: &str, grid: Grid, params: *const *mut c_void) -> Result<(), ExecError> {
        match self {
            // SAFETY: the caller's contract.
            Executor::HostCode(kernel) => unsafe { host_code::run(grid, kernel, params) }.map_err(ExecError::Fault),
            // SAFETY: the caller's contract.
            Executor::DeviceCode => unsafe { device_code::run(function, name, grid, params) },
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
        assert!(matches!(choose(Mode::HostCode, Some(&host), "k"), Ok(Executor::HostCode(h)) if std::ptr::eq(h, &host)));
        assert!(matches!(choose(Mode::DeviceCode, Some(&host), "k"), Ok(Executor::DeviceCode)));
        assert!(matches!(choose(Mode::DeviceCode, None, "k"), Ok(Executor::DeviceCode)));
        let refused = choose(Mode::HostCode, None, "scale").unwrap_err();
        assert_eq!(refused, LaunchError::NoHostCode { kernel: "scale".into() });
        assert!(refused.to_string().contains("cannot run kernel `scale`"), "{refused}");
        // `OXIDE_EMULATE=1` keeps the host-code engine until ptx-vm lands.
        assert_eq!(Mode::DEFAULT, Mode::HostCode);
    }
}
