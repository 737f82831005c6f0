//! Thread-block clusters (sm_90): the blocks of a cluster run at the same
//! time on neighbouring SMs, can wait for each other ([`sync`]) and can read
//! and write each other's shared memory ([`map`], distributed shared memory).
//!
//! A kernel that uses clusters is launched with cluster dimensions
//! (`LaunchConfig::with_cluster` in cuda-core); without them every block is a
//! cluster of one.
//!
//! ```
//! use cuda_device::{cluster, kernel, shared, thread, DisjointSlice};
//!
//! /// Block 0 of each cluster writes the sum of every block's value.
//! #[kernel]
//! pub fn cluster_sum(input: &[u32], mut out: DisjointSlice<u32>) {
//!     shared! { static MINE: [u32; 1]; }
//!     let block = thread::blockIdx_x() as usize;
//!     if thread::threadIdx_x() == 0 {
//!         // SAFETY: one writer; the cluster barrier below orders the readers.
//!         unsafe { MINE.write(0, input[block]) };
//!     }
//!     cluster::sync();
//!     if cluster::ctarank() == 0 && thread::threadIdx_x() == 0 {
//!         let mut total = 0;
//!         for rank in 0..cluster::num_ctas() {
//!             // SAFETY: written before the barrier; the block is alive until
//!             // the second barrier.
//!             total += unsafe { cluster::map(&MINE, rank).read(0) };
//!         }
//!         if let Some(o) = out.get_mut(thread::index_1d()) {
//!             *o = total;
//!         }
//!     }
//!     // No block may exit while another still reads its shared memory.
//!     cluster::sync();
//! }
//! ```

use core::marker::PhantomData;

use crate::shared::{Alignment, SharedArray};
use crate::stubs;

/// The calling block's rank in its cluster (`%cluster_ctarank`, 0..[`num_ctas`]).
#[inline(always)]
pub fn ctarank() -> u32 {
    stubs::__oxide_stub_cluster_ctarank()
}

/// The number of blocks in the cluster (`%cluster_nctarank`).
#[inline(always)]
pub fn num_ctas() -> u32 {
    stubs::__oxide_stub_cluster_nctarank()
}

/// The calling block's (x, y, z) position within its cluster (`%cluster_ctaid`).
#[inline(always)]
pub fn block_in_cluster() -> (u32, u32, u32) {
    (
        stubs::__oxide_stub_cluster_ctaid_x(),
        stubs::__oxide_stub_cluster_ctaid_y(),
        stubs::__oxide_stub_cluster_ctaid_z(),
    )
}

/// The cluster's dimensions in blocks (`%cluster_nctaid`).
#[inline(always)]
pub fn cluster_dim() -> (u32, u32, u32) {
    (
        stubs::__oxide_stub_cluster_nctaid_x(),
        stubs::__oxide_stub_cluster_nctaid_y(),
        stubs::__oxide_stub_cluster_nctaid_z(),
    )
}

/// The cluster's (x, y, z) position in the grid of clusters (`%clusterid`).
#[inline(always)]
pub fn cluster_idx() -> (u32, u32, u32) {
    (
        stubs::__oxide_stub_clusterid_x(),
        stubs::__oxide_stub_clusterid_y(),
        stubs::__oxide_stub_clusterid_z(),
    )
}

/// The grid's dimensions in clusters (`%nclusterid`).
#[inline(always)]
pub fn num_clusters() -> (u32, u32, u32) {
    (
        stubs::__oxide_stub_nclusterid_x(),
        stubs::__oxide_stub_nclusterid_y(),
        stubs::__oxide_stub_nclusterid_z(),
    )
}

/// Waits until every thread of every block in the cluster arrives; writes
/// before it (shared, distributed shared and global) are visible to reads
/// after it in the whole cluster. [`arrive`] then [`wait`].
///
/// Every thread of every block of the cluster must call it (the barrier
/// counts all the cluster's threads).
#[inline(always)]
pub fn sync() {
    arrive();
    wait();
}

/// Signals this thread's arrival at the cluster barrier with release
/// semantics (`barrier.cluster.arrive`): its earlier writes become visible to
/// threads that complete [`wait`]. Work may go on between arrive and wait.
#[inline(always)]
pub fn arrive() {
    stubs::__oxide_stub_cluster_arrive()
}

/// Signals arrival without ordering memory (`barrier.cluster.arrive.relaxed`):
/// for a barrier that only says "I have started" (for instance that this
/// block's shared memory exists before others map it).
#[inline(always)]
pub fn arrive_relaxed() {
    stubs::__oxide_stub_cluster_arrive_relaxed()
}

/// Waits until all threads of the cluster arrived, with acquire semantics
/// (`barrier.cluster.wait`). Each [`arrive`] must be followed by one wait.
#[inline(always)]
pub fn wait() {
    stubs::__oxide_stub_cluster_wait()
}

/// A block-shared array of another block of the cluster (or this one),
/// reached through distributed shared memory (`ld/st.shared::cluster`).
#[derive(Clone, Copy)]
pub struct RemoteShared<'a, T, const N: usize> {
    base: *mut T,
    _array: PhantomData<&'a [T; N]>,
}

/// The instance of the `shared!` array `array` that belongs to the block of
/// rank `rank` in this cluster (`mapa.shared::cluster`). Panics unless
/// `rank < num_ctas()`.
///
/// The other block's memory exists only while it runs: have every block
/// call [`sync`] before exiting, so none leaves while another still
/// accesses its shared memory.
#[inline(always)]
pub fn map<T, const N: usize, A: Alignment>(array: &SharedArray<T, N, A>, rank: u32) -> RemoteShared<'_, T, N> {
    assert!(rank < num_ctas(), "cluster::map: no block of that rank in this cluster");
    let local = array.as_mut_ptr() as *const u8;
    let base = stubs::__oxide_stub_cluster_map_shared(local, rank) as *mut T;
    RemoteShared { base, _array: PhantomData }
}

impl<T, const N: usize> RemoteShared<'_, T, N> {
    /// The number of elements.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the array has no elements.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// A pointer to the first element (a generic address of the other
    /// block's shared memory).
    pub fn as_mut_ptr(&self) -> *mut T {
        self.base
    }

    /// Reads element `i` of the other block's array.
    ///
    /// # Safety
    /// `i < N`; the element was written, a cluster barrier ([`sync`]) or an
    /// equivalent release/acquire separates that write from this read, and
    /// nobody writes the element until this read completes; the owning block
    /// has not exited.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        debug_assert!(i < N);
        // SAFETY: the caller's contract.
        unsafe { self.base.add(i).read() }
    }

    /// Writes element `i` of the other block's array.
    ///
    /// # Safety
    /// `i < N`; no other thread of the cluster reads or writes element `i`
    /// until a cluster barrier separates it from this write; the owning block
    /// has not exited.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        debug_assert!(i < N);
        // SAFETY: the caller's contract.
        unsafe { self.base.add(i).write(value) }
    }

    /// A shared reference to element `i`, for types that synchronise
    /// themselves (atomics at [`Scope::Cluster`](crate::atomic::Scope::Cluster)).
    ///
    /// # Safety
    /// As for [`SharedArray::get_ref`], and the owning block has not exited
    /// while the reference is used.
    #[inline(always)]
    pub unsafe fn get_ref(&self, i: usize) -> &T {
        debug_assert!(i < N);
        // SAFETY: the caller's contract.
        unsafe { &*self.base.add(i) }
    }
}
