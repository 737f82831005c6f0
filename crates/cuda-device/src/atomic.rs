//! Atomics with a scope: which threads an atomic operation (and the ordering
//! it carries) must be coherent with.
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use cuda_device::atomic::{AtomicF32, Scope, ScopedAtomic};
//!
//! /// Counts into a per-block counter: only this block's threads touch it.
//! fn count(hits: &AtomicU32) -> u32 {
//!     hits.fetch_add_scoped(1, Scope::Block, Ordering::Relaxed)
//! }
//!
//! /// Adds into a float in device memory (`from_ptr` on a buffer element).
//! fn accumulate(total: &AtomicF32, x: f32) {
//!     total.fetch_add_scoped(x, Scope::Device, Ordering::Relaxed);
//! }
//! ```
//!
//! | [`Scope`] | PTX | coherent with | use for |
//! | --- | --- | --- | --- |
//! | `Block` | `.cta` | the threads of this block | shared memory, per-block counters |
//! | `Cluster` | `.cluster` (sm_90; `.gpu` before) | the blocks of this cluster | distributed shared memory |
//! | `Device` | `.gpu` | every thread of this GPU | global memory shared by the grid |
//! | `System` | `.sys` | the host and other GPUs too | host-mapped (pinned) memory, peer memory |
//!
//! A narrower scope is faster; an atomic at a scope that does not include
//! every thread that touches the location is a data race (CUDA's
//! `atomicAdd_block` / `atomicAdd` / `atomicAdd_system`, and
//! `cuda::atomic_ref<T, thread_scope_…>`).
//!
//! The ordering is honoured in every case: `Relaxed`, `Acquire`, `Release`
//! and `AcqRel` become the PTX `.relaxed`/`.acquire`/`.release`/`.acq_rel`
//! semantics, `SeqCst` a `fence.sc` at the scope followed by the operation.
//!
//! **`core::sync::atomic` on the GPU.** `AtomicU32::fetch_add` and friends
//! work in kernels too: rustc gives them LLVM's system scope, so they are
//! `.sys` atomics, with their ordering (the device linker's LowerAtomics pass
//! puts back the ordering and scope that LLVM's NVPTX backend drops from
//! read-modify-writes). Use [`ScopedAtomic`] for the narrower (faster) scopes.
//!
//! **Floats.** [`AtomicF32`] and [`AtomicF64`] add in one instruction
//! (`atom.add.f32` flushes subnormal inputs and results to zero, as CUDA's
//! `atomicAdd(float*)` does); min/max are compare-exchange loops with the
//! semantics of `f32::min`/`f32::max` (a NaN operand is ignored).
//! `compare_exchange` compares bit patterns.
//!
//! How it reaches the hardware: every operation is one intrinsic stub taking
//! the operation, scope and ordering as integers (`Stubs.def`, numbered by
//! `Atomics.def`); the device linker turns each call into the LLVM atomic
//! with that syncscope and, after inlining made the arguments constants, into
//! one PTX instruction. On the host these functions abort like every
//! intrinsic.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::stubs;

/// Which threads an atomic operation is coherent with (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Scope {
    /// The threads of the calling thread's block (`.cta`).
    Block = code::SCOPE_BLOCK,
    /// Every thread of the GPU (`.gpu`).
    Device = code::SCOPE_DEVICE,
    /// The GPU, other GPUs and the host (`.sys`): what `core::sync::atomic` gets.
    System = code::SCOPE_SYSTEM,
    /// The blocks of the calling thread's cluster (`.cluster`, sm_90); on
    /// older GPUs, which have no clusters, the same as `Device`.
    Cluster = code::SCOPE_CLUSTER,
}

/// The numbers the atomic stubs take for their operation, scope and ordering,
/// generated from the device linker's table `compiler/include/oxide/Atomics.def`
/// (which LowerAtomicStubs.cpp reads too). Public for the CPU emulator, which
/// decodes them; not an API for kernels.
#[doc(hidden)]
pub mod code {
    include!(concat!(env!("OUT_DIR"), "/atomic_codes.rs"));
}

#[inline(always)]
fn ordering(order: Ordering) -> u32 {
    match order {
        Ordering::Relaxed => code::ORDERING_RELAXED,
        Ordering::Release => code::ORDERING_RELEASE,
        Ordering::Acquire => code::ORDERING_ACQUIRE,
        Ordering::AcqRel => code::ORDERING_ACQ_REL,
        _ => code::ORDERING_SEQ_CST, // SeqCst, and whatever stronger ordering core may add
    }
}

#[inline(always)]
fn scope(scope: Scope) -> u32 {
    scope as u32
}

// The same panics as core::sync::atomic for orderings an operation cannot have.
#[inline(always)]
fn check_load(order: Ordering) {
    match order {
        Ordering::Release => panic!("there is no such thing as a release load"),
        Ordering::AcqRel => panic!("there is no such thing as an acquire-release load"),
        _ => {}
    }
}
#[inline(always)]
fn check_store(order: Ordering) {
    match order {
        Ordering::Acquire => panic!("there is no such thing as an acquire store"),
        Ordering::AcqRel => panic!("there is no such thing as an acquire-release store"),
        _ => {}
    }
}
#[inline(always)]
fn check_failure(order: Ordering) {
    match order {
        Ordering::Release => panic!("there is no such thing as a release failure ordering"),
        Ordering::AcqRel => panic!("there is no such thing as an acquire-release failure ordering"),
        _ => {}
    }
}

/// A raw value of 32 or 64 bits and its stubs.
trait Bits: Copy + Eq {
    unsafe fn rmw(ptr: *mut Self, value: Self, op: u32, scope: u32, order: u32) -> Self;
    unsafe fn cas(ptr: *mut Self, expected: Self, new: Self, scope: u32, success: u32, failure: u32) -> Self;
    unsafe fn load(ptr: *const Self, scope: u32, order: u32) -> Self;
    unsafe fn store(ptr: *mut Self, value: Self, scope: u32, order: u32);
}
macro_rules! bits {
    ($t:ty, $rmw:ident, $cas:ident, $load:ident, $store:ident) => {
        impl Bits for $t {
            #[inline(always)]
            unsafe fn rmw(ptr: *mut Self, value: Self, op: u32, scope: u32, order: u32) -> Self {
                stubs::$rmw(ptr, value, op, scope, order)
            }
            #[inline(always)]
            unsafe fn cas(ptr: *mut Self, expected: Self, new: Self, scope: u32, success: u32, failure: u32) -> Self {
                stubs::$cas(ptr, expected, new, scope, success, failure)
            }
            #[inline(always)]
            unsafe fn load(ptr: *const Self, scope: u32, order: u32) -> Self {
                stubs::$load(ptr, scope, order)
            }
            #[inline(always)]
            unsafe fn store(ptr: *mut Self, value: Self, scope: u32, order: u32) {
                stubs::$store(ptr, value, scope, order)
            }
        }
    };
}
bits!(u32, __oxide_stub_atomic_rmw_u32, __oxide_stub_atomic_cas_u32, __oxide_stub_atomic_load_u32, __oxide_stub_atomic_store_u32);
bits!(u64, __oxide_stub_atomic_rmw_u64, __oxide_stub_atomic_cas_u64, __oxide_stub_atomic_load_u64, __oxide_stub_atomic_store_u64);

mod sealed {
    pub trait Sealed {}
}

/// Scoped operations on `core::sync::atomic`'s `AtomicU32`, `AtomicI32`,
/// `AtomicU64` and `AtomicI64`: the methods of core with a [`Scope`] before
/// the ordering. Each returns the previous value, like core's.
///
/// The orderings a method cannot have panic, as in core (`load` with
/// `Release`, `store` with `Acquire`, a `Release` failure ordering).
pub trait ScopedAtomic: sealed::Sealed {
    /// The integer type (`u32` for `AtomicU32`).
    type Value: Copy;
    /// Loads the value.
    fn load_scoped(&self, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores `value`.
    fn store_scoped(&self, value: Self::Value, scope: Scope, order: Ordering);
    /// Stores `value`, returning the previous value (`atom.exch`).
    fn swap_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores `new` if the value is `current`: `Ok(previous)` if it was
    /// stored, `Err(previous)` if not (`atom.cas`; never fails spuriously).
    fn compare_exchange_scoped(
        &self,
        current: Self::Value,
        new: Self::Value,
        scope: Scope,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Value, Self::Value>;
    /// Adds `value` (wrapping).
    fn fetch_add_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Subtracts `value` (wrapping).
    fn fetch_sub_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores the minimum of the value and `value` (signed for `AtomicI32`/`AtomicI64`).
    fn fetch_min_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores the maximum of the value and `value` (signed for `AtomicI32`/`AtomicI64`).
    fn fetch_max_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Bitwise and.
    fn fetch_and_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Bitwise or.
    fn fetch_or_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Bitwise xor.
    fn fetch_xor_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores `!(value & operand)` (a compare-exchange loop: PTX has no nand).
    fn fetch_nand_scoped(&self, value: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
}

/// Scoped wrapping increment and decrement of unsigned atomics (CUDA's
/// `atomicInc` / `atomicDec`): one instruction on `AtomicU32`, a
/// compare-exchange loop on `AtomicU64`.
pub trait ScopedAtomicWrap: ScopedAtomic {
    /// Stores `if old >= limit { 0 } else { old + 1 }`; returns `old`.
    fn fetch_inc_wrap_scoped(&self, limit: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
    /// Stores `if old == 0 || old > limit { limit } else { old - 1 }`; returns `old`.
    fn fetch_dec_wrap_scoped(&self, limit: Self::Value, scope: Scope, order: Ordering) -> Self::Value;
}

macro_rules! scoped_int {
    ($atomic:ty, $t:ty, $bits:ty, $min:expr, $max:expr) => {
        impl sealed::Sealed for $atomic {}
        impl ScopedAtomic for $atomic {
            type Value = $t;
            #[inline(always)]
            fn load_scoped(&self, s: Scope, order: Ordering) -> $t {
                check_load(order);
                // SAFETY: the pointer of a live atomic of this width.
                unsafe { <$bits>::load(self.as_ptr() as *const $bits, scope(s), ordering(order)) as $t }
            }
            #[inline(always)]
            fn store_scoped(&self, value: $t, s: Scope, order: Ordering) {
                check_store(order);
                // SAFETY: as above.
                unsafe { <$bits>::store(self.as_ptr() as *mut $bits, value as $bits, scope(s), ordering(order)) }
            }
            #[inline(always)]
            fn swap_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_XCHG, value, s, order)
            }
            #[inline(always)]
            fn compare_exchange_scoped(
                &self,
                current: $t,
                new: $t,
                s: Scope,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                check_failure(failure);
                // SAFETY: as above.
                let old = unsafe {
                    <$bits>::cas(
                        self.as_ptr() as *mut $bits,
                        current as $bits,
                        new as $bits,
                        scope(s),
                        ordering(success),
                        ordering(failure),
                    ) as $t
                };
                if old == current { Ok(old) } else { Err(old) }
            }
            #[inline(always)]
            fn fetch_add_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_ADD, value, s, order)
            }
            #[inline(always)]
            fn fetch_sub_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_SUB, value, s, order)
            }
            #[inline(always)]
            fn fetch_min_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped($min, value, s, order)
            }
            #[inline(always)]
            fn fetch_max_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped($max, value, s, order)
            }
            #[inline(always)]
            fn fetch_and_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_AND, value, s, order)
            }
            #[inline(always)]
            fn fetch_or_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_OR, value, s, order)
            }
            #[inline(always)]
            fn fetch_xor_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_XOR, value, s, order)
            }
            #[inline(always)]
            fn fetch_nand_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_NAND, value, s, order)
            }
        }
        impl RmwScoped for $atomic {
            type Value = $t;
            #[inline(always)]
            fn rmw_scoped(&self, op: u32, value: $t, s: Scope, order: Ordering) -> $t {
                // SAFETY: the pointer of a live atomic of this width.
                unsafe { <$bits>::rmw(self.as_ptr() as *mut $bits, value as $bits, op, scope(s), ordering(order)) as $t }
            }
        }
    };
}

/// One read-modify-write stub call (the shared body of the methods above).
trait RmwScoped {
    type Value;
    fn rmw_scoped(&self, op: u32, value: Self::Value, s: Scope, order: Ordering) -> Self::Value;
}

scoped_int!(AtomicU32, u32, u32, code::OP_UMIN, code::OP_UMAX);
scoped_int!(AtomicI32, i32, u32, code::OP_MIN, code::OP_MAX);
scoped_int!(AtomicU64, u64, u64, code::OP_UMIN, code::OP_UMAX);
scoped_int!(AtomicI64, i64, u64, code::OP_MIN, code::OP_MAX);

macro_rules! scoped_wrap {
    ($atomic:ty, $t:ty) => {
        impl ScopedAtomicWrap for $atomic {
            #[inline(always)]
            fn fetch_inc_wrap_scoped(&self, limit: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_INC_WRAP, limit, s, order)
            }
            #[inline(always)]
            fn fetch_dec_wrap_scoped(&self, limit: $t, s: Scope, order: Ordering) -> $t {
                self.rmw_scoped(code::OP_DEC_WRAP, limit, s, order)
            }
        }
    };
}
scoped_wrap!(AtomicU32, u32);
scoped_wrap!(AtomicU64, u64);

macro_rules! atomic_float {
    ($(#[$doc:meta])* $name:ident, $t:ty, $bits:ty, $align:literal, $rmw:ident) => {
        $(#[$doc])*
        #[repr(C, align($align))]
        pub struct $name {
            value: UnsafeCell<$t>,
        }

        // SAFETY: every access through a shared reference is atomic.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `value`.
            pub const fn new(value: $t) -> Self {
                Self { value: UnsafeCell::new(value) }
            }

            /// The atomic at `ptr`: an element of a device buffer or of a
            /// shared array, for example.
            ///
            /// # Safety
            /// `ptr` is valid for reads and writes for `'a`, aligned to
            #[doc = concat!(stringify!($align), " bytes, and every access to it during `'a` is atomic.")]
            #[inline(always)]
            pub const unsafe fn from_ptr<'a>(ptr: *mut $t) -> &'a Self {
                // SAFETY: same layout as the value; the caller vouches for the rest.
                unsafe { &*(ptr as *const Self) }
            }

            /// A pointer to the value.
            #[inline(always)]
            pub const fn as_ptr(&self) -> *mut $t {
                self.value.get()
            }

            /// The value, through exclusive access (no atomic needed).
            #[inline(always)]
            pub fn get_mut(&mut self) -> &mut $t {
                self.value.get_mut()
            }

            /// The value, consuming the atomic.
            #[inline(always)]
            pub fn into_inner(self) -> $t {
                self.value.into_inner()
            }

            #[inline(always)]
            fn bits(&self) -> *mut $bits {
                self.as_ptr() as *mut $bits
            }

            #[inline(always)]
            fn rmw(&self, op: u32, value: $t, s: Scope, order: Ordering) -> $t {
                // The pointer of a live atomic (the stub is a safe fn).
                stubs::$rmw(self.as_ptr(), value, op, scope(s), ordering(order))
            }

            /// Loads the value.
            #[inline(always)]
            pub fn load_scoped(&self, s: Scope, order: Ordering) -> $t {
                check_load(order);
                // SAFETY: the pointer of a live atomic.
                <$t>::from_bits(unsafe { <$bits>::load(self.bits(), scope(s), ordering(order)) })
            }

            /// Stores `value`.
            #[inline(always)]
            pub fn store_scoped(&self, value: $t, s: Scope, order: Ordering) {
                check_store(order);
                // SAFETY: the pointer of a live atomic.
                unsafe { <$bits>::store(self.bits(), value.to_bits(), scope(s), ordering(order)) }
            }

            /// Stores `value`, returning the previous value.
            #[inline(always)]
            pub fn swap_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                // SAFETY: the pointer of a live atomic.
                <$t>::from_bits(unsafe {
                    <$bits>::rmw(self.bits(), value.to_bits(), code::OP_XCHG, scope(s), ordering(order))
                })
            }

            /// Stores `new` if the value has the bits of `current`:
            /// `Ok(previous)` if it was stored, `Err(previous)` if not.
            #[inline(always)]
            pub fn compare_exchange_scoped(
                &self,
                current: $t,
                new: $t,
                s: Scope,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                check_failure(failure);
                // SAFETY: the pointer of a live atomic.
                let old = unsafe {
                    <$bits>::cas(
                        self.bits(),
                        current.to_bits(),
                        new.to_bits(),
                        scope(s),
                        ordering(success),
                        ordering(failure),
                    )
                };
                if old == current.to_bits() { Ok(<$t>::from_bits(old)) } else { Err(<$t>::from_bits(old)) }
            }

            /// Adds `value`, returning the previous value (one `atom.add`).
            #[inline(always)]
            pub fn fetch_add_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw(code::OP_FADD, value, s, order)
            }

            /// Subtracts `value` (adds its negation), returning the previous value.
            #[inline(always)]
            pub fn fetch_sub_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw(code::OP_FSUB, value, s, order)
            }

            /// Stores the minimum (`min`: a NaN operand is ignored), returning
            /// the previous value.
            #[inline(always)]
            pub fn fetch_min_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw(code::OP_FMIN, value, s, order)
            }

            /// Stores the maximum (`max`: a NaN operand is ignored), returning
            /// the previous value.
            #[inline(always)]
            pub fn fetch_max_scoped(&self, value: $t, s: Scope, order: Ordering) -> $t {
                self.rmw(code::OP_FMAX, value, s, order)
            }

            /// [`load_scoped`](Self::load_scoped) at system scope, like core's atomics.
            #[inline(always)]
            pub fn load(&self, order: Ordering) -> $t {
                self.load_scoped(Scope::System, order)
            }

            /// [`store_scoped`](Self::store_scoped) at system scope.
            #[inline(always)]
            pub fn store(&self, value: $t, order: Ordering) {
                self.store_scoped(value, Scope::System, order)
            }

            /// [`swap_scoped`](Self::swap_scoped) at system scope.
            #[inline(always)]
            pub fn swap(&self, value: $t, order: Ordering) -> $t {
                self.swap_scoped(value, Scope::System, order)
            }

            /// [`compare_exchange_scoped`](Self::compare_exchange_scoped) at system scope.
            #[inline(always)]
            pub fn compare_exchange(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                self.compare_exchange_scoped(current, new, Scope::System, success, failure)
            }

            /// [`fetch_add_scoped`](Self::fetch_add_scoped) at system scope.
            #[inline(always)]
            pub fn fetch_add(&self, value: $t, order: Ordering) -> $t {
                self.fetch_add_scoped(value, Scope::System, order)
            }

            /// [`fetch_sub_scoped`](Self::fetch_sub_scoped) at system scope.
            #[inline(always)]
            pub fn fetch_sub(&self, value: $t, order: Ordering) -> $t {
                self.fetch_sub_scoped(value, Scope::System, order)
            }

            /// [`fetch_min_scoped`](Self::fetch_min_scoped) at system scope.
            #[inline(always)]
            pub fn fetch_min(&self, value: $t, order: Ordering) -> $t {
                self.fetch_min_scoped(value, Scope::System, order)
            }

            /// [`fetch_max_scoped`](Self::fetch_max_scoped) at system scope.
            #[inline(always)]
            pub fn fetch_max(&self, value: $t, order: Ordering) -> $t {
                self.fetch_max_scoped(value, Scope::System, order)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new(0.0)
            }
        }

        impl From<$t> for $name {
            fn from(value: $t) -> Self {
                Self::new(value)
            }
        }

        impl core::fmt::Debug for $name {
            /// Prints the address only: reading the value needs the GPU.
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.as_ptr()).finish()
            }
        }
    };
}

atomic_float!(
    /// An `f32` that threads update atomically: the layout of `f32`.
    AtomicF32, f32, u32, 4, __oxide_stub_atomic_rmw_f32
);
atomic_float!(
    /// An `f64` that threads update atomically: the layout of `f64`.
    AtomicF64, f64, u64, 8, __oxide_stub_atomic_rmw_f64
);

/// An atomic type with the layout of its value type, every access to which
/// through `&Self` is atomic: what a kernel parameter `&[A]` may be made of
/// from a device buffer of `A::Value` (cuda-core's
/// `DeviceBuffer::as_atomic`), so that many threads update one buffer
/// without a data race.
///
/// # Safety
/// `Self` has the size and alignment of `Value`, every bit pattern of
/// `Value` is a valid `Self` holding that value, and `Self` changes only
/// through atomic operations while shared.
pub unsafe trait AtomicCell: Sync {
    /// The plain type in memory (`u32` for `AtomicU32`).
    type Value: Copy;
}

macro_rules! atomic_cell {
    ($($atomic:ty => $t:ty),*) => {$(
        // SAFETY: core's and this module's atomics are documented to have the
        // layout of their value and to be changed only atomically.
        unsafe impl AtomicCell for $atomic {
            type Value = $t;
        }
    )*};
}
atomic_cell!(AtomicU32 => u32, AtomicI32 => i32, AtomicU64 => u64, AtomicI64 => i64, AtomicF32 => f32, AtomicF64 => f64);

/// The scopes as types, for [`Scoped`]: the scope an atomic uses becomes part
/// of its type, like CUDA's `cuda::atomic<T, cuda::thread_scope_block>`.
pub mod scope {
    /// A scope as a type (sealed: the four below).
    pub trait ScopeKind: super::sealed::Sealed + Copy + Send + Sync + 'static {
        /// The scope every operation of a [`Scoped`](super::Scoped) atomic uses.
        const SCOPE: super::Scope;
    }
    macro_rules! kinds {
        ($($(#[$doc:meta])* $name:ident;)*) => {$(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
            pub struct $name;
            impl super::sealed::Sealed for $name {}
            impl ScopeKind for $name {
                const SCOPE: super::Scope = super::Scope::$name;
            }
        )*};
    }
    kinds! {
        /// [`Scope::Block`](super::Scope::Block) (`.cta`).
        Block;
        /// [`Scope::Cluster`](super::Scope::Cluster) (`.cluster`, sm_90).
        Cluster;
        /// [`Scope::Device`](super::Scope::Device) (`.gpu`).
        Device;
        /// [`Scope::System`](super::Scope::System) (`.sys`).
        System;
    }
}
use scope::ScopeKind;

/// The atomic `A` whose every operation has the scope `S`: a value (a shared
/// or global static, an element of a kernel's `&[Scoped<A, S>]`) whose
/// methods are core's (`load`, `fetch_add`, …, with an ordering) and carry the
/// scope of its type, so code handed one cannot pick a too-narrow scope.
/// The layout of `A` (and of its value).
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
/// use cuda_device::atomic::{scope, Scoped};
///
/// /// A histogram that every block of the grid adds into (a kernel takes it
/// /// as `bins: &[Scoped<AtomicU32, scope::Device>]`).
/// fn count(bins: &[Scoped<AtomicU32, scope::Device>], value: u32) {
///     bins[value as usize % bins.len()].fetch_add(1, Relaxed);
/// }
///
/// /// A value of its own (`new` needs the type named, one per atomic type;
/// /// `Scoped::from_atomic(AtomicU32::new(0))` infers it).
/// static LIMIT: Scoped<AtomicU32, scope::Device> = Scoped::<AtomicU32, scope::Device>::new(100);
/// static SEEN: Scoped<AtomicU32, scope::System> = Scoped::from_atomic(AtomicU32::new(0));
/// ```
#[repr(transparent)]
pub struct Scoped<A, S: ScopeKind> {
    inner: A,
    scope: core::marker::PhantomData<S>,
}

// SAFETY: a `Scoped` is its atomic; the scope marker holds nothing.
unsafe impl<A: AtomicCell, S: ScopeKind> AtomicCell for Scoped<A, S> {
    type Value = A::Value;
}

impl<A, S: ScopeKind> Scoped<A, S> {
    /// `atomic`, with the scope `S`.
    pub const fn from_atomic(atomic: A) -> Self {
        Self { inner: atomic, scope: core::marker::PhantomData }
    }

    /// The atomic inside (whose `_scoped` methods take any scope).
    pub const fn as_atomic(&self) -> &A {
        &self.inner
    }

    /// The atomic, consuming the wrapper.
    pub fn into_atomic(self) -> A {
        self.inner
    }

    /// The scope every operation uses.
    pub const fn scope(&self) -> Scope {
        S::SCOPE
    }
}

impl<A: core::fmt::Debug, S: ScopeKind> core::fmt::Debug for Scoped<A, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Scoped").field(&S::SCOPE).field(&self.inner).finish()
    }
}

macro_rules! scoped_methods {
    ($atomic:ty, $t:ty, $new:expr; $($(#[$doc:meta])* $bitwise:ident => $bitwise_scoped:ident;)*) => {
        impl<S: ScopeKind> Scoped<$atomic, S> {
            /// A new atomic holding `value`.
            pub const fn new(value: $t) -> Self {
                Self::from_atomic($new(value))
            }
            /// Loads the value.
            #[inline(always)]
            pub fn load(&self, order: Ordering) -> $t {
                self.inner.load_scoped(S::SCOPE, order)
            }
            /// Stores `value`.
            #[inline(always)]
            pub fn store(&self, value: $t, order: Ordering) {
                self.inner.store_scoped(value, S::SCOPE, order)
            }
            /// Stores `value`, returning the previous value.
            #[inline(always)]
            pub fn swap(&self, value: $t, order: Ordering) -> $t {
                self.inner.swap_scoped(value, S::SCOPE, order)
            }
            /// Stores `new` if the value is `current` (bit patterns for
            /// floats): `Ok(previous)` if stored, `Err(previous)` if not.
            #[inline(always)]
            pub fn compare_exchange(&self, current: $t, new: $t, success: Ordering, failure: Ordering) -> Result<$t, $t> {
                self.inner.compare_exchange_scoped(current, new, S::SCOPE, success, failure)
            }
            /// Adds `value` (wrapping for integers), returning the previous value.
            #[inline(always)]
            pub fn fetch_add(&self, value: $t, order: Ordering) -> $t {
                self.inner.fetch_add_scoped(value, S::SCOPE, order)
            }
            /// Subtracts `value` (wrapping for integers), returning the previous value.
            #[inline(always)]
            pub fn fetch_sub(&self, value: $t, order: Ordering) -> $t {
                self.inner.fetch_sub_scoped(value, S::SCOPE, order)
            }
            /// Stores the minimum, returning the previous value.
            #[inline(always)]
            pub fn fetch_min(&self, value: $t, order: Ordering) -> $t {
                self.inner.fetch_min_scoped(value, S::SCOPE, order)
            }
            /// Stores the maximum, returning the previous value.
            #[inline(always)]
            pub fn fetch_max(&self, value: $t, order: Ordering) -> $t {
                self.inner.fetch_max_scoped(value, S::SCOPE, order)
            }
            $(
                $(#[$doc])*
                #[inline(always)]
                pub fn $bitwise(&self, value: $t, order: Ordering) -> $t {
                    self.inner.$bitwise_scoped(value, S::SCOPE, order)
                }
            )*
        }
    };
}
macro_rules! scoped_int_methods {
    ($($atomic:ty, $t:ty;)*) => {$(
        scoped_methods!($atomic, $t, <$atomic>::new;
            /// Bitwise and, returning the previous value.
            fetch_and => fetch_and_scoped;
            /// Bitwise or, returning the previous value.
            fetch_or => fetch_or_scoped;
            /// Bitwise xor, returning the previous value.
            fetch_xor => fetch_xor_scoped;
        );
    )*};
}
scoped_int_methods! {
    AtomicU32, u32;
    AtomicI32, i32;
    AtomicU64, u64;
    AtomicI64, i64;
}
scoped_methods!(AtomicF32, f32, AtomicF32::new;);
scoped_methods!(AtomicF64, f64, AtomicF64::new;);
