//! What oxide kernels call on the GPU.
//!
//! A kernel is an ordinary Rust function marked `#[kernel]`. It is compiled by
//! rustc together with the host program, and the oxide device linker turns it
//! (and everything it calls) into PTX. Inside a kernel, this crate gives:
//!
//! - [`thread`]: the [`ThreadIndex`] constructors (`index_1d/2d/3d`), block
//!   size and numbers, block barriers (`sync_threads` and its
//!   `_count/_and/_or` forms), clocks and `nanosleep`;
//! - [`cooperative`]: thread-block tiles (`tiled_partition::<N>()`) and
//!   grid-wide sync in a cooperative launch ([`cooperative::GridGroup`]);
//! - [`DisjointSlice`]: an output slice each thread writes its own element of;
//! - shared memory ([`shared`](mod@shared): `shared!`, [`SharedArray`],
//!   [`dynamic_shared`]), warp collectives ([`warp`]), scoped atomics
//!   ([`atomic`]), memory fences ([`fence`]), cache hints ([`cache`]), constant memory
//!   (`#[constant]`, [`Constant`]), device globals (`#[device_global]`,
//!   [`DeviceGlobal`], [`global`](mod@global)) and `gpu_printf!`/`gpu_println!`
//!   ([`printf`]);
//! - the target being built for, a constant of the device code ([`arch`]:
//!   `compute_capability()`, for code that uses newer GPUs' instructions
//!   behind a test of it);
//! - Ampere and Hopper features: [`cp_async`], [`cluster`], [`matrix`]
//!   (`ldmatrix`/`stmatrix`), [`warpgroup`] (`setmaxnreg`), [`mbarrier`],
//!   [`tma`], [`wgmma`];
//! - Blackwell, compile-only: [`tcgen05`] (tensor memory and its MMA);
//! - half precision ([`half`](mod@half)): [`f16`](struct@f16), [`bf16`] and the packed
//!   `f16x2`/`bf16x2`, with the GPU's own conversions and paired arithmetic
//!   and a bit-exact CPU model on the host;
//! - inline PTX with typed operands ([`ptx`](mod@ptx): `ptx_asm!`) and loop
//!   unrolling hints ([`unroll`](mod@unroll): `unroll!`, `#[unroll]`);
//! - the attributes `#[kernel]`, `#[device]`, `#[constant]`, `#[device_global]` (from
//!   cuda-macros), and [`emulation`], the hooks the CPU emulator installs.
//!
//! ```
//! use cuda_device::{kernel, thread, DisjointSlice};
//!
//! #[kernel]
//! pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_1d();
//!     if let Some(elem) = out.get_mut(idx) {
//!         *elem = input[idx.get()] * factor;
//!     }
//! }
//! ```
//!
//! Every function here that reads a hardware register is an *intrinsic stub*
//! (see `docs/ABI.md`): on the GPU it becomes one PTX instruction; on the host it
//! is answered by the CPU emulator during an emulated launch ([`emulation`]),
//! and otherwise aborts with a message, because a kernel is launched, never called.
#![no_std]
#![warn(missing_docs)]

// First: its macros (the literals of reserved names) are used by the modules below.
#[macro_use]
mod abi {
    //! The reserved names and numbers the device linker agrees on, generated
    //! by build.rs from `compiler/include/oxide/Abi.def`.
    include!(concat!(env!("OUT_DIR"), "/abi.rs"));
}

pub mod arch;
pub mod atomic;
pub mod cache;
// Hopper (and sm_80) features: cp.async, clusters, ldmatrix/stmatrix, setmaxnreg.
pub mod cluster;
pub mod cp_async;
pub mod cooperative;
pub mod matrix;
pub mod warpgroup;
mod constant;
mod disjoint;
pub mod emulation;
pub mod fence;
pub mod global;
pub mod graph;
pub mod half;
mod host;
pub mod mbarrier;
pub mod printf;
pub mod ptx;
pub mod unroll;
pub mod shared;
pub mod thread;
pub mod tcgen05;
pub mod tma;
pub mod warp;
pub mod wgmma;

pub use cuda_macros::{constant, device, device_global, kernel};
pub use constant::Constant;
pub use global::{DeviceGlobal, GlobalData};
pub use cuda_macros::{gpu_printf, gpu_println};
pub use cuda_macros::{ptx_asm, unroll};
pub use disjoint::DisjointSlice;
pub use half::{bf16, f16};
pub use shared::{dynamic_shared, SharedArray};
pub use thread::ThreadIndex;

/// The generated intrinsic stubs (one per line of `Stubs.def`).
#[doc(hidden)]
pub mod stubs {
    include!(concat!(env!("OUT_DIR"), "/stubs.rs"));
}

/// Items the macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::stubs::__oxide_stub_cluster_dims as cluster_dims;
    pub use crate::stubs::__oxide_stub_entry_identity as entry_identity;
    pub use crate::stubs::__oxide_stub_launch_bounds as launch_bounds;
    pub use crate::stubs::__oxide_stub_param_layout as param_layout;
    pub use crate::stubs::__oxide_stub_ptx_asm as ptx_asm;
    pub use crate::stubs::__oxide_stub_ptx_asm_output as ptx_asm_output;
    pub use crate::stubs::__oxide_stub_unroll as unroll;

    /// The address of a kernel's entry wrapper, in the `#[used]` static that
    /// `#[kernel]` writes so that every kernel is compiled, launched or not.
    #[repr(transparent)]
    pub struct KeepEntry(pub *const ());

    // SAFETY: the address is only kept, never dereferenced or called.
    unsafe impl Sync for KeepEntry {}

    /// How the entry wrapper of a kernel receives a `&'a [T]` parameter: the
    /// same bytes, in a type only cuda-host's device-buffer arguments convert
    /// to, so that a launch cannot pass a host slice (the `Copy` blanket
    /// `KernelArg<T> for T` would otherwise accept `&[T]` for `&[T]`).
    /// It has no public constructor and is not `Copy`.
    #[repr(transparent)]
    #[allow(dead_code)]
    pub struct SliceParam<'a, T>(&'a [T]);

    /// `SliceParam` for a `&'a mut [T]` parameter.
    #[repr(transparent)]
    #[allow(dead_code)]
    pub struct SliceMutParam<'a, T>(&'a mut [T]);

    /// Whether the launch has exactly one thread. Every thread of a launch
    /// receives the same kernel arguments, so a `&mut` parameter is
    /// exclusive only in a launch of one thread; the entry wrapper of a
    /// kernel that takes one panics otherwise, before the kernel runs.
    #[inline(always)]
    pub fn single_thread_launch() -> bool {
        use crate::thread::*;
        let block = blockDim_x() as u64 * blockDim_y() as u64 * blockDim_z() as u64;
        let grid = gridDim_x() as u64 * gridDim_y() as u64 * gridDim_z() as u64;
        block == 1 && grid == 1
    }
}
