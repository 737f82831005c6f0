//! Managed (unified) memory on the emulated device: `cuMemAllocManaged`
//! memory is an ordinary fenced allocation (`memory.rs`), which the host
//! and the device reach at the same address, as they reach all memory here.
//! Migration has nothing to move: a prefetch checks its range and location
//! and does nothing else. The advice given with `cuMemAdvise` is remembered
//! per allocation so that `cuMemRangeGetAttribute` answers what was set
//! (read-mostly and the preferred location), as the driver does.
//!
//! The emulator has one device: a location names device 0 or the host;
//! anything else is `CUDA_ERROR_INVALID_DEVICE`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use cuda_driver_sys::{
    CUmemLocation, CUresult, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS,
    CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST,
};

/// `CU_DEVICE_CPU`: the host, as a preferred location's device ordinal.
const DEVICE_CPU: i32 = -1;
/// `CU_DEVICE_INVALID`: no preferred location.
const DEVICE_INVALID: i32 = -2;

/// What was advised for one managed allocation.
#[derive(Clone, Copy, Debug)]
struct Advice {
    bytes: usize,
    read_mostly: bool,
    /// A device ordinal, `DEVICE_CPU` or `DEVICE_INVALID`.
    preferred: i32,
}

/// Every live managed allocation, by start address.
static MANAGED: Mutex<BTreeMap<u64, Advice>> = Mutex::new(BTreeMap::new());

fn table() -> std::sync::MutexGuard<'static, BTreeMap<u64, Advice>> {
    MANAGED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates `bytes` of managed memory (zeroed, 256-aligned, fenced).
pub(crate) fn alloc(bytes: usize) -> Option<u64> {
    let p = crate::memory::alloc(bytes)? as u64;
    table().insert(p, Advice { bytes, read_mostly: false, preferred: DEVICE_INVALID });
    Some(p)
}

/// Forgets the managed allocation at `p` (its memory is freed by the caller).
pub(crate) fn forget(p: u64) {
    table().remove(&p);
}

/// The start of the managed allocation holding `[p, p + n)`, if one does.
fn holding(table: &BTreeMap<u64, Advice>, p: u64, n: usize) -> Option<u64> {
    let (&start, a) = table.range(..=p).next_back()?;
    let end = start + a.bytes as u64;
    (p.checked_add(n as u64)? <= end).then_some(start)
}

/// The device ordinal (or `DEVICE_CPU`) a location names, or the error.
fn ordinal(location: CUmemLocation) -> Result<i32, CUresult> {
    match location.type_ {
        CU_MEM_LOCATION_TYPE_DEVICE if location.id == 0 => Ok(0),
        CU_MEM_LOCATION_TYPE_DEVICE => Err(CUDA_ERROR_INVALID_DEVICE),
        CU_MEM_LOCATION_TYPE_HOST => Ok(DEVICE_CPU),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

/// `cuMemPrefetchAsync_v2`: the range must be managed memory and the
/// location the device or the host; nothing moves.
pub(crate) fn prefetch(p: u64, n: usize, location: CUmemLocation) -> CUresult {
    if let Err(code) = ordinal(location) {
        return code;
    }
    match holding(&table(), p, n) {
        Some(_) => CUDA_SUCCESS,
        None => CUDA_ERROR_INVALID_VALUE,
    }
}

/// `cuMemAdvise_v2` on the allocation holding `[p, p + n)` (advice is kept
/// per allocation, not per page).
pub(crate) fn advise(p: u64, n: usize, advice: i32, location: CUmemLocation) -> CUresult {
    let mut table = table();
    let Some(start) = holding(&table, p, n) else { return CUDA_ERROR_INVALID_VALUE };
    let entry = table.get_mut(&start).expect("found above");
    // The read-mostly and unset-preferred advice ignore the location.
    let at = || ordinal(location);
    match advice {
        1 => entry.read_mostly = true,
        2 => entry.read_mostly = false,
        3 => match at() {
            Ok(o) => entry.preferred = o,
            Err(code) => return code,
        },
        4 => entry.preferred = DEVICE_INVALID,
        5 | 6 => {
            if let Err(code) = at() {
                return code;
            }
        }
        _ => return CUDA_ERROR_INVALID_VALUE,
    }
    CUDA_SUCCESS
}

/// `cuMemRangeGetAttribute` for read-mostly (1) and the preferred location
/// (2), both ints; other attributes are `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn attribute(attribute: i32, p: u64, n: usize) -> Result<i32, CUresult> {
    let table = table();
    let start = holding(&table, p, n).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let a = table[&start];
    match attribute {
        1 => Ok(a.read_mostly as i32),
        2 => Ok(a.preferred),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: CUmemLocation = CUmemLocation { type_: CU_MEM_LOCATION_TYPE_HOST, id: 0 };
    const DEV0: CUmemLocation = CUmemLocation { type_: CU_MEM_LOCATION_TYPE_DEVICE, id: 0 };
    const DEV1: CUmemLocation = CUmemLocation { type_: CU_MEM_LOCATION_TYPE_DEVICE, id: 1 };

    #[test]
    fn prefetch_checks_range_and_location() {
        let p = alloc(1000).unwrap();
        assert_eq!(prefetch(p, 1000, DEV0), CUDA_SUCCESS);
        assert_eq!(prefetch(p + 8, 16, HOST), CUDA_SUCCESS);
        assert_eq!(prefetch(p, 1001, DEV0), CUDA_ERROR_INVALID_VALUE, "past the end");
        assert_eq!(prefetch(p, 8, DEV1), CUDA_ERROR_INVALID_DEVICE, "one device");
        let plain = crate::memory::alloc(64).unwrap() as u64;
        assert_eq!(prefetch(plain, 64, DEV0), CUDA_ERROR_INVALID_VALUE, "not managed");
        forget(p);
        assert!(crate::memory::free(p) && crate::memory::free(plain));
    }

    #[test]
    fn advice_is_remembered() {
        let p = alloc(4096).unwrap();
        assert_eq!(attribute(1, p, 4096), Ok(0));
        assert_eq!(attribute(2, p, 4096), Ok(DEVICE_INVALID));
        assert_eq!(advise(p, 4096, 1, HOST), CUDA_SUCCESS);
        assert_eq!(advise(p, 4096, 3, HOST), CUDA_SUCCESS);
        assert_eq!((attribute(1, p, 4096), attribute(2, p, 4096)), (Ok(1), Ok(DEVICE_CPU)));
        assert_eq!(advise(p, 4096, 3, DEV0), CUDA_SUCCESS);
        assert_eq!(attribute(2, p, 4096), Ok(0));
        assert_eq!(advise(p, 4096, 5, DEV1), CUDA_ERROR_INVALID_DEVICE);
        assert_eq!(advise(p, 4096, 9, DEV0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(advise(p, 4096, 2, DEV0), CUDA_SUCCESS);
        assert_eq!(advise(p, 4096, 4, DEV0), CUDA_SUCCESS);
        assert_eq!((attribute(1, p, 4096), attribute(2, p, 4096)), (Ok(0), Ok(DEVICE_INVALID)));
        forget(p);
        assert!(crate::memory::free(p));
    }
}
