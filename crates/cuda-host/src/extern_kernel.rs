//! Typed launchers for CUDA C++ `__global__` kernels linked into the
//! program's image (`--oxide-device-source`, README "CUDA C++ device code").
//!
//! [`extern_kernels!`](crate::extern_kernels) declares each kernel's C++
//! signature in Rust types and generates a launcher that takes device
//! buffers where the kernel takes pointers:
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
//! use cuda_host::{extern_kernels, load_kernel_module};
//!
//! extern_kernels! {
//!     /// ops.cu: `extern "C" __global__ void cxx_cubes(const float *in, float *out, int n)`.
//!     pub fn cxx_cubes(input: *const f32, output: *mut f32, n: i32);
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let ctx = CudaContext::new(0)?;
//!     let stream = ctx.default_stream();
//!     let module = load_kernel_module(&ctx, "my_program")?;
//!     let input = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
//!     let mut output = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
//!     // SAFETY: cxx_cubes reads `n` floats of `input` and writes `n` of `output`.
//!     unsafe { cxx_cubes(&module, &stream, LaunchConfig::for_num_elems(3), &input, &mut output, 3)? };
//!     Ok(())
//! }
//! ```
//!
//! A parameter declared `*const T` takes `&buffer` (a `DeviceBuffer<T>` or
//! `ManagedBuffer<T>`), `*mut T` takes `&mut buffer`; every other type takes
//! a value of that type (`i32` for `int`, a `#[repr(C)]` struct by value).
//! The buffers are ordered on the stream as a `#[kernel]`'s are (a `*const`
//! one as a read, a `*mut` one as a write).
//!
//! Each launcher is `unsafe`: Rust cannot see what the C++ body does with
//! its pointers (how many elements it touches, whether it writes through a
//! `const` one). What is checked, before the driver sees the launch: that
//! the image has a kernel of that name, that its PTX parameters have the
//! sizes the declaration gives (count and bytes: a missing or extra
//! argument, or an `int` declared `i64`, is [`HostError::ExternParams`]),
//! and the launch shape (no zero dimension, the kernel's block limit,
//! clusters as `cuda_launch!` checks them).

use crate::arg::DeviceMemory;
use crate::check::{check_cluster, check_limits, check_shape, ThreadIndexKinds};
use crate::launch::LaunchShape;
use crate::module::KernelModule;
use crate::HostError;
use cuda_core::{CudaStream, DriverError};
use std::ffi::c_void;

/// A host value that can be passed for a C++ kernel parameter declared with
/// the Rust type `P` in [`extern_kernels!`](crate::extern_kernels).
///
/// # Safety
/// [`to_param`](Self::to_param) returns a `P` whose bytes mean, on the
/// device, what the declared C++ parameter expects of a `P`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a CUDA C++ kernel parameter declared `{P}`",
    label = "not a valid argument for this parameter",
    note = "a `*const T` parameter takes `&buffer` of a `DeviceBuffer<T>` (or `ManagedBuffer<T>`), \
            a `*mut T` parameter takes `&mut buffer`, any other parameter a value of its own type"
)]
pub unsafe trait ExternArg<P> {
    /// The parameter's value.
    fn to_param(&self) -> P;
    /// Orders the launch on `stream` after the work this argument's device
    /// memory depends on. Values holding no device memory need nothing.
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        let _ = stream;
        Ok(())
    }
}

// SAFETY: the buffer's device address, as a `const T*`.
unsafe impl<B: DeviceMemory> ExternArg<*const B::Elem> for &B {
    fn to_param(&self) -> *const B::Elem {
        self.device_ptr() as usize as *const B::Elem
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order_read(stream)
    }
}

// SAFETY: the buffer's device address, as a `T*`; the `&mut` borrow keeps
// every other argument of the launch from aliasing it.
unsafe impl<B: DeviceMemory> ExternArg<*mut B::Elem> for &mut B {
    fn to_param(&self) -> *mut B::Elem {
        self.device_ptr() as usize as *mut B::Elem
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order_write(stream)
    }
}

// SAFETY: the same type on both sides: its bytes are the parameter's.
// `'static` keeps host references out, as for `#[kernel]` arguments.
unsafe impl<T: Copy + 'static> ExternArg<T> for T {
    fn to_param(&self) -> T {
        *self
    }
}

/// Declares CUDA C++ `__global__` kernels of the program's device sources
/// and generates a typed, checked `unsafe` launcher for each (module docs).
///
/// Each item is `VIS fn NAME(PARAM: TYPE, …);` with the kernel's PTX name
/// (an `extern "C"` kernel's C name) and its parameters in Rust types; the
/// launcher is `VIS unsafe fn NAME(module, stream, config, PARAM…)`, where
/// `config` is any [`LaunchShape`](crate::LaunchShape).
#[macro_export]
macro_rules! extern_kernels {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($param:ident : $ty:ty),* $(,)? );
    )*) => {$(
        $(#[$meta])*
        ///
        /// # Safety
        /// The CUDA C++ kernel must keep to the memory its arguments name
        /// (sizes included) and write only through `*mut` parameters.
        #[allow(clippy::too_many_arguments, non_snake_case)]
        $vis unsafe fn $name(
            module: &$crate::KernelModule,
            stream: &::cuda_core::CudaStream,
            config: impl $crate::LaunchShape,
            $($param: impl $crate::extern_kernel::ExternArg<$ty>),*
        ) -> ::core::result::Result<(), $crate::HostError> {
            $(
                let mut $param = $param;
                $crate::extern_kernel::ExternArg::<$ty>::order_on(&mut $param, stream)?;
                let mut $param: $ty = $crate::extern_kernel::ExternArg::<$ty>::to_param(&$param);
            )*
            let mut params = [$((&mut $param as *mut $ty).cast::<::core::ffi::c_void>()),*];
            let sizes = [$(::core::mem::size_of::<$ty>()),*];
            // SAFETY: each pointer is to a live parameter value of the size
            // given; what the kernel does with them is the caller's promise.
            unsafe {
                $crate::extern_kernel::launch_extern(module, stream, &config, stringify!($name), &mut params, &sizes)
            }
        }
    )*};
}

/// Launches the image's kernel `name` with `params` (`sizes[i]`: the bytes
/// `params[i]` points to), after the checks of the module docs.
///
/// # Safety
/// Each `params[i]` points to `sizes[i]` live bytes, which the kernel may
/// use as its parameter `i` promises (see [`extern_kernels!`](crate::extern_kernels)).
#[doc(hidden)]
pub unsafe fn launch_extern(
    module: &KernelModule,
    stream: &CudaStream,
    shape: &impl LaunchShape,
    name: &str,
    params: &mut [*mut c_void],
    sizes: &[usize],
) -> Result<(), HostError> {
    let (function, found) = module.extern_function(name)?;
    if found != sizes {
        return Err(HostError::ExternParams { kernel: name.to_string(), declared: sizes.to_vec(), found });
    }
    let config = shape.config();
    check_shape(name, ThreadIndexKinds(0), &config)?;
    let limits = crate::check::KernelLimits {
        max_threads_per_block: function.max_threads_per_block()?,
        max_dynamic_shared_bytes: if config.shared_mem_bytes == 0 {
            0
        } else {
            function.attribute(crate::module::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?.max(0) as u32
        },
    };
    check_limits(name, &config, limits)?;
    match (shape.cluster(), shape.cooperative()) {
        (Some(cluster), _) => {
            check_cluster(name, &cluster, Some(stream.context().compute_capability()?))?;
            // SAFETY: the caller's contract.
            unsafe { cuda_core::launch_kernel_cluster(&function, &cluster, stream, params) }?
        }
        // SAFETY: the caller's contract; the occupancy check inside makes the
        // grid co-resident.
        (None, true) => unsafe { cuda_core::launch_kernel_cooperative(&function, &config.cooperative(), stream, params) }?,
        // SAFETY: the caller's contract.
        (None, false) => unsafe { cuda_core::launch_kernel(&function, config, stream, params) }?,
    }
    Ok(())
}

/// The byte size of each parameter of `.entry name` in `ptx`, or `None`
/// where the PTX has no such entry.
pub(crate) fn entry_param_sizes(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let mut search = ptx;
    loop {
        let at = search.find(".entry")?;
        search = &search[at + ".entry".len()..];
        let Some(after_name) = search.trim_start().strip_prefix(name) else { continue };
        let Some(list) = after_name.trim_start().strip_prefix('(') else { continue };
        let list = &list[..list.find(')')?];
        return list
            .split(',')
            .map(str::trim)
            .filter(|decl| !decl.is_empty())
            .map(|decl| param_size(decl.strip_prefix(".param")?))
            .collect();
    }
}

/// The bytes of one `.param` declaration's rest: `.u64 .ptr .align 1 p_0`,
/// `.b32 p_1`, `.align 8 .b8 p_2[16]`.
fn param_size(decl: &str) -> Option<usize> {
    let decl = decl.trim();
    let element = decl.split_whitespace().find_map(|w| match w {
        ".b8" | ".u8" | ".s8" => Some(1),
        ".b16" | ".u16" | ".s16" | ".f16" => Some(2),
        ".b32" | ".u32" | ".s32" | ".f32" => Some(4),
        ".b64" | ".u64" | ".s64" | ".f64" => Some(8),
        _ => None,
    })?;
    let count = match (decl.rfind('['), decl.rfind(']')) {
        (Some(open), Some(close)) if open < close => decl[open + 1..close].trim().parse().ok()?,
        _ => 1,
    };
    Some(element * count)
}

#[cfg(test)]
mod tests {
    use super::entry_param_sizes;

    const PTX: &str = "\
.version 8.1
.target sm_90
.visible .entry cxx_cubes(
\t.param .u64 .ptr .align 1 cxx_cubes_param_0,
\t.param .u64 .ptr .align 1 cxx_cubes_param_1,
\t.param .u32 cxx_cubes_param_2
)
{
\tret;
}
.visible .entry cxx_cubes_many(
\t.param .align 8 .b8 cxx_cubes_many_param_0[24],
\t.param .f64 cxx_cubes_many_param_1
)
{
\tret;
}
.visible .entry none()
{
\tret;
}
";

    #[test]
    fn parameter_sizes_come_from_the_entry() {
        assert_eq!(entry_param_sizes(PTX, "cxx_cubes"), Some(vec![8, 8, 4]));
        assert_eq!(entry_param_sizes(PTX, "cxx_cubes_many"), Some(vec![24, 8]));
        assert_eq!(entry_param_sizes(PTX, "none"), Some(vec![]));
        assert_eq!(entry_param_sizes(PTX, "cxx_cube"), None);
        assert_eq!(entry_param_sizes(PTX, "missing"), None);
    }
}
