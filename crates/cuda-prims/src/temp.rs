//! Temporary device storage of the device-wide primitives.
//!
//! Every call allocates what it needs on the caller's stream (cuda-core's
//! stream-ordered allocation, from the device's memory pool) and drops it
//! there when it returns: the free is queued behind the call's kernels, so
//! it never waits for the GPU, and the pool hands the same memory to the
//! next call. The user never sizes temporary storage (CUB's two-phase
//! `d_temp_storage == nullptr` query has no counterpart). A stream that
//! captures a graph is refused with [`PrimsError::Capturing`]: the
//! allocation would break the capture.

use crate::PrimsError;
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr};

/// Refuses a stream that captures a graph, before anything is queued (an
/// allocation would break the capture with the driver's less helpful code).
fn not_capturing(stream: &CudaStream) -> Result<(), PrimsError> {
    if stream.is_capturing() {
        return Err(PrimsError::Capturing);
    }
    Ok(())
}

/// `len` elements of scratch on `stream`, every one of which the kernels
/// write before they read it.
pub(crate) fn scratch<T: DeviceRepr>(stream: &CudaStream, len: usize) -> Result<DeviceBuffer<T>, PrimsError> {
    not_capturing(stream)?;
    // SAFETY: the callers' kernels write each element before reading it
    // (each call site says how); nothing reads it back to the host unwritten.
    Ok(unsafe { DeviceBuffer::alloc(stream, len) }?)
}

/// `len` zeroed elements on `stream` (flags and counters).
pub(crate) fn zeroed<T: DeviceRepr>(stream: &CudaStream, len: usize) -> Result<DeviceBuffer<T>, PrimsError> {
    not_capturing(stream)?;
    Ok(DeviceBuffer::zeroed(stream, len)?)
}

/// The number of blocks that fill the GPU of `stream` with
/// `blocks_per_sm` blocks per multiprocessor.
pub(crate) fn resident_blocks(stream: &CudaStream, blocks_per_sm: usize) -> Result<usize, PrimsError> {
    let sms = stream.context().multiprocessor_count()? as usize;
    Ok(sms.max(1) * blocks_per_sm)
}
