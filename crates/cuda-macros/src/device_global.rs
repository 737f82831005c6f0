//! `#[device_global]`: a static in GPU global memory, shared by the kernels
//! and read and written by the host.
//!
//! `#[device_global] static NAME: T = EXPR;` becomes
//! `#[link_section = ".oxide.global"] static NAME: ::cuda_device::DeviceGlobal<T> =
//! ::cuda_device::DeviceGlobal::new(EXPR);` (visibility and other attributes
//! kept). The device linker moves statics of that section (Abi.def's
//! GlobalSection) to PTX `.global` memory.

use proc_macro::TokenStream;

/// The expansion, or an error message for a `compile_error!`.
pub fn expand(args: TokenStream, item: TokenStream) -> Result<TokenStream, String> {
    if !args.is_empty() {
        return Err("#[device_global] takes no arguments".into());
    }
    crate::constant::wrap_static(
        item,
        "#[device_global]",
        crate::abi::GLOBAL_SECTION,
        "::cuda_device::DeviceGlobal",
        "a #[device_global] static cannot be `mut`: kernels share it, so safe code changes it through \
         atomics (`#[device_global] static HITS: AtomicU32 = AtomicU32::new(0);`) and a plain value \
         through `unsafe { *NAME.as_mut_ptr() = value }`; the host writes it with \
         KernelModule::write_global",
    )
}
