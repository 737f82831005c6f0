//! The CUDA driver API on host memory: what `libcuda.so.1` would answer, for
//! the emulator's one device.
//!
//! Device memory is host memory (a device pointer is the host address), so
//! copies are `memcpy`s and kernels read buffers directly. Every stream runs
//! its work at submission, in order: a copy or a launch has finished when the
//! call returns, events complete when recorded (stamped with the host clock),
//! and host functions run at once on the submitting thread. A kernel fault
//! makes its context unusable (sticky), as on the GPU, until that context is
//! destroyed (`context.rs`); streams and events answer for the context they
//! were made in, everything else for the calling thread's current context.

#![allow(non_snake_case)] // the entry points keep the driver's names

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void, CStr, CString};
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cuda_driver_sys::{
    builtin_name, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUhostFn, CUlaunchAttribute, CUlaunchConfig, CUmodule,
    CUmemoryPool, CUoccupancyB2DSize, CUresult, CUstream, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_HANDLE as INVALID_HANDLE, CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_VALUE as INVALID_VALUE, CUDA_ERROR_NOT_FOUND as NOT_FOUND,
    CUDA_ERROR_NOT_SUPPORTED as NOT_SUPPORTED, CUDA_ERROR_OUT_OF_MEMORY as OUT_OF_MEMORY, CUDA_SUCCESS as SUCCESS,
    CU_EVENT_DISABLE_TIMING, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
    CU_LIMIT_STACK_SIZE, CUgraph, CUgraphNode, CUgraphExec, CUstreamCaptureStatus, CUgraphNodeType, CUDA_KERNEL_NODE_PARAMS,
    CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_HOST_NODE_PARAMS, CUgraphExecUpdateResultInfo, CUgraphConditionalHandle, CUgraphNodeParams,
    CU_GRAPH_NODE_TYPE_CONDITIONAL, CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE, CU_GRAPH_COND_TYPE_SWITCH, CU_GRAPH_COND_ASSIGN_DEFAULT,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED as STREAM_CAPTURE_UNSUPPORTED,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED as STREAM_CAPTURE_INVALIDATED,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED as STREAM_CAPTURE_UNMATCHED,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED as STREAM_CAPTURE_UNJOINED,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION as STREAM_CAPTURE_ISOLATION, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
    CUDA_ERROR_INVALID_CLUSTER_SIZE as INVALID_CLUSTER_SIZE,
    CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_INVALIDATED,
    CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE, CU_GRAPH_EXEC_UPDATE_SUCCESS,
    CUmemLocation, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
};

use crate::context::{self, Context};
use crate::graph::{lock, Capture, Exec, Graph, KernelOp, Op, Sequence, SEQUENCES};
use crate::engine::Grid;
use crate::error::LaunchError;
use crate::launch::{launch, Launch};
use crate::module::{Function, Module};

fn host_alloc(bytes: usize) -> Option<*mut u8> {
    crate::memory::alloc(bytes)
}

fn host_free(p: u64) -> CUresult {
    match crate::memory::free(p) {
        true => SUCCESS,
        false if p == 0 => SUCCESS,
        false => INVALID_VALUE,
    }
}

/// A stream: the context it was made in, and its part in a capture.
struct Stream {
    context: &'static Context,
    capture: Mutex<Option<Capture>>,
}

struct Event {
    context: &'static Context,
    recorded: Mutex<Option<Instant>>,
    /// Made without `CU_EVENT_DISABLE_TIMING`: `cuEventElapsedTime` takes it.
    timing: bool,
    /// Recorded in a capture: the sequence and the nodes before the record
    /// (a stream that waits on it joins the capture there).
    captured: Mutex<Option<CapturePoint>>,
}

/// A point of a capture: its sequence and the nodes before it.
type CapturePoint = (Arc<Mutex<Sequence>>, Vec<usize>);

/// The stream behind a handle (None for the legacy default stream).
///
/// # Safety
/// `s` must be null or a live stream of this driver.
unsafe fn stream_ref<'a>(s: CUstream) -> Option<&'a Stream> {
    // SAFETY: the caller's contract.
    unsafe { s.cast::<Stream>().as_ref() }
}

/// Records `op` into the capture of stream `s`, if it captures: `None`
/// when it does not (the caller runs the operation), else the result.
/// An `op` that fails invalidates the capture.
///
/// # Safety
/// `s` must be null or a live stream of this driver.
unsafe fn record_op(s: CUstream, op: impl FnOnce() -> Result<Op, CUresult>) -> Option<CUresult> {
    // SAFETY: the caller's contract.
    let stream = unsafe { stream_ref(s) }?;
    let mut capture = lock(&stream.capture);
    let c = capture.as_mut()?;
    let mut sequence = lock(&c.sequence);
    if sequence.invalidated {
        return Some(STREAM_CAPTURE_INVALIDATED);
    }
    match op() {
        Ok(op) => {
            // SAFETY: the sequence's graph lives until the capture ends.
            let graph = unsafe { &mut *sequence.graph };
            graph.push(std::mem::take(&mut c.deps), op);
            c.deps = vec![graph.nodes.len() - 1];
            Some(SUCCESS)
        }
        Err(code) => {
            sequence.invalidated = true;
            Some(code)
        }
    }
}

/// `cuMemFreeAsync` of `p` on `s` if it captures: a free node when an
/// allocation node of the capture made `p` (and none freed it yet), else the
/// capture is invalidated (a graph frees only its own allocations here).
/// `None` if `s` does not capture.
///
/// # Safety
/// As for [`record_op`].
unsafe fn record_free(s: CUstream, p: CUdeviceptr) -> Option<CUresult> {
    // SAFETY: the caller's contract.
    let stream = unsafe { stream_ref(s) }?;
    let owned = {
        let capture = lock(&stream.capture);
        let sequence = lock(&capture.as_ref()?.sequence);
        // SAFETY: the sequence's graph lives until the capture ends.
        unsafe { &*sequence.graph }.allocated_unfreed(p)
    };
    if !owned {
        // SAFETY: the caller's contract.
        return unsafe { refuse_in_capture(s) };
    }
    // SAFETY: the caller's contract.
    unsafe { record_op(s, || Ok(Op::MemFree(p))) }
}

/// Invalidates the capture of `s` if it captures: a call that
/// synchronises (which a capture cannot record) was made on it.
///
/// # Safety
/// As for [`record_op`].
unsafe fn refuse_in_capture(s: CUstream) -> Option<CUresult> {
    // SAFETY: the caller's contract.
    let stream = unsafe { stream_ref(s) }?;
    let capture = lock(&stream.capture);
    lock(&capture.as_ref()?.sequence).invalidated = true;
    Some(STREAM_CAPTURE_UNSUPPORTED)
}

/// A launch on a capturing stream, recorded as a kernel node with a copy of
/// its arguments: `None` if the stream does not capture.
///
/// # Safety
/// As for [`crate::launch`].
pub(crate) unsafe fn capture_launch(launch: &Launch<'_>) -> Option<Result<(), LaunchError>> {
    let mut reason = None;
    // SAFETY: the caller's contract.
    let code = unsafe {
        record_op(launch.stream, || {
            KernelOp::new(launch.function, launch.grid, launch.cluster, launch.cooperative, launch.params, launch.host_code.copied())
                .map(Op::Kernel)
                .map_err(|e| {
                    reason = Some(e);
                    INVALID_VALUE
                })
        })
    }?;
    Some(match (code, reason) {
        (SUCCESS, _) => Ok(()),
        (_, Some(reason)) => Err(LaunchError::Invalid { reason }),
        (code, None) => Err(LaunchError::Context(code)),
    })
}

/// The status of the context of stream `s` (the calling thread's current
/// context for the legacy default stream).
///
/// # Safety
/// `s` must be null or a live stream of this driver.
unsafe fn stream_status(s: CUstream) -> CUresult {
    // SAFETY: the caller's contract.
    match unsafe { s.cast::<Stream>().as_ref() } {
        Some(stream) => stream.context.status(),
        None => context::current_status(),
    }
}

macro_rules! table {
    ($($name:ident),* $(,)?) => {
        /// The emulator's entry point named `name`, as `dlsym` would give it.
        pub(crate) fn symbol(name: &CStr) -> *mut c_void {
            match name.to_bytes() {
                $(n if n == stringify!($name).as_bytes() => $name as *mut c_void,)*
                _ => ptr::null_mut(),
            }
        }
    };
}

table!(
    cuGetErrorName, cuGetErrorString, cuInit, cuDriverGetVersion, cuDeviceGet, cuDeviceGetCount,
    cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem_v2, cuDevicePrimaryCtxRetain,
    cuDevicePrimaryCtxRelease_v2, cuCtxGetCurrent, cuCtxSetCurrent, cuCtxSynchronize, cuCtxGetLimit, cuCtxSetLimit,
    cuStreamCreate, cuStreamDestroy_v2,
    cuStreamSynchronize, cuStreamQuery, cuStreamWaitEvent, cuLaunchHostFunc, cuEventCreate,
    cuEventDestroy_v2, cuEventRecord, cuEventQuery, cuEventSynchronize, cuEventElapsedTime,
    cuMemGetInfo_v2, cuMemcpyDtoDAsync_v2, cuMemcpyPeerAsync, cuMemsetD16Async, cuMemsetD32Async,
    cuMemAlloc_v2, cuMemFree_v2, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemsetD8Async,
    cuMemcpyHtoD_v2, cuMemHostAlloc, cuMemHostGetDevicePointer_v2, cuMemFreeHost, cuModuleGetGlobal_v2,
    cuModuleLoadDataEx, cuModuleUnload, cuModuleGetFunction, cuFuncGetAttribute, cuFuncSetAttribute,
    cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxActiveClusters,
    cuLaunchKernel,
    cuLaunchKernelEx, cuMemAllocAsync, cuMemFreeAsync, cuDeviceGetDefaultMemPool, cuMemPoolSetAttribute,
    cuMemPoolGetAttribute, cuMemPoolTrimTo,
    cuStreamBeginCapture_v2, cuStreamBeginCaptureToGraph, cuStreamEndCapture, cuStreamIsCapturing,
    cuStreamGetCaptureInfo_v3, cuGraphCreate, cuGraphAddKernelNode_v2, cuGraphKernelNodeGetParams_v2,
    cuGraphAddMemcpyNode, cuGraphAddMemsetNode, cuGraphAddHostNode, cuGraphAddEmptyNode, cuGraphAddChildGraphNode,
    cuGraphAddEventRecordNode, cuGraphAddEventWaitNode, cuGraphGetNodes, cuGraphNodeGetType,
    cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecKernelNodeSetParams_v2, cuGraphExecUpdate_v2,
    cuGraphExecDestroy, cuGraphDestroy, cuGraphConditionalHandleCreate, cuGraphAddNode, cuGraphAddMemAllocNode,
    cuGraphAddMemFreeNode,
    cuMemAllocManaged, cuMemPrefetchAsync_v2, cuMemAdvise_v2, cuMemRangeGetAttribute, cuDeviceCanAccessPeer,
    cuCtxEnablePeerAccess, cuCtxDisablePeerAccess,
);

/// The device totals the emulator reports.
const TOTAL_MEMORY: usize = 16 << 30;

fn cores() -> c_int {
    std::thread::available_parallelism().map_or(1, |n| n.get() as c_int)
}

unsafe extern "C" fn cuGetErrorName(code: CUresult, out: *mut *const c_char) -> CUresult {
    match builtin_name(code) {
        Some((name, _)) => {
            // SAFETY: the caller passes a writable out-pointer.
            unsafe { *out = intern(name) };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}

unsafe extern "C" fn cuGetErrorString(code: CUresult, out: *mut *const c_char) -> CUresult {
    match builtin_name(code) {
        Some((_, text)) => {
            // SAFETY: the caller passes a writable out-pointer.
            unsafe { *out = intern(text) };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}

/// A C string for `text` that lives for the whole program (one per text).
fn intern(text: &'static str) -> *const c_char {
    static STRINGS: Mutex<Vec<(&'static str, CString)>> = Mutex::new(Vec::new());
    let mut all = STRINGS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c)) = all.iter().find(|(t, _)| *t == text) {
        return c.as_ptr();
    }
    let c = CString::new(text).unwrap_or_default();
    let p = c.as_ptr();
    all.push((text, c)); // the CString's heap buffer does not move
    p
}

unsafe extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    SUCCESS
}
unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = 13000 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGet(d: *mut CUdevice, ordinal: c_int) -> CUresult {
    if ordinal != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *d = 0 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGetCount(n: *mut c_int) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *n = 1 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGetName(buf: *mut c_char, len: c_int, _d: CUdevice) -> CUresult {
    let name = b"oxide CPU emulator\0";
    let n = name.len().min(len.max(0) as usize);
    // SAFETY: `buf` holds `len` bytes (caller); we write at most that.
    unsafe { ptr::copy_nonoverlapping(name.as_ptr().cast(), buf, n) };
    SUCCESS
}
/// The compute capability of the GPU the emulator models (major, minor):
/// what `cuDeviceGetAttribute` reports and what `arch::compute_capability()`
/// answers in the host-code emulator (hooks.rs).
pub(crate) const COMPUTE_CAPABILITY: (i32, i32) = (9, 0);

unsafe extern "C" fn cuDeviceGetAttribute(v: *mut c_int, attribute: c_int, _d: CUdevice) -> CUresult {
    let value = match attribute {
        1 => 1024,
        2 | 3 => 1024,
        4 => 64,
        5 => i32::MAX,
        6 | 7 => 65535,
        8 => crate::limits::SHARED_PER_BLOCK as c_int,
        9 => 64 * 1024,
        10 => 32,
        12 => 65536,
        16 => cores(),
        38 => 0, // the L2's size: no cache is modelled (cuda-prims then prefetches at every size)
        39 => 2048,
        75 => COMPUTE_CAPABILITY.0,
        76 => COMPUTE_CAPABILITY.1,
        81 => crate::limits::SHARED_PER_MULTIPROCESSOR as c_int,
        97 => crate::limits::SHARED_PER_BLOCK_OPTIN as c_int,
        83 | 89 => 1, // managed memory, and host access while kernels run (managed.rs)
        111 => crate::limits::RESERVED_SHARED_PER_BLOCK as c_int,
        115 => 1, // memory pools: stream-ordered allocation (mem_pool.rs)
        _ => 0,
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = value };
    SUCCESS
}
unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, _d: CUdevice) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *bytes = TOTAL_MEMORY };
    SUCCESS
}
unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, d: CUdevice) -> CUresult {
    if d != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *ctx = context::retain_primary().handle() };
    SUCCESS
}
unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(_d: CUdevice) -> CUresult {
    context::release_primary();
    SUCCESS
}
unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CUresult {
    let current = context::current().map_or(ptr::null_mut(), Context::handle);
    // SAFETY: writable out-pointer (caller).
    unsafe { *ctx = current };
    SUCCESS
}
unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    // SAFETY: the caller passes null or a context handle of this driver.
    context::set_current(unsafe { Context::from_handle(ctx) });
    SUCCESS
}
unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    // A context-wide sync while a stream of the context captures breaks
    // that capture, as on the GPU: in global mode from any thread, in
    // thread-local mode from the thread that began it.
    if let Some(context) = context::current() {
        let mut refused = false;
        for sequence in lock(&SEQUENCES).iter() {
            let mut sequence = lock(sequence);
            if std::ptr::eq(sequence.context, context) && sequence.watches_this_thread() {
                sequence.invalidated = true;
                refused = true;
            }
        }
        if refused {
            return STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    context::current_status()
}
/// The emulator keeps only the stack limit: it accepts and remembers it per
/// context (its threads run on host stacks of their own, so the value changes
/// nothing else), which lets tests see what a launch asked the driver for.
unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    if limit != CU_LIMIT_STACK_SIZE {
        return INVALID_VALUE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *value = context.stack_limit() };
    context.status()
}
unsafe extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    if limit != CU_LIMIT_STACK_SIZE {
        return INVALID_VALUE;
    }
    context.set_stack_limit(value);
    context.status()
}
unsafe extern "C" fn cuStreamCreate(s: *mut CUstream, _flags: c_uint) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    // SAFETY: writable out-pointer (caller).
    unsafe { *s = Box::into_raw(Box::new(Stream { context, capture: Mutex::new(None) })).cast() };
    SUCCESS
}
unsafe extern "C" fn cuStreamDestroy_v2(s: CUstream) -> CUresult {
    if !s.is_null() {
        // SAFETY: made by cuStreamCreate, destroyed once.
        let stream = unsafe { Box::from_raw(s.cast::<Stream>()) };
        // A stream destroyed in the middle of a capture breaks it.
        let capture = lock(&stream.capture).take();
        if let Some(c) = capture {
            let mut sequence = lock(&c.sequence);
            sequence.invalidated = true;
            sequence.forked.retain(|&f| f != s as usize);
        }
    }
    SUCCESS
}
unsafe extern "C" fn cuStreamSynchronize(s: CUstream) -> CUresult {
    // SAFETY: a stream of this driver or null (caller).
    if let Some(code) = unsafe { refuse_in_capture(s) } {
        return code;
    }
    // SAFETY: a stream of this driver or null (caller).
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuStreamQuery(s: CUstream) -> CUresult {
    // SAFETY: as for cuStreamSynchronize.
    if let Some(code) = unsafe { refuse_in_capture(s) } {
        return code;
    }
    // SAFETY: as for cuStreamSynchronize.
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuStreamWaitEvent(s: CUstream, e: CUevent, _flags: c_uint) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    let event = unsafe { &*e.cast::<Event>() };
    // An event of a capture that has ended marks nothing any more.
    let captured = lock(&event.captured).clone().filter(|(q, _)| lock(&SEQUENCES).iter().any(|l| Arc::ptr_eq(l, q)));
    // SAFETY: as for cuStreamSynchronize.
    let stream = unsafe { stream_ref(s) };
    let mut capture = stream.map(|s| lock(&s.capture));
    match (capture.as_mut().and_then(|c| c.as_mut()), captured) {
        // Within one capture: the stream's next work also waits for the
        // event's nodes, which are joined.
        (Some(c), Some((sequence, deps))) if Arc::ptr_eq(&c.sequence, &sequence) => {
            lock(&sequence).joined.extend(deps.iter().copied());
            c.deps.extend(deps);
            SUCCESS
        }
        // An event of another capture, or of none: the dependency would
        // cross the capture's boundary.
        (Some(c), _) => {
            lock(&c.sequence).invalidated = true;
            STREAM_CAPTURE_ISOLATION
        }
        // A stream outside any capture waits on a captured event: it joins
        // the capture there (a fork).
        (None, Some((sequence, deps))) => match capture.as_mut() {
            Some(slot) => {
                lock(&sequence).forked.push(s as usize);
                **slot = Some(Capture { sequence, deps });
                SUCCESS
            }
            None => STREAM_CAPTURE_ISOLATION, // the legacy stream cannot join
        },
        // SAFETY: as for cuStreamSynchronize.
        (None, None) => unsafe { stream_status(s) },
    }
}
unsafe extern "C" fn cuLaunchHostFunc(s: CUstream, f: CUhostFn, data: *mut c_void) -> CUresult {
    // SAFETY: as for cuStreamSynchronize.
    let code = unsafe { stream_status(s) };
    if code != SUCCESS {
        return code;
    }
    // SAFETY: as for cuStreamSynchronize.
    if let Some(code) = unsafe { record_op(s, || Ok(Op::Host { func: f, data })) } {
        return code;
    }
    // SAFETY: the stream has finished all earlier work (everything runs at
    // submission), which is when the driver would call `f(data)`.
    unsafe { f(data) };
    SUCCESS
}
unsafe extern "C" fn cuEventCreate(e: *mut CUevent, flags: c_uint) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    let timing = flags & CU_EVENT_DISABLE_TIMING == 0;
    let event = Box::new(Event { context, recorded: Mutex::new(None), timing, captured: Mutex::new(None) });
    // SAFETY: writable out-pointer (caller).
    unsafe { *e = Box::into_raw(event).cast() };
    SUCCESS
}
unsafe extern "C" fn cuEventDestroy_v2(e: CUevent) -> CUresult {
    if !e.is_null() {
        // SAFETY: made by cuEventCreate, destroyed once.
        drop(unsafe { Box::from_raw(e.cast::<Event>()) });
    }
    SUCCESS
}
unsafe extern "C" fn cuEventRecord(e: CUevent, s: CUstream) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    let event = unsafe { &*e.cast::<Event>() };
    // SAFETY: a stream of this driver or null (caller).
    if let Some(stream) = unsafe { stream_ref(s) } {
        if let Some(c) = lock(&stream.capture).as_ref() {
            // In a capture the record marks a point of the graph.
            *lock(&event.captured) = Some((c.sequence.clone(), c.deps.clone()));
            return SUCCESS;
        }
    }
    *lock(&event.captured) = None;
    *event.recorded.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    // SAFETY: a stream of this driver or null (caller).
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuEventQuery(e: CUevent) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    unsafe { &*e.cast::<Event>() }.context.status()
}
unsafe extern "C" fn cuEventSynchronize(e: CUevent) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    unsafe { &*e.cast::<Event>() }.context.status()
}
unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    // SAFETY: live events made by cuEventCreate.
    let (a, b) = unsafe { (&*start.cast::<Event>(), &*end.cast::<Event>()) };
    if !a.timing || !b.timing {
        return INVALID_HANDLE; // as the driver answers for an event made without timing
    }
    let a = *a.recorded.lock().unwrap_or_else(|p| p.into_inner());
    let b = *b.recorded.lock().unwrap_or_else(|p| p.into_inner());
    match (a, b) {
        (Some(a), Some(b)) => {
            let d = if b >= a { b.duration_since(a).as_secs_f64() } else { -a.duration_since(b).as_secs_f64() };
            // SAFETY: writable out-pointer (caller).
            unsafe { *ms = (d * 1e3) as f32 };
            SUCCESS
        }
        _ => INVALID_HANDLE, // never recorded: the driver's answer too
    }
}
unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *free = TOTAL_MEMORY;
        *total = TOTAL_MEMORY;
    }
    SUCCESS
}

/// Copies `n` bytes; ranges may overlap (the driver's behaviour is
/// unspecified then; `memmove` is the forgiving choice).
///
/// # Safety
/// Both ranges must be valid for `n` bytes.
unsafe fn copy(dst: u64, src: u64, n: usize) -> CUresult {
    let code = context::current_status();
    if code != SUCCESS {
        return code;
    }
    if n > 0 {
        // SAFETY: the caller's contract.
        unsafe { ptr::copy(src as *const u8, dst as *mut u8, n) };
    }
    SUCCESS
}
/// [`copy`] on stream `s`, or recorded if it captures.
///
/// # Safety
/// As for [`copy`] when the copy runs; `s` is null or a live stream.
unsafe fn copy_on(s: CUstream, dst: u64, src: u64, n: usize) -> CUresult {
    // SAFETY: the caller's contract.
    if let Some(code) = unsafe { record_op(s, || Ok(Op::Memcpy { dst, src, bytes: n })) } {
        return code;
    }
    // SAFETY: the caller's contract.
    unsafe { copy(dst, src, n) }
}
unsafe extern "C" fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream) -> CUresult {
    // SAFETY: both are emulated device ranges of `n` bytes (cuda-core checks lengths).
    unsafe { copy_on(s, dst, src, n) }
}
unsafe extern "C" fn cuMemcpyPeerAsync(dst: CUdeviceptr, _dc: CUcontext, src: CUdeviceptr, _sc: CUcontext, n: usize, s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyDtoDAsync_v2.
    unsafe { copy_on(s, dst, src, n) }
}
unsafe extern "C" fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyDtoDAsync_v2; `src` is host memory of `n` bytes.
    unsafe { copy_on(s, dst, src as u64, n) }
}
unsafe extern "C" fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize) -> CUresult {
    // SAFETY: as for cuMemcpyHtoDAsync_v2.
    unsafe { copy(dst, src as u64, n) }
}
unsafe extern "C" fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyHtoDAsync_v2.
    unsafe { copy_on(s, dst as u64, src, n) }
}

/// Fills `n` elements of `T` at `dst`.
///
/// # Safety
/// `dst` must be valid for `n` elements.
unsafe fn fill<T: Copy>(dst: CUdeviceptr, value: T, n: usize) -> CUresult {
    let code = context::current_status();
    if code != SUCCESS {
        return code;
    }
    let p = dst as *mut T;
    for i in 0..n {
        // SAFETY: the caller's contract; device allocations are 256-aligned
        // and views keep the element alignment.
        unsafe { p.add(i).write_unaligned(value) };
    }
    SUCCESS
}
/// A fill of `n` elements of `element_size` bytes on stream `s`: recorded
/// if it captures, else `None` (the caller fills now).
///
/// # Safety
/// `s` is null or a live stream.
unsafe fn record_fill(s: CUstream, dst: CUdeviceptr, value: u32, element_size: u32, n: usize) -> Option<CUresult> {
    // SAFETY: the caller's contract.
    unsafe { record_op(s, || Ok(Op::Memset { dst, pitch: 0, value, element_size, width: n, height: 1 })) }
}
unsafe extern "C" fn cuMemsetD8Async(dst: CUdeviceptr, v: c_uchar, n: usize, s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` bytes; a live stream or null.
    unsafe { record_fill(s, dst, v.into(), 1, n).unwrap_or_else(|| fill(dst, v, n)) }
}
unsafe extern "C" fn cuMemsetD16Async(dst: CUdeviceptr, v: u16, n: usize, s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` halfwords; a live stream or null.
    unsafe { record_fill(s, dst, v.into(), 2, n).unwrap_or_else(|| fill(dst, v, n)) }
}
unsafe extern "C" fn cuMemsetD32Async(dst: CUdeviceptr, v: c_uint, n: usize, s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` words; a live stream or null.
    unsafe { record_fill(s, dst, v, 4, n).unwrap_or_else(|| fill(dst, v, n)) }
}
unsafe extern "C" fn cuMemAlloc_v2(out: *mut CUdeviceptr, bytes: usize) -> CUresult {
    match host_alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p as u64 };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemFree_v2(p: CUdeviceptr) -> CUresult {
    // cuMemFree takes stream-ordered allocations too.
    if crate::mem_pool::free(p) {
        return SUCCESS;
    }
    crate::managed::forget(p);
    host_free(p)
}
unsafe extern "C" fn cuMemAllocManaged(out: *mut CUdeviceptr, bytes: usize, flags: c_uint) -> CUresult {
    // CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST, as the driver demands.
    if bytes == 0 || !(flags == 1 || flags == 2) {
        return INVALID_VALUE;
    }
    match crate::managed::alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemPrefetchAsync_v2(p: CUdeviceptr, n: usize, location: CUmemLocation, flags: c_uint, s: CUstream) -> CUresult {
    // SAFETY: the caller passes a live stream or null.
    let status = unsafe { stream_status(s) };
    if status != SUCCESS {
        return status;
    }
    if flags != 0 {
        return INVALID_VALUE;
    }
    // A prefetch moves nothing here, so a captured one records nothing.
    crate::managed::prefetch(p, n, location)
}
unsafe extern "C" fn cuMemAdvise_v2(p: CUdeviceptr, n: usize, advice: c_int, location: CUmemLocation) -> CUresult {
    crate::managed::advise(p, n, advice, location)
}
unsafe extern "C" fn cuMemRangeGetAttribute(data: *mut c_void, size: usize, attribute: c_int, p: CUdeviceptr, n: usize) -> CUresult {
    if data.is_null() || size != 4 {
        return INVALID_VALUE;
    }
    match crate::managed::attribute(attribute, p, n) {
        Ok(v) => {
            // SAFETY: `data` holds `size` (4) writable bytes (caller).
            unsafe { data.cast::<c_int>().write_unaligned(v) };
            SUCCESS
        }
        Err(code) => code,
    }
}
/// The emulator has one device: no peer can be reached.
unsafe extern "C" fn cuDeviceCanAccessPeer(can: *mut c_int, d: CUdevice, peer: CUdevice) -> CUresult {
    if d != 0 || peer != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller). A device is not its own peer.
    unsafe { *can = 0 };
    SUCCESS
}
/// Refused as on the driver when `cuDeviceCanAccessPeer` says no: every
/// context of the emulator is on its one device.
unsafe extern "C" fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> CUresult {
    if peer.is_null() || flags != 0 {
        return INVALID_VALUE;
    }
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
}
unsafe extern "C" fn cuCtxDisablePeerAccess(peer: CUcontext) -> CUresult {
    if peer.is_null() {
        return INVALID_VALUE;
    }
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
}
unsafe extern "C" fn cuMemAllocAsync(out: *mut CUdeviceptr, bytes: usize, s: CUstream) -> CUresult {
    // SAFETY: the caller passes a live stream or null.
    let status = unsafe { stream_status(s) };
    if status != SUCCESS {
        return status;
    }
    // In a capture: an allocation node, whose memory the graph owns (mapped
    // now, at the address every launch uses).
    let mut made = 0;
    // SAFETY: as above.
    let recorded = unsafe {
        record_op(s, || {
            made = crate::memory::alloc(bytes).ok_or(OUT_OF_MEMORY)? as u64;
            Ok(Op::MemAlloc(Arc::new(crate::graph::GraphMemory { ptr: made, bytes })))
        })
    };
    if let Some(code) = recorded {
        if code == SUCCESS {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = made };
        }
        return code;
    }
    match crate::mem_pool::alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemFreeAsync(p: CUdeviceptr, s: CUstream) -> CUresult {
    // SAFETY: the caller passes a live stream or null.
    if let Some(code) = unsafe { record_free(s, p) } {
        return code;
    }
    // The stream's earlier work has run already (streams run at submission).
    match crate::mem_pool::free(p) {
        true => SUCCESS,
        false => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuDeviceGetDefaultMemPool(out: *mut CUmemoryPool, d: CUdevice) -> CUresult {
    if d != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = crate::mem_pool::handle() };
    SUCCESS
}
/// The reuse policies (attributes 1 to 3, ints) are all on, as the driver's
/// defaults are; the others are u64 books (mem_pool.rs).
const POOL_REUSE_ATTRIBUTES: std::ops::RangeInclusive<c_int> = 1..=3;
unsafe extern "C" fn cuMemPoolSetAttribute(pool: CUmemoryPool, attribute: c_int, value: *mut c_void) -> CUresult {
    if pool != crate::mem_pool::handle() || value.is_null() {
        return INVALID_VALUE;
    }
    if POOL_REUSE_ATTRIBUTES.contains(&attribute) {
        return SUCCESS;
    }
    // SAFETY: the caller passes a u64 for the u64 attributes.
    match crate::mem_pool::set(attribute, unsafe { *value.cast::<u64>() }) {
        true => SUCCESS,
        false => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuMemPoolGetAttribute(pool: CUmemoryPool, attribute: c_int, value: *mut c_void) -> CUresult {
    if pool != crate::mem_pool::handle() || value.is_null() {
        return INVALID_VALUE;
    }
    if POOL_REUSE_ATTRIBUTES.contains(&attribute) {
        // SAFETY: an int out-pointer for these attributes (caller).
        unsafe { *value.cast::<c_int>() = 1 };
        return SUCCESS;
    }
    match crate::mem_pool::get(attribute) {
        Some(v) => {
            // SAFETY: a u64 out-pointer for these attributes (caller).
            unsafe { *value.cast::<u64>() = v };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuMemPoolTrimTo(pool: CUmemoryPool, _keep: usize) -> CUresult {
    // Nothing is cached (mem_pool.rs), so nothing is released.
    if pool != crate::mem_pool::handle() {
        return INVALID_VALUE;
    }
    SUCCESS
}
unsafe extern "C" fn cuMemHostAlloc(out: *mut *mut c_void, bytes: usize, _flags: c_uint) -> CUresult {
    match host_alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p.cast() };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemHostGetDevicePointer_v2(out: *mut CUdeviceptr, p: *mut c_void, _flags: c_uint) -> CUresult {
    // SAFETY: writable out-pointer (caller). Host memory is device memory here.
    unsafe { *out = p as u64 };
    SUCCESS
}
unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    host_free(p as u64)
}
unsafe extern "C" fn cuModuleGetGlobal_v2(out: *mut CUdeviceptr, size: *mut usize, m: CUmodule, name: *const c_char) -> CUresult {
    // SAFETY: a live module made by cuModuleLoadDataEx; `name` is a C string.
    let (module, name) = unsafe { (&*m.cast::<Module>(), CStr::from_ptr(name)) };
    let Some((address, bytes)) = module.global(name) else { return NOT_FOUND };
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *out = address;
        *size = bytes;
    }
    SUCCESS
}
unsafe extern "C" fn cuModuleLoadDataEx(out: *mut CUmodule, image: *const c_void, n: c_uint, options: *mut c_int, values: *mut *mut c_void) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    let code = context.status();
    if code != SUCCESS {
        return code;
    }
    // SAFETY: a PTX text or binary image, as cuModuleLoadDataEx takes (caller).
    match unsafe { Module::load(context, image, crate::launch::mode()) } {
        Ok(module) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = Box::into_raw(Box::new(module)).cast() };
            SUCCESS
        }
        Err(log) => {
            // SAFETY: `n` options with their values (caller).
            unsafe { write_error_log(n, options, values, &log) };
            CUDA_ERROR_INVALID_PTX
        }
    }
}

/// Writes `log` into the JIT error log buffer among the `n` `options` (as
/// much as fits, NUL-terminated), as the driver's JIT reports a PTX error.
///
/// # Safety
/// `options` and `values` must hold `n` entries each (or be null with `n`
/// 0); a log buffer option's value must point to as many bytes as its size
/// option says.
unsafe fn write_error_log(n: c_uint, options: *const c_int, values: *const *mut c_void, log: &str) {
    if n == 0 || options.is_null() || values.is_null() {
        return;
    }
    // SAFETY: `n` entries each (caller).
    let (options, values) = unsafe { (std::slice::from_raw_parts(options, n as usize), std::slice::from_raw_parts(values, n as usize)) };
    let value_of = |option: c_int| options.iter().position(|&o| o == option).map(|i| values[i]);
    let (Some(buffer), Some(size)) = (value_of(CU_JIT_ERROR_LOG_BUFFER), value_of(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)) else {
        return;
    };
    // Integer options travel in the pointer-sized value slot.
    let size = size as usize;
    if buffer.is_null() || size == 0 {
        return;
    }
    let text = format!("ptx-vm: {log}");
    let len = text.len().min(size - 1);
    // SAFETY: the buffer holds `size` bytes (caller); we write `len + 1 <= size`.
    unsafe {
        ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), len);
        *buffer.cast::<u8>().add(len) = 0;
    }
}
unsafe extern "C" fn cuModuleUnload(m: CUmodule) -> CUresult {
    if !m.is_null() {
        // SAFETY: made by cuModuleLoadDataEx, unloaded once.
        drop(unsafe { Box::from_raw(m.cast::<Module>()) });
    }
    SUCCESS
}
unsafe extern "C" fn cuModuleGetFunction(out: *mut CUfunction, m: CUmodule, name: *const c_char) -> CUresult {
    let module = m.cast::<Module>();
    // SAFETY: `name` is a C string (caller).
    let name = unsafe { CStr::from_ptr(name) }.to_owned();
    // SAFETY: a live module made by cuModuleLoadDataEx.
    if unsafe { &*module }.has_kernel(&name) == Some(false) {
        return NOT_FOUND;
    }
    // One handle per kernel, as the driver gives: attributes set through one
    // lookup (the dynamic shared memory limit) hold for every other.
    // SAFETY: a live module; its functions live as long as it.
    let mut functions = unsafe { (*module).functions.lock() }.unwrap_or_else(|e| e.into_inner());
    let p = match functions.iter().find(|f| f.name == name) {
        Some(f) => &**f as *const Function as CUfunction,
        None => {
            let f = Box::new(Function::new(module, name));
            let p = &*f as *const Function as CUfunction;
            functions.push(f);
            p
        }
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = p };
    SUCCESS
}
unsafe extern "C" fn cuFuncGetAttribute(v: *mut c_int, attribute: c_int, f: CUfunction) -> CUresult {
    // SAFETY: a live function made by cuModuleGetFunction.
    let f = unsafe { &*f.cast::<Function>() };
    let value = match attribute {
        // SAFETY: a function's module outlives it.
        0 => unsafe { &*f.module }.max_threads_per_block(&f.name) as c_int,
        1 => f.static_shared().min(i32::MAX as u32) as c_int,
        4 => 32,
        // SAFETY: a function's module outlives it.
        5 => unsafe { &*f.module }.ptx_version() as c_int,
        6 => COMPUTE_CAPABILITY.0 * 10 + COMPUTE_CAPABILITY.1,
        8 => f.max_dynamic_shared().min(i32::MAX as u32) as c_int,
        // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, _HEIGHT, _DEPTH.
        // SAFETY: a function's module outlives it.
        11..=13 => unsafe { &*f.module }.required_cluster(&f.name)[(attribute - 11) as usize] as c_int,
        _ => 0,
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = value };
    SUCCESS
}
unsafe extern "C" fn cuFuncSetAttribute(f: CUfunction, attribute: c_int, value: c_int) -> CUresult {
    // SAFETY: a live function made by cuModuleGetFunction.
    let f = unsafe { &*f.cast::<Function>() };
    // The driver refuses a raise that leaves no room for the kernel's static
    // shared memory under the opt-in maximum.
    if attribute == 8 && (value < 0 || !f.raise_dynamic_shared(value as u32)) {
        return INVALID_VALUE;
    }
    SUCCESS
}
/// What occupancy depends on, of the function `f` (crate::limits).
///
/// # Safety
/// `f` is a live function made by cuModuleGetFunction.
unsafe fn occupancy_of(f: CUfunction) -> crate::limits::Kernel {
    // SAFETY: the caller's contract.
    let f = unsafe { &*f.cast::<Function>() };
    // SAFETY: a function's module outlives it.
    let max_threads = unsafe { &*f.module }.max_threads_per_block(&f.name);
    crate::limits::Kernel { max_threads, static_shared: f.static_shared() }
}
unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(n: *mut c_int, f: CUfunction, block: c_int, smem: usize) -> CUresult {
    if block < 0 {
        return INVALID_VALUE;
    }
    // SAFETY: a live function (caller).
    let kernel = unsafe { occupancy_of(f) };
    let blocks = crate::limits::blocks_per_multiprocessor(kernel, block as u32, smem as u64);
    // SAFETY: writable out-pointer (caller).
    unsafe { *n = blocks as c_int };
    SUCCESS
}
unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(grid: *mut c_int, block: *mut c_int, f: CUfunction, _b2d: CUoccupancyB2DSize, smem: usize, limit: c_int) -> CUresult {
    // SAFETY: a live function (caller).
    let kernel = unsafe { occupancy_of(f) };
    let (g, b) = crate::limits::potential_block_size(kernel, smem as u64, limit.max(0) as u32, cores() as u32);
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *block = b as c_int;
        *grid = g.min(i32::MAX as u32) as c_int;
    }
    SUCCESS
}
/// A `CUlaunchConfig`'s attributes.
///
/// # Safety
/// `config.attrs` points at `config.num_attrs` attributes (or none).
unsafe fn launch_attributes(config: &CUlaunchConfig) -> &[CUlaunchAttribute] {
    match config.num_attrs {
        0 => &[],
        // SAFETY: the caller's contract.
        n => unsafe { std::slice::from_raw_parts(config.attrs, n as usize) },
    }
}

/// The cluster shape a config asks for (its last cluster attribute).
fn cluster_attribute(attributes: &[CUlaunchAttribute]) -> Option<[c_uint; 3]> {
    attributes.iter().rev().find(|a| a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).map(|a| a.value.cluster_dim)
}

/// Clusters of the config's shape (its cluster attribute, else the
/// kernel's `.reqnctapercluster`) resident at once: as many as the
/// multiprocessors' blocks hold (crate::limits::clusters_resident).
unsafe extern "C" fn cuOccupancyMaxActiveClusters(n: *mut c_int, f: CUfunction, config: *const c_void) -> CUresult {
    if config.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: a `CUlaunchConfig` (caller).
    let config = unsafe { &*config.cast::<CUlaunchConfig>() };
    // SAFETY: its attributes (caller).
    let asked = cluster_attribute(unsafe { launch_attributes(config) });
    // SAFETY: a live function made by cuModuleGetFunction.
    let function = unsafe { &*f.cast::<Function>() };
    // SAFETY: a function's module outlives it.
    let required = unsafe { &*function.module }.required_cluster(&function.name);
    // As the driver: a kernel with a compile-time shape takes that shape or
    // none; one without must be given one.
    let shape = match (asked, required) {
        (Some(a), r) if r != [0; 3] && a != r => return INVALID_CLUSTER_SIZE,
        (Some(a), _) => a,
        (None, r) if r != [0; 3] => r,
        (None, _) => return INVALID_CLUSTER_SIZE,
    };
    let [bx, by, bz] = config.block_dim;
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    let cluster = shape.iter().map(|&d| u64::from(d)).product::<u64>();
    // SAFETY: a live function (caller).
    let kernel = unsafe { occupancy_of(f) };
    let threads = threads.min(u64::from(u32::MAX)) as u32;
    let Some(clusters) =
        crate::limits::clusters_resident(kernel, threads, u64::from(config.shared_mem_bytes), cluster, cores() as u32)
    else {
        return INVALID_CLUSTER_SIZE;
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *n = clusters.min(i32::MAX as u32) as c_int };
    SUCCESS
}
unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
    smem: c_uint, s: CUstream, params: *mut *mut c_void, _extra: *mut *mut c_void,
) -> CUresult {
    let grid = Grid { grid_dim: (gx, gy, gz), block_dim: (bx, by, bz), shared_mem_bytes: smem };
    // SAFETY: the caller's contract for cuLaunchKernel.
    result_of(unsafe { launch(&Launch { function: f, grid, cluster: None, cooperative: false, params, host_code: None, stream: s }) })
}
unsafe extern "C" fn cuLaunchKernelEx(config: *const c_void, f: CUfunction, params: *mut *mut c_void, _extra: *mut *mut c_void) -> CUresult {
    // SAFETY: a `CUlaunchConfig` (caller).
    let config = unsafe { &*config.cast::<CUlaunchConfig>() };
    // SAFETY: its attributes (caller).
    let attributes = unsafe { launch_attributes(config) };
    // Other attributes (priorities, programmatic launches) change nothing
    // a launch run at submission can observe.
    let cluster = cluster_attribute(attributes).map(|[x, y, z]| (x, y, z));
    // The cooperative attribute's value is an int at the start of the union.
    let cooperative = attributes
        .iter()
        .rev()
        .find(|a| a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        .is_some_and(|a| a.value.cluster_dim[0] != 0);
    let [gx, gy, gz] = config.grid_dim;
    let [bx, by, bz] = config.block_dim;
    let grid = Grid { grid_dim: (gx, gy, gz), block_dim: (bx, by, bz), shared_mem_bytes: config.shared_mem_bytes };
    // SAFETY: the caller's contract for cuLaunchKernelEx.
    result_of(unsafe { launch(&Launch { function: f, grid, cluster, cooperative, params, host_code: None, stream: config.stream }) })
}

// ---- CUDA Graphs (graph.rs) ----

/// Begins a capture on `s` into `graph` (null: a new graph) after `deps`.
///
/// # Safety
/// `s` is a live stream; `graph` null or a live graph; `deps` holds `n`
/// nodes of `graph`.
unsafe fn begin_capture(s: CUstream, graph: CUgraph, deps: *const CUgraphNode, n: usize, mode: c_int) -> CUresult {
    // SAFETY: the caller's contract.
    let Some(stream) = (unsafe { stream_ref(s) }) else {
        return STREAM_CAPTURE_UNSUPPORTED; // the legacy default stream cannot capture
    };
    let code = stream.context.status();
    if code != SUCCESS {
        return code;
    }
    let mut capture = lock(&stream.capture);
    if capture.is_some() {
        return STREAM_CAPTURE_UNSUPPORTED; // already capturing
    }
    let (graph, owns_graph, deps) = if graph.is_null() {
        crate::graph::count(&crate::graph::LIVE_GRAPHS, 1);
        (Box::into_raw(Box::<Graph>::default()), true, Vec::new())
    } else {
        // SAFETY: a live graph (caller).
        let g = unsafe { &*graph.cast::<Graph>() };
        let list = match n {
            0 => &[][..],
            // SAFETY: `n` handles (caller).
            _ => unsafe { std::slice::from_raw_parts(deps, n) },
        };
        let Some(deps) = list.iter().map(|&d| g.index_of(d)).collect::<Option<Vec<_>>>() else { return INVALID_VALUE };
        (graph.cast::<Graph>(), false, deps)
    };
    let sequence = Arc::new(Mutex::new(Sequence {
        graph,
        owns_graph,
        invalidated: false,
        origin: s as usize,
        forked: Vec::new(),
        joined: Vec::new(),
        context: stream.context,
        id: crate::graph::next_id(),
        mode,
        thread: std::thread::current().id(),
    }));
    lock(&SEQUENCES).push(sequence.clone());
    *capture = Some(Capture { sequence, deps });
    SUCCESS
}
unsafe extern "C" fn cuStreamBeginCapture_v2(s: CUstream, mode: c_int) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { begin_capture(s, ptr::null_mut(), ptr::null(), 0, mode) }
}
unsafe extern "C" fn cuStreamBeginCaptureToGraph(
    s: CUstream, graph: CUgraph, deps: *const CUgraphNode, _edges: *const c_void, n: usize, mode: c_int,
) -> CUresult {
    if graph.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller's contract.
    unsafe { begin_capture(s, graph, deps, n, mode) }
}
unsafe extern "C" fn cuStreamEndCapture(s: CUstream, out: *mut CUgraph) -> CUresult {
    // SAFETY: a live stream or null (caller).
    let Some(stream) = (unsafe { stream_ref(s) }) else { return STREAM_CAPTURE_UNMATCHED };
    let mut capture = lock(&stream.capture);
    let Some(c) = capture.as_ref() else { return STREAM_CAPTURE_UNMATCHED };
    if lock(&c.sequence).origin != s as usize {
        return STREAM_CAPTURE_UNMATCHED; // a forked stream cannot end it
    }
    let Some(c) = capture.take() else { return STREAM_CAPTURE_UNMATCHED };
    drop(capture);
    lock(&SEQUENCES).retain(|q| !Arc::ptr_eq(q, &c.sequence));
    let sequence = lock(&c.sequence);
    // Every forked stream leaves the capture; its last nodes must have been
    // waited on by a stream of the capture.
    let mut unjoined = false;
    for &f in &sequence.forked {
        // SAFETY: forked streams remove themselves when destroyed, so `f`
        // is live.
        let forked = unsafe { &*(f as *const Stream) };
        if let Some(fc) = lock(&forked.capture).take() {
            unjoined |= fc.deps.iter().any(|d| !sequence.joined.contains(d));
        }
    }
    let code = if sequence.invalidated {
        STREAM_CAPTURE_INVALIDATED
    } else if unjoined {
        STREAM_CAPTURE_UNJOINED
    } else {
        SUCCESS
    };
    if code != SUCCESS && sequence.owns_graph {
        // SAFETY: made by begin_capture and handed to no one.
        drop(unsafe { Box::from_raw(sequence.graph) });
        crate::graph::count(&crate::graph::LIVE_GRAPHS, -1);
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = if code == SUCCESS { sequence.graph.cast() } else { ptr::null_mut() } };
    code
}
unsafe extern "C" fn cuStreamIsCapturing(s: CUstream, status: *mut CUstreamCaptureStatus) -> CUresult {
    // SAFETY: a live stream or null (caller).
    let value = match unsafe { stream_ref(s) }.and_then(|st| lock(&st.capture).as_ref().map(|c| lock(&c.sequence).invalidated)) {
        None => CU_STREAM_CAPTURE_STATUS_NONE,
        Some(false) => CU_STREAM_CAPTURE_STATUS_ACTIVE,
        Some(true) => CU_STREAM_CAPTURE_STATUS_INVALIDATED,
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *status = value };
    SUCCESS
}
unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    s: CUstream, status: *mut CUstreamCaptureStatus, id: *mut u64, graph: *mut CUgraph, deps: *mut *const CUgraphNode,
    edges: *mut *const c_void, n: *mut usize,
) -> CUresult {
    // The dependency handles live in a per-thread buffer until the next call.
    thread_local!(static DEPS: std::cell::RefCell<Vec<CUgraphNode>> = const { std::cell::RefCell::new(Vec::new()) });
    // SAFETY: a live stream or null (caller).
    let stream = unsafe { stream_ref(s) };
    let capture = stream.map(|st| lock(&st.capture));
    let c = capture.as_ref().and_then(|c| c.as_ref());
    let sequence = c.map(|c| lock(&c.sequence));
    // SAFETY: writable out-pointers, each optional but `status` (caller).
    unsafe {
        *status = match &sequence {
            None => CU_STREAM_CAPTURE_STATUS_NONE,
            Some(q) if q.invalidated => CU_STREAM_CAPTURE_STATUS_INVALIDATED,
            Some(_) => CU_STREAM_CAPTURE_STATUS_ACTIVE,
        };
        if let (Some(q), Some(c)) = (&sequence, c) {
            if !id.is_null() {
                *id = q.id;
            }
            if !graph.is_null() {
                *graph = q.graph.cast();
            }
            let g = &*q.graph;
            let handles: Vec<CUgraphNode> = c.deps.iter().map(|&i| g.handle(i)).collect();
            DEPS.with(|d| {
                let mut d = d.borrow_mut();
                *d = handles;
                if !deps.is_null() {
                    *deps = d.as_ptr();
                }
                if !n.is_null() {
                    *n = d.len();
                }
            });
        } else if !n.is_null() {
            *n = 0;
        }
        if !edges.is_null() {
            *edges = ptr::null();
        }
    }
    SUCCESS
}
unsafe extern "C" fn cuGraphCreate(out: *mut CUgraph, _flags: c_uint) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = Box::into_raw(Box::<Graph>::default()).cast() };
    crate::graph::count(&crate::graph::LIVE_GRAPHS, 1);
    SUCCESS
}
unsafe extern "C" fn cuGraphDestroy(g: CUgraph) -> CUresult {
    if !g.is_null() {
        // SAFETY: made by cuGraphCreate or a capture, destroyed once.
        drop(unsafe { Box::from_raw(g.cast::<Graph>()) });
        crate::graph::count(&crate::graph::LIVE_GRAPHS, -1);
    }
    SUCCESS
}
/// Adds `op` to graph `g` after `n` nodes `deps`, writing the handle to `out`.
///
/// # Safety
/// Live graph, `n` handles, writable out-pointer.
unsafe fn add_node(out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, op: Op) -> CUresult {
    if g.is_null() || out.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller's contract.
    match unsafe { (*g.cast::<Graph>()).add(deps, n, op) } {
        Ok(node) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = node };
            SUCCESS
        }
        Err(code) => code,
    }
}
/// A kernel node from the driver's parameter struct (arguments copied now).
///
/// # Safety
/// `p` points to valid parameters of a live function of this driver.
unsafe fn kernel_op(p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<KernelOp, CUresult> {
    // SAFETY: the caller's contract.
    let p = unsafe { &*p };
    if p.func.is_null() {
        return Err(INVALID_VALUE);
    }
    let [gx, gy, gz] = p.grid_dim;
    let [bx, by, bz] = p.block_dim;
    let grid = Grid { grid_dim: (gx, gy, gz), block_dim: (bx, by, bz), shared_mem_bytes: p.shared_mem_bytes };
    // SAFETY: the caller's contract.
    unsafe { KernelOp::new(p.func, grid, None, false, p.kernel_params, None) }.map_err(|_| INVALID_VALUE)
}
unsafe extern "C" fn cuGraphAddKernelNode_v2(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    // SAFETY: the caller's contract.
    match unsafe { kernel_op(p) } {
        // SAFETY: the caller's contract.
        Ok(op) => unsafe { add_node(out, g, deps, n, Op::Kernel(op)) },
        Err(code) => code,
    }
}
unsafe extern "C" fn cuGraphKernelNodeGetParams_v2(node: CUgraphNode, p: *mut CUDA_KERNEL_NODE_PARAMS) -> CUresult {
    // SAFETY: a live node of a live graph (caller).
    let node = unsafe { &mut *node.cast::<crate::graph::Node>() };
    let Op::Kernel(k) = &mut node.op else { return INVALID_VALUE };
    let g = k.grid;
    // SAFETY: writable out-pointer (caller).
    unsafe {
        *p = CUDA_KERNEL_NODE_PARAMS {
            func: k.function,
            grid_dim: [g.grid_dim.0, g.grid_dim.1, g.grid_dim.2],
            block_dim: [g.block_dim.0, g.block_dim.1, g.block_dim.2],
            shared_mem_bytes: g.shared_mem_bytes,
            kernel_params: k.params(),
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx: ptr::null_mut(),
        }
    };
    SUCCESS
}
unsafe extern "C" fn cuGraphAddMemcpyNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *const CUDA_MEMCPY3D, _ctx: CUcontext,
) -> CUresult {
    // SAFETY: valid copy parameters (caller).
    let p = unsafe { &*p };
    let address = |kind, host: u64, device| match kind {
        CU_MEMORYTYPE_HOST => Some(host),
        CU_MEMORYTYPE_DEVICE => Some(device),
        _ => None, // arrays are not emulated
    };
    let (Some(src), Some(dst)) = (
        address(p.src_memory_type, p.src_host as u64, p.src_device),
        address(p.dst_memory_type, p.dst_host as u64, p.dst_device),
    ) else {
        return NOT_SUPPORTED;
    };
    if p.height > 1 || p.depth > 1 {
        return NOT_SUPPORTED; // 2-D and 3-D copies are not emulated
    }
    let (src, dst) = (src + p.src_xyz_lod[0] as u64, dst + p.dst_xyz_lod[0] as u64);
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::Memcpy { dst, src, bytes: p.width_in_bytes }) }
}
unsafe extern "C" fn cuGraphAddMemsetNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *const CUDA_MEMSET_NODE_PARAMS, _ctx: CUcontext,
) -> CUresult {
    // SAFETY: valid memset parameters (caller).
    let p = unsafe { &*p };
    if ![1, 2, 4].contains(&p.element_size) {
        return INVALID_VALUE;
    }
    let op = Op::Memset { dst: p.dst, pitch: p.pitch, value: p.value, element_size: p.element_size, width: p.width, height: p.height };
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, op) }
}
unsafe extern "C" fn cuGraphAddHostNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    // SAFETY: valid host node parameters (caller).
    let p = unsafe { &*p };
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::Host { func: p.func, data: p.user_data }) }
}
unsafe extern "C" fn cuGraphAddEmptyNode(out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::Empty) }
}
unsafe extern "C" fn cuGraphAddChildGraphNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, child: CUgraph,
) -> CUresult {
    if child.is_null() || child == g {
        return INVALID_VALUE;
    }
    // The driver refuses a child with allocation or free nodes.
    // SAFETY: a live graph (caller).
    if unsafe { &*child.cast::<Graph>() }.has_memory_nodes() {
        return INVALID_VALUE;
    }
    // SAFETY: a live graph (caller); the node keeps a copy, as the driver does.
    let copy = Box::new(unsafe { &*child.cast::<Graph>() }.clone());
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::Child(copy)) }
}
unsafe extern "C" fn cuGraphAddMemAllocNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    if p.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: valid node parameters (caller).
    let p = unsafe { &mut *p };
    if p.bytesize == 0 || p.pool_props.location.id != 0 {
        return INVALID_VALUE;
    }
    // The graph owns the memory, mapped now at the address every launch uses.
    let Some(ptr) = crate::memory::alloc(p.bytesize) else { return OUT_OF_MEMORY };
    let memory = Arc::new(crate::graph::GraphMemory { ptr: ptr as u64, bytes: p.bytesize });
    // SAFETY: the caller's contract.
    let code = unsafe { add_node(out, g, deps, n, Op::MemAlloc(memory)) };
    if code == SUCCESS {
        p.dptr = ptr as u64;
    }
    code
}
unsafe extern "C" fn cuGraphAddMemFreeNode(out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: CUdeviceptr) -> CUresult {
    // A free node frees an allocation node's memory of this graph, once.
    // SAFETY: a live graph (caller).
    if g.is_null() || !unsafe { &*g.cast::<Graph>() }.allocated_unfreed(p) {
        return INVALID_VALUE;
    }
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::MemFree(p)) }
}
unsafe extern "C" fn cuGraphAddEventRecordNode(out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, e: CUevent) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::EventRecord(e)) }
}
unsafe extern "C" fn cuGraphAddEventWaitNode(out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, e: CUevent) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { add_node(out, g, deps, n, Op::EventWait(e)) }
}
unsafe extern "C" fn cuGraphConditionalHandleCreate(
    out: *mut CUgraphConditionalHandle, g: CUgraph, _ctx: CUcontext, default: c_uint, flags: c_uint,
) -> CUresult {
    if out.is_null() || g.is_null() || flags & !CU_GRAPH_COND_ASSIGN_DEFAULT != 0 {
        return INVALID_VALUE;
    }
    let condition = crate::graph::Condition {
        graph: std::sync::atomic::AtomicUsize::new(g as usize),
        default,
        reset: flags & CU_GRAPH_COND_ASSIGN_DEFAULT != 0,
        // Without CU_GRAPH_COND_ASSIGN_DEFAULT the driver never applies the
        // default: the value starts at 0, as an H200 showed (the driver
        // documents no starting value).
        value: std::sync::atomic::AtomicU32::new(if flags & CU_GRAPH_COND_ASSIGN_DEFAULT != 0 { default } else { 0 }),
    };
    let mut all = lock(&crate::graph::CONDITIONS);
    all.push(Arc::new(condition));
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = all.len() as u64 };
    SUCCESS
}
/// `cuGraphAddNode` for conditional nodes (IF with one or two bodies,
/// WHILE with one, SWITCH with any number);
/// other node kinds come through their own calls here.
unsafe extern "C" fn cuGraphAddNode(
    out: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, p: *mut CUgraphNodeParams,
) -> CUresult {
    if p.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: valid node parameters (caller).
    let p = unsafe { &mut *p };
    if p.type_ != CU_GRAPH_NODE_TYPE_CONDITIONAL {
        return NOT_SUPPORTED;
    }
    let c = &mut p.conditional;
    // The driver's sizes: WHILE one body, IF one or two (an ELSE), SWITCH
    // one or more.
    let size_fits = match c.type_ {
        CU_GRAPH_COND_TYPE_IF => matches!(c.size, 1 | 2),
        CU_GRAPH_COND_TYPE_WHILE => c.size == 1,
        CU_GRAPH_COND_TYPE_SWITCH => c.size >= 1,
        _ => return NOT_SUPPORTED,
    };
    if !size_fits {
        return INVALID_VALUE;
    }
    // The handle must be one made for this graph (the driver's rule).
    match crate::graph::condition(c.handle) {
        Some(cond) if cond.graph.load(std::sync::atomic::Ordering::Relaxed) == g as usize => {}
        _ => return INVALID_VALUE,
    }
    let mut bodies: Vec<Box<Graph>> = (0..c.size).map(|_| Box::<Graph>::default()).collect();
    // The bodies and the array naming them move with their boxes into the
    // node, which owns them: the addresses hold as long as the node.
    let mut handles: Box<[CUgraph]> = bodies.iter_mut().map(|b| (&mut **b as *mut Graph).cast::<c_void>()).collect();
    let array = handles.as_mut_ptr();
    let op = Op::Conditional { handle: c.handle, kind: c.type_, bodies, handles };
    // SAFETY: the caller's contract.
    let code = unsafe { add_node(out, g, deps, n, op) };
    if code == SUCCESS {
        // As the driver does: the parameters point to the node's own array.
        c.ph_graph_out = array;
    }
    code
}
unsafe extern "C" fn cuGraphGetNodes(g: CUgraph, nodes: *mut CUgraphNode, n: *mut usize) -> CUresult {
    // SAFETY: a live graph (caller).
    let g = unsafe { &*g.cast::<Graph>() };
    // SAFETY: `*n` writable; `nodes` null or room for `*n` handles (caller).
    unsafe {
        if nodes.is_null() {
            *n = g.nodes.len();
            return SUCCESS;
        }
        // The driver refuses an array with room for nothing (an H200 answered
        // CUDA_ERROR_INVALID_VALUE for an empty graph's nodes).
        if *n == 0 {
            return INVALID_VALUE;
        }
        let count = (*n).min(g.nodes.len());
        for i in 0..count {
            *nodes.add(i) = g.handle(i);
        }
        *n = count;
    }
    SUCCESS
}
unsafe extern "C" fn cuGraphNodeGetType(node: CUgraphNode, out: *mut CUgraphNodeType) -> CUresult {
    // SAFETY: a live node (caller); writable out-pointer.
    unsafe { *out = (*node.cast::<crate::graph::Node>()).op.kind() };
    SUCCESS
}
unsafe extern "C" fn cuGraphInstantiateWithFlags(out: *mut CUgraphExec, g: CUgraph, _flags: u64) -> CUresult {
    if g.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: a live graph (caller).
    let g = unsafe { &*g.cast::<Graph>() };
    if !bodies_fit(g) || g.has_unused_condition() {
        return INVALID_VALUE;
    }
    let exec = Exec { graph: g.clone(), handles: (0..g.nodes.len()).map(|i| g.handle(i)).collect() };
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = Box::into_raw(Box::new(exec)).cast() };
    crate::graph::count(&crate::graph::LIVE_EXECS, 1);
    SUCCESS
}
unsafe extern "C" fn cuGraphExecDestroy(e: CUgraphExec) -> CUresult {
    if !e.is_null() {
        // SAFETY: made by cuGraphInstantiateWithFlags, destroyed once.
        drop(unsafe { Box::from_raw(e.cast::<Exec>()) });
        crate::graph::count(&crate::graph::LIVE_EXECS, -1);
    }
    SUCCESS
}
unsafe extern "C" fn cuGraphLaunch(e: CUgraphExec, s: CUstream) -> CUresult {
    // SAFETY: a live exec (caller).
    let exec = unsafe { &mut *e.cast::<Exec>() };
    // Launched into a capture: the driver (CUDA 13, H200) refuses it with
    // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture is invalidated.
    // SAFETY: a live stream or null (caller).
    if let Some(code) = unsafe { refuse_in_capture(s) } {
        return code;
    }
    // A launch starts from the defaults of the conditions made with
    // CU_GRAPH_COND_ASSIGN_DEFAULT, once the work queued before it is done
    // (submission runs it here).
    let mut handles = Vec::new();
    exec.graph.conditions(&mut handles);
    for c in handles.into_iter().filter_map(crate::graph::condition) {
        if c.reset {
            c.value.store(c.default, std::sync::atomic::Ordering::SeqCst);
        }
    }
    // SAFETY: as above.
    unsafe { run_graph(&mut exec.graph, s) }
}
/// Whether every conditional body in `g` holds only what a body may.
fn bodies_fit(g: &Graph) -> bool {
    g.nodes.iter().all(|n| match &n.op {
        Op::Conditional { bodies, .. } => bodies.iter().all(|b| b.fits_a_body()),
        Op::Child(c) => bodies_fit(c),
        _ => true,
    })
}
/// Runs the nodes of `graph` on `s`, in their order (a dependency order).
///
/// # Safety
/// `s` is null or a live stream; the nodes' memory and functions are live.
unsafe fn run_graph(graph: &mut Graph, s: CUstream) -> CUresult {
    // SAFETY: the caller's contract.
    let code = unsafe { stream_status(s) };
    if code != SUCCESS {
        return code;
    }
    for node in &mut graph.nodes {
        let code = match &mut node.op {
            Op::Empty | Op::EventWait(_) | Op::MemFree(_) => SUCCESS,
            Op::MemAlloc(memory) => {
                // SAFETY: the graph's own mapping, alive with the node.
                unsafe { std::ptr::write_bytes(memory.ptr as *mut u8, crate::graph::UNINITIALISED, memory.bytes) };
                SUCCESS
            }
            Op::Kernel(k) => {
                let params = k.params();
                let host_code = k.host_code;
                let launched = Launch {
                    function: k.function,
                    grid: k.grid,
                    cluster: k.cluster,
                    cooperative: k.cooperative,
                    params,
                    host_code: host_code.as_ref(),
                    stream: s,
                };
                // SAFETY: the node's function with its own copy of the arguments.
                result_of(unsafe { launch(&launched) })
            }
            // SAFETY: the ranges were valid when the node was made (the safe
            // layer keeps them alive while the graph may run).
            Op::Memcpy { dst, src, bytes } => unsafe { copy(*dst, *src, *bytes) },
            Op::Memset { dst, pitch, value, element_size, width, height } => {
                let mut code = SUCCESS;
                for row in 0..(*height).max(1) {
                    let at = *dst + (row * *pitch) as u64;
                    // SAFETY: as for the copy.
                    code = unsafe {
                        match element_size {
                            1 => fill(at, *value as u8, *width),
                            2 => fill(at, *value as u16, *width),
                            _ => fill(at, *value, *width),
                        }
                    };
                    if code != SUCCESS {
                        break;
                    }
                }
                code
            }
            Op::Host { func, data } => {
                // SAFETY: the node's function and argument (the driver's contract).
                unsafe { func(*data) };
                SUCCESS
            }
            // SAFETY: as for this graph.
            Op::Child(child) => unsafe { run_graph(child, s) },
            Op::Conditional { handle, kind, bodies, .. } => {
                let Some(condition) = crate::graph::condition(*handle) else { return INVALID_VALUE };
                let value = || condition.value.load(std::sync::atomic::Ordering::SeqCst);
                let mut code = SUCCESS;
                match *kind {
                    CU_GRAPH_COND_TYPE_IF => {
                        // The first body when nonzero, the ELSE body (if any) when zero.
                        let taken = if value() != 0 { bodies.first_mut() } else { bodies.get_mut(1) };
                        if let Some(body) = taken {
                            // SAFETY: as for this graph.
                            code = unsafe { run_graph(body, s) };
                        }
                    }
                    CU_GRAPH_COND_TYPE_WHILE => {
                        while code == SUCCESS && value() != 0 {
                            // SAFETY: as for this graph.
                            code = unsafe { run_graph(&mut bodies[0], s) };
                        }
                    }
                    // SWITCH: body `value`, none past the last.
                    _ => {
                        if let Some(body) = bodies.get_mut(value() as usize) {
                            // SAFETY: as for this graph.
                            code = unsafe { run_graph(body, s) };
                        }
                    }
                }
                code
            }
            Op::EventRecord(e) => {
                // SAFETY: a live event (the driver's contract for the node).
                let event = unsafe { &*e.cast::<Event>() };
                *lock(&event.recorded) = Some(Instant::now());
                SUCCESS
            }
        };
        if code != SUCCESS {
            return code;
        }
    }
    SUCCESS
}
unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(e: CUgraphExec, node: CUgraphNode, p: *const CUDA_KERNEL_NODE_PARAMS) -> CUresult {
    // SAFETY: a live exec (caller).
    let exec = unsafe { &mut *e.cast::<Exec>() };
    let Some(i) = exec.handles.iter().position(|&h| h == node) else { return INVALID_VALUE };
    let Op::Kernel(old) = &exec.graph.nodes[i].op else { return INVALID_VALUE };
    // SAFETY: the caller's contract.
    let new = match unsafe { kernel_op(p) } {
        Ok(k) => k,
        Err(code) => return code,
    };
    if crate::graph::context_of(new.function) != crate::graph::context_of(old.function) {
        return INVALID_VALUE;
    }
    let mut new = new;
    (new.cluster, new.cooperative) = (old.cluster, old.cooperative);
    exec.graph.nodes[i].op = Op::Kernel(new);
    SUCCESS
}
unsafe extern "C" fn cuGraphExecUpdate_v2(e: CUgraphExec, g: CUgraph, info: *mut CUgraphExecUpdateResultInfo) -> CUresult {
    // SAFETY: a live exec and graph (caller).
    let (exec, graph) = unsafe { (&mut *e.cast::<Exec>(), &*g.cast::<Graph>()) };
    let result = exec.graph.same_shape(graph);
    if !info.is_null() {
        // SAFETY: writable out-pointer (caller).
        unsafe {
            *info = CUgraphExecUpdateResultInfo {
                result: result.err().unwrap_or(CU_GRAPH_EXEC_UPDATE_SUCCESS),
                error_node: ptr::null_mut(),
                error_from_node: ptr::null_mut(),
            }
        };
    }
    match result {
        Ok(()) => {
            exec.graph = graph.clone();
            SUCCESS
        }
        Err(_) => CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
    }
}

/// A launch through the table carries no host code: it runs in device-code
/// mode only. (cuda-core calls `launch` itself, with the host code cuda-host
/// gives it.)
fn result_of(launched: Result<(), LaunchError>) -> CUresult {
    match launched {
        Ok(()) => SUCCESS,
        Err(LaunchError::Context(code)) => code,
        Err(LaunchError::Invalid { .. }) => INVALID_VALUE,
        Err(
            LaunchError::NoHostCode { .. }
            | LaunchError::DeviceCodeUnavailable { .. }
            | LaunchError::ClustersNeedDeviceCode { .. },
        ) => NOT_SUPPORTED,
    }
}

/// The emulated driver's table; the entry points it lacks return
/// `CUDA_ERROR_NOT_SUPPORTED` (the error names the entry point).
pub(crate) fn api() -> cuda_driver_sys::DriverApi {
    // SAFETY: every function `symbol` returns is defined above with the C
    // signature of the driver function of its name.
    unsafe { cuda_driver_sys::DriverApi::from_lookup(symbol, cuda_driver_sys::Missing::NotSupported) }
        .expect("a partial table is never refused")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_names_what_it_implements() {
        assert!(crate::implements("cuLaunchKernelEx"));
        assert!(crate::implements("cuModuleLoadDataEx"));
        assert!(crate::implements("cuGraphLaunch") && crate::implements("cuStreamBeginCapture_v2"));
        assert!(!crate::implements("cuTensorMapEncodeTiled"));
        assert!(crate::implements("cuMemAllocManaged") && crate::implements("cuMemPrefetchAsync_v2"));
        assert!(crate::implements("cuMemAdvise_v2") && crate::implements("cuCtxEnablePeerAccess"));
        assert!(!crate::implements("no\0such"));
    }

    #[test]
    fn one_device_has_no_peer_and_managed_memory_follows_the_driver_rules() {
        use super::*;
        let _alone = context::tests::PRIMARY_CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
        let mut can = -1;
        // SAFETY: writable out-pointers and handles of this driver throughout.
        unsafe {
            assert_eq!(cuDeviceCanAccessPeer(&mut can, 0, 0), SUCCESS);
            assert_eq!(can, 0, "a device is not its own peer");
            assert_eq!(cuDeviceCanAccessPeer(&mut can, 0, 1), CUDA_ERROR_INVALID_DEVICE);
            let ctx = context::retain_primary().handle();
            assert_eq!(cuCtxEnablePeerAccess(ctx, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
            assert_eq!(cuCtxEnablePeerAccess(ptr::null_mut(), 0), INVALID_VALUE);
            assert_eq!(cuCtxDisablePeerAccess(ctx), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
            assert_eq!(cuCtxSetCurrent(ctx), SUCCESS); // the null stream is the current context's
            let mut p = 0;
            assert_eq!(cuMemAllocManaged(&mut p, 0, 1), INVALID_VALUE, "no empty ranges");
            assert_eq!(cuMemAllocManaged(&mut p, 64, 0), INVALID_VALUE, "attach flags required");
            assert_eq!(cuMemAllocManaged(&mut p, 64, 1), SUCCESS);
            let host = CUmemLocation { type_: cuda_driver_sys::CU_MEM_LOCATION_TYPE_HOST, id: 0 };
            assert_eq!(cuMemPrefetchAsync_v2(p, 64, host, 0, ptr::null_mut()), SUCCESS);
            assert_eq!(cuMemPrefetchAsync_v2(p, 64, host, 1, ptr::null_mut()), INVALID_VALUE);
            let mut v: c_int = -1;
            assert_eq!(cuMemAdvise_v2(p, 64, 3, host), SUCCESS);
            assert_eq!(cuMemRangeGetAttribute((&mut v as *mut c_int).cast(), 4, 2, p, 64), SUCCESS);
            assert_eq!(v, -1, "CU_DEVICE_CPU");
            assert_eq!(cuMemFree_v2(p), SUCCESS);
            assert_eq!(cuMemPrefetchAsync_v2(p, 64, host, 0, ptr::null_mut()), INVALID_VALUE, "freed");
            assert_eq!(cuCtxSetCurrent(ptr::null_mut()), SUCCESS);
            context::release_primary();
        }
    }
}
