//! [`DeviceFuture`]: a scheduled [`DeviceOperation`], woken by a stream
//! host function.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use cuda_core::CudaStream;

use crate::operation::{DeviceOperation, ExecutionContext};
use crate::scheduling::{default_pool, StreamPool};
use crate::signal::{keeper, Signal};
use crate::AsyncError;

/// Where a future enqueues its operation on first poll.
#[derive(Debug)]
pub(crate) enum Target {
    DefaultPool,
    Pool(Arc<StreamPool>),
    Stream(Arc<CudaStream>),
}

enum State<Op: DeviceOperation> {
    /// Not polled yet: nothing enqueued.
    Idle(Op, Target),
    /// Enqueued; the output is the GPU's until the signal is set.
    Running { output: Option<Op::Output>, signal: Arc<Signal> },
    /// The output was handed out (or the error).
    Finished,
}

/// The future of a scheduled [`DeviceOperation`].
///
/// The first `poll` enqueues the operation on its stream, and a host
/// function (`cuLaunchHostFunc`) behind it that wakes the task when the GPU
/// gets there; later polls only look at that signal. A fault on the GPU
/// reaches the task as [`AsyncError::Driver`].
///
/// Dropping the future before the work has finished never frees memory
/// the GPU still uses: the outputs (the buffers the work reads and writes)
/// are kept by a background thread until the stream has passed the work,
/// and released then. Dropping it before the first poll enqueues nothing.
#[must_use = "futures do nothing unless polled (.await)"]
pub struct DeviceFuture<Op: DeviceOperation> {
    state: State<Op>,
}

// No `Pin<&mut Op>` is ever made: the operation is moved out by value when
// it is enqueued, so the future needs no pinning.
impl<Op: DeviceOperation> Unpin for DeviceFuture<Op> {}

impl<Op: DeviceOperation> std::fmt::Debug for DeviceFuture<Op> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Idle(..) => "not scheduled yet",
            State::Running { signal, .. } if signal.is_set() => "complete",
            State::Running { .. } => "running",
            State::Finished => "finished",
        };
        f.debug_struct("DeviceFuture").field("state", &state).finish()
    }
}

impl<Op: DeviceOperation> DeviceFuture<Op> {
    pub(crate) fn new(op: Op, target: Target) -> Self {
        DeviceFuture { state: State::Idle(op, target) }
    }

    /// Whether the operation has been enqueued (the future was polled).
    pub fn is_scheduled(&self) -> bool {
        !matches!(self.state, State::Idle(..))
    }

    fn start(op: Op, target: Target) -> Result<(Op::Output, Arc<Signal>), AsyncError> {
        keeper().release_finished();
        match target {
            Target::Stream(stream) => enqueue_armed(op, &ExecutionContext::on_stream(&stream)),
            Target::Pool(pool) => enqueue_armed(op, &ExecutionContext::in_pool(&pool, pool.next_stream())),
            Target::DefaultPool => {
                let pool = default_pool()?;
                enqueue_armed(op, &ExecutionContext::in_pool(&pool, pool.next_stream()))
            }
        }
    }
}

impl<Op: DeviceOperation> Future for DeviceFuture<Op> {
    type Output = Result<Op::Output, AsyncError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let State::Idle(..) = this.state {
            let State::Idle(op, target) = std::mem::replace(&mut this.state, State::Finished) else {
                unreachable!()
            };
            match Self::start(op, target) {
                Ok((output, signal)) => this.state = State::Running { output: Some(output), signal },
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        match &mut this.state {
            State::Running { output, signal } => match signal.poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(result) => {
                    let output = output.take();
                    this.state = State::Finished;
                    Poll::Ready(result.map(|()| output.expect("the output is handed out once")))
                }
            },
            State::Finished => panic!("DeviceFuture polled after it returned Ready"),
            State::Idle(..) => unreachable!(),
        }
    }
}

impl<Op: DeviceOperation> Drop for DeviceFuture<Op> {
    fn drop(&mut self) {
        if let State::Running { output, signal } = &mut self.state {
            if let Some(output) = output.take() {
                if !signal.is_set() {
                    keeper().bury(signal.clone(), Box::new(output));
                }
            }
        }
    }
}

/// Enqueues `op` and a host function behind it that sets the returned
/// signal; the keeper watches the stream for faults meanwhile.
fn enqueue_armed<Op: DeviceOperation>(
    op: Op,
    ctx: &ExecutionContext<'_>,
) -> Result<(Op::Output, Arc<Signal>), AsyncError> {
    let stream = ctx.require_stream("scheduling")?;
    let output = op.enqueue(ctx)?;
    let signal = Signal::new();
    let on_done = signal.clone();
    // If this fails, `output` is dropped here: a DeviceBuffer's drop waits
    // for the context's work first, so nothing in use is freed.
    stream.launch_host_fn(move || on_done.complete())?;
    keeper().watch(stream.clone(), signal.clone());
    Ok((output, signal))
}

/// Enqueues `op` on `ctx` and blocks the thread (on a condition variable)
/// until the GPU has done it.
pub(crate) fn run_blocking<Op: DeviceOperation>(
    op: Op,
    ctx: &ExecutionContext<'_>,
) -> Result<Op::Output, AsyncError> {
    keeper().release_finished();
    let (output, signal) = enqueue_armed(op, ctx)?;
    signal.wait()?;
    Ok(output)
}

/// Buried outputs of dropped, unfinished futures that are still waiting for
/// their work to finish.
pub fn pending_releases() -> usize {
    keeper().pending()
}

/// How many buried outputs have been released so far (process-wide).
pub fn released_count() -> usize {
    keeper().released()
}

/// Releases at once the buried outputs whose work has finished (the
/// keeper thread does this by itself as soon as it is told; this is for
/// callers that want it done before they go on). Returns how many.
pub fn release_finished() -> usize {
    keeper().release_finished()
}
