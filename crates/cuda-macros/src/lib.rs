//! oxide's procedural macros: `#[kernel]`, `#[device]`, `cuda_launch!` and
//! `gpu_printf!` / `gpu_println!`.
//!
//! Users reach them through `cuda_device` (`#[kernel]`, `#[device]`) and
//! `cuda_host` (`cuda_launch!`); the expansions name those crates by absolute
//! paths (`::cuda_device::__private::param_layout`,
//! `::cuda_host::__private::launchN`, `::cuda_host::arg::slice`).
//!
//! ```rust,ignore
//! use cuda_device::{kernel, thread, DisjointSlice};
//! use cuda_host::cuda_launch;
//!
//! #[kernel]
//! pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_1d();
//!     if let Some(elem) = out.get_mut(idx) {
//!         *elem = input[idx.get()] * factor;
//!     }
//! }
//!
//! // on the host:
//! cuda_launch! {
//!     kernel: scale, stream: stream, module: module,
//!     config: LaunchConfig::for_num_elems(1024),
//!     args: [slice(input), 2.5f32, slice_mut(output)]
//! }.unwrap();
//! ```
//!
//! `#[kernel]` keeps `scale` as written and adds the entry wrapper the device
//! linker recognises (docs/ABI.md §2):
//!
//! ```rust,ignore
//! #[doc(hidden)]
//! #[inline(never)]
//! #[allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]
//! pub unsafe fn __oxide_kernel_entry_scale(
//!     __oxide_p0: *const &[f32],
//!     __oxide_p1: *const f32,
//!     __oxide_p2: *const DisjointSlice<f32>,
//! ) {
//!     unsafe {
//!         ::cuda_device::__private::param_layout(0u32, const { ::core::mem::size_of::<&[f32]>() }, const { ::core::mem::align_of::<&[f32]>() });
//!         ::cuda_device::__private::param_layout(1u32, const { ::core::mem::size_of::<f32>() }, const { ::core::mem::align_of::<f32>() });
//!         ::cuda_device::__private::param_layout(2u32, const { ::core::mem::size_of::<DisjointSlice<f32>>() }, const { ::core::mem::align_of::<DisjointSlice<f32>>() });
//!         scale(::core::ptr::read(__oxide_p0), ::core::ptr::read(__oxide_p1), ::core::ptr::read(__oxide_p2))
//!     }
//! }
//! ```
//!
//! and `cuda_launch!` becomes
//!
//! ```rust,ignore
//! ::cuda_host::__private::launch3(
//!     &(module), &(stream), LaunchConfig::for_num_elems(1024),
//!     __oxide_kernel_entry_scale,
//!     (::cuda_host::arg::slice(&(input)), 2.5f32, ::cuda_host::arg::slice_mut(&mut (output)),),
//! )
//! ```
//!
//! # Implementation
//!
//! There are no dependencies (no `syn`, no `quote`). `proc_macro` only works
//! during an expansion, so the logic is written against a small token model
//! (`tokens.rs`) that keeps the user's spans and is unit-tested with its own
//! lexer; `bridge.rs` converts to and from `proc_macro`. Fixed parts of the
//! expansions are Rust text with `#name` placeholders (`template.rs`).

mod bridge;
mod constant;
mod device;
mod kernel;
mod launch;
#[cfg(test)]
mod lexer;
mod module;
mod printf;
mod signature;
mod split;
mod template;
mod tokens;

use proc_macro::TokenStream;

use bridge::{compile_errors, from_stream, to_stream, Position};

/// Marks a function as a GPU kernel.
///
/// ```rust,ignore
/// #[kernel]
/// pub fn map<T: Copy, F: Fn(T) -> T + Copy>(f: F, input: &[T], mut out: DisjointSlice<T>) {
///     let idx = thread::index_1d();
///     if let Some(elem) = out.get_mut(idx) {
///         *elem = f(input[idx.get()]);
///     }
/// }
/// ```
///
/// The function is kept as written, so rustc checks it (and it can be called
/// and tested on the host). Next to it the macro writes the hidden entry
/// wrapper `__oxide_kernel_entry_<name>` (docs/ABI.md §2), which `cuda_launch!`
/// names and from which the device linker builds the PTX entry: same
/// visibility, generics and where clause; one `*const T` parameter per
/// parameter; the layout of each parameter; then the call of the kernel.
///
/// A kernel is a free, non-`async`, non-`const` function returning `()`, with
/// parameters that can be copied to the GPU: by-value types (`f32`,
/// `DisjointSlice<T>`, closures, tuples and arrays of such) and slices
/// `&[T]` / `&mut [T]` backed by device memory. Everything else is a compile
/// error at the offending tokens, saying what to do instead: `self`, `...`,
/// references other than slices (`&T`, `&str`), `Box`, `Vec`, `String`, `Rc`,
/// `Arc`, `impl Trait` and defaults of generic parameters.
///
/// Arguments: none yet; `launch_bounds(..)` is reserved and currently ignored.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    let result = kernel::expand(&from_stream(args), &from_stream(item.clone()));
    let mut out = item;
    match result {
        Ok(wrapper) => out.extend(to_stream(wrapper)),
        Err(errors) => out.extend(compile_errors(&errors, Position::Item)),
    }
    out
}

/// Marks a function called from kernels.
///
/// ```rust,ignore
/// #[device]
/// fn square(x: f32) -> f32 {
///     x * x
/// }
/// ```
///
/// The function is emitted unchanged: the device linker compiles whatever the
/// kernels reach, marked or not. `async fn` and arguments are rejected.
#[proc_macro_attribute]
pub fn device(args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = device::check(&from_stream(args), &from_stream(item.clone()));
    let mut out = item;
    out.extend(compile_errors(&errors, Position::Item));
    out
}

/// Launches a `#[kernel]` on a stream.
///
/// ```rust,ignore
/// cuda_launch! {
///     kernel: scale,                 // a path: `kernels::scale`, `map::<f32, _>`
///     stream: stream,
///     module: module,
///     config: LaunchConfig::for_num_elems(1024),
///     args: [slice(input), 2.5f32, slice_mut(output)]
/// }
/// .unwrap();
/// ```
///
/// Each key is given once (in any order; a trailing comma is fine). In `args`
/// (at most 12), `slice(buf)` passes a device buffer as `&[T]`,
/// `slice_mut(buf)` as the kernel's output (`DisjointSlice<T>` / `&mut [T]`);
/// any other expression is passed by value. The macro calls
/// `::cuda_host::__private::launchN(&(module), &(stream), config,
/// <entry wrapper of the kernel>, (args..,))` and evaluates to its result.
#[proc_macro]
pub fn cuda_launch(input: TokenStream) -> TokenStream {
    match launch::expand(&from_stream(input)) {
        Ok(call) => to_stream(call),
        Err(errors) => compile_errors(&errors, Position::Expr),
    }
}

/// Generates typed launchers for the `#[kernel]`s of an inline module.
///
/// ```rust,ignore
/// #[cuda_module]
/// pub mod kernels {
///     use super::*;
///     #[kernel]
///     pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) { .. }
/// }
///
/// // on the host:
/// kernels::launch::scale(&module, &stream, LaunchConfig::for_num_elems(1024), &input, 2.5f32, &mut output)?;
/// ```
///
/// The module is kept as written; the macro adds a submodule `launch` with
/// one function per `#[kernel]` written directly in the module body: same
/// name, visibility (as seen from outside `launch`), generics, where clause
/// and `#[cfg]`s as the kernel, taking `module`, `stream` and `config` and
/// then one `impl KernelArg<P>` per kernel parameter, where `P` is the type
/// the entry wrapper takes (so a wrong argument, such as host memory, does
/// not compile). It calls `::cuda_host::__private::launchN` with the entry
/// wrapper and returns `Result<(), cuda_host::HostError>`. `launch` starts
/// with `use super::*;`, so the kernels' parameter types resolve as they do
/// in the module.
///
/// Generic kernels are instantiated by inference from the arguments
/// (`launch::scale(&m, &s, cfg, &ints, 3i32, &mut out)`); with `impl Trait`
/// arguments, explicit generic arguments may name the kernel's own type and
/// const parameters only.
///
/// Limits: at most 12 parameters; kernels inside nested modules or produced
/// by macros get no launcher; the module must not define its own `launch`.
/// The expansion names `::cuda_core`, so the crate depends on `cuda-core`.
#[proc_macro_attribute]
pub fn cuda_module(args: TokenStream, item: TokenStream) -> TokenStream {
    match module::expand(&from_stream(args), &from_stream(item.clone())) {
        Ok(out) => to_stream(out),
        Err(errors) => {
            let mut out = item;
            out.extend(compile_errors(&errors, Position::Item));
            out
        }
    }
}

/// Puts a static in GPU constant memory.
///
/// ```rust,ignore
/// #[constant]
/// static COEFFS: [f32; 4] = [1.0, 0.5, 0.25, 0.125];
/// ```
///
/// The static's type becomes `cuda_device::Constant<[f32; 4]>`, which kernels
/// read like the array (`COEFFS[i]`, `COEFFS.iter()`); the host replaces the
/// value between launches with `KernelModule::set_constant(&COEFFS, &value)`.
/// `static mut` is rejected.
#[proc_macro_attribute]
pub fn constant(args: TokenStream, item: TokenStream) -> TokenStream {
    match constant::expand(args, item) {
        Ok(out) => out,
        Err(message) => format!("::core::compile_error!({message:?});").parse().unwrap(),
    }
}

/// Prints from a kernel with a Rust format string, through CUDA's `vprintf`.
///
/// ```rust,ignore
/// gpu_printf!("thread {} of block {}: x = {:.3}, bits = {:#010x}\n", tid, block, x, bits);
/// gpu_printf!("{name} = {value:>8}\n");  // variables captured by name
/// ```
///
/// Use it through `cuda_device::gpu_printf!`; the expansion names
/// `::cuda_device::printf`. The format string is parsed at compile time with
/// `format!`'s syntax; unsupported specs (`{:?}`, fill characters, `^`,
/// `N$`, `.*`, more than 16 placeholders) are compile errors at the string.
/// Each argument is evaluated once, in order. Evaluates to an `i32`: the
/// number of placeholders printed, or `vprintf`'s negative error code. The
/// supported specs and types are listed in `cuda_device::printf`.
#[proc_macro]
pub fn gpu_printf(input: TokenStream) -> TokenStream {
    expand_printf(input, printf::Mode::Print)
}

/// [`gpu_printf!`] with a newline appended; `gpu_println!()` prints an empty
/// line.
#[proc_macro]
pub fn gpu_println(input: TokenStream) -> TokenStream {
    expand_printf(input, printf::Mode::PrintLine)
}

/// [`gpu_printf!`] that builds the C format string and argument buffer
/// (`cuda_device::printf::__private::CFormat`) without printing, so host
/// tests can check them. Not a public API.
#[doc(hidden)]
#[proc_macro]
pub fn __gpu_format(input: TokenStream) -> TokenStream {
    expand_printf(input, printf::Mode::Format)
}

fn expand_printf(input: TokenStream, mode: printf::Mode) -> TokenStream {
    match printf::expand(&from_stream(input), mode) {
        Ok(call) => to_stream(call),
        Err(errors) => compile_errors(&errors, Position::Expr),
    }
}
