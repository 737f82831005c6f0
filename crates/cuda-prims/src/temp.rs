//! Temporary device storage of the device-wide primitives.
//!
//! Every call allocates what it needs on the caller's stream (cuda-core's
//! stream-ordered allocation, from the device's memory pool) and drops it
//! there when it returns: the free is queued behind the call's kernels, so
//! it never waits for the GPU, and the pool hands the same memory to the
//! next call. The user never sizes temporary storage (CUB's two-phase
//! `d_temp_storage == nullptr` query has no counterpart).
//!
//! On a stream that captures a graph the same storage is a cuda-core
//! [`TempBuffer`] made there: an allocation node of the graph, with a free
//! node where the call drops it, so the graph owns its temporary storage
//! (allocation node, the call's kernels, free node) and every replay gets
//! its own. A zeroed one gets a memset node, so each replay starts from
//! zeroed flags and counters.
//!
//! One exception: the scan's and the selection's look-back status words
//! are kept by the stream between calls (`scan::KeptStatus`, in the
//! stream's own storage, `CudaStream::with_local`, freed with the stream),
//! where zeroing a fresh set costs more than a small call's kernel;
//! never while the stream captures, and not with the measurement knob
//! `status=temp` in `OXIDE_PRIMS_SCAN` / `OXIDE_PRIMS_SELECT`.

use crate::PrimsError;
use cuda_core::{CudaStream, DeviceRepr, TempBuffer};

/// `len` elements of scratch on `stream`, every one of which the kernels
/// write before they read it.
pub(crate) fn scratch<T: DeviceRepr>(stream: &CudaStream, len: usize) -> Result<TempBuffer<'_, T>, PrimsError> {
    // SAFETY: the callers' kernels write each element before reading it
    // (each call site says how); nothing reads it back to the host unwritten.
    Ok(unsafe { stream.alloc_temp(len) }?)
}

/// `len` zeroed elements on `stream` (flags and counters).
pub(crate) fn zeroed<T: DeviceRepr>(stream: &CudaStream, len: usize) -> Result<TempBuffer<'_, T>, PrimsError> {
    Ok(stream.alloc_temp_zeroed(len)?)
}

/// The number of blocks that fill the GPU of `stream` with
/// `blocks_per_sm` blocks per multiprocessor.
pub(crate) fn resident_blocks(stream: &CudaStream, blocks_per_sm: usize) -> Result<usize, PrimsError> {
    let sms = stream.context().multiprocessor_count()? as usize;
    Ok(sms.max(1) * blocks_per_sm)
}
