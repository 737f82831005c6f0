//! Cooperative launches: every block of the grid resident at once, which
//! makes a grid-wide barrier (`cuda_device::cooperative::GridGroup::sync`)
//! safe. [`CooperativeLaunchConfig`] and [`launch_kernel_cooperative`]
//! (`cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`, what
//! `cuLaunchCooperativeKernel` does).
//!
//! Before the launch, the grid is checked against what the device can hold
//! at once: the kernel's occupancy for this block size and shared memory
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) times the number of
//! multiprocessors. A larger grid is refused with
//! [`CooperativeLaunchError::GridTooLarge`], which says how many blocks fit;
//! a grid-wide barrier in it would wait forever for blocks that cannot start.
//!
//! The CPU emulator runs a cooperative grid with every block resident at
//! once (device-code mode interleaves them all; host-code mode gives each
//! block its own worker thread), within the occupancy it reports.
//!
//! ```no_run
//! # use cuda_core::LaunchConfig;
//! let config = LaunchConfig { grid_dim: (132, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }.cooperative();
//! assert_eq!(config.launch.grid_dim.0, 132);
//! ```

use std::ffi::c_void;
use std::fmt;

use crate::context::CudaStream;
use crate::error::{DriverError, ErrorKind};
use crate::module::{launch_ex, CudaFunction, LaunchAttr, LaunchConfig};

/// A launch whose blocks must all be resident at once (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CooperativeLaunchConfig {
    /// Grid, block and dynamic shared memory, as for any launch.
    pub launch: LaunchConfig,
}

impl LaunchConfig {
    /// This launch as a cooperative one: all its blocks resident at once, so
    /// that a kernel may wait for the whole grid.
    pub fn cooperative(self) -> CooperativeLaunchConfig {
        CooperativeLaunchConfig { launch: self }
    }
}

/// Why a cooperative launch was refused before the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CooperativeLaunchError {
    /// The grid has more blocks than the device can run at once.
    GridTooLarge {
        /// The kernel.
        kernel: String,
        /// Blocks in the grid.
        blocks: u64,
        /// Blocks of this shape one multiprocessor can hold.
        per_multiprocessor: u32,
        /// Multiprocessors of the device.
        multiprocessors: u32,
        /// Threads per block.
        block_threads: u32,
        /// Dynamic shared memory per block, bytes.
        shared_mem_bytes: u32,
    },
}

impl fmt::Display for CooperativeLaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CooperativeLaunchError::GridTooLarge {
                kernel,
                blocks,
                per_multiprocessor,
                multiprocessors,
                block_threads,
                shared_mem_bytes,
            } => {
                let fits = *per_multiprocessor as u64 * *multiprocessors as u64;
                write!(
                    f,
                    "the cooperative launch of `{kernel}` has {blocks} blocks, but this device runs at most {fits} \
                     at once ({per_multiprocessor} blocks of {block_threads} threads with {shared_mem_bytes} bytes of \
                     dynamic shared memory per multiprocessor, {multiprocessors} multiprocessors), and a grid-wide \
                     sync needs every block running: launch at most {fits} blocks (each looping over more of the \
                     work), or use smaller blocks, fewer registers or less shared memory"
                )
            }
        }
    }
}

impl std::error::Error for CooperativeLaunchError {}

impl From<CooperativeLaunchError> for DriverError {
    fn from(e: CooperativeLaunchError) -> Self {
        DriverError::new(ErrorKind::InvalidLaunchConfig, e.to_string(), "launch_kernel_cooperative")
    }
}

impl CooperativeLaunchConfig {
    /// Checks that the grid fits on the device at once for kernel `f`
    /// (occupancy × multiprocessors); the error says how many blocks fit.
    pub fn check_residency(&self, f: &CudaFunction, stream: &CudaStream) -> Result<(), DriverError> {
        let (g, b) = (self.launch.grid_dim, self.launch.block_dim);
        let blocks = g.0 as u64 * g.1 as u64 * g.2 as u64;
        let block_threads = b.0.saturating_mul(b.1).saturating_mul(b.2);
        let per_multiprocessor =
            f.max_active_blocks_per_multiprocessor(block_threads, self.launch.shared_mem_bytes as usize)?;
        let multiprocessors = stream.context().multiprocessor_count()?;
        if blocks > per_multiprocessor as u64 * multiprocessors as u64 {
            return Err(CooperativeLaunchError::GridTooLarge {
                kernel: f.name.to_string(),
                blocks,
                per_multiprocessor,
                multiprocessors,
                block_threads,
                shared_mem_bytes: self.launch.shared_mem_bytes,
            }
            .into());
        }
        Ok(())
    }
}

/// Launches `f` cooperatively on `stream` with the argument pointers
/// `params`, after checking that the grid fits on the device at once.
///
/// # Safety
/// As for [`launch_kernel`](crate::launch_kernel).
pub unsafe fn launch_kernel_cooperative(
    f: &CudaFunction,
    config: &CooperativeLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch_cooperative(f, config, stream, params, None) }
}

/// [`launch_kernel_cooperative`] for a kernel whose host code is `host`
/// (the typed launches of cuda-host).
///
/// # Safety
/// As for [`launch_kernel`](crate::launch_kernel); and `host` must be the
/// host code of `f`'s kernel.
pub unsafe fn launch_kernel_cooperative_with_host_code(
    f: &CudaFunction,
    config: &CooperativeLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: &cuda_emulator::HostKernel,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch_cooperative(f, config, stream, params, Some(host)) }
}

/// # Safety
/// As for [`launch_kernel_cooperative_with_host_code`].
unsafe fn launch_cooperative(
    f: &CudaFunction,
    config: &CooperativeLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&cuda_emulator::HostKernel>,
) -> Result<(), DriverError> {
    config.launch.validate()?;
    crate::module::check_same_context(f, stream, "launch_kernel_cooperative")?;
    config.check_residency(f, stream)?;
    // SAFETY: the caller's contract. The emulator keeps every block of a
    // cooperative grid running at once (within its occupancy, checked above).
    unsafe { launch_ex(f, config.launch, stream, params, host, LaunchAttr::Cooperative, "cooperatively") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_fits_and_what_to_do() {
        let e = CooperativeLaunchError::GridTooLarge {
            kernel: "k".into(),
            blocks: 300,
            per_multiprocessor: 2,
            multiprocessors: 132,
            block_threads: 256,
            shared_mem_bytes: 0,
        };
        let text = e.to_string();
        assert!(text.contains("has 300 blocks, but this device runs at most 264 at once"), "{text}");
        assert!(text.contains("launch at most 264 blocks"), "{text}");
    }
}
