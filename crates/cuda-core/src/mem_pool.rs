//! The device's memory pool, which every [`DeviceBuffer`](crate::DeviceBuffer)
//! is allocated from on its stream (`cuMemAllocAsync`).
//!
//! Freed memory goes back to the pool, not to the OS, and the next
//! allocation on a stream reuses it without a driver round trip; at a
//! synchronisation the pool returns what it holds above its release
//! threshold (0 by default: everything). A program that allocates and frees
//! in a loop sets the threshold to its working set so the memory stays:
//!
//! ```no_run
//! # fn main() -> Result<(), cuda_core::DriverError> {
//! use cuda_core::{CudaContext, DeviceBuffer};
//!
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.new_stream()?;
//! let pool = ctx.memory_pool()?;
//! pool.set_release_threshold(u64::MAX)?; // keep everything freed
//! for _ in 0..1000 {
//!     let scratch = DeviceBuffer::<f32>::zeroed(&stream, 1 << 20)?; // reuses the last one's memory
//!     drop(scratch); // freed on `stream`, without waiting
//! }
//! stream.synchronize()?;
//! println!("{} bytes held by the pool", pool.reserved_bytes()?);
//! pool.trim_to(0)?; // give it back now
//! # Ok(()) }
//! ```

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use crate::context::CudaContext;
use crate::driver::{self, cu, CUmemoryPool};
use crate::error::DriverError;

/// The default memory pool of one device (`cuDeviceGetDefaultMemPool`),
/// from [`CudaContext::memory_pool`].
#[derive(Debug)]
pub struct MemPool {
    pool: CUmemoryPool,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUmemoryPool is a process-wide handle that the driver accepts
// from any thread; every method binds the context first.
unsafe impl Send for MemPool {}
// SAFETY: see `Send`; the struct is immutable.
unsafe impl Sync for MemPool {}

impl CudaContext {
    /// The default memory pool of this context's device, which its buffers
    /// are allocated from. Fails with `CUDA_ERROR_NOT_SUPPORTED` on a device
    /// without memory pools.
    pub fn memory_pool(self: &Arc<Self>) -> Result<MemPool, DriverError> {
        if !self.has_memory_pools() {
            return Err(DriverError::from_code(driver::CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetDefaultMemPool")
                .with_detail("this device has no memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)"));
        }
        let d = self.bind()?;
        let mut pool: CUmemoryPool = ptr::null_mut();
        // SAFETY: out-pointer to a local; the device handle is this context's.
        unsafe { cu!(d, cuDeviceGetDefaultMemPool(&mut pool, self.cu_device())) }?;
        Ok(MemPool { pool, ctx: self.clone() })
    }
}

impl MemPool {
    /// Bytes the pool keeps across synchronisations instead of returning
    /// them to the OS.
    pub fn release_threshold(&self) -> Result<u64, DriverError> {
        self.get(driver::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets how many bytes the pool keeps across synchronisations
    /// (`u64::MAX`: keep everything it has had).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<(), DriverError> {
        self.set(driver::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
    }

    /// Returns memory to the OS until the pool holds at most `keep_bytes`
    /// beyond what live allocations use (`cuMemPoolTrimTo`).
    pub fn trim_to(&self, keep_bytes: usize) -> Result<(), DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: the pool is the device's default pool, live as long as the context.
        unsafe { cu!(d, cuMemPoolTrimTo(self.pool, keep_bytes)) }
    }

    /// Bytes the pool holds from the OS now.
    pub fn reserved_bytes(&self) -> Result<u64, DriverError> {
        self.get(driver::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// Bytes of the pool's live allocations now.
    pub fn used_bytes(&self) -> Result<u64, DriverError> {
        self.get(driver::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// The most bytes the pool has held at once since the last
    /// [`reset_peaks`](Self::reset_peaks).
    pub fn peak_reserved_bytes(&self) -> Result<u64, DriverError> {
        self.get(driver::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    }

    /// The most bytes live allocations have used at once since the last
    /// [`reset_peaks`](Self::reset_peaks).
    pub fn peak_used_bytes(&self) -> Result<u64, DriverError> {
        self.get(driver::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    }

    /// Starts both peaks again from the current values.
    pub fn reset_peaks(&self) -> Result<(), DriverError> {
        self.set(driver::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)?;
        self.set(driver::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
    }

    fn get(&self, attribute: i32) -> Result<u64, DriverError> {
        let d = self.ctx.bind()?;
        let mut value: u64 = 0;
        // SAFETY: every attribute asked here has a u64 value, written to the local.
        unsafe { cu!(d, cuMemPoolGetAttribute(self.pool, attribute, (&mut value as *mut u64).cast::<c_void>())) }?;
        Ok(value)
    }

    fn set(&self, attribute: i32, mut value: u64) -> Result<(), DriverError> {
        let d = self.ctx.bind()?;
        // SAFETY: every attribute set here takes a u64, read from the local.
        unsafe { cu!(d, cuMemPoolSetAttribute(self.pool, attribute, (&mut value as *mut u64).cast::<c_void>())) }
    }
}
