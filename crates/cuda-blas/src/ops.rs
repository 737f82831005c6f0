//! cuBLAS GEMMs as cuda-async [`DeviceOperation`]s, so that they chain with
//! kernel launches and copies, run on a stream pool, and can be captured
//! into a graph ([`DeviceOperation::into_graph`]).
//!
//! An operation runs on whatever stream it is scheduled on, but a cuBLAS
//! handle works on one stream. [`BlasOps`] therefore keeps one handle per
//! stream (made on first use, each with its own workspace so that it can
//! be captured), shared by every operation that uses it:
//!
//! ```
//! use cuda_async::{value, DeviceOperation};
//! use cuda_blas::{ops, GemmConfig};
//! use cuda_core::{CudaContext, DeviceBuffer};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.new_stream()?;
//! let blas = ops::BlasOps::new();
//! let a = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
//! let b = DeviceBuffer::from_host(&stream, &[1.0f32, 0.0, 0.0, 2.0])?;
//! let c = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
//! // C = A·B, as an operation; the buffers come back as its output.
//! let cfg = GemmConfig::row_major(2, 2, 2);
//! let (a, b, c) = ops::gemm(&blas, cfg, a, b, c).sync_on(&stream)?;
//! assert_eq!(c.to_host_vec(&stream)?, [1.0, 4.0, 3.0, 8.0]);
//!
//! // C += A·B, captured once into a graph and replayed twice.
//! blas.prepare(&stream)?; // the handle exists before the capture
//! let graph = ops::gemm(&blas, cfg.scale(1.0, 1.0), a, b, c).into_graph(&stream)?;
//! let graph = graph.replay().and_then(|g| g.replay()).sync_on(&stream)?;
//! assert_eq!(graph.output().2.to_host_vec(&stream)?, [3.0, 12.0, 9.0, 24.0]);
//! # Ok(()) }
//! ```
//!
//! C is written, so it must be a buffer the operation may write: a shared,
//! read-only [`DeviceBox`](cuda_async::DeviceBox) is refused at compile time.
//!
//! ```compile_fail,E0277
//! use cuda_async::DeviceBox;
//! use cuda_blas::{ops, GemmConfig};
//! use cuda_core::DeviceBuffer;
//! fn demo(blas: &std::sync::Arc<ops::BlasOps>, a: DeviceBuffer<f32>, b: DeviceBuffer<f32>, shared: DeviceBox<f32>) {
//!     let _ = ops::gemm(blas, GemmConfig::row_major(2, 2, 2), a, b, shared); // error: C is read-only
//! }
//! ```
//!
//! # Layering
//!
//! This module is in cuda-blas, which depends on cuda-async (not the other
//! way round): cuda-async stays free of cuBLAS for programs that do not use
//! it, and neither crate depends on the other twice. It is always built (no
//! feature): cuda-async has no outside dependencies.
//!
//! # Errors
//!
//! A [`BlasError`] of a call reaches the waiting task as
//! [`AsyncError::Host`] (downcast it to `BlasError` to match on it); as for
//! [`Blas::gemm`], every shape is checked before anything is queued.

use std::borrow::{Borrow, BorrowMut};
use std::sync::{Arc, Mutex};

use cuda_async::{AsyncError, DeviceOperation, ExecutionContext};
use cuda_core::{CudaStream, DeviceBuffer};

use crate::element::GemmElement;
use crate::result::BlasError;
use crate::shape::{GemmConfig, StridedBatch};
use crate::Blas;

/// cuBLAS handles for operations: one per stream, made on first use with
/// [`Blas::with_workspace`] (so each can be captured), shared by every
/// operation given this `BlasOps`. Dropping the last `Arc` destroys them
/// (keep it while graphs captured with it are launched: on a GPU they use
/// the handles' workspaces).
#[derive(Debug, Default)]
pub struct BlasOps {
    handles: Mutex<Vec<Blas>>,
}

impl BlasOps {
    /// No handles yet; they are made as operations run on streams.
    pub fn new() -> Arc<BlasOps> {
        Arc::new(BlasOps::default())
    }

    /// Makes the handle of `stream` now, if there is none. A handle cannot
    /// be made while its stream captures a graph (its workspace is
    /// allocated on the stream): prepare every stream a capture will use
    /// first (for [`into_graph_in`](DeviceOperation::into_graph_in), every
    /// stream of the pool).
    pub fn prepare(&self, stream: &Arc<CudaStream>) -> Result<(), BlasError> {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if !handles.iter().any(|h| Arc::ptr_eq(h.stream(), stream)) {
            handles.push(Blas::with_workspace(stream)?);
        }
        Ok(())
    }

    /// How many streams have a handle.
    pub fn handles(&self) -> usize {
        self.handles.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Runs `f` with the handle of `stream`.
    fn with<R>(&self, stream: &Arc<CudaStream>, f: impl FnOnce(&Blas) -> Result<R, BlasError>) -> Result<R, BlasError> {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        let at = match handles.iter().position(|h| Arc::ptr_eq(h.stream(), stream)) {
            Some(at) => at,
            None if stream.is_capturing() => {
                return Err(BlasError::NotCapturable {
                    call: "a cuda_blas::ops operation",
                    why: "the stream has no cuBLAS handle yet, and making one allocates its workspace; call \
                          BlasOps::prepare(&stream) before the capture",
                })
            }
            None => {
                handles.push(Blas::with_workspace(stream)?);
                handles.len() - 1
            }
        };
        f(&handles[at])
    }
}

/// `C = alpha·op(A)·op(B) + beta·C` ([`Blas::gemm`]) as an operation on
/// the stream it is scheduled on. A and B are [`DeviceBuffer`]s or
/// [`DeviceBox`](cuda_async::DeviceBox)es (anything that borrows as a
/// buffer), C a buffer it may write; all three come back as the output.
pub fn gemm<T, A, B, C>(ops: &Arc<BlasOps>, cfg: GemmConfig<T::Scalar>, a: A, b: B, c: C) -> Gemm<T, A, B, C>
where
    T: GemmElement,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    Gemm { ops: ops.clone(), cfg, batch: None, a, b, c }
}

/// A strided batch of GEMMs ([`Blas::gemm_strided_batched`]) as an
/// operation; see [`gemm`].
pub fn gemm_strided_batched<T, A, B, C>(
    ops: &Arc<BlasOps>,
    cfg: GemmConfig<T::Scalar>,
    batch: StridedBatch,
    a: A,
    b: B,
    c: C,
) -> Gemm<T, A, B, C>
where
    T: GemmElement,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    Gemm { ops: ops.clone(), cfg, batch: Some(batch), a, b, c }
}

/// See [`gemm`] and [`gemm_strided_batched`].
#[derive(Debug)]
pub struct Gemm<T: GemmElement, A, B, C> {
    ops: Arc<BlasOps>,
    cfg: GemmConfig<T::Scalar>,
    batch: Option<StridedBatch>,
    a: A,
    b: B,
    c: C,
}

impl<T, A, B, C> DeviceOperation for Gemm<T, A, B, C>
where
    T: GemmElement,
    T::Scalar: Send,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    type Output = (A, B, C);
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<(A, B, C), AsyncError> {
        let stream = ctx.require_stream("a cuBLAS GEMM")?;
        let Gemm { ops, cfg, batch, a, b, mut c } = self;
        ops.with(stream, |blas| {
            let (x, y, z) = (a.borrow().as_slice(), b.borrow().as_slice(), c.borrow_mut().as_slice_mut());
            match &batch {
                None => blas.gemm(&cfg, x, y, z),
                Some(batch) => blas.gemm_strided_batched(&cfg, batch, x, y, z),
            }
        })
        .map_err(AsyncError::host)?;
        Ok((a, b, c))
    }
}

impl<T, A, B, C> std::future::IntoFuture for Gemm<T, A, B, C>
where
    T: GemmElement,
    T::Scalar: Send,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    type Output = Result<(A, B, C), AsyncError>;
    type IntoFuture = cuda_async::DeviceFuture<Self>;
    fn into_future(self) -> Self::IntoFuture {
        self.future()
    }
}
