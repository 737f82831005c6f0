//! Run-length encoding ([`run_length_encode`]): the first value of each run
//! of equal consecutive values, the run's length, and the number of runs.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_prims::rle::run_length_encode;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = cuda_host::load_kernel_module(&ctx, "my_program")?;
//! let input = DeviceBuffer::from_host(&stream, &[7u32, 7, 2, 7, 7, 7])?;
//! // Outputs as long as the input: at most that many runs.
//! let mut unique = DeviceBuffer::<u32>::zeroed(&stream, 6)?;
//! let mut counts = DeviceBuffer::<u32>::zeroed(&stream, 6)?;
//! let mut runs = DeviceBuffer::<u32>::zeroed(&stream, 1)?;
//! run_length_encode(&module, &stream, &input, &mut unique, &mut counts, &mut runs)?;
//! let n = runs.to_host_vec(&stream)?[0] as usize;
//! assert_eq!(&unique.to_host_vec(&stream)?[..n], [7, 2, 7]);
//! assert_eq!(&counts.to_host_vec(&stream)?[..n], [2, 1, 3]);
//! # Ok(())
//! # }
//! ```
//!
//! Values are compared with `==`, as CUB's `DeviceRunLengthEncode::Encode`
//! does: `-0.0` continues a run of `0.0` (the run keeps its first value's
//! bits), and every NaN is a run of its own. The number of runs is written
//! to device memory (`runs[0]`), so the call never waits for the GPU;
//! entries of `unique` and `counts` past it are left as they were.
//!
//! Three launches: each tile counts its run heads (values unlike their
//! predecessor); one block scans the tile counts (and writes the number of
//! runs); each tile ranks its heads with a block-wide scan and writes each
//! run's first value and start; a last launch turns starts into lengths.

use crate::sort::{block_exclusive_sum, shared_ptr};
use crate::temp;
use crate::PrimsError;
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Threads per block (the block scan of the sort module takes 256).
const THREADS: usize = 256;
/// Consecutive values per thread.
const ITEMS: usize = 8;
/// Values per tile.
const TILE: usize = THREADS * ITEMS;

/// Whether `input[i]` starts a run.
#[inline(always)]
fn is_head<T: PartialEq>(input: &[T], i: usize) -> bool {
    i == 0 || input[i] != input[i - 1]
}

/// `heads[t]` = the run heads in tile `t`. Launch with one block of
/// `THREADS` threads per tile.
#[kernel]
pub fn rle_count_heads<T: PartialEq + Copy>(input: &[T], mut heads: DisjointSlice<u32>) {
    shared! { static TOTALS: [u64; THREADS / 32]; }
    let tid = thread::threadIdx_x() as usize;
    let tile = thread::blockIdx_x() as usize;
    let mut count = 0u64;
    let mut i = tile * TILE + tid;
    let end = (tile * TILE + TILE).min(input.len());
    while i < end {
        count += is_head(input, i) as u64;
        i += THREADS;
    }
    // SAFETY: TOTALS is this call's scratch; every thread calls it.
    let before = unsafe { block_exclusive_sum(count, shared_ptr(TOTALS.as_mut_ptr())) };
    if tid == THREADS - 1 {
        // SAFETY: one writer per tile; tile < heads.len() (one block per tile).
        unsafe { *heads.get_unchecked_mut(tile) = (before + count) as u32 };
    }
}

/// Exclusive sum of `heads` in place, and the total into `runs[0]`. Launch
/// with one block of `THREADS` threads.
#[kernel]
pub fn rle_scan_tiles(mut heads: DisjointSlice<u32>, mut runs: DisjointSlice<u32>) {
    shared! { static TOTALS: [u64; THREADS / 32]; }
    shared! { static CHUNK_TOTAL: [u64; 1]; }
    let tid = thread::threadIdx_x() as usize;
    let n = heads.len();
    let p = heads.as_mut_ptr();
    let mut carry = 0u64;
    let mut base = 0;
    while base < n {
        let i = base + tid;
        // SAFETY: i < n; each thread reads and writes only element i.
        let x = if i < n { unsafe { *p.add(i) as u64 } } else { 0 };
        // SAFETY: as in rle_count_heads.
        let before = unsafe { block_exclusive_sum(x, shared_ptr(TOTALS.as_mut_ptr())) };
        if i < n {
            unsafe { *p.add(i) = (carry + before) as u32 };
        }
        // The chunk's total, from the last thread to all.
        let total = shared_ptr(CHUNK_TOTAL.as_mut_ptr());
        if tid == THREADS - 1 {
            unsafe { *total = before + x };
        }
        thread::sync_threads();
        carry += unsafe { *total };
        thread::sync_threads();
        base += THREADS;
    }
    if tid == THREADS - 1 {
        // SAFETY: runs has one element, written by this thread alone.
        unsafe { *runs.get_unchecked_mut(0) = carry as u32 };
    }
}

/// Writes each run's first value to `unique[r]` and its start to
/// `starts[r]`, `r` its rank among the runs. Launch with one block of
/// `THREADS` threads per tile, after [`rle_scan_tiles`].
#[kernel]
pub fn rle_write_heads<T: PartialEq + Copy>(
    input: &[T],
    tile_runs: &[u32],
    mut unique: DisjointSlice<T>,
    mut starts: DisjointSlice<u32>,
) {
    shared! { static TOTALS: [u64; THREADS / 32]; }
    let tid = thread::threadIdx_x() as usize;
    let tile = thread::blockIdx_x() as usize;
    let n = input.len();
    // Thread tid takes ITEMS consecutive values, so heads are ranked in order.
    let first = tile * TILE + tid * ITEMS;
    let mut heads = [false; ITEMS];
    let mut count = 0u64;
    for k in 0..ITEMS {
        let i = first + k;
        heads[k] = i < n && is_head(input, i);
        count = count.wrapping_add(heads[k] as u64);
    }
    // SAFETY: as in rle_count_heads.
    let mut rank = tile_runs[tile] as u64 + unsafe { block_exclusive_sum(count, shared_ptr(TOTALS.as_mut_ptr())) };
    let (u, s) = (unique.as_mut_ptr(), starts.as_mut_ptr());
    for k in 0..ITEMS {
        if heads[k] {
            // SAFETY: ranks of heads are distinct and below the number of
            // runs <= n = unique.len() = starts.len() (the host checks).
            unsafe {
                *u.add(rank as usize) = input[first + k];
                *s.add(rank as usize) = (first + k) as u32;
            }
            rank = rank.wrapping_add(1);
        }
    }
}

/// `counts[r]` = `starts[r + 1] - starts[r]` (the last run ends at the
/// input's end `n`). Launch with a thread per possible run.
#[kernel]
pub fn rle_lengths(starts: &[u32], runs: &[u32], n: u32, mut counts: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let r = idx.get();
    let total = runs[0] as usize;
    if r < total {
        let end = if r + 1 < total { starts[r + 1] } else { n };
        if let Some(c) = counts.get_mut(idx) {
            *c = end - starts[r];
        }
    }
}

/// Encodes `input` into runs: `unique[r]` the first value of run `r`,
/// `counts[r]` its length, `runs[0]` the number of runs. `unique` and
/// `counts` have the input's length, `runs` one element. Runs on `stream`.
pub fn run_length_encode<T: PartialEq + DeviceRepr>(
    module: &KernelModule,
    stream: &CudaStream,
    input: &DeviceBuffer<T>,
    unique: &mut DeviceBuffer<T>,
    counts: &mut DeviceBuffer<u32>,
    runs: &mut DeviceBuffer<u32>,
) -> Result<(), PrimsError> {
    let n = input.len();
    for (what, expected, found) in [("unique", n, unique.len()), ("counts", n, counts.len()), ("runs", 1, runs.len())] {
        if found != expected {
            return Err(PrimsError::LengthMismatch { what, expected, found });
        }
    }
    if n > u32::MAX as usize {
        return Err(PrimsError::TooLarge { what: "run_length_encode", len: n, max: crate::sort::MAX_LEN });
    }
    if n == 0 {
        runs.memset(stream, 0)?;
        return Ok(());
    }
    let tiles = n.div_ceil(TILE);
    let mut tile_runs = temp::zeroed::<u32>(stream, tiles)?;
    // Scratch (written before read, as `temp::scratch` requires):
    // rle_write_heads writes a start for every run before rle_lengths reads
    // the starts of runs below the count.
    let mut starts = temp::scratch::<u32>(stream, n)?;
    let block = (THREADS as u32, 1, 1);
    let per_tile = LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: block, shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: rle_count_heads::<T>, stream: stream, module: module, config: per_tile,
        args: [slice(*input), slice_mut(tile_runs)]
    }?;
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: block, shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: rle_scan_tiles, stream: stream, module: module, config: one,
        args: [slice_mut(tile_runs), slice_mut(*runs)]
    }?;
    cuda_launch! {
        kernel: rle_write_heads::<T>, stream: stream, module: module, config: per_tile,
        args: [slice(*input), slice(tile_runs), slice_mut(*unique), slice_mut(starts)]
    }?;
    let n32 = n as u32;
    cuda_launch! {
        kernel: rle_lengths, stream: stream, module: module, config: LaunchConfig::for_num_elems(n32),
        args: [slice(starts), slice(*runs), n32, slice_mut(*counts)]
    }?;
    Ok(())
}

/// The CPU's run-length encoding by the same rule, for checks.
pub fn run_length_encode_on_cpu<T: PartialEq + Copy>(input: &[T]) -> (Vec<T>, Vec<u32>) {
    let (mut unique, mut counts) = (Vec::new(), Vec::<u32>::new());
    for (i, &x) in input.iter().enumerate() {
        if i == 0 || x != input[i - 1] {
            unique.push(x);
            counts.push(1);
        } else {
            *counts.last_mut().expect("a run is open") += 1;
        }
    }
    (unique, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_reference_follows_equality() {
        let (u, c) = run_length_encode_on_cpu(&[0.0f32, -0.0, f32::NAN, f32::NAN, 1.0]);
        assert_eq!(c, [2, 1, 1, 1]);
        assert_eq!(u[0].to_bits(), 0);
        assert!(run_length_encode_on_cpu::<u32>(&[]).0.is_empty());
    }
}
