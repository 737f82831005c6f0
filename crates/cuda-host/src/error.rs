//! The error type of host-side launches.

use cuda_core::DriverError;
use std::fmt;

/// Why loading a kernel module or launching a kernel failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// The CUDA driver reported an error (includes "no driver" and "no GPU").
    Driver(DriverError),
    /// No embedded image has this module name.
    ModuleNotFound {
        /// The name asked for.
        name: String,
        /// The names of the images this program carries.
        available: Vec<String>,
    },
    /// The kernel passed to a launch is not in any embedded image: the program
    /// was not linked by oxide (`cargo oxide build`), or the device link dropped it.
    KernelNotEmbedded {
        /// The Rust path of the kernel, as far as it is known.
        kernel: String,
    },
    /// The static passed to `set_constant` is not a `#[constant]` of any
    /// embedded image (not marked `#[constant]`, no kernel reads it, or the
    /// program was not built by oxide).
    ConstantNotEmbedded,
    /// The constant belongs to another module than the one it was set on.
    ConstantNotInModule {
        /// The module `set_constant` was called on.
        module: String,
        /// The module that holds the constant.
        found_in: String,
    },
    /// The kernel exists, but in another image than the module it was launched with.
    KernelNotInModule {
        /// The kernel's Rust path.
        kernel: String,
        /// The module the launch named.
        module: String,
        /// The module that holds the kernel.
        found_in: String,
    },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Driver(e) => write!(f, "{e}"),
            HostError::ModuleNotFound { name, available } if available.is_empty() => write!(
                f,
                "no kernel module `{name}`: this program carries no device code. \
                 Build it with `cargo oxide build` (or `cargo oxide run`), which links the kernels in"
            ),
            HostError::ModuleNotFound { name, available } => write!(
                f,
                "no kernel module `{name}`; this program carries: {}",
                available.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            ),
            HostError::KernelNotEmbedded { kernel } => write!(
                f,
                "kernel `{kernel}` has no device code in this program. \
                 Build it with `cargo oxide build`, which compiles kernels for the GPU"
            ),
            HostError::ConstantNotEmbedded => write!(
                f,
                "this static is not in constant memory: mark it `#[constant]`, make sure a kernel \
                 reads it, and build with `cargo oxide build`"
            ),
            HostError::ConstantNotInModule { module, found_in } => write!(
                f,
                "the constant is in module `{found_in}`, not in `{module}`"
            ),
            HostError::KernelNotInModule { kernel, module, found_in } => write!(
                f,
                "kernel `{kernel}` is in module `{found_in}`, not in `{module}`; \
                 load `{found_in}` with load_kernel_module to launch it"
            ),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostError::Driver(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DriverError> for HostError {
    fn from(e: DriverError) -> Self {
        HostError::Driver(e)
    }
}

impl HostError {
    /// Whether the error only says that this machine cannot run kernels (no
    /// driver or no GPU), as opposed to a failure of the program.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, HostError::Driver(e) if is_no_gpu(e))
    }
}

fn is_no_gpu(e: &DriverError) -> bool {
    matches!(e.kind(), cuda_core::ErrorKind::DriverNotFound | cuda_core::ErrorKind::NoDevice)
}

/// The exit code an oxide program uses when it ran everywhere except on a GPU
/// it does not have.
pub const NO_GPU_EXIT_CODE: u8 = 2;

/// Prints `error` for a program's `main` and chooses its exit code: on a
/// machine without a driver or GPU it says plainly that the kernels were built
/// but could not be launched, and returns [`NO_GPU_EXIT_CODE`]; otherwise 1.
pub fn report_failure(error: &(dyn std::error::Error + 'static)) -> std::process::ExitCode {
    eprintln!("error: {error}");
    let no_gpu = error
        .downcast_ref::<HostError>()
        .map(HostError::is_no_gpu)
        .or_else(|| error.downcast_ref::<DriverError>().map(is_no_gpu))
        .unwrap_or(false);
    if no_gpu {
        eprintln!(
            "no GPU: the kernels were built and their PTX validated, but could not be launched here"
        );
        return std::process::ExitCode::from(NO_GPU_EXIT_CODE);
    }
    std::process::ExitCode::FAILURE
}
