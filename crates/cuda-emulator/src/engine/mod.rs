//! The host-code engine: runs a kernel's own Rust code, compiled for the
//! host, with CUDA's semantics.
//!
//! Blocks run in parallel on worker OS threads (`launch.rs`, sharing
//! `launch_state.rs`); the threads of a block (`thread.rs`) are fibers on one
//! of them (`fiber.rs`), switched by a small scheduler (`scheduler.rs`) where
//! they wait: barriers, warp collectives (`warp.rs`), and spin points. Each
//! block has its own shared memory, watched for races (`shared_memory.rs`);
//! a device panic is caught and reported as on the GPU (`panic_capture.rs`);
//! a block that cannot finish says why (`deadlock.rs`), and the watchdog
//! (`watchdog.rs`) ends a thread that spins without ever waiting. The
//! intrinsic stubs reach the running block through `crate::hooks`.

mod deadlock;
mod fiber;
mod kernel;
mod launch;
mod launch_state;
mod memory_fault;
mod panic_capture;
mod scheduler;
mod shared_memory;
mod thread;
mod warp;
mod watchdog;

pub use kernel::{Fault, Grid, HostKernel, HostPanic};
pub use launch::run;
pub(crate) use launch::workers;
pub(crate) use scheduler::{spin_point, suspend_current, with_block, yield_now, Block};
pub(crate) use thread::{in_hook, Arrival, BarrierKind, State, WarpOp};
