//! The [`DeviceOperation`] trait, the context it is enqueued in, and its
//! combinators.

use std::sync::Arc;

use cuda_core::CudaStream;

use crate::future::{run_blocking, DeviceFuture, Target};
use crate::graph::DeviceGraph;
use crate::scheduling::{default_pool, StreamPool};
use crate::AsyncError;

/// Where an operation's work is enqueued: a stream, and the pool it came
/// from (so that [`zip`](DeviceOperation::zip) and [`join_all`] can fork
/// work onto the pool's other streams).
#[derive(Clone, Copy, Debug)]
pub struct ExecutionContext<'a> {
    stream: Option<&'a Arc<CudaStream>>,
    pool: Option<&'a StreamPool>,
}

impl<'a> ExecutionContext<'a> {
    /// Enqueue on `stream`; forks run inline on the same stream.
    pub fn on_stream(stream: &'a Arc<CudaStream>) -> Self {
        ExecutionContext { stream: Some(stream), pool: None }
    }

    /// Enqueue on `stream`, a stream of `pool`; forks may use the pool's
    /// other streams.
    pub fn in_pool(pool: &'a StreamPool, stream: &'a Arc<CudaStream>) -> Self {
        ExecutionContext { stream: Some(stream), pool: Some(pool) }
    }

    /// A context without a stream: host steps ([`value`], `map`, the
    /// closures of `and_then`) run, and every step that needs the GPU fails
    /// with [`AsyncError::NoStream`]. For tests and dry runs.
    pub fn host_only() -> ExecutionContext<'static> {
        ExecutionContext { stream: None, pool: None }
    }

    /// The stream, if there is one.
    pub fn stream(&self) -> Option<&'a Arc<CudaStream>> {
        self.stream
    }

    /// The stream, or the error that says `step` needs one.
    pub fn require_stream(&self, step: &'static str) -> Result<&'a Arc<CudaStream>, AsyncError> {
        self.stream.ok_or(AsyncError::NoStream { step })
    }

    /// The pool the stream belongs to, if the operation was scheduled on one.
    pub fn pool(&self) -> Option<&'a StreamPool> {
        self.pool
    }

    /// The same pool with another of its streams.
    fn with_stream<'b>(&self, stream: &'b Arc<CudaStream>) -> ExecutionContext<'b>
    where
        'a: 'b,
    {
        ExecutionContext { stream: Some(stream), pool: self.pool }
    }

    /// The `offset`-th pool stream after this one (`offset >= 1`), if that is
    /// another stream.
    fn side_stream(&self, offset: usize) -> Option<&'a Arc<CudaStream>> {
        self.pool?.stream_after(self.stream?, offset)
    }
}

/// GPU work, described but not yet started.
///
/// Building an operation does nothing: no allocation, no copy, no launch.
/// Work starts when the operation is *scheduled*: `.await` (through
/// `IntoFuture`, on any executor), [`future`](Self::future),
/// [`schedule`](Self::schedule), or the blocking [`sync`](Self::sync) and
/// [`sync_on`](Self::sync_on). Then every step is *enqueued* in order on
/// one stream (the host does not wait between steps: the stream orders
/// them), a host function is enqueued behind the last step, and the waiting
/// task is woken when the GPU reaches it.
///
/// Outputs are values (buffers, boxes, host data); each step hands its
/// output to the next by move, so a buffer made by one step is used by the
/// next without a copy. An output must not be read on the host before the
/// operation has completed; the ones that can be read on the host
/// (`PinnedHostBuffer`) wait for their copy themselves.
///
/// ```no_run
/// use cuda_async::{memory, value, DeviceOperation};
///
/// # fn main() -> Result<(), cuda_async::AsyncError> {
/// let doubled = value(vec![1.0f32, 2.0, 3.0])
///     .and_then(memory::upload)                // host Vec → DeviceBuffer
///     .then(|stream, mut buf| {                // anything on the stream
///         let twice: Vec<f32> = vec![2.0; 3];
///         buf.copy_from_host(stream, &twice)?;
///         Ok(buf)
///     })
///     .and_then(memory::to_host)               // → (DeviceBuffer, PinnedHostBuffer)
///     .map(|(_, host)| host);
/// // Nothing has run yet.
/// let host = doubled.sync()?;
/// assert_eq!(&host[..], &[2.0, 2.0, 2.0]);
/// # Ok(()) }
/// ```
///
/// Every operation type of this crate also implements `IntoFuture`, so it
/// can be `.await`ed directly; an operation only known as
/// `impl DeviceOperation` is awaited with `.future().await`.
#[must_use = "a DeviceOperation does nothing until it is scheduled (.await, .sync(), .schedule(&pool))"]
pub trait DeviceOperation: Send + Sized {
    /// What the operation produces (valid for the host once it completed).
    type Output: Send + 'static;

    /// Enqueues the operation's work on `ctx`'s stream and returns its
    /// output at once, before the GPU has done the work.
    ///
    /// This is the one method an operation implements; users call the
    /// scheduling methods instead. An error ends the operation: steps after
    /// it are not enqueued.
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<Self::Output, AsyncError>;

    /// Then the operation `f` makes from this one's output, on the same
    /// stream (`f` runs on the host while enqueuing, not after the GPU
    /// finished: it sees handles, e.g. buffers, not finished data).
    fn and_then<B, F>(self, f: F) -> AndThen<Self, F>
    where
        B: DeviceOperation,
        F: FnOnce(Self::Output) -> B + Send,
    {
        AndThen { first: self, f }
    }

    /// Then a step written against the stream: `f(stream, output)` may
    /// launch kernels (typed launchers: `kernels::launch::k(&module, stream,
    /// cfg, ..)`) and copy, and returns the next output.
    fn then<U, F>(self, f: F) -> Then<Self, F>
    where
        U: Send + 'static,
        F: FnOnce(&Arc<CudaStream>, Self::Output) -> Result<U, AsyncError> + Send,
    {
        Then { first: self, f }
    }

    /// Transforms the output on the host while enqueuing (to pick a buffer
    /// out of a tuple, wrap it, …).
    fn map<U, F>(self, f: F) -> Map<Self, F>
    where
        U: Send + 'static,
        F: FnOnce(Self::Output) -> U + Send,
    {
        Map { op: self, f }
    }

    /// Both operations, possibly concurrently: when scheduled on a pool
    /// with more than one stream, `other` runs on the next stream of the
    /// pool, after everything enqueued before the zip, and the work after
    /// the zip waits for both (events; the host never blocks).
    fn zip<B: DeviceOperation>(self, other: B) -> Zip<Self, B> {
        Zip { a: self, b: other }
    }

    /// Captures the operation into a CUDA graph on `stream` (a stream that
    /// can capture: not the legacy default stream), instantiates it, and
    /// returns it with the operation's output, which the graph owns from now
    /// on: [`DeviceGraph::replay`] then runs the whole operation as one
    /// submission, as often as wanted. The operation's work is recorded,
    /// not run; its host steps run once, now. Forks
    /// ([`zip`](Self::zip), [`join_all`]) stay on `stream`. See
    /// [`DeviceGraph`] for what can be captured and why the graph keeps
    /// the output.
    fn into_graph(self, stream: &Arc<CudaStream>) -> Result<DeviceGraph<Self::Output>, AsyncError> {
        crate::graph::capture(self, &ExecutionContext::on_stream(stream))
    }

    /// [`into_graph`](Self::into_graph) on a stream `pool`'s policy picks;
    /// [`zip`](Self::zip) and [`join_all`] fork onto the pool's other
    /// streams inside the graph (the graph's branches run concurrently).
    fn into_graph_in(self, pool: &StreamPool) -> Result<DeviceGraph<Self::Output>, AsyncError> {
        crate::graph::capture_in(self, pool)
    }

    /// Schedules the operation on `pool` (stream picked by its policy) when
    /// the returned future is first polled.
    fn schedule(self, pool: &Arc<StreamPool>) -> DeviceFuture<Self> {
        DeviceFuture::new(self, Target::Pool(pool.clone()))
    }

    /// Schedules the operation on `stream` when the future is first polled.
    fn schedule_on(self, stream: &Arc<CudaStream>) -> DeviceFuture<Self> {
        DeviceFuture::new(self, Target::Stream(stream.clone()))
    }

    /// The future of the operation on the [`default_pool`] (what `.await`
    /// does for this crate's operation types).
    fn future(self) -> DeviceFuture<Self> {
        DeviceFuture::new(self, Target::DefaultPool)
    }

    /// Runs the operation on the default pool and blocks until it is done.
    fn sync(self) -> Result<Self::Output, AsyncError> {
        let pool = default_pool()?;
        self.sync_in(&pool)
    }

    /// Runs the operation on a stream `pool`'s policy picks and blocks until
    /// it is done.
    fn sync_in(self, pool: &StreamPool) -> Result<Self::Output, AsyncError> {
        let stream = pool.next_stream();
        run_blocking(self, &ExecutionContext::in_pool(pool, stream))
    }

    /// Runs the operation on `stream` and blocks until it is done.
    fn sync_on(self, stream: &Arc<CudaStream>) -> Result<Self::Output, AsyncError> {
        run_blocking(self, &ExecutionContext::on_stream(stream))
    }
}

/// Lets `.await` schedule an operation type on the default pool.
macro_rules! awaitable {
    ($([$($g:tt)*] $t:ty),* $(,)?) => {$(
        impl<$($g)*> std::future::IntoFuture for $t
        where
            $t: DeviceOperation,
        {
            type Output = Result<<$t as DeviceOperation>::Output, AsyncError>;
            type IntoFuture = DeviceFuture<$t>;
            fn into_future(self) -> DeviceFuture<$t> {
                DeviceOperation::future(self)
            }
        }
    )*};
}

awaitable! {
    [T] Value<T>,
    [F] Launch<F>,
    [A, F] AndThen<A, F>,
    [A, F] Then<A, F>,
    [A, F] Map<A, F>,
    [A, B] Zip<A, B>,
    [A] JoinAll<A>,
}

/// An operation that produces `x` (host data lifted into a chain; enqueues nothing).
pub fn value<T: Send + 'static>(x: T) -> Value<T> {
    Value(x)
}

/// See [`value`].
#[derive(Debug, Clone)]
pub struct Value<T>(T);

impl<T: Send + 'static> DeviceOperation for Value<T> {
    type Output = T;
    fn enqueue(self, _ctx: &ExecutionContext<'_>) -> Result<T, AsyncError> {
        Ok(self.0)
    }
}

/// An operation written against the stream: `f(stream)` enqueues work
/// (kernel launches through the typed launchers, with their compile-time
/// argument checks; copies) and returns the output, usually the buffers it
/// used. Move what the work uses into the closure and hand it back out, so
/// that it lives as long as the work.
///
/// ```no_run
/// # use cuda_core::{DeviceBuffer, LaunchConfig};
/// # mod kernels { pub mod launch {
/// #   pub fn fill(_: &cuda_host::KernelModule, _: &cuda_core::CudaStream, _: cuda_core::LaunchConfig,
/// #               _: &mut cuda_core::DeviceBuffer<f32>, _: f32) -> Result<(), cuda_host::HostError> { Ok(()) } } }
/// # fn demo(module: std::sync::Arc<cuda_host::KernelModule>, mut out: DeviceBuffer<f32>) {
/// use cuda_async::{launch, DeviceOperation};
/// let op = launch(move |stream| {
///     kernels::launch::fill(&module, stream, LaunchConfig::for_num_elems(1024), &mut out, 1.5)?;
///     Ok(out)
/// });
/// # let _ = op; }
/// ```
pub fn launch<U, F>(f: F) -> Launch<F>
where
    U: Send + 'static,
    F: FnOnce(&Arc<CudaStream>) -> Result<U, AsyncError> + Send,
{
    Launch(f)
}

/// See [`launch`].
#[derive(Debug, Clone)]
pub struct Launch<F>(F);

impl<U, F> DeviceOperation for Launch<F>
where
    U: Send + 'static,
    F: FnOnce(&Arc<CudaStream>) -> Result<U, AsyncError> + Send,
{
    type Output = U;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<U, AsyncError> {
        (self.0)(ctx.require_stream("a launch step")?)
    }
}

/// See [`DeviceOperation::and_then`].
#[derive(Debug, Clone)]
pub struct AndThen<A, F> {
    first: A,
    f: F,
}

impl<A, B, F> DeviceOperation for AndThen<A, F>
where
    A: DeviceOperation,
    B: DeviceOperation,
    F: FnOnce(A::Output) -> B + Send,
{
    type Output = B::Output;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<B::Output, AsyncError> {
        let out = self.first.enqueue(ctx)?;
        (self.f)(out).enqueue(ctx)
    }
}

/// See [`DeviceOperation::then`].
#[derive(Debug, Clone)]
pub struct Then<A, F> {
    first: A,
    f: F,
}

impl<A, U, F> DeviceOperation for Then<A, F>
where
    A: DeviceOperation,
    U: Send + 'static,
    F: FnOnce(&Arc<CudaStream>, A::Output) -> Result<U, AsyncError> + Send,
{
    type Output = U;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<U, AsyncError> {
        let out = self.first.enqueue(ctx)?;
        (self.f)(ctx.require_stream("a then step")?, out)
    }
}

/// See [`DeviceOperation::map`].
#[derive(Debug, Clone)]
pub struct Map<A, F> {
    op: A,
    f: F,
}

impl<A, U, F> DeviceOperation for Map<A, F>
where
    A: DeviceOperation,
    U: Send + 'static,
    F: FnOnce(A::Output) -> U + Send,
{
    type Output = U;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<U, AsyncError> {
        self.op.enqueue(ctx).map(self.f)
    }
}

/// See [`DeviceOperation::zip`].
#[derive(Debug, Clone)]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A: DeviceOperation, B: DeviceOperation> DeviceOperation for Zip<A, B> {
    type Output = (A::Output, B::Output);
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<Self::Output, AsyncError> {
        let (Some(main), Some(side)) = (ctx.stream(), ctx.side_stream(1)) else {
            let a = self.a.enqueue(ctx)?;
            return Ok((a, self.b.enqueue(ctx)?));
        };
        // `b` starts after what was enqueued before the zip, beside `a`;
        // whatever comes after the zip waits for `b` too.
        side.wait(&main.record_event_without_timing()?)?;
        let a = self.a.enqueue(ctx)?;
        let b = self.b.enqueue(&ctx.with_stream(side))?;
        main.wait(&side.record_event_without_timing()?)?;
        Ok((a, b))
    }
}

/// All the operations of `ops`, spread over the streams of the pool
/// (operation `i` on the `i`-th stream after the one the join runs on), each
/// after what was enqueued before the join; the work after the join waits
/// for all of them. Outputs come in the order of `ops`.
pub fn join_all<A: DeviceOperation>(ops: impl IntoIterator<Item = A>) -> JoinAll<A> {
    JoinAll(ops.into_iter().collect())
}

/// See [`join_all`].
#[derive(Debug, Clone)]
pub struct JoinAll<A>(Vec<A>);

impl<A: DeviceOperation> DeviceOperation for JoinAll<A> {
    type Output = Vec<A::Output>;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<Vec<A::Output>, AsyncError> {
        let Some(main) = ctx.stream() else {
            return self.0.into_iter().map(|op| op.enqueue(ctx)).collect();
        };
        let streams = ctx.pool().map_or(1, |p| p.streams().len());
        // Group the operations by stream: index 0 is the join's own stream.
        let mut groups: Vec<Vec<(usize, A)>> = (0..streams).map(|_| Vec::new()).collect();
        for (i, op) in self.0.into_iter().enumerate() {
            groups[i % streams].push((i, op));
        }
        let n: usize = groups.iter().map(Vec::len).sum();
        let mut outputs: Vec<Option<A::Output>> = (0..n).map(|_| None).collect();
        let start = if groups.iter().skip(1).any(|g| !g.is_empty()) { Some(main.record_event_without_timing()?) } else { None };
        for (offset, group) in groups.into_iter().enumerate() {
            let side = if offset == 0 { None } else { ctx.side_stream(offset) };
            match (side, &start) {
                (Some(side), Some(start)) if !group.is_empty() => {
                    side.wait(start)?;
                    let side_ctx = ctx.with_stream(side);
                    for (i, op) in group {
                        outputs[i] = Some(op.enqueue(&side_ctx)?);
                    }
                    main.wait(&side.record_event_without_timing()?)?;
                }
                _ => {
                    for (i, op) in group {
                        outputs[i] = Some(op.enqueue(ctx)?);
                    }
                }
            }
        }
        Ok(outputs.into_iter().map(|o| o.expect("every operation was enqueued")).collect())
    }
}
