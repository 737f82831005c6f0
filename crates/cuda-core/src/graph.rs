//! CUDA Graphs: record work once, launch it many times.
//!
//! A [`Graph`] is a set of operations (kernel launches, copies, memsets,
//! host functions, other graphs) with the dependencies between them. It is
//! made in one of two ways:
//!
//! * **capture**: [`CudaStream::capture`] (or [`CudaStream::begin_capture`]
//!   and [`StreamCapture::end`]) records what is queued on the stream
//!   (typed launches, `cuda_launch!`, copies between device buffers,
//!   memsets) instead of running it;
//! * **explicit build**: [`Graph::new`], then [`Graph::add_kernel`] (a typed
//!   launch, with the same compile-time argument checks), [`Graph::add_copy`],
//!   [`Graph::add_memset`], [`Graph::add_host`], [`Graph::add_event_record`],
//!   [`Graph::add_event_wait`], [`Graph::add_empty`] and [`Graph::add_child`],
//!   each after the nodes it depends on; [`Graph::add_temp`] adds temporary
//!   memory (an allocation node, the nodes that use it, a free node).
//!
//! Conditional nodes decide on the GPU whether ([`Graph::add_conditional_if`],
//! with an ELSE body [`Graph::add_conditional_if_else`]), which
//! ([`Graph::add_conditional_switch`]) or how often
//! ([`Graph::add_conditional_while`]) their body runs, from a
//! [`GraphCondition`] ([`Graph::condition`]) that a kernel of the graph sets
//! through its [`handle`](GraphCondition::handle) with
//! `cuda_device::graph::set_condition`. The body is a [`BodyGraph`], filled
//! with the same `add_*` calls, that borrows the graph until it is dropped;
//! the bodies of an IF/ELSE or SWITCH node come one at a time from its
//! [`ConditionalBodies`].
//!
//! [`Graph::instantiate`] makes a [`GraphExec`], which [`GraphExec::launch`]
//! runs on a stream as one submission, as often as wanted. The kernel
//! arguments of an instantiated graph change in place with
//! [`GraphExec::set_kernel_params`] (again a typed launch) or, for every
//! node at once, with [`GraphExec::update`] from a graph of the same shape.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuda_core::{CudaContext, DeviceBuffer};
//!
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.new_stream()?; // the legacy default stream cannot capture
//! let mut data = DeviceBuffer::<u32>::zeroed(&stream, 1024)?;
//! let graph = stream.capture(|s| {
//!     data.memset(s, 0x01)?; // recorded, not run
//!     // ... typed launches on `s` ...
//!     Ok::<_, cuda_core::DriverError>(())
//! })?;
//! let exec = graph.instantiate()?;
//! for _ in 0..100 {
//!     exec.launch(&stream)?;
//! }
//! assert_eq!(data.to_host_vec(&stream)?[0], 0x0101_0101);
//! # Ok(()) }
//! ```
//!
//! # What a graph keeps, and what it refuses
//!
//! A graph runs later than the calls that made it, so it cannot borrow what
//! they used. Device buffers used by a graph's nodes (as kernel arguments,
//! or by copies and memsets) are noted by their stream order (see
//! `stream_order.rs`): every launch of the graph is ordered after the other
//! streams' uses of them, their own free waits for the launch, and a launch
//! after one of them was dropped is refused with
//! [`GraphError::BufferDropped`]. A buffer of another context is refused
//! when the capture ends ([`GraphError::ForeignBuffer`]). The modules of
//! its kernels stay loaded while a graph or exec holds them, and the host
//! functions of its host nodes while any may still run. What a graph
//! cannot replay safely breaks the capture, with the error naming it: a
//! synchronisation (of the stream or the context), a copy from or to host
//! memory (a graph would read or write it on every launch, long after the
//! borrow ended), a `launch_host_fn` (it runs once; [`Graph::add_host`]
//! and [`CudaStream::launch_host_fn_replayable`] take a function a graph
//! may call again), the allocation of a [`DeviceBuffer`] on the
//! capturing stream (it could outlive the capture; a temporary the graph
//! owns, an allocation node, is a [`TempBuffer`](crate::TempBuffer)), or the
//! drop of a buffer allocated on it; and in a
//! kernel node ([`Graph::add_kernel`]), a cluster or cooperative launch,
//! whose attribute the node would not keep. The capture
//! ends then with [`GraphError::CaptureInvalidated`], and the partial graph
//! is destroyed. `Graph` and `GraphExec` destroy their driver objects when
//! dropped.
//!
//! # Other threads while a stream captures
//!
//! A capture records the capturing thread's calls only (the driver's
//! thread-local capture mode): other threads keep working on the context's
//! other streams — allocating, copying, freeing, loading modules — without
//! disturbing it. The driver invalidates a capture that a wait for the whole
//! context reaches, whichever thread waits, so cuda-core puts its own such
//! waits off: a [`CudaModule`](crate::CudaModule) dropped while a capture is
//! under way on its context is unloaded (after a wait for the context) when
//! the last capture there ends, and `CudaContext::new` hands out the one
//! live handle of a device, so that a context is released (after a wait)
//! only with its last handle. Two calls of another thread still break a
//! capture in progress, as the driver decides (seen on an H200): an
//! explicit [`CudaContext::synchronize`], and, while a blocking stream
//! ([`CudaContext::new_stream`]) captures, any use of the legacy default
//! stream, which waits for every blocking stream. The capture then ends with
//! [`GraphError::CaptureInvalidated`] (or the driver's error naming the
//! capturing thread's next call); nothing runs and nothing leaks. Capture on
//! a non-blocking stream ([`CudaContext::new_stream_non_blocking`]) in a
//! program whose other threads use the legacy default stream.
//!
//! Raw launches ([`launch_kernel`](crate::launch_kernel)) captured on a
//! stream are recorded too, but their device pointers are the caller's
//! concern (as for the launch itself).
//!
//! On the CPU emulator a graph is a list of its nodes in a dependency
//! order; a launch runs them one after another on the stream.

use std::ffi::c_void;
use std::fmt;
use std::ptr;
use std::sync::{Arc, Mutex, Weak};

use crate::context::{CudaContext, CudaEvent, CudaStream, StreamHandle};
use crate::module::CudaModule;
use crate::driver::{
    cu, CUgraph, CUgraphExec, CUgraphExecUpdateResultInfo, CUgraphNode, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CU_GRAPH_NODE_TYPE_KERNEL,
    CU_MEMORYTYPE_DEVICE, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CUgraphNodeParams, CU_GRAPH_COND_ASSIGN_DEFAULT,
    CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_SWITCH, CU_GRAPH_COND_TYPE_WHILE,
};
use crate::error::{DriverError, ErrorKind};
use crate::memory::DeviceBuffer;
use crate::stream_order::OrderShared;

/// Why a graph could not be made, changed or launched.
#[derive(Debug)]
#[non_exhaustive]
pub enum GraphError {
    /// The capture was broken by a call a graph cannot record; `by` names it.
    CaptureInvalidated {
        /// The call that broke the capture.
        by: String,
    },
    /// A buffer of another context (device) was used in the graph.
    ForeignBuffer {
        /// The device of the buffer's context.
        buffer_device: usize,
        /// The device of the graph's context.
        graph_device: usize,
    },
    /// A stream, event or graph of another context (device) than the graph's.
    ForeignContext {
        /// What it was: "stream", "event", "child graph", "graph".
        what: &'static str,
        /// Its device.
        device: usize,
        /// The device of the graph's context.
        graph_device: usize,
    },
    /// A stream joined the capture (it waited on an event recorded in it)
    /// and its work was not waited on again by the capturing stream.
    Unjoined,
    /// The legacy default stream was asked to capture.
    DefaultStream,
    /// The stream already captures.
    AlreadyCapturing,
    /// [`GraphExec::launch`] on a stream that captures: the driver does not
    /// record a graph launch.
    LaunchIntoCapture,
    /// The closure given to the capture failed; the capture was ended and
    /// its graph destroyed.
    Closure(Box<dyn std::error::Error + Send + Sync>),
    /// [`Graph::add_kernel`] or [`GraphExec::set_kernel_params`] recorded
    /// something else than exactly one kernel launch.
    NotOneKernel {
        /// Nodes the closure recorded.
        nodes: usize,
    },
    /// A node handle of another graph.
    ForeignNode,
    /// [`GraphExec::set_kernel_params`] on a node that is not a kernel node
    /// of the graph the exec was instantiated from.
    NotAKernelNode,
    /// A buffer the graph uses was dropped: the graph would touch freed memory.
    BufferDropped {
        /// How many of the graph's buffers are gone.
        buffers: usize,
    },
    /// [`GraphExec::update`] was refused; `reason` says what differs.
    UpdateRefused {
        /// What the driver found different.
        reason: &'static str,
    },
    /// A condition ([`Graph::condition`]) made for another graph than the
    /// one the conditional node is added to.
    ForeignCondition,
    /// A node a conditional node's body cannot hold (the driver allows
    /// kernels, copies, memsets, empty nodes, child graphs of those and
    /// conditional nodes there); `what` names it.
    NotInBody {
        /// What was refused.
        what: &'static str,
    },
    /// Conditions made with [`Graph::condition`] (or a body's) that no
    /// conditional node reads: the driver refuses to instantiate a graph
    /// with such a handle.
    UnusedCondition {
        /// How many.
        conditions: usize,
    },
    /// The capture ended while temporaries it allocated
    /// ([`CudaStream::alloc_temp_zeroed`]) were alive: their memory would
    /// outlive the graph's launches.
    TempNotFreed {
        /// How many were not dropped.
        buffers: usize,
    },
    /// A capture's temporary given to a node of a graph built node by node:
    /// its memory exists only in its own capture's graph.
    TempInGraph,
    /// What the driver refuses for a graph with allocation nodes (one that
    /// captured temporaries); `what` names it.
    AllocNodes {
        /// What was refused.
        what: &'static str,
    },
    /// A body a conditional node does not have
    /// ([`ConditionalBodies::body`]), or a SWITCH node of no case.
    NoSuchBody {
        /// The body asked for.
        index: usize,
        /// The bodies the node has (or was asked to have).
        bodies: usize,
    },
    /// The driver refused a call.
    Driver(DriverError),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::CaptureInvalidated { by } => write!(
                f,
                "the stream capture was invalidated by {by}: a graph cannot record it; do it before the capture \
                 begins or after it ends (the partial graph was destroyed)"
            ),
            GraphError::ForeignBuffer { buffer_device, graph_device } => write!(
                f,
                "a buffer of device {buffer_device}'s context was used in a graph of device {graph_device}'s \
                 context; copy it to this device first (DeviceBuffer::copy_from_device)"
            ),
            GraphError::ForeignContext { what, device, graph_device } => write!(
                f,
                "a {what} of device {device}'s context was used with a graph of device {graph_device}'s context; \
                 a graph's streams, events and children belong to its own context"
            ),
            GraphError::Unjoined => write!(
                f,
                "a stream joined the capture (it waited on an event recorded during it) and its last work was not \
                 joined back: record an event on that stream and make the capturing stream wait on it before \
                 ending the capture"
            ),
            GraphError::LaunchIntoCapture => write!(
                f,
                "a graph cannot be launched on a stream that is capturing (the driver refuses it): \
                 end the capture first, or add the graph to the one being built with Graph::add_child"
            ),
            GraphError::DefaultStream => write!(
                f,
                "the legacy default stream cannot capture a graph: capture on a stream from CudaContext::new_stream"
            ),
            GraphError::AlreadyCapturing => write!(f, "the stream is already capturing a graph; end that capture first"),
            GraphError::Closure(e) => write!(f, "the capture's closure failed (the capture was ended): {e}"),
            GraphError::NotOneKernel { nodes } => write!(
                f,
                "a kernel node's closure must make exactly one kernel launch on the stream it is given; it recorded \
                 {nodes} node(s) (use CudaStream::capture and Graph::add_child for more)"
            ),
            GraphError::ForeignNode => write!(f, "the node belongs to another graph"),
            GraphError::NotAKernelNode => write!(
                f,
                "the node is not a kernel node of the graph this exec was instantiated from"
            ),
            GraphError::BufferDropped { buffers } => write!(
                f,
                "{buffers} device buffer(s) this graph uses have been dropped: launching it would touch freed \
                 memory; keep the buffers alive as long as the graph is launched, or rebuild the graph"
            ),
            GraphError::UpdateRefused { reason } => write!(
                f,
                "the graph update was refused: {reason}; an update may change parameters only, not the nodes, \
                 their kinds or their dependencies (instantiate the new graph instead)"
            ),
            GraphError::ForeignCondition => write!(
                f,
                "the condition was made for another graph: a conditional node reads a condition of its own graph; \
                 make it with `condition` on the graph (or body) the node is added to"
            ),
            GraphError::NotInBody { what } => write!(
                f,
                "a conditional node's body cannot hold {what}: the driver allows only kernels, copies, memsets, \
                 empty nodes, child graphs of those and conditional nodes there; put it outside the conditional node"
            ),
            GraphError::UnusedCondition { conditions } => write!(
                f,
                "{conditions} condition(s) made with `condition` are read by no conditional node, and the driver \
                 refuses to instantiate a graph with an unused condition: add the conditional node that reads it, \
                 or do not make the condition"
            ),
            GraphError::TempNotFreed { buffers } => write!(
                f,
                "the capture ended while {buffers} temporary buffer(s) it allocated (CudaStream::alloc_temp_zeroed) \
                 were alive: a graph frees its temporaries before it ends, so drop them inside the capture (the \
                 graph was destroyed)"
            ),
            GraphError::TempInGraph => write!(
                f,
                "a capture's temporary buffer was given to a node of another graph: its memory exists only in \
                 the launches of the graph whose capture allocated it; use a DeviceBuffer"
            ),
            GraphError::AllocNodes { what } => write!(
                f,
                "the graph has allocation nodes (it captured temporary buffers), and the driver refuses {what} \
                 for such a graph; capture the work again instead"
            ),
            GraphError::NoSuchBody { index, bodies } => write!(
                f,
                "conditional body {index} was asked of a node with {bodies} bodies: an IF/ELSE node has bodies 0 \
                 (IF) and 1 (ELSE), a SWITCH node one per case (at least one), numbered from 0"
            ),
            GraphError::Driver(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for GraphError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GraphError::Driver(e) => Some(e),
            GraphError::Closure(e) => Some(&**e),
            _ => None,
        }
    }
}

impl From<DriverError> for GraphError {
    fn from(e: DriverError) -> Self {
        GraphError::Driver(e)
    }
}

/// What one capture noted, shared by the stream (`StreamHandle`) while it
/// captures.
#[derive(Debug)]
pub(crate) struct CaptureRecord {
    ctx: usize,
    /// The thread that began the capture (thread-local mode: only its
    /// calls break it).
    thread: std::thread::ThreadId,
    device: usize,
    /// The first call that broke the capture.
    broken: Mutex<Option<String>>,
    /// The device of the first buffer of another context used.
    foreign: Mutex<Option<usize>>,
    buffers: Mutex<Vec<Weak<OrderShared>>>,
    host_fns: Mutex<Vec<Arc<HostFn>>>,
    /// The modules of the kernels launched in the capture.
    modules: Mutex<Vec<Arc<CudaModule>>>,
    /// A kernel node's capture (`Graph::add_kernel`, `set_kernel_params`),
    /// which keeps a launch's grid and arguments but not its attributes.
    plain_launch_only: bool,
    /// Buffers of the capturing stream dropped during the capture: freed
    /// on the stream when it ends, after the other streams' uses.
    deferred_frees: Mutex<Vec<(u64, Arc<OrderShared>)>>,
    /// The addresses of the capture's temporaries (allocation nodes) not
    /// yet freed (free nodes), and whether it made any.
    temps: Mutex<(Vec<u64>, bool)>,
}

/// The captures under way (for [`CudaContext::synchronize`]).
static CAPTURES: Mutex<Vec<Weak<CaptureRecord>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Work that waits for a whole context, put off while captures were under
/// way on it: (the context, the wait and what follows it).
type AfterCaptures = Vec<(usize, Box<dyn FnOnce() + Send>)>;
static AFTER_CAPTURES: Mutex<AfterCaptures> = Mutex::new(Vec::new());

/// Whether a capture is under way on the context `ctx` (its raw handle),
/// on any thread. `all` is the locked registry.
fn capturing(all: &[Weak<CaptureRecord>], ctx: usize) -> bool {
    all.iter().filter_map(Weak::upgrade).any(|c| c.ctx == ctx)
}

/// Runs `work` — a wait for the whole of `ctx` and what must follow it (a
/// module's unload, a free without a stream) — now, or, while a capture is
/// under way on `ctx` on any thread, when the last of them ends: the driver
/// invalidates a capture that a context-wide wait reaches, whichever thread
/// waits. No capture begins while `work` runs.
pub(crate) fn after_captures(ctx: &CudaContext, work: Box<dyn FnOnce() + Send>) {
    let mut all = lock(&CAPTURES);
    all.retain(|c| c.strong_count() > 0);
    if capturing(&all, ctx.raw() as usize) {
        lock(&AFTER_CAPTURES).push((ctx.raw() as usize, work));
        return;
    }
    work();
}

/// After a capture on `ctx` ended: the work put off for it, if no other
/// capture is under way there.
fn run_after_captures(ctx: usize) {
    let all = lock(&CAPTURES);
    if capturing(&all, ctx) {
        return;
    }
    let ready: AfterCaptures = {
        let mut queue = lock(&AFTER_CAPTURES);
        let (ready, rest) = std::mem::take(&mut *queue).into_iter().partition(|(c, _)| *c == ctx);
        *queue = rest;
        ready
    };
    for (_, work) in ready {
        work();
    }
}

impl CaptureRecord {
    /// Notes a buffer used by the capture (`stream` captures).
    pub(crate) fn note_buffer(&self, order: &Arc<OrderShared>, stream: &CudaStream) {
        if !order.in_context(stream.context()) {
            lock(&self.foreign).get_or_insert(order.device());
            return;
        }
        add_buffer(&mut lock(&self.buffers), Arc::downgrade(order));
    }

    /// Notes the module of a kernel launched in the capture: the graph keeps
    /// it loaded.
    pub(crate) fn note_module(&self, module: &Arc<CudaModule>) {
        add_module(&mut lock(&self.modules), module);
    }

    /// Refuses a cluster or cooperative launch into a kernel node's capture
    /// (its attribute would be lost, and a grid-wide sync would hang).
    pub(crate) fn refuse_launch_attribute(&self, what: &'static str) -> Result<(), DriverError> {
        if !self.plain_launch_only {
            return Ok(());
        }
        self.break_with(what);
        Err(refused_in_capture(what))
    }

    /// Breaks the capture (naming `what`) and frees the stream-ordered
    /// allocation `ptr` on the stream once the capture has ended.
    pub(crate) fn defer_free(&self, ptr: u64, order: Arc<OrderShared>, what: &str) {
        self.break_with(what);
        lock(&self.deferred_frees).push((ptr, order));
    }

    /// Notes an allocation node the capture recorded (a temporary at `ptr`).
    pub(crate) fn note_temp(&self, ptr: u64) {
        let mut temps = lock(&self.temps);
        temps.0.push(ptr);
        temps.1 = true;
    }

    /// Notes the free node of the temporary at `ptr`: whether it was one of
    /// the capture's, not yet freed.
    pub(crate) fn temp_freed(&self, ptr: u64) -> bool {
        let mut temps = lock(&self.temps);
        match temps.0.iter().position(|&p| p == ptr) {
            Some(i) => {
                temps.0.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Breaks the capture: `what` is the call that did (the first wins).
    pub(crate) fn break_with(&self, what: &str) {
        lock(&self.broken).get_or_insert_with(|| what.to_string());
    }
}

fn add_module(list: &mut Vec<Arc<CudaModule>>, m: &Arc<CudaModule>) {
    if !list.iter().any(|x| Arc::ptr_eq(x, m)) {
        list.push(m.clone());
    }
}

fn add_buffer(list: &mut Vec<Weak<OrderShared>>, b: Weak<OrderShared>) {
    if !list.iter().any(|x| x.ptr_eq(&b)) {
        list.push(b);
    }
}

/// Breaks every capture under way in `ctx` begun by this thread (captures
/// are thread-local) with `what`; whether there was one.
pub(crate) fn break_captures_of(ctx: &CudaContext, what: &str) -> bool {
    let mut any = false;
    let mut all = lock(&CAPTURES);
    all.retain(|c| c.strong_count() > 0);
    for c in all.iter().filter_map(Weak::upgrade) {
        if c.ctx == ctx.raw() as usize && c.thread == std::thread::current().id() {
            c.break_with(what);
            any = true;
        }
    }
    any
}

/// The error of a call refused because it would break a capture.
pub(crate) fn refused_in_capture(what: &'static str) -> DriverError {
    DriverError::from_code(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, what).with_detail(format!(
        "{what} is not allowed while a stream captures a graph; it broke the capture (its end reports it)"
    ))
}

impl CudaStream {
    /// Whether the stream is capturing a graph (between
    /// [`begin_capture`](Self::begin_capture) and its end).
    pub fn is_capturing(&self) -> bool {
        self.handle().capture().is_some()
    }

    /// Whether the driver counts the stream as capturing
    /// (`cuStreamIsCapturing`): as [`is_capturing`](Self::is_capturing),
    /// and also while it takes part in another stream's capture, having
    /// waited on an event recorded in it, which this crate does not track.
    /// For a library call that must not be recorded into a graph; it asks
    /// the driver each time.
    pub fn is_capturing_in_driver(&self) -> Result<bool, DriverError> {
        if self.is_capturing() {
            return Ok(true);
        }
        let ctx = self.context();
        let d = ctx.bind()?;
        let mut status = crate::driver::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: out-pointer to a local; the stream is live and of this
        // context, which is current.
        unsafe { cu!(d, cuStreamIsCapturing(self.raw(), &mut status)) }.map_err(|e| ctx.explain(e))?;
        Ok(status != crate::driver::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Runs `f` on a driver thread once the work queued before it has
    /// finished, like [`launch_host_fn`](Self::launch_host_fn), but `f` may
    /// be called again, so it may also be queued while the stream captures a
    /// graph: there it becomes a host node that every launch of the graph
    /// calls (the graph and its execs keep `f` alive). Outside a capture it
    /// runs once.
    ///
    /// The rules of `launch_host_fn` hold: `f` must not call CUDA nor drop
    /// a CUDA object; a panic in it is caught and printed. Libraries whose
    /// stream work runs on the host (cuda-blas's CPU reference under the
    /// emulator) use this so that their calls can be captured.
    pub fn launch_host_fn_replayable<F>(&self, f: F) -> Result<(), DriverError>
    where
        F: Fn() + Send + Sync + 'static,
    {
        let Some(capture) = self.handle().capture() else {
            return self.launch_host_fn(f);
        };
        let f = Arc::new(HostFn(Box::new(f)));
        let d = self.context().bind()?;
        // SAFETY: a live stream of the current context; `user_data` is kept
        // alive by the capture's record, then by its graph and every exec
        // made from it, as long as a launch may call it.
        unsafe { cu!(d, cuLaunchHostFunc(self.raw(), host_fn_trampoline, Arc::as_ptr(&f) as *mut c_void)) }
            .map_err(|e| self.context().explain(e))?;
        lock(&capture.host_fns).push(f);
        Ok(())
    }

    /// Fails (and breaks the capture, naming `what`) if the stream captures.
    #[inline]
    pub(crate) fn refuse_in_capture(&self, what: &'static str) -> Result<(), DriverError> {
        if !self.handle().is_capturing() {
            return Ok(());
        }
        self.refuse_capture(what)
    }

    /// [`refuse_in_capture`](Self::refuse_in_capture) on a capturing stream.
    #[cold]
    fn refuse_capture(&self, what: &'static str) -> Result<(), DriverError> {
        match self.handle().capture() {
            Some(capture) => {
                capture.break_with(what);
                Err(refused_in_capture(what))
            }
            None => Ok(()),
        }
    }

    /// Starts recording what is queued on this stream into a graph instead
    /// of running it, until [`StreamCapture::end`] (dropping the guard ends
    /// the capture and destroys its graph). The legacy default stream
    /// cannot capture.
    pub fn begin_capture(&self) -> Result<StreamCapture<'_>, GraphError> {
        let record = start_capture(self, false)?;
        Ok(StreamCapture { stream: self, record: Some(record) })
    }

    /// Captures what `record` queues on the stream it is given (this one)
    /// into a [`Graph`]. If `record` fails, the capture ends, its graph is
    /// destroyed and the error is [`GraphError::Closure`].
    pub fn capture<E>(&self, record: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<Graph, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.capture_with(false, record)
    }

    /// [`capture`](Self::capture), for a kernel node's one plain launch
    /// when `plain_launch_only`.
    fn capture_with<E>(&self, plain_launch_only: bool, record: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<Graph, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let capture = StreamCapture { stream: self, record: Some(start_capture(self, plain_launch_only)?) };
        match record(self) {
            Ok(()) => capture.end(),
            Err(e) => {
                drop(capture);
                Err(GraphError::Closure(e.into()))
            }
        }
    }
}

/// A capture under way on a stream ([`CudaStream::begin_capture`]).
#[derive(Debug)]
pub struct StreamCapture<'a> {
    stream: &'a CudaStream,
    record: Option<Arc<CaptureRecord>>,
}

impl StreamCapture<'_> {
    /// Ends the capture and returns its graph, or why it broke.
    pub fn end(mut self) -> Result<Graph, GraphError> {
        let record = self.record.take().expect("a capture ends once");
        let raw = finish_capture(self.stream, &record)?;
        let buffers = std::mem::take(&mut *lock(&record.buffers));
        let host_fns = std::mem::take(&mut *lock(&record.host_fns));
        let modules = std::mem::take(&mut *lock(&record.modules));
        let keep = Keep { buffers: buffers.into_iter().map(|b| (0, b)).collect(), host_fns, modules, events: Vec::new() };
        let mut graph = Graph::from_raw(self.stream.context().clone(), raw, keep);
        graph.alloc_nodes = lock(&record.temps).1;
        Ok(graph)
    }
}

impl Drop for StreamCapture<'_> {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            if let Ok(raw) = finish_capture(self.stream, &record) {
                destroy_graph(self.stream.context(), raw);
            }
        }
    }
}

/// Begins a capture on `stream` (thread-local mode: unsafe calls from this
/// thread break it).
fn start_capture(stream: &CudaStream, plain_launch_only: bool) -> Result<Arc<CaptureRecord>, GraphError> {
    if stream.is_default() {
        return Err(GraphError::DefaultStream);
    }
    if stream.is_capturing() {
        return Err(GraphError::AlreadyCapturing);
    }
    let ctx = stream.context();
    let d = ctx.bind()?;
    let record = Arc::new(CaptureRecord {
        ctx: ctx.raw() as usize,
        thread: std::thread::current().id(),
        device: ctx.ordinal(),
        broken: Mutex::new(None),
        foreign: Mutex::new(None),
        buffers: Mutex::new(Vec::new()),
        host_fns: Mutex::new(Vec::new()),
        plain_launch_only,
        modules: Mutex::new(Vec::new()),
        deferred_frees: Mutex::new(Vec::new()),
        temps: Mutex::new((Vec::new(), false)),
    });
    // Registered under the registry's lock, so that no context-wide wait of
    // another thread (`after_captures`) runs between the two.
    let mut all = lock(&CAPTURES);
    // SAFETY: a live stream of the current context; a valid mode.
    unsafe { cu!(d, cuStreamBeginCapture_v2(stream.raw(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) }
        .map_err(|e| ctx.explain(e))?;
    all.push(Arc::downgrade(&record));
    drop(all);
    stream.handle().set_capture(Some(record.clone()));
    Ok(record)
}

/// Ends the capture on `stream`: its graph, or why it broke (the graph is
/// destroyed then).
fn finish_capture(stream: &CudaStream, record: &Arc<CaptureRecord>) -> Result<CUgraph, GraphError> {
    let ctx = stream.context();
    stream.handle().set_capture(None);
    lock(&CAPTURES).retain(|c| c.strong_count() > 0 && !ptr::eq(c.as_ptr(), Arc::as_ptr(record)));
    let d = ctx.bind()?;
    let mut raw: CUgraph = ptr::null_mut();
    // SAFETY: a live stream that began a capture; out-pointer to a local.
    let ended = unsafe { cu!(d, cuStreamEndCapture(stream.raw(), &mut raw)) };
    run_after_captures(ctx.raw() as usize);
    // The frees of buffers dropped during the capture, now on the stream,
    // after every use of them on other streams.
    for (ptr, order) in std::mem::take(&mut *lock(&record.deferred_frees)) {
        if order.write_on(stream).is_ok() {
            // SAFETY: a stream-ordered allocation of this context whose
            // buffer was dropped (so freed once, here), ordered after every
            // use queued through the safe API. Errors ignored, as in Drop.
            unsafe { (d.cuMemFreeAsync)(ptr, stream.raw()) };
        }
    }
    let fail = |e: GraphError| {
        destroy_graph(ctx, raw);
        Err(e)
    };
    if let Some(by) = lock(&record.broken).clone() {
        return fail(GraphError::CaptureInvalidated { by });
    }
    if let Err(e) = ended {
        return fail(match e.code() {
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED | CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => GraphError::CaptureInvalidated {
                by: "an operation the driver cannot record (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)".into(),
            },
            CUDA_ERROR_STREAM_CAPTURE_ISOLATION => GraphError::CaptureInvalidated {
                by: "a wait on an event recorded outside the capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION)".into(),
            },
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED => GraphError::Unjoined,
            _ => GraphError::Driver(ctx.explain(e)),
        });
    }
    if let Some(buffer_device) = *lock(&record.foreign) {
        return fail(GraphError::ForeignBuffer { buffer_device, graph_device: record.device });
    }
    let alive = lock(&record.temps).0.len();
    if alive > 0 {
        // Their drops, later, find the capture over and free nothing: the
        // memory was never more than the destroyed graph's.
        return fail(GraphError::TempNotFreed { buffers: alive });
    }
    Ok(raw)
}

fn destroy_graph(ctx: &CudaContext, raw: CUgraph) {
    if raw.is_null() {
        return;
    }
    if let Ok(d) = ctx.bind() {
        // SAFETY: a graph of this context, destroyed once; errors ignored.
        unsafe { (d.cuGraphDestroy)(raw) };
    }
}

/// A host function of a graph, called on every launch.
pub(crate) struct HostFn(Box<dyn Fn() + Send + Sync>);

impl fmt::Debug for HostFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostFn")
    }
}

unsafe extern "C" fn host_fn_trampoline(data: *mut c_void) {
    // SAFETY: `data` is an `Arc<HostFn>`'s pointer, kept alive by every
    // graph and exec that may call it.
    let f = unsafe { &*data.cast::<HostFn>() };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (f.0)())).is_err() {
        eprintln!("cuda-core: a graph host function panicked; the panic was caught");
    }
}

/// What a graph's nodes use: buffers (with the node that uses them; 0 for
/// the whole graph), host functions, and the modules of its kernels (kept
/// loaded: a module's drop waits for the context's work, so an exec in
/// flight finishes first).
#[derive(Clone, Debug, Default)]
struct Keep {
    buffers: Vec<(usize, Weak<OrderShared>)>,
    host_fns: Vec<Arc<HostFn>>,
    modules: Vec<Arc<CudaModule>>,
    events: Vec<Arc<CudaEvent>>,
}

impl Keep {
    fn add(&mut self, node: usize, b: Weak<OrderShared>) {
        if !self.buffers.iter().any(|(n, x)| *n == node && x.ptr_eq(&b)) {
            self.buffers.push((node, b));
        }
    }

    fn extend(&mut self, other: &Keep) {
        for (_, b) in &other.buffers {
            self.add(0, b.clone());
        }
        self.host_fns.extend(other.host_fns.iter().cloned());
        for m in &other.modules {
            add_module(&mut self.modules, m);
        }
        self.events.extend(other.events.iter().cloned());
    }
}

/// A node of a [`Graph`] (a handle: `Copy`, valid as long as its graph).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GraphNode {
    raw: usize,
    graph: u64,
}

fn next_graph_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A graph of operations with their dependencies (see the module docs).
#[derive(Debug)]
pub struct Graph {
    raw: CUgraph,
    /// Owns `raw`, shared with the execs instantiated from it (whose node
    /// handles are this graph's).
    owner: Arc<RawGraph>,
    ctx: Arc<CudaContext>,
    id: u64,
    keep: Keep,
    /// The stream kernel nodes are captured on (made on first use).
    scratch: Option<Arc<CudaStream>>,
    /// Whether it is a conditional node's body (owned by that node).
    in_body: bool,
    /// Whether it has allocation and free nodes (captured temporaries): the
    /// driver then refuses it as a child graph, and a second exec while one
    /// lives.
    alloc_nodes: bool,
    /// Alive while an exec of a graph with allocation nodes is.
    exec_alive: Mutex<Weak<()>>,
    /// Allocation nodes of [`add_temp`](Self::add_temp) without their free
    /// node (its `fill` failed): the graph is not instantiated then.
    unfreed: usize,
}

// SAFETY: a CUgraph is a process-wide handle usable from any thread; every
// change takes `&mut self` and the owner's lock, so no two threads use one
// at once (`Graph` is not `Sync`; an exec's use of its nodes takes the lock).
unsafe impl Send for Graph {}

/// A driver graph, destroyed when its graph and every exec made from it
/// are gone: an exec names its nodes by the graph's node handles.
#[derive(Debug)]
struct RawGraph {
    raw: CUgraph,
    ctx: Arc<CudaContext>,
    /// Held while nodes are added or an exec reads a node.
    lock: Mutex<()>,
    /// The conditions of this graph and its bodies that no conditional
    /// node reads yet (instantiate refuses the graph while there are any).
    unused_conditions: Mutex<Vec<u64>>,
}

// SAFETY: the handle is only used under `lock` (or by its last owner's drop).
unsafe impl Send for RawGraph {}
// SAFETY: see `Send`.
unsafe impl Sync for RawGraph {}

impl Drop for RawGraph {
    fn drop(&mut self) {
        destroy_graph(&self.ctx, self.raw);
    }
}

impl Graph {
    /// An empty graph of `ctx`, for building node by node.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Graph, GraphError> {
        let d = ctx.bind()?;
        let mut raw: CUgraph = ptr::null_mut();
        // SAFETY: out-pointer to a local; flags must be 0.
        unsafe { cu!(d, cuGraphCreate(&mut raw, 0)) }.map_err(|e| ctx.explain(e))?;
        Ok(Graph::from_raw(ctx.clone(), raw, Keep::default()))
    }

    fn from_raw(ctx: Arc<CudaContext>, raw: CUgraph, keep: Keep) -> Graph {
        let owner = Arc::new(RawGraph { raw, ctx: ctx.clone(), lock: Mutex::new(()), unused_conditions: Mutex::new(Vec::new()) });
        Graph { raw, owner, ctx, id: next_graph_id(), keep, scratch: None, in_body: false, alloc_nodes: false, exec_alive: Mutex::new(Weak::new()), unfreed: 0 }
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The raw `CUgraph`.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// The driver handles of `deps`, which must be nodes of this graph.
    fn deps(&self, deps: &[GraphNode]) -> Result<Vec<CUgraphNode>, GraphError> {
        deps.iter().map(|n| if n.graph == self.id { Ok(n.raw as CUgraphNode) } else { Err(GraphError::ForeignNode) }).collect()
    }

    fn node(&self, raw: CUgraphNode) -> GraphNode {
        GraphNode { raw: raw as usize, graph: self.id }
    }

    /// Adds a node through `add(out, graph, deps, n)`.
    fn add_raw(
        &mut self,
        deps: &[GraphNode],
        add: impl FnOnce(&'static crate::driver::DriverApi, *mut CUgraphNode, CUgraph, *const CUgraphNode, usize) -> Result<(), DriverError>,
    ) -> Result<GraphNode, GraphError> {
        let deps = self.deps(deps)?;
        let d = self.ctx.bind()?;
        let mut node: CUgraphNode = ptr::null_mut();
        let _graph = lock(&self.owner.lock);
        add(d, &mut node, self.raw, deps.as_ptr(), deps.len()).map_err(|e| self.ctx.explain(e))?;
        Ok(self.node(node))
    }

    /// Refuses a buffer of another context.
    fn check_buffer<T>(&self, b: &DeviceBuffer<T>) -> Result<(), GraphError> {
        if b.order().temp_of().is_some() {
            return Err(GraphError::TempInGraph);
        }
        if b.context().same(&self.ctx) {
            return Ok(());
        }
        Err(GraphError::ForeignBuffer { buffer_device: b.context().ordinal(), graph_device: self.ctx.ordinal() })
    }

    /// A node that does nothing: a join point for dependencies.
    pub fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode, GraphError> {
        // SAFETY: a live graph; `n` live nodes of it; out-pointer.
        self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddEmptyNode(out, g, deps, n)) })
    }

    /// A node that sets every byte of `dst` to `byte`.
    pub fn add_memset<T>(&mut self, deps: &[GraphNode], dst: &mut DeviceBuffer<T>, byte: u8) -> Result<GraphNode, GraphError> {
        self.check_buffer(dst)?;
        let params = CUDA_MEMSET_NODE_PARAMS {
            dst: dst.device_ptr(),
            pitch: 0,
            value: byte.into(),
            element_size: 1,
            width: dst.size_in_bytes(),
            height: 1,
        };
        let ctx = self.ctx.raw();
        // SAFETY: as for add_empty; the range lies in `dst`, which the graph
        // keeps track of (below).
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemsetNode(out, g, deps, n, &params, ctx)) })?;
        self.keep.add(node.raw, dst.order().weak());
        Ok(node)
    }

    /// A node that copies `src` into `dst` (of the same length).
    pub fn add_copy<T>(&mut self, deps: &[GraphNode], dst: &mut DeviceBuffer<T>, src: &DeviceBuffer<T>) -> Result<GraphNode, GraphError> {
        self.check_buffer(dst)?;
        self.check_buffer(src)?;
        if dst.len() != src.len() {
            return Err(DriverError::new(
                ErrorKind::LengthMismatch,
                format!("a graph copy from {} elements into {}: the lengths must be equal", src.len(), dst.len()),
                "Graph::add_copy",
            )
            .into());
        }
        let params = CUDA_MEMCPY3D::linear(CU_MEMORYTYPE_DEVICE, src.device_ptr(), CU_MEMORYTYPE_DEVICE, dst.device_ptr(), src.size_in_bytes());
        let ctx = self.ctx.raw();
        // SAFETY: as for add_memset; both ranges lie in live buffers.
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemcpyNode(out, g, deps, n, &params, ctx)) })?;
        self.keep.add(node.raw, dst.order().weak());
        self.keep.add(node.raw, src.order().weak());
        Ok(node)
    }

    /// A node that calls `f` on a driver thread each time the graph runs,
    /// after its dependencies. As for [`CudaStream::launch_host_fn`], `f`
    /// must not call CUDA; a panic in it is caught and printed.
    pub fn add_host<F>(&mut self, deps: &[GraphNode], f: F) -> Result<GraphNode, GraphError>
    where
        F: Fn() + Send + Sync + 'static,
    {
        let f = Arc::new(HostFn(Box::new(f)));
        let params = CUDA_HOST_NODE_PARAMS { func: host_fn_trampoline, user_data: Arc::as_ptr(&f) as *mut c_void };
        // SAFETY: as for add_empty; `user_data` stays alive with every graph
        // and exec holding `f` (kept below).
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddHostNode(out, g, deps, n, &params)) })?;
        self.keep.host_fns.push(f);
        Ok(node)
    }

    /// A node that records `event` when the graph reaches it (for timing
    /// with [`CudaEvent::elapsed_ms`], or for other streams to wait on).
    /// The graph keeps the event alive.
    pub fn add_event_record(&mut self, deps: &[GraphNode], event: &Arc<CudaEvent>) -> Result<GraphNode, GraphError> {
        self.check_event(event)?;
        let e = event.raw();
        // SAFETY: as for add_empty; the event is live and kept (below).
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddEventRecordNode(out, g, deps, n, e)) })?;
        self.keep.events.push(event.clone());
        Ok(node)
    }

    /// A node that waits for the last record of `event` (on a stream, or by
    /// another graph's record node) before the nodes after it run. The
    /// graph keeps the event alive.
    pub fn add_event_wait(&mut self, deps: &[GraphNode], event: &Arc<CudaEvent>) -> Result<GraphNode, GraphError> {
        self.check_event(event)?;
        let e = event.raw();
        // SAFETY: as for add_event_record.
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddEventWaitNode(out, g, deps, n, e)) })?;
        self.keep.events.push(event.clone());
        Ok(node)
    }

    /// Refuses an event of another context.
    fn check_event(&self, event: &CudaEvent) -> Result<(), GraphError> {
        if event.context().same(&self.ctx) {
            return Ok(());
        }
        Err(GraphError::ForeignContext { what: "event", device: event.context().ordinal(), graph_device: self.ctx.ordinal() })
    }

    /// A node that runs a copy of `child` (later changes to `child` do not
    /// reach this graph).
    pub fn add_child(&mut self, deps: &[GraphNode], child: &Graph) -> Result<GraphNode, GraphError> {
        if !child.ctx.same(&self.ctx) {
            return Err(GraphError::ForeignContext { what: "child graph", device: child.ctx.ordinal(), graph_device: self.ctx.ordinal() });
        }
        if child.alloc_nodes {
            return Err(GraphError::AllocNodes { what: "a child graph node" });
        }
        if self.in_body && !child.keep.host_fns.is_empty() {
            return Err(GraphError::NotInBody { what: "a child graph with host nodes" });
        }
        if self.in_body && !child.keep.events.is_empty() {
            return Err(GraphError::NotInBody { what: "a child graph with event nodes" });
        }
        let c = child.raw;
        // SAFETY: as for add_empty; `c` is a live graph of this context.
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddChildGraphNode(out, g, deps, n, c)) })?;
        self.keep.extend(&child.keep);
        Ok(node)
    }

    /// A kernel node: `launch` makes one typed launch (`cuda_launch!`, or a
    /// cuda-host launch function) on the stream it is given, which records
    /// it; its arguments get the checks of a typed launch, at compile time
    /// and before the node is made.
    ///
    /// Only the launch's grid, block, shared memory and arguments make the
    /// node: a cluster or cooperative launch is refused here (record it
    /// with [`CudaStream::capture`], which keeps its attributes).
    pub fn add_kernel<E>(&mut self, deps: &[GraphNode], launch: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<GraphNode, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let deps = self.deps(deps)?;
        let scratch = scratch_stream(&mut self.scratch, &self.ctx)?;
        let one = OneKernel::capture(&scratch, launch)?;
        let d = self.ctx.bind()?;
        let mut node: CUgraphNode = ptr::null_mut();
        let _graph = lock(&self.owner.lock);
        // SAFETY: a live graph; live nodes of it; `one.params` points into
        // the scratch graph, alive until `one` drops (the driver copies).
        unsafe { cu!(d, cuGraphAddKernelNode_v2(&mut node, self.raw, deps.as_ptr(), deps.len(), &one.params)) }
            .map_err(|e| self.ctx.explain(e))?;
        for b in &one.buffers {
            self.keep.add(node as usize, b.clone());
        }
        for m in &one.graph.keep.modules {
            add_module(&mut self.keep.modules, m);
        }
        Ok(self.node(node))
    }

    /// The kernel nodes of the graph, in the order the driver lists them
    /// (the order they were recorded, on current drivers and the emulator):
    /// a captured graph's kernel nodes, for [`GraphExec::set_kernel_params`].
    pub fn kernel_nodes(&self) -> Result<Vec<GraphNode>, GraphError> {
        let d = self.ctx.bind()?;
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count.
        unsafe { cu!(d, cuGraphGetNodes(self.raw, ptr::null_mut(), &mut n)) }?;
        // The driver refuses an array of room for nothing (an empty capture,
        // e.g. a one-rank in-place all-reduce, which is no work at all).
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut nodes = vec![ptr::null_mut(); n];
        // SAFETY: room for `n` handles.
        unsafe { cu!(d, cuGraphGetNodes(self.raw, nodes.as_mut_ptr(), &mut n)) }?;
        nodes.truncate(n);
        let mut kernels = Vec::new();
        for node in nodes {
            let mut kind = -1;
            // SAFETY: a node of this graph; out-pointer to a local.
            unsafe { cu!(d, cuGraphNodeGetType(node, &mut kind)) }?;
            if kind == CU_GRAPH_NODE_TYPE_KERNEL {
                kernels.push(self.node(node));
            }
        }
        Ok(kernels)
    }

    /// Temporary memory in a graph built node by node: an allocation node
    /// of `len` values of `T` after `deps`, the nodes `fill` adds through
    /// the [`TempNodes`] it is given (each after the allocation node, and
    /// the only nodes that may use the memory), and a free node after all
    /// of them, which is returned (later nodes depend on it). Each launch
    /// allocates the memory, runs those nodes and frees it; its contents
    /// are undefined at the allocation node (write before reading).
    ///
    /// The graph then has allocation nodes: it may not be a child graph and
    /// has one exec at a time ([`GraphError::AllocNodes`]); a conditional
    /// node's body refuses it ([`GraphError::NotInBody`]). If `fill` fails,
    /// the graph is left with nodes it cannot free: it refuses to be
    /// instantiated ([`GraphError::AllocNodes`]).
    pub fn add_temp<T: crate::DeviceRepr, E>(
        &mut self,
        deps: &[GraphNode],
        len: usize,
        fill: impl FnOnce(&mut TempNodes<'_, T>) -> Result<(), E>,
    ) -> Result<GraphNode, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if self.in_body {
            return Err(GraphError::NotInBody { what: "an allocation node" });
        }
        let bytes = len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b > 0).ok_or_else(|| {
            GraphError::from(DriverError::new(
                ErrorKind::InvalidArgument,
                format!("a graph allocation node of {len} elements of {} bytes: it must be 1 to usize::MAX bytes", std::mem::size_of::<T>()),
                "Graph::add_temp",
            ))
        })?;
        let scratch = scratch_stream(&mut self.scratch, &self.ctx)?;
        let mut params = crate::driver::CUDA_MEM_ALLOC_NODE_PARAMS::on_device(self.ctx.ordinal() as i32, bytes);
        // SAFETY: as for add_empty; `params` asks for `bytes` of device
        // memory of this graph's device, and receives its address.
        let alloc = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemAllocNode(out, g, deps, n, &mut params)) })?;
        // From here on the graph has an allocation node; until the free node
        // is added it cannot be launched safely.
        self.alloc_nodes = true;
        self.unfreed += 1;
        let ptr = params.dptr;
        let buffer = DeviceBuffer::graph_node_memory(ptr, len, &scratch);
        let mut nodes = TempNodes { buffer, ptr, len, bytes, graph: self, alloc, added: Vec::new() };
        fill(&mut nodes).map_err(|e| GraphError::Closure(e.into()))?;
        let TempNodes { added, graph, alloc, .. } = nodes;
        let after = if added.is_empty() { vec![alloc] } else { added };
        // SAFETY: as for add_empty; `ptr` is the allocation node's address,
        // freed once, after every node that may use it.
        let free = graph.add_raw(&after, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemFreeNode(out, g, deps, n, ptr)) })?;
        graph.unfreed -= 1;
        Ok(free)
    }

    /// A condition for this graph's conditional nodes
    /// ([`add_conditional_if`](Self::add_conditional_if),
    /// [`add_conditional_while`](Self::add_conditional_while)), whose
    /// [`handle`](GraphCondition::handle) kernels of the graph receive to set
    /// it. With `Some(default)`, every launch of the graph sets it to
    /// `default` before anything runs. With `None` the launches leave it
    /// alone: it keeps the last value a kernel set, across launches, and a
    /// kernel must set it before a conditional node first reads it (the
    /// driver documents no starting value: an H200 usually starts it at 0,
    /// but not always; the emulator starts it at 0). Every condition must be read by a conditional
    /// node before the graph is instantiated
    /// ([`GraphError::UnusedCondition`]: the driver refuses the graph).
    pub fn condition(&mut self, default: Option<u32>) -> Result<GraphCondition, GraphError> {
        let d = self.ctx.bind()?;
        let (value, flags) = match default {
            Some(v) => (v, CU_GRAPH_COND_ASSIGN_DEFAULT),
            None => (0, 0),
        };
        let mut raw = 0;
        let _graph = lock(&self.owner.lock);
        // SAFETY: a live graph of the current context; out-pointer to a local.
        unsafe { cu!(d, cuGraphConditionalHandleCreate(&mut raw, self.raw, self.ctx.raw(), value, flags)) }
            .map_err(|e| self.ctx.explain(e))?;
        lock(&self.owner.unused_conditions).push(raw);
        Ok(GraphCondition { raw, graph: self.id })
    }

    /// An IF node: after `deps`, its body runs once if `condition` is
    /// nonzero (as a kernel before it set it, or its default). Returns the
    /// node and its body, an empty graph to fill with the usual `add_*`
    /// calls; the body borrows this graph until it is dropped.
    pub fn add_conditional_if(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, BodyGraph<'_>), GraphError> {
        self.add_conditional(deps, condition, CU_GRAPH_COND_TYPE_IF)
    }

    /// A WHILE node: after `deps`, its body runs as long as `condition` is
    /// nonzero, tested before each run (a kernel of the body sets it for the
    /// next test). Returns the node and its body, as
    /// [`add_conditional_if`](Self::add_conditional_if) does.
    pub fn add_conditional_while(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, BodyGraph<'_>), GraphError> {
        self.add_conditional(deps, condition, CU_GRAPH_COND_TYPE_WHILE)
    }

    /// An IF node with an ELSE body: after `deps`, its first body runs once
    /// if `condition` is nonzero, its second once if it is zero. Returns the
    /// node and its two bodies ([`ConditionalBodies`]: `body(0)` the IF
    /// body, `body(1)` the ELSE body). The driver has it from CUDA 12.8 on
    /// (an older one refuses the node).
    pub fn add_conditional_if_else(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, ConditionalBodies<'_>), GraphError> {
        let (node, raws) = self.add_conditional_node(deps, condition, CU_GRAPH_COND_TYPE_IF, 2)?;
        Ok((node, ConditionalBodies::new(self, raws)))
    }

    /// A SWITCH node with `cases` bodies: after `deps`, body `n` runs once
    /// where `n` is the value of `condition`; none runs when it is `cases`
    /// or more. Returns the node and its bodies ([`ConditionalBodies`],
    /// `body(n)` for case `n`). The driver has it from CUDA 12.8 on (an
    /// older one refuses the node); `cases` must be at least 1.
    pub fn add_conditional_switch(
        &mut self,
        deps: &[GraphNode],
        condition: &GraphCondition,
        cases: usize,
    ) -> Result<(GraphNode, ConditionalBodies<'_>), GraphError> {
        let size = u32::try_from(cases).ok().filter(|&c| c >= 1).ok_or(GraphError::NoSuchBody { index: 0, bodies: cases })?;
        let (node, raws) = self.add_conditional_node(deps, condition, CU_GRAPH_COND_TYPE_SWITCH, size)?;
        Ok((node, ConditionalBodies::new(self, raws)))
    }

    fn add_conditional(&mut self, deps: &[GraphNode], condition: &GraphCondition, kind: u32) -> Result<(GraphNode, BodyGraph<'_>), GraphError> {
        let (node, raws) = self.add_conditional_node(deps, condition, kind, 1)?;
        let inner = self.body_graph(raws[0], next_graph_id());
        Ok((node, BodyGraph { inner, parent: self }))
    }

    /// Adds a conditional node of `kind` with `size` bodies: the node and
    /// the bodies' driver graphs (owned by the node).
    fn add_conditional_node(&mut self, deps: &[GraphNode], condition: &GraphCondition, kind: u32, size: u32) -> Result<(GraphNode, Vec<CUgraph>), GraphError> {
        if condition.graph != self.id {
            return Err(GraphError::ForeignCondition);
        }
        let mut params = CUgraphNodeParams::conditional(condition.raw, kind, size, self.ctx.raw());
        // SAFETY: as for add_empty; `params` is a conditional node's, with a
        // handle made for this graph; the driver points `ph_graph_out` to
        // an array of its own, of `size` graphs, alive as long as the node.
        let node = self.add_raw(deps, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddNode(out, g, deps, n, &mut params)) })?;
        lock(&self.owner.unused_conditions).retain(|&c| c != condition.raw);
        let bodies = params.conditional.ph_graph_out;
        if bodies.is_null() {
            return Err(DriverError::new(ErrorKind::InvalidArgument, "the driver gave the conditional node no body graph", "cuGraphAddNode").into());
        }
        // SAFETY: the driver's array of the node's `size` body graphs.
        Ok((node, unsafe { std::slice::from_raw_parts(bodies, size as usize) }.to_vec()))
    }

    /// The wrapper of a conditional node's body `raw` (owned by the node),
    /// named `id`.
    fn body_graph(&self, raw: CUgraph, id: u64) -> Graph {
        Graph {
            raw,
            owner: self.owner.clone(),
            ctx: self.ctx.clone(),
            id,
            keep: Keep::default(),
            scratch: self.scratch.clone(),
            in_body: true,
            alloc_nodes: false,
            exec_alive: Mutex::new(Weak::new()),
            unfreed: 0,
        }
    }

    /// Instantiates the graph: a [`GraphExec`] to launch (the graph may be
    /// changed or dropped afterwards without changing the exec).
    ///
    /// A graph with allocation nodes (it captured temporaries) has one exec
    /// at a time, as the driver allows: a second is refused with
    /// [`GraphError::AllocNodes`] while the first lives.
    pub fn instantiate(&self) -> Result<GraphExec, GraphError> {
        let unused = lock(&self.owner.unused_conditions).len();
        if unused > 0 {
            return Err(GraphError::UnusedCondition { conditions: unused });
        }
        if self.unfreed > 0 {
            return Err(GraphError::AllocNodes { what: "an instantiation after an add_temp whose nodes failed (its memory has no free node)" });
        }
        let mut exec_alive = lock(&self.exec_alive);
        if self.alloc_nodes && exec_alive.strong_count() > 0 {
            return Err(GraphError::AllocNodes { what: "a second exec while one lives (drop it first)" });
        }
        let alloc_token = self.alloc_nodes.then(|| Arc::new(()));
        if let Some(token) = &alloc_token {
            *exec_alive = Arc::downgrade(token);
        }
        let d = self.ctx.bind()?;
        let mut raw: CUgraphExec = ptr::null_mut();
        // SAFETY: a live graph; out-pointer to a local; flags 0.
        unsafe { cu!(d, cuGraphInstantiateWithFlags(&mut raw, self.raw, 0)) }.map_err(|e| self.ctx.explain(e))?;
        let kernel_nodes = match self.kernel_nodes() {
            Ok(k) => k.into_iter().map(|n| n.raw).collect(),
            Err(e) => {
                // SAFETY: made above, destroyed once.
                unsafe { (d.cuGraphExecDestroy)(raw) };
                return Err(e);
            }
        };
        Ok(GraphExec {
            raw,
            ctx: self.ctx.clone(),
            graph: self.id,
            keep: self.keep.clone(),
            kernel_nodes,
            scratch: self.scratch.clone(),
            launched_on: Default::default(),
            source: self.owner.clone(),
            _alloc_token: alloc_token,
        })
    }
}


/// The nodes of a graph that use one allocation node's memory
/// ([`Graph::add_temp`]): each is added after the allocation node, and the
/// free node after all of them. The memory is lent to a kernel node's
/// launch closure only; copies and memsets of it have their own calls.
///
/// ```compile_fail
/// # fn f(ctx: &std::sync::Arc<cuda_core::CudaContext>) -> Result<(), cuda_core::GraphError> {
/// let mut g = cuda_core::Graph::new(ctx)?;
/// let mut kept = None;
/// g.add_temp::<u32, cuda_core::GraphError>(&[], 16, |t| {
///     kept = Some(t); // the nodes of the memory cannot leave the call
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TempNodes<'g, T> {
    graph: &'g mut Graph,
    alloc: GraphNode,
    /// The memory, refused everywhere but in the kernel node being captured.
    buffer: DeviceBuffer<T>,
    /// The allocation's address, length and bytes (kept apart from
    /// `buffer`, which a launch closure could swap for another).
    ptr: u64,
    len: usize,
    bytes: usize,
    added: Vec<GraphNode>,
}

impl<T: crate::DeviceRepr> TempNodes<'_, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none (never: an allocation node has a size).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `deps` and the allocation node.
    fn after(&self, deps: &[GraphNode]) -> Vec<GraphNode> {
        let mut all = deps.to_vec();
        all.push(self.alloc);
        all
    }

    fn added(&mut self, node: GraphNode) -> GraphNode {
        self.added.push(node);
        node
    }

    /// A kernel node after `deps` (and the allocation): `launch` makes one
    /// typed launch on the stream it is given, with the memory as the
    /// buffer it is lent ([`Graph::add_kernel`]'s rules).
    pub fn add_kernel<E>(
        &mut self,
        deps: &[GraphNode],
        launch: impl FnOnce(&CudaStream, &mut DeviceBuffer<T>) -> Result<(), E>,
    ) -> Result<GraphNode, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let after = self.after(deps);
        let buffer = &mut self.buffer;
        let node = self.graph.add_kernel(&after, |s| {
            // Only this kernel node's capture may use the memory, and only
            // while it records.
            buffer.order().allow_temp_in(s.handle().capture().as_ref());
            let launched = launch(s, buffer);
            buffer.order().allow_temp_in(None);
            launched
        });
        self.buffer.order().allow_temp_in(None);
        let node = node?;
        Ok(self.added(node))
    }

    /// A node after `deps` (and the allocation) that sets every byte of the
    /// memory to `byte`.
    pub fn add_memset(&mut self, deps: &[GraphNode], byte: u8) -> Result<GraphNode, GraphError> {
        let after = self.after(deps);
        let params = CUDA_MEMSET_NODE_PARAMS {
            dst: self.ptr,
            pitch: 0,
            value: byte.into(),
            element_size: 1,
            width: self.bytes,
            height: 1,
        };
        let ctx = self.graph.ctx.raw();
        // SAFETY: as for Graph::add_memset; the range is the allocation's,
        // and the node lies between its allocation and free nodes.
        let node = self.graph.add_raw(&after, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemsetNode(out, g, deps, n, &params, ctx)) })?;
        Ok(self.added(node))
    }

    /// A node after `deps` (and the allocation) that copies `src` (of the
    /// same length) into the memory.
    pub fn add_copy_from(&mut self, deps: &[GraphNode], src: &DeviceBuffer<T>) -> Result<GraphNode, GraphError> {
        self.graph.check_buffer(src)?;
        self.check_len(src.len())?;
        let after = self.after(deps);
        let params = CUDA_MEMCPY3D::linear(CU_MEMORYTYPE_DEVICE, src.device_ptr(), CU_MEMORYTYPE_DEVICE, self.ptr, self.bytes);
        let ctx = self.graph.ctx.raw();
        // SAFETY: as for Graph::add_copy; `src` is kept track of (below).
        let node = self.graph.add_raw(&after, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemcpyNode(out, g, deps, n, &params, ctx)) })?;
        self.graph.keep.add(node.raw, src.order().weak());
        Ok(self.added(node))
    }

    /// A node after `deps` (and the allocation) that copies the memory into
    /// `dst` (of the same length).
    pub fn add_copy_to(&mut self, deps: &[GraphNode], dst: &mut DeviceBuffer<T>) -> Result<GraphNode, GraphError> {
        self.graph.check_buffer(dst)?;
        self.check_len(dst.len())?;
        let after = self.after(deps);
        let params = CUDA_MEMCPY3D::linear(CU_MEMORYTYPE_DEVICE, self.ptr, CU_MEMORYTYPE_DEVICE, dst.device_ptr(), self.bytes);
        let ctx = self.graph.ctx.raw();
        // SAFETY: as for Graph::add_copy; `dst` is kept track of (below).
        let node = self.graph.add_raw(&after, |d, out, g, deps, n| unsafe { cu!(d, cuGraphAddMemcpyNode(out, g, deps, n, &params, ctx)) })?;
        self.graph.keep.add(node.raw, dst.order().weak());
        Ok(self.added(node))
    }

    /// An empty node after `deps` (and the allocation): a join point.
    pub fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode, GraphError> {
        let after = self.after(deps);
        let node = self.graph.add_empty(&after)?;
        Ok(self.added(node))
    }

    fn check_len(&self, other: usize) -> Result<(), GraphError> {
        if other == self.len {
            return Ok(());
        }
        Err(DriverError::new(
            ErrorKind::LengthMismatch,
            format!("a copy between a graph allocation of {} elements and a buffer of {other}: the lengths must be equal", self.len),
            "TempNodes copy",
        )
        .into())
    }
}

/// A condition of a graph's conditional nodes ([`Graph::condition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GraphCondition {
    raw: u64,
    /// The id of the graph (or body) it was made for.
    graph: u64,
}

impl GraphCondition {
    /// The handle to pass to the graph's kernels, which set the condition
    /// with `cuda_device::graph::set_condition` (see its contract: one
    /// thread, and only in a launch of this graph).
    pub fn handle(&self) -> cuda_device::graph::ConditionHandle {
        // SAFETY: `raw` is what cuGraphConditionalHandleCreate returned for
        // the graph of `self.graph`; using it only while that graph runs is
        // the contract of `set_condition`, the one call that reads it.
        unsafe { cuda_device::graph::ConditionHandle::from_raw(self.raw) }
    }
}

/// The body of a conditional node ([`Graph::add_conditional_if`],
/// [`Graph::add_conditional_while`]): a graph the node owns, filled with
/// kernels, copies, memsets, empty nodes, child graphs and further
/// conditional nodes. It borrows the graph it belongs to, so it is filled
/// before that graph is used again (instantiated, given other nodes, or
/// dropped); what its nodes use (buffers, modules) is kept by that graph
/// from then on.
///
/// ```compile_fail
/// # fn f(ctx: &std::sync::Arc<cuda_core::CudaContext>) -> Result<(), cuda_core::GraphError> {
/// let mut g = cuda_core::Graph::new(ctx)?;
/// let keep_going = g.condition(Some(1))?;
/// let (_, mut body) = g.add_conditional_while(&[], &keep_going)?;
/// drop(g); // the body cannot outlive its graph
/// body.add_empty(&[])?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BodyGraph<'g> {
    inner: Graph,
    parent: &'g mut Graph,
}

impl BodyGraph<'_> {
    /// A kernel node in the body ([`Graph::add_kernel`]).
    pub fn add_kernel<E>(&mut self, deps: &[GraphNode], launch: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<GraphNode, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.inner.add_kernel(deps, launch)
    }

    /// A copy node in the body ([`Graph::add_copy`]).
    pub fn add_copy<T>(&mut self, deps: &[GraphNode], dst: &mut DeviceBuffer<T>, src: &DeviceBuffer<T>) -> Result<GraphNode, GraphError> {
        self.inner.add_copy(deps, dst, src)
    }

    /// A memset node in the body ([`Graph::add_memset`]).
    pub fn add_memset<T>(&mut self, deps: &[GraphNode], dst: &mut DeviceBuffer<T>, byte: u8) -> Result<GraphNode, GraphError> {
        self.inner.add_memset(deps, dst, byte)
    }

    /// An empty node in the body ([`Graph::add_empty`]).
    pub fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode, GraphError> {
        self.inner.add_empty(deps)
    }

    /// A child graph in the body ([`Graph::add_child`]); one with host or
    /// event nodes is refused ([`GraphError::NotInBody`]).
    pub fn add_child(&mut self, deps: &[GraphNode], child: &Graph) -> Result<GraphNode, GraphError> {
        self.inner.add_child(deps, child)
    }

    /// A condition for the conditional nodes of this body ([`Graph::condition`]).
    pub fn condition(&mut self, default: Option<u32>) -> Result<GraphCondition, GraphError> {
        self.inner.condition(default)
    }

    /// A nested IF node ([`Graph::add_conditional_if`]), on a condition of this body.
    pub fn add_conditional_if(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, BodyGraph<'_>), GraphError> {
        self.inner.add_conditional_if(deps, condition)
    }

    /// A nested WHILE node ([`Graph::add_conditional_while`]), on a condition of this body.
    pub fn add_conditional_while(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, BodyGraph<'_>), GraphError> {
        self.inner.add_conditional_while(deps, condition)
    }

    /// A nested IF/ELSE node ([`Graph::add_conditional_if_else`]), on a condition of this body.
    pub fn add_conditional_if_else(&mut self, deps: &[GraphNode], condition: &GraphCondition) -> Result<(GraphNode, ConditionalBodies<'_>), GraphError> {
        self.inner.add_conditional_if_else(deps, condition)
    }

    /// A nested SWITCH node ([`Graph::add_conditional_switch`]), on a condition of this body.
    pub fn add_conditional_switch(
        &mut self,
        deps: &[GraphNode],
        condition: &GraphCondition,
        cases: usize,
    ) -> Result<(GraphNode, ConditionalBodies<'_>), GraphError> {
        self.inner.add_conditional_switch(deps, condition, cases)
    }
}

/// The bodies of an IF/ELSE or SWITCH node
/// ([`Graph::add_conditional_if_else`], [`Graph::add_conditional_switch`]):
/// graphs the node owns, filled one at a time through
/// [`body`](Self::body). Like a [`BodyGraph`], it borrows the graph it
/// belongs to until it is dropped.
///
/// ```compile_fail
/// # fn f(ctx: &std::sync::Arc<cuda_core::CudaContext>) -> Result<(), cuda_core::GraphError> {
/// let mut g = cuda_core::Graph::new(ctx)?;
/// let which = g.condition(Some(0))?;
/// let (_, mut cases) = g.add_conditional_switch(&[], &which, 3)?;
/// let mut first = cases.body(0)?;
/// let mut second = cases.body(1)?; // one body at a time: `first` still borrows them
/// first.add_empty(&[])?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ConditionalBodies<'g> {
    /// The bodies' driver graphs and the ids their wrappers carry (the same
    /// each time a body is filled, so its nodes and conditions stay valid).
    bodies: Vec<(CUgraph, u64)>,
    parent: &'g mut Graph,
}

impl<'g> ConditionalBodies<'g> {
    fn new(parent: &'g mut Graph, raws: Vec<CUgraph>) -> Self {
        ConditionalBodies { bodies: raws.into_iter().map(|raw| (raw, next_graph_id())).collect(), parent }
    }

    /// How many bodies the node has (2 for IF/ELSE, the cases of a SWITCH).
    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// Whether the node has no body (never: a node has at least one).
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    /// Body `index`, to fill with the usual `add_*` calls (it may be taken
    /// again later). [`GraphError::NoSuchBody`] past the last.
    pub fn body(&mut self, index: usize) -> Result<BodyGraph<'_>, GraphError> {
        let Some(&(raw, id)) = self.bodies.get(index) else {
            return Err(GraphError::NoSuchBody { index, bodies: self.bodies.len() });
        };
        let inner = self.parent.body_graph(raw, id);
        Ok(BodyGraph { inner, parent: &mut *self.parent })
    }
}

impl Drop for BodyGraph<'_> {
    fn drop(&mut self) {
        // The graph that owns the body keeps what the body's nodes use.
        self.parent.keep.extend(&self.inner.keep);
        if self.parent.scratch.is_none() {
            self.parent.scratch = self.inner.scratch.take();
        }
    }
}

/// The stream kernel nodes are captured on, made on first use.
fn scratch_stream(slot: &mut Option<Arc<CudaStream>>, ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>, GraphError> {
    if let Some(s) = slot {
        return Ok(s.clone());
    }
    let s = ctx.new_stream_non_blocking()?;
    *slot = Some(s.clone());
    Ok(s)
}

/// One kernel launch captured into a graph of its own: its node's
/// parameters (pointing into that graph) and the buffers it uses.
struct OneKernel {
    #[allow(dead_code)] // kept alive: `params` points into it
    graph: Graph,
    params: CUDA_KERNEL_NODE_PARAMS,
    buffers: Vec<Weak<OrderShared>>,
}

impl OneKernel {
    fn capture<E>(stream: &CudaStream, launch: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<OneKernel, GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let graph = stream.capture_with(true, launch)?;
        let d = graph.ctx.bind()?;
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count.
        unsafe { cu!(d, cuGraphGetNodes(graph.raw, ptr::null_mut(), &mut n)) }?;
        let kernels = graph.kernel_nodes()?;
        if n != 1 || kernels.len() != 1 {
            return Err(GraphError::NotOneKernel { nodes: n });
        }
        // SAFETY: all zeroes is a valid (empty) parameter struct to overwrite.
        let mut params: CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        // SAFETY: a kernel node of a live graph; out-pointer to a local.
        unsafe { cu!(d, cuGraphKernelNodeGetParams_v2(kernels[0].raw as CUgraphNode, &mut params)) }?;
        let mut graph = graph;
        let buffers = graph.keep.buffers.drain(..).map(|(_, b)| b).collect();
        // The graph lives on in `OneKernel` (its parameters point into it).
        Ok(OneKernel { graph, params, buffers })
    }
}

/// An instantiated [`Graph`], launched as one submission
/// ([`launch`](Self::launch)) as often as wanted.
#[derive(Debug)]
pub struct GraphExec {
    raw: CUgraphExec,
    ctx: Arc<CudaContext>,
    /// The id of the graph it was instantiated from (whose nodes name its nodes).
    graph: u64,
    keep: Keep,
    kernel_nodes: Vec<usize>,
    scratch: Option<Arc<CudaStream>>,
    /// The streams it was launched on, if it has host nodes: its drop waits
    /// for them before the host functions go.
    launched_on: std::cell::RefCell<Vec<Arc<StreamHandle>>>,
    /// The graph it was made from, whose node handles name its nodes.
    source: Arc<RawGraph>,
    /// For a graph with allocation nodes: alive as long as this exec (the
    /// graph refuses a second exec meanwhile).
    _alloc_token: Option<Arc<()>>,
}

// SAFETY: as for `Graph`: a process-wide handle; changes take `&mut self`,
// and `GraphExec` is not `Sync`, so launches do not race with them.
unsafe impl Send for GraphExec {}

impl GraphExec {
    /// The raw `CUgraphExec`.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Launches the graph on `stream` (after the work already queued
    /// there, and after other streams' uses of the graph's buffers); it is
    /// refused if a buffer the graph uses was dropped, the stream is of
    /// another context, or it is capturing (a graph launch cannot be
    /// captured; [`Graph::add_child`] puts a graph into another).
    pub fn launch(&self, stream: &CudaStream) -> Result<(), GraphError> {
        if !stream.context().same(&self.ctx) {
            return Err(GraphError::ForeignContext { what: "stream", device: stream.context().ordinal(), graph_device: self.ctx.ordinal() });
        }
        // Every buffer is ordered on the stream as written by the launch
        // (ordering without the launch, if one turns out dropped, is harmless).
        if stream.handle().capture().is_some() {
            return Err(GraphError::LaunchIntoCapture);
        }
        let mut dropped = 0;
        for (_, b) in &self.keep.buffers {
            match b.upgrade() {
                None => dropped += 1,
                Some(b) => b.write_on(stream)?,
            }
        }
        if dropped > 0 {
            return Err(GraphError::BufferDropped { buffers: dropped });
        }
        if !self.keep.host_fns.is_empty() && !self.launched_on.borrow().iter().any(|h| Arc::ptr_eq(h, stream.handle())) {
            self.launched_on.borrow_mut().push(stream.handle().clone());
        }
        let d = self.ctx.bind()?;
        // SAFETY: a live exec and a live stream of its context; the buffers
        // it uses are alive (checked above) and their frees wait for it.
        unsafe { cu!(d, cuGraphLaunch(self.raw, stream.raw())) }.map_err(|e| self.ctx.explain(e))?;
        Ok(())
    }

    /// Replaces the arguments (and grid) of kernel node `node` (a node of
    /// the graph this exec was instantiated from) with those of the typed
    /// launch `launch` makes on the stream it is given: the same checks as
    /// a typed launch, at compile time and before the change. The kernel
    /// must be of the same context.
    pub fn set_kernel_params<E>(&mut self, node: GraphNode, launch: impl FnOnce(&CudaStream) -> Result<(), E>) -> Result<(), GraphError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if node.graph != self.graph {
            return Err(GraphError::ForeignNode);
        }
        if !self.kernel_nodes.contains(&node.raw) {
            return Err(GraphError::NotAKernelNode);
        }
        let scratch = scratch_stream(&mut self.scratch, &self.ctx)?;
        let one = OneKernel::capture(&scratch, launch)?;
        let d = self.ctx.bind()?;
        let _graph = lock(&self.source.lock);
        // SAFETY: a live exec; a kernel node of its graph; parameters that
        // point into the live scratch graph (the driver copies them).
        unsafe { cu!(d, cuGraphExecKernelNodeSetParams_v2(self.raw, node.raw as CUgraphNode, &one.params)) }
            .map_err(|e| self.ctx.explain(e))?;
        self.keep.buffers.retain(|(n, _)| *n != node.raw);
        for b in &one.buffers {
            self.keep.add(node.raw, b.clone());
        }
        for m in &one.graph.keep.modules {
            add_module(&mut self.keep.modules, m);
        }
        Ok(())
    }

    /// Updates every node's parameters from `graph`, which must have the
    /// same nodes, kinds and dependencies as the graph this exec was made
    /// from (a graph built or captured the same way, with other arguments).
    /// A graph with allocation nodes is refused, on either side
    /// ([`GraphError::AllocNodes`]): the new graph's nodes would use its own
    /// allocations' addresses, which this exec's allocation nodes do not map.
    pub fn update(&mut self, graph: &Graph) -> Result<(), GraphError> {
        if !graph.ctx.same(&self.ctx) {
            return Err(GraphError::ForeignContext { what: "graph", device: graph.ctx.ordinal(), graph_device: self.ctx.ordinal() });
        }
        if graph.alloc_nodes || self._alloc_token.is_some() {
            return Err(GraphError::AllocNodes { what: "a whole-graph update (instantiate the new graph instead)" });
        }
        let d = self.ctx.bind()?;
        let mut info = CUgraphExecUpdateResultInfo { result: 0, error_node: ptr::null_mut(), error_from_node: ptr::null_mut() };
        // SAFETY: a live exec and graph; out-pointer to a local.
        match unsafe { cu!(d, cuGraphExecUpdate_v2(self.raw, graph.raw, &mut info)) } {
            Ok(()) => {
                self.keep = graph.keep.clone();
                Ok(())
            }
            Err(e) if e.code() == crate::driver::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => {
                Err(GraphError::UpdateRefused { reason: update_reason(info.result) })
            }
            Err(e) => Err(self.ctx.explain(e).into()),
        }
    }
}

/// What a `CUgraphExecUpdateResult` means.
fn update_reason(result: i32) -> &'static str {
    match result {
        2 => "the nodes or their dependencies differ",
        3 => "a node's kind differs",
        4 | 7 => "a kernel node's function changed in a way the driver cannot apply",
        5 => "a node's parameters changed in a way the driver cannot apply",
        6 => "a node of the graph cannot be updated",
        8 => "a node's attributes changed",
        _ => "the driver gave no reason",
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if let Ok(d) = self.ctx.bind() {
            // Its host nodes may still be queued: their functions are freed
            // with the exec, so wait for the streams that may run them.
            for stream in self.launched_on.get_mut().drain(..) {
                // SAFETY: a live stream (the handle keeps it); errors ignored.
                unsafe { (d.cuStreamSynchronize)(stream.raw()) };
            }
            // SAFETY: made by cuGraphInstantiateWithFlags, destroyed once;
            // the driver finishes launches in flight first. Errors ignored.
            unsafe { (d.cuGraphExecDestroy)(self.raw) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_broke_and_what_to_do() {
        let e = GraphError::CaptureInvalidated { by: "CudaStream::synchronize".into() };
        assert!(e.to_string().contains("invalidated by CudaStream::synchronize"), "{e}");
        assert!(e.to_string().contains("before the capture begins"), "{e}");
        let e = GraphError::BufferDropped { buffers: 2 };
        assert!(e.to_string().contains("2 device buffer(s)"), "{e}");
        let e = GraphError::ForeignBuffer { buffer_device: 1, graph_device: 0 };
        assert!(e.to_string().contains("device 1's context"), "{e}");
        let e = GraphError::ForeignContext { what: "stream", device: 1, graph_device: 0 };
        assert!(e.to_string().starts_with("a stream of device 1's context was used with a graph of device 0's"), "{e}");
        assert_eq!(update_reason(2), "the nodes or their dependencies differ");
    }
}
