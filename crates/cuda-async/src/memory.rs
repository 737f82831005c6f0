//! Device memory in operations: [`DeviceBox`] for read-only data shared by
//! many operations, and operations that allocate, upload and read back.
//!
//! ```no_run
//! use cuda_async::{memory, DeviceBox, DeviceOperation};
//!
//! # fn main() -> Result<(), cuda_async::AsyncError> {
//! // Uploaded once, then shared (an `Arc`) by every operation that reads it.
//! let weights: DeviceBox<f32> = DeviceBox::upload(vec![0.5f32; 1 << 20]).sync()?;
//! let (w, host) = memory::to_host(weights.clone()).sync()?;
//! assert_eq!(host[0], 0.5);
//! assert_eq!(w.len(), weights.len());
//! # Ok(()) }
//! ```

use std::borrow::Borrow;
use std::ops::Deref;
use std::sync::Arc;

use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, DriverError, PinnedHostBuffer};
use cuda_device::__private::SliceParam;
use cuda_host::arg::KernelArg;

use crate::operation::{launch, DeviceOperation, Launch, Map};
use crate::AsyncError;

/// Read-only device data, uploaded once and shared by any number of
/// operations and tasks: an `Arc` of a [`DeviceBuffer`]. Cloning is cheap;
/// the memory is freed when the last clone is dropped.
///
/// A kernel takes `&boxed` for a `&[T]` parameter; a `DisjointSlice` or
/// `&mut [T]` parameter does not accept it (shared data is never written):
///
/// ```
/// use cuda_host::arg::KernelArg;
/// fn read_only<A: for<'l> KernelArg<cuda_device::__private::SliceParam<'l, f32>>>(_: A) {}
/// fn demo(shared: &cuda_async::DeviceBox<f32>) {
///     read_only(shared); // what a `&[f32]` parameter asks for
/// }
/// ```
///
/// ```compile_fail
/// use cuda_host::arg::KernelArg;
/// fn writable<A: KernelArg<cuda_device::DisjointSlice<f32>>>(_: A) {}
/// fn demo(shared: &cuda_async::DeviceBox<f32>) {
///     writable(shared); // error: a shared box cannot be written
/// }
/// ```
#[derive(Debug)]
pub struct DeviceBox<T> {
    buffer: Arc<DeviceBuffer<T>>,
}

impl<T> Clone for DeviceBox<T> {
    fn clone(&self) -> Self {
        DeviceBox { buffer: self.buffer.clone() }
    }
}

impl<T: DeviceRepr> DeviceBox<T> {
    /// Shares `buffer` read-only from now on.
    pub fn new(buffer: DeviceBuffer<T>) -> Self {
        DeviceBox { buffer: Arc::new(buffer) }
    }

    /// Uploads `data` on `stream` (blocking only for the host side of the
    /// copy, like [`DeviceBuffer::from_host`]).
    pub fn from_host(stream: &CudaStream, data: &[T]) -> Result<Self, DriverError> {
        Ok(Self::new(DeviceBuffer::from_host(stream, data)?))
    }

    /// An operation that uploads `data` and produces the box.
    #[allow(clippy::type_complexity)]
    pub fn upload(data: Vec<T>) -> Map<Upload<T>, fn(DeviceBuffer<T>) -> DeviceBox<T>>
    where
        T: Send + Sync + 'static,
    {
        upload(data).map(DeviceBox::new as fn(DeviceBuffer<T>) -> DeviceBox<T>)
    }

    /// How many boxes share the buffer.
    pub fn share_count(this: &Self) -> usize {
        Arc::strong_count(&this.buffer)
    }
}

impl<T> Deref for DeviceBox<T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }
}

impl<T> Borrow<DeviceBuffer<T>> for DeviceBox<T> {
    fn borrow(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }
}

// SAFETY: `*const [T]` has the layout of `&[T]` (and of `SliceParam`, its
// transparent wrapper); pointer and length are those of the shared buffer,
// which the box keeps alive, holding `len` initialised `T`s. Only read-only
// parameters are implemented.
unsafe impl<'a, 'b, T: DeviceRepr> KernelArg<SliceParam<'a, T>> for &'b DeviceBox<T> {
    type Repr = *const [T];
    fn to_repr(&self) -> *const [T] {
        std::ptr::slice_from_raw_parts(self.buffer.device_ptr() as usize as *const T, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_read(stream)
    }
}

// SAFETY: as above, for a plain `&[T]` parameter.
unsafe impl<T: DeviceRepr> KernelArg<&[T]> for &DeviceBox<T> {
    type Repr = *const [T];
    fn to_repr(&self) -> *const [T] {
        std::ptr::slice_from_raw_parts(self.buffer.device_ptr() as usize as *const T, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_read(stream)
    }
}

/// See [`upload`].
#[derive(Debug, Clone)]
pub struct Upload<T>(Vec<T>);

impl<T: DeviceRepr + Send + Sync + 'static> DeviceOperation for Upload<T> {
    type Output = DeviceBuffer<T>;
    fn enqueue(self, ctx: &crate::ExecutionContext<'_>) -> Result<DeviceBuffer<T>, AsyncError> {
        let stream = ctx.require_stream("memory::upload")?;
        Ok(DeviceBuffer::from_host(stream, &self.0)?)
    }
}

impl<T: DeviceRepr + Send + Sync + 'static> std::future::IntoFuture for Upload<T> {
    type Output = Result<DeviceBuffer<T>, AsyncError>;
    type IntoFuture = crate::DeviceFuture<Self>;
    fn into_future(self) -> Self::IntoFuture {
        self.future()
    }
}

/// An operation that copies `data` into a new device buffer.
pub fn upload<T: DeviceRepr + Send + Sync + 'static>(data: Vec<T>) -> Upload<T> {
    Upload(data)
}

/// An operation that allocates `len` zeroed elements.
#[allow(clippy::type_complexity)]
pub fn zeroed<T: DeviceRepr + Send + 'static>(
    len: usize,
) -> Launch<impl FnOnce(&Arc<CudaStream>) -> Result<DeviceBuffer<T>, AsyncError> + Send> {
    launch(move |stream| Ok(DeviceBuffer::zeroed(stream, len)?))
}

/// An operation that copies `src` (a [`DeviceBuffer`] or [`DeviceBox`])
/// into `dst` (same length), page-locked host memory, and hands both back.
/// `dst` can be read once the operation completed (it waits for the copy
/// itself if read earlier).
#[allow(clippy::type_complexity)]
pub fn copy_to_host<T, B>(
    src: B,
    mut dst: PinnedHostBuffer<T>,
) -> Launch<impl FnOnce(&Arc<CudaStream>) -> Result<(B, PinnedHostBuffer<T>), AsyncError> + Send>
where
    T: DeviceRepr + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
{
    launch(move |stream| {
        src.borrow().copy_to_host_async(stream, &mut dst)?;
        Ok((src, dst))
    })
}

/// An operation that copies `src` into new page-locked host memory and
/// hands back both (see [`copy_to_host`]).
#[allow(clippy::type_complexity)]
pub fn to_host<T, B>(
    src: B,
) -> Launch<impl FnOnce(&Arc<CudaStream>) -> Result<(B, PinnedHostBuffer<T>), AsyncError> + Send>
where
    T: DeviceRepr + Send + 'static,
    B: Borrow<DeviceBuffer<T>> + Send + 'static,
{
    launch(move |stream| {
        let mut dst = PinnedHostBuffer::zeroed(stream.context(), src.borrow().len())?;
        src.borrow().copy_to_host_async(stream, &mut dst)?;
        Ok((src, dst))
    })
}
