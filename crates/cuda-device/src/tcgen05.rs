//! Blackwell's tensor memory and fifth-generation tensor-core MMA
//! (`tcgen05.*`, targets with the `tcgen05` feature: sm_100a/f, sm_103a/f,
//! sm_110a/f).
//!
//! Tensor memory (TMEM) is a per-block scratchpad of 128 lanes × 512
//! columns of 32-bit cells beside the tensor cores. A warp allocates
//! columns ([`alloc`]; the address lands in shared memory), `tcgen05.mma`
//! accumulates A·B into them from shared-memory operands, [`commit`] makes
//! an mbarrier arrive when the MMAs are done, and warps move cells to and
//! from registers ([`load_32x32b_x1`] … then [`wait_load`]). Warp `w` of a
//! warpgroup reaches lanes `32·(w % 4)` to `32·(w % 4) + 31`; an address is
//! the lane in bits 16–31 and the column in bits 0–15.
//!
//! Compile-only in this project: the instructions are checked by ptxas for
//! the Blackwell targets, but no Blackwell GPU has run them. Building a
//! kernel that calls them for another target is a compile error naming a
//! target with the feature; a program built for `sm_100a` refuses to load
//! on any other GPU (`HostError::WrongGpu` in cuda-host).
//!
//! ```
//! use cuda_device::mbarrier::{shared_address, MBarrier};
//! use cuda_device::{shared, tcgen05, thread, warp};
//!
//! /// D = A·B into 64 fresh columns, then each thread of warp 0 reads its
//! /// lane's first column back. `da`, `db` are shared-memory matrix
//! /// descriptors and `idesc` the instruction descriptor (PTX ISA, "tcgen05
//! /// instruction descriptor"); `bar` is an initialised mbarrier.
//! /// SAFETY (caller): the operands describe initialised shared memory; the
//! /// whole block calls it.
//! unsafe fn one_tile(da: u64, db: u64, idesc: u32, bar: MBarrier) -> u32 {
//!     shared! { static SLOT: [u32; 1]; }
//!     let warp_id = thread::threadIdx_x() / warp::WARP_SIZE;
//!     if warp_id == 0 {
//!         unsafe { tcgen05::alloc::<64>(shared_address(SLOT.as_mut_ptr())) };
//!         tcgen05::relinquish_alloc_permit();
//!     }
//!     tcgen05::fence_before_thread_sync();
//!     thread::sync_threads();
//!     tcgen05::fence_after_thread_sync();
//!     let tmem = unsafe { *SLOT.as_mut_ptr() };
//!     if thread::threadIdx_x() == 0 {
//!         unsafe { tcgen05::mma_f16(tmem, da, db, idesc, false) };
//!         unsafe { tcgen05::commit(bar) };
//!     }
//!     bar.wait(0);
//!     tcgen05::fence_after_thread_sync();
//!     let mut value = 0;
//!     if warp_id == 0 {
//!         value = unsafe { tcgen05::load_32x32b_x1(tmem) };
//!         tcgen05::wait_load();
//!     }
//!     tcgen05::fence_before_thread_sync();
//!     thread::sync_threads();
//!     if warp_id == 0 {
//!         unsafe { tcgen05::dealloc::<64>(tmem) };
//!     }
//!     value
//! }
//! ```

use crate::mbarrier::MBarrier;
use crate::stubs;

const fn check_columns(columns: u32) {
    assert!(
        columns >= 32 && columns <= 512 && columns.is_power_of_two(),
        "tcgen05 allocates a power of two of columns from 32 to 512"
    );
}

/// Allocates `COLUMNS` columns of tensor memory (all 128 lanes) for this
/// block and writes their address to the 32-bit shared address `slot`
/// (`tcgen05.alloc.cta_group::1`). Waits while the columns are taken by
/// other blocks on the SM.
///
/// # Safety
/// The whole warp calls it together with the same arguments; `slot` is the
/// shared address of a `u32` no other thread uses meanwhile; the block frees
/// the columns with [`dealloc`] of the same `COLUMNS` before it exits.
#[inline(always)]
pub unsafe fn alloc<const COLUMNS: u32>(slot: u32) {
    const { check_columns(COLUMNS) };
    stubs::__oxide_stub_tcgen05_alloc(slot, COLUMNS)
}

/// Frees the `COLUMNS` columns at `address` (`tcgen05.dealloc.cta_group::1`).
///
/// # Safety
/// The whole warp calls it together; `address` and `COLUMNS` are those of
/// one [`alloc`] of this block, and no tensor-memory access to them is in
/// flight (order them with [`fence_before_thread_sync`] and a barrier).
#[inline(always)]
pub unsafe fn dealloc<const COLUMNS: u32>(address: u32) {
    const { check_columns(COLUMNS) };
    stubs::__oxide_stub_tcgen05_dealloc(address, COLUMNS)
}

/// Gives up this block's right to allocate more tensor memory, so that
/// blocks waiting in [`alloc`] on the same SM are not held up by it. The
/// whole warp calls it.
#[inline(always)]
pub fn relinquish_alloc_permit() {
    stubs::__oxide_stub_tcgen05_relinquish_alloc_permit()
}

/// Orders this thread's earlier tcgen05 operations before the next thread
/// synchronisation (barrier, mbarrier arrive).
#[inline(always)]
pub fn fence_before_thread_sync() {
    stubs::__oxide_stub_tcgen05_fence_before_thread_sync()
}

/// Orders this thread's later tcgen05 operations after the last thread
/// synchronisation it took part in.
#[inline(always)]
pub fn fence_after_thread_sync() {
    stubs::__oxide_stub_tcgen05_fence_after_thread_sync()
}

/// Waits until this thread's tensor-memory loads have written their
/// registers: call it before using a loaded value. The whole warp calls it.
#[inline(always)]
pub fn wait_load() {
    stubs::__oxide_stub_tcgen05_wait_ld()
}

/// Waits until this thread's tensor-memory stores are done. The whole warp
/// calls it.
#[inline(always)]
pub fn wait_store() {
    stubs::__oxide_stub_tcgen05_wait_st()
}

/// Lane `address.lane + laneid`'s cell at `address.column`
/// (`tcgen05.ld.32x32b.x1`). The value is defined after [`wait_load`].
///
/// # Safety
/// The whole warp calls it with the same `address`, inside this block's
/// allocation and the warp's 32 lanes of it.
#[inline(always)]
pub unsafe fn load_32x32b_x1(address: u32) -> u32 {
    stubs::__oxide_stub_tcgen05_ld_32x32b_x1(address)
}

/// The lane's cells at columns `address.column` (low half) and the next
/// one (`tcgen05.ld.32x32b.x2`). The value is defined after [`wait_load`].
///
/// # Safety
/// As for [`load_32x32b_x1`], with both columns inside the allocation.
#[inline(always)]
pub unsafe fn load_32x32b_x2(address: u32) -> u64 {
    stubs::__oxide_stub_tcgen05_ld_32x32b_x2(address)
}

/// Writes `value` to lane `address.lane + laneid`'s cell at
/// `address.column` (`tcgen05.st.32x32b.x1`).
///
/// # Safety
/// As for [`load_32x32b_x1`]; no MMA writing the same cells is in flight.
#[inline(always)]
pub unsafe fn store_32x32b_x1(address: u32, value: u32) {
    stubs::__oxide_stub_tcgen05_st_32x32b_x1(address, value)
}

/// Writes the low half of `value` to the lane's cell at `address.column`
/// and the high half to the next column (`tcgen05.st.32x32b.x2`).
///
/// # Safety
/// As for [`store_32x32b_x1`], with both columns inside the allocation.
#[inline(always)]
pub unsafe fn store_32x32b_x2(address: u32, value: u64) {
    stubs::__oxide_stub_tcgen05_st_32x32b_x2(address, value)
}

/// D = A·B, or D += A·B when `accumulate`, with f16 or bf16 A and B
/// (`tcgen05.mma.cta_group::1.kind::f16`): D at tensor-memory address `d`,
/// A and B in shared memory through the 64-bit matrix descriptors `a` and
/// `b`, the types, shape and transposes in the 32-bit instruction
/// descriptor `idesc` (PTX ISA, "tcgen05 instruction descriptor").
/// Asynchronous: [`commit`] tells when it is done.
///
/// # Safety
/// One thread issues it; the descriptors describe shared memory the block
/// has written and does not change until the commit's mbarrier completes;
/// D lies inside this block's allocation.
#[inline(always)]
pub unsafe fn mma_f16(d: u32, a: u64, b: u64, idesc: u32, accumulate: bool) {
    stubs::__oxide_stub_tcgen05_mma_f16(d, a, b, idesc, accumulate as u32)
}

/// As [`mma_f16`], with tf32 A and B (`kind::tf32`).
///
/// # Safety
/// As for [`mma_f16`].
#[inline(always)]
pub unsafe fn mma_tf32(d: u32, a: u64, b: u64, idesc: u32, accumulate: bool) {
    stubs::__oxide_stub_tcgen05_mma_tf32(d, a, b, idesc, accumulate as u32)
}

/// As [`mma_f16`], with 8-, 6- or 4-bit float A and B (`kind::f8f6f4`; the
/// formats are in `idesc`).
///
/// # Safety
/// As for [`mma_f16`].
#[inline(always)]
pub unsafe fn mma_f8f6f4(d: u32, a: u64, b: u64, idesc: u32, accumulate: bool) {
    stubs::__oxide_stub_tcgen05_mma_f8f6f4(d, a, b, idesc, accumulate as u32)
}

/// Makes `bar` arrive once when every tcgen05.mma this thread issued
/// before has completed (`tcgen05.commit.cta_group::1.mbarrier::arrive::one`).
///
/// # Safety
/// `bar` is an initialised mbarrier of this block that expects the arrival.
#[inline(always)]
pub unsafe fn commit(bar: MBarrier) {
    stubs::__oxide_stub_tcgen05_commit(bar.address())
}
