//! Temporary device memory that a graph may own: [`TempBuffer`] (see its
//! docs for the design and why it is sound).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::context::CudaStream;
use crate::error::DriverError;
use crate::memory::{DeviceBuffer, DeviceRepr};

#[cfg(doc)]
use crate::GraphError;

/// A temporary device buffer of `len` values of `T` that borrows the stream
/// it was made on, used as the [`DeviceBuffer`] it dereferences to.
///
/// [`CudaStream::alloc_temp_zeroed`] gives a buffer that lives no longer
/// than the borrow of the stream it was made on. Outside a capture it is an
/// ordinary stream-ordered [`DeviceBuffer`] (allocated on the stream, freed
/// there when dropped). On a stream that captures a graph it is what the
/// driver records for `cuMemAllocAsync` / `cuMemFreeAsync` in a capture: an
/// **allocation node** where it is made and a **free node** where it is
/// dropped. The graph then owns the memory: each launch allocates it, the
/// nodes recorded in between use it, and the free node returns it, so a
/// library call that needs scratch space (a cuda-prims scan or sort) can be
/// captured and replayed.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use cuda_core::{CudaContext, DeviceBuffer};
///
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut data = DeviceBuffer::<u32>::zeroed(&stream, 1024)?;
/// let graph = stream.capture(|s| {
///     let mut scratch = s.alloc_temp_zeroed::<u32>(1024)?; // allocation node (and a memset)
///     scratch.copy_from_device(s, &data)?;                 // uses it
///     data.copy_from_device(s, &scratch)?;
///     Ok::<_, cuda_core::DriverError>(())                  // `scratch` dropped: free node
/// })?;
/// let exec = graph.instantiate()?;
/// exec.launch(&stream)?; // allocates, copies twice, frees
/// # Ok(()) }
/// ```
///
/// # Why this is sound
///
/// The memory of an allocation node exists only during the graph's
/// launches, between that node and its free node. So a temporary must be
/// used by its capture's work only, and dropped before the capture ends:
///
/// * It borrows the stream it was made on: in [`CudaStream::capture`]'s
///   closure that borrow ends with the closure, so the compiler keeps the
///   temporary from escaping the capture (below).
/// * Its uses (copies, memsets, typed launches) are allowed only on the
///   stream that captures, while that same capture records: its drop, the
///   free node, is then ordered after all of them. A use on another stream
///   (one that joined the capture through an event included), or after the
///   capture ended (reachable with [`CudaStream::begin_capture`],
///   whose stream outlives the capture, or by swapping the buffer out of
///   its `&mut`), is refused with an error naming it. A node of an
///   explicitly built graph refuses it too ([`GraphError::TempInGraph`]).
/// * A capture that ends while one of its temporaries is alive (forgotten,
///   or kept past [`StreamCapture::end`](crate::StreamCapture::end)) fails
///   with [`GraphError::TempNotFreed`] and its graph is destroyed; the
///   temporary's later drop frees nothing (there is nothing: the graph was
///   never launched).
///
/// A graph with allocation nodes may not be a child graph, and has one exec
/// at a time (the driver's rules): [`Graph::add_child`](crate::Graph::add_child)
/// and a second [`Graph::instantiate`](crate::Graph::instantiate) are
/// refused with [`GraphError::AllocNodes`], and so is a
/// [`GraphExec::update`](crate::GraphExec::update) to or from such a graph
/// (its kernels would use addresses the other's allocation nodes do not
/// map). Launches of one exec run one
/// after another, so each finds the previous launch's memory freed.
///
/// The graph's memory comes from the driver's graph memory pool, not from
/// the device's default pool ([`MemPool`](crate::MemPool) sees none of it).
///
/// A temporary cannot leave the capture's closure:
///
/// ```compile_fail
/// # fn f(stream: &cuda_core::CudaStream) -> Result<(), Box<dyn std::error::Error>> {
/// let mut kept = None;
/// stream.capture(|s| {
///     kept = Some(s.alloc_temp_zeroed::<u32>(16)?); // the temporary would outlive the capture
///     Ok::<_, cuda_core::DriverError>(())
/// })?;
/// # Ok(()) }
/// ```
///
/// nor be used after its scope (its drop recorded the free node):
///
/// ```compile_fail
/// # fn f(stream: &cuda_core::CudaStream, out: &mut cuda_core::DeviceBuffer<u32>) -> Result<(), Box<dyn std::error::Error>> {
/// stream.capture(|s| {
///     let scratch = s.alloc_temp_zeroed::<u32>(16)?;
///     drop(scratch); // the free node
///     out.copy_from_device(s, &scratch)?;
///     Ok::<_, cuda_core::DriverError>(())
/// })?;
/// # Ok(()) }
/// ```
///
/// nor be used on another stream once the capture is over:
///
/// ```compile_fail
/// # fn f(stream: &cuda_core::CudaStream, other: &cuda_core::CudaStream, out: &mut cuda_core::DeviceBuffer<u32>) -> Result<(), Box<dyn std::error::Error>> {
/// let graph = stream.capture(|s| {
///     let scratch = s.alloc_temp_zeroed::<u32>(16)?;
///     Ok::<_, cuda_core::DriverError>(())
/// })?;
/// out.copy_from_device(other, &scratch)?; // out of scope: the graph owns it
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TempBuffer<'s, T> {
    buffer: DeviceBuffer<T>,
    _stream: PhantomData<&'s CudaStream>,
}

impl<T> Deref for TempBuffer<'_, T> {
    type Target = DeviceBuffer<T>;

    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }
}

impl<T> DerefMut for TempBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buffer
    }
}

impl<T> TempBuffer<'_, T> {
    /// Whether it is an allocation node of a capture (made while its stream
    /// captured), rather than an ordinary buffer.
    pub fn is_graph_owned(&self) -> bool {
        self.buffer.order().temp_of().is_some()
    }
}

impl CudaStream {
    /// A temporary buffer of `len` zeroed values: on a capturing stream an
    /// allocation node of the graph (and a memset node), whose drop records
    /// the free node; elsewhere an ordinary buffer allocated on this stream.
    /// See [`TempBuffer`].
    ///
    /// On a device without stream-ordered memory pools it is refused in a
    /// capture (breaking it): graph memory nodes need them.
    pub fn alloc_temp_zeroed<T: DeviceRepr>(&self, len: usize) -> Result<TempBuffer<'_, T>, DriverError> {
        let mut buffer = DeviceBuffer::alloc_temp_raw(self, len, "CudaStream::alloc_temp_zeroed")?;
        buffer.memset(self, 0)?;
        Ok(TempBuffer { buffer, _stream: PhantomData })
    }

    /// [`alloc_temp_zeroed`](Self::alloc_temp_zeroed) without the memset.
    ///
    /// # Safety
    /// As for [`DeviceBuffer::alloc`]: the contents are whatever the memory
    /// held (in a graph, possibly another launch's or node's data); write
    /// every element before reading it.
    pub unsafe fn alloc_temp<T: DeviceRepr>(&self, len: usize) -> Result<TempBuffer<'_, T>, DriverError> {
        let buffer = DeviceBuffer::alloc_temp_raw(self, len, "CudaStream::alloc_temp")?;
        Ok(TempBuffer { buffer, _stream: PhantomData })
    }
}
