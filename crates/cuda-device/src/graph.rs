//! Setting the condition of a CUDA Graph conditional node from a kernel.
//!
//! A graph's IF node runs its body when its condition is nonzero, a WHILE
//! node runs its body again as long as the condition is nonzero. The
//! condition is a driver object named by a [`ConditionHandle`], which the
//! host makes with its graph (`cuda_core::Graph::condition`) and passes to a
//! kernel of the graph as an ordinary argument; the kernel sets it with
//! [`set_condition`]. On the host side, see `cuda_core::graph`.
//!
//! ```
//! use cuda_device::graph::{self, ConditionHandle};
//! use cuda_device::{kernel, thread};
//!
//! /// One step of a loop that runs until `counter` reaches `limit`: the body
//! /// of a WHILE node, launched with one block.
//! #[kernel]
//! pub fn count_up(counter: &mut [u32], limit: u32, keep_going: ConditionHandle) {
//!     if thread::index_1d().get() == 0 {
//!         counter[0] += 1;
//!         // SAFETY: one thread of the one launch that sets `keep_going`,
//!         // a node of the graph whose WHILE node the handle belongs to.
//!         unsafe { graph::set_condition(keep_going, (counter[0] < limit) as u32) };
//!     }
//! }
//! ```
//!
//! # Why `set_condition` is `unsafe`
//!
//! CUDA documents concurrent calls of `cudaGraphSetConditional` for one
//! handle as undefined behaviour, and the handle only means something to the
//! driver inside a launch of the graph it was made for. Neither can be
//! checked where the call is compiled: which threads call it is a run-time
//! property of the kernel, and a handle is a plain value that can be passed
//! to any launch. So the call is `unsafe`, and its contract says what the
//! caller guarantees. A safe form that elects one thread
//! ([`set_condition_from_first_thread`]) removes the race inside one launch
//! but cannot know about other kernels setting the same handle, nor whether
//! the launch is a graph node, so it is `unsafe` too, with the smaller
//! contract. Forging a handle from a number is `unsafe`
//! ([`ConditionHandle::from_raw`]): a safe program only has the handles its
//! graphs made.

use crate::stubs;

/// The condition of a graph's conditional node, as a kernel receives it:
/// `Copy`, 8 bytes, passed as a kernel argument.
///
/// Only the host's graph API makes one (or [`from_raw`](Self::from_raw),
/// which is `unsafe`): it implements neither `Default` nor the traits that
/// let device buffers hold it, so safe code cannot produce one from bytes.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConditionHandle {
    raw: u64,
}

impl ConditionHandle {
    /// A handle from the driver's `CUgraphConditionalHandle`.
    ///
    /// # Safety
    /// `raw` must have been returned by `cuGraphConditionalHandleCreate`
    /// (on the GPU, or by the CPU emulator in an emulated program) for a
    /// graph that lives as long as any kernel that receives the handle may
    /// use it.
    pub const unsafe fn from_raw(raw: u64) -> ConditionHandle {
        ConditionHandle { raw }
    }

    /// The driver's `CUgraphConditionalHandle`.
    pub const fn raw(self) -> u64 {
        self.raw
    }
}

/// Sets the condition `handle` names to `value` (`cudaGraphSetConditional`):
/// an IF node after this kernel runs its body when the value is nonzero, a
/// WHILE node whose body this kernel is part of runs the body again when it
/// is nonzero.
///
/// # Safety
/// - No other call for the same handle may run at the same time: exactly
///   one thread of the launch calls it (or the calls are ordered, e.g. by a
///   barrier between them), and no kernel that may run concurrently in the
///   same graph sets the same handle.
/// - The kernel runs as a node of a launch of the graph the handle was made
///   for (before the conditional node that reads it, or in that node's body),
///   on the handle's context.
pub unsafe fn set_condition(handle: ConditionHandle, value: u32) {
    stubs::__oxide_stub_graph_set_conditional(handle.raw, value);
}

/// [`set_condition`] called by the launch's first thread (thread 0 of block
/// 0) only, so that the calls of one launch cannot race; the other threads
/// do nothing. `value` is the first thread's.
///
/// # Safety
/// - No kernel that may run concurrently in the same graph sets the same
///   handle.
/// - The kernel runs as a node of a launch of the graph the handle was made
///   for, on the handle's context (as for [`set_condition`]).
pub unsafe fn set_condition_from_first_thread(handle: ConditionHandle, value: u32) {
    use crate::thread::{blockIdx_x, blockIdx_y, blockIdx_z, block_linear_index};
    let first = block_linear_index() == 0 && blockIdx_x() == 0 && blockIdx_y() == 0 && blockIdx_z() == 0;
    if first {
        // SAFETY: one thread of the launch calls it; the rest is the caller's.
        unsafe { set_condition(handle, value) };
    }
}
