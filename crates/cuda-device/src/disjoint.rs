//! `DisjointSlice`: an output buffer every thread may write, one element each.

use crate::thread::{Dimensions, ThreadIndex};

/// A device buffer in which each thread owns the element at its [`ThreadIndex`].
///
/// This is the safe way for a kernel to write its output: `get_mut` only takes
/// a `ThreadIndex`, which only the hardware ids produce, and which the device
/// linker and cuda-host keep unique to its thread in every launch they let
/// run (the [`thread`](crate::thread) module docs say how), so no two threads
/// receive the same element. Its layout is `{ ptr, len }`
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

    /// The element owned by the thread at `idx`, or `None` past the end
    /// (and for a thread that has no element: outside the row or plane of
    /// [`index_2d`](crate::thread::index_2d) or
    /// [`index_3d`](crate::thread::index_3d)).
    ///
    /// Which kind of index reaches here (1-D, 2-D, 3-D) is what the kernel's
    /// launches are checked against; the location of the call is what the
    /// device linker names when the index's row lengths are not the same in
    /// every thread.
    #[inline(always)]
    #[track_caller]
    pub fn get_mut<D: Dimensions>(&mut self, idx: ThreadIndex<D>) -> Option<&mut T> {
        let i = idx.disjoint_index(core::panic::Location::caller());
        if i < self.len {
            // SAFETY: `i` is in bounds, and a `ThreadIndex` is unique to its
            // thread in every launch that is let run, so no other thread
            // holds a reference to this element.
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
