//! Kernels on the CPU: the emulated device behind `OXIDE_EMULATE`
//! (`cargo oxide run --emulate`).
//!
//! This crate implements the CUDA driver API's entry-point table
//! ([`cuda_driver_sys::DriverApi`]) on host memory ([`driver_api`]): device
//! memory is host memory, streams run their work at submission, and every
//! context carries its own sticky fault. `cuda-core` loads this table
//! instead of `libcuda.so.1` when [`Mode::from_env`] selects a mode, and
//! hands every launch to [`launch`], which runs it with the executor
//! ([`executor::choose`]) of that mode:
//!
//! * **device code** (`OXIDE_EMULATE=1`, the default, or `ptx`): the PTX
//!   the device linker produced, parsed once when its module is loaded and
//!   run by the `ptx-vm` virtual machine (`executor/device_code.rs`): every
//!   launch, raw `cuLaunchKernel` and clusters included. It proves oxide's
//!   output: the device linker's passes and LLVM's NVPTX backend (not ptxas,
//!   nor the hardware).
//! * **host code** (`OXIDE_EMULATE=host`): the kernel's own Rust code,
//!   compiled for the host, which `cuda-host` hands over with every launch,
//!   run by the engine: blocks in parallel, the threads of a block as fibers
//!   with real barriers, warp collectives as rendezvous of their lanes,
//!   `shared!` memory per block, atomics as host atomics; the intrinsic stubs
//!   answer from the emulated thread (`cuda_device::emulation`). Debuggable
//!   with gdb; it proves the Rust.
//!
//! A device panic is the same error as on the GPU (the panic is written to
//! the context's panic record: by the device code itself in device-code
//! mode, by the engine in host-code mode); what the GPU would not forgive
//! (an access outside every allocation, a barrier some thread of the block
//! never reaches, a warp collective some lane of its mask never joins; in
//! host-code mode also a shared-memory race between barriers and a thread
//! spinning without end while the thread it waits for never gets to run)
//! fails the launch with an explanation instead of hanging or corrupting.
//! Device allocations sit between guard pages, so a raw-pointer access that
//! runs off one fails the launch with an illegal address in host-code mode
//! too (ptx-vm checks every global access to the byte), and a panic that
//! cannot unwind fails the launch instead of aborting the process.
//!
//! [`run`] is the engine alone, outside any context, for tests of kernel
//! semantics:
//!
//! ```
//! use cuda_emulator::{Grid, HostKernel};
//! use cuda_device::{thread, warp};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! let total = AtomicU32::new(0);
//! let body = || {
//!     // Each warp sums its lane ids; lane 0 adds the sum.
//!     let sum = warp::reduce_add_u32(warp::FULL_MASK, warp::lane_id());
//!     thread::sync_threads();
//!     if warp::lane_id() == 0 {
//!         total.fetch_add(sum, Ordering::Relaxed);
//!     }
//! };
//! let grid = Grid { grid_dim: (4, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
//! cuda_emulator::run(grid, &HostKernel::from_fn(&body)).unwrap();
//! assert_eq!(total.load(Ordering::Relaxed), 4 * 2 * (0..32).sum::<u32>());
//! ```
//!
//! x86-64 Linux only (the fibers switch stacks in inline assembly).

#![warn(missing_docs)]

pub mod collective;
mod context;
mod driver;
mod engine;
mod error;
pub mod executor;
pub(crate) mod graph;
mod hooks;
mod launch;
mod managed;
mod mapping;
mod mem_pool;
mod memory;
mod mode;
mod limits;
mod module;
mod printf;

pub use context::fault_detail;
pub use engine::{Fault, Grid, HostKernel, HostPanic};
pub use graph::live_graph_objects;
pub use error::LaunchError;
pub use launch::{launch, mode, Launch};
pub use mode::{Mode, ModeError, ENV};

/// The emulated driver's entry-point table, for a process whose emulated
/// launches run in `mode` (the first call sets it). Also installs the
/// emulator's answers to the intrinsic stubs.
pub fn driver_api(mode: Mode) -> cuda_driver_sys::DriverApi {
    launch::set_mode(mode);
    hooks::install();
    driver::api()
}

/// Whether the emulated driver implements the entry point `symbol` (the
/// others return `CUDA_ERROR_NOT_SUPPORTED`: TMA tensor maps, for one).
pub fn implements(symbol: &str) -> bool {
    std::ffi::CString::new(symbol).is_ok_and(|name| !driver::symbol(&name).is_null())
}

/// Runs `grid` with `kernel` on the CPU, outside any context: the host-code
/// engine alone, for tests of kernel semantics. The kernel reads its
/// coordinates through `cuda_device::thread` and may use every intrinsic.
pub fn run(grid: Grid, kernel: &HostKernel) -> Result<(), Fault> {
    hooks::install();
    // SAFETY: a kernel made by `from_fn` ignores `params`; one made with
    // `HostKernel::new` promised to accept a null parameter array only if
    // it takes no parameters (`new`'s contract covers its launches).
    unsafe { engine::run(grid, kernel, false, std::ptr::null()) }
}
