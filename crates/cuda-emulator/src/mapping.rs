//! The few Linux memory-mapping calls the emulator makes, declared once:
//! fiber stacks (engine/fiber.rs) and device allocations (memory.rs) each
//! sit between inaccessible guard pages. The crate has no dependencies, so
//! it declares libc's functions and x86-64 Linux's constants itself.

use std::ffi::{c_int, c_void};

extern "C" {
    pub(crate) fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void;
    pub(crate) fn munmap(addr: *mut c_void, len: usize) -> c_int;
    pub(crate) fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
}
pub(crate) const PROT_NONE: c_int = 0;
pub(crate) const PROT_READ: c_int = 1;
pub(crate) const PROT_WRITE: c_int = 2;
pub(crate) const MAP_PRIVATE: c_int = 0x02;
pub(crate) const MAP_ANONYMOUS: c_int = 0x20;
pub(crate) const MAP_NORESERVE: c_int = 0x4000;
