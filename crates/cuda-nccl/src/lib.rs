//! NCCL from Rust, on cuda-core's buffers and streams: collectives
//! between GPUs of one machine or many, with one code path for 1…N ranks.
//!
//! `libnccl.so.2` is opened at run time with `dlopen`, as cuda-core opens
//! the driver: a program using this crate builds and starts without it,
//! and a missing or too old library is an [`NcclError`] that says what to
//! install (or that `OXIDE_NCCL` names the file). See [`sys`] for where it
//! is looked for.
//!
//! * [`Communicator`]: one rank. [`Communicator::init_all`] (one process
//!   drives several GPUs), [`Communicator::init_rank`] with a [`UniqueId`]
//!   (one process or thread per GPU, across machines), handed over by a
//!   [`Bootstrap`] (environment variable, file, TCP rendezvous;
//!   [`World::from_env`] reads a launcher's variables),
//!   [`split`](Communicator::split), [`abort`](Communicator::abort), and
//!   [`wait`](Communicator::wait), which polls NCCL's asynchronous error
//!   with a timeout and aborts, so that a dead peer is an error, never a
//!   hang.
//! * Collectives on [`DeviceSlice`](cuda_core::DeviceSlice)s for every
//!   NCCL element type ([`NcclElement`]: i8, u8, i32, u32, i64, u64, f16,
//!   f32, f64, bf16, [`F8E4M3`], [`F8E5M2`]): `all_reduce` (sum, prod,
//!   min, max, avg: [`ReduceOp`]), `broadcast`, `reduce`, `all_gather`,
//!   `reduce_scatter` (and in-place forms), `send`/`recv`; [`Group`] for
//!   group calls.
//! * [`ops`]: the collectives as cuda-async `DeviceOperation`s. On a
//!   capturing stream the calls are recorded into the graph (NCCL supports
//!   capture; the emulator records a host node).
//!
//! # Checks
//!
//! Every length, root, peer, device and element type is checked before
//! NCCL is called; a violation is a typed [`NcclError`] and nothing is
//! queued. Outputs are [`DeviceSliceMut`](cuda_core::DeviceSliceMut)s, so
//! an output cannot alias an input (the in-place forms take one buffer).
//! Buffers are ordered like kernel operands on other streams.
//!
//! ```compile_fail,E0502
//! # use cuda_core::{CudaContext, DeviceBuffer};
//! # use cuda_nccl::{Communicator, ReduceOp};
//! # fn demo(comm: &Communicator, stream: &std::sync::Arc<cuda_core::CudaStream>) -> Result<(), cuda_nccl::NcclError> {
//! let mut buf = DeviceBuffer::<f32>::zeroed(stream, 4)?;
//! // error: `buf` is borrowed as the input and, mutably, as the output;
//! // use all_reduce_in_place.
//! comm.all_reduce(buf.as_slice(), buf.as_slice_mut(), ReduceOp::Sum, stream)?;
//! # Ok(()) }
//! ```
//!
//! # Without a GPU or NCCL
//!
//! Under cuda-core's CPU emulator (`OXIDE_EMULATE`, or `cargo oxide run` on
//! a machine without a GPU) no library is loaded: the communicator is the
//! emulator's ([`cuda_emulator::collective`]), N ranks in one process
//! (threads, or one thread with a [`Group`]), with NCCL's semantics and
//! stricter checks: ranks that disagree on a collective (count, type,
//! root) fail with [`NcclError::Mismatch`] instead of hanging, and a rank
//! that never comes is a [`NcclError::Timeout`] naming it.
//!
//! # Example
//!
//! Four ranks, one thread each, as four processes of a job would run:
//!
//! ```
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_nccl::{Communicator, ReduceOp, UniqueId};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! let world = 4;
//! let ctx = CudaContext::new(0)?;
//! let id = UniqueId::new(&ctx)?; // rank 0 makes it; a Bootstrap hands it over
//! let ranks: Vec<_> = (0..world)
//!     .map(|rank| {
//!         std::thread::spawn(move || -> Result<Vec<f32>, cuda_nccl::NcclError> {
//!             let ctx = CudaContext::new(0)?; // GPU `rank` on a machine with `world` GPUs
//!             let comm = Communicator::init_rank(&ctx, &id, rank, world)?;
//!             let stream = ctx.new_stream()?;
//!             let mut grads = DeviceBuffer::from_host(&stream, &[rank as f32; 3])?;
//!             comm.all_reduce_in_place(grads.as_slice_mut(), ReduceOp::Sum, &stream)?;
//!             comm.wait(&stream)?; // never hangs: times out and aborts
//!             Ok(grads.to_host_vec(&stream)?)
//!         })
//!     })
//!     .collect();
//! for r in ranks {
//!     assert_eq!(r.join().unwrap()?, [6.0; 3]); // 0 + 1 + 2 + 3
//! }
//!
//! // A receive buffer of the wrong length is refused before NCCL runs.
//! let comm = Communicator::init_all(&[ctx.clone()])?.remove(0);
//! let stream = ctx.default_stream();
//! let send = DeviceBuffer::from_host(&stream, &[1u8, 2, 3])?;
//! let mut recv = DeviceBuffer::<u8>::zeroed(&stream, 2)?;
//! let err = comm.all_reduce(send.as_slice(), recv.as_slice_mut(), ReduceOp::Max, &stream);
//! assert!(matches!(err, Err(cuda_nccl::NcclError::LengthMismatch { expected: 3, actual: 2, .. })));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod bootstrap;
mod comm;
mod element;
pub mod ops;
mod result;
pub mod sys;

pub use bootstrap::{Bootstrap, World};
pub use comm::{group, nccl_api, version, Communicator, Group, ReduceOp, UniqueId};
pub use element::{NcclElement, F8E4M3, F8E5M2};
pub use result::{NcclError, NcclResult, Operand};
