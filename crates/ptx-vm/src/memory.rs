//! Address spaces: the VM's address map and the accessors of each space.
//!
//! It owns where things live:
//! - *global* and *const* addresses are host addresses. Device pointers the
//!   embedder hands a kernel are host pointers, and so are the module's own
//!   `.global`/`.const` variables. An access is allowed only inside a region
//!   the embedder declared valid for the launch, the module's variables or
//!   the launch's parameter buffer (read only); global accesses then go
//!   through host atomics, relaxed unless the instruction orders them, so
//!   that blocks running on other host threads see them without data races.
//! - *shared* addresses are offsets in the block's shared memory; an address
//!   of the `.shared::cluster` window carries the cluster rank of the block
//!   it belongs to above bit [`SHARED_RANK_SHIFT`] (rank + 1; 0 means "this
//!   block").
//! - *local* addresses are offsets in the thread's local memory (its stack of
//!   `__local_depot` frames).
//! - *generic* addresses: global ones as they are; shared and local ones in
//!   windows far above any user-space host address ([`SHARED_WINDOW`],
//!   [`LOCAL_WINDOW`]), mapped back to the block's shared memory and the
//!   thread's local memory.
//! - function pointers are tokens in [`FUNCTION_WINDOW`].
//!
//! Every access checks its natural alignment first, as the GPU does.

use std::ops::Range;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::program::{MemSpace, Order};

/// Generic addresses of shared memory: `SHARED_WINDOW + shared address`.
pub const SHARED_WINDOW: u64 = 0x2000_0000_0000_0000;
/// Generic addresses of local memory: `LOCAL_WINDOW + local address`.
pub const LOCAL_WINDOW: u64 = 0x3000_0000_0000_0000;
/// Function pointers: `FUNCTION_WINDOW + 16 * function index`.
pub const FUNCTION_WINDOW: u64 = 0x4000_0000_0000_0000;
/// The size of each window.
pub const WINDOW_SIZE: u64 = 1 << 40;
/// Shared addresses at or above `1 << SHARED_RANK_SHIFT` name a block of the
/// cluster: `((rank + 1) << SHARED_RANK_SHIFT) | offset`.
pub const SHARED_RANK_SHIFT: u32 = 24;

/// The offset bits of a `.shared::cluster` address.
pub const fn mask_rank() -> u64 {
    (1 << SHARED_RANK_SHIFT) - 1
}

/// The function pointer of function `index`.
pub fn function_pointer(index: u32) -> u64 {
    FUNCTION_WINDOW + 16 * index as u64
}

/// The function index of a function pointer, if it is one.
pub fn function_index(pointer: u64) -> Option<u32> {
    let rel = pointer.checked_sub(FUNCTION_WINDOW)?;
    if rel % 16 != 0 || rel >= WINDOW_SIZE {
        return None;
    }
    u32::try_from(rel / 16).ok()
}

/// Which space a generic address falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenericKind {
    Global,
    Shared(u64),
    Local(u64),
}

/// Classifies a generic address; shared and local ones come back as
/// addresses of their own space.
#[inline]
pub fn classify(addr: u64) -> GenericKind {
    if addr.wrapping_sub(SHARED_WINDOW) < WINDOW_SIZE {
        GenericKind::Shared(addr - SHARED_WINDOW)
    } else if addr.wrapping_sub(LOCAL_WINDOW) < WINDOW_SIZE {
        GenericKind::Local(addr - LOCAL_WINDOW)
    } else {
        GenericKind::Global
    }
}

/// The name of a space, for messages.
pub fn space_name(space: MemSpace) -> &'static str {
    match space {
        MemSpace::Generic => "generic",
        MemSpace::Global => "global",
        MemSpace::Shared => "shared",
        MemSpace::SharedCluster => "shared::cluster",
        MemSpace::Local => "local",
        MemSpace::Const => "const",
        MemSpace::KernelParam => "param",
    }
}

/// The host memory a launch may touch, sorted and merged.
#[derive(Clone, Debug, Default)]
pub struct Regions {
    writable: Vec<Range<u64>>,
    read_only: Vec<Range<u64>>,
}

fn normalise(v: impl IntoIterator<Item = Range<u64>>) -> Vec<Range<u64>> {
    let mut v: Vec<Range<u64>> = v.into_iter().collect();
    v.retain(|r| r.start < r.end);
    v.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

fn find(v: &[Range<u64>], addr: u64, size: u64) -> bool {
    let i = v.partition_point(|r| r.end <= addr);
    match v.get(i) {
        Some(r) => r.start <= addr && addr.checked_add(size).is_some_and(|end| end <= r.end),
        None => false,
    }
}

impl Regions {
    pub fn new(
        writable: impl IntoIterator<Item = Range<u64>>,
        read_only: impl IntoIterator<Item = Range<u64>>,
    ) -> Regions {
        Regions {
            writable: normalise(writable),
            read_only: normalise(read_only),
        }
    }

    /// Whether `size` bytes at `addr` may be read.
    #[inline]
    pub fn readable(&self, addr: u64, size: u64) -> bool {
        find(&self.writable, addr, size) || find(&self.read_only, addr, size)
    }

    /// Whether `size` bytes at `addr` may be written.
    #[inline]
    pub fn writable(&self, addr: u64, size: u64) -> bool {
        find(&self.writable, addr, size)
    }
}

fn load_order(order: Order) -> Ordering {
    match order {
        Order::Acquire | Order::AcqRel | Order::SeqCst => Ordering::Acquire,
        _ => Ordering::Relaxed,
    }
}

fn store_order(order: Order) -> Ordering {
    match order {
        Order::Release | Order::AcqRel | Order::SeqCst => Ordering::Release,
        _ => Ordering::Relaxed,
    }
}

/// Reads `size` (1, 2, 4 or 8) bytes of host memory.
///
/// # Safety
/// `addr` must be valid for reads of `size` bytes and aligned to `size`
/// (the caller checked it against the launch's regions and the alignment).
#[inline]
pub unsafe fn host_load(addr: u64, size: u8, order: Order) -> u64 {
    let o = load_order(order);
    // SAFETY: the caller guarantees validity and alignment; the access is
    // atomic, so concurrent blocks writing the same bytes are not a data race.
    unsafe {
        match size {
            1 => AtomicU8::from_ptr(addr as *mut u8).load(o) as u64,
            2 => AtomicU16::from_ptr(addr as *mut u16).load(o) as u64,
            4 => AtomicU32::from_ptr(addr as *mut u32).load(o) as u64,
            _ => AtomicU64::from_ptr(addr as *mut u64).load(o),
        }
    }
}

/// Writes `size` (1, 2, 4 or 8) bytes of host memory.
///
/// # Safety
/// As [`host_load`], for writes.
#[inline]
pub unsafe fn host_store(addr: u64, size: u8, value: u64, order: Order) {
    let o = store_order(order);
    // SAFETY: as in `host_load`.
    unsafe {
        match size {
            1 => AtomicU8::from_ptr(addr as *mut u8).store(value as u8, o),
            2 => AtomicU16::from_ptr(addr as *mut u16).store(value as u16, o),
            4 => AtomicU32::from_ptr(addr as *mut u32).store(value as u32, o),
            _ => AtomicU64::from_ptr(addr as *mut u64).store(value, o),
        }
    }
}

/// Compare-and-swap loop on host memory: applies `f` to the old value and
/// stores its result; returns the old value.
///
/// # Safety
/// As [`host_load`] and [`host_store`]; `size` is 2, 4 or 8.
#[inline]
pub unsafe fn host_rmw(addr: u64, size: u8, order: Order, f: impl Fn(u64) -> Option<u64>) -> u64 {
    let (success, failure) = match order {
        Order::Relaxed => (Ordering::Relaxed, Ordering::Relaxed),
        Order::Acquire => (Ordering::Acquire, Ordering::Acquire),
        Order::Release => (Ordering::Release, Ordering::Relaxed),
        Order::AcqRel => (Ordering::AcqRel, Ordering::Acquire),
        Order::SeqCst => (Ordering::SeqCst, Ordering::SeqCst),
    };
    // SAFETY: the caller guarantees validity and alignment of `addr`.
    unsafe {
        match size {
            2 => {
                let a = AtomicU16::from_ptr(addr as *mut u16);
                let mut old = a.load(failure);
                loop {
                    let Some(new) = f(old as u64) else {
                        return old as u64;
                    };
                    match a.compare_exchange_weak(old, new as u16, success, failure) {
                        Ok(_) => return old as u64,
                        Err(x) => old = x,
                    }
                }
            }
            4 => {
                let a = AtomicU32::from_ptr(addr as *mut u32);
                let mut old = a.load(failure);
                loop {
                    let Some(new) = f(old as u64) else {
                        return old as u64;
                    };
                    match a.compare_exchange_weak(old, new as u32, success, failure) {
                        Ok(_) => return old as u64,
                        Err(x) => old = x,
                    }
                }
            }
            _ => {
                let a = AtomicU64::from_ptr(addr as *mut u64);
                let mut old = a.load(failure);
                loop {
                    let Some(new) = f(old) else { return old };
                    match a.compare_exchange_weak(old, new, success, failure) {
                        Ok(_) => return old,
                        Err(x) => old = x,
                    }
                }
            }
        }
    }
}

/// Little-endian read of `size` (1, 2, 4 or 8) bytes at `off` of a byte
/// buffer (shared, local or parameter memory); `None` when out of bounds.
#[inline]
pub fn buf_load(buf: &[u8], off: u64, size: u8) -> Option<u64> {
    let off = usize::try_from(off).ok()?;
    let end = off.checked_add(size as usize)?;
    let bytes = buf.get(off..end)?;
    // Fixed-size copies: the compiler turns them into single loads.
    Some(match size {
        1 => bytes[0] as u64,
        2 => u16::from_le_bytes([bytes[0], bytes[1]]) as u64,
        4 => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64,
        _ => {
            let mut v = [0u8; 8];
            v[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
            u64::from_le_bytes(v)
        }
    })
}

/// Little-endian write of `size` (1, 2, 4 or 8) bytes; `false` when out of
/// bounds.
#[inline]
pub fn buf_store(buf: &mut [u8], off: u64, size: u8, value: u64) -> bool {
    let Ok(off) = usize::try_from(off) else {
        return false;
    };
    let Some(end) = off.checked_add(size as usize) else {
        return false;
    };
    let Some(bytes) = buf.get_mut(off..end) else {
        return false;
    };
    match size {
        1 => bytes[0] = value as u8,
        2 => bytes.copy_from_slice(&(value as u16).to_le_bytes()),
        4 => bytes.copy_from_slice(&(value as u32).to_le_bytes()),
        _ => {
            let n = bytes.len().min(8);
            bytes.copy_from_slice(&value.to_le_bytes()[..n]);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_windows_round_trip() {
        assert_eq!(classify(SHARED_WINDOW + 12), GenericKind::Shared(12));
        assert_eq!(classify(LOCAL_WINDOW), GenericKind::Local(0));
        assert_eq!(classify(0x7fff_0000_1000), GenericKind::Global);
        assert_eq!(function_index(function_pointer(7)), Some(7));
        assert_eq!(function_index(function_pointer(7) + 1), None);
        assert_eq!(function_index(12), None);
    }

    #[test]
    fn regions_merge_and_bound() {
        let r = Regions::new([10..20, 20..30, 50..60], std::iter::once(100..104));
        assert!(r.writable(10, 20));
        assert!(!r.writable(25, 10));
        assert!(r.readable(100, 4));
        assert!(!r.writable(100, 4));
        assert!(!r.readable(u64::MAX, 2));
    }

    #[test]
    fn buffers_are_bounds_checked() {
        let mut b = vec![0u8; 8];
        assert!(buf_store(&mut b, 4, 4, 0xAABBCCDD));
        assert_eq!(buf_load(&b, 4, 4), Some(0xAABBCCDD));
        assert_eq!(buf_load(&b, 6, 4), None);
        assert!(!buf_store(&mut b, u64::MAX, 1, 0));
    }
}
