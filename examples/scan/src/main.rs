//! scan: block-wide inclusive prefix sums of 2^24 + 777 `u32`s, 1024 threads
//! per block.
//!
//! Every block scans its own 1024 elements independently: element `i` of the
//! output is the sum of the elements from the start of *its block* up to and
//! including `i`; nothing is carried from one block to the next (a full-array
//! scan would add each block's total to the following blocks in a second
//! pass). The array does not fill its last block, so that block is partial.
//!
//! The algorithm, per block (32 warps of 32 threads, one element per thread):
//! 1. Each warp scans its 32 values with five `shfl_up` steps (Hillis–Steele:
//!    at step `d` = 1, 2, 4, 8, 16 a lane adds the running sum of the lane `d`
//!    below it), so lane 31 ends up holding the warp's total.
//! 2. Every thread stages its running sum in shared memory; after one block
//!    barrier, slot `32·w + 31` holds the total of warp `w`.
//! 3. Each warp reads the 32 warp totals (one per lane), scans them with the
//!    same five shuffles, and takes from lane `w - 1` the sum of all warps
//!    before its own. Every warp does this redundantly, which is cheaper than
//!    letting one warp do it and waiting at a second barrier.
//! 4. A thread's result is its running sum within the warp plus that offset.
//!
//! Sums wrap modulo 2^32 (`wrapping_add`, on the GPU and on the CPU), so the
//! inputs may be any `u32` and the GPU result must equal the CPU's exactly.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{device, kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Threads per block, and elements scanned together.
const BLOCK: usize = 1024;
/// Elements in the array: many full blocks and one partial block.
const N: usize = (1 << 24) + 777;
/// The size on the CPU emulator (`--emulate`): 65 blocks, the last partial.
const N_EMULATED: usize = (1 << 16) + 777;

/// The inclusive prefix sum of `x` over the lanes of a full warp: lane `l`
/// gets `x(0) + … + x(l)` (modulo 2^32).
#[device]
fn warp_inclusive_scan(x: u32) -> u32 {
    let lane = warp::lane_id();
    let mut sum = x;
    let mut delta = 1;
    while delta < warp::WARP_SIZE {
        // Every lane takes part in the shuffle; only lanes with a lane
        // `delta` below them add what they received.
        let below = warp::shfl_up(warp::FULL_MASK, sum, delta);
        if lane >= delta {
            sum = sum.wrapping_add(below);
        }
        delta *= 2;
    }
    sum
}

/// `out[i]` = the sum of `input[b .. i + 1]`, where `b` is the first index of
/// `i`'s block of [`BLOCK`] elements. Launch with `BLOCK` threads per block
/// and `ceil(len / BLOCK)` blocks.
#[kernel]
pub fn block_scan(input: &[u32], mut out: DisjointSlice<u32>) {
    shared! { static RUNNING: [u32; BLOCK]; }
    let idx = thread::index_1d();
    let warp_index = thread::warp_id();
    // Threads past the end of the array still take part (every thread must
    // reach the barriers and shuffles); they contribute 0.
    let x = input.get(idx.get()).copied().unwrap_or(0);

    // 1. Scan within the warp.
    let in_warp = warp_inclusive_scan(x);

    // 2. Publish the running sums; slot 32·w + 31 is warp w's total.
    let running = RUNNING.stage(in_warp).sync();
    let warps = (thread::block_size() / 32) as u32;
    let lane = warp::lane_id();
    let warp_total = if lane < warps { running.get(lane as usize * 32 + 31) } else { 0 };
    running.done();

    // 3. Scan the warp totals; lane w - 1 holds the sum of warps 0 ..= w - 1.
    let totals_scanned = warp_inclusive_scan(warp_total);
    // (All lanes shuffle; warp 0 has no warps before it and discards the value.)
    let before = warp::shfl_idx(warp::FULL_MASK, totals_scanned, warp_index.saturating_sub(1));
    let offset = if warp_index == 0 { 0 } else { before };

    // 4. This thread's block-wide inclusive sum.
    if let Some(o) = out.get_mut(idx) {
        *o = in_warp.wrapping_add(offset);
    }
}

/// The same computation on the CPU: each chunk of `BLOCK` scanned on its own.
fn cpu_block_scan(input: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(input.len());
    for block in input.chunks(BLOCK) {
        let mut sum = 0u32;
        for &x in block {
            sum = sum.wrapping_add(x);
            out.push(sum);
        }
    }
    out
}

fn run() -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let n = if cuda_core::emulator::is_active() { N_EMULATED } else { N };
    // Deterministic pseudo-random data over the whole u32 range (xorshift64).
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let host: Vec<u32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u32
        })
        .collect();
    let cpu = cpu_block_scan(&host);

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &host)?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let module = load_kernel_module(&ctx, "scan")?;
    let config = LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK) as u32, 1, 1),
        block_dim: (BLOCK as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    cuda_launch! {
        kernel: block_scan, stream: stream, module: module, config: config,
        args: [slice(input), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    if let Some(i) = (0..n).find(|&i| gpu[i] != cpu[i]) {
        return Err(format!(
            "element {i} (block {}, thread {}): GPU {} vs CPU {}",
            i / BLOCK,
            i % BLOCK,
            gpu[i],
            cpu[i]
        )
        .into());
    }
    Ok((n, n.div_ceil(BLOCK)))
}

fn main() -> ExitCode {
    match run() {
        Ok((n, blocks)) => {
            println!(
                "✓ SUCCESS: {n} u32s scanned in {blocks} independent blocks of {BLOCK} \
                 (the last one partial), all equal to the CPU's"
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
