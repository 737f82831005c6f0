//! [`LaunchError`]: a launch the emulator refused before anything ran.

use std::fmt;

use cuda_driver_sys::CUresult;

use crate::mode::{Mode, ENV};

/// A launch refused before anything ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The launch's context has faulted (its sticky error) or is gone.
    Context(CUresult),
    /// Host-code mode, and the launch carries no host code.
    NoHostCode {
        /// The kernel's PTX name.
        kernel: String,
    },
    /// Device-code mode cannot run this kernel.
    DeviceCodeUnavailable {
        /// The kernel's PTX name.
        kernel: String,
        /// Why not.
        reason: &'static str,
    },
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Context(code) => write!(f, "the launch's context is unusable (CUresult {code})"),
            LaunchError::NoHostCode { kernel } => write!(
                f,
                "the CPU emulator ({ENV}) cannot run kernel `{kernel}`: it was launched with \
                 cuda_core::launch_kernel, which hands over PTX only. Launch it with cuda_launch! or a \
                 #[cuda_module] launcher, which give the emulator the kernel's host code."
            ),
            LaunchError::DeviceCodeUnavailable { kernel, reason } => write!(
                f,
                "device-code emulation ({ENV}={}) cannot run kernel `{kernel}`: {reason}. {ENV}={} runs the \
                 kernels' host code instead.",
                Mode::DeviceCode.env_value(),
                Mode::HostCode.env_value()
            ),
        }
    }
}

impl std::error::Error for LaunchError {}
