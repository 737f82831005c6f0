//! Device memory on the host, fenced: every allocation of the emulated
//! driver (`cuMemAlloc`, `cuMemHostAlloc`) is a mapping of its own, its
//! bytes ending where an inaccessible guard page begins, with another guard
//! page before it.
//!
//! On a GPU an access outside every allocation fails the launch with
//! `CUDA_ERROR_ILLEGAL_ADDRESS`. Were device memory ordinary heap memory, a
//! host-code kernel running off the end of a buffer through a raw pointer
//! would overwrite the host heap's own bookkeeping (`munmap_chunk():
//! invalid pointer` at some later `free`) or a neighbouring buffer. Here it
//! touches a guard page instead: the access does not happen, the processor
//! faults, and the engine turns the fault into a failed launch naming the
//! address ([`describe_guard_fault`], called from the engine's `SIGSEGV`
//! handler). The device-code executor checks every global access against
//! [`allocations`] itself, to the byte.
//!
//! The bytes end where the trailing guard page begins, rounded up to 256
//! (the alignment `cuMemAlloc` promises): an overrun past that rounding
//! faults at its first byte; an underrun faults once it crosses the slack
//! of the first page. An access that jumps over a guard page (a wild
//! pointer) is not caught in host code.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use crate::mapping::{mmap, mprotect, munmap, MAP_ANONYMOUS, MAP_NORESERVE, MAP_PRIVATE, PROT_NONE, PROT_READ, PROT_WRITE};

/// The page size of x86-64 Linux, the emulator's one host.
const PAGE: usize = 4096;
/// The alignment `cuMemAlloc` promises.
const ALIGN: usize = 256;

/// One live allocation: its bytes and the mapping around them.
#[derive(Clone, Copy, Debug)]
struct Allocation {
    bytes: usize,
    mapping: usize,
    mapping_len: usize,
}

/// Every live allocation, by the address of its first byte.
static ALLOCATIONS: Mutex<BTreeMap<u64, Allocation>> = Mutex::new(BTreeMap::new());

/// Allocates `bytes` zeroed bytes, 256-aligned, between guard pages.
pub(crate) fn alloc(bytes: usize) -> Option<*mut u8> {
    let rounded = bytes.max(1).checked_next_multiple_of(ALIGN)?;
    let data_pages = rounded.checked_next_multiple_of(PAGE)?;
    let mapping_len = data_pages.checked_add(2 * PAGE)?;
    // SAFETY: an anonymous private mapping; no existing memory is touched.
    let mapping = unsafe {
        mmap(std::ptr::null_mut(), mapping_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    };
    if mapping as isize == -1 {
        return None;
    }
    let mapping = mapping as usize;
    // SAFETY: the pages between the two guard pages of the mapping just made.
    if unsafe { mprotect((mapping + PAGE) as *mut c_void, data_pages, PROT_READ | PROT_WRITE) } != 0 {
        // SAFETY: the mapping just made, not handed out.
        unsafe { munmap(mapping as *mut c_void, mapping_len) };
        return None;
    }
    let start = mapping + PAGE + data_pages - rounded;
    let allocation = Allocation { bytes, mapping, mapping_len };
    ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner()).insert(start as u64, allocation);
    Some(start as *mut u8)
}

/// Frees the allocation starting at `p`; false if there is none.
pub(crate) fn free(p: u64) -> bool {
    let removed = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner()).remove(&p);
    let Some(a) = removed else { return false };
    // SAFETY: the mapping made by `alloc` for this allocation, unmapped once
    // (it is no longer in the table).
    unsafe { munmap(a.mapping as *mut c_void, a.mapping_len) };
    true
}

/// Every live allocation as a host address range: the memory a kernel run
/// as device code may access.
pub(crate) fn allocations() -> Vec<std::ops::Range<u64>> {
    let all = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().map(|(&start, a)| start..start + a.bytes as u64).collect()
}

/// If `address` lies in the guard pages or the slack around a live
/// allocation, what the access missed: "N bytes past the end of the
/// allocation of M bytes at 0x…" (an illegal address on a GPU); else
/// `None`.
///
/// Called from a signal handler on the thread whose access faulted, which
/// runs kernel code and so holds no lock of this module; another thread
/// may, so the table is only tried, for a while.
pub(crate) fn describe_guard_fault(address: u64) -> Option<String> {
    let table = (0..1_000_000).find_map(|_| match ALLOCATIONS.try_lock() {
        Ok(t) => Some(t),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => {
            std::hint::spin_loop();
            None
        }
    })?;
    let (start, a) = table
        .iter()
        .find(|(_, a)| (a.mapping as u64..(a.mapping + a.mapping_len) as u64).contains(&address))?;
    let end = start + a.bytes as u64;
    let what = if address >= end {
        format!("{} bytes past the end", address - end)
    } else if address < *start {
        format!("{} bytes before the start", start - address)
    } else {
        return None; // inside the allocation: not a guard fault
    };
    Some(format!("illegal address {address:#x}: {what} of the device allocation of {} bytes at {start:#x}", a.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_zeroed_aligned_fenced_and_freed() {
        let p = alloc(1000).unwrap();
        assert_eq!(p as usize % ALIGN, 0);
        // SAFETY: 1000 bytes of the allocation just made.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p, 1000) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes.fill(7);
        let start = p as u64;
        assert!(allocations().contains(&(start..start + 1000)));
        assert_eq!(describe_guard_fault(start + 500), None, "inside");
        let past = describe_guard_fault(start + 1024).unwrap();
        assert_eq!(past, format!("illegal address {:#x}: 24 bytes past the end of the device allocation of 1000 bytes at {start:#x}", start + 1024));
        assert!(describe_guard_fault(start - 8).unwrap().contains("8 bytes before the start"));
        assert!(free(start));
        assert!(!free(start), "freed once");
        assert_eq!(describe_guard_fault(start + 1024), None, "no longer fenced");
        let empty = alloc(0).unwrap();
        assert!(free(empty as u64));
    }
}
