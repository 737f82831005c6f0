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

/// Asks L2 to fetch the bytes of `data`, in one request per 4 GiB (PTX
/// `cp.async.bulk.prefetch.L2`, sm_90 and newer): what a whole block will
/// read, asked for by one thread, where [`prefetch_l2`] takes one request
/// per line. The instruction takes 16-byte units, so only the 16-byte
/// aligned units wholly inside `data` are asked for; `data` outside global
/// memory (in shared memory) asks for nothing. A hint: the thread does not
/// wait for it and it changes no value. On the host, emulated or not, it
/// does nothing.
///
/// A kernel built for an older GPU too keeps the call behind a test of the
/// target, which the device linker folds ([`crate::arch`]):
///
/// ```
/// use cuda_device::{arch, cache};
///
/// fn ask_for(tile: &[f32]) {
///     if arch::compute_capability() >= 90 {
///         cache::prefetch_l2_bulk(tile);
///     } else {
///         for line in tile.chunks(32) {
///             cache::prefetch_l2(line.as_ptr());
///         }
///     }
/// }
/// # let _ = ask_for;
/// ```
#[inline(always)]
pub fn prefetch_l2_bulk<T>(data: &[T]) {
    let (start, bytes) = bulk_units(data.as_ptr() as u64, core::mem::size_of_val(data) as u64);
    let mut asked = 0;
    while asked < bytes {
        let request = (bytes - asked).min(MAX_BULK_REQUEST);
        stubs::__oxide_stub_prefetch_l2_bulk(start + asked, request as u32);
        asked += request;
    }
}

/// The most bytes one bulk request asks for: the largest multiple of 16
/// its 32-bit size holds.
const MAX_BULK_REQUEST: u64 = u32::MAX as u64 & !15;

/// The 16-byte units wholly inside `bytes` bytes at `address`: the first
/// unit's address and their bytes (0 when none is).
#[inline(always)]
fn bulk_units(address: u64, bytes: u64) -> (u64, u64) {
    let start = address.next_multiple_of(16);
    let end = (address + bytes) & !15;
    (start, end.saturating_sub(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_requests_stay_inside_the_data() {
        assert_eq!(bulk_units(0x1000, 4096), (0x1000, 4096));
        assert_eq!(bulk_units(0x1004, 4096), (0x1010, 4080));
        assert_eq!(bulk_units(0x1004, 28), (0x1010, 16));
        assert_eq!(bulk_units(0x1004, 27), (0x1010, 0));
        assert_eq!(bulk_units(0x1001, 8), (0x1010, 0));
        assert_eq!(bulk_units(0x1000, 0), (0x1000, 0));
        assert_eq!(MAX_BULK_REQUEST % 16, 0);
    }
}
