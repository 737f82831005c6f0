//! Lazy, composable GPU work that overlaps on the GPU, awaited from
//! ordinary Rust async code.
//!
//! A [`DeviceOperation`] describes work (uploads, kernel launches, copies)
//! without doing it. Combinators build larger operations from smaller ones:
//! [`and_then`](DeviceOperation::and_then) and
//! [`then`](DeviceOperation::then) chain steps, [`zip`](DeviceOperation::zip)
//! and [`join_all`] run operations side by side on several streams,
//! [`map`](DeviceOperation::map) reshapes outputs and [`value`] lifts host
//! data in. Buffers move from step to step, never copied. Kernel launches
//! become operations through the typed launchers of `#[cuda_module]`, with
//! their compile-time argument checks: [`kernel_op!`] wraps one launch, and
//! [`launch`] and [`then`](DeviceOperation::then) take any code written
//! against the stream.
//!
//! Nothing runs until the operation is scheduled: `.await` (any executor),
//! [`sync`](DeviceOperation::sync) (blocks the thread),
//! [`sync_on`](DeviceOperation::sync_on) (a given stream) or
//! [`schedule`](DeviceOperation::schedule) (a given [`StreamPool`]). A pool
//! holds several streams of one device and a [`SchedulingPolicy`]
//! ([`RoundRobin`] by default) that gives each operation its stream, so
//! independent operations (tasks) run concurrently on the GPU.
//!
//! When an operation is scheduled, all its steps are enqueued on its stream
//! at once, followed by a host function (`cuLaunchHostFunc`) that wakes the
//! waiting task when the GPU reaches it: no polling loop, no busy wait.
//! Errors of any step, and faults of the GPU while the work runs, reach the
//! waiting task as an [`AsyncError`].
//!
//! ```no_run
//! use cuda_async::{memory, DeviceBox, DeviceOperation};
//! use cuda_core::LaunchConfig;
//! use cuda_host::{cuda_module, load_kernel_module};
//! use std::sync::Arc;
//!
//! #[cuda_module]
//! mod kernels {
//!     use cuda_device::{kernel, thread, DisjointSlice};
//!     #[kernel]
//!     pub fn scale(x: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
//!         let i = thread::index_1d();
//!         if let Some(o) = out.get_mut(i) {
//!             *o = x[i.get()] * factor;
//!         }
//!     }
//! }
//!
//! async fn scaled(module: Arc<cuda_host::KernelModule>, x: DeviceBox<f32>, factor: f32)
//!     -> Result<Vec<f32>, cuda_async::AsyncError>
//! {
//!     let n = x.len();
//!     let host = memory::zeroed::<f32>(n)
//!         .then(move |stream, mut out| {
//!             // The typed launcher: arguments checked at compile time.
//!             kernels::launch::scale(&module, stream, LaunchConfig::for_num_elems(n as u32),
//!                                    &x, factor, &mut out)?;
//!             Ok(out)
//!         })
//!         .and_then(memory::to_host)
//!         .await?                              // woken by the stream
//!         .1;
//!     Ok(host.to_vec())
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let ctx = cuda_core::CudaContext::new(0)?;
//!     let module = Arc::new(load_kernel_module(&ctx, "my_crate")?);
//!     let x = DeviceBox::upload(vec![1.0f32; 4096]).sync()?;   // shared, uploaded once
//!     let twice = cuda_async::block_on(scaled(module.clone(), x.clone(), 2.0))?;
//!     assert!(twice.iter().all(|&v| v == 2.0));
//!     Ok(())
//! }
//! ```
//!
//! # Capturing an operation into a CUDA graph
//!
//! [`into_graph`](DeviceOperation::into_graph) records an operation once
//! into a CUDA graph; [`DeviceGraph::replay`] launches all of its work as
//! one submission, as often as wanted. The graph owns the operation's
//! output (its buffers), so they live as long as it can be launched; see
//! the [`graph`] module.
//!
//! # Memory safety of abandoned work
//!
//! Dropping a [`DeviceFuture`] whose work is still on the GPU does not free
//! the buffers the work uses: they are handed to a background thread that
//! drops them once the stream's host function says the work has finished
//! ([`pending_releases`] counts those still waiting). A dropped future that
//! was never polled enqueued nothing, so its buffers are dropped at once.
//!
//! # Executors
//!
//! The futures work on any executor (they only use the `Waker`); tokio's
//! `spawn` runs operations of independent tasks concurrently. For programs
//! without an executor, [`block_on`] runs one future on the current thread.

#![warn(missing_docs)]

mod error;
mod executor;
mod future;
pub mod graph;
mod kernel_op;
pub mod memory;
mod operation;
mod scheduling;
mod signal;

pub use error::AsyncError;
pub use executor::block_on;
pub use graph::{DeviceGraph, Replay};
pub use future::{pending_releases, release_finished, released_count, DeviceFuture};
pub use memory::DeviceBox;
pub use operation::{
    join_all, launch, value, AndThen, DeviceOperation, ExecutionContext, JoinAll, Launch, Map,
    Then, Value, Zip,
};
pub use scheduling::{
    default_pool, set_default_pool, RoundRobin, SameStream, SchedulingPolicy, StreamPool,
    DEFAULT_POOL_STREAMS,
};
pub use signal::FAULT_CHECK_INTERVAL;
