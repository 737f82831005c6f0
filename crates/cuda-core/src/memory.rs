//! Device memory: [`DeviceBuffer`] (owned), [`DeviceSlice`] /
//! [`DeviceSliceMut`] (borrowed views of a range of one), and
//! [`PinnedHostBuffer`] (page-locked host memory for asynchronous copies).
//!
//! # Soundness
//!
//! * Element types implement [`DeviceRepr`]: every byte pattern is a valid
//!   value, so bytes written by the GPU (or by [`DeviceSliceMut::memset`],
//!   [`DeviceBuffer::zeroed`]) are always valid when read back. Types such as
//!   `bool`, `char`, references or `Box` cannot be buffer elements.
//! * An asynchronous copy reads or writes a [`PinnedHostBuffer`] after the
//!   call has returned. The pinned buffer therefore remembers an event
//!   recorded after every copy that touches it and waits for all of them
//!   before any host access (`Deref`, `DerefMut`) and before it is freed. A
//!   borrow-holding guard would not do: `mem::forget` of the guard is safe
//!   and would end the borrow while the DMA is still running.
//! * Work on two streams runs unordered, and a `&mut` borrow ends when the
//!   call that queued the work returns. So each buffer remembers the stream
//!   of its last write and the streams that have read it since, and every
//!   copy, memset or typed launch first makes its stream wait (with an
//!   event) for the uses it conflicts with on other streams: a read waits
//!   for the last write, a write for the last write and every read since.
//!   A copy on stream B of what a kernel on stream A writes returns the
//!   kernel's values, not older ones. Work on one stream waits for nothing.
//! * A [`DeviceBuffer`] is allocated on the stream it is made with, from
//!   the device's memory pool (`cuMemAllocAsync`), and freed on that same
//!   stream when dropped (`cuMemFreeAsync`), so a drop never blocks the
//!   host. The allocation counts as a write on that stream and the free as
//!   another: by the rule above, a use on another stream first waits for
//!   the allocation, and the free waits for every use queued through the
//!   safe API on any stream, so no kernel or copy touches freed (or
//!   reallocated) memory. A buffer used on that stream alone needs no
//!   record of its uses (the stream orders them all before the free), so
//!   it keeps none until a use on another stream or in a capture. A device
//!   without memory pools falls back to `cuMemAlloc`, and a drop then waits
//!   for all work on the context (`cuCtxSynchronize`) before `cuMemFree`.
//! * A device address taken with `device_ptr()` and used by hand (a raw
//!   launch, a `TensorMap`) is outside that bookkeeping: queue such work on
//!   the buffer's own stream, or order it with events, before the buffer
//!   is dropped (the raw launch functions are `unsafe` for this reason).

use std::any::type_name;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, Deref, DerefMut, RangeBounds};
use std::ptr;
use std::sync::{Arc, Mutex};

use crate::context::{CudaContext, CudaEvent, CudaStream};
use crate::driver::{self, cu, CUdeviceptr};
use crate::error::{DriverError, ErrorKind};
use crate::stream_order::StreamOrder;
use cuda_device::atomic::AtomicCell;

/// Plain data that may live in device memory and be copied to and from it.
///
/// # Safety
/// Any sequence of `size_of::<Self>()` initialised bytes (for example all
/// zeros, or whatever a kernel wrote) must be a valid value of `Self`, and
/// the type must not own resources (it is copied bytewise and never dropped).
/// Integers, floats (with `cuda_device::half`'s `f16`, `bf16`, the FP8
/// `f8e4m3`, `f8e5m2` and their packed pairs), and arrays, tuples and structs of them qualify; `bool`,
/// `char`, most enums, references, pointers to host data and `NonZero*` do
/// not. For your own type, `#[derive(DeviceRepr)]` checks that it qualifies
/// and writes the impl:
///
/// ```
/// use cuda_core::DeviceRepr; // the trait and its derive
///
/// #[derive(Clone, Copy, DeviceRepr)]
/// #[repr(C)]
/// struct Particle { pos: [f32; 3], id: u32 }
/// ```
///
/// A struct or union qualifies when every field does; a field-less enum only
/// when its variants are every value of its `#[repr(u8)]` or `#[repr(i8)]`.
/// Other enums are refused with the reason (a kernel could write a byte
/// that is no variant, and safe code would read it):
///
/// ```compile_fail
/// #[derive(Clone, Copy, cuda_core::DeviceRepr)]
/// #[repr(u8)]
/// enum Op { Add, Mul }
/// ```
///
/// ```compile_fail
/// #[derive(Clone, Copy, cuda_core::DeviceRepr)]
/// struct Flagged { value: f32, valid: bool }
/// ```
///
/// References and `bool` are rejected at compile time:
///
/// ```compile_fail
/// # fn f(s: &cuda_core::CudaStream) {
/// let _ = cuda_core::DeviceBuffer::<&u8>::zeroed(s, 4);
/// # }
/// ```
///
/// ```compile_fail
/// # fn f(s: &cuda_core::CudaStream) {
/// let _ = cuda_core::DeviceBuffer::<bool>::zeroed(s, 4);
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot live in device memory: it is not DeviceRepr",
    label = "not DeviceRepr",
    note = "device memory may hold any bytes (a kernel or a copy wrote them), so only types valid for every bit pattern qualify: integers, floats, f16/bf16/fp8, and arrays, tuples and structs of them",
    note = "for a struct of such fields, `#[derive(Clone, Copy, cuda_core::DeviceRepr)]`; for a bool, char or enum, store an integer and convert it on the way out"
)]
pub unsafe trait DeviceRepr: Copy + 'static {}

macro_rules! device_repr {
    ($($t:ty),*) => {$(
        // SAFETY: every bit pattern is a valid value of this primitive.
        unsafe impl DeviceRepr for $t {}
    )*};
}
device_repr!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, ());

// SAFETY: `repr(transparent)` over u16/u32, and every bit pattern is a value
// (NaNs included).
unsafe impl DeviceRepr for cuda_device::half::f16 {}
// SAFETY: as for f16.
unsafe impl DeviceRepr for cuda_device::half::bf16 {}
// SAFETY: as for f16.
unsafe impl DeviceRepr for cuda_device::half::f16x2 {}
// SAFETY: as for f16.
unsafe impl DeviceRepr for cuda_device::half::bf16x2 {}
// SAFETY: `repr(transparent)` over u8/u16, and every bit pattern is a value
// (NaNs included).
unsafe impl DeviceRepr for cuda_device::half::f8e4m3 {}
// SAFETY: as for f8e4m3.
unsafe impl DeviceRepr for cuda_device::half::f8e5m2 {}
// SAFETY: as for f8e4m3.
unsafe impl DeviceRepr for cuda_device::half::f8e4m3x2 {}
// SAFETY: as for f8e4m3.
unsafe impl DeviceRepr for cuda_device::half::f8e5m2x2 {}

// SAFETY: an array of such elements accepts any bytes element by element.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: `Wrapping<T>` is `repr(transparent)` over `T`.
unsafe impl<T: DeviceRepr> DeviceRepr for std::num::Wrapping<T> {}

macro_rules! device_repr_tuple {
    ($($name:ident),+) => {
        // SAFETY: each field accepts any bytes; padding may hold anything.
        unsafe impl<$($name: DeviceRepr),+> DeviceRepr for ($($name,)+) {}
    };
}
device_repr_tuple!(A);
device_repr_tuple!(A, B);
device_repr_tuple!(A, B, C);
device_repr_tuple!(A, B, C, D);
device_repr_tuple!(A, B, C, D, E);
device_repr_tuple!(A, B, C, D, E, F);
device_repr_tuple!(A, B, C, D, E, F, G);
device_repr_tuple!(A, B, C, D, E, F, G, H);

/// Element types [`DeviceSliceMut::fill`] can write with one driver memset:
/// 1, 2 or 4 bytes and no padding. Sealed.
pub trait FillValue: DeviceRepr + private::Sealed {
    /// The bit pattern of `self`, widened to `u32`, and its width in bytes.
    #[doc(hidden)]
    fn pattern(self) -> (u32, usize);
}

mod private {
    pub trait Sealed {}
}

macro_rules! fill_value {
    ($($t:ty => $u:ty),*) => {$(
        impl private::Sealed for $t {}
        impl FillValue for $t {
            fn pattern(self) -> (u32, usize) {
                (<$u>::from_ne_bytes(self.to_ne_bytes()) as u32, size_of::<$t>())
            }
        }
    )*};
}
fill_value!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, f32 => u32);

/// `len` values of `T` in device memory, freed on drop.
///
/// Copies are ordered on the stream they are given; reads back to the host
/// synchronise that stream. A zero-length buffer (or one of a zero-sized
/// `T`) allocates nothing and has device pointer 0. Sub-ranges are borrowed
/// with [`slice`](Self::slice) and [`slice_mut`](Self::slice_mut).
///
/// The constructors need `T:` [`DeviceRepr`], so every value read back is a
/// valid `T`. The buffer is allocated on the stream it is made with and
/// freed on that stream when dropped (`cuMemFreeAsync`), after every use
/// queued on other streams: a drop never blocks the host.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    ptr: CUdeviceptr,
    len: usize,
    /// The stream the buffer was made on (which holds its context) and the
    /// record of its uses on other streams.
    order: StreamOrder,
    /// Whether the memory came from the pool on the home stream and goes
    /// back on it; else it is `cuMemAlloc` memory (or none at all).
    pooled: bool,
    _marker: PhantomData<T>,
}

impl<T> DeviceBuffer<T> {
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
        self.order.context()
    }

    /// Makes work queued on `stream` from now on wait for the writes to the
    /// buffer queued on other streams (see [`DeviceSlice::order_read`]).
    pub fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.read_on(stream)
    }

    /// The buffer's stream order (graphs keep a weak handle of it).
    pub(crate) fn order(&self) -> &StreamOrder {
        &self.order
    }

    /// Makes work queued on `stream` from now on wait for every read and
    /// write of the buffer queued on other streams (see
    /// [`DeviceSliceMut::order_write`]).
    pub fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.write_on(stream)
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates `len` elements without initialising them.
    ///
    /// # Safety
    /// The contents are whatever the memory held before: write every element
    /// (a copy, a memset or a kernel) before reading any back. (Reading is
    /// not memory-unsafe for a [`DeviceRepr`] type, but the values are
    /// indeterminate and may be another process's data.)
    pub unsafe fn alloc(stream: &CudaStream, len: usize) -> Result<Self, DriverError> {
        Self::alloc_raw(stream, len, "DeviceBuffer::alloc")
    }

    /// Allocates a buffer and copies `data` into it (ordered on `stream`;
    /// `data` may be reused as soon as this returns).
    pub fn from_host(stream: &CudaStream, data: &[T]) -> Result<Self, DriverError> {
        let mut buf = Self::alloc_raw(stream, data.len(), "DeviceBuffer::from_host")?;
        buf.as_slice_mut().write(stream, data, "DeviceBuffer::from_host")?;
        Ok(buf)
    }

    /// Allocates a buffer of `len` elements whose bytes are all zero.
    pub fn zeroed(stream: &CudaStream, len: usize) -> Result<Self, DriverError> {
        let mut buf = Self::alloc_raw(stream, len, "DeviceBuffer::zeroed")?;
        buf.memset(stream, 0)?;
        Ok(buf)
    }

    /// Copies the buffer back into a new `Vec`, after the work already queued
    /// on `stream` (synchronises `stream`).
    pub fn to_host_vec(&self, stream: &CudaStream) -> Result<Vec<T>, DriverError> {
        self.as_slice().to_host_vec(stream)
    }

    /// Copies the buffer into `out`, which must have the same length
    /// (synchronises `stream`).
    pub fn copy_to_host(&self, stream: &CudaStream, out: &mut [T]) -> Result<(), DriverError> {
        self.as_slice().copy_to_host(stream, out)
    }

    /// Overwrites the buffer with `data`, which must have the same length
    /// (ordered on `stream`; `data` may be reused as soon as this returns).
    pub fn copy_from_host(&mut self, stream: &CudaStream, data: &[T]) -> Result<(), DriverError> {
        self.as_slice_mut().copy_from_host(stream, data)
    }

    /// Overwrites the buffer with the contents of `src` (same length), a
    /// device-to-device copy ordered on `stream`; `src` may be on another
    /// device (a peer copy).
    pub fn copy_from_device(&mut self, stream: &CudaStream, src: &DeviceBuffer<T>) -> Result<(), DriverError> {
        self.as_slice_mut().copy_from_device(stream, src.as_slice())
    }

    /// Sets every byte of the buffer to `byte` (ordered on `stream`).
    pub fn memset(&mut self, stream: &CudaStream, byte: u8) -> Result<(), DriverError> {
        self.as_slice_mut().memset(stream, byte)
    }

    /// Sets every element to `value` (ordered on `stream`).
    pub fn fill(&mut self, stream: &CudaStream, value: T) -> Result<(), DriverError>
    where
        T: FillValue,
    {
        self.as_slice_mut().fill(stream, value)
    }

    /// Asynchronous host → device copy from pinned memory (same length),
    /// ordered on `stream`. Returns at once; `src` waits for the copy
    /// before it can be written or freed.
    pub fn copy_from_host_async(
        &mut self,
        stream: &CudaStream,
        src: &PinnedHostBuffer<T>,
    ) -> Result<(), DriverError> {
        self.as_slice_mut().copy_from_host_async(stream, src)
    }

    /// Asynchronous device → host copy into pinned memory (same length),
    /// ordered on `stream`. Returns at once; reading `dst` waits for it.
    pub fn copy_to_host_async(
        &self,
        stream: &CudaStream,
        dst: &mut PinnedHostBuffer<T>,
    ) -> Result<(), DriverError> {
        self.as_slice().copy_to_host_async(stream, dst)
    }

    /// The whole buffer as a read-only view.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { ptr: self.ptr, len: self.len, ctx: self.order.context(), order: &self.order, _marker: PhantomData }
    }

    /// The whole buffer as a writable view.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { ptr: self.ptr, len: self.len, ctx: self.order.context(), order: &self.order, _marker: PhantomData }
    }

    /// A read-only view of the elements in `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing, like slice indexing.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceSlice<'_, T> {
        self.as_slice().into_slice(range)
    }

    /// The whole buffer as atomics, for a kernel parameter `&[A]` (`A` is
    /// `AtomicU32` for a buffer of `u32`, or any [`AtomicCell`] over `T`,
    /// the [`Scoped`](cuda_device::atomic::Scoped) ones included): every
    /// thread of a launch may update any element, with no data race.
    ///
    /// The view is `Copy` and borrows the buffer mutably: the same launch may
    /// take it (or copies of it) for several parameters, but no `&[T]` or
    /// `&mut [T]` of the buffer, whose non-atomic accesses would race with
    /// the atomics. A launch that takes it orders as a write (it waits for
    /// the buffer's earlier reads and writes on other streams).
    ///
    /// ```no_run
    /// # fn demo(stream: &cuda_core::CudaStream) -> Result<(), cuda_core::DriverError> {
    /// use core::sync::atomic::AtomicU32;
    /// let mut bins = cuda_core::DeviceBuffer::<u32>::zeroed(stream, 256)?;
    /// let view = bins.as_atomic::<AtomicU32>();
    /// assert_eq!(view.len(), 256);
    /// # Ok(()) }
    /// ```
    pub fn as_atomic<A: AtomicCell<Value = T>>(&mut self) -> DeviceAtomicSlice<'_, A> {
        DeviceAtomicSlice { ptr: self.ptr, len: self.len, ctx: self.order.context(), order: &self.order, _marker: PhantomData }
    }

    /// A writable view of the elements in `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing, like slice indexing.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'_, T> {
        self.as_slice_mut().into_slice_mut(range)
    }

    #[inline]
    fn alloc_raw(stream: &CudaStream, len: usize, op: &'static str) -> Result<Self, DriverError> {
        // Most allocations: a non-empty buffer from the device's pool, on a
        // stream outside captures. The general path's checks hold here too
        // (the size fits, no capture, the context is bound), each one test;
        // the rest, and every error, is out of line.
        let ctx = stream.context();
        match len.checked_mul(size_of::<T>()) {
            Some(bytes) if bytes > 0 && !stream.handle().is_capturing() && ctx.has_memory_pools() => {
                let d = ctx.bind()?;
                let mut ptr: CUdeviceptr = 0;
                // SAFETY: out-pointer to a local; the stream is live and of
                // this context, which is current.
                let code = unsafe { (d.cuMemAllocAsync)(&mut ptr, bytes, stream.handle().raw()) };
                if code != 0 {
                    return Err(alloc_failed(ctx, code));
                }
                // The memory exists from this point of `stream` on: to other
                // streams, `stream` wrote it last (the order's home).
                Ok(DeviceBuffer { ptr, len, order: StreamOrder::new(stream.handle()), pooled: true, _marker: PhantomData })
            }
            _ => Self::alloc_general(stream, len, op),
        }
    }

    /// [`alloc_raw`](Self::alloc_raw) off its common path: an empty
    /// buffer, a capturing stream, a size that overflows, a device without
    /// memory pools.
    #[cold]
    #[inline(never)]
    fn alloc_general(stream: &CudaStream, len: usize, op: &'static str) -> Result<Self, DriverError> {
        let bytes = byte_size::<T>(len, op)?;
        let ctx = stream.context();
        let mut ptr: CUdeviceptr = 0;
        let mut pooled = false;
        stream.refuse_in_capture(op)?;
        if bytes > 0 {
            let d = ctx.bind()?;
            if ctx.has_memory_pools() {
                // SAFETY: out-pointer to a local; the stream is live and of
                // this context, which is current.
                unsafe { cu!(d, cuMemAllocAsync(&mut ptr, bytes, stream.handle().raw())) }
                    .map_err(|e| ctx.explain(e))?;
                pooled = true;
            } else {
                // SAFETY: out-pointer to a local; the context is current.
                unsafe { cu!(d, cuMemAlloc_v2(&mut ptr, bytes)) }.map_err(|e| ctx.explain(e))?;
            }
        }
        Ok(DeviceBuffer { ptr, len, order: StreamOrder::new(stream.handle()), pooled, _marker: PhantomData })
    }

    /// A temporary for [`TempBuffer`](crate::TempBuffer): on a capturing
    /// stream, an allocation node of the capture's graph (the driver records
    /// `cuMemAllocAsync` as one), noted in the capture until its drop
    /// records the free node; elsewhere an ordinary buffer.
    pub(crate) fn alloc_temp_raw(stream: &CudaStream, len: usize, op: &'static str) -> Result<Self, DriverError> {
        let Some(capture) = stream.handle().capture() else {
            return Self::alloc_raw(stream, len, op);
        };
        let bytes = byte_size::<T>(len, op)?;
        let ctx = stream.context();
        if !ctx.has_memory_pools() {
            // Graph memory nodes need the device's stream-ordered allocator.
            capture.break_with(op);
            return Err(crate::graph::refused_in_capture(op));
        }
        let mut ptr: CUdeviceptr = 0;
        if bytes > 0 {
            let d = ctx.bind()?;
            // SAFETY: out-pointer to a local; the stream is live, of this
            // context (current), and captures: the driver records an
            // allocation node and hands out the address the graph's launches
            // map; the drop records its free node (below).
            unsafe { cu!(d, cuMemAllocAsync(&mut ptr, bytes, stream.handle().raw())) }.map_err(|e| ctx.explain(e))?;
            capture.note_temp(ptr);
        }
        let order = StreamOrder::new_temp(stream.handle(), Arc::downgrade(&capture));
        Ok(DeviceBuffer { ptr, len, order, pooled: true, _marker: PhantomData })
    }

    /// The memory of an allocation node at `ptr` of a graph built node by
    /// node: usable only while a kernel node's capture is allowed
    /// (`StreamOrder::allow_temp_in`); its drop frees nothing (the graph's
    /// free node does). `home` is the stream kernel nodes are captured on.
    pub(crate) fn graph_node_memory(ptr: CUdeviceptr, len: usize, home: &CudaStream) -> Self {
        let order = StreamOrder::new_temp(home.handle(), std::sync::Weak::new());
        DeviceBuffer { ptr, len, order, pooled: true, _marker: PhantomData }
    }
}

impl<T> Drop for DeviceBuffer<T> {
    #[inline]
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        // Most drops: a pool allocation that is no capture's temporary,
        // used on its home stream only (no record), which captures nothing
        // now: its free is the last write on the home stream, after every
        // use. Anything else takes the general path, out of line.
        let home = self.order.home();
        let common = self.pooled && self.order.is_plain() && self.order.recorded().is_none() && !home.is_capturing();
        if !common {
            return self.drop_general();
        }
        // Binding asks the driver which context is current and sets it only
        // when it differs: asking is the cheaper call, and most drops happen
        // where the context already is current. (The driver is loaded: it
        // made the allocation.)
        if let Ok(d) = home.context().bind() {
            // SAFETY: `ptr` came from cuMemAllocAsync on the home stream of
            // this context and is freed once, ordered after every use queued
            // through the safe API (each on the home stream). Errors are
            // ignored: drop never panics.
            unsafe { (d.cuMemFreeAsync)(self.ptr, home.raw()) };
        }
    }
}

impl<T> DeviceBuffer<T> {
    /// The drop of a buffer off the common path: a capture's temporary, a
    /// `cuMemAlloc` allocation, a buffer used on other streams, or one whose
    /// home stream captures.
    #[cold]
    #[inline(never)]
    fn drop_general(&mut self) {
        let Some(d) = driver::loaded() else { return };
        let home = self.order.home();
        if let Some(capture) = self.order.temp_of() {
            // A capture's temporary: its free node, while the capture still
            // records on the home stream; after it, there is nothing to free
            // (the memory is the graph's, and a capture that ended with the
            // temporary alive was refused and its graph destroyed).
            let Some(capture) = capture.upgrade() else { return };
            if !home.capture().is_some_and(|now| Arc::ptr_eq(&now, &capture)) || !capture.temp_freed(self.ptr) {
                return;
            }
            if home.context().bind().is_ok() {
                // SAFETY: the address of an allocation node of the capture
                // under way on the home stream, freed once (`temp_freed`);
                // every use was queued on that stream before (uses elsewhere
                // are refused). The driver records the free node. Errors
                // are ignored (the capture's end reports a broken capture).
                unsafe { (d.cuMemFreeAsync)(self.ptr, home.raw()) };
            }
            return;
        }
        if !self.pooled {
            // Freed after a wait for the whole context; while another thread
            // captures a graph on it, after that capture (the wait would
            // break it).
            let (ctx, ptr) = (home.context().clone(), self.ptr);
            crate::graph::after_captures(
                home.context(),
                Box::new(move || {
                    // SAFETY: `ptr` came from cuMemAlloc_v2 in this context
                    // and is freed once, after every queued kernel or copy of
                    // the context (on any stream) has finished. Errors are
                    // ignored: drop never panics (after a sticky error the
                    // context's work is dead anyway).
                    unsafe {
                        (d.cuCtxSetCurrent)(ctx.raw());
                        (d.cuCtxSynchronize)();
                        (d.cuMemFree_v2)(ptr);
                    }
                }),
            );
            return;
        }
        // A free queued into a capture would become part of the graph: the
        // capture is broken instead, and the free waits for its end (then
        // queued on the stream as below).
        if let Some(capture) = home.capture() {
            capture.defer_free(self.ptr, self.order.shared().clone(), "dropping a DeviceBuffer allocated on the capturing stream");
            return;
        }
        // The free is the last write on the home stream: it waits for every
        // use on other streams, which the record holds; without a record
        // every use was queued on the home stream, before the free. If the
        // wait cannot be queued (the context has failed), the memory is left
        // to the context rather than freed while work might still use it.
        let ordered = match self.order.recorded() {
            None => true,
            Some(record) => record.write_on(&CudaStream::from_handle(home.clone())).is_ok(),
        };
        // Binding asks the driver which context is current and sets it only
        // when it differs: asking is the cheaper call, and most drops happen
        // where the context already is current.
        if ordered && home.context().bind().is_ok() {
            // SAFETY: `ptr` came from cuMemAllocAsync on the home stream of
            // this context and is freed once, ordered after every use queued
            // through the safe API. Errors are ignored: drop never panics.
            unsafe { (d.cuMemFreeAsync)(self.ptr, home.raw()) };
        }
    }
}

/// A failed `cuMemAllocAsync`, explained.
#[cold]
#[inline(never)]
fn alloc_failed(ctx: &CudaContext, code: cuda_driver_sys::CUresult) -> DriverError {
    match crate::error::check(code, "cuMemAllocAsync") {
        Err(e) => ctx.explain(e),
        Ok(()) => unreachable!("called with a failure code"),
    }
}

/// A read-only view of `len` elements of a [`DeviceBuffer`] (`Copy`, like `&[T]`).
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    ctx: &'a Arc<CudaContext>,
    order: &'a StreamOrder,
    _marker: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}

/// `len` elements of a [`DeviceBuffer`] seen as the atomics `A`, for a kernel
/// parameter `&[A]` ([`DeviceBuffer::as_atomic`]). `Copy`: copies may be
/// passed for several parameters of one launch, and only they, since the
/// view holds the buffer's mutable borrow.
#[derive(Debug)]
pub struct DeviceAtomicSlice<'a, A> {
    ptr: CUdeviceptr,
    len: usize,
    ctx: &'a Arc<CudaContext>,
    order: &'a StreamOrder,
    _marker: PhantomData<&'a [A]>,
}

impl<A> Clone for DeviceAtomicSlice<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for DeviceAtomicSlice<'_, A> {}

impl<'a, A: AtomicCell> DeviceAtomicSlice<'a, A> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The context that owns the memory.
    pub fn context(&self) -> &'a Arc<CudaContext> {
        self.ctx
    }

    /// Makes work queued on `stream` from now on wait for every read and
    /// write of this memory queued on other streams: an atomic update is a
    /// write. The typed launches of `cuda-host` call it for each argument.
    pub fn order_write(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.write_on(stream)
    }

    /// Narrows the view to the elements in `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing, like slice indexing.
    pub fn into_slice(self, range: impl RangeBounds<usize>) -> Self {
        let (start, end) = resolve_range(&range, self.len).unwrap_or_else(|msg| panic!("{msg}"));
        Self { ptr: offset::<A>(self.ptr, start), len: end - start, ..self }
    }
}

/// A writable view of `len` elements of a [`DeviceBuffer`] (unique, like `&mut [T]`).
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    ctx: &'a Arc<CudaContext>,
    order: &'a StreamOrder,
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The context that owns the memory.
    pub fn context(&self) -> &'a Arc<CudaContext> {
        self.ctx
    }

    /// A narrower view of the elements in `range` (relative to this view).
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn into_slice(self, range: impl RangeBounds<usize>) -> DeviceSlice<'a, T> {
        let (start, end) = resolve_range(&range, self.len).unwrap_or_else(|msg| panic!("{msg}"));
        DeviceSlice {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            order: self.order,
            _marker: PhantomData,
        }
    }

    /// Makes work queued on `stream` from now on wait for the writes to this
    /// memory queued on other streams, as every read through this crate
    /// does. Call it before a raw launch ([`launch_kernel`](crate::launch_kernel))
    /// on `stream` that reads the view; the typed launches of `cuda-host`
    /// call it themselves. Work on one stream needs no event and gets none.
    pub fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.read_on(stream)
    }

    /// Whether a read or write of this memory queued on `stream` needs no
    /// ordering: every use so far was queued on `stream`, the buffer's
    /// home, outside captures, so [`order_read`](Self::order_read) would
    /// do nothing (nor would [`DeviceSliceMut::order_write`]). A hot path
    /// may test this with its other checks and skip the calls; otherwise it
    /// must make them.
    #[inline]
    pub fn is_ordered_on(&self, stream: &CudaStream) -> bool {
        self.order.unrecorded_on(stream)
    }

    /// Copies the view into a new `Vec` (synchronises `stream`).
    pub fn to_host_vec(&self, stream: &CudaStream) -> Result<Vec<T>, DriverError> {
        let mut out = Vec::<T>::with_capacity(self.len);
        self.read(stream, out.as_mut_ptr(), "DeviceBuffer::to_host_vec")?;
        // SAFETY: `read` filled all `len` elements with bytes from the device,
        // which are valid `T`s (`DeviceRepr`); the capacity is `len`.
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// Copies the view into `out`, which must have the same length
    /// (synchronises `stream`).
    pub fn copy_to_host(&self, stream: &CudaStream, out: &mut [T]) -> Result<(), DriverError> {
        check_len::<T>(self.len, out.len(), "DeviceBuffer::copy_to_host")?;
        self.read(stream, out.as_mut_ptr(), "DeviceBuffer::copy_to_host")
    }

    /// Asynchronous copy into pinned memory of the same length, ordered on
    /// `stream`; reading `dst` on the host waits for it.
    pub fn copy_to_host_async(
        &self,
        stream: &CudaStream,
        dst: &mut PinnedHostBuffer<T>,
    ) -> Result<(), DriverError> {
        let op = "DeviceBuffer::copy_to_host_async";
        check_len::<T>(self.len, dst.len, op)?;
        check_stream(self.ctx, stream, op)?;
        if self.size_in_bytes() == 0 {
            return Ok(());
        }
        stream.refuse_in_capture(op)?;
        self.order.read_on(stream)?;
        // Earlier copies from `dst` must not see the new bytes.
        dst.wait_pending();
        let d = self.ctx.bind()?;
        // SAFETY: `dst` holds size_in_bytes() bytes of pinned memory; it
        // records the event below and waits for it before any host access
        // or free, so it outlives the DMA and nothing reads it meanwhile.
        unsafe { cu!(d, cuMemcpyDtoHAsync_v2(dst.ptr.cast(), self.ptr, self.size_in_bytes(), stream.raw())) }
            .map_err(|e| self.ctx.explain(e))?;
        dst.track(stream)
    }

    /// Device → host copy into `len` elements at `dst`, then stream sync.
    fn read(&self, stream: &CudaStream, dst: *mut T, op: &'static str) -> Result<(), DriverError> {
        check_stream(self.ctx, stream, op)?;
        stream.refuse_in_capture(op)?;
        if self.size_in_bytes() != 0 {
            self.order.read_on(stream)?;
            let d = self.ctx.bind()?;
            // SAFETY: `dst` has room for `len` elements (callers' contract);
            // the source is inside a live allocation; the stream is
            // synchronised below before `dst` is used.
            unsafe { cu!(d, cuMemcpyDtoHAsync_v2(dst.cast(), self.ptr, self.size_in_bytes(), stream.raw())) }
                .map_err(|e| self.ctx.explain(e))?;
        }
        stream.synchronize()
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Makes work queued on `stream` from now on wait for the writes to this
    /// memory queued on other streams (see [`DeviceSlice::order_read`]).
    pub fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.read_on(stream)
    }

    /// Whether a use of this memory queued on `stream` needs no ordering
    /// (see [`DeviceSlice::is_ordered_on`]): [`order_read`](Self::order_read)
    /// and [`order_write`](Self::order_write) would do nothing.
    #[inline]
    pub fn is_ordered_on(&self, stream: &CudaStream) -> bool {
        self.order.unrecorded_on(stream)
    }

    /// A read-only view of the same elements.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { ptr: self.ptr, len: self.len, ctx: self.ctx, order: self.order, _marker: PhantomData }
    }

    /// Reborrows a narrower writable view of the elements in `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { ptr: self.ptr, len: self.len, ctx: self.ctx, order: self.order, _marker: PhantomData }.into_slice_mut(range)
    }

    /// This view's elements as atomics (see [`DeviceBuffer::as_atomic`]).
    pub fn into_atomic<A: AtomicCell<Value = T>>(self) -> DeviceAtomicSlice<'a, A> {
        DeviceAtomicSlice { ptr: self.ptr, len: self.len, ctx: self.ctx, order: self.order, _marker: PhantomData }
    }

    /// Narrows this view to the elements in `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn into_slice_mut(self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'a, T> {
        let (start, end) = resolve_range(&range, self.len).unwrap_or_else(|msg| panic!("{msg}"));
        DeviceSliceMut {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            order: self.order,
            _marker: PhantomData,
        }
    }

    /// Makes work queued on `stream` from now on wait for every read and
    /// write of this memory queued on other streams, as every write through
    /// this crate does. Call it before a raw launch
    /// ([`launch_kernel`](crate::launch_kernel)) on `stream` that writes the
    /// view; the typed launches of `cuda-host` call it themselves.
    pub fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order.write_on(stream)
    }

    /// Overwrites the view with `data` (same length; ordered on `stream`).
    pub fn copy_from_host(&mut self, stream: &CudaStream, data: &[T]) -> Result<(), DriverError> {
        check_len::<T>(self.len, data.len(), "DeviceBuffer::copy_from_host")?;
        self.write(stream, data, "DeviceBuffer::copy_from_host")
    }

    /// Overwrites the view with `src` (same length), device to device,
    /// ordered on `stream` (which must be of this view's context). A `src`
    /// on another device is copied peer to peer.
    pub fn copy_from_device(&mut self, stream: &CudaStream, src: DeviceSlice<'_, T>) -> Result<(), DriverError> {
        let op = "DeviceBuffer::copy_from_device";
        if src.len != self.len {
            return Err(DriverError::new(
                ErrorKind::LengthMismatch,
                format!(
                    "length mismatch: the destination holds {} elements of {} but the source {}",
                    self.len,
                    type_name::<T>(),
                    src.len
                ),
                op,
            ));
        }
        check_stream(self.ctx, stream, op)?;
        if self.size_in_bytes() == 0 {
            return Ok(());
        }
        src.order.read_on(stream)?;
        self.order.write_on(stream)?;
        let d = self.ctx.bind()?;
        let bytes = self.size_in_bytes();
        // SAFETY: both ranges lie in live allocations of `bytes` bytes; the
        // borrows (`&mut` destination, `&` source) rule out overlap.
        let r = unsafe {
            if self.ctx.same(src.ctx) {
                cu!(d, cuMemcpyDtoDAsync_v2(self.ptr, src.ptr, bytes, stream.raw()))
            } else {
                cu!(d, cuMemcpyPeerAsync(self.ptr, self.ctx.raw(), src.ptr, src.ctx.raw(), bytes, stream.raw()))
            }
        };
        r.map_err(|e| self.ctx.explain(e))
    }

    /// Sets every byte of the view to `byte` (ordered on `stream`).
    pub fn memset(&mut self, stream: &CudaStream, byte: u8) -> Result<(), DriverError> {
        self.memset_pattern(stream, byte as u32, 1, "DeviceBuffer::memset")
    }

    /// Sets every element to `value` with one 8-, 16- or 32-bit driver
    /// memset (ordered on `stream`).
    pub fn fill(&mut self, stream: &CudaStream, value: T) -> Result<(), DriverError>
    where
        T: FillValue,
    {
        let (pattern, width) = value.pattern();
        self.memset_pattern(stream, pattern, width, "DeviceBuffer::fill")
    }

    /// Asynchronous copy from pinned memory of the same length, ordered on
    /// `stream`; `src` waits for it before being written or freed.
    pub fn copy_from_host_async(
        &mut self,
        stream: &CudaStream,
        src: &PinnedHostBuffer<T>,
    ) -> Result<(), DriverError> {
        let op = "DeviceBuffer::copy_from_host_async";
        check_len::<T>(self.len, src.len, op)?;
        check_stream(self.ctx, stream, op)?;
        if self.size_in_bytes() == 0 {
            return Ok(());
        }
        stream.refuse_in_capture(op)?;
        self.order.write_on(stream)?;
        let d = self.ctx.bind()?;
        // SAFETY: `src` holds size_in_bytes() bytes of pinned memory that
        // stay allocated and unwritten until the event recorded below has
        // completed (PinnedHostBuffer waits for it in DerefMut and Drop).
        unsafe { cu!(d, cuMemcpyHtoDAsync_v2(self.ptr, src.ptr.cast(), self.size_in_bytes(), stream.raw())) }
            .map_err(|e| self.ctx.explain(e))?;
        src.track(stream)
    }

    fn memset_pattern(&mut self, stream: &CudaStream, pattern: u32, width: usize, op: &'static str) -> Result<(), DriverError> {
        check_stream(self.ctx, stream, op)?;
        let bytes = self.size_in_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.order.write_on(stream)?;
        let d = self.ctx.bind()?;
        let (s, n) = (stream.raw(), bytes / width);
        // SAFETY: the view lies in a live allocation; `n * width` bytes are
        // written. For widths 2 and 4 (`FillValue` of that size), the start
        // is cuMemAlloc-aligned plus a multiple of the element size, so it
        // has the alignment the 16/32-bit memsets need.
        let r = unsafe {
            match width {
                1 => cu!(d, cuMemsetD8Async(self.ptr, pattern as u8, n, s)),
                2 => cu!(d, cuMemsetD16Async(self.ptr, pattern as u16, n, s)),
                _ => cu!(d, cuMemsetD32Async(self.ptr, pattern, n, s)),
            }
        };
        r.map_err(|e| self.ctx.explain(e))
    }

    /// Host → device copy of `data` (same length as the view).
    fn write(&mut self, stream: &CudaStream, data: &[T], op: &'static str) -> Result<(), DriverError> {
        check_stream(self.ctx, stream, op)?;
        stream.refuse_in_capture(op)?;
        if self.size_in_bytes() == 0 {
            return Ok(());
        }
        self.order.write_on(stream)?;
        let d = self.ctx.bind()?;
        // SAFETY: `data` holds size_in_bytes() readable bytes (same length);
        // the driver stages pageable memory before returning, so `data` need
        // not outlive the call. Destination is inside a live allocation.
        unsafe { cu!(d, cuMemcpyHtoDAsync_v2(self.ptr, data.as_ptr().cast(), self.size_in_bytes(), stream.raw())) }
            .map_err(|e| self.ctx.explain(e))
    }
}

/// Page-locked host memory holding `len` values of `T`, the source or
/// destination of asynchronous copies
/// ([`DeviceBuffer::copy_from_host_async`], [`DeviceBuffer::copy_to_host_async`]).
///
/// Dereferences to `[T]`. Every access through `Deref`/`DerefMut`, and the
/// drop, first waits for the asynchronous copies that use this buffer, so
/// the host never sees a half-finished copy and the DMA never touches freed
/// memory. Allocated portable (usable from every context).
pub struct PinnedHostBuffer<T> {
    ptr: *mut T,
    len: usize,
    ctx: Arc<CudaContext>,
    /// Events recorded after the asynchronous copies not yet waited for.
    pending: Mutex<Vec<CudaEvent>>,
}

// SAFETY: the buffer owns its memory like a `Vec<T>`; the pending list is
// behind a mutex and events are Send + Sync.
unsafe impl<T: Send> Send for PinnedHostBuffer<T> {}
// SAFETY: shared access only reads `[T]` (after waiting) or records more
// reading copies; see `Send`.
unsafe impl<T: Sync> Sync for PinnedHostBuffer<T> {}

impl<T: DeviceRepr> PinnedHostBuffer<T> {
    /// Allocates `len` zeroed elements of pinned memory (`cuMemHostAlloc`).
    pub fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        const PORTABLE: u32 = 0x01;
        let op = "PinnedHostBuffer::zeroed";
        let bytes = byte_size::<T>(len, op)?;
        let mut ptr: *mut T = ptr::NonNull::dangling().as_ptr();
        if bytes > 0 {
            // The driver refuses a pinned allocation while this thread
            // captures a graph on the context, and the capture is then
            // invalid: refuse it first, naming the call that broke it.
            if crate::graph::break_captures_of(ctx, op) {
                return Err(crate::graph::refused_in_capture(op));
            }
            let d = ctx.bind()?;
            let mut p: *mut std::ffi::c_void = ptr::null_mut();
            // SAFETY: out-pointer to a local; the context is current. The
            // memory is zeroed before use; all-zero bytes are a valid `T`.
            unsafe {
                cu!(d, cuMemHostAlloc(&mut p, bytes, PORTABLE))?;
                ptr::write_bytes(p.cast::<u8>(), 0, bytes);
            }
            // cuMemHostAlloc returns page-aligned memory, enough for any T.
            ptr = p.cast();
        }
        Ok(PinnedHostBuffer { ptr, len, ctx: ctx.clone(), pending: Mutex::new(Vec::new()) })
    }

    /// Allocates pinned memory holding a copy of `data`.
    pub fn from_slice(ctx: &Arc<CudaContext>, data: &[T]) -> Result<Self, DriverError> {
        let mut buf = Self::zeroed(ctx, data.len())?;
        buf.copy_from_slice(data);
        Ok(buf)
    }

    /// Blocks until every asynchronous copy using this buffer has finished,
    /// reporting a failure (plain `Deref` waits too, but cannot report).
    pub fn synchronize(&self) -> Result<(), DriverError> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for event in pending.iter() {
            event.synchronize()?;
        }
        pending.clear();
        Ok(())
    }

    /// The context the memory was allocated on.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Remembers that an asynchronous copy on `stream` uses the buffer.
    fn track(&self, stream: &CudaStream) -> Result<(), DriverError> {
        let event = match stream.record_event_without_timing() {
            Ok(e) => e,
            Err(e) => {
                // Without an event to wait for, wait for the copy now.
                let _ = stream.synchronize();
                return Err(e);
            }
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        // Forget copies already finished, so a loop of copies does not pile up events.
        pending.retain(|e| !matches!(e.is_complete(), Ok(true)));
        pending.push(event);
        Ok(())
    }
}

impl<T> PinnedHostBuffer<T> {
    /// Waits for all pending copies; errors mean the context is dead, and
    /// its copies with it, so they are dropped (never panics).
    fn wait_pending(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = driver::loaded() {
            for event in pending.iter() {
                // SAFETY: the event is live (owned by the list).
                unsafe {
                    (d.cuCtxSetCurrent)(event.context().raw());
                    (d.cuEventSynchronize)(event.raw());
                }
            }
        }
        pending.clear();
    }
}

impl<T> Deref for PinnedHostBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.wait_pending();
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at
        // allocation, written only as whole `T`s or device bytes, which are
        // valid for DeviceRepr); no copy is writing it (waited just above,
        // and writing copies need `&mut self`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for PinnedHostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.wait_pending();
        // SAFETY: as in `deref`; `&mut self` excludes any other access, and
        // every copy that could read the memory has completed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        self.wait_pending();
        if self.len * size_of::<T>() == 0 {
            return;
        }
        if let Some(d) = driver::loaded() {
            // SAFETY: allocated by cuMemHostAlloc, freed once, after every
            // copy using it has completed (waited just above).
            unsafe {
                (d.cuCtxSetCurrent)(self.ctx.raw());
                (d.cuMemFreeHost)(self.ptr.cast());
            }
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for PinnedHostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedHostBuffer").field("len", &self.len).finish_non_exhaustive()
    }
}

/// The device address of element `index` after `base`.
fn offset<T>(base: CUdeviceptr, index: usize) -> CUdeviceptr {
    if base == 0 {
        0
    } else {
        base + (index * size_of::<T>()) as u64
    }
}

/// `(start, end)` of `range` in a sequence of `len`, or the panic message.
pub(crate) fn resolve_range(range: &impl RangeBounds<usize>, len: usize) -> Result<(usize, usize), String> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or("device slice start overflows usize")?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or("device slice end overflows usize")?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end {
        return Err(format!("device slice index starts at {start} but ends at {end}"));
    }
    if end > len {
        return Err(format!("device slice range {start}..{end} is out of bounds for a buffer of {len} elements"));
    }
    Ok((start, end))
}

fn check_len<T>(device_len: usize, host_len: usize, op: &'static str) -> Result<(), DriverError> {
    if host_len == device_len {
        return Ok(());
    }
    Err(DriverError::new(
        ErrorKind::LengthMismatch,
        format!(
            "length mismatch: the device buffer holds {device_len} elements of {} but the host slice has {host_len}",
            type_name::<T>()
        ),
        op,
    ))
}

fn check_stream(ctx: &CudaContext, stream: &CudaStream, op: &'static str) -> Result<(), DriverError> {
    if ctx.same(stream.context()) {
        return Ok(());
    }
    Err(DriverError::new(
        ErrorKind::InvalidArgument,
        format!(
            "the buffer lives on device {} but the stream belongs to device {}",
            ctx.ordinal(),
            stream.context().ordinal()
        ),
        op,
    ))
}

/// `len * size_of::<T>()`, or an error naming the overflow.
fn byte_size<T>(len: usize, op: &'static str) -> Result<usize, DriverError> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| {
        DriverError::new(
            ErrorKind::InvalidArgument,
            format!("a buffer of {len} elements of {} does not fit in the address space", type_name::<T>()),
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
    fn handles_are_send_and_sync() {
        fn assert_send_sync<S: Send + Sync>() {}
        assert_send_sync::<DeviceBuffer<f32>>();
        assert_send_sync::<DeviceBuffer<[u8; 16]>>();
        assert_send_sync::<PinnedHostBuffer<u64>>();
        assert_send_sync::<DeviceSlice<'static, f32>>();
        assert_send_sync::<DeviceSliceMut<'static, f32>>();
    }

    #[test]
    fn device_repr_impls() {
        fn repr<T: DeviceRepr>() {}
        repr::<u8>();
        repr::<i128>();
        repr::<f64>();
        repr::<()>();
        repr::<[f32; 4]>();
        repr::<[[u16; 2]; 3]>();
        repr::<(u8, f64)>();
        repr::<(u8, u16, u32, u64, i8, i16, i32, i64)>();
        repr::<std::num::Wrapping<u32>>();
        #[derive(Clone, Copy)]
        #[repr(C)]
        struct Mine {
            _a: u16,
            _b: [f32; 2],
        }
        // SAFETY: both fields accept any bytes.
        unsafe impl DeviceRepr for Mine {}
        repr::<Mine>();
        repr::<[Mine; 3]>();
    }

    #[test]
    fn fill_patterns() {
        assert_eq!(0xabu8.pattern(), (0xab, 1));
        assert_eq!((-1i8).pattern(), (0xff, 1));
        assert_eq!(0x1234u16.pattern(), (0x1234, 2));
        assert_eq!((-2i16).pattern(), (0xfffe, 2));
        assert_eq!(7u32.pattern(), (7, 4));
        assert_eq!((-1i32).pattern(), (u32::MAX, 4));
        assert_eq!(1.0f32.pattern(), (0x3f80_0000, 4));
    }

    #[test]
    fn ranges_resolve_like_slices() {
        assert_eq!(resolve_range(&(..), 10), Ok((0, 10)));
        assert_eq!(resolve_range(&(2..5), 10), Ok((2, 5)));
        assert_eq!(resolve_range(&(2..=5), 10), Ok((2, 6)));
        assert_eq!(resolve_range(&(..3), 10), Ok((0, 3)));
        assert_eq!(resolve_range(&(7..), 10), Ok((7, 10)));
        assert_eq!(resolve_range(&(10..), 10), Ok((10, 10)));
        assert_eq!(resolve_range(&(0..0), 0), Ok((0, 0)));
        assert_eq!(
            resolve_range(&(0..11), 10),
            Err("device slice range 0..11 is out of bounds for a buffer of 10 elements".into())
        );
        assert_eq!(resolve_range(&(Bound::Included(5), Bound::Excluded(3)), 10), Err("device slice index starts at 5 but ends at 3".into()));
        assert!(resolve_range(&(..=usize::MAX), 10).is_err());
        let excl = (Bound::Excluded(usize::MAX), Bound::Unbounded);
        assert!(resolve_range(&excl, 10).is_err());
        let excl = (Bound::Excluded(2), Bound::Included(4));
        assert_eq!(resolve_range(&excl, 10), Ok((3, 5)));
    }

    #[test]
    fn offsets_scale_by_element_size() {
        assert_eq!(offset::<f32>(0x1000, 3), 0x100c);
        assert_eq!(offset::<[u8; 3]>(0x1000, 2), 0x1006);
        assert_eq!(offset::<f64>(0, 5), 0, "an empty allocation stays null");
    }

    #[test]
    fn length_mismatch_message() {
        let e = check_len::<i64>(10, 5, "DeviceBuffer::copy_from_host").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::LengthMismatch);
        assert!(e.to_string().contains("holds 10 elements of i64 but the host slice has 5"), "{e}");
        assert!(check_len::<i64>(3, 3, "t").is_ok());
    }
}
