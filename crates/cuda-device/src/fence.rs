//! Memory fences at block, device and system scope.
//!
//! A fence orders this thread's memory accesses before it against those after
//! it, as seen by the threads of the scope (`__threadfence_block`,
//! `__threadfence`, `__threadfence_system`). `core::sync::atomic::fence` also
//! works on the GPU and has system scope.

use crate::stubs;

/// Orders memory accesses as seen by the threads of this block.
#[inline(always)]
pub fn block() {
    stubs::__oxide_stub_fence_block()
}

/// Orders memory accesses as seen by all threads of the GPU.
#[inline(always)]
pub fn device() {
    stubs::__oxide_stub_fence_device()
}

/// Orders memory accesses as seen by the GPU, other GPUs and the host.
#[inline(always)]
pub fn system() {
    stubs::__oxide_stub_fence_system()
}
