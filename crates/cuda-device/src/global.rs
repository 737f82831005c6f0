//! Device globals: mutable state in GPU global memory that every kernel of a
//! module shares and the host reads and writes between launches (CUDA's
//! `__device__` variables).
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use cuda_device::{device_global, DeviceGlobal};
//!
//! #[device_global]
//! static HITS: AtomicU32 = AtomicU32::new(0);
//!
//! #[device_global]
//! static HISTOGRAM: [AtomicU32; 16] = [const { AtomicU32::new(0) }; 16];
//!
//! fn record(value: u32) {
//!     HITS.fetch_add(1, Ordering::Relaxed);
//!     HISTOGRAM[(value % 16) as usize].fetch_add(1, Ordering::Relaxed);
//! }
//! # let _: &DeviceGlobal<AtomicU32> = &HITS;
//! ```
//!
//! `#[device_global]` makes the static a [`DeviceGlobal<T>`] in the link
//! section `.oxide.global`; the device linker moves it to PTX `.global`
//! memory with its Rust initialiser (docs/ABI.md §6). The host reads it with
//! `KernelModule::read_global(&HITS)` and replaces it with
//! `KernelModule::write_global(&HITS, value)`.
//!
//! **Soundness.** Kernels get only a shared reference (`Deref`), so safe code
//! changes a device global only through types that are safe to share between
//! threads: atomics (`AtomicU32`, [`AtomicF32`](crate::atomic::AtomicF32), …)
//! and arrays of them. A plain value (`DeviceGlobal<u32>`) is read-only to
//! safe code; writing it takes `unsafe` ([`DeviceGlobal::as_mut_ptr`]),
//! where the writer promises that no other thread reads or writes it at the
//! same time. The host writes only between launches.

use core::cell::UnsafeCell;
use core::ops::Deref;

/// A value in GPU global memory, one copy per loaded module, shared by every
/// thread of every launch from it. Declared with `#[device_global]`.
///
/// The `UnsafeCell` keeps rustc from folding reads of the static into its
/// initialiser, which would hide writes by other kernels and by the host.
#[repr(transparent)]
pub struct DeviceGlobal<T>(UnsafeCell<T>);

// SAFETY: safe code only reaches the value through `&T` (which `T: Sync`
// makes safe to share); writes of a non-atomic value are `unsafe` and carry
// the no-concurrent-access promise; the host writes only while no kernel runs.
unsafe impl<T: Sync> Sync for DeviceGlobal<T> {}

impl<T> DeviceGlobal<T> {
    /// The value the module starts with, before any kernel or the host
    /// changes it.
    pub const fn new(value: T) -> Self {
        DeviceGlobal(UnsafeCell::new(value))
    }

    /// A pointer to the value, for a non-atomic write from a kernel.
    ///
    /// Writing through it is `unsafe`: no other thread may read or write the
    /// value at the same time (one thread writes it, a barrier or the end of
    /// the launch orders it before the reads).
    pub const fn as_mut_ptr(&self) -> *mut T {
        self.0.get()
    }
}

impl<T> Deref for DeviceGlobal<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: safe code writes the value only through `T`'s own interior
        // mutability; a write through `as_mut_ptr` promises no concurrent
        // reference.
        unsafe { &*self.0.get() }
    }
}

/// A type the host may copy in and out of a device global as bytes: it
/// holds no pointer or reference (a device address means nothing on the
/// host) and no drop glue, and every value device code can leave in it is a
/// value of the type.
///
/// # Safety
/// Implement it only for such types (integers, floats, atomics of them,
/// arrays and `#[repr(C)]` structs of them).
pub unsafe trait GlobalData: Sized + 'static {}

macro_rules! global_data {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: plain bits without pointers or drop glue.
        unsafe impl GlobalData for $t {}
    )* };
}
global_data!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool, char);
global_data!(
    core::sync::atomic::AtomicU8,
    core::sync::atomic::AtomicU16,
    core::sync::atomic::AtomicU32,
    core::sync::atomic::AtomicU64,
    core::sync::atomic::AtomicUsize,
    core::sync::atomic::AtomicI8,
    core::sync::atomic::AtomicI16,
    core::sync::atomic::AtomicI32,
    core::sync::atomic::AtomicI64,
    core::sync::atomic::AtomicIsize,
    core::sync::atomic::AtomicBool,
    crate::atomic::AtomicF32,
    crate::atomic::AtomicF64,
);
// SAFETY: an array of such values is such a value.
unsafe impl<T: GlobalData, const N: usize> GlobalData for [T; N] {}
