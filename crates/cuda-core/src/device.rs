//! [`Device`]: one GPU, queried without creating a context.
//!
//! ```no_run
//! use cuda_core::Device;
//!
//! # fn main() -> Result<(), cuda_core::DriverError> {
//! for device in Device::all()? {
//!     let (major, minor) = device.compute_capability()?;
//!     println!("{}: {} (sm_{major}{minor}, {} SMs, {} GiB)",
//!              device.ordinal(), device.name()?, device.multiprocessor_count()?,
//!              device.total_memory()? >> 30);
//! }
//! let ctx = Device::get(0)?.context()?; // the GPU's primary context
//! # Ok(())
//! # }
//! ```

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use crate::context::{CudaContext, DeviceLimits};
use crate::driver::{self, cu, CUdevice};
use crate::error::{DriverError, ErrorKind};

/// One CUDA GPU, by ordinal. Cheap to copy; every query goes to the driver
/// (which needs no context for them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    handle: CUdevice,
    ordinal: usize,
}

impl Device {
    /// The number of CUDA GPUs (0 when the driver is installed but sees
    /// none; an error of kind [`ErrorKind::DriverNotFound`] without a driver).
    pub fn count() -> Result<usize, DriverError> {
        let d = match driver::initialized() {
            Err(e) if e.code() == 100 => return Ok(0),
            other => other?,
        };
        let mut n: c_int = 0;
        // SAFETY: writes one int.
        unsafe { cu!(d, cuDeviceGetCount(&mut n))? };
        Ok(n.max(0) as usize)
    }

    /// GPU `ordinal`; [`ErrorKind::NoDevice`] if there is no such GPU.
    pub fn get(ordinal: usize) -> Result<Device, DriverError> {
        let d = driver::initialized()?;
        let count = Self::count()?;
        if ordinal >= count {
            let err = if count == 0 {
                DriverError::from_code(100, "cuDeviceGetCount").with_message(
                    "no CUDA GPU found: the NVIDIA driver is loaded but reports no device. \
                     `cargo oxide doctor` checks the setup.",
                )
            } else {
                DriverError::from_code(101, "cuDeviceGet").with_message(format!(
                    "there is no CUDA device {ordinal}: the driver reports {count} device(s), ordinals 0..={}",
                    count - 1
                ))
            };
            return Err(err.with_kind(ErrorKind::NoDevice));
        }
        let mut handle: CUdevice = 0;
        // SAFETY: out-pointer to a local; ordinal < count fits in c_int.
        unsafe { cu!(d, cuDeviceGet(&mut handle, ordinal as c_int))? };
        Ok(Device { handle, ordinal })
    }

    /// Every GPU the driver reports, in ordinal order.
    pub fn all() -> Result<Vec<Device>, DriverError> {
        (0..Self::count()?).map(Self::get).collect()
    }

    /// This GPU's primary context, retained and current on this thread
    /// (the same as [`CudaContext::new`] with this ordinal).
    pub fn context(&self) -> Result<Arc<CudaContext>, DriverError> {
        CudaContext::new(self.ordinal)
    }

    pub(crate) fn from_raw(handle: CUdevice, ordinal: usize) -> Device {
        Device { handle, ordinal }
    }

    /// The ordinal this device was found at.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The raw `CUdevice` handle.
    pub fn raw(&self) -> i32 {
        self.handle
    }

    /// The marketing name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Result<String, DriverError> {
        let d = driver::initialized()?;
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        unsafe { cu!(d, cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, self.handle))? };
        buf[255] = 0;
        // SAFETY: `buf` is NUL-terminated (enforced just above).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// Queries a `CUdevice_attribute` (see `cuda.h` for the numbers).
    pub fn attribute(&self, attribute: i32) -> Result<i32, DriverError> {
        let d = driver::initialized()?;
        let mut v: c_int = 0;
        // SAFETY: writes one int; an unknown attribute is reported as an error.
        unsafe { cu!(d, cuDeviceGetAttribute(&mut v, attribute, self.handle))? };
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

    /// Bytes of L2 cache (0 where the driver does not say).
    pub fn l2_cache_bytes(&self) -> Result<usize, DriverError> {
        Ok(self.attribute(driver::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as usize)
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> Result<usize, DriverError> {
        let d = driver::initialized()?;
        let mut bytes = 0usize;
        // SAFETY: writes one size_t.
        unsafe { cu!(d, cuDeviceTotalMem_v2(&mut bytes, self.handle))? };
        Ok(bytes)
    }

    /// The launch and memory limits (several `cuDeviceGetAttribute`s).
    pub fn limits(&self) -> Result<DeviceLimits, DriverError> {
        let a = |attr: i32| self.attribute(attr).map(|v| v.max(0) as u32);
        Ok(DeviceLimits {
            max_threads_per_block: a(1)?,
            max_block_dim: (a(2)?, a(3)?, a(4)?),
            max_grid_dim: (a(5)?, a(6)?, a(7)?),
            max_shared_memory_per_block: a(8)?,
            max_shared_memory_per_block_optin: a(97)?,
            max_shared_memory_per_multiprocessor: a(81)?,
            total_constant_memory: a(9)?,
            warp_size: a(10)?,
            max_registers_per_block: a(12)?,
            max_threads_per_multiprocessor: a(39)?,
            multiprocessor_count: a(driver::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_every_query_is_a_clean_error() {
        // On a machine with a GPU this test checks the other side: ordinals
        // past the count are refused with NoDevice.
        match Device::count() {
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::DriverNotFound);
                assert!(Device::get(0).is_err());
                assert!(Device::all().is_err());
            }
            Ok(n) => {
                let err = Device::get(n).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::NoDevice);
                assert_eq!(Device::all().unwrap().len(), n);
            }
        }
    }
}
