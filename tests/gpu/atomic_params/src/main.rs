//! GPU test: atomics as kernel parameters. Device buffers of plain numbers
//! are passed as `&[AtomicU32]`, `&[AtomicF32]` and `&[Scoped<A, S>]`
//! (`buffer.as_atomic()`), one of them twice (two parameters naming the same
//! memory), and every thread of the grid updates them. The final contents,
//! and the values the fetch operations returned, are checked against the
//! same updates done on the CPU.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{scope, AtomicF32, Scoped};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 128;
const BLOCKS: usize = 6;
const BINS: usize = 16;

fn input(i: usize) -> u32 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32
}

#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn update(
    data: &[u32],
    bins: &[AtomicU32],
    same_bins: &[AtomicU32],
    totals: &[Scoped<AtomicU64, scope::Device>],
    per_block_max: &[Scoped<AtomicU32, scope::Block>],
    per_block_count: &[Scoped<AtomicU32, scope::Cluster>],
    float_sums: &[AtomicF32],
    flags: &[Scoped<AtomicU32, scope::System>],
    mut tickets: DisjointSlice<u32>,
) {
    let idx = thread::index_1d();
    let g = idx.get();
    let block = thread::blockIdx_x() as usize;
    let v = data[g];
    // Two parameters, one buffer: both count into the same bins.
    bins[v as usize % BINS].fetch_add(1, Relaxed);
    same_bins[(v as usize / 7) % BINS].fetch_add(1, Relaxed);
    totals[0].fetch_add(v as u64, Relaxed);
    totals[1].fetch_max(v as u64, Relaxed);
    totals[2].fetch_xor(v as u64, Relaxed);
    per_block_max[block].fetch_max(v, Relaxed);
    // Each thread of a block gets a distinct ticket 0..BLOCK.
    let ticket = per_block_count[block].fetch_add(1, Relaxed);
    // Small integers: every order of the additions gives the exact sum.
    float_sums[block % 2].fetch_add((v % 64) as f32, Relaxed);
    flags[0].fetch_or(1 << (v % 32), Relaxed);
    if let Some(slot) = tickets.get_mut(idx) {
        *slot = ticket;
    }
}

struct Expected {
    bins: Vec<u32>,
    totals: Vec<u64>,
    per_block_max: Vec<u32>,
    float_sums: Vec<f32>,
    flags: u32,
}

fn expected(data: &[u32]) -> Expected {
    let mut e = Expected {
        bins: vec![0; BINS],
        totals: vec![0, 0, 0],
        per_block_max: vec![0; BLOCKS],
        float_sums: vec![0.0; 2],
        flags: 0,
    };
    for (g, &v) in data.iter().enumerate() {
        e.bins[v as usize % BINS] += 1;
        e.bins[(v as usize / 7) % BINS] += 1;
        e.totals[0] += v as u64;
        e.totals[1] = e.totals[1].max(v as u64);
        e.totals[2] ^= v as u64;
        e.per_block_max[g / BLOCK] = e.per_block_max[g / BLOCK].max(v);
        e.float_sums[(g / BLOCK) % 2] += (v % 64) as f32;
        e.flags |= 1 << (v % 32);
    }
    e
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let n = BLOCK * BLOCKS;
    let data: Vec<u32> = (0..n).map(input).collect();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let dev = DeviceBuffer::from_host(&stream, &data)?;
    let mut bins = DeviceBuffer::<u32>::zeroed(&stream, BINS)?;
    let mut totals = DeviceBuffer::<u64>::zeroed(&stream, 3)?;
    let mut per_block_max = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS)?;
    let mut per_block_count = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS)?;
    let mut float_sums = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
    let mut flags = DeviceBuffer::<u32>::zeroed(&stream, 1)?;
    let mut tickets = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let module = load_kernel_module(&ctx, "atomic_params")?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    // One view of `bins`, passed twice: copies of an atomic view may alias.
    let bin_view = bins.as_atomic::<AtomicU32>();
    cuda_launch! {
        kernel: update, stream: stream, module: module, config: config,
        args: [
            slice(dev), bin_view, bin_view, totals.as_atomic(), per_block_max.as_atomic(),
            per_block_count.as_atomic(), float_sums.as_atomic(), flags.as_atomic(), slice_mut(tickets)
        ]
    }?;
    let e = expected(&data);
    let mut failures = Vec::new();
    let mut check = |what: &str, gpu: String, cpu: String| {
        if gpu != cpu {
            failures.push(format!("{what}: GPU {gpu} CPU {cpu}"));
        }
    };
    check("bins (two &[AtomicU32] parameters, one buffer)", format!("{:?}", bins.to_host_vec(&stream)?), format!("{:?}", e.bins));
    check("Device-scoped u64 add/max/xor", format!("{:?}", totals.to_host_vec(&stream)?), format!("{:?}", e.totals));
    check("Block-scoped u32 max", format!("{:?}", per_block_max.to_host_vec(&stream)?), format!("{:?}", e.per_block_max));
    check("Cluster-scoped u32 count", format!("{:?}", per_block_count.to_host_vec(&stream)?), format!("{:?}", vec![BLOCK as u32; BLOCKS]));
    check("AtomicF32 add", format!("{:?}", float_sums.to_host_vec(&stream)?), format!("{:?}", e.float_sums));
    check("System-scoped u32 or", format!("{:#x}", flags.to_host_vec(&stream)?[0]), format!("{:#x}", e.flags));
    let tickets = tickets.to_host_vec(&stream)?;
    for b in 0..BLOCKS {
        let mut got = tickets[b * BLOCK..(b + 1) * BLOCK].to_vec();
        got.sort_unstable();
        if got != (0..BLOCK as u32).collect::<Vec<_>>() {
            failures.push(format!("block {b}: the fetch_add tickets are not 0..{BLOCK} once each: {got:?}"));
        }
    }
    if failures.is_empty() { Ok(7) } else { Err(failures.join("\n").into()) }
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} atomic-parameter results matched the CPU ({} threads updating shared buffers)", BLOCK * BLOCKS);
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
