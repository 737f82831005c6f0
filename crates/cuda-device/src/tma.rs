//! The Tensor Memory Accelerator (sm_90): tiles of a 1–5-D tensor copied
//! between global and shared memory by one thread, described by a tensor
//! map (`CUtensorMap`) that the host encodes (`cuda_core::TensorMap`).
//!
//! A load (`cp.async.bulk.tensor…mbarrier::complete_tx::bytes`) writes the
//! box at the given element coordinates (innermost first) into shared memory
//! and reports its bytes to an [`MBarrier`]; wait on the barrier before
//! reading. Out-of-bounds elements of a box are filled with zeros. A store
//! reads shared memory asynchronously: [`commit_group`] then
//! [`wait_group_read`] before the shared memory is overwritten, and
//! [`fence_proxy_async_shared`] between the threads' writes of the tile and
//! the store.
//!
//! ```
//! use cuda_device::mbarrier::{shared_address, MBarrier};
//! use cuda_device::tma;
//!
//! /// Loads the 64×64 tile at (x, y) of the 2-D tensor `map` into `tile`.
//! /// SAFETY (caller): `map` is the device address of a tensor map with a
//! /// 64×64 box of 2-byte elements; `tile` is 128-byte aligned shared memory
//! /// of 8 KiB; `bar` expects this copy.
//! unsafe fn load_tile(map: u64, tile: *mut u16, bar: MBarrier, x: i32, y: i32) {
//!     bar.arrive_expect_tx(64 * 64 * 2);
//!     tma::load_2d(shared_address(tile), map, bar, x, y);
//! }
//! ```

use crate::mbarrier::MBarrier;
use crate::stubs;

macro_rules! tma_copies {
    ($($load:ident $store:ident $multicast:ident $load_stub:ident $store_stub:ident $multicast_stub:ident ($($c:ident),+);)*) => {$(
        #[doc = concat!("Loads the box at (", stringify!($($c),+), ") of tensor map `map` into shared memory at `dst` (a 32-bit shared address); its bytes complete on `bar`.")]
        ///
        /// # Safety
        /// `map` is the generic address of a valid, 64-byte aligned
        /// `CUtensorMap` of this rank (in global memory or a kernel
        /// parameter); `dst` is shared memory of the box's size, aligned to
        /// 128 bytes (1024 with a 128-byte swizzle), that nobody else uses
        /// until `bar`'s phase completes; `bar` expects the bytes.
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $load(dst: u32, map: u64, bar: MBarrier, $($c: i32),+) {
            stubs::$load_stub(dst, map, bar.address(), $($c),+)
        }

        #[doc = concat!("Loads the box at (", stringify!($($c),+), ") of tensor map `map` once and writes it at shared address `dst` of every block of the cluster whose bit is set in `cta_mask` (bit r: the block of rank r), each copy completing its bytes on the mbarrier at `bar`'s address in that block.")]
        ///
        /// Blocks that need the same tile (the B tile of two blocks one
        /// above the other in a GEMM) each load a part of it and multicast
        /// it to all of them, so the tile is read from L2 once. Fast on
        /// sm_90a and the family targets after it; ptxas takes it for
        /// sm_90 with an advisory.
        ///
        /// # Safety
        /// As for the plain load, in every block of the mask: `dst` is free
        /// there (every consumer of every receiving block has released it,
        /// for instance with [`MBarrier::arrive_cluster_after_reads`]); the barrier at
        /// `bar`'s address in each receiving block is initialised and expects
        /// these bytes; `cta_mask` names only blocks of this cluster, which do
        /// not exit before the copy lands.
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $multicast(dst: u32, map: u64, bar: MBarrier, $($c: i32,)+ cta_mask: u16) {
            stubs::$multicast_stub(dst, map, bar.address(), $($c,)+ cta_mask)
        }

        #[doc = concat!("Stores shared memory at `src` (a 32-bit shared address) into the box at (", stringify!($($c),+), ") of tensor map `map`, in the current bulk group.")]
        ///
        /// # Safety
        /// As for the load; `src` is not written until [`wait_group_read`]
        /// says the store has read it, and its contents were written before a
        /// [`fence_proxy_async_shared`].
        #[inline(always)]
        pub unsafe fn $store(map: u64, src: u32, $($c: i32),+) {
            stubs::$store_stub(map, src, $($c),+)
        }
    )*};
}

tma_copies! {
    load_1d store_1d load_1d_multicast __oxide_stub_tma_load_1d __oxide_stub_tma_store_1d __oxide_stub_tma_load_1d_multicast (x);
    load_2d store_2d load_2d_multicast __oxide_stub_tma_load_2d __oxide_stub_tma_store_2d __oxide_stub_tma_load_2d_multicast (x, y);
    load_3d store_3d load_3d_multicast __oxide_stub_tma_load_3d __oxide_stub_tma_store_3d __oxide_stub_tma_load_3d_multicast (x, y, z);
    load_4d store_4d load_4d_multicast __oxide_stub_tma_load_4d __oxide_stub_tma_store_4d __oxide_stub_tma_load_4d_multicast (x, y, z, w);
    load_5d store_5d load_5d_multicast __oxide_stub_tma_load_5d __oxide_stub_tma_store_5d __oxide_stub_tma_load_5d_multicast (x, y, z, w, v);
}

/// Closes the current group of TMA stores (`cp.async.bulk.commit_group`).
#[inline(always)]
pub fn commit_group() {
    stubs::__oxide_stub_bulk_commit_group()
}

/// Waits until at most `N` (0–3) groups of stores still read shared memory
/// (`cp.async.bulk.wait_group.read N`).
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    match N {
        0 => stubs::__oxide_stub_bulk_wait_group_read_0(),
        1 => stubs::__oxide_stub_bulk_wait_group_read_1(),
        2 => stubs::__oxide_stub_bulk_wait_group_read_2(),
        _ => stubs::__oxide_stub_bulk_wait_group_read_3(),
    }
}

/// Waits until at most `N` (0–3) groups of stores are incomplete, their
/// writes to global memory done (`cp.async.bulk.wait_group N`).
#[inline(always)]
pub fn wait_group<const N: u32>() {
    match N {
        0 => stubs::__oxide_stub_bulk_wait_group_0(),
        1 => stubs::__oxide_stub_bulk_wait_group_1(),
        2 => stubs::__oxide_stub_bulk_wait_group_2(),
        _ => stubs::__oxide_stub_bulk_wait_group_3(),
    }
}

/// Orders this thread's ordinary shared-memory accesses before later
/// asynchronous-proxy ones (TMA stores, wgmma operands):
/// `fence.proxy.async.shared::cta`.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    stubs::__oxide_stub_fence_proxy_async_shared()
}

/// Prefetches the tensor map at `map` (a generic address) into the cache.
#[inline(always)]
pub fn prefetch_tensor_map(map: u64) {
    stubs::__oxide_stub_prefetch_tensormap(map)
}
