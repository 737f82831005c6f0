//! Device panics the host can read after the kernel has died: each context
//! owns one pinned, device-mapped [`PanicRecord`]; every module loaded on the
//! context gets its device address in the global `__oxide_panic_record`; the
//! first panicking thread fills it before it traps. When a kernel-fault
//! error comes back, the host reads the record and the error carries a
//! [`DevicePanic`]. The record's layout is `cuda_driver_sys::panic_record`.

use std::ffi::c_void;
use std::ptr;

use cuda_driver_sys::panic_record::{self, RawPanicRecord};

pub use cuda_driver_sys::panic_record::DevicePanic;

use crate::driver::{self, cu, CUdeviceptr};
use crate::error::DriverError;

/// One context's pinned, device-mapped panic record.
#[derive(Debug)]
pub(crate) struct PanicRecord {
    host: *mut RawPanicRecord,
    device: CUdeviceptr,
}

// SAFETY: the pointer is to pinned memory owned by this value; the host only
// reads it (volatile) after the device has finished with the context.
unsafe impl Send for PanicRecord {}
// SAFETY: see `Send`.
unsafe impl Sync for PanicRecord {}

impl PanicRecord {
    /// Allocates a zeroed record on the current context.
    pub(crate) fn allocate() -> Result<PanicRecord, DriverError> {
        const PORTABLE: u32 = 0x01;
        const DEVICEMAP: u32 = 0x02;
        let d = driver::driver()?;
        let mut host: *mut c_void = ptr::null_mut();
        let mut device: CUdeviceptr = 0;
        let size = std::mem::size_of::<RawPanicRecord>();
        // SAFETY: out-pointers to locals; the size is the record's; the
        // allocation is zeroed before anyone reads it and freed in Drop.
        unsafe {
            cu!(d, cuMemHostAlloc(&mut host, size, PORTABLE | DEVICEMAP))?;
            ptr::write_bytes(host.cast::<u8>(), 0, size);
            if let Err(e) = cu!(d, cuMemHostGetDevicePointer_v2(&mut device, host, 0)) {
                (d.cuMemFreeHost)(host);
                return Err(e);
            }
        }
        Ok(PanicRecord { host: host.cast(), device })
    }

    /// The address kernels write to.
    pub(crate) fn device_address(&self) -> CUdeviceptr {
        self.device
    }

    /// The panic the device recorded, if one did.
    pub(crate) fn read(&self) -> Option<DevicePanic> {
        // SAFETY: `host` is our live, zeroed-at-allocation record; the device
        // sets its state last.
        unsafe { panic_record::read(self.host) }
    }
}

impl Drop for PanicRecord {
    fn drop(&mut self) {
        if let Some(d) = driver::loaded() {
            // SAFETY: allocated by cuMemHostAlloc in `allocate`, freed once.
            unsafe { (d.cuMemFreeHost)(self.host.cast()) };
        }
    }
}
