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
    /// Device-code mode cannot run this kernel: its module has no PTX, or
    /// the kernel can reach an instruction the PTX VM does not implement.
    DeviceCodeUnavailable {
        /// The kernel's name (its Rust path where the launch gave one).
        kernel: String,
        /// Why not.
        reason: String,
    },
    /// A launch in thread-block clusters in host-code mode, whose engine has
    /// no clusters.
    ClustersNeedDeviceCode {
        /// The kernel's name.
        kernel: String,
    },
    /// The launch does not suit the kernel (a block larger than its
    /// `.maxntid`, other than its `.reqntid`, parameters that do not match):
    /// what the GPU refuses with `CUDA_ERROR_INVALID_VALUE`.
    Invalid {
        /// Why, naming the kernel.
        reason: String,
    },
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Context(code) => write!(f, "the launch's context is unusable (CUresult {code})"),
            LaunchError::NoHostCode { kernel } => write!(
                f,
                "the CPU emulator's host-code mode ({ENV}={}) cannot run kernel `{kernel}`: it was launched with \
                 cuda_core::launch_kernel, which hands over PTX only. Run it in device-code mode ({ENV}=1 or \
                 {ENV}={}), or launch it with cuda_launch! or a #[cuda_module] launcher, which give the emulator \
                 the kernel's host code.",
                Mode::HostCode.env_value(),
                Mode::DeviceCode.env_value()
            ),
            LaunchError::DeviceCodeUnavailable { kernel, reason } => write!(
                f,
                "device-code emulation ({ENV}={}) cannot run kernel `{kernel}`: {reason}. Run it on a GPU, or \
                 with {ENV}={} (the kernel's Rust code on the CPU; `--emulate=host` for cargo oxide).",
                Mode::DeviceCode.env_value(),
                Mode::HostCode.env_value()
            ),
            LaunchError::ClustersNeedDeviceCode { kernel } => write!(
                f,
                "the CPU emulator's host-code mode ({ENV}={}) cannot launch kernel `{kernel}` in thread-block \
                 clusters: its engine has no clusters. Device-code mode ({ENV}=1 or {ENV}={}) runs them.",
                Mode::HostCode.env_value(),
                Mode::DeviceCode.env_value()
            ),
            LaunchError::Invalid { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for LaunchError {}
