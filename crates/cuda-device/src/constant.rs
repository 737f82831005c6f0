//! Constant memory: read-only data every thread of a launch reads, cached and
//! broadcast by the hardware (CUDA's `__constant__`).
//!
//! ```
//! use cuda_device::constant;
//!
//! #[constant]
//! static COEFFS: [f32; 4] = [1.0, 0.5, 0.25, 0.125];
//!
//! fn horner(x: f32) -> f32 {
//!     COEFFS.iter().rev().fold(0.0, |acc, c| acc * x + c)
//! }
//! ```
//!
//! `#[constant]` makes the static a [`Constant<T>`] in the link section `.oxide.constant`; the
//! device linker moves it to PTX `.const` memory with its Rust initialiser
//! (docs/ABI.md §6). The host can replace the value before a launch with
//! `KernelModule::set_constant(&COEFFS, &new_value)`.

use core::cell::UnsafeCell;
use core::ops::Deref;

/// A value in constant memory. Kernels read it through `Deref`; only the host
/// changes it, between launches.
///
/// The `UnsafeCell` is what keeps rustc from folding reads of the static into
/// copies of its initialiser (it would, for a plain immutable static, in
/// optimised builds), which would hide the host's updates from the kernels.
#[repr(transparent)]
pub struct Constant<T>(UnsafeCell<T>);

// SAFETY: no Rust code writes the value: kernels only read it, and the host
// replaces the device copy through the driver while no kernel runs.
unsafe impl<T: Sync> Sync for Constant<T> {}

impl<T> Constant<T> {
    /// The value the kernels see until the host sets another.
    pub const fn new(value: T) -> Self {
        Constant(UnsafeCell::new(value))
    }
}

impl<T> Constant<T> {
    /// A pointer to the value, for the host to replace it between launches
    /// when kernels run in the CPU emulator (they read this static itself).
    #[doc(hidden)]
    pub const fn as_ptr(&self) -> *mut T {
        self.0.get()
    }
}

impl<T> Deref for Constant<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: nothing writes through the cell (see `Sync`).
        unsafe { &*self.0.get() }
    }
}
