//! Kernels on the CPU: the emulator behind `OXIDE_EMULATE`
//! (`cargo oxide run --emulate`), as this crate exposes it.
//!
//! With `OXIDE_EMULATE` set to a mode, this crate loads the `cuda-emulator`
//! crate's driver table instead of `libcuda.so.1`, and emulated launches run
//! with that mode's executor: `host` runs the kernel's Rust code (which
//! `cuda-host` hands over with every launch), `ptx` the device linker's PTX,
//! `1` the default mode ([`Mode::DEFAULT`]). The rest of the crate works
//! unchanged on host memory. See the `cuda-emulator` crate for the engine and
//! the semantics; this module re-exports what users of `cuda-core` need.
//!
//! ```
//! use cuda_core::emulator::{self, Grid, HostKernel};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! // The body runs once per emulated thread (a kernel would read its
//! // coordinates through cuda_device::thread).
//! let threads = AtomicU32::new(0);
//! let body = || {
//!     threads.fetch_add(1, Ordering::Relaxed);
//! };
//! let grid = Grid { grid_dim: (2, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
//! emulator::run(grid, &HostKernel::from_fn(&body)).unwrap();
//! assert_eq!(threads.load(Ordering::Relaxed), 64);
//! ```

pub use cuda_emulator::{run, Fault, Grid, HostKernel, Mode, ENV};

use crate::backend::{self, Backend};

/// Whether this process runs kernels on the CPU: [`ENV`] selects a mode
/// (read once; nothing is loaded to answer).
pub fn is_active() -> bool {
    backend::selected().is_ok_and(Backend::is_emulated)
}

/// The emulation mode [`ENV`] selects, `None` for the GPU (or for a value
/// that names no mode: the driver's first use reports it).
pub fn mode() -> Option<Mode> {
    match backend::selected() {
        Ok(Backend::Emulator(mode)) => Some(mode),
        _ => None,
    }
}
