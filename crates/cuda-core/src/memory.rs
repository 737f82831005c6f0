//! [`DeviceBuffer`]: an owned array in GPU memory.

use std::any::type_name;
use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

use crate::context::{CudaContext, CudaStream};
use crate::driver::{self, cu, CUdeviceptr};
use crate::error::{DriverError, ErrorKind};

/// `len` values of `T` in device memory, freed on drop.
///
/// Copies are ordered on the stream they are given; reads back to the host
/// synchronise that stream. A zero-length buffer (or one of a zero-sized
/// `T`) allocates nothing and has device pointer 0.
///
/// `T` should be plain data (integers, floats, `#[repr(C)]` structs of them):
/// [`zeroed`](Self::zeroed) and [`to_host_vec`](Self::to_host_vec) produce
/// `T`s from raw device bytes, which must be valid values of `T`.
#[derive(Debug)]
pub struct DeviceBuffer<T: Copy> {
    ptr: CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
    _marker: PhantomData<T>,
}

impl<T: Copy> DeviceBuffer<T> {
    /// Allocates a buffer and copies `data` into it (ordered on `stream`;
    /// `data` may be reused as soon as this returns).
    pub fn from_host(stream: &CudaStream, data: &[T]) -> Result<Self, DriverError> {
        let buf = Self::alloc(stream, data.len(), "DeviceBuffer::from_host")?;
        buf.write(stream, data, "DeviceBuffer::from_host")?;
        Ok(buf)
    }

    /// Allocates a buffer of `len` elements whose bytes are all zero.
    pub fn zeroed(stream: &CudaStream, len: usize) -> Result<Self, DriverError> {
        let buf = Self::alloc(stream, len, "DeviceBuffer::zeroed")?;
        if buf.ptr != 0 {
            let d = stream.context().bind()?;
            // SAFETY: the allocation holds size_in_bytes() bytes; the stream
            // is live and of the buffer's (current) context.
            unsafe {
                cu!(
                    d,
                    cuMemsetD8Async(buf.ptr, 0, buf.size_in_bytes(), stream.raw())
                )?
            };
        }
        Ok(buf)
    }

    /// Copies the buffer back into a new `Vec`, after the work already queued
    /// on `stream` (synchronises `stream`).
    pub fn to_host_vec(&self, stream: &CudaStream) -> Result<Vec<T>, DriverError> {
        let mut out = Vec::<T>::with_capacity(self.len);
        self.read(stream, out.as_mut_ptr(), "DeviceBuffer::to_host_vec")?;
        // SAFETY: `read` filled all `len` elements (for a zero-sized T there
        // are no bytes to fill); the capacity is at least `len`.
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// Copies the buffer into `out`, which must have the same length
    /// (synchronises `stream`).
    pub fn copy_to_host(&self, stream: &CudaStream, out: &mut [T]) -> Result<(), DriverError> {
        self.check_len(out.len(), "DeviceBuffer::copy_to_host")?;
        self.read(stream, out.as_mut_ptr(), "DeviceBuffer::copy_to_host")
    }

    /// Overwrites the buffer with `data`, which must have the same length
    /// (ordered on `stream`; `data` may be reused as soon as this returns).
    pub fn copy_from_host(&mut self, stream: &CudaStream, data: &[T]) -> Result<(), DriverError> {
        self.check_len(data.len(), "DeviceBuffer::copy_from_host")?;
        self.write(stream, data, "DeviceBuffer::copy_from_host")
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element (0 when nothing is allocated).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes (`len * size_of::<T>()`).
    pub fn size_in_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The context that owns the memory.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    fn alloc(stream: &CudaStream, len: usize, op: &'static str) -> Result<Self, DriverError> {
        let bytes = byte_size::<T>(len, op)?;
        let ctx = stream.context().clone();
        let mut ptr: CUdeviceptr = 0;
        if bytes > 0 {
            let d = ctx.bind()?;
            // SAFETY: out-pointer to a local; the context is current.
            unsafe { cu!(d, cuMemAlloc_v2(&mut ptr, bytes))? };
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx,
            _marker: PhantomData,
        })
    }

    fn check_len(&self, host_len: usize, op: &'static str) -> Result<(), DriverError> {
        if host_len == self.len {
            return Ok(());
        }
        Err(DriverError::new(
            ErrorKind::LengthMismatch,
            format!(
                "length mismatch: the device buffer holds {} elements of {} but the host slice has {}",
                self.len,
                type_name::<T>(),
                host_len
            ),
            op,
        ))
    }

    fn check_stream(&self, stream: &CudaStream, op: &'static str) -> Result<(), DriverError> {
        if self.ctx.same(stream.context()) {
            return Ok(());
        }
        Err(DriverError::new(
            ErrorKind::InvalidArgument,
            format!(
                "the buffer lives on device {} but the stream belongs to device {}",
                self.ctx.ordinal(),
                stream.context().ordinal()
            ),
            op,
        ))
    }

    /// Host → device copy of `data` (same length as the buffer).
    fn write(&self, stream: &CudaStream, data: &[T], op: &'static str) -> Result<(), DriverError> {
        self.check_stream(stream, op)?;
        if self.ptr == 0 {
            return Ok(());
        }
        let d = self.ctx.bind()?;
        // SAFETY: `data` holds size_in_bytes() readable bytes (same length);
        // the driver stages pageable memory before returning, so `data` need
        // not outlive the call. Destination is this allocation.
        unsafe {
            cu!(
                d,
                cuMemcpyHtoDAsync_v2(
                    self.ptr,
                    data.as_ptr().cast(),
                    self.size_in_bytes(),
                    stream.raw()
                )
            )
        }
    }

    /// Device → host copy into `len` elements at `dst`, then stream sync.
    fn read(&self, stream: &CudaStream, dst: *mut T, op: &'static str) -> Result<(), DriverError> {
        self.check_stream(stream, op)?;
        let d = self.ctx.bind()?;
        if self.ptr != 0 {
            // SAFETY: `dst` has room for `len` elements (callers' contract);
            // the source is this allocation of size_in_bytes() bytes.
            unsafe {
                cu!(
                    d,
                    cuMemcpyDtoHAsync_v2(dst.cast(), self.ptr, self.size_in_bytes(), stream.raw())
                )
                .map_err(|e| self.ctx.explain(e))?
            };
        }
        stream.synchronize()
    }
}

impl<T: Copy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if let Some(d) = driver::loaded() {
            // SAFETY: `ptr` came from cuMemAlloc_v2 in this context and is
            // freed once; cuMemFree_v2 waits for pending work that may use
            // it. Errors are ignored: drop never panics.
            unsafe {
                (d.cuCtxSetCurrent)(self.ctx.raw());
                (d.cuMemFree_v2)(self.ptr);
            }
        }
    }
}

/// `len * size_of::<T>()`, or an error naming the overflow.
fn byte_size<T>(len: usize, op: &'static str) -> Result<usize, DriverError> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| {
        DriverError::new(
            ErrorKind::InvalidArgument,
            format!(
                "a buffer of {len} elements of {} does not fit in the address space",
                type_name::<T>()
            ),
            op,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_size_checks_overflow() {
        assert_eq!(byte_size::<f32>(10, "t").unwrap(), 40);
        assert_eq!(byte_size::<f32>(0, "t").unwrap(), 0);
        assert_eq!(byte_size::<()>(usize::MAX, "t").unwrap(), 0);
        let e = byte_size::<u64>(usize::MAX, "t").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("u64"), "{e}");
    }

    #[test]
    fn device_buffer_is_send() {
        fn assert_send<S: Send>() {}
        assert_send::<DeviceBuffer<f32>>();
        assert_send::<DeviceBuffer<[u8; 16]>>();
    }
}
