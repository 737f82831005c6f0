//! Raw bindings to the CUDA driver API, as oxide uses it: the C types and
//! enum values ([`types`]), [`DriverApi`] (one function pointer per entry
//! point), loading it from the NVIDIA driver with `dlopen`
//! ([`DriverApi::load_libcuda`]) or from any other implementation of the
//! same C functions ([`DriverApi::from_lookup`]), the names of the
//! `CUresult` codes ([`builtin_name`]), and the layout of the record a
//! panicking kernel leaves for the host ([`panic_record`], oxide's own
//! device-to-host ABI).
//!
//! This crate holds no policy: nothing here reads the environment, picks
//! between the GPU and the CPU emulator, or turns a `CUresult` into an error
//! a user can act on. The crates above it are layered like cudarc's
//! sys → result → safe:
//!
//! * **sys** (this crate): what crosses the C boundary, as it is.
//! * **the emulator** (`cuda-emulator`): another implementation of this
//!   table, on the CPU; it depends on this crate and on `cuda-device`.
//! * **result** (`cuda-core`'s `backend` and `driver` modules): the table
//!   this process uses, chosen once when it is loaded (`OXIDE_EMULATE`), and
//!   `cu!`, which turns a `CUresult` into `Result<_, DriverError>`.
//! * **safe** (`cuda-core`'s public API: `CudaContext`, `DeviceBuffer`, …),
//!   which asks its context which backend it runs on where that matters.
//!
//! A table that implements nothing returns `CUDA_ERROR_NOT_SUPPORTED` from
//! every entry:
//!
//! ```
//! use cuda_driver_sys::{DriverApi, Missing, CUDA_ERROR_NOT_SUPPORTED};
//!
//! // SAFETY: the lookup returns no function, so no signature can be wrong.
//! let api = unsafe { DriverApi::from_lookup(|_| std::ptr::null_mut(), Missing::NotSupported) }.unwrap();
//! let mut version = 0;
//! // SAFETY: the entry writes at most one int to `version`.
//! assert_eq!(unsafe { (api.cuDriverGetVersion)(&mut version) }, CUDA_ERROR_NOT_SUPPORTED);
//! assert_eq!(cuda_driver_sys::builtin_name(801).unwrap().0, "CUDA_ERROR_NOT_SUPPORTED");
//! ```
//!
//! Only Linux is supported (the library is found as `libcuda.so.1`).

#![warn(missing_docs)]

mod api;
pub mod dl;
mod names;
pub mod panic_record;
pub mod types;

pub use api::{DriverApi, LoadError, Missing, ENTRY_POINTS, OPTIONAL_ENTRY_POINTS};
pub use names::builtin_name;
pub use types::*;
