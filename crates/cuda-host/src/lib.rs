//! Launching oxide kernels from the host.
//!
//! The oxide device linker embeds the PTX of every `#[kernel]` in the program
//! into the executable itself, together with a table that maps each kernel's
//! host-side entry to its PTX name. This crate finds those images, loads them
//! as CUDA modules, and launches kernels with arguments whose types are
//! checked at compile time against the kernel's parameters.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
//! use cuda_device::{kernel, thread, DisjointSlice};
//! use cuda_host::{cuda_launch, load_kernel_module};
//!
//! #[kernel]
//! pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_1d();
//!     if let Some(elem) = out.get_mut(idx) {
//!         *elem = input[idx.get()] * factor;
//!     }
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let ctx = CudaContext::new(0)?;
//!     let stream = ctx.default_stream();
//!     let input = DeviceBuffer::from_host(&stream, &vec![1.0f32; 1024])?;
//!     let mut output = DeviceBuffer::<f32>::zeroed(&stream, 1024)?;
//!     let module = load_kernel_module(&ctx, "scale_example")?;
//!     cuda_launch! {
//!         kernel: scale, stream: stream, module: module,
//!         config: LaunchConfig::for_num_elems(1024),
//!         args: [&input, 2.5f32, &mut output]
//!     }?;
//!     assert!(output.to_host_vec(&stream)?.iter().all(|&x| x == 2.5));
//!     Ok(())
//! }
//! ```
//!
//! Arguments are checked against the kernel's parameters at compile time
//! ([`arg`]): `&buffer` for `&[T]`, `&mut buffer` for `DisjointSlice<T>` and
//! `&mut [T]`, values for everything else; host memory does not compile.
//! Before the driver sees a launch, its configuration is checked against the
//! kernel ([`HostError`]): no zero dimension, a block within the kernel's
//! `max_threads_per_block`, dynamic shared memory within its limit, and no
//! 2-D/3-D launch of a kernel that indexes with x coordinates only.
//!
//! Where the device linker could prove a kernel's bounds checks true under a
//! condition on its arguments (`c.len() <= a.len()`, `rows * cols <=
//! input.len()`), the image holds a second entry without them, and each
//! launch evaluates the condition on the host and picks the entry
//! ([`condition`]); the checks that remain, and every check where the
//! condition fails, panic as usual.
//!
//! Every launch also hands over the kernel's host code (its entry wrapper,
//! compiled for the host), which the CPU emulator's host-code mode runs
//! instead of the PTX (`OXIDE_EMULATE=host` or `1`, `cargo oxide run
//! --emulate`; see `cuda_core::emulator`). Where the launch differs by
//! backend (cubin or PTX, checked or unchecked entry, where a `#[constant]`
//! is written), it asks the context (`CudaContext::backend`).
#![warn(missing_docs)]

pub mod arg;
mod check;
pub mod condition;
mod error;
mod launch;
mod module;
mod registry;

pub use cuda_macros::{cuda_launch, cuda_module};
pub use check::{Coordinates, KernelLimits};
pub use condition::{ConditionParseError, LaunchCondition};
pub use error::{report_failure, HostError, NO_GPU_EXIT_CODE};
pub use launch::LaunchShape;
pub use module::{load_kernel_module, load_kernel_module_from_ptx, KernelModule};
pub use registry::{embedded_modules, EmbeddedCubin, EmbeddedKernel, EmbeddedModule, UncheckedEntry};

/// Items `cuda_launch!` expands to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::launch::*;
}
