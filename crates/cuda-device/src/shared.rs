//! Block-shared memory: static arrays (`shared!`) and the launch-sized
//! dynamic area ([`dynamic_shared`]).
//!
//! ```
//! use cuda_device::{kernel, shared, thread, DisjointSlice};
//!
//! /// Reverses each block's 256 elements through shared memory.
//! #[kernel]
//! pub fn reverse_blocks(input: &[f32], mut out: DisjointSlice<f32>) {
//!     shared! { static TILE: [f32; 256]; }
//!     let idx = thread::index_1d();
//!     let t = thread::threadIdx_x() as usize;
//!     // Each thread writes its own slot, all wait, then anyone reads any slot.
//!     let view = TILE.stage(input[idx.get()]).sync();
//!     let mirrored = view.get(255 - t);
//!     view.done();
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = mirrored;
//!     }
//! }
//! ```
//!
//! How it reaches the hardware: `shared!` puts a [`SharedArray`] static in the
//! link section `.oxide.shared`; the device linker moves every static of that
//! section into PTX `.shared` memory (one allocation per declaration site,
//! uninitialised, like CUDA's `__shared__`). In an emulated launch (`--emulate`)
//! every access resolves the static's address to the running block's own copy
//! (the stub `block_shared`, the identity on the device), and reads and
//! writes through [`SharedArray::read`]/[`write`](SharedArray::write) (and so
//! `stage`/`get`) are checked for races between barriers.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use crate::thread;

/// An alignment for a [`SharedArray`], as a zero-sized marker type.
pub trait Alignment: Copy {}

macro_rules! alignments {
    ($($name:ident = $n:literal),*) => {$(
        #[doc = concat!("Aligns a shared array to ", stringify!($n), " bytes.")]
        #[derive(Clone, Copy, Debug)]
        #[repr(align($n))]
        pub struct $name;
        impl Alignment for $name {}
    )*};
}
alignments!(Align16 = 16, Align32 = 32, Align64 = 64, Align128 = 128, Align256 = 256);

/// `N` elements of `T` in block-shared memory, aligned to `A` (16 bytes by
/// default). Declare one with [`shared!`](macro@crate::shared).
#[repr(C)]
pub struct SharedArray<T, const N: usize, A: Alignment = Align16> {
    _align: [A; 0],
    cells: UnsafeCell<[MaybeUninit<T>; N]>,
}

// SAFETY: a SharedArray is only reachable through the methods below: the safe
// ones let each thread write only its own slot and read only after a barrier;
// the unsafe ones state the synchronisation the caller must provide.
unsafe impl<T: Send, const N: usize, A: Alignment> Sync for SharedArray<T, N, A> {}

impl<T, const N: usize, A: Alignment> SharedArray<T, N, A> {
    /// An uninitialised array (shared memory has no initial contents), for
    /// the static that [`shared!`](crate::shared) declares.
    ///
    /// # Safety
    /// Only as the initialiser of a static in shared memory, which is what
    /// `shared!` writes: the safe methods rely on every thread of the block
    /// seeing the same array. An array anywhere else (a local variable) is
    /// the thread's own, so [`SharedView::get`] would read slots no other
    /// thread wrote.
    #[doc(hidden)]
    pub const unsafe fn uninit() -> Self {
        SharedArray { _align: [], cells: UnsafeCell::new([const { MaybeUninit::uninit() }; N]) }
    }

    /// The number of elements.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the array has no elements.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// A pointer to the first element, for access patterns the safe API
    /// cannot express (tiles indexed in two dimensions, reductions).
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        let own = self.cells.get().cast::<u8>();
        crate::stubs::__oxide_stub_block_shared(own, core::mem::size_of::<Self>(), core::mem::align_of::<Self>())
            .cast()
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// `i < N`; the element was written, and no thread writes it between that
    /// write (separated from this read by a barrier) and this read.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        debug_assert!(i < N);
        let p = self.as_mut_ptr().add(i);
        crate::stubs::__oxide_stub_shared_access(p.cast(), core::mem::size_of::<T>(), false);
        *p
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// `i < N`, and no other thread reads or writes element `i` until a
    /// barrier separates them from this write.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        debug_assert!(i < N);
        let p = self.as_mut_ptr().add(i);
        crate::stubs::__oxide_stub_shared_access(p.cast(), core::mem::size_of::<T>(), true);
        p.write(value)
    }

    /// A shared reference to element `i`, for types that synchronise
    /// themselves (atomics: `shared! { static BINS: [AtomicU32; 256]; }`).
    ///
    /// # Safety
    /// `i < N`, and the element was initialised (written with [`write`](Self::write)
    /// by some thread, then a barrier) before any thread takes this reference.
    #[inline(always)]
    pub unsafe fn get_ref(&self, i: usize) -> &T {
        debug_assert!(i < N);
        &*self.as_mut_ptr().add(i)
    }

    /// Writes `value` into this thread's own slot (its linear index in the
    /// block). Panics if the block has more than `N` threads.
    ///
    /// Safe because no two threads of a block share a linear index; reading
    /// is only possible after [`Staged::sync`], a barrier. The other threads
    /// read the value, so it must be `Send` (a
    /// [`ThreadIndex`](crate::ThreadIndex), which must stay in its thread,
    /// is not).
    #[inline(always)]
    pub fn stage(&self, value: T) -> Staged<'_, T, N, A>
    where
        T: Send,
    {
        let slot = thread::block_linear_index();
        assert!(slot < N, "shared array smaller than the block");
        // SAFETY: slot < N and is this thread's alone (see above).
        unsafe { self.write(slot, value) };
        Staged { array: self }
    }
}

/// This thread has written its slot; [`sync`](Staged::sync) waits for the others.
#[must_use = "call .sync() so every thread's slot is written before anyone reads"]
pub struct Staged<'a, T, const N: usize, A: Alignment> {
    array: &'a SharedArray<T, N, A>,
}

impl<'a, T, const N: usize, A: Alignment> Staged<'a, T, N, A> {
    /// Waits at a block barrier; afterwards every thread's slot is visible.
    #[inline(always)]
    pub fn sync(self) -> SharedView<'a, T, N, A> {
        thread::sync_threads();
        SharedView { array: self.array, _not_send: PhantomData }
    }
}

/// Read access to a shared array between two barriers.
#[must_use = "call .done() so nobody overwrites a slot another thread still reads"]
pub struct SharedView<'a, T, const N: usize, A: Alignment> {
    array: &'a SharedArray<T, N, A>,
    _not_send: PhantomData<*const ()>,
}

impl<T: Copy, const N: usize, A: Alignment> SharedView<'_, T, N, A> {
    /// The value thread `i` (linear index in the block) staged. Panics if `i`
    /// is not a thread of this block.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        // No formatted message: formatting machinery is not available on the GPU.
        assert!(i < N && i < thread::block_size(), "no thread of this block staged that slot");
        // SAFETY: every thread of the block wrote its slot before the barrier
        // that made this view, and nobody writes again before `done`.
        unsafe { self.array.read(i) }
    }

    /// Waits at a block barrier, after which the slots may be staged again.
    #[inline(always)]
    pub fn done(self) {
        thread::sync_threads();
    }
}

/// The kernel's dynamic shared memory, sized by the launch
/// (`LaunchConfig::shared_mem_bytes`), as `len` elements of `T`.
///
/// # Safety
/// The launch must provide at least `len * size_of::<T>()` bytes, and the
/// caller synchronises access to the elements like for [`SharedArray::read`].
#[inline(always)]
pub unsafe fn dynamic_shared<T>() -> (*mut T, usize) {
    let bytes = crate::stubs::__oxide_stub_dynamic_smem_size() as usize;
    let own = core::ptr::addr_of!(__oxide_dynamic_shared) as *mut u8;
    let base = crate::stubs::__oxide_stub_block_shared(own, bytes, 16).cast::<T>();
    (base, bytes / core::mem::size_of::<T>().max(1))
}

/// Stands for the kernel's dynamic shared memory; the device linker replaces
/// it with PTX `.extern .shared` (docs/ABI.md §6). Its symbol is Abi.def's
/// `DynamicSharedGlobal`.
#[doc(hidden)]
#[export_name = dynamic_shared_symbol!()]
#[used]
#[allow(non_upper_case_globals)] // the emulator names it
pub static __oxide_dynamic_shared: [u128; 0] = [];

/// Declares block-shared arrays (one allocation per declaration).
///
/// ```
/// # use cuda_device::shared;
/// shared! { static TILE: [f32; 1024]; }
/// shared! { static WIDE: [u64; 64] align 256; }
/// ```
#[macro_export]
macro_rules! shared {
    ($(static $name:ident : [$t:ty; $n:expr] $(align $a:tt)?;)*) => {$(
        // Abi.def's SharedSection (`.oxide.shared`). The macro comes from
        // build.rs, so rustc lets only other crates name it by path: this
        // crate itself cannot expand `shared!`.
        #[link_section = $crate::__oxide_shared_section!()]
        static $name: $crate::shared::SharedArray<$t, { $n }, $crate::__shared_align!($($a)?)> =
            // SAFETY: the initialiser of a static in shared memory.
            unsafe { $crate::shared::SharedArray::uninit() };
    )*};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __shared_align {
    () => { $crate::shared::Align16 };
    (16) => { $crate::shared::Align16 };
    (32) => { $crate::shared::Align32 };
    (64) => { $crate::shared::Align64 };
    (128) => { $crate::shared::Align128 };
    (256) => { $crate::shared::Align256 };
}
