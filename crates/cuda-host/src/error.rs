//! The error type of host-side launches.

use cuda_core::{ClusterShapeError, DriverError};
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
    /// The program's device images were written by an oxide-link whose kernel
    /// table format this cuda-host does not read.
    ImageVersionMismatch {
        /// The format tag found ("OXEDIM02").
        found: String,
    },
    /// The program's kernels were built for a target whose PTX does not run
    /// on this GPU: an architecture-specific one (`sm_90a`, `sm_100a`) on
    /// another architecture, a family one (`sm_100f`) outside its family, or
    /// any target newer than the GPU.
    WrongGpu {
        /// The module's name.
        module: String,
        /// The target the kernels were built for (`sm_100a`).
        built_for: String,
        /// The GPU's compute capability (major, minor).
        gpu: (u32, u32),
    },
    /// A cluster launch of a kernel compiled for clusters of another shape
    /// (`#[kernel(cluster_dims(..))]`).
    ClusterDimsFixed {
        /// The kernel's Rust path.
        kernel: String,
        /// Its compile-time cluster shape.
        compiled: (u32, u32, u32),
        /// The cluster shape the launch asked for.
        launched: (u32, u32, u32),
    },
    /// An `extern_kernels!` launcher names a kernel the module's image does
    /// not have (no device source defines an `extern "C" __global__` of
    /// that name).
    ExternKernelNotFound {
        /// The kernel's PTX name.
        kernel: String,
        /// The module it was looked for in.
        module: String,
    },
    /// An `extern_kernels!` declaration's parameters differ from the
    /// CUDA C++ kernel's, in number or in size.
    ExternParams {
        /// The kernel's PTX name.
        kernel: String,
        /// The byte size of each parameter as declared in Rust.
        declared: Vec<usize>,
        /// The byte size of each parameter of the kernel's PTX entry.
        found: Vec<usize>,
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
    /// The static passed to `read_global` or `write_global` is not a
    /// `#[device_global]` of any embedded image (the program was not built
    /// by oxide, or the image of its crate was not linked into this program).
    GlobalNotEmbedded,
    /// The constant or device global belongs to another module than the one
    /// it was read or written through.
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
    /// A kernel that takes a `GridGroup` launched without `.cooperative()`:
    /// its grid-wide sync could wait for blocks that never start.
    NotCooperative {
        /// The kernel's Rust path.
        kernel: String,
    },
    /// A grid or block dimension of the launch is 0.
    ZeroLaunchDimension {
        /// The kernel's Rust path.
        kernel: String,
        /// `"grid_dim"` or `"block_dim"`.
        what: &'static str,
        /// Its value.
        dims: (u32, u32, u32),
    },
    /// The block has more threads than this kernel can run in one block.
    BlockTooLarge {
        /// The kernel's Rust path.
        kernel: String,
        /// The launch's block.
        block_dim: (u32, u32, u32),
        /// The kernel's limit (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
        max_threads_per_block: u32,
    },
    /// The launch asks for more dynamic shared memory than the kernel may use.
    SharedMemoryTooLarge {
        /// The kernel's Rust path.
        kernel: String,
        /// `LaunchConfig::shared_mem_bytes`.
        requested: u32,
        /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
        max: u32,
    },
    /// A launch whose threads differ in a dimension that a kind of thread
    /// index the kernel writes through ignores (a 1-D index with y or z > 1,
    /// a 2-D index with z > 1; cluster launches alike): the threads that
    /// differ only there would get the same `ThreadIndex`, and
    /// `DisjointSlice::get_mut` would hand them aliasing `&mut` (a data race).
    SharedThreadIndices {
        /// The kernel's Rust path.
        kernel: String,
        /// The constructor of the index that ignores `dimension`
        /// (`"thread::index_1d"`, `"thread::index_2d"`).
        index: &'static str,
        /// The dimension, `'y'` or `'z'`, in which the launch has more than
        /// one thread per block or more than one block.
        dimension: char,
        /// The launch's block.
        block_dim: (u32, u32, u32),
        /// The launch's grid.
        grid_dim: (u32, u32, u32),
    },
    /// The cluster shape of a cluster launch (`LaunchConfig::with_cluster`)
    /// cannot be launched: it does not divide the grid, is too large, or the
    /// GPU has no clusters.
    ClusterShape {
        /// The kernel's Rust path.
        kernel: String,
        /// The launch's cluster dimensions.
        cluster_dim: (u32, u32, u32),
        /// The launch's grid.
        grid_dim: (u32, u32, u32),
        /// What is wrong.
        error: ClusterShapeError,
    },
    /// `OXIDE_DEVICE_STACK`, the stack a kernel without a known bound gets,
    /// is not a positive number of bytes.
    InvalidDeviceStack {
        /// The variable's value.
        value: String,
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
            HostError::ImageVersionMismatch { found } => write!(
                f,
                "this program's device images were written by another version of oxide-link \
                 (kernel table {found}) than its cuda-host reads; rebuild it with one oxide: \
                 `cargo oxide clean`, then `cargo oxide build`"
            ),
            HostError::WrongGpu { module, built_for, gpu: (major, minor) } => write!(
                f,
                "the kernels of `{module}` were built for {built_for}, whose PTX does not run on this \
                 GPU (compute capability {major}.{minor}, sm_{major}{minor}); rebuild for it: \
                 `cargo oxide build --arch sm_{major}{minor}` (or `arch` under \
                 [package.metadata.oxide], or OXIDE_ARCH)"
            ),
            HostError::ClusterDimsFixed { kernel, compiled: (x, y, z), launched: (a, b, c) } => write!(
                f,
                "kernel `{kernel}` was compiled for clusters of ({x}, {y}, {z}) blocks \
                 (`cluster_dims`), but the launch asks for ({a}, {b}, {c}); launch it without \
                 `with_cluster` (it runs in its own clusters) or with the same shape"
            ),
            HostError::ExternKernelNotFound { kernel, module } => write!(
                f,
                "the image `{module}` has no kernel `{kernel}`: define it in a device source as \
                 `extern \"C\" __global__ void {kernel}(..)` and name the file in build.rs \
                 (`cargo::rustc-link-arg=--oxide-device-source=FILE.cu`)"
            ),
            HostError::ExternParams { kernel, declared, found } => write!(
                f,
                "`extern_kernels!` declares `{kernel}` with {} parameter(s) of {declared:?} bytes, \
                 but the CUDA C++ kernel takes {} of {found:?} bytes; declare each parameter with the \
                 Rust type of its C++ one (`*const f32` for `const float*`, `i32` for `int`, …)",
                declared.len(),
                found.len()
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
            HostError::GlobalNotEmbedded => write!(
                f,
                "this static is not a device global of any kernel image: mark it `#[device_global]` \
                 and build with `cargo oxide build`"
            ),
            HostError::ConstantNotInModule { module, found_in } => write!(
                f,
                "the static is in module `{found_in}`, not in `{module}`; read or write it through that module"
            ),
            HostError::KernelNotInModule { kernel, module, found_in } => write!(
                f,
                "kernel `{kernel}` is in module `{found_in}`, not in `{module}`; \
                 load `{found_in}` with load_kernel_module to launch it"
            ),
            HostError::NotCooperative { kernel } => write!(
                f,
                "kernel `{kernel}` takes a `GridGroup` (grid-wide sync), which needs a cooperative launch: \
                 pass `config.cooperative()` as the launch's config, so that every block runs at once"
            ),
            HostError::ZeroLaunchDimension { kernel, what, dims: (x, y, z) } => write!(
                f,
                "cannot launch kernel `{kernel}`: {what} ({x}, {y}, {z}) has a zero dimension; \
                 every grid and block dimension must be at least 1 (use 1 for unused dimensions)"
            ),
            HostError::BlockTooLarge { kernel, block_dim: (x, y, z), max_threads_per_block: max } => {
                let threads = u64::from(*x) * u64::from(*y) * u64::from(*z);
                write!(f, "cannot launch kernel `{kernel}` with block_dim ({x}, {y}, {z}) = {threads} threads per block: ")?;
                if *max >= 1024 {
                    write!(f, "a block holds at most {max} threads on this GPU; use smaller blocks and more of them")
                } else {
                    // The kernel's registers or its own launch_bounds set
                    // the limit; a bound of the block wanted fixes either.
                    write!(
                        f,
                        "this kernel can run at most {max} (its register use, or its launch_bounds, limits it); \
                         use smaller blocks and more of them, or declare the block you launch with \
                         #[kernel(launch_bounds(N))] so that the compiler keeps the registers within what N threads allow"
                    )
                }
            }
            HostError::SharedMemoryTooLarge { kernel, requested, max } => write!(
                f,
                "cannot launch kernel `{kernel}` with {requested} bytes of dynamic shared memory: \
                 its limit is {max} bytes; ask for less in LaunchConfig::shared_mem_bytes, or raise \
                 the limit with CudaFunction::set_max_dynamic_shared_memory (up to the device's opt-in \
                 maximum less the kernel's static shared memory)"
            ),
            HostError::SharedThreadIndices { kernel, index, dimension, block_dim, grid_dim } => {
                let axis = |(_, y, z): (u32, u32, u32)| if *dimension == 'y' { y } else { z };
                let block = (axis(*block_dim) > 1).then(|| crate::check::describe("block", *block_dim));
                let grid = (axis(*grid_dim) > 1).then(|| crate::check::describe("grid", *grid_dim));
                let shape = block.into_iter().chain(grid).collect::<Vec<_>>().join(" and ");
                let fix = if *index == "thread::index_1d" {
                    "launch it 1-D (y = z = 1 in grid_dim and block_dim), or index with thread::index_2d \
                     or thread::index_3d"
                } else {
                    "launch it with z = 1 in grid_dim and block_dim, or index with thread::index_3d"
                };
                write!(
                    f,
                    "cannot launch kernel `{kernel}` with {shape}: it writes a DisjointSlice through \
                     {index}, which ignores {dimension}, so threads that differ only in {dimension} would \
                     get the same element; {fix}"
                )
            }
            HostError::ClusterShape { kernel, cluster_dim: (x, y, z), grid_dim: (gx, gy, gz), error } => write!(
                f,
                "cannot launch kernel `{kernel}` in clusters of ({x}, {y}, {z}) blocks over the grid \
                 ({gx}, {gy}, {gz}): {error}"
            ),
            HostError::InvalidDeviceStack { value } => write!(
                f,
                "OXIDE_DEVICE_STACK={value:?} is not a number of bytes: set it to the per-thread stack \
                 that kernels without a known stack bound get (a positive integer such as 32768), or unset \
                 it for the default of {} bytes",
                crate::abi::DEVICE_STACK_FALLBACK
            ),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostError::Driver(e) => Some(e),
            HostError::ClusterShape { error, .. } => Some(error),
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
