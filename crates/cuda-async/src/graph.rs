//! [`DeviceGraph`]: a [`DeviceOperation`] captured once into a CUDA graph
//! and replayed as one submission, as often as wanted.
//!
//! [`DeviceOperation::into_graph`] enqueues the operation once on a
//! capturing stream, so its steps (kernel launches, device copies, fills,
//! cuBLAS calls) are recorded instead of run, instantiates the graph, and
//! returns it with the operation's output. [`DeviceGraph::replay`] is an
//! operation that launches the whole graph on the stream it is scheduled
//! on; it hands the `DeviceGraph` back as its output, like every other
//! operation hands its buffers on.
//!
//! ```
//! use cuda_async::{value, DeviceGraph, DeviceOperation, StreamPool};
//! use cuda_core::{CudaContext, DeviceBuffer};
//!
//! # fn main() -> Result<(), cuda_async::AsyncError> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! let ctx = CudaContext::new(0)?;
//! let pool = StreamPool::new(&ctx, 2)?;
//! let stream = &pool.streams()[0];
//! // Buffers are made before the capture (an allocation cannot be recorded).
//! let (src, dst) = (DeviceBuffer::<u32>::zeroed(stream, 1024)?, DeviceBuffer::<u32>::zeroed(stream, 1024)?);
//! let step = value((src, dst)).then(|s, (mut src, mut dst)| {
//!     src.fill(s, 7)?;
//!     dst.copy_from_device(s, &src)?;
//!     Ok((src, dst))
//! });
//! // Recorded once (nothing ran), owned by the graph from now on.
//! let mut graph: DeviceGraph<_> = step.into_graph(stream)?;
//! for _ in 0..10 {
//!     graph = graph.replay().sync_in(&pool)?;   // one submission each
//! }
//! let (_src, dst) = graph.output();
//! assert_eq!(dst.to_host_vec(stream)?[0], 7);
//! # Ok(()) }
//! ```
//!
//! # The output of a replayed operation
//!
//! An operation's output is what its work reads and writes: usually the
//! buffers handed from step to step. A graph touches them again at every
//! launch, so the `DeviceGraph` owns the output: the buffers live as long
//! as the graph can be launched, and nobody else can drop them while it is.
//! They are lent out with [`output`](DeviceGraph::output) (to read results,
//! e.g. with `to_host_vec` on the stream the graph ran on) and
//! [`output_mut`](DeviceGraph::output_mut) (to write new inputs between
//! launches: a launch reads the buffers' contents at the time it runs).
//! [`into_parts`](DeviceGraph::into_parts) gives up the graph and returns
//! the output. A buffer that is replaced through `output_mut` (and so
//! dropped) makes the next launch fail with
//! [`GraphError::BufferDropped`](cuda_core::GraphError::BufferDropped)
//! instead of touching freed memory (cuda-core checks every launch).
//!
//! Every launch is stream-ordered like any other use of the buffers: after
//! other streams' uses of them, and their frees wait for it.
//!
//! The output must not borrow the graph, and the graph is handed from
//! replay to replay by value, so an output cannot be held across a replay:
//!
//! ```compile_fail,E0505
//! # use cuda_async::{DeviceGraph, DeviceOperation};
//! # fn demo(graph: DeviceGraph<cuda_core::DeviceBuffer<f32>>) {
//! let out = graph.output();          // borrows the graph …
//! let again = graph.replay();        // … which the replay takes: error
//! let _ = (out.len(), again);
//! # }
//! ```
//!
//! A `DeviceGraph` may move to another thread, but not be shared between
//! threads (`GraphExec` is not `Sync`):
//!
//! ```compile_fail,E0277
//! fn shared<T: Sync>(_: &T) {}
//! fn demo(graph: &cuda_async::DeviceGraph<()>) {
//!     shared(graph); // error: DeviceGraph is not Sync
//! }
//! ```
//!
//! # What can be captured
//!
//! What cuda-core's capture records: typed kernel launches, copies between
//! device buffers, memsets and fills, cuBLAS calls of a handle with its own
//! workspace (`cuda_blas::Blas::with_workspace`; under the emulator the
//! CPU reference becomes a host node), [`zip`](DeviceOperation::zip) and
//! [`join_all`](crate::join_all) (on one stream for [`into_graph`](DeviceOperation::into_graph),
//! forked over a pool's streams and joined back for
//! [`into_graph_in`](DeviceOperation::into_graph_in)). What a graph cannot
//! replay fails the capture with an error naming the call (the call's own
//! error, or [`AsyncError::Graph`] where the capture's end finds it): an
//! allocation on the capturing stream ([`memory::zeroed`](crate::memory::zeroed),
//! [`memory::upload`](crate::memory::upload)), a copy to or from host
//! memory ([`memory::to_host`](crate::memory::to_host)), a synchronisation.
//! Allocate and upload before capturing, and read results back after a
//! replay. Scratch that lives within one step is a temporary
//! (`stream.alloc_temp_zeroed`, cuda-core's `TempBuffer`): an allocation
//! node the graph owns, freed by the free node its drop at the end of the
//! step records; cuda-prims calls take their scratch that way, so a step
//! that sorts or scans is captured too. The operation's host steps (the closures of `and_then`, `then`,
//! `map`) run once, during the capture; only the GPU work is replayed.

use std::sync::Arc;

use cuda_core::{CudaStream, GraphExec};

use crate::operation::{DeviceOperation, ExecutionContext};
use crate::scheduling::StreamPool;
use crate::AsyncError;

/// An operation captured into an instantiated CUDA graph, with the output
/// the capture produced (see the [module docs](self)).
#[derive(Debug)]
pub struct DeviceGraph<T> {
    exec: GraphExec,
    output: T,
}

impl<T: Send + 'static> DeviceGraph<T> {
    /// The operation that launches the graph once on the stream it is
    /// scheduled on (after the work already queued there) and hands the
    /// graph back.
    pub fn replay(self) -> Replay<T> {
        Replay(self)
    }

    /// Launches the graph on `stream` now (queued, not waited for).
    pub fn launch(&self, stream: &CudaStream) -> Result<(), AsyncError> {
        Ok(self.exec.launch(stream)?)
    }

    /// The output of the captured operation (the buffers the graph uses).
    pub fn output(&self) -> &T {
        &self.output
    }

    /// The output, to write new inputs between launches. Replacing a
    /// buffer the graph uses makes later launches fail (see the module docs).
    pub fn output_mut(&mut self) -> &mut T {
        &mut self.output
    }

    /// The instantiated graph (to time it, or launch it yourself).
    pub fn exec(&self) -> &GraphExec {
        &self.exec
    }

    /// The graph and the output, parted: the output's buffers may be
    /// dropped from then on (the exec refuses to launch without them).
    pub fn into_parts(self) -> (GraphExec, T) {
        (self.exec, self.output)
    }
}

/// Captures `op` on `ctx`'s stream (a stream that can capture).
pub(crate) fn capture<Op: DeviceOperation>(op: Op, ctx: &ExecutionContext<'_>) -> Result<DeviceGraph<Op::Output>, AsyncError> {
    let stream = ctx.require_stream("into_graph")?;
    let mut output = None;
    let captured = stream.capture(|_| {
        output = Some(op.enqueue(ctx)?);
        Ok::<_, AsyncError>(())
    });
    let graph = match captured {
        Ok(graph) => graph,
        // The operation's own error, as it would be without the capture.
        Err(cuda_core::GraphError::Closure(e)) => {
            return Err(match e.downcast::<AsyncError>() {
                Ok(e) => *e,
                Err(e) => AsyncError::Host(e),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let exec = graph.instantiate()?;
    Ok(DeviceGraph { exec, output: output.expect("the capture's closure ran") })
}

/// Captures on one of `pool`'s streams.
pub(crate) fn capture_in<Op: DeviceOperation>(op: Op, pool: &StreamPool) -> Result<DeviceGraph<Op::Output>, AsyncError> {
    let stream: &Arc<CudaStream> = pool.next_stream();
    capture(op, &ExecutionContext::in_pool(pool, stream))
}

/// See [`DeviceGraph::replay`].
#[derive(Debug)]
pub struct Replay<T>(DeviceGraph<T>);

impl<T: Send + 'static> DeviceOperation for Replay<T> {
    type Output = DeviceGraph<T>;
    fn enqueue(self, ctx: &ExecutionContext<'_>) -> Result<DeviceGraph<T>, AsyncError> {
        self.0.launch(ctx.require_stream("a graph replay")?)?;
        Ok(self.0)
    }
}

impl<T: Send + 'static> std::future::IntoFuture for Replay<T> {
    type Output = Result<DeviceGraph<T>, AsyncError>;
    type IntoFuture = crate::DeviceFuture<Self>;
    fn into_future(self) -> Self::IntoFuture {
        self.future()
    }
}
