//! The device's default memory pool, for stream-ordered allocation
//! (`cuMemAllocAsync`, `cuMemFreeAsync`, `cuMemPool*`).
//!
//! Streams run their work at submission here, so an allocation or a free
//! "ordered on a stream" happens at the call, and every allocation is the
//! fenced mapping of [`crate::memory`]. The pool only keeps the books a
//! program can ask for: the bytes in use and their high-water mark, and the
//! release threshold it sets. Nothing is cached: freed bytes go back to the
//! OS at once, so the reserved bytes are the used bytes and trimming has
//! nothing to release.

use std::collections::BTreeMap;
use std::sync::Mutex;

use cuda_driver_sys::{
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH,
};

/// What the pool knows.
struct Books {
    /// Bytes of each live pool allocation, by device address.
    live: BTreeMap<u64, usize>,
    used: u64,
    used_high: u64,
    release_threshold: u64,
}

static BOOKS: Mutex<Books> = Mutex::new(Books { live: BTreeMap::new(), used: 0, used_high: 0, release_threshold: 0 });

/// The pool's handle: any fixed non-null address (there is one device).
pub(crate) fn handle() -> *mut std::ffi::c_void {
    std::ptr::addr_of!(BOOKS).cast_mut().cast()
}

fn books() -> std::sync::MutexGuard<'static, Books> {
    BOOKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates `bytes` from the pool.
pub(crate) fn alloc(bytes: usize) -> Option<u64> {
    let p = crate::memory::alloc(bytes)? as u64;
    let mut b = books();
    b.live.insert(p, bytes);
    b.used += bytes as u64;
    b.used_high = b.used_high.max(b.used);
    Some(p)
}

/// Frees a pool allocation; false if `p` is not one.
pub(crate) fn free(p: u64) -> bool {
    {
        let mut b = books();
        let Some(bytes) = b.live.remove(&p) else { return false };
        b.used -= bytes as u64;
    }
    crate::memory::free(p)
}

/// A u64 attribute's value, or None for an attribute the pool does not have.
pub(crate) fn get(attribute: i32) -> Option<u64> {
    let b = books();
    match attribute {
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => Some(b.release_threshold),
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT | CU_MEMPOOL_ATTR_USED_MEM_CURRENT => Some(b.used),
        CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH | CU_MEMPOOL_ATTR_USED_MEM_HIGH => Some(b.used_high),
        _ => None,
    }
}

/// Sets a u64 attribute; false for one that cannot be set (the high-water
/// marks take only 0, which resets them to the current value).
pub(crate) fn set(attribute: i32, value: u64) -> bool {
    let mut b = books();
    match attribute {
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => b.release_threshold = value,
        CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH | CU_MEMPOOL_ATTR_USED_MEM_HIGH if value == 0 => b.used_high = b.used,
        _ => return false,
    }
    true
}
