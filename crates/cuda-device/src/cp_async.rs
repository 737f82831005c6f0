//! Asynchronous copies from global into shared memory (`cp.async`, sm_80).
//!
//! A thread starts copies with [`copy`] (or [`copy_or_zero`] at the edges of
//! the input), closes the batch it started with [`commit`], and later waits
//! for its batches with [`wait_group`] or [`wait_all`]. The copies run while
//! the thread computes, which is how a kernel overlaps loading the next tile
//! with working on the current one (double buffering):
//!
//! ```
//! use cuda_device::{cp_async, kernel, shared, thread, DisjointSlice};
//!
//! /// Each block sums its 256 inputs, two halves loaded asynchronously.
//! #[kernel]
//! pub fn block_sums(input: &[f32], mut sums: DisjointSlice<f32>) {
//!     shared! { static TILE: [f32; 256]; }
//!     let t = thread::threadIdx_x() as usize;
//!     let base = thread::blockIdx_x() as usize * 256;
//!     // SAFETY: every thread copies only its own slot, and nobody reads
//!     // TILE before the wait and the barrier below.
//!     unsafe { cp_async::copy_or_zero(&TILE, t, input, base + t) };
//!     cp_async::commit();
//!     cp_async::wait_all();
//!     thread::sync_threads();
//!     if t == 0 {
//!         let mut total = 0.0;
//!         for i in 0..256 {
//!             // SAFETY: written before the barrier; nobody writes it again.
//!             total += unsafe { TILE.read(i) };
//!         }
//!         if let Some(s) = sums.get_mut(thread::index_1d()) {
//!             *s = total;
//!         }
//!     }
//! }
//! ```
//!
//! The copies are per thread: the wait covers only the calling thread's
//! copies, so a block barrier ([`thread::sync_threads`](crate::thread::sync_threads))
//! must follow it before other threads read the data.

use crate::shared::{Alignment, SharedArray};
use crate::stubs;

mod sealed {
    pub trait Sealed {}
}

/// An element `cp.async` can copy in one instruction: 4, 8 or 16 bytes.
pub trait AsyncCopy: Copy + sealed::Sealed {
    /// The size in bytes (4, 8 or 16).
    const BYTES: u32;
}

macro_rules! async_copy {
    ($($t:ty = $n:literal),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl AsyncCopy for $t {
            const BYTES: u32 = $n;
        }
    )*};
}
async_copy! {
    u32 = 4, i32 = 4, f32 = 4,
    u64 = 8, i64 = 8, f64 = 8, [u32; 2] = 8, [i32; 2] = 8, [f32; 2] = 8,
    u128 = 16, i128 = 16, [u32; 4] = 16, [i32; 4] = 16, [f32; 4] = 16,
    [u64; 2] = 16, [i64; 2] = 16, [f64; 2] = 16,
}

/// Where the copied bytes may be cached on the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// `.ca`: in L1 and L2 (data other threads of the SM read again).
    All,
    /// `.cg`: in L2 only, bypassing L1 (streamed data); 16-byte elements only.
    Global,
}

/// Starts copying `src[src_index]` into `dst[dst_index]` through L1 and L2
/// (`cp.async.ca`). Panics if either index is out of bounds.
///
/// # Safety
/// Until this thread has waited for the copy ([`wait_group`], [`wait_all`])
/// and a barrier separates that wait from other threads' accesses, no thread
/// reads or writes `dst[dst_index]`; `src[src_index]` is not written by
/// anyone until the wait.
#[inline(always)]
pub unsafe fn copy<T: AsyncCopy, const N: usize, A: Alignment>(
    dst: &SharedArray<T, N, A>,
    dst_index: usize,
    src: &[T],
    src_index: usize,
) {
    copy_with(Cache::All, dst, dst_index, src, src_index)
}

/// [`copy`] with an explicit [`Cache`] policy. Panics if either index is out
/// of bounds, or for [`Cache::Global`] with elements smaller than 16 bytes.
///
/// # Safety
/// As for [`copy`].
#[inline(always)]
pub unsafe fn copy_with<T: AsyncCopy, const N: usize, A: Alignment>(
    cache: Cache,
    dst: &SharedArray<T, N, A>,
    dst_index: usize,
    src: &[T],
    src_index: usize,
) {
    assert!(dst_index < N && src_index < src.len(), "cp_async::copy index out of bounds");
    let to = dst.as_mut_ptr().add(dst_index).cast::<u8>();
    let from = src.as_ptr().add(src_index).cast::<u8>();
    issue::<T>(cache, to, from, None);
}

/// Starts copying `src[src_index]` into `dst[dst_index]`, or writes zeros
/// there (asynchronously, like the copy) when `src_index` is past the end of
/// `src`: tiles that overhang the input need no separate edge code. Panics if
/// `dst_index` is out of bounds.
///
/// # Safety
/// As for [`copy`].
#[inline(always)]
pub unsafe fn copy_or_zero<T: AsyncCopy, const N: usize, A: Alignment>(
    dst: &SharedArray<T, N, A>,
    dst_index: usize,
    src: &[T],
    src_index: usize,
) {
    copy_or_zero_with(Cache::All, dst, dst_index, src, src_index)
}

/// [`copy_or_zero`] with an explicit [`Cache`] policy. Panics if `dst_index`
/// is out of bounds, or for [`Cache::Global`] with elements smaller than 16
/// bytes.
///
/// # Safety
/// As for [`copy`].
#[inline(always)]
pub unsafe fn copy_or_zero_with<T: AsyncCopy, const N: usize, A: Alignment>(
    cache: Cache,
    dst: &SharedArray<T, N, A>,
    dst_index: usize,
    src: &[T],
    src_index: usize,
) {
    assert!(dst_index < N, "cp_async::copy_or_zero index out of bounds");
    let to = dst.as_mut_ptr().add(dst_index).cast::<u8>();
    let inside = src_index < src.len();
    // Out of range: read 0 bytes (from the slice's start, never touched).
    let from = if inside { src.as_ptr().add(src_index) } else { src.as_ptr() }.cast::<u8>();
    issue::<T>(cache, to, from, Some(if inside { T::BYTES } else { 0 }));
}

/// One `cp.async` of `T::BYTES` bytes; with `src_bytes`, only that many are
/// read and the rest of the destination is zeroed. (`T::BYTES` is a constant:
/// the match folds to one instruction.)
#[inline(always)]
unsafe fn issue<T: AsyncCopy>(cache: Cache, to: *mut u8, from: *const u8, src_bytes: Option<u32>) {
    assert!(cache == Cache::All || T::BYTES == 16, "cp.async.cg copies 16-byte elements only");
    // Both ends must be aligned to the copy's size (a device buffer and a
    // SharedArray are, for elements at their own alignment or 16 bytes).
    debug_assert!(
        to as usize % T::BYTES as usize == 0 && from as usize % T::BYTES as usize == 0,
        "cp.async needs addresses aligned to the element size"
    );
    match (T::BYTES, cache, src_bytes) {
        (4, _, None) => stubs::__oxide_stub_cp_async_ca_4(to, from),
        (8, _, None) => stubs::__oxide_stub_cp_async_ca_8(to, from),
        (_, Cache::All, None) => stubs::__oxide_stub_cp_async_ca_16(to, from),
        (_, Cache::Global, None) => stubs::__oxide_stub_cp_async_cg_16(to, from),
        (4, _, Some(n)) => stubs::__oxide_stub_cp_async_ca_4_zfill(to, from, n),
        (8, _, Some(n)) => stubs::__oxide_stub_cp_async_ca_8_zfill(to, from, n),
        (_, Cache::All, Some(n)) => stubs::__oxide_stub_cp_async_ca_16_zfill(to, from, n),
        (_, Cache::Global, Some(n)) => stubs::__oxide_stub_cp_async_cg_16_zfill(to, from, n),
    }
}

/// Closes the batch of copies this thread started since the last commit
/// (`cp.async.commit_group`); [`wait_group`] counts these batches.
#[inline(always)]
pub fn commit() {
    stubs::__oxide_stub_cp_async_commit_group()
}

/// Waits until at most `PENDING` of this thread's committed batches are still
/// in flight (`cp.async.wait_group PENDING`): with two buffers, `wait_group::<1>()`
/// waits for the older batch while the newer one keeps loading. Copies not yet
/// committed are not waited for.
#[inline(always)]
pub fn wait_group<const PENDING: u32>() {
    const { assert!(PENDING <= 7, "cp.async.wait_group takes 0..=7") };
    stubs::__oxide_stub_cp_async_wait_group(PENDING)
}

/// Waits for all of this thread's copies, committed or not (`cp.async.wait_all`).
#[inline(always)]
pub fn wait_all() {
    stubs::__oxide_stub_cp_async_wait_all()
}
