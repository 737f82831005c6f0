//! `DisjointSlice`: an output buffer every thread may write, one element each.

use crate::ThreadIndex;

/// A device buffer in which each thread owns the element at its [`ThreadIndex`].
///
/// This is the safe way for a kernel to write its output: `get_mut` only takes
/// a `ThreadIndex`, which only the hardware ids produce, so two threads of a 1-D
/// launch never receive the same element. Its layout is `{ ptr, len }`
/// (`docs/ABI.md` §2); the host builds it from a `DeviceBuffer`.
#[repr(C)]
pub struct DisjointSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> DisjointSlice<T> {
    /// Wraps device memory.
    ///
    /// # Safety
    /// `ptr` must point to `len` initialised `T`s in device memory that stay
    /// valid, and that nothing else writes, while the kernel runs.
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        DisjointSlice { ptr, len }
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element owned by the thread at `idx`, or `None` past the end.
    #[inline(always)]
    pub fn get_mut(&mut self, idx: ThreadIndex) -> Option<&mut T> {
        let i = idx.get();
        if i < self.len {
            // SAFETY: `i` is in bounds, and a `ThreadIndex` is unique to its
            // thread, so no other thread holds a reference to this element.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            None
        }
    }

    /// The element at `i` without a bounds or ownership check.
    ///
    /// # Safety
    /// `i < self.len()`, and no other thread may access element `i` while the
    /// returned reference lives.
    #[inline(always)]
    pub unsafe fn get_unchecked_mut(&mut self, i: usize) -> &mut T {
        &mut *self.ptr.add(i)
    }

    /// The raw device pointer.
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}
