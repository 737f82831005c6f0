//! [`CudaContext`] (a device's primary context) and [`CudaStream`].

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::backend::Backend;
use crate::device::Device;
use crate::driver::{self, cu, CUcontext, CUdevice, CUevent, CUstream, DriverApi};
use crate::error::{DriverError, ErrorKind};
use crate::module::{self, CudaModule};
use crate::panic::PanicRecord;

/// The name of the kernel launched last, kept without copying it on every
/// launch (launches are on the hot path; the name is read only after a fault).
#[derive(Debug)]
enum KernelName {
    Static(&'static str),
    Shared(Arc<str>),
}

impl KernelName {
    fn as_str(&self) -> &str {
        match self {
            KernelName::Static(s) => s,
            KernelName::Shared(s) => s,
        }
    }
}

/// The primary context of one GPU, shared as `Arc<CudaContext>`.
///
/// Streams, modules and buffers each hold an `Arc` to their context, so it
/// lives until the last of them is dropped. Every method that calls the
/// driver first makes this context current on the calling thread, so a
/// context may be used from any thread.
///
/// A kernel fault poisons the context it happened in (the driver's primary
/// context, which every `CudaContext` of the device shares while any is
/// alive): every later call on it fails with the same sticky error. On a GPU
/// the fault outlives the context: the driver refuses every new context of
/// the process afterwards, even once the faulted one is released and reset,
/// so only a new process uses the GPU again (`cargo oxide test` runs each
/// test in a process of its own). The CPU emulator keeps the fault with its
/// context: once every handle of it is dropped, the next `CudaContext::new`
/// gets a fresh one.
#[derive(Debug)]
pub struct CudaContext {
    ctx: CUcontext,
    /// The driver that made the context (initialised then): binds take it
    /// from here rather than from the process-wide cell.
    api: Api,
    device: CUdevice,
    ordinal: usize,
    backend: Backend,
    /// The kernel launched last on this context: a kernel fault surfaces only
    /// at a later synchronisation, and is sticky for the whole context, so the
    /// error then names this kernel.
    last_kernel: Mutex<Option<KernelName>>,
    /// The address of the text of `last_kernel`'s name (0: none), written
    /// under its lock: a launch of the kernel already recorded (the usual
    /// case, back-to-back launches) sees it equal and takes no lock. The
    /// recorded name keeps its text alive, so no other name can have it.
    last_kernel_text: AtomicUsize,
    /// Where this context's kernels report a panic (allocated on first use).
    panic_record: OnceLock<Option<PanicRecord>>,
    /// The device's compute capability, asked once: every cluster launch
    /// checks it (cuda-host, then cuda-core), and it never changes.
    compute_capability: OnceLock<(u32, u32)>,
    /// The multiprocessors and the L2's size, asked once: cuda-prims sizes
    /// every reduce's grid and every scan's prefetch by them.
    multiprocessor_count: OnceLock<u32>,
    l2_cache_bytes: OnceLock<usize>,
    /// Whether the device allocates on streams (`cuMemAllocAsync`), asked
    /// once: every buffer allocation checks it.
    memory_pools: OnceLock<bool>,
    /// The per-thread stack this context is known to have, in bytes (0
    /// until a launch asks): launches that need no more skip the driver.
    stack_size: AtomicUsize,
    /// Held while the stack is raised, so that two threads do not both.
    stack_raise: Mutex<()>,
}

/// The driver table a context holds (its `Debug` names it only).
#[derive(Clone, Copy)]
struct Api(&'static DriverApi);

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DriverApi")
    }
}

// SAFETY: a CUcontext is a process-wide handle, not tied to the thread that
// retained it; the driver API is thread-safe and every method binds the
// context to the calling thread before using it. The struct's mutable parts
// are behind a Mutex, a OnceLock or an atomic.
unsafe impl Send for CudaContext {}
// SAFETY: see `Send`; no method mutates the struct, the driver serialises
// concurrent calls on the same context internally.
unsafe impl Sync for CudaContext {}

impl CudaContext {
    /// Retains the primary context of GPU `ordinal` and makes it current on
    /// this thread. Fails with [`ErrorKind::DriverNotFound`] without a
    /// driver and [`ErrorKind::NoDevice`] without such a GPU.
    ///
    /// Every call while a handle of the device's context is alive returns
    /// that same `Arc`: the context is released (after a wait for its work,
    /// which would break another thread's graph capture) only when the last
    /// handle of the process goes, not whenever one of many does.
    pub fn new(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
        static LIVE: Mutex<Vec<(Backend, usize, Weak<CudaContext>)>> = Mutex::new(Vec::new());
        driver::initialized()?;
        let backend = driver::backend()?;
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|(_, _, w)| w.strong_count() > 0);
        if let Some(ctx) = live.iter().find(|(b, o, _)| *b == backend && *o == ordinal).and_then(|(_, _, w)| w.upgrade()) {
            ctx.bind_to_thread()?;
            return Ok(ctx);
        }
        let ctx = Self::retain(ordinal, backend)?;
        live.push((backend, ordinal, Arc::downgrade(&ctx)));
        Ok(ctx)
    }

    /// Retains the primary context of GPU `ordinal` (a new handle).
    fn retain(ordinal: usize, backend: Backend) -> Result<Arc<CudaContext>, DriverError> {
        let d = driver::initialized()?;
        let device = Device::get(ordinal)?.raw();
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: out-pointer to a local; `device` came from cuDeviceGet.
        unsafe { cu!(d, cuDevicePrimaryCtxRetain(&mut ctx, device)) }.map_err(|e| {
            if !e.is_sticky() {
                return e;
            }
            e.with_detail(
                "a kernel fault earlier in this process left the GPU unusable for the rest of it: the CUDA \
                 driver refuses new contexts after a fault. Run what follows in a new process (`cargo oxide \
                 test` runs each test in a process of its own).",
            )
        })?;
        // From here on, Drop releases the retained context.
        let this = Arc::new(CudaContext {
            ctx,
            api: Api(d),
            device,
            ordinal,
            backend,
            last_kernel: Mutex::new(None),
            last_kernel_text: AtomicUsize::new(0),
            panic_record: OnceLock::new(),
            compute_capability: OnceLock::new(),
            multiprocessor_count: OnceLock::new(),
            l2_cache_bytes: OnceLock::new(),
            memory_pools: OnceLock::new(),
            stack_size: AtomicUsize::new(0),
            stack_raise: Mutex::new(()),
        });
        this.bind_to_thread()?;
        Ok(this)
    }

    /// The number of CUDA GPUs (0 when the driver is installed but sees none);
    /// the same as [`Device::count`].
    pub fn device_count() -> Result<usize, DriverError> {
        Device::count()
    }

    /// Remembers `kernel` (a name for people to read) as the kernel launched
    /// last on this context, so that a fault names it. This crate's launch
    /// functions record every launch themselves (under the Rust path when
    /// `cuda-host` gives the host code, else the PTX name); call this for a
    /// launch made another way.
    pub fn record_launch(&self, kernel: &str) {
        self.remember(KernelName::Shared(Arc::from(kernel)));
    }

    /// [`record_launch`](Self::record_launch) for a name that lives forever
    /// (cuda-host's kernel table): no allocation on the launch path.
    #[inline]
    pub fn record_launch_static(&self, kernel: &'static str) {
        if !self.recorded_last(kernel) {
            self.remember(KernelName::Static(kernel));
        }
    }

    #[inline]
    pub(crate) fn record_launch_shared(&self, kernel: &Arc<str>) {
        if !self.recorded_last(kernel) {
            self.remember(KernelName::Shared(kernel.clone()));
        }
    }

    /// Whether `name` (this very text, not an equal one) is recorded as the
    /// kernel launched last.
    #[inline]
    fn recorded_last(&self, name: &str) -> bool {
        self.last_kernel_text.load(Ordering::Acquire) == name.as_ptr() as usize
    }

    /// Records `f` as launched last under the name a fault report will give:
    /// its host code's (cuda-host's Rust path) if it has one, else the PTX
    /// name. Every launch path of this crate ends here.
    #[inline]
    pub(crate) fn record_launch_of(&self, f: &crate::CudaFunction, host: Option<&cuda_emulator::HostKernel>) {
        match host.map(|h| h.name()).filter(|n| !n.is_empty()) {
            Some(name) => self.record_launch_static(name),
            None => self.record_launch_shared(&f.name),
        }
    }

    /// Records `name` under the lock (out of line: back-to-back launches of
    /// one kernel skip it).
    #[inline(never)]
    fn remember(&self, name: KernelName) {
        let text = name.as_str().as_ptr() as usize;
        if let Ok(mut last) = self.last_kernel.lock() {
            *last = Some(name);
            self.last_kernel_text.store(text, Ordering::Release);
        }
    }

    /// Adds the name of the last launched kernel to errors that mean a kernel
    /// faulted (they are sticky: every later call on the context reports them).
    pub(crate) fn explain(&self, err: DriverError) -> DriverError {
        if !err.is_sticky() {
            return err;
        }
        let last = self.last_kernel.lock().ok().and_then(|l| l.as_ref().map(|n| n.as_str().to_string()));
        let panic = self.panic_record.get().and_then(|r| r.as_ref()).and_then(PanicRecord::read);
        let err = match panic {
            Some(p) => err.with_device_panic(p),
            None => err,
        };
        let emulated = self.backend.is_emulated();
        // SAFETY: an emulated context's handle is the emulated driver's.
        let detail = if emulated { unsafe { cuda_emulator::fault_detail(self.ctx) } } else { None };
        let err = match detail {
            Some(detail) => err.with_detail(detail),
            None => err,
        };
        let (place, after) = if emulated {
            ("in the CPU emulator", "; once every handle of it is dropped, CudaContext::new gives a fresh one")
        } else {
            ("on the GPU", ", and so is the GPU for the rest of this process")
        };
        match last {
            Some(k) => err.with_detail(format!(
                "kernel `{k}` failed {place} (it was the last launched on this context). \
                 The context is unusable from now on{after}."
            )),
            None => err,
        }
    }

    /// The device address of this context's panic record, allocating it on
    /// first use; `None` if pinned memory could not be had (panics are then
    /// only printed, not reported in the error).
    pub(crate) fn panic_record_address(&self) -> Option<u64> {
        self.panic_record
            .get_or_init(|| self.bind().ok().and_then(|_| PanicRecord::allocate().ok()))
            .as_ref()
            .map(PanicRecord::device_address)
    }

    /// What runs this context's kernels: the GPU, or the CPU emulator in one
    /// of its modes (chosen once per process, from `OXIDE_EMULATE`). Code
    /// that must act differently asks here, never the environment.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Whether buffers of this context are allocated and freed in stream
    /// order from the device's memory pool (`cuMemAllocAsync` /
    /// `cuMemFreeAsync`), which every GPU since CUDA 11.2 and the CPU
    /// emulator do; else with `cuMemAlloc`, and a drop waits for the context.
    #[inline]
    pub fn has_memory_pools(&self) -> bool {
        match self.memory_pools.get() {
            Some(&pools) => pools,
            None => self.ask_memory_pools(),
        }
    }

    /// [`has_memory_pools`](Self::has_memory_pools) the first time.
    #[cold]
    fn ask_memory_pools(&self) -> bool {
        *self.memory_pools.get_or_init(|| {
            self.device().attribute(driver::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED).is_ok_and(|v| v == 1)
        })
    }

    /// The ordinal this context was created for.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The raw `CUcontext` handle.
    pub fn raw(&self) -> *mut c_void {
        self.ctx
    }

    /// The raw `CUdevice` handle.
    pub fn cu_device(&self) -> i32 {
        self.device
    }

    /// The GPU this context belongs to, for its queries ([`Device::name`],
    /// [`Device::compute_capability`], …; the methods below forward to it).
    pub fn device(&self) -> Device {
        Device::from_raw(self.device, self.ordinal)
    }

    /// The device's marketing name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Result<String, DriverError> {
        self.device().name()
    }

    /// Queries a `CUdevice_attribute` (see `cuda.h` for the numbers).
    pub fn attribute(&self, attribute: i32) -> Result<i32, DriverError> {
        self.device().attribute(attribute)
    }

    /// Compute capability `(major, minor)`, e.g. `(9, 0)` for an H100/H200.
    pub fn compute_capability(&self) -> Result<(u32, u32), DriverError> {
        asked_once(&self.compute_capability, || self.device().compute_capability())
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> Result<u32, DriverError> {
        asked_once(&self.multiprocessor_count, || self.device().multiprocessor_count())
    }

    /// Bytes of L2 cache (0 where the driver does not say).
    pub fn l2_cache_bytes(&self) -> Result<usize, DriverError> {
        asked_once(&self.l2_cache_bytes, || self.device().l2_cache_bytes())
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> Result<usize, DriverError> {
        self.device().total_memory()
    }

    /// Free and total device memory in bytes, as the driver sees them now
    /// (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(usize, usize), DriverError> {
        let d = self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two size_t; the context is current.
        unsafe { cu!(d, cuMemGetInfo_v2(&mut free, &mut total))? };
        Ok((free, total))
    }

    /// The device's launch and memory limits (several `cuDeviceGetAttribute`s).
    pub fn limits(&self) -> Result<DeviceLimits, DriverError> {
        self.device().limits()
    }

    /// Largest number of threads in one block (`MAX_THREADS_PER_BLOCK`).
    pub fn max_threads_per_block(&self) -> Result<u32, DriverError> {
        Ok(self.attribute(1)?.max(0) as u32)
    }

    /// Threads in a warp (32 on every NVIDIA GPU so far).
    pub fn warp_size(&self) -> Result<u32, DriverError> {
        Ok(self.attribute(10)?.max(0) as u32)
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`).
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.bind().map(drop)
    }

    /// Binds the context and hands out the driver table.
    #[inline]
    pub(crate) fn bind(&self) -> Result<&'static DriverApi, DriverError> {
        let d = self.api.0;
        // Asking is cheaper than setting, and every launch binds: most of the
        // time the context is current already.
        let mut current: CUcontext = ptr::null_mut();
        // SAFETY: out-pointer to a local.
        unsafe { cu!(d, cuCtxGetCurrent(&mut current))? };
        if current != self.ctx {
            return self.make_current(d);
        }
        Ok(d)
    }

    /// [`bind`](Self::bind) where another context (or none) is current.
    #[cold]
    #[inline(never)]
    fn make_current(&self, d: &'static DriverApi) -> Result<&'static DriverApi, DriverError> {
        // SAFETY: `self.ctx` is a retained, live primary context.
        unsafe { cu!(d, cuCtxSetCurrent(self.ctx))? };
        Ok(d)
    }

    /// The legacy default (NULL) stream: it waits for, and is waited for
    /// by, all other blocking streams of the context.
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        self.wrap_stream(ptr::null_mut(), false)
    }

    /// The `CudaStream` over the driver's `stream` of this context, which
    /// it destroys when the last holder lets go if `owned`.
    fn wrap_stream(self: &Arc<Self>, stream: CUstream, owned: bool) -> Arc<CudaStream> {
        Arc::new(CudaStream::from_handle(Arc::new(StreamHandle {
            stream,
            ctx: self.clone(),
            owned,
            capturing: AtomicBool::new(false),
            capture: Mutex::new(None),
        })))
    }

    /// Creates a new stream. It is a blocking stream (`CU_STREAM_DEFAULT`):
    /// work on it runs concurrently with other created streams but is
    /// ordered with the legacy default stream.
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        let d = self.bind()?;
        let mut stream: CUstream = ptr::null_mut();
        // SAFETY: out-pointer to a local; the flags value is valid.
        unsafe { cu!(d, cuStreamCreate(&mut stream, driver::CU_STREAM_DEFAULT))? };
        Ok(self.wrap_stream(stream, true))
    }

    /// Creates a stream that does not synchronise with the legacy default
    /// stream (`CU_STREAM_NON_BLOCKING`): order it against other streams
    /// with events ([`CudaStream::wait`]).
    pub fn new_stream_non_blocking(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        let d = self.bind()?;
        let mut stream: CUstream = ptr::null_mut();
        // SAFETY: out-pointer to a local; the flags value is valid.
        unsafe { cu!(d, cuStreamCreate(&mut stream, driver::CU_STREAM_NON_BLOCKING))? };
        Ok(self.wrap_stream(stream, true))
    }

    /// Creates an event that can time work ([`CudaEvent::elapsed_ms`]).
    pub fn new_event(self: &Arc<Self>) -> Result<CudaEvent, DriverError> {
        CudaEvent::create(self, driver::CU_EVENT_DEFAULT)
    }

    /// Creates an event without timing (`CU_EVENT_DISABLE_TIMING`): cheaper
    /// to record and wait for; for ordering only.
    pub fn new_event_without_timing(self: &Arc<Self>) -> Result<CudaEvent, DriverError> {
        CudaEvent::create(self, driver::CU_EVENT_DISABLE_TIMING)
    }

    /// The per-thread stack of this context's kernels in bytes
    /// (`CU_LIMIT_STACK_SIZE`; the driver starts with 1 KiB and raises it by
    /// itself for what it can see of a kernel's calls).
    pub fn stack_size(&self) -> Result<usize, DriverError> {
        let d = self.bind()?;
        let mut bytes = 0usize;
        // SAFETY: writes one size_t; the context is current.
        unsafe { cu!(d, cuCtxGetLimit(&mut bytes, driver::CU_LIMIT_STACK_SIZE))? };
        Ok(bytes)
    }

    /// Makes the per-thread stack at least `bytes`, raising
    /// `CU_LIMIT_STACK_SIZE` if it is smaller; never lowers it. A kernel that
    /// calls through pointers (`core::fmt` does, through `dyn Write` and
    /// `dyn Display`) may need more stack than the driver can see; the
    /// device linker bounds it and every launch through cuda-host asks for
    /// it here first (docs/DESIGN.md, "The device stack").
    ///
    /// What the context is known to have is remembered, so a launch that
    /// needs no more costs one atomic load. A raise waits for the work
    /// already submitted to the context: the driver blocks until the tasks
    /// before it are complete, then the new size applies to later launches.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cuda_core::DriverError> {
    /// let ctx = cuda_core::CudaContext::new(0)?;
    /// ctx.ensure_stack_size(4096)?;
    /// assert!(ctx.stack_size()? >= 4096);
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn ensure_stack_size(&self, bytes: usize) -> Result<(), DriverError> {
        if bytes <= self.stack_size.load(Ordering::Acquire) {
            return Ok(());
        }
        self.raise_stack_size(bytes)
    }

    /// [`ensure_stack_size`](Self::ensure_stack_size) past what the context
    /// is known to have.
    #[cold]
    fn raise_stack_size(&self, bytes: usize) -> Result<(), DriverError> {
        let _raising = self.stack_raise.lock().unwrap_or_else(|p| p.into_inner());
        let mut current = self.stack_size()?;
        if current < bytes {
            // The driver waits for the context's work to raise it, which a
            // capture cannot record: say so rather than a bare invalidation.
            const WHAT: &str = "raising the per-thread stack size (cuCtxSetLimit) for a kernel's first launch; \
                                launch the kernel once before capturing, or call CudaContext::ensure_stack_size";
            if crate::graph::break_captures_of(self, WHAT) {
                return Err(crate::graph::refused_in_capture(WHAT));
            }
            let d = self.bind()?;
            // SAFETY: plain values; the context is current.
            unsafe { cu!(d, cuCtxSetLimit(driver::CU_LIMIT_STACK_SIZE, bytes)) }.map_err(|e| {
                self.explain(e).with_detail(format!(
                    "a kernel needs a stack of {bytes} bytes per thread (docs/DESIGN.md, The device stack); \
                     the driver could not give it"
                ))
            })?;
            // The driver may round the size up.
            current = self.stack_size()?;
        }
        self.stack_size.fetch_max(current, Ordering::AcqRel);
        Ok(())
    }

    /// Waits until all work submitted to this context has finished.
    ///
    /// While a stream of this context captures a graph this breaks the
    /// capture (as the driver does): the call fails, and so does the
    /// capture's end, naming this call.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        if crate::graph::break_captures_of(self, "CudaContext::synchronize") {
            return Err(crate::graph::refused_in_capture("CudaContext::synchronize"));
        }
        let d = self.bind()?;
        // SAFETY: no arguments; the context is current.
        unsafe { cu!(d, cuCtxSynchronize()) }.map_err(|e| self.explain(e))
    }

    /// JIT-compiles PTX text and loads it as a module. On failure the
    /// error's [`detail`](DriverError::detail) holds the JIT log.
    pub fn load_module_ptx(self: &Arc<Self>, ptx: &str) -> Result<Arc<CudaModule>, DriverError> {
        module::load_ptx(self, ptx)
    }

    /// Loads a cubin or fatbin image (PTX in a fatbin is JIT-compiled).
    pub fn load_module_image(
        self: &Arc<Self>,
        image: &[u8],
    ) -> Result<Arc<CudaModule>, DriverError> {
        module::load_image(self, image)
    }

    /// Runs `work` — something that waits for the whole context, such as a
    /// library handle's teardown (`cublasDestroy`) — now, or, while a graph
    /// capture is under way on this context on any thread, when the last of
    /// them ends: the driver invalidates a capture that a context-wide wait
    /// reaches, whichever thread waits. No capture begins while `work` runs.
    /// cuda-core puts its own such waits (a module's unload) off this way.
    pub fn run_outside_captures(&self, work: impl FnOnce() + Send + 'static) {
        crate::graph::after_captures(self, Box::new(work));
    }

    /// Whether two contexts are the same driver context.
    #[inline]
    pub(crate) fn same(&self, other: &CudaContext) -> bool {
        self.ctx == other.ctx
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        if let Some(d) = driver::loaded() {
            // SAFETY: the context was retained in `new` and is released once,
            // here, after its pending work; errors are ignored (never panic).
            // The last release destroys the primary context.
            unsafe {
                (d.cuCtxSetCurrent)(self.ctx);
                (d.cuCtxSynchronize)();
                (d.cuDevicePrimaryCtxRelease_v2)(self.device);
            }
        }
    }
}

/// A queue of work on one context; `Arc`-shared.
///
/// Work submitted to one stream runs in order. The stream keeps its context alive.
#[derive(Debug)]
pub struct CudaStream {
    handle: Arc<StreamHandle>,
    /// What libraries keep on this stream between calls
    /// ([`CudaStream::with_local`]); dropped with it.
    locals: crate::stream_local::StreamLocals,
}

/// The driver's stream, destroyed (if created here) when its last holder
/// lets go: the [`CudaStream`], and every buffer whose work queued on it a
/// later use on another stream may have to wait for (memory.rs records an
/// event on it then, which needs the stream alive).
#[derive(Debug)]
pub(crate) struct StreamHandle {
    stream: CUstream,
    ctx: Arc<CudaContext>,
    owned: bool,
    /// Whether `capture` holds one: the check every buffer use makes, kept
    /// off the lock.
    capturing: AtomicBool,
    /// The capture under way on this stream, if any (graph.rs).
    capture: Mutex<Option<Arc<crate::graph::CaptureRecord>>>,
}

// SAFETY: a CUstream is a process-wide handle; the driver API accepts it from
// any thread once its context is current, which every method ensures.
unsafe impl Send for StreamHandle {}
// SAFETY: see `Send`; the struct is immutable and the driver serialises
// concurrent submissions to one stream.
unsafe impl Sync for StreamHandle {}

impl StreamHandle {
    /// The raw `CUstream` (null for the legacy default stream).
    #[inline]
    pub(crate) fn raw(&self) -> CUstream {
        self.stream
    }

    /// The context the stream belongs to.
    #[inline]
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Whether a capture is under way on this stream (one atomic load).
    #[inline]
    pub(crate) fn is_capturing(&self) -> bool {
        self.capturing.load(Ordering::Acquire)
    }

    /// The capture under way on this stream, if any.
    #[inline]
    pub(crate) fn capture(&self) -> Option<Arc<crate::graph::CaptureRecord>> {
        if !self.is_capturing() {
            return None;
        }
        self.capture_record()
    }

    /// The capture under way, read under its lock.
    #[cold]
    fn capture_record(&self) -> Option<Arc<crate::graph::CaptureRecord>> {
        self.capture.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts or ends (None) this stream's part in a capture.
    pub(crate) fn set_capture(&self, capture: Option<Arc<crate::graph::CaptureRecord>>) {
        let mut slot = self.capture.lock().unwrap_or_else(|e| e.into_inner());
        self.capturing.store(capture.is_some(), Ordering::Release);
        *slot = capture;
    }
}

impl CudaStream {
    /// A stream over `handle`: one just created, or one held elsewhere (a
    /// buffer freeing itself on the stream it was allocated on), which keeps
    /// no values of its own.
    pub(crate) fn from_handle(handle: Arc<StreamHandle>) -> CudaStream {
        CudaStream { handle, locals: Default::default() }
    }

    /// The values kept on this stream (stream_local.rs).
    #[inline]
    pub(crate) fn locals(&self) -> &crate::stream_local::StreamLocals {
        &self.locals
    }

    /// The shared handle, for buffers that must be able to order later
    /// work after this stream's.
    #[inline]
    pub(crate) fn handle(&self) -> &Arc<StreamHandle> {
        &self.handle
    }

    /// The context the stream belongs to.
    #[inline]
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.handle.ctx
    }

    /// Waits until all work submitted to this stream has finished.
    ///
    /// On a stream that captures a graph this breaks the capture (a graph
    /// cannot record a wait of the host): the call fails, and so does the
    /// capture's end, naming this call.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.refuse_in_capture("CudaStream::synchronize")?;
        let d = self.handle.ctx.bind()?;
        // SAFETY: the stream is live (owned by self, or the NULL stream).
        unsafe { cu!(d, cuStreamSynchronize(self.handle.stream)) }.map_err(|e| self.handle.ctx.explain(e))
    }

    /// The raw `CUstream` handle (null for the default stream).
    #[inline]
    pub fn raw(&self) -> *mut c_void {
        self.handle.stream
    }

    /// Whether this is the legacy default (NULL) stream.
    pub fn is_default(&self) -> bool {
        self.handle.stream.is_null()
    }

    /// Whether all work submitted so far has finished (`cuStreamQuery`);
    /// never blocks. A failed kernel is reported as an error.
    pub fn is_complete(&self) -> Result<bool, DriverError> {
        self.refuse_in_capture("CudaStream::is_complete")?;
        let d = self.handle.ctx.bind()?;
        // SAFETY: the stream is live.
        match unsafe { cu!(d, cuStreamQuery(self.handle.stream)) } {
            Ok(()) => Ok(true),
            Err(e) if e.code() == driver::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(self.handle.ctx.explain(e)),
        }
    }

    /// Makes work submitted to this stream from now on wait until `event`
    /// has completed (`cuStreamWaitEvent`); the host does not block. The
    /// event may belong to another context (device).
    pub fn wait(&self, event: &CudaEvent) -> Result<(), DriverError> {
        let d = self.handle.ctx.bind()?;
        // SAFETY: stream and event are live; flags must be 0.
        unsafe { cu!(d, cuStreamWaitEvent(self.handle.stream, event.event, 0)) }
    }

    /// Creates an event that can time work ([`CudaEvent::elapsed_ms`]) and
    /// records it on this stream: two of them bracket the work to time.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cuda_core::DriverError> {
    /// let ctx = cuda_core::CudaContext::new(0)?;
    /// let stream = ctx.default_stream();
    /// let start = stream.record_event()?;
    /// // ... launch the work to time on `stream` ...
    /// let end = stream.record_event()?;
    /// println!("{:.3} ms", start.elapsed_ms(&end)?); // waits for `end`
    /// # Ok(()) }
    /// ```
    pub fn record_event(&self) -> Result<CudaEvent, DriverError> {
        let event = self.handle.ctx.new_event()?;
        event.record(self)?;
        Ok(event)
    }

    /// Creates an event without timing and records it on this stream: the
    /// cheaper marker for ordering only ([`CudaStream::wait`],
    /// [`CudaEvent::synchronize`]); [`CudaEvent::elapsed_ms`] refuses it.
    pub fn record_event_without_timing(&self) -> Result<CudaEvent, DriverError> {
        let event = self.handle.ctx.new_event_without_timing()?;
        event.record(self)?;
        Ok(event)
    }

    /// Runs `f` on a driver thread once all work submitted to this stream
    /// before it has finished; later work on the stream waits for `f`
    /// (`cuLaunchHostFunc`).
    ///
    /// `f` must not call CUDA (no `cuda-core` method, no kernel launch, no
    /// copy), nor drop a captured CUDA object (a buffer, stream, context or
    /// pinned buffer, whose drop calls the driver): the driver forbids it,
    /// and such a call fails or deadlocks (it cannot corrupt memory). Send
    /// results out through a channel or an atomic instead. It
    /// should be short, since it holds up the stream. A panic in `f` is
    /// caught and printed to stderr (it cannot unwind into the driver).
    /// If the submission fails, `f` is dropped without running.
    pub fn launch_host_fn<F>(&self, f: F) -> Result<(), DriverError>
    where
        F: FnOnce() + Send + 'static,
    {
        type Callback = Box<dyn FnOnce() + Send + 'static>;
        unsafe extern "C" fn trampoline(data: *mut c_void) {
            // SAFETY: `data` is the `Box<Callback>` leaked below; the driver
            // calls this exactly once per successful submission.
            let f = unsafe { Box::from_raw(data.cast::<Callback>()) };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
                eprintln!("cuda-core: a stream host function panicked; the panic was caught");
            }
        }
        // A capture would replay the callback, which runs once: graphs take
        // theirs through `Graph::add_host`.
        self.refuse_in_capture("CudaStream::launch_host_fn (a FnOnce, which a graph cannot replay: use Graph::add_host)")?;
        let d = self.handle.ctx.bind()?;
        let data = Box::into_raw(Box::new(Box::new(f) as Callback));
        // SAFETY: the stream is live; `trampoline` takes ownership of `data`
        // when the driver runs it. `Callback` is Send + 'static, so running
        // it later on another thread is fine.
        let result = unsafe { cu!(d, cuLaunchHostFunc(self.handle.stream, trampoline, data.cast())) };
        if result.is_err() {
            // SAFETY: not submitted, so we still own `data`; freed once.
            drop(unsafe { Box::from_raw(data) });
        }
        result.map_err(|e| self.handle.ctx.explain(e))
    }
}

/// Launch and memory limits of one device, from [`CudaContext::limits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceLimits {
    /// Most threads in one block (1024 on current GPUs).
    pub max_threads_per_block: u32,
    /// Largest block dimensions (x, y, z).
    pub max_block_dim: (u32, u32, u32),
    /// Largest grid dimensions (x, y, z).
    pub max_grid_dim: (u32, u32, u32),
    /// Shared memory a block may use without opting in (static + dynamic), bytes.
    pub max_shared_memory_per_block: u32,
    /// Shared memory a block may use after opting in with
    /// [`CudaFunction::set_max_dynamic_shared_memory`](crate::CudaFunction::set_max_dynamic_shared_memory), bytes.
    pub max_shared_memory_per_block_optin: u32,
    /// Shared memory of one multiprocessor, bytes.
    pub max_shared_memory_per_multiprocessor: u32,
    /// Constant memory, bytes.
    pub total_constant_memory: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// 32-bit registers available to one block.
    pub max_registers_per_block: u32,
    /// Most resident threads on one multiprocessor.
    pub max_threads_per_multiprocessor: u32,
    /// Number of multiprocessors.
    pub multiprocessor_count: u32,
}

/// A CUDA event: a marker in a stream that the host or other streams can
/// wait for, and that can time the work between two markers.
///
/// The event keeps its context alive; it is destroyed on drop (the driver
/// defers that until a pending record has completed).
#[derive(Debug)]
pub struct CudaEvent {
    event: CUevent,
    ctx: Arc<CudaContext>,
    timing: bool,
}

// SAFETY: a CUevent is a process-wide handle; every method binds its context
// first, and the driver synchronises concurrent use.
unsafe impl Send for CudaEvent {}
// SAFETY: see `Send`; the struct is immutable.
unsafe impl Sync for CudaEvent {}

impl CudaEvent {
    fn create(ctx: &Arc<CudaContext>, flags: u32) -> Result<CudaEvent, DriverError> {
        let d = ctx.bind()?;
        let mut event: CUevent = ptr::null_mut();
        // SAFETY: out-pointer to a local; the flags are valid values.
        unsafe { cu!(d, cuEventCreate(&mut event, flags))? };
        Ok(CudaEvent {
            event,
            ctx: ctx.clone(),
            timing: flags & driver::CU_EVENT_DISABLE_TIMING == 0,
        })
    }

    /// Records the event on `stream`: it completes when the work submitted
    /// to `stream` so far has finished. Re-recording moves the marker.
    /// The stream must belong to the event's context.
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if !self.ctx.same(stream.context()) {
            return Err(DriverError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the event belongs to device {} but the stream to device {}",
                    self.ctx.ordinal(),
                    stream.context().ordinal()
                ),
                "CudaEvent::record",
            ));
        }
        self.record_on(stream.handle())
    }

    /// Records the event on a stream handle of the event's context (the
    /// caller checks): a stream's own, or one a buffer kept (stream_order.rs).
    pub(crate) fn record_on(&self, stream: &StreamHandle) -> Result<(), DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: event and stream are live (the handle keeps the stream) and
        // of the current context.
        unsafe { cu!(d, cuEventRecord(self.event, stream.raw())) }
    }

    /// Whether the work before the last record has finished (`cuEventQuery`;
    /// true for an event never recorded). Never blocks.
    pub fn is_complete(&self) -> Result<bool, DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: the event is live.
        match unsafe { cu!(d, cuEventQuery(self.event)) } {
            Ok(()) => Ok(true),
            Err(e) if e.code() == driver::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(self.ctx.explain(e)),
        }
    }

    /// Blocks until the work before the last record has finished.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: the event is live.
        unsafe { cu!(d, cuEventSynchronize(self.event)) }.map_err(|e| self.ctx.explain(e))
    }

    /// Milliseconds between this event and the later event `end` (about
    /// 0.5 µs resolution). Waits until both have completed (the work timed
    /// may still run when this is called), so both must have been recorded;
    /// both must time (made by [`CudaContext::new_event`] or
    /// [`CudaStream::record_event`], not the `_without_timing` kinds).
    pub fn elapsed_ms(&self, end: &CudaEvent) -> Result<f32, DriverError> {
        if !self.timing || !end.timing {
            return Err(DriverError::new(
                ErrorKind::InvalidArgument,
                "elapsed time needs two events that time (CudaContext::new_event or \
                 CudaStream::record_event); an event made without timing only orders work",
                "CudaEvent::elapsed_ms",
            ));
        }
        // cuEventElapsedTime answers CUDA_ERROR_NOT_READY while either
        // event's work still runs: wait for both first.
        self.synchronize()?;
        end.synchronize()?;
        let d = self.ctx.bind()?;
        let mut ms = 0f32;
        // SAFETY: writes one float; both events are live.
        unsafe { cu!(d, cuEventElapsedTime(&mut ms, self.event, end.event))? };
        Ok(ms)
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The raw `CUevent` handle.
    pub fn raw(&self) -> *mut c_void {
        self.event
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if let Some(d) = driver::loaded() {
            // SAFETY: created in `create`, destroyed once; errors ignored.
            unsafe {
                (d.cuCtxSetCurrent)(self.ctx.ctx);
                (d.cuEventDestroy_v2)(self.event);
            }
        }
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if let Some(d) = driver::loaded() {
            // SAFETY: the stream was created by `new_stream` and is destroyed
            // once; the driver lets queued work finish first. Errors ignored.
            unsafe {
                (d.cuCtxSetCurrent)(self.ctx.ctx);
                (d.cuStreamDestroy_v2)(self.stream);
            }
        }
    }
}

/// The device's answer kept in `cell`: asked the first time, read after
/// (two threads may both ask; the device gives both the same answer).
#[inline]
fn asked_once<T: Copy>(cell: &OnceLock<T>, ask: impl FnOnce() -> Result<T, DriverError>) -> Result<T, DriverError> {
    if let Some(&known) = cell.get() {
        return Ok(known);
    }
    let answer = ask()?;
    Ok(*cell.get_or_init(|| answer))
}
