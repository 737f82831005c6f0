//! How host values become kernel arguments.
//!
//! A kernel parameter of type `P` receives the bytes of a host value whose
//! type implements [`KernelArg<P>`]. The implementations below are the whole
//! list of what may cross, so a launch with a wrong argument type does not
//! compile:
//! - `&[T]` ← [`slice(&buffer)`](slice) of a `DeviceBuffer<T>`;
//! - `&mut [T]` and [`DisjointSlice<T>`] ← [`slice_mut(&mut buffer)`](slice_mut);
//! - any other `Copy` type (numbers, `#[derive(Clone, Copy)]` structs,
//!   closures whose captures are `Copy`) ← a value of that same type.

use cuda_core::DeviceBuffer;
use cuda_device::DisjointSlice;

/// A host value that can be passed for a kernel parameter of type `P`.
///
/// # Safety
/// `Repr` must have exactly the size, alignment and meaning on the device of
/// `P` (docs/ABI.md §2): the launch copies its bytes into the parameter.
pub unsafe trait KernelArg<P> {
    /// The value handed to the driver, laid out like `P`.
    type Repr;
    /// Builds the value.
    fn to_repr(&self) -> Self::Repr;
}

/// A `DeviceBuffer` passed read-only, for a `&[T]` parameter.
#[derive(Debug, Clone, Copy)]
pub struct SliceArg<'b, T: Copy> {
    buffer: &'b DeviceBuffer<T>,
}

/// A `DeviceBuffer` passed for writing, for a `DisjointSlice<T>` or `&mut [T]` parameter.
#[derive(Debug)]
pub struct SliceMutArg<'b, T: Copy> {
    buffer: &'b mut DeviceBuffer<T>,
}

/// Passes `buffer` for a `&[T]` kernel parameter.
pub fn slice<T: Copy>(buffer: &DeviceBuffer<T>) -> SliceArg<'_, T> {
    SliceArg { buffer }
}

/// Passes `buffer` for a `DisjointSlice<T>` (or `&mut [T]`) kernel parameter.
/// The `&mut` borrow ensures no other argument of the same launch aliases it.
pub fn slice_mut<T: Copy>(buffer: &mut DeviceBuffer<T>) -> SliceMutArg<'_, T> {
    SliceMutArg { buffer }
}

// SAFETY: `*const [T]` has the layout of `&[T]`, and the pointer is the
// buffer's device address with its length.
unsafe impl<'a, 'b, T: Copy> KernelArg<&'a [T]> for SliceArg<'b, T> {
    type Repr = *const [T];
    fn to_repr(&self) -> *const [T] {
        std::ptr::slice_from_raw_parts(self.buffer.device_ptr() as *const T, self.buffer.len())
    }
}

// SAFETY: as above, for `&mut [T]`; the `&mut` borrow of the buffer makes the
// kernel's unique access real.
unsafe impl<'a, 'b, T: Copy> KernelArg<&'a mut [T]> for SliceMutArg<'b, T> {
    type Repr = *mut [T];
    fn to_repr(&self) -> *mut [T] {
        std::ptr::slice_from_raw_parts_mut(self.buffer.device_ptr() as *mut T, self.buffer.len())
    }
}

// SAFETY: DisjointSlice is `#[repr(C)] { ptr, len }`, built here from the
// buffer's device address and length.
unsafe impl<'b, T: Copy> KernelArg<DisjointSlice<T>> for SliceMutArg<'b, T> {
    type Repr = DisjointSlice<T>;
    fn to_repr(&self) -> DisjointSlice<T> {
        // SAFETY: the buffer holds `len` initialised `T`s on the device and is
        // mutably borrowed for the launch.
        unsafe { DisjointSlice::from_raw_parts(self.buffer.device_ptr() as *mut T, self.buffer.len()) }
    }
}

// SAFETY: the same type on both sides; `Copy` values are plain bytes.
unsafe impl<T: Copy> KernelArg<T> for T {
    type Repr = T;
    fn to_repr(&self) -> T {
        *self
    }
}
