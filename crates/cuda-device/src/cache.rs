//! Cache hints: requests that change when data moves between DRAM and the
//! caches, never what a load returns.
//!
//! A kernel whose blocks wait on one another (a decoupled look-back, a
//! pipeline) can ask L2 for data a later block will load, so that DRAM keeps
//! working while the waiting blocks issue nothing:
//!
//! ```
//! use cuda_device::{cache, thread};
//!
//! /// Each thread asks for the 128-byte line it will read `ahead` blocks on.
//! fn prefetch_ahead(data: &[u32], ahead: usize) {
//!     let per_block = thread::blockDim_x() as usize * 32;
//!     let first = (thread::blockIdx_x() as usize + ahead) * per_block + thread::threadIdx_x() as usize * 32;
//!     if first < data.len() {
//!         cache::prefetch_l2(data[first..].as_ptr());
//!     }
//! }
//! # let _ = prefetch_ahead;
//! ```

use crate::stubs;

/// Asks L2 to fetch the line that holds `address` (PTX `prefetch.L2`,
/// generic addressing). A hint: the thread does not wait for it and it
/// changes no value; keep `address` inside memory the kernel may read, as
/// for a load. On the host, emulated or not, it does nothing.
#[inline(always)]
pub fn prefetch_l2<T>(address: *const T) {
    stubs::__oxide_stub_prefetch_l2(address as u64)
}
