//! [`CudaContext`] (a device's primary context) and [`CudaStream`].

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock};

use crate::driver::{self, cu, CUcontext, CUdevice, CUstream};
use crate::error::{DriverError, ErrorKind};
use crate::module::{self, CudaModule};
use crate::panic::PanicRecord;

/// The primary context of one GPU, shared as `Arc<CudaContext>`.
///
/// Streams, modules and buffers each hold an `Arc` to their context, so it
/// lives until the last of them is dropped. Every method that calls the
/// driver first makes this context current on the calling thread, so a
/// context may be used from any thread.
#[derive(Debug)]
pub struct CudaContext {
    ctx: CUcontext,
    device: CUdevice,
    ordinal: usize,
    /// The kernel launched last on this context: a kernel fault surfaces only
    /// at a later synchronisation, and is sticky for the whole context, so the
    /// error then names this kernel.
    last_kernel: Mutex<Option<String>>,
    /// Where this context's kernels report a panic (allocated on first use).
    panic_record: OnceLock<Option<PanicRecord>>,
}

// SAFETY: a CUcontext is a process-wide handle, not tied to the thread that
// retained it; the driver API is thread-safe and every method binds the
// context to the calling thread before using it. The struct is immutable.
unsafe impl Send for CudaContext {}
// SAFETY: see `Send`; no method mutates the struct, the driver serialises
// concurrent calls on the same context internally.
unsafe impl Sync for CudaContext {}

impl CudaContext {
    /// Retains the primary context of GPU `ordinal` and makes it current on
    /// this thread. Fails with [`ErrorKind::DriverNotFound`] without a
    /// driver and [`ErrorKind::NoDevice`] without such a GPU.
    pub fn new(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
        let d = driver::initialized()?;
        let count = Self::device_count()?;
        if ordinal >= count {
            let err = if count == 0 {
                DriverError::from_code(100, "cuDeviceGetCount")
                    .with_message("no CUDA GPU found: the NVIDIA driver is loaded but reports no device. `cargo oxide doctor` checks the setup.")
            } else {
                DriverError::from_code(101, "cuDeviceGet").with_message(format!(
                    "there is no CUDA device {ordinal}: the driver reports {count} device(s), ordinals 0..={}",
                    count - 1
                ))
            };
            return Err(err.with_kind(ErrorKind::NoDevice));
        }
        let mut device: CUdevice = 0;
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: out-pointers to locals; ordinal < count fits in c_int.
        unsafe {
            cu!(d, cuDeviceGet(&mut device, ordinal as c_int))?;
            cu!(d, cuDevicePrimaryCtxRetain(&mut ctx, device))?;
        }
        // From here on, Drop releases the retained context.
        let this = Arc::new(CudaContext {
            ctx,
            device,
            ordinal,
            last_kernel: Mutex::new(None),
            panic_record: OnceLock::new(),
        });
        this.bind_to_thread()?;
        Ok(this)
    }

    /// The number of CUDA GPUs (0 when the driver is installed but sees none).
    pub fn device_count() -> Result<usize, DriverError> {
        let d = match driver::initialized() {
            Err(e) if e.code() == 100 => return Ok(0),
            other => other?,
        };
        let mut n: c_int = 0;
        // SAFETY: writes one int.
        unsafe { cu!(d, cuDeviceGetCount(&mut n))? };
        Ok(n.max(0) as usize)
    }

    /// Remembers `kernel` (a name for people to read) as the kernel launched
    /// last on this context; [`launch_kernel`](crate::launch_kernel) calls it,
    /// and `cuda-host` replaces the PTX name with the Rust path.
    pub fn record_launch(&self, kernel: &str) {
        if let Ok(mut last) = self.last_kernel.lock() {
            *last = Some(kernel.to_string());
        }
    }

    /// Adds the name of the last launched kernel to errors that mean a kernel
    /// faulted (they are sticky: every later call on the context reports them).
    pub(crate) fn explain(&self, err: DriverError) -> DriverError {
        const KERNEL_FAULTS: [i32; 8] = [700, 702, 714, 715, 716, 717, 718, 719];
        if !KERNEL_FAULTS.contains(&err.code()) {
            return err;
        }
        let last = self.last_kernel.lock().ok().and_then(|l| l.clone());
        let panic = self.panic_record.get().and_then(|r| r.as_ref()).and_then(PanicRecord::read);
        let err = match panic {
            Some(p) => err.with_device_panic(p),
            None => err,
        };
        match last {
            Some(k) => err.with_detail(format!(
                "kernel `{k}` failed on the GPU (it was the last launched on this context). \
                 The context is unusable from now on."
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

    /// The device's marketing name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Result<String, DriverError> {
        let d = self.bind()?;
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        unsafe {
            cu!(
                d,
                cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, self.device)
            )?
        };
        buf[255] = 0;
        // SAFETY: `buf` is NUL-terminated (enforced just above).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// Queries a `CUdevice_attribute` (see `cuda.h` for the numbers).
    pub fn attribute(&self, attribute: i32) -> Result<i32, DriverError> {
        let d = self.bind()?;
        let mut v: c_int = 0;
        // SAFETY: writes one int; an unknown attribute is reported as an error.
        unsafe { cu!(d, cuDeviceGetAttribute(&mut v, attribute, self.device))? };
        Ok(v)
    }

    /// Compute capability `(major, minor)`, e.g. `(9, 0)` for an H100/H200.
    pub fn compute_capability(&self) -> Result<(u32, u32), DriverError> {
        let major = self.attribute(driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major as u32, minor as u32))
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> Result<u32, DriverError> {
        Ok(self.attribute(driver::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32)
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> Result<usize, DriverError> {
        let d = self.bind()?;
        let mut bytes = 0usize;
        // SAFETY: writes one size_t.
        unsafe { cu!(d, cuDeviceTotalMem_v2(&mut bytes, self.device))? };
        Ok(bytes)
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`).
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.bind().map(drop)
    }

    /// Binds the context and hands out the driver table.
    pub(crate) fn bind(&self) -> Result<&'static driver::Driver, DriverError> {
        let d = driver::initialized()?;
        // SAFETY: `self.ctx` is a retained, live primary context.
        unsafe { cu!(d, cuCtxSetCurrent(self.ctx))? };
        Ok(d)
    }

    /// The legacy default (NULL) stream: it waits for, and is waited for
    /// by, all other blocking streams of the context.
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        Arc::new(CudaStream {
            stream: ptr::null_mut(),
            ctx: self.clone(),
            owned: false,
        })
    }

    /// Creates a new stream. It is a blocking stream (`CU_STREAM_DEFAULT`):
    /// work on it runs concurrently with other created streams but is
    /// ordered with the legacy default stream.
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        let d = self.bind()?;
        let mut stream: CUstream = ptr::null_mut();
        // SAFETY: out-pointer to a local; the flags value is valid.
        unsafe { cu!(d, cuStreamCreate(&mut stream, driver::CU_STREAM_DEFAULT))? };
        Ok(Arc::new(CudaStream {
            stream,
            ctx: self.clone(),
            owned: true,
        }))
    }

    /// Waits until all work submitted to this context has finished.
    pub fn synchronize(&self) -> Result<(), DriverError> {
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

    /// Whether two contexts are the same driver context.
    pub(crate) fn same(&self, other: &CudaContext) -> bool {
        self.ctx == other.ctx
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        if let Some(d) = driver::loaded() {
            // SAFETY: the context was retained in `new` and is released once,
            // here, after its pending work; errors are ignored (never panic).
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
    stream: CUstream,
    ctx: Arc<CudaContext>,
    owned: bool,
}

// SAFETY: a CUstream is a process-wide handle; the driver API accepts it from
// any thread once its context is current, which every method ensures.
unsafe impl Send for CudaStream {}
// SAFETY: see `Send`; the struct is immutable and the driver serialises
// concurrent submissions to one stream.
unsafe impl Sync for CudaStream {}

impl CudaStream {
    /// The context the stream belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Waits until all work submitted to this stream has finished.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: the stream is live (owned by self, or the NULL stream).
        unsafe { cu!(d, cuStreamSynchronize(self.stream)) }.map_err(|e| self.ctx.explain(e))
    }

    /// The raw `CUstream` handle (null for the default stream).
    pub fn raw(&self) -> *mut c_void {
        self.stream
    }

    /// Whether this is the legacy default (NULL) stream.
    pub fn is_default(&self) -> bool {
        self.stream.is_null()
    }
}

impl Drop for CudaStream {
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
