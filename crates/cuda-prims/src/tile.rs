//! The device-side loads and stores of the device-wide kernels: whole
//! 16-byte vectors (`ld.global.v4.u32` / `v2.u64`) where a thread's items
//! are contiguous and aligned, one element at a time at the ragged end.

use crate::op::{Element, ReduceOp};

/// 16 bytes, aligned to 16: one vector load or store.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Vector16(pub [u32; 4]);

/// `A` aligned to 16 bytes, so that a load of it becomes vector loads.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Aligned16<A>(pub A);

/// Elements of `T` in one 16-byte vector.
#[inline(always)]
pub(crate) const fn lanes<T>() -> usize {
    16 / core::mem::size_of::<T>()
}

/// `acc` combined with the elements of `v`, in order.
#[inline(always)]
pub(crate) fn combine_vector<T: Element, Op: ReduceOp<T>>(acc: T, v: Vector16, op: Op) -> T {
    let elems = &v as *const Vector16 as *const T;
    let mut acc = acc;
    let mut j = 0;
    while j < lanes::<T>() {
        // SAFETY: an Element is 4 or 8 bytes, so `lanes` of them fill the
        // 16 bytes of `v`, and every bit pattern is a valid Element.
        acc = op.combine(acc, unsafe { elems.add(j).read() });
        j += 1;
    }
    acc
}

/// The `I` items at `src`.
///
/// # Safety
/// `src` points to `I` readable elements and is 16-byte aligned, and
/// `I · size_of::<T>()` is a multiple of 16.
#[inline(always)]
pub(crate) unsafe fn read_aligned<T: Copy, const I: usize>(src: *const T) -> [T; I] {
    (src as *const Aligned16<[T; I]>).read().0
}

/// Writes `items` at `dst`.
///
/// # Safety
/// As [`read_aligned`], for writing; no other thread accesses those elements.
#[inline(always)]
pub(crate) unsafe fn write_aligned<T: Copy, const I: usize>(dst: *mut T, items: [T; I]) {
    (dst as *mut Aligned16<[T; I]>).write(Aligned16(items))
}
