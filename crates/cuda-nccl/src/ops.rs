//! NCCL collectives as cuda-async [`DeviceOperation`]s, so that they chain
//! with kernel launches and copies, run on a stream pool, and can be
//! captured into a graph ([`DeviceOperation::into_graph`]).
//!
//! An operation runs on whatever stream it is scheduled on (a stream of
//! the communicator's context); the communicator is shared as an
//! `Arc<Communicator>`.
//!
//! ```
//! use cuda_async::DeviceOperation;
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_nccl::{ops, Communicator, ReduceOp};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! let ctx = CudaContext::new(0)?;
//! let comm = Arc::new(Communicator::init_all(&[ctx.clone()])?.remove(0)); // a world of one
//! let stream = ctx.new_stream()?;
//! let grads = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
//! let grads = ops::all_reduce(&comm, grads, ReduceOp::Avg).sync_on(&stream)?;
//! assert_eq!(grads.to_host_vec(&stream)?, [1.0, 2.0, 3.0]);
//! # Ok(()) }
//! ```
//!
//! The buffer is written, so it must be one the operation may write: a
//! shared, read-only [`DeviceBox`](cuda_async::DeviceBox) is refused at
//! compile time.
//!
//! ```compile_fail,E0277
//! use cuda_async::DeviceBox;
//! use cuda_nccl::{ops, Communicator, ReduceOp};
//! fn demo(comm: &std::sync::Arc<Communicator>, shared: DeviceBox<f32>) {
//!     let _ = ops::all_reduce(comm, shared, ReduceOp::Sum); // error: read-only
//! }
//! ```
//!
//! # Errors
//!
//! An [`NcclError`](crate::NcclError) reaches the waiting task as
//! [`AsyncError::Host`] (downcast it to match on it).

use std::borrow::BorrowMut;
use std::marker::PhantomData;
use std::sync::Arc;

use cuda_async::{AsyncError, DeviceOperation, ExecutionContext};
use cuda_core::DeviceBuffer;

use crate::comm::{Communicator, ReduceOp};
use crate::element::NcclElement;

/// [`Communicator::all_reduce_in_place`] on `buf` as an operation; the
/// buffer comes back as its output.
pub fn all_reduce<T, B>(comm: &Arc<Communicator>, buf: B, op: ReduceOp) -> AllReduce<T, B>
where
    T: NcclElement,
    B: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    AllReduce { comm: comm.clone(), buf, op, _t: PhantomData }
}

/// [`Communicator::broadcast_in_place`] on `buf` as an operation.
pub fn broadcast<T, B>(comm: &Arc<Communicator>, buf: B, root: usize) -> Broadcast<T, B>
where
    T: NcclElement,
    B: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    Broadcast { comm: comm.clone(), buf, root, _t: PhantomData }
}

/// See [`all_reduce`].
#[derive(Debug)]
pub struct AllReduce<T, B> {
    comm: Arc<Communicator>,
    buf: B,
    op: ReduceOp,
    _t: PhantomData<fn() -> T>,
}

/// See [`broadcast`].
#[derive(Debug)]
pub struct Broadcast<T, B> {
    comm: Arc<Communicator>,
    buf: B,
    root: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T, B> DeviceOperation for AllReduce<T, B>
where
    T: NcclElement,
    B: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    type Output = B;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<B, AsyncError> {
        let stream = ctx.require_stream("an NCCL all-reduce")?;
        let AllReduce { comm, mut buf, op, .. } = self;
        comm.all_reduce_in_place(buf.borrow_mut().as_slice_mut(), op, stream).map_err(AsyncError::host)?;
        Ok(buf)
    }
}

impl<T, B> DeviceOperation for Broadcast<T, B>
where
    T: NcclElement,
    B: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    type Output = B;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<B, AsyncError> {
        let stream = ctx.require_stream("an NCCL broadcast")?;
        let Broadcast { comm, mut buf, root, .. } = self;
        comm.broadcast_in_place(buf.borrow_mut().as_slice_mut(), root, stream).map_err(AsyncError::host)?;
        Ok(buf)
    }
}

impl<T, B> std::future::IntoFuture for AllReduce<T, B>
where
    T: NcclElement,
    B: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    type Output = Result<B, AsyncError>;
    type IntoFuture = cuda_async::DeviceFuture<Self>;
    fn into_future(self) -> Self::IntoFuture {
        self.future()
    }
}
