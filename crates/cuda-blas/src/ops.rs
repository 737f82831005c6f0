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
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cuda_async::{AsyncError, DeviceOperation, ExecutionContext};
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr};

use crate::element::{Fp8Element, Fp8Output, Fp8Pair, GemmElement, LtElement};
use crate::lt::{BlasLt, Epilogue, Fp8Scales};
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
    lt_handles: Mutex<Vec<BlasLt>>,
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

    /// Makes the cuBLASLt handle of `stream` now, if there is none: as
    /// [`prepare`](Self::prepare), for the [`matmul`] and [`matmul_fp8`]
    /// operations (a cuBLASLt handle has a workspace of its own, made only
    /// for streams that run them).
    pub fn prepare_lt(&self, stream: &Arc<CudaStream>) -> Result<(), BlasError> {
        let mut handles = self.lt_handles.lock().unwrap_or_else(|e| e.into_inner());
        if !handles.iter().any(|h| Arc::ptr_eq(h.stream(), stream)) {
            handles.push(BlasLt::new(stream)?);
        }
        Ok(())
    }

    /// How many streams have a handle.
    pub fn handles(&self) -> usize {
        self.handles.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// How many streams have a cuBLASLt handle.
    pub fn lt_handles(&self) -> usize {
        self.lt_handles.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Runs `f` with the cuBLASLt handle of `stream`, made on first use.
    fn with_lt<R>(&self, stream: &Arc<CudaStream>, f: impl FnOnce(&BlasLt) -> Result<R, BlasError>) -> Result<R, BlasError> {
        let why = "the stream has no cuBLASLt handle yet, and making one allocates its workspace; call \
                   BlasOps::prepare_lt(&stream) before the capture";
        with_handle(&self.lt_handles, stream, BlasLt::stream, || BlasLt::new(stream), ("a cuda_blas::ops matmul", why), f)
    }

    /// Runs `f` with the handle of `stream`.
    fn with<R>(&self, stream: &Arc<CudaStream>, f: impl FnOnce(&Blas) -> Result<R, BlasError>) -> Result<R, BlasError> {
        let why = "the stream has no cuBLAS handle yet, and making one allocates its workspace; call \
                   BlasOps::prepare(&stream) before the capture";
        with_handle(&self.handles, stream, Blas::stream, || Blas::with_workspace(stream), ("a cuda_blas::ops operation", why), f)
    }
}

/// Runs `f` with the handle in `handles` whose stream is `stream`, made
/// with `make` on first use; while the stream captures a graph a missing
/// handle is [`BlasError::NotCapturable`] (`refusal`: the call and why).
fn with_handle<H, R>(
    handles: &Mutex<Vec<H>>,
    stream: &Arc<CudaStream>,
    stream_of: fn(&H) -> &Arc<CudaStream>,
    make: impl FnOnce() -> Result<H, BlasError>,
    (call, why): (&'static str, &'static str),
    f: impl FnOnce(&H) -> Result<R, BlasError>,
) -> Result<R, BlasError> {
    let mut handles = handles.lock().unwrap_or_else(|e| e.into_inner());
    let at = match handles.iter().position(|h| Arc::ptr_eq(stream_of(h), stream)) {
        Some(at) => at,
        None if stream.is_capturing() => return Err(BlasError::NotCapturable { call, why }),
        None => {
            handles.push(make()?);
            handles.len() - 1
        }
    };
    f(&handles[at])
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

/// The activation a [`Matmul`] or [`MatmulFp8`] applies after the product
/// (and after the bias, when it has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Activation {
    /// None.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh approximation ([`Epilogue::Gelu`]).
    Gelu,
}

/// The [`Epilogue`] of an activation and a borrowed bias.
fn epilogue<T: DeviceRepr>(act: Activation, bias: Option<&DeviceBuffer<T>>) -> Epilogue<'_, T> {
    match (act, bias) {
        (Activation::None, None) => Epilogue::None,
        (Activation::Relu, None) => Epilogue::Relu,
        (Activation::Gelu, None) => Epilogue::Gelu,
        (Activation::None, Some(b)) => Epilogue::Bias(b.as_slice()),
        (Activation::Relu, Some(b)) => Epilogue::BiasRelu(b.as_slice()),
        (Activation::Gelu, Some(b)) => Epilogue::BiasGelu(b.as_slice()),
    }
}

/// What a [`Matmul`] or [`MatmulFp8`] hands back: its buffers, the bias
/// only when it was given one.
#[derive(Debug)]
pub struct MatmulBuffers<A, B, C, Bias> {
    /// The first factor.
    pub a: A,
    /// The second factor.
    pub b: B,
    /// The result.
    pub c: C,
    /// The bias, if the matmul had one.
    pub bias: Option<Bias>,
}

/// `C = activation(alpha·op(A)·op(B) + beta·C [+ bias])` on cuBLASLt
/// ([`BlasLt::matmul`]) as an operation on the stream it is scheduled on,
/// through that stream's cuBLASLt handle in `ops`
/// ([`BlasOps::prepare_lt`] before a capture). Add a bias with
/// [`Matmul::bias`] and an activation with [`Matmul::activation`]; shapes
/// are checked when it is queued, before anything runs.
///
/// ```
/// use cuda_async::DeviceOperation;
/// use cuda_blas::{ops, GemmConfig};
/// use cuda_core::{CudaContext, DeviceBuffer};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
/// let stream = CudaContext::new(0)?.new_stream()?;
/// let blas = ops::BlasOps::new();
/// let x = DeviceBuffer::from_host(&stream, &[1.0f32, -2.0, 3.0, -4.0])?; // 2×2
/// let w = DeviceBuffer::from_host(&stream, &[1.0f32, 0.0, 0.0, 1.0])?; // identity
/// let bias = DeviceBuffer::from_host(&stream, &[0.5f32, 0.5])?; // one per column
/// let y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// // y = relu(x·w + bias), a linear layer in one call.
/// let out = ops::matmul(&blas, GemmConfig::row_major(2, 2, 2), x, w, y)
///     .bias(bias)
///     .activation(ops::Activation::Relu)
///     .sync_on(&stream)?;
/// assert_eq!(out.c.to_host_vec(&stream)?, [1.5, 0.0, 3.5, 0.0]);
/// assert!(out.bias.is_some());
/// # Ok(()) }
/// ```
pub fn matmul<T, A, B, C>(ops: &Arc<BlasOps>, cfg: GemmConfig<f32>, a: A, b: B, c: C) -> Matmul<T, A, B, C>
where
    T: LtElement,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
{
    Matmul { ops: ops.clone(), cfg, activation: Activation::None, bias: None, a, b, c, _t: PhantomData }
}

/// See [`matmul`].
#[derive(Debug)]
pub struct Matmul<T, A, B, C, Bias = DeviceBuffer<T>> {
    ops: Arc<BlasOps>,
    cfg: GemmConfig<f32>,
    activation: Activation,
    bias: Option<Bias>,
    a: A,
    b: B,
    c: C,
    _t: PhantomData<fn() -> T>,
}

impl<T, A, B, C, Bias> Matmul<T, A, B, C, Bias> {
    /// Adds `bias` to every row of C (row-major; every column in
    /// column-major) before the activation.
    pub fn bias<NewBias>(self, bias: NewBias) -> Matmul<T, A, B, C, NewBias>
    where
        NewBias: Borrow<DeviceBuffer<T>> + Send + 'static,
    {
        let Matmul { ops, cfg, activation, a, b, c, .. } = self;
        Matmul { ops, cfg, activation, bias: Some(bias), a, b, c, _t: PhantomData }
    }

    /// Applies `activation` to the result.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }
}

impl<T, A, B, C, Bias> DeviceOperation for Matmul<T, A, B, C, Bias>
where
    T: LtElement,
    A: Borrow<DeviceBuffer<T>> + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<T>> + Send + 'static,
    Bias: Borrow<DeviceBuffer<T>> + Send + 'static,
{
    type Output = MatmulBuffers<A, B, C, Bias>;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<Self::Output, AsyncError> {
        let stream = ctx.require_stream("a cuBLASLt matmul")?;
        let Matmul { ops, cfg, activation, bias, a, b, mut c, .. } = self;
        ops.with_lt(stream, |lt| {
            let epilogue = epilogue(activation, bias.as_ref().map(|b| b.borrow()));
            lt.matmul(&cfg, epilogue, a.borrow().as_slice(), b.borrow().as_slice(), c.borrow_mut().as_slice_mut())
        })
        .map_err(AsyncError::host)?;
        Ok(MatmulBuffers { a, b, c, bias })
    }
}

/// `D = activation(alpha·scale_a·scale_b·op(A)·op(B) + beta·D [+ bias])`
/// with FP8 A and B ([`BlasLt::matmul_fp8`], every rule of which is
/// checked when it is queued) as an operation; the scales are one-element
/// f32 buffers read when it runs, so a replayed graph uses their current
/// values. Bias and activation as for [`matmul`]; the bias's element type
/// is [`Fp8Output::Bias`] of D's.
///
/// ```
/// use cuda_async::DeviceOperation;
/// use cuda_blas::{ops, GemmConfig};
/// use cuda_core::{CudaContext, DeviceBuffer};
/// use cuda_device::half::f8e4m3;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
/// let stream = CudaContext::new(0)?.new_stream()?;
/// let blas = ops::BlasOps::new();
/// let (m, n, k) = (16, 16, 32);
/// let x = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(0.5); m * k])?;
/// let w = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(0.25); n * k])?;
/// let (sx, sw) = (DeviceBuffer::from_host(&stream, &[2.0f32])?, DeviceBuffer::from_host(&stream, &[4.0f32])?);
/// let y = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
/// let cfg = GemmConfig::row_major(m, n, k).transpose_b();
/// let out = ops::matmul_fp8(&blas, cfg, (sx, sw), x, w, y).sync_on(&stream)?;
/// // 32 · 0.5 · 0.25 · (2 · 4)
/// assert!(out.c.to_host_vec(&stream)?.iter().all(|&v| v == 32.0));
/// # Ok(()) }
/// ```
///
/// An f32 result takes a bf16 bias, as cuBLASLt's FP8 kernels do; an f32
/// bias is refused when compiling:
///
/// ```compile_fail
/// use cuda_blas::{ops, GemmConfig};
/// use cuda_core::DeviceBuffer;
/// use cuda_device::half::f8e4m3;
/// fn demo(blas: &std::sync::Arc<ops::BlasOps>, x: DeviceBuffer<f8e4m3>, w: DeviceBuffer<f8e4m3>,
///         s: (DeviceBuffer<f32>, DeviceBuffer<f32>), y: DeviceBuffer<f32>, bias: DeviceBuffer<f32>) {
///     let _ = ops::matmul_fp8(blas, GemmConfig::row_major(16, 16, 16).transpose_b(), s, x, w, y).bias(bias);
/// }
/// ```
pub fn matmul_fp8<EA, EB, D, A, B, C, S>(
    ops: &Arc<BlasOps>,
    cfg: GemmConfig<f32>,
    scales: (S, S),
    a: A,
    b: B,
    c: C,
) -> MatmulFp8<EA, EB, D, A, B, C, S>
where
    EA: Fp8Pair<EB>,
    EB: Fp8Element,
    D: Fp8Output,
    A: Borrow<DeviceBuffer<EA>> + Send + 'static,
    B: Borrow<DeviceBuffer<EB>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<D>> + Send + 'static,
    S: Borrow<DeviceBuffer<f32>> + Send + 'static,
{
    MatmulFp8 { ops: ops.clone(), cfg, scales, activation: Activation::None, bias: None, a, b, c, _t: PhantomData }
}

/// What a [`MatmulFp8`] hands back: its buffers, its scales, the bias
/// only when it was given one.
#[derive(Debug)]
pub struct MatmulFp8Buffers<A, B, C, S, Bias> {
    /// The first factor.
    pub a: A,
    /// The second factor.
    pub b: B,
    /// The result.
    pub c: C,
    /// The scales of A and of B.
    pub scales: (S, S),
    /// The bias, if the matmul had one.
    pub bias: Option<Bias>,
}

/// See [`matmul_fp8`].
#[derive(Debug)]
#[allow(clippy::type_complexity)]
pub struct MatmulFp8<EA, EB, D: Fp8Output, A, B, C, S, Bias = DeviceBuffer<<D as Fp8Output>::Bias>> {
    ops: Arc<BlasOps>,
    cfg: GemmConfig<f32>,
    scales: (S, S),
    activation: Activation,
    bias: Option<Bias>,
    a: A,
    b: B,
    c: C,
    _t: PhantomData<fn() -> (EA, EB, D)>,
}

impl<EA, EB, D: Fp8Output, A, B, C, S, Bias> MatmulFp8<EA, EB, D, A, B, C, S, Bias> {
    /// Adds `bias` before the activation, as [`Matmul::bias`].
    pub fn bias<NewBias>(self, bias: NewBias) -> MatmulFp8<EA, EB, D, A, B, C, S, NewBias>
    where
        NewBias: Borrow<DeviceBuffer<D::Bias>> + Send + 'static,
    {
        let MatmulFp8 { ops, cfg, scales, activation, a, b, c, .. } = self;
        MatmulFp8 { ops, cfg, scales, activation, bias: Some(bias), a, b, c, _t: PhantomData }
    }

    /// Applies `activation` to the result.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }
}

impl<EA, EB, D, A, B, C, S, Bias> DeviceOperation for MatmulFp8<EA, EB, D, A, B, C, S, Bias>
where
    EA: Fp8Pair<EB>,
    EB: Fp8Element,
    D: Fp8Output,
    A: Borrow<DeviceBuffer<EA>> + Send + 'static,
    B: Borrow<DeviceBuffer<EB>> + Send + 'static,
    C: BorrowMut<DeviceBuffer<D>> + Send + 'static,
    S: Borrow<DeviceBuffer<f32>> + Send + 'static,
    Bias: Borrow<DeviceBuffer<D::Bias>> + Send + 'static,
{
    type Output = MatmulFp8Buffers<A, B, C, S, Bias>;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<Self::Output, AsyncError> {
        let stream = ctx.require_stream("a cuBLASLt FP8 matmul")?;
        let MatmulFp8 { ops, cfg, scales, activation, bias, a, b, mut c, .. } = self;
        ops.with_lt(stream, |lt| {
            let epilogue = epilogue(activation, bias.as_ref().map(|b| b.borrow()));
            let factors = Fp8Scales::new(scales.0.borrow(), scales.1.borrow());
            lt.matmul_fp8(&cfg, factors, epilogue, a.borrow().as_slice(), b.borrow().as_slice(), c.borrow_mut().as_slice_mut())
        })
        .map_err(AsyncError::host)?;
        Ok(MatmulFp8Buffers { a, b, c, scales, bias })
    }
}
