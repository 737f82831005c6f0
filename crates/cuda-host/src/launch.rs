//! The launch functions `cuda_launch!` expands to, one per number of arguments.
//!
//! `cuda_launch!{ kernel: k, … args: [a, b] }` becomes
//! `launch2(&module, &stream, config, k::__oxide_entry, (a, b))` (the entry
//! wrapper, held by the hidden type `#[kernel]` names like the kernel). The
//! entry wrapper `#[kernel]` generated has the signature
//! `unsafe fn(*const P0, *const P1)` where `Pi` are the kernel's parameter
//! types, so rustc infers the kernel's generic arguments from the arguments
//! and checks each argument against its parameter through `KernelArg<Pi>`.
//! The wrapper's address identifies the kernel in the embedded kernel table.

use crate::arg::KernelArg;
use crate::check::{check_cluster, check_limits, check_shape};
use crate::module::KernelModule;
use crate::registry::{find_kernel, EmbeddedKernel, EmbeddedModule};
use crate::HostError;
use cuda_core::emulator::HostKernel;
use cuda_core::{Backend, ClusterLaunchConfig, CooperativeLaunchConfig, CudaStream, LaunchConfig};
use std::ffi::c_void;

/// One byte for zero-sized arguments: the PTX parameter has one byte, and
/// the driver copies it from here.
static ZERO_BYTE: u8 = 0;

/// The pointer to hand the driver for one argument.
fn param_ptr<R>(repr: &R) -> *mut c_void {
    if std::mem::size_of::<R>() == 0 {
        std::ptr::addr_of!(ZERO_BYTE) as *mut c_void
    } else {
        repr as *const R as *mut c_void
    }
}

/// Checked at compile time for every argument: its host form has the size
/// and alignment of the kernel parameter.
struct SameLayout<R, P>(std::marker::PhantomData<(R, P)>);
impl<R, P> SameLayout<R, P> {
    const OK: () = assert!(
        std::mem::size_of::<R>() == std::mem::size_of::<P>()
            && std::mem::align_of::<R>() == std::mem::align_of::<P>(),
        "kernel argument and parameter differ in layout"
    );
}

/// What `cuda_launch!`'s `config:` takes: a [`LaunchConfig`], or a
/// [`ClusterLaunchConfig`] (`LaunchConfig::with_cluster`) for a launch in
/// thread-block clusters.
pub trait LaunchShape {
    /// The grid, block and shared memory of the launch.
    fn config(&self) -> LaunchConfig;
    /// The cluster shape, if the launch has one.
    fn cluster(&self) -> Option<ClusterLaunchConfig>;
    /// Whether the launch is cooperative (every block resident at once).
    fn cooperative(&self) -> bool {
        false
    }
}

impl LaunchShape for CooperativeLaunchConfig {
    fn config(&self) -> LaunchConfig {
        self.launch
    }
    fn cluster(&self) -> Option<ClusterLaunchConfig> {
        None
    }
    fn cooperative(&self) -> bool {
        true
    }
}

impl LaunchShape for LaunchConfig {
    fn config(&self) -> LaunchConfig {
        *self
    }
    fn cluster(&self) -> Option<ClusterLaunchConfig> {
        None
    }
}

impl LaunchShape for ClusterLaunchConfig {
    fn config(&self) -> LaunchConfig {
        self.launch
    }
    fn cluster(&self) -> Option<ClusterLaunchConfig> {
        Some(*self)
    }
}

/// Launches the kernel whose entry wrapper is at `entry` with `params`
/// (`sizes[i]`: the bytes `params[i]` points to); `host` calls that entry
/// wrapper (what the CPU emulator runs).
fn launch_entry(
    module: &KernelModule,
    stream: &CudaStream,
    shape: &impl LaunchShape,
    entry: *const c_void,
    params: &mut [*mut c_void],
    sizes: &[usize],
    host: HostKernel,
    needs_cooperative: bool,
) -> Result<(), HostError> {
    let Some(found) = find_kernel(entry) else { return Err(not_embedded(entry)) };
    let (image, kernel) = (found.image, found.kernel);
    if !std::ptr::eq(image, module.image()) {
        return Err(not_in_module(kernel, module, image));
    }
    let config = shape.config();
    let cluster = shape.cluster();
    let cooperative = shape.cooperative();
    if needs_cooperative && !cooperative {
        return Err(not_cooperative(kernel));
    }
    check_shape(kernel.rust_path, kernel.thread_indices, &config)?;
    let (function, limits, required) = module.function_with_limits(found.index, config.shared_mem_bytes)?;
    // Most launches neither ask for clusters nor launch a kernel compiled
    // for them: one test, the rest out of line.
    let cluster = match (required, cluster) {
        (None, None) => None,
        (required, asked) => checked_cluster(kernel.rust_path, required, asked, &config, cooperative, stream)?,
    };
    check_limits(kernel.rust_path, &config, limits)?;
    // The entry without the checks the launch condition implies, where it
    // holds.
    let unchecked = match &kernel.unchecked {
        Some(unchecked)
            if unchecked_entry_applies(stream.context().backend(), cluster.is_some())
                && unchecked.condition.evaluate_with(&config, |p, r| read_param(params, sizes, p, r)) == Some(true) =>
        {
            module.unchecked_function(found.index, &config, limits)
        }
        _ => None,
    };
    let function = unchecked.unwrap_or(function);
    // The driver sizes the stack for the calls it sees; the calls through
    // pointers (core::fmt's) are on the linker's bound only.
    stream.context().ensure_stack_size(kernel.stack.bytes()?)?;
    let host = host.named(kernel.rust_path);
    // cuda-core records the host code's name (the Rust path) as the kernel
    // launched last, for fault reports.
    // SAFETY: `params` holds one pointer per kernel parameter, each to a value
    // whose layout equals the parameter's (KernelArg + SameLayout), alive
    // until cuLaunchKernel returns (it copies the bytes).
    match &cluster {
        // SAFETY: as above; the occupancy check inside makes the grid
        // co-resident, which a grid-wide sync relies on.
        None if cooperative => unsafe {
            cuda_core::launch_kernel_cooperative_with_host_code(function, &config.cooperative(), stream, params, &host)
        }?,
        None => unsafe { cuda_core::launch_kernel_with_host_code(function, config, stream, params, &host) }?,
        // SAFETY: as above. (The CPU emulator runs clusters in device-code
        // mode; host-code mode refuses them, saying so.)
        Some(cluster) => unsafe {
            cuda_core::launch_kernel_cluster_with_host_code(function, cluster, stream, params, &host)
        }?,
    }
    if unchecked.is_some() {
        module.note_unchecked_launch();
    }
    Ok(())
}

/// The error of a launch whose entry wrapper is in no embedded image.
#[cold]
#[inline(never)]
fn not_embedded(entry: *const c_void) -> HostError {
    HostError::KernelNotEmbedded { kernel: format!("<entry at {entry:p}>") }
}

/// The error of a launch of `kernel` (of `image`) with another image's module.
#[cold]
#[inline(never)]
fn not_in_module(kernel: &EmbeddedKernel, module: &KernelModule, image: &EmbeddedModule) -> HostError {
    HostError::KernelNotInModule {
        kernel: kernel.rust_path.to_string(),
        module: module.name().to_string(),
        found_in: image.name.to_string(),
    }
}

/// The error of a plain launch of a kernel that a grid-wide sync needs
/// launched cooperatively.
#[cold]
#[inline(never)]
fn not_cooperative(kernel: &EmbeddedKernel) -> HostError {
    HostError::NotCooperative { kernel: kernel.rust_path.to_string() }
}

/// [`launch_cluster`], then the cluster checks (the shape, and that the
/// device has clusters): a launch that asks for clusters or launches a
/// kernel compiled for them.
#[cold]
#[inline(never)]
fn checked_cluster(
    kernel: &str,
    required: Option<(u32, u32, u32)>,
    asked: Option<ClusterLaunchConfig>,
    config: &LaunchConfig,
    cooperative: bool,
    stream: &CudaStream,
) -> Result<Option<ClusterLaunchConfig>, HostError> {
    let cluster = launch_cluster(kernel, required, asked, config, cooperative)?;
    if let Some(cluster) = &cluster {
        let cc = stream.context().compute_capability()?;
        check_cluster(kernel, cluster, Some(cc))?;
    }
    Ok(cluster)
}

/// The clusters a launch runs in, given the kernel's compile-time shape
/// (`#[kernel(cluster_dims(..))]`): a launch without clusters takes it (the
/// driver would too; passing it lets the checks and the CPU emulator see
/// it), a cluster launch must ask for the same shape.
fn launch_cluster(
    kernel: &str,
    required: Option<(u32, u32, u32)>,
    asked: Option<ClusterLaunchConfig>,
    config: &LaunchConfig,
    cooperative: bool,
) -> Result<Option<ClusterLaunchConfig>, HostError> {
    match (required, asked) {
        (None, asked) => Ok(asked),
        (Some(compiled), Some(asked)) if asked.cluster_dim != compiled => Err(HostError::ClusterDimsFixed {
            kernel: kernel.to_string(),
            compiled,
            launched: asked.cluster_dim,
        }),
        (Some(_), Some(asked)) => Ok(Some(asked)),
        (Some(compiled), None) if !cooperative => Ok(Some(config.with_cluster(compiled))),
        (Some(_), None) => Ok(None),
    }
}

/// Whether a launch may take a kernel's unchecked entry (where its
/// condition holds): wherever the device linker's code runs, on a GPU and in
/// the CPU emulator's device-code mode, which must behave as the GPU does;
/// not where the kernel's host code runs instead (host-code mode, which has
/// no entries), nor in clusters (a user's cluster attributes are set on the
/// kernel's own entry).
fn unchecked_entry_applies(backend: Backend, clustered: bool) -> bool {
    !clustered && backend.runs_device_code()
}

/// Reads `range` of parameter `param` (at most 8 bytes, little-endian) for
/// the launch condition; None past the parameter's end.
#[inline]
fn read_param(params: &[*mut c_void], sizes: &[usize], param: usize, range: std::ops::Range<usize>) -> Option<u64> {
    let (&ptr, &size) = (params.get(param)?, sizes.get(param)?);
    if range.end > size || range.len() > 8 {
        return None;
    }
    // SAFETY: `ptr` points to a live argument of `size` bytes (the launch
    // function's `reprs`) and the range lies inside it. The condition reads
    // only bytes the kernel reads as integers (lengths, sizes), never
    // padding, so they are initialised. The common widths are one read.
    unsafe {
        let at = (ptr as *const u8).add(range.start);
        Some(match range.len() {
            8 => u64::from_le(at.cast::<u64>().read_unaligned()),
            4 => u64::from(u32::from_le(at.cast::<u32>().read_unaligned())),
            n => {
                let mut le = [0u8; 8];
                std::ptr::copy_nonoverlapping(at, le.as_mut_ptr(), n);
                u64::from_le_bytes(le)
            }
        })
    }
}

macro_rules! define_launch {
    ($name:ident; $($P:ident $A:ident $i:tt),*) => {
        define_launch!(@launch $name, call_entry; $($P $A $i),*);
    };
    (@launch $name:ident, $call:ident; $($P:ident $A:ident $i:tt),*) => {
        /// Launches a kernel with this many arguments (see the module docs).
        #[allow(non_snake_case, unused_variables, clippy::too_many_arguments)]
        pub fn $name<L: LaunchShape, $($P, $A: KernelArg<$P>),*>(
            module: &KernelModule,
            stream: &CudaStream,
            config: L,
            entry: unsafe fn($(*const $P),*),
            args: ($($A,)*),
        ) -> Result<(), HostError> {
            $( let () = SameLayout::<$A::Repr, $P>::OK; )*
            // The kernel runs on `stream` after what other streams queued
            // on its buffers (a `&mut` borrow ends before the GPU runs it).
            #[allow(unused_mut)]
            let mut args = args;
            $( args.$i.order_on(stream)?; )*
            let reprs = ($(args.$i.to_repr(),)*);
            let mut params: [*mut c_void; 0 $(+ { let _ = $i; 1 })*] = [$(param_ptr(&reprs.$i)),*];
            let sizes: [usize; 0 $(+ { let _ = $i; 1 })*] = [$(std::mem::size_of_val(&reprs.$i)),*];

            /// Calls the entry wrapper `data` with the launch's parameter
            /// pointers: the host code of the kernel, for the emulator.
            ///
            /// # Safety
            /// `data` is an `unsafe fn($(*const $P),*)` and `params` holds one
            /// pointer per parameter, each to a value laid out like its `P`.
            #[allow(unused_variables)]
            unsafe fn $call<$($P),*>(data: *const (), params: *const *mut c_void) {
                // SAFETY: `data` was made from a function pointer of this type.
                let entry = unsafe { std::mem::transmute::<*const (), unsafe fn($(*const $P),*)>(data) };
                // SAFETY: the parameter pointers suit the entry (caller).
                unsafe { entry($(params.add($i).read() as *const $P),*) }
            }
            // SAFETY: the entry wrapper reads its arguments by value from the
            // pointers and may run on many threads at once, like on the GPU.
            let host = unsafe { HostKernel::new(entry as *const (), $call::<$($P),*>) };
            /// The bytes of each parameter, for a launch captured into a
            /// graph (which copies the arguments).
            struct Sizes<$($P),*>(std::marker::PhantomData<($($P,)*)>);
            impl<$($P),*> Sizes<$($P),*> {
                const ALL: &'static [usize] = &[$(std::mem::size_of::<$P>()),*];
            }
            let host = host.with_param_sizes(Sizes::<$($P),*>::ALL);
            let needs_cooperative = false $(|| args.$i.needs_cooperative_launch())*;
            launch_entry(module, stream, &config, entry as *const c_void, &mut params, &sizes, host, needs_cooperative)
        }
    };
}

// launch0 ..= launchN, N = Abi.def's MaxLaunchArguments.
include!(concat!(env!("OUT_DIR"), "/launchers.rs"));

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_core::emulator::Mode;

    #[test]
    fn the_unchecked_entry_runs_wherever_device_code_runs() {
        assert!(unchecked_entry_applies(Backend::Gpu, false));
        assert!(unchecked_entry_applies(Backend::Emulator(Mode::DeviceCode), false), "the emulator behaves as the GPU");
        assert!(!unchecked_entry_applies(Backend::Emulator(Mode::HostCode), false), "host code has no entries");
        for backend in [Backend::Gpu, Backend::Emulator(Mode::DeviceCode)] {
            assert!(!unchecked_entry_applies(backend, true), "clusters keep the kernel's own entry");
        }
    }
}
