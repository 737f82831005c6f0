//! Managed (unified) memory: [`ManagedBuffer`], one allocation that kernels
//! and the host both reach at the same address (`cuMemAllocManaged`), with
//! [`prefetch_to`](ManagedBuffer::prefetch_to) and
//! [`advise`](ManagedBuffer::advise) to steer where its pages live.
//!
//! # Soundness
//!
//! A kernel queued on a stream may still be writing the buffer when the
//! call that queued it returns, so a host slice handed out then would race
//! with it. The buffer therefore keeps the same stream order as a
//! [`DeviceBuffer`](crate::DeviceBuffer) (the stream of its last write and
//! the streams that have read it since), and every host access waits first:
//!
//! * [`host`](ManagedBuffer::host) (`&self` → `&[T]`) blocks until the
//!   last write queued on any stream has finished; kernels that only read
//!   may go on running;
//! * [`host_mut`](ManagedBuffer::host_mut) (`&mut self` → `&mut [T]`)
//!   blocks until every queued use has finished.
//!
//! While a host slice lives, the buffer stays borrowed: a launch that
//! writes the buffer takes `&mut buffer` and is a borrow error, as is any
//! launch while a `&mut [T]` from `host_mut` lives. A graph launch is not
//! held back by borrows, so a managed buffer is refused in a stream capture
//! (the capture breaks, naming it). A device whose host cannot touch
//! managed memory while kernels run
//! (`CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS` = 0, e.g. on Windows or
//! before Pascal) is refused at allocation
//! ([`ManagedError::NoConcurrentAccess`]): there any kernel of the device,
//! using the buffer or not, would make host access fault.
//!
//! Dropping the buffer waits for every use queued on any stream, then frees
//! the memory (`cuMemFree`); unlike a `DeviceBuffer`'s, the drop blocks.

use std::any::type_name;
use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

use crate::context::{CudaContext, CudaStream};
use crate::driver::{self, cu, CUdeviceptr, CUmemLocation};
use crate::error::DriverError;
use crate::memory::DeviceRepr;
use crate::stream_order::ManagedOrder;

/// Where managed memory should be (or is preferred, or is accessed from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemLocation {
    /// Host memory.
    Host,
    /// The memory of the GPU of this ordinal.
    Device(usize),
}

impl MemLocation {
    /// The GPU of `ctx`.
    pub fn device_of(ctx: &CudaContext) -> MemLocation {
        MemLocation::Device(ctx.ordinal())
    }

    fn raw(self) -> CUmemLocation {
        match self {
            MemLocation::Host => CUmemLocation { type_: driver::CU_MEM_LOCATION_TYPE_HOST, id: 0 },
            MemLocation::Device(ordinal) => {
                CUmemLocation { type_: driver::CU_MEM_LOCATION_TYPE_DEVICE, id: ordinal as c_int }
            }
        }
    }
}

impl fmt::Display for MemLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemLocation::Host => write!(f, "the host"),
            MemLocation::Device(o) => write!(f, "device {o}"),
        }
    }
}

/// A hint about how a managed buffer is used (`cuMemAdvise`). Advice never
/// changes what the buffer holds, only where its pages tend to live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemAdvice {
    /// Mostly read: each processor that reads it may keep a copy
    /// (`CU_MEM_ADVISE_SET_READ_MOSTLY`); a write drops the copies.
    ReadMostly,
    /// Undoes [`ReadMostly`](Self::ReadMostly).
    NotReadMostly,
    /// Keep the pages at this location; others map them rather than
    /// migrate them (`CU_MEM_ADVISE_SET_PREFERRED_LOCATION`).
    PreferredLocation(MemLocation),
    /// Undoes [`PreferredLocation`](Self::PreferredLocation).
    NoPreferredLocation,
    /// This location will access the buffer: keep it mapped there
    /// (`CU_MEM_ADVISE_SET_ACCESSED_BY`).
    AccessedBy(MemLocation),
    /// Undoes [`AccessedBy`](Self::AccessedBy) for that location.
    NotAccessedBy(MemLocation),
}

impl MemAdvice {
    fn raw(self) -> (c_int, CUmemLocation) {
        let none = MemLocation::Host.raw();
        match self {
            MemAdvice::ReadMostly => (driver::CU_MEM_ADVISE_SET_READ_MOSTLY, none),
            MemAdvice::NotReadMostly => (driver::CU_MEM_ADVISE_UNSET_READ_MOSTLY, none),
            MemAdvice::PreferredLocation(l) => (driver::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, l.raw()),
            MemAdvice::NoPreferredLocation => (driver::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, none),
            MemAdvice::AccessedBy(l) => (driver::CU_MEM_ADVISE_SET_ACCESSED_BY, l.raw()),
            MemAdvice::NotAccessedBy(l) => (driver::CU_MEM_ADVISE_UNSET_ACCESSED_BY, l.raw()),
        }
    }

    /// The location the advice names, if any.
    fn location(self) -> Option<MemLocation> {
        match self {
            MemAdvice::PreferredLocation(l) | MemAdvice::AccessedBy(l) | MemAdvice::NotAccessedBy(l) => Some(l),
            _ => None,
        }
    }
}

/// Why a managed-memory operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagedError {
    /// The device cannot allocate managed memory at all.
    Unsupported {
        /// The device's ordinal.
        device: usize,
    },
    /// The host may not touch managed memory while any kernel of the device
    /// runs, which safe host slices cannot guarantee.
    NoConcurrentAccess {
        /// The device's ordinal.
        device: usize,
    },
    /// A location names a GPU that does not exist.
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many GPUs there are.
        count: usize,
    },
    /// Zero bytes were asked for: the driver cannot allocate an empty
    /// managed range.
    Empty {
        /// The element type.
        element: &'static str,
    },
    /// [`try_host`](ManagedBuffer::try_host) or
    /// [`try_host_mut`](ManagedBuffer::try_host_mut) found GPU work still
    /// queued that uses the buffer.
    Busy,
    /// The driver (or a check before it) refused the call.
    Driver(DriverError),
}

impl fmt::Display for ManagedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManagedError::Unsupported { device } => write!(
                f,
                "device {device} cannot allocate managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY is 0); \
                 use a DeviceBuffer with explicit copies, or PinnedHostBuffer for host-visible memory"
            ),
            ManagedError::NoConcurrentAccess { device } => write!(
                f,
                "device {device} does not let the host touch managed memory while kernels run \
                 (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0, as on Windows and before Pascal), so safe host \
                 slices of a ManagedBuffer are not possible there; use a DeviceBuffer with explicit copies"
            ),
            ManagedError::NoSuchDevice { ordinal, count } => write!(
                f,
                "device {ordinal} does not exist: this machine has {count} GPU(s), numbered from 0"
            ),
            ManagedError::Empty { element } => write!(
                f,
                "a ManagedBuffer of no bytes (zero elements of {element}, or a zero-sized type) cannot be allocated; \
                 give it at least one element"
            ),
            ManagedError::Busy => write!(
                f,
                "GPU work that uses this managed buffer is still queued (or its stream is capturing a graph); \
                 call host()/host_mut() to wait for it, or try again later"
            ),
            ManagedError::Driver(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ManagedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ManagedError::Driver(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DriverError> for ManagedError {
    fn from(e: DriverError) -> Self {
        ManagedError::Driver(e)
    }
}

/// `len` values of `T` in managed memory: one address for the GPU and the
/// host. Kernels take it where they take a [`DeviceBuffer`](crate::DeviceBuffer)
/// (`&buffer` for `&[T]`, `&mut buffer` for `&mut [T]` and `DisjointSlice<T>`);
/// the host reads it through [`host`](Self::host) and writes it through
/// [`host_mut`](Self::host_mut), each of which first waits for the GPU work
/// that conflicts with it, on any stream: `host` for the last write, `host_mut`
/// for every use ([`try_host`](Self::try_host) and
/// [`try_host_mut`](Self::try_host_mut) refuse instead of waiting). The
/// slices borrow the buffer, so a launch that would write it under a `&[T]`,
/// or touch it under a `&mut [T]`, is a borrow error. A capture refuses a
/// managed buffer (a graph launch is not held back by borrows), devices
/// whose host may not touch managed memory while kernels run are refused at
/// allocation, and the drop waits for every queued use. docs/MEMORY.md
/// has the whole story.
///
/// # Example
///
/// ```no_run
/// use cuda_core::{CudaContext, ManagedBuffer, MemAdvice, MemLocation};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Written on the host, no copy needed.
/// let data = ManagedBuffer::from_slice(&ctx, &[1.0f32, 2.0, 3.0])?;
/// data.advise(MemAdvice::PreferredLocation(MemLocation::device_of(&ctx)))?;
/// data.prefetch_to(MemLocation::device_of(&ctx), &stream)?;
/// // ... a kernel on `stream` takes `&mut data` for a `&mut [f32]` parameter ...
/// data.prefetch_to(MemLocation::Host, &stream)?;
/// let sum: f32 = data.host()?.iter().sum(); // waits for the kernel
/// assert!(sum > 0.0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ManagedBuffer<T> {
    ptr: CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
    order: ManagedOrder,
    _marker: PhantomData<T>,
}

impl<T: DeviceRepr> ManagedBuffer<T> {
    /// Allocates `len` zeroed elements of managed memory on `ctx`'s device
    /// (`cuMemAllocManaged`, attached globally: any stream may use it).
    pub fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, ManagedError> {
        let op = "cuMemAllocManaged";
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            DriverError::new(
                crate::error::ErrorKind::InvalidArgument,
                format!("a buffer of {len} elements of {} does not fit in the address space", type_name::<T>()),
                op,
            )
        })?;
        if bytes == 0 {
            return Err(ManagedError::Empty { element: type_name::<T>() });
        }
        let device = ctx.ordinal();
        if ctx.attribute(driver::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 1 {
            return Err(ManagedError::Unsupported { device });
        }
        if ctx.attribute(driver::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? != 1 {
            return Err(ManagedError::NoConcurrentAccess { device });
        }
        let d = ctx.bind()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; the context is current; the flag
        // is CU_MEM_ATTACH_GLOBAL.
        unsafe { cu!(d, cuMemAllocManaged(&mut ptr, bytes, driver::CU_MEM_ATTACH_GLOBAL)) }
            .map_err(|e| ctx.explain(e))?;
        // SAFETY: `bytes` bytes of managed memory just allocated, which no
        // GPU work uses yet; the host may write them (concurrent access
        // checked above). All-zero bytes are a valid `T` (DeviceRepr).
        unsafe { std::ptr::write_bytes(ptr as usize as *mut u8, 0, bytes) };
        Ok(ManagedBuffer { ptr, len, ctx: ctx.clone(), order: ManagedOrder::new(ctx), _marker: PhantomData })
    }

    /// Allocates managed memory holding a copy of `data` (written by the host).
    pub fn from_slice(ctx: &Arc<CudaContext>, data: &[T]) -> Result<Self, ManagedError> {
        let mut buf = Self::zeroed(ctx, data.len())?;
        buf.host_mut()?.copy_from_slice(data);
        Ok(buf)
    }

    /// The elements, for the host to read, once every write queued on any
    /// stream has finished (blocks until then; kernels that only read the
    /// buffer may keep running). While the slice lives, no launch can take
    /// the buffer for writing: `&mut buffer` is a borrow error.
    pub fn host(&self) -> Result<&[T], ManagedError> {
        self.order.wait_on_host(false)?;
        // SAFETY: `ptr` holds `len` initialised `T`s (zeroed at allocation,
        // then written only as `T`s or by kernels, valid for DeviceRepr).
        // The last GPU write has completed, and no new one can be queued
        // through the safe API while `&self` is borrowed (writes take
        // `&mut`; captures refuse managed buffers). Host access while other
        // kernels run is allowed (concurrent managed access, checked at
        // allocation).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, self.len) })
    }

    /// The elements, for the host to write, once every use queued on any
    /// stream has finished (blocks until then). While the slice lives, the
    /// buffer cannot be passed to any launch.
    pub fn host_mut(&mut self) -> Result<&mut [T], ManagedError> {
        self.order.wait_on_host(true)?;
        // SAFETY: as in `host`; every GPU use has completed and `&mut self`
        // excludes any new one while the slice lives.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, self.len) })
    }

    /// [`host`](Self::host) without blocking: [`ManagedError::Busy`] while
    /// a stream that wrote the buffer still has queued work (conservative:
    /// any later work on that stream counts too).
    pub fn try_host(&self) -> Result<&[T], ManagedError> {
        if !self.order.idle_for_host(false)? {
            return Err(ManagedError::Busy);
        }
        // SAFETY: as in `host`: every stream of a GPU write has finished.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, self.len) })
    }

    /// [`host_mut`](Self::host_mut) without blocking: [`ManagedError::Busy`]
    /// while a stream that used the buffer still has queued work.
    pub fn try_host_mut(&mut self) -> Result<&mut [T], ManagedError> {
        if !self.order.idle_for_host(true)? {
            return Err(ManagedError::Busy);
        }
        // SAFETY: as in `host_mut`: every stream of a GPU use has finished.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, self.len) })
    }

    /// A copy of the elements (waits like [`host`](Self::host)).
    pub fn to_vec(&self) -> Result<Vec<T>, ManagedError> {
        Ok(self.host()?.to_vec())
    }

    /// Queues on `stream` a migration of the buffer's pages to `location`
    /// (`cuMemPrefetchAsync`): a kernel on that device (or the host) then
    /// finds them local instead of faulting them in. Ordered on `stream`
    /// after the buffer's writes on other streams; it changes no value.
    pub fn prefetch_to(&self, location: MemLocation, stream: &CudaStream) -> Result<(), ManagedError> {
        self.check_location(location)?;
        self.order.read_on(stream)?;
        let ctx = stream.context();
        let d = ctx.bind()?;
        // SAFETY: the range is the live managed allocation; `stream` is a
        // live stream of the current context. A prefetch changes no value.
        unsafe { cu!(d, cuMemPrefetchAsync_v2(self.ptr, self.size_in_bytes(), location.raw(), 0, stream.raw())) }
            .map_err(|e| ctx.explain(e))?;
        Ok(())
    }

    /// Gives the driver a hint about how the buffer is used
    /// (`cuMemAdvise`); takes effect at once, not in stream order.
    ///
    /// Advice belongs to pages, not to buffers: a small buffer may share a
    /// page with another managed allocation, and then shares that page's
    /// advice, and the read-backs ([`is_read_mostly`](Self::is_read_mostly),
    /// [`preferred_location`](Self::preferred_location)) describe every page
    /// the buffer touches.
    pub fn advise(&self, advice: MemAdvice) -> Result<(), ManagedError> {
        if let Some(l) = advice.location() {
            self.check_location(l)?;
        }
        let (code, location) = advice.raw();
        let d = self.ctx.bind()?;
        // SAFETY: the range is the live managed allocation; advice changes
        // no value.
        unsafe { cu!(d, cuMemAdvise_v2(self.ptr, self.size_in_bytes(), code, location)) }
            .map_err(|e| self.ctx.explain(e))?;
        Ok(())
    }

    /// Whether [`MemAdvice::ReadMostly`] is in force for the whole buffer.
    pub fn is_read_mostly(&self) -> Result<bool, ManagedError> {
        Ok(self.range_attribute(driver::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY)? == 1)
    }

    /// The preferred location advised for the whole buffer, if any.
    pub fn preferred_location(&self) -> Result<Option<MemLocation>, ManagedError> {
        Ok(match self.range_attribute(driver::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)? {
            -1 => Some(MemLocation::Host),
            o if o >= 0 => Some(MemLocation::Device(o as usize)),
            _ => None,
        })
    }

    fn range_attribute(&self, attribute: c_int) -> Result<c_int, ManagedError> {
        let d = self.ctx.bind()?;
        let mut value: c_int = 0;
        // SAFETY: `value` is the int these attributes write; the range is
        // the live managed allocation.
        unsafe {
            cu!(
                d,
                cuMemRangeGetAttribute(
                    (&mut value as *mut c_int).cast(),
                    size_of::<c_int>(),
                    attribute,
                    self.ptr,
                    self.size_in_bytes()
                )
            )
        }
        .map_err(|e| self.ctx.explain(e))?;
        Ok(value)
    }

    fn check_location(&self, location: MemLocation) -> Result<(), ManagedError> {
        if let MemLocation::Device(ordinal) = location {
            let count = CudaContext::device_count()?;
            if ordinal >= count {
                return Err(ManagedError::NoSuchDevice { ordinal, count });
            }
        }
        Ok(())
    }
}

impl<T> ManagedBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements (never: an empty one cannot be made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first element, the same for the GPU and the host.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes (`len * size_of::<T>()`).
    pub fn size_in_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The context the memory was allocated on.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Makes work queued on `stream` from now on wait for the buffer's
    /// writes queued on other streams (what a typed launch that reads it
    /// does; see [`DeviceSlice::order_read`](crate::DeviceSlice::order_read)).
    /// Refused while `stream` captures a graph.
    pub fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.read_on(stream)
    }

    /// Makes work queued on `stream` from now on wait for every use of the
    /// buffer queued on other streams (what a typed launch that writes it
    /// does). Refused while `stream` captures a graph.
    pub fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.write_on(stream)
    }
}

impl<T> Drop for ManagedBuffer<T> {
    fn drop(&mut self) {
        let Some(d) = driver::loaded() else { return };
        // Every use queued through the safe API must end before the free.
        // If that cannot be waited for (a stream that used it captures now,
        // or the context has failed), the memory is left to the context
        // rather than freed under work that might still use it.
        if self.order.wait_on_host(true).is_err() {
            return;
        }
        // SAFETY: `ptr` came from cuMemAllocManaged in this context and is
        // freed once, after every use has completed. Errors are ignored:
        // drop never panics.
        unsafe {
            (d.cuCtxSetCurrent)(self.ctx.raw());
            (d.cuMemFree_v2)(self.ptr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_and_advice_map_to_the_driver_values() {
        assert_eq!(MemLocation::Host.raw(), CUmemLocation { type_: 2, id: 0 });
        assert_eq!(MemLocation::Device(3).raw(), CUmemLocation { type_: 1, id: 3 });
        assert_eq!(MemAdvice::ReadMostly.raw().0, 1);
        assert_eq!(MemAdvice::PreferredLocation(MemLocation::Device(0)).raw(), (3, CUmemLocation { type_: 1, id: 0 }));
        assert_eq!(MemAdvice::NotAccessedBy(MemLocation::Host).raw(), (6, CUmemLocation { type_: 2, id: 0 }));
        assert_eq!(MemAdvice::NoPreferredLocation.location(), None);
    }

    #[test]
    fn errors_say_what_to_do() {
        let e = ManagedError::NoConcurrentAccess { device: 1 }.to_string();
        assert!(e.contains("device 1") && e.contains("use a DeviceBuffer"), "{e}");
        let e = ManagedError::NoSuchDevice { ordinal: 4, count: 1 }.to_string();
        assert!(e.contains("device 4 does not exist") && e.contains("1 GPU"), "{e}");
        assert!(ManagedError::Empty { element: "f32" }.to_string().contains("at least one element"));
    }

    #[test]
    fn managed_buffers_are_send_and_sync() {
        fn assert_send_sync<S: Send + Sync>() {}
        assert_send_sync::<ManagedBuffer<f32>>();
        assert_send_sync::<ManagedError>();
    }
}
