//! CUDA Graphs on the CPU: stream capture, graphs built node by node,
//! instantiation, replay and parameter updates.
//!
//! A [`Graph`] is a list of nodes, each with the nodes it depends on; a node
//! may only depend on nodes added before it, so the list's order is a
//! dependency order, and an instantiated graph ([`Exec`], a deep copy taken
//! at instantiation) runs its nodes in that order on the stream it is
//! launched on, with the operations a stream runs (launch, copy, fill, host
//! function, event record).
//!
//! Capture: a stream that captures ([`Capture`], held by the stream in
//! `driver.rs`) records each operation submitted to it as a node depending
//! on the stream's last ones, instead of running it. A kernel node keeps a
//! copy of its arguments, sized by the module's PTX (device-code mode) or
//! by the sizes the launcher gave with the host code (host-code mode). An
//! event recorded in a capture carries the capture's position; a stream
//! that waits on it joins the capture there (a fork), and the capture ends
//! only when every forked stream's work has been waited on again by a
//! stream of the capture (a join), else `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`.
//! A synchronisation of a capturing stream, or of the context while one
//! captures, invalidates the capture (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`
//! for the call, `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` at its end).
//!
//! Memory nodes: `cuMemAllocAsync` on a capturing stream records an
//! allocation node ([`GraphMemory`]) and `cuMemFreeAsync` of its address a
//! free node; `cuGraphAddMemAllocNode` and `cuGraphAddMemFreeNode` add them
//! to a graph directly. The driver maps a graph's allocations at addresses fixed when
//! the node is made, and each launch allocates and frees them; here the
//! memory is mapped once, when the node is recorded, and shared by the graph
//! and its execs (unmapped with the last of them). Each launch fills it
//! with a pattern at the allocation node, as uninitialised memory, so that
//! nothing can rely on what an earlier launch left there.
//!
//! Conditional nodes: a condition (`cuGraphConditionalHandleCreate`) is an
//! entry of a process-wide table ([`CONDITIONS`]) and its handle the entry's
//! index plus one; a kernel sets it with `cudaGraphSetConditional` (the
//! host-code hook, or ptx-vm's builtin in device-code mode). A launch first
//! assigns their defaults to the conditions of its graph made with
//! `CU_GRAPH_COND_ASSIGN_DEFAULT`; an IF node then runs its body once if its
//! condition is nonzero (its second, ELSE, body if it has one and the
//! condition is zero), a WHILE node runs its body as long as it is, a
//! SWITCH node the body of the condition's value (none past the last). The
//! bodies are graphs owned by the node (their addresses are what
//! `cuGraphAddNode` hands out), filled with the ordinary node calls. The
//! driver keeps a condition's value per instantiated graph; here the execs
//! of one graph share it, which differs only for two execs of one graph
//! running at once, which the emulator's in-order streams never do.

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use cuda_driver_sys::{
    CUevent, CUfunction, CUgraph, CUgraphNode, CUhostFn, CUresult, CUDA_ERROR_INVALID_VALUE as INVALID_VALUE,
    CU_GRAPH_NODE_TYPE_EMPTY, CU_GRAPH_NODE_TYPE_EVENT_RECORD, CU_GRAPH_NODE_TYPE_GRAPH, CU_GRAPH_NODE_TYPE_HOST,
    CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_WAIT_EVENT,
};

use crate::context::Context;
use crate::engine::{Grid, HostKernel};
use crate::module::{Code, Function};

/// A kernel node: the launch with a copy of its arguments.
#[derive(Clone, Debug)]
pub(crate) struct KernelOp {
    pub(crate) function: CUfunction,
    pub(crate) grid: Grid,
    pub(crate) cluster: Option<(u32, u32, u32)>,
    pub(crate) cooperative: bool,
    /// One copy per parameter, 8-byte aligned.
    args: Vec<Box<[u64]>>,
    /// `kernelParams` pointing into `args` (rebuilt by [`KernelOp::params`]).
    ptrs: Vec<*mut c_void>,
    pub(crate) host_code: Option<HostKernel>,
}

impl KernelOp {
    /// A kernel node for `function` whose parameters are at `params`
    /// (copied now). Fails (with the reason) where the parameter sizes are
    /// unknown.
    ///
    /// # Safety
    /// `function` must be a live function of this driver and `params` hold
    /// one pointer per kernel parameter, to that many bytes.
    pub(crate) unsafe fn new(
        function: CUfunction,
        grid: Grid,
        cluster: Option<(u32, u32, u32)>,
        cooperative: bool,
        params: *const *mut c_void,
        host_code: Option<HostKernel>,
    ) -> Result<KernelOp, String> {
        // SAFETY: a live function (caller).
        let f = unsafe { &*function.cast::<Function>() };
        let host_code = host_code.or_else(|| *f.host_code.lock().unwrap_or_else(|p| p.into_inner()));
        let sizes = param_sizes(f, host_code.as_ref())?;
        if !sizes.is_empty() && params.is_null() {
            return Err(format!("kernel `{}` takes {} parameters and kernelParams is null", f.name.to_string_lossy(), sizes.len()));
        }
        let args = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let mut arg = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
                // SAFETY: parameter `i` points to `size` bytes (caller).
                unsafe { std::ptr::copy_nonoverlapping(*params.add(i) as *const u8, arg.as_mut_ptr().cast::<u8>(), size) };
                arg
            })
            .collect();
        Ok(KernelOp { function, grid, cluster, cooperative, args, ptrs: Vec::new(), host_code })
    }

    /// `kernelParams` for this node's copy of the arguments, valid while
    /// the node is neither changed nor dropped.
    pub(crate) fn params(&mut self) -> *mut *mut c_void {
        self.ptrs = self.args.iter_mut().map(|a| a.as_mut_ptr().cast::<c_void>()).collect();
        if self.ptrs.is_empty() {
            std::ptr::null_mut()
        } else {
            self.ptrs.as_mut_ptr()
        }
    }
}

/// The bytes of each parameter of `f`: the launcher's sizes that came with
/// its host code, else the parsed PTX's.
fn param_sizes(f: &Function, host_code: Option<&HostKernel>) -> Result<Vec<usize>, String> {
    if let Some(sizes) = host_code.and_then(HostKernel::param_sizes) {
        return Ok(sizes.to_vec());
    }
    // SAFETY: a function's module outlives it.
    let module = unsafe { &*f.module };
    let name = f.name.to_string_lossy();
    match &module.code {
        Code::Program(program) => program
            .kernel_params(&name)
            .map(|layout| layout.iter().map(|p| p.size).collect())
            .ok_or_else(|| format!("the module has no kernel `{name}`")),
        Code::Unparsed { .. } | Code::Binary => Err(format!(
            "cannot capture kernel `{name}` into a graph: its parameter sizes are unknown (in host-code mode \
             only launches through cuda-host's typed launch carry them)"
        )),
    }
}

/// What a node does.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Empty,
    Kernel(KernelOp),
    Memcpy { dst: u64, src: u64, bytes: usize },
    Memset { dst: u64, pitch: usize, value: u32, element_size: u32, width: usize, height: usize },
    Host { func: CUhostFn, data: *mut c_void },
    Child(Box<Graph>),
    EventRecord(CUevent),
    /// Waits for the event: nothing to do where every stream's work has run
    /// by the time the next is submitted.
    EventWait(#[allow(dead_code)] CUevent),
    /// An IF, WHILE or SWITCH node (`CU_GRAPH_COND_TYPE_*`) on condition
    /// `handle`, with its bodies (an IF's second is its ELSE); `handles` is
    /// the array of body handles `cuGraphAddNode` hands out (the original
    /// node's; a copy's is never read).
    Conditional {
        handle: u64,
        kind: u32,
        // Boxed: a body's handle is its address, which must not move.
        #[allow(clippy::vec_box)]
        bodies: Vec<Box<Graph>>,
        #[allow(dead_code)] // kept alive: the caller's `ph_graph_out` points into it
        handles: Box<[CUgraph]>,
    },
    /// An allocation node: the memory the graph owns.
    MemAlloc(Arc<GraphMemory>),
    /// A free node of the allocation at this address.
    MemFree(u64),
}

/// The memory of an allocation node, mapped when the node is recorded and
/// unmapped with the last graph or exec that holds the node.
#[derive(Debug)]
pub(crate) struct GraphMemory {
    pub(crate) ptr: u64,
    pub(crate) bytes: usize,
}

impl Drop for GraphMemory {
    fn drop(&mut self) {
        crate::memory::free(self.ptr);
    }
}

/// The byte an allocation node writes over its memory at each launch.
pub(crate) const UNINITIALISED: u8 = 0xA5;

impl Op {
    /// The node's `CUgraphNodeType`.
    pub(crate) fn kind(&self) -> i32 {
        match self {
            Op::Empty => CU_GRAPH_NODE_TYPE_EMPTY,
            Op::Kernel(_) => CU_GRAPH_NODE_TYPE_KERNEL,
            Op::Memcpy { .. } => CU_GRAPH_NODE_TYPE_MEMCPY,
            Op::Memset { .. } => CU_GRAPH_NODE_TYPE_MEMSET,
            Op::Host { .. } => CU_GRAPH_NODE_TYPE_HOST,
            Op::Child(_) => CU_GRAPH_NODE_TYPE_GRAPH,
            Op::EventRecord(_) => CU_GRAPH_NODE_TYPE_EVENT_RECORD,
            Op::EventWait(_) => CU_GRAPH_NODE_TYPE_WAIT_EVENT,
            Op::Conditional { .. } => cuda_driver_sys::CU_GRAPH_NODE_TYPE_CONDITIONAL,
            Op::MemAlloc(_) => cuda_driver_sys::CU_GRAPH_NODE_TYPE_MEM_ALLOC,
            Op::MemFree(_) => cuda_driver_sys::CU_GRAPH_NODE_TYPE_MEM_FREE,
        }
    }
}

/// One node: its position, what it waits for, what it does.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) deps: Vec<usize>,
    pub(crate) op: Op,
}

/// A graph. Boxed nodes: a node's handle is its address, which must not
/// move as the graph grows.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    #[allow(clippy::vec_box)]
    pub(crate) nodes: Vec<Box<Node>>,
}

impl Clone for Graph {
    fn clone(&self) -> Graph {
        Graph { nodes: self.nodes.iter().map(|n| Box::new(Node { deps: n.deps.clone(), op: n.op.clone() })).collect() }
    }
}

impl Graph {
    /// The index of the node whose handle is `node`, if it is one of ours.
    pub(crate) fn index_of(&self, node: CUgraphNode) -> Option<usize> {
        self.nodes.iter().position(|n| std::ptr::eq(&**n, node.cast::<Node>()))
    }

    /// The handle of node `index`.
    pub(crate) fn handle(&self, index: usize) -> CUgraphNode {
        &*self.nodes[index] as *const Node as CUgraphNode
    }

    /// Adds a node after the nodes `deps` (handles of this graph's nodes).
    ///
    /// # Safety
    /// `deps` must point to `n` handles (or be null with `n` 0).
    pub(crate) unsafe fn add(&mut self, deps: *const CUgraphNode, n: usize, op: Op) -> Result<CUgraphNode, CUresult> {
        let deps = match n {
            0 => &[][..],
            _ if deps.is_null() => return Err(INVALID_VALUE),
            // SAFETY: `n` handles (caller).
            _ => unsafe { std::slice::from_raw_parts(deps, n) },
        };
        let deps = deps.iter().map(|&d| self.index_of(d).ok_or(INVALID_VALUE)).collect::<Result<Vec<_>, _>>()?;
        Ok(self.push(deps, op))
    }

    /// Adds a node after the nodes of indices `deps`; returns its handle.
    pub(crate) fn push(&mut self, mut deps: Vec<usize>, op: Op) -> CUgraphNode {
        deps.sort_unstable();
        deps.dedup();
        self.nodes.push(Box::new(Node { deps, op }));
        self.handle(self.nodes.len() - 1)
    }

    /// Whether `other` has this graph's nodes, kinds and edges (what
    /// `cuGraphExecUpdate` needs), and kernel nodes of the same context.
    pub(crate) fn same_shape(&self, other: &Graph) -> Result<(), i32> {
        use cuda_driver_sys::{
            CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED as TYPE, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED as TOPOLOGY,
            CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE as FUNCTION,
        };
        if self.nodes.len() != other.nodes.len() {
            return Err(TOPOLOGY);
        }
        for (a, b) in self.nodes.iter().zip(&other.nodes) {
            if a.deps != b.deps {
                return Err(TOPOLOGY);
            }
            match (&a.op, &b.op) {
                (Op::Child(x), Op::Child(y)) => x.same_shape(y)?,
                (Op::Conditional { kind: k, bodies: x, .. }, Op::Conditional { kind: l, bodies: y, .. }) => {
                    if k != l || x.len() != y.len() {
                        return Err(TYPE);
                    }
                    for (x, y) in x.iter().zip(y) {
                        x.same_shape(y)?
                    }
                }
                (Op::Kernel(x), Op::Kernel(y)) if context_of(x.function) != context_of(y.function) => return Err(FUNCTION),
                (x, y) if x.kind() != y.kind() => return Err(TYPE),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Graph {
    /// The handles of the conditions this graph's conditional nodes read,
    /// in its bodies and child graphs too.
    pub(crate) fn conditions(&self, out: &mut Vec<u64>) {
        for node in &self.nodes {
            match &node.op {
                Op::Conditional { handle, bodies, .. } => {
                    out.push(*handle);
                    bodies.iter().for_each(|b| b.conditions(out));
                }
                Op::Child(child) => child.conditions(out),
                _ => {}
            }
        }
    }

    /// Whether a condition made for this graph or one of its conditional
    /// nodes' bodies is read by no conditional node: the driver then
    /// refuses to instantiate it (`CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED`;
    /// an H200 answers `CUDA_ERROR_INVALID_VALUE`).
    pub(crate) fn has_unused_condition(&self) -> bool {
        fn graphs(g: &Graph, out: &mut Vec<usize>) {
            out.push(g as *const Graph as usize);
            for node in &g.nodes {
                if let Op::Conditional { bodies, .. } = &node.op {
                    bodies.iter().for_each(|b| graphs(b, out));
                }
            }
        }
        let (mut mine, mut read) = (Vec::new(), Vec::new());
        graphs(self, &mut mine);
        self.conditions(&mut read);
        let all = lock(&CONDITIONS);
        // A handle is its condition's index plus one.
        all.iter()
            .enumerate()
            .any(|(i, c)| mine.contains(&c.graph.load(Ordering::Relaxed)) && !read.contains(&(i as u64 + 1)))
    }

    /// Whether this graph may be a conditional node's body: kernels,
    /// copies, memsets, empty nodes, child graphs and conditional nodes only
    /// (what the driver allows there), recursively.
    pub(crate) fn fits_a_body(&self) -> bool {
        self.nodes.iter().all(|n| match &n.op {
            Op::Empty | Op::Kernel(_) | Op::Memcpy { .. } | Op::Memset { .. } => true,
            Op::Child(g) => g.fits_a_body(),
            Op::Conditional { bodies, .. } => bodies.iter().all(|g| g.fits_a_body()),
            Op::Host { .. } | Op::EventRecord(_) | Op::EventWait(_) | Op::MemAlloc(_) | Op::MemFree(_) => false,
        })
    }

    /// Whether the graph has allocation or free nodes (the driver refuses
    /// such a graph as a child).
    pub(crate) fn has_memory_nodes(&self) -> bool {
        self.nodes.iter().any(|n| matches!(n.op, Op::MemAlloc(_) | Op::MemFree(_)))
    }

    /// Whether an allocation node of this graph made `ptr` and no free node
    /// has freed it yet.
    pub(crate) fn allocated_unfreed(&self, ptr: u64) -> bool {
        let allocated = self.nodes.iter().any(|n| matches!(&n.op, Op::MemAlloc(m) if m.ptr == ptr));
        allocated && !self.nodes.iter().any(|n| matches!(n.op, Op::MemFree(p) if p == ptr))
    }
}

impl Drop for Graph {
    /// Retires the conditions made for this graph (see [`Condition::graph`]).
    fn drop(&mut self) {
        let me = self as *const Graph as usize;
        for c in lock(&CONDITIONS).iter() {
            let _ = c.graph.compare_exchange(me, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

/// A condition of conditional nodes (`cuGraphConditionalHandleCreate`).
#[derive(Debug)]
pub(crate) struct Condition {
    /// The graph whose nodes may use it (its address); 0 once that graph
    /// is gone, so that a later graph at the same address does not
    /// inherit it.
    pub(crate) graph: std::sync::atomic::AtomicUsize,
    /// The value assigned at each launch when `reset`.
    pub(crate) default: u32,
    /// `CU_GRAPH_COND_ASSIGN_DEFAULT`.
    pub(crate) reset: bool,
    /// The current value (set by kernels from any emulated thread).
    pub(crate) value: std::sync::atomic::AtomicU32,
}

/// Every condition made; a handle is its index plus one (0 is no handle).
/// Entries are never removed: a handle stays a valid index after its graph
/// is gone (a kernel that uses it then writes a value no graph reads).
pub(crate) static CONDITIONS: Mutex<Vec<Arc<Condition>>> = Mutex::new(Vec::new());

/// The condition of `handle`, if it is one.
pub(crate) fn condition(handle: u64) -> Option<Arc<Condition>> {
    let index = usize::try_from(handle.checked_sub(1)?).ok()?;
    lock(&CONDITIONS).get(index).cloned()
}

/// `cudaGraphSetConditional`: sets the value of condition `handle`, or says
/// why it cannot.
pub(crate) fn set_conditional(handle: u64, value: u32) -> Result<(), String> {
    match condition(handle) {
        Some(c) => {
            c.value.store(value, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
        None => Err(format!(
            "cudaGraphSetConditional was given {handle:#x}, which no cuGraphConditionalHandleCreate returned"
        )),
    }
}

/// The context of a function of this driver.
pub(crate) fn context_of(function: CUfunction) -> *const Context {
    // SAFETY: a live function; its module outlives it.
    unsafe { (*(*function.cast::<Function>()).module).context as *const Context }
}

/// An instantiated graph: a copy of the graph it was made from, and the
/// handles of that graph's nodes (by index), which name its nodes in
/// `cuGraphExecKernelNodeSetParams`.
#[derive(Debug)]
pub(crate) struct Exec {
    pub(crate) graph: Graph,
    pub(crate) handles: Vec<CUgraphNode>,
}

/// One capture sequence: the graph it records into and the streams in it.
pub(crate) struct Sequence {
    /// The graph (made by the capture, or the one given to
    /// `cuStreamBeginCaptureToGraph`).
    pub(crate) graph: *mut Graph,
    /// Whether the capture made `graph` (and frees it if it fails).
    pub(crate) owns_graph: bool,
    /// A sync call or an error broke it.
    pub(crate) invalidated: bool,
    /// The stream that began it (its address).
    pub(crate) origin: usize,
    /// The streams that joined it through an event (their addresses).
    pub(crate) forked: Vec<usize>,
    /// Nodes some stream of the capture waited on (joined).
    pub(crate) joined: Vec<usize>,
    /// The context it runs in.
    pub(crate) context: &'static Context,
    /// Its id (`cuStreamGetCaptureInfo`).
    pub(crate) id: u64,
    /// `CUstreamCaptureMode`.
    pub(crate) mode: i32,
    /// The thread that began it (thread-local mode watches only its calls).
    pub(crate) thread: std::thread::ThreadId,
}

impl Sequence {
    /// Whether a call that synchronises, made by the calling thread, breaks
    /// this capture (the capture mode's rule).
    pub(crate) fn watches_this_thread(&self) -> bool {
        use cuda_driver_sys::{CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
        match self.mode {
            CU_STREAM_CAPTURE_MODE_GLOBAL => true,
            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL => self.thread == std::thread::current().id(),
            _ => false,
        }
    }
}

// SAFETY: the graph pointer is owned by the sequence (or by the caller of
// cuStreamBeginCaptureToGraph) and only touched under the sequence's lock.
unsafe impl Send for Sequence {}

/// A stream's part in a capture: the sequence and the nodes the stream's
/// next operation depends on.
pub(crate) struct Capture {
    pub(crate) sequence: Arc<Mutex<Sequence>>,
    pub(crate) deps: Vec<usize>,
}

/// The capture sequences under way (for `cuCtxSynchronize`).
pub(crate) static SEQUENCES: Mutex<Vec<Arc<Mutex<Sequence>>>> = Mutex::new(Vec::new());

/// The next sequence id.
pub(crate) fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Locks, forgiving poison (the data stays consistent: every update is one
/// assignment or push).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Graphs made by the driver (created or captured) and not yet destroyed.
pub(crate) static LIVE_GRAPHS: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);
/// Instantiated graphs not yet destroyed.
pub(crate) static LIVE_EXECS: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

/// Counts one graph (`+1`) or exec made, or one destroyed (`-1`).
pub(crate) fn count(which: &std::sync::atomic::AtomicIsize, delta: isize) {
    which.fetch_add(delta, std::sync::atomic::Ordering::SeqCst);
}

/// How many graphs (created with `cuGraphCreate` or by a capture) and
/// instantiated graphs the emulated driver holds now: what a test compares
/// before and after to see that nothing leaked.
pub fn live_graph_objects() -> (isize, isize) {
    use std::sync::atomic::Ordering::SeqCst;
    (LIVE_GRAPHS.load(SeqCst), LIVE_EXECS.load(SeqCst))
}
