//! Shared-memory transaction barriers (`mbarrier`, sm_90): the handshake
//! between TMA copies and the threads that use their data.
//!
//! An mbarrier is a 64-bit word in shared memory that counts arrivals and,
//! on sm_90, pending bytes of asynchronous copies ("transactions"). When
//! `count` threads have arrived and every byte announced with
//! [`MBarrier::arrive_expect_tx`] has landed, the barrier's current *phase*
//! completes and the next begins; waiters name the phase they wait for by
//! its parity (0, 1, 0, …), or, without counting phases by hand, by the
//! token of an arrival ([`MBarrier::arrive_token`], [`MBarrier::wait_for`]:
//! `bar.wait_for(bar.arrive_token())` is a block-wide barrier on it).
//!
//! ```
//! use cuda_device::mbarrier::{self, MBarrier};
//! use cuda_device::{shared, thread};
//!
//! /// One thread loads, everyone waits for the bytes.
//! fn handshake(load: impl Fn(MBarrier)) {
//!     shared! { static BAR: [u64; 1]; }
//!     // SAFETY: BAR is a shared static of one u64; only thread 0 initialises
//!     // it, and the barrier below publishes the initialisation.
//!     let bar = unsafe { MBarrier::at(BAR.as_mut_ptr()) };
//!     if thread::threadIdx_x() == 0 {
//!         unsafe { bar.init(1) };
//!         mbarrier::fence_init();
//!     }
//!     thread::sync_threads();
//!     if thread::threadIdx_x() == 0 {
//!         bar.arrive_expect_tx(4096);
//!         load(bar); // e.g. tma::load_2d(…, bar, …) of 4096 bytes
//!     }
//!     bar.wait(0);
//! }
//! ```

use crate::stubs;

/// The 32-bit address of `ptr` in the `.shared` window, the form mbarrier,
/// TMA and wgmma instructions take. `ptr` must point into shared memory (a
/// `shared!` static or [`dynamic_shared`](crate::dynamic_shared)); for any
/// other pointer the result is meaningless.
#[inline(always)]
pub fn shared_address<T>(ptr: *const T) -> u32 {
    stubs::__oxide_stub_shared_address(ptr.cast())
}

/// Makes the initialisation of mbarriers visible to the asynchronous proxy
/// (TMA) and to the other threads after the next block barrier
/// (`fence.mbarrier_init.release.cluster`). Call it once, after the `init`s.
#[inline(always)]
pub fn fence_init() {
    stubs::__oxide_stub_fence_mbarrier_init()
}

/// The phase of an mbarrier that one arrival belongs to
/// ([`MBarrier::arrive_token`]), to wait on with [`MBarrier::wait_for`].
/// Neither `Copy` nor `Clone`: each arrival is waited for once, and a
/// thread that must wait for a later phase arrives again for a new token.
#[must_use = "an arrival's token is what `MBarrier::wait_for` waits on"]
#[derive(Debug)]
pub struct Arrival {
    barrier: u32,
    state: u64,
}

/// An mbarrier in shared memory, named by its 32-bit shared address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MBarrier(u32);

impl MBarrier {
    /// The mbarrier at `ptr`.
    ///
    /// # Safety
    /// `ptr` points into shared memory, is 8-byte aligned, and the word is
    /// used only as an mbarrier while this handle is in use.
    #[inline(always)]
    pub unsafe fn at(ptr: *mut u64) -> Self {
        MBarrier(shared_address(ptr))
    }

    /// The mbarrier at a 32-bit shared address.
    ///
    /// # Safety
    /// As for [`at`](Self::at): an 8-byte aligned word of shared memory.
    #[inline(always)]
    pub unsafe fn from_address(address: u32) -> Self {
        MBarrier(address)
    }

    /// Its 32-bit shared address.
    #[inline(always)]
    pub fn address(self) -> u32 {
        self.0
    }

    /// Sets the barrier to expect `count` arrivals per phase, phase 0.
    ///
    /// # Safety
    /// One thread initialises it, before any other use, and publishes the
    /// initialisation with [`fence_init`] and a block barrier.
    #[inline(always)]
    pub unsafe fn init(self, count: u32) {
        stubs::__oxide_stub_mbarrier_init(self.0, count)
    }

    /// Invalidates the barrier so its word can be reused as ordinary memory.
    ///
    /// # Safety
    /// Nobody uses the barrier any more (no pending arrivals or copies).
    #[inline(always)]
    pub unsafe fn invalidate(self) {
        stubs::__oxide_stub_mbarrier_inval(self.0)
    }

    /// Counts this thread's arrival (release semantics at block scope).
    #[inline(always)]
    pub fn arrive(self) {
        stubs::__oxide_stub_mbarrier_arrive(self.0)
    }

    /// Counts this thread's arrival on the barrier at the same shared
    /// address in block `rank` of the cluster (this block's own rank
    /// included), with release semantics at cluster scope
    /// (`mapa` + `mbarrier.arrive.release.cluster.shared::cluster`). A
    /// consumer whose stage a producer of another block fills (a
    /// [`tma`](crate::tma) multicast load) releases the stage so: the
    /// producer waits on its own barrier for the arrivals of every block
    /// it writes into.
    ///
    /// # Safety
    /// `rank` is below the cluster's block count, and block `rank` has
    /// initialised its barrier at this address (published by
    /// [`fence_init`] and a [`cluster::sync`](crate::cluster::sync) before
    /// any block arrives) and does not exit before this arrival lands
    /// (have every block call `cluster::sync` before it exits).
    #[inline(always)]
    pub unsafe fn arrive_cluster(self, rank: u32) {
        stubs::__oxide_stub_mbarrier_arrive_cluster(self.0, rank)
    }

    /// [`arrive_cluster`](Self::arrive_cluster) with release semantics at
    /// block scope only (`mbarrier.arrive.release.cta.shared::cluster`): the
    /// arrival makes none of this thread's writes visible to block `rank`,
    /// and so needs no cluster-wide fence. It is the arrival for a consumer
    /// that only says it has finished reading a buffer another block's
    /// producer refills (a multicast stage, once `wgmma::wait_group` says
    /// the reads completed); a cluster-scope release there would hold the
    /// consumer until its memory operations are visible to the whole
    /// cluster. The reads must be complete before the arrival by something
    /// this thread waited for (`wgmma::wait_group`, a TMA store's
    /// `wait_group_read`): the block-scope release does not order them for
    /// the other block. After ordinary loads of the buffer, or to hand data
    /// over to the other block, use `arrive_cluster`.
    ///
    /// # Safety
    /// As for [`arrive_cluster`](Self::arrive_cluster).
    #[inline(always)]
    pub unsafe fn arrive_cluster_after_reads(self, rank: u32) {
        stubs::__oxide_stub_mbarrier_arrive_cluster_after_reads(self.0, rank)
    }

    /// Arrives and announces `bytes` more bytes of asynchronous copies that
    /// must land before the current phase completes. Issue the copies
    /// (with this barrier) after or before it, in the same phase.
    #[inline(always)]
    pub fn arrive_expect_tx(self, bytes: u32) {
        stubs::__oxide_stub_mbarrier_arrive_expect_tx(self.0, bytes)
    }

    /// Counts this thread's arrival, as [`arrive`](Self::arrive), and returns
    /// the phase it belongs to, which [`wait_for`](Self::wait_for) waits on:
    /// no parity to track by hand.
    #[inline(always)]
    pub fn arrive_token(self) -> Arrival {
        Arrival { barrier: self.0, state: stubs::__oxide_stub_mbarrier_arrive_token(self.0) }
    }

    /// [`arrive_expect_tx`](Self::arrive_expect_tx), returning the phase's
    /// token.
    #[inline(always)]
    pub fn arrive_expect_tx_token(self, bytes: u32) -> Arrival {
        Arrival { barrier: self.0, state: stubs::__oxide_stub_mbarrier_arrive_expect_tx_token(self.0, bytes) }
    }

    /// Waits until the phase `arrival` belongs to has completed (acquire
    /// semantics, as [`wait`](Self::wait)). The token is consumed: an arrival
    /// is waited for once, and only on the barrier it was made on (a token
    /// of another barrier is a panic, a trap on the GPU).
    #[inline(always)]
    pub fn wait_for(self, arrival: Arrival) {
        assert!(arrival.barrier == self.0, "mbarrier token waited for on another barrier");
        while stubs::__oxide_stub_mbarrier_try_wait_token(self.0, arrival.state) == 0 {}
    }

    /// Whether the phase of parity `parity` (0 or 1) has completed; the
    /// hardware may suspend the thread for a while before answering.
    #[inline(always)]
    pub fn try_wait(self, parity: u32) -> bool {
        stubs::__oxide_stub_mbarrier_try_wait_parity(self.0, parity) != 0
    }

    /// Waits until the phase of parity `parity` has completed (acquire
    /// semantics: the copies' bytes and the arrivers' writes are visible).
    #[inline(always)]
    pub fn wait(self, parity: u32) {
        stubs::__oxide_stub_mbarrier_wait_parity(self.0, parity)
    }
}
