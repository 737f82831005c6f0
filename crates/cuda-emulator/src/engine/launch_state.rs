//! What the workers of one launch share: the launch itself, the next block
//! to run, and the first fault.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::kernel::{Fault, Grid, HostKernel};

/// What every worker of one launch shares.
pub(super) struct LaunchState<'a> {
    pub(super) grid: Grid,
    pub(super) kernel: &'a HostKernel,
    pub(super) params: *const *mut c_void,
    next_block: AtomicUsize,
    blocks: usize,
    failed: AtomicBool,
    fault: Mutex<Option<Fault>>,
}

// SAFETY: `params` points to argument bytes that the launch only reads
// (each emulated thread copies them, as the GPU does).
unsafe impl Sync for LaunchState<'_> {}

impl<'a> LaunchState<'a> {
    pub(super) fn new(grid: Grid, kernel: &'a HostKernel, params: *const *mut c_void, blocks: usize) -> Self {
        LaunchState {
            grid,
            kernel,
            params,
            next_block: AtomicUsize::new(0),
            blocks,
            failed: AtomicBool::new(false),
            fault: Mutex::new(None),
        }
    }

    /// The linear index of the next block to run, if any is left.
    pub(super) fn take_block(&self) -> Option<usize> {
        let b = self.next_block.fetch_add(1, Ordering::Relaxed);
        (b < self.blocks).then_some(b)
    }

    /// Records `fault` (the first one wins) and stops the launch.
    pub(super) fn fail(&self, fault: Fault) {
        let mut slot = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(fault);
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Whether some block has failed: the others stop, like the GPU's.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether some block of the launch has not been taken by a worker yet.
    pub(super) fn blocks_waiting(&self) -> bool {
        self.next_block.load(Ordering::Relaxed) < self.blocks
    }

    /// The launch's fault, once every worker is done.
    pub(super) fn into_fault(self) -> Option<Fault> {
        self.fault.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

