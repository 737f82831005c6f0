//! The seam between the intrinsic stubs and a host emulator.
//!
//! Every intrinsic stub (`thread::threadIdx_x`, `sync_threads`, the warp
//! shuffles, atomics, `vprintf`, …) has a host body that looks up its entry in
//! the [`Hooks`] table installed here and calls it; without an installed
//! table, or with `None` in the entry, the stub aborts with a message saying
//! that a GPU intrinsic was called on the host. The `cuda-emulator` crate's
//! host-code mode (`OXIDE_EMULATE=host`, `cargo oxide run --emulate=host`)
//! fills the table with functions that answer from the emulated thread
//! running on the calling OS thread. On the device, and in the emulator's
//! device-code mode (which runs the PTX), none of this exists: the device
//! linker replaces the stub calls.
//!
//! ```
//! use cuda_device::emulation::{install, Hooks};
//!
//! fn lane() -> u32 { 7 }
//! static HOOKS: Hooks = Hooks { lane_id: Some(lane), ..Hooks::NONE };
//! // SAFETY: no thread coordinate or shared-memory hook is installed.
//! unsafe { install(&HOOKS) };
//! assert_eq!(cuda_device::warp::lane_id(), 7);
//! ```

include!(concat!(env!("OUT_DIR"), "/hooks.rs"));

/// Installs `hooks` as the host implementation of the intrinsic stubs, for
/// the whole process (a later call replaces it).
///
/// # Safety
/// The safe APIs of this crate rely on the stubs answering as the hardware
/// would: the coordinate hooks give each thread of a launch its own
/// coordinates and answer only inside a launch (a `ThreadIndex` is unique to
/// its thread), `block_shared` gives each block memory of the requested size
/// and alignment that only it uses, the barriers and warp collectives wait
/// for the threads they name. An emulator must keep every such promise for
/// the hooks it installs.
pub unsafe fn install(hooks: &'static Hooks) {
    crate::host::install(hooks)
}

/// Whether an emulator has installed its hooks.
pub fn installed() -> bool {
    crate::host::hooks().is_some()
}
