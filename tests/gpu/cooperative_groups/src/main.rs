//! GPU test: cooperative groups.
//!
//! - Thread-block tiles of 1, 2, 4, 8, 16 and 32 threads: rank, sync,
//!   shuffles (by rank, up, down, xor), ballot, reduce and scan, in blocks of
//!   112 threads, whose last warp is short (16 lanes), checked against the
//!   same rules on the CPU.
//! - Grid-wide sync in a cooperative launch: rounds in which every thread
//!   reads another block's cell, syncs the grid, writes its own cell and
//!   syncs again; the cells must hold what a sequential run gives.
//! - The refusals that make grid sync safe: a grid larger than the device
//!   holds at once, and a `GridGroup` kernel launched without
//!   `.cooperative()`.
//!
//! The CPU emulator runs it all too: it keeps every block of a cooperative
//! grid running at once.

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::cooperative::{tiled_partition, GridGroup, Tile};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::arg::{grid, GridBarrier};
use cuda_host::{cuda_launch, load_kernel_module, HostError};
use std::process::ExitCode;

const BLOCK: usize = 112;
const BLOCKS: usize = 3;
const SIZES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Results per tile size.
const PER_TILE: usize = 9;
const OUTS: usize = SIZES.len() * PER_TILE;
const ROUNDS: usize = 4;

fn input(i: usize) -> u32 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44) as u32
}

#[inline(always)]
fn tile_results<const N: u32>(v: u32, r: &mut [u64]) {
    let tile: Tile<N> = tiled_partition::<N>();
    let rank = tile.thread_rank();
    tile.sync();
    r[0] = rank as u64 | (tile.meta_group_rank() as u64) << 8 | (tile.num_threads() as u64) << 32;
    r[1] = tile.shfl(v, rank + 1) as u64;
    r[2] = tile.shfl_up(v, 1) as u64;
    r[3] = tile.shfl_down(v, 2) as u64;
    r[4] = tile.shfl_xor(v, 1) as u64;
    r[5] = tile.ballot(v % 3 == 0) as u64;
    r[6] = tile.reduce(v, |a, b| a.wrapping_add(b)) as u64;
    r[7] = tile.reduce(v, |a, b| a.max(b)) as u64;
    r[8] = tile.inclusive_scan(v, |a, b| a.wrapping_add(b)) as u64;
}

#[kernel]
pub fn tiles(data: &[u32], mut out: DisjointSlice<u64>) {
    let g = thread::index_1d().get();
    let v = data[g];
    let mut r = [0u64; OUTS];
    tile_results::<1>(v, &mut r[0..PER_TILE]);
    tile_results::<2>(v, &mut r[PER_TILE..2 * PER_TILE]);
    tile_results::<4>(v, &mut r[2 * PER_TILE..3 * PER_TILE]);
    tile_results::<8>(v, &mut r[3 * PER_TILE..4 * PER_TILE]);
    tile_results::<16>(v, &mut r[4 * PER_TILE..5 * PER_TILE]);
    tile_results::<32>(v, &mut r[5 * PER_TILE..6 * PER_TILE]);
    for (k, value) in r.iter().enumerate() {
        // SAFETY: thread g alone writes elements g*OUTS .. g*OUTS+OUTS.
        unsafe { *out.get_unchecked_mut(g * OUTS + k) = *value };
    }
}

/// The tile results on the CPU. Thread `t` of a block is lane `t % 32` of
/// warp `t / 32`; the block's last warp has `BLOCK % 32` lanes.
fn expected_tiles(data: &[u32]) -> Vec<u64> {
    let mut out = vec![0u64; data.len() * OUTS];
    for g in 0..data.len() {
        let t = g % BLOCK;
        let warp_start = t / 32 * 32;
        let warp_lanes = (BLOCK - warp_start).min(32);
        let lane = t % 32;
        for (s, &n) in SIZES.iter().enumerate() {
            let n = n as usize;
            let base = lane / n * n;
            // The ranks of the tile that exist.
            let present = (warp_lanes.saturating_sub(base)).min(n);
            let rank = lane - base;
            let at = |rk: usize| data[g - t + warp_start + base + rk];
            let v = data[g];
            let own_or = |rk: usize| if rk < present { at(rk) } else { v };
            let r = &mut out[g * OUTS + s * PER_TILE..g * OUTS + (s + 1) * PER_TILE];
            r[0] = rank as u64 | ((t / n) as u64) << 8 | (present as u64) << 32;
            r[1] = own_or((rank + 1) % n) as u64;
            r[2] = if rank >= 1 { at(rank - 1) } else { v } as u64;
            r[3] = own_or(rank + 2) as u64;
            r[4] = own_or(rank ^ (1 % n)) as u64;
            r[5] = (0..present).filter(|&k| at(k) % 3 == 0).map(|k| 1u64 << k).sum();
            r[6] = (0..present).map(at).fold(0u32, u32::wrapping_add) as u64;
            r[7] = (0..present).map(at).max().unwrap() as u64;
            r[8] = (0..=rank).map(at).fold(0u32, u32::wrapping_add) as u64;
        }
    }
    out
}

/// Iterations of busy work block 0 does before each read: long enough that,
/// without the grid barrier, the other blocks would write before it reads.
const SKEW: u32 = 20_000;

/// A hash chain that no compiler shortens: `steps` rounds from `seed`.
fn busy(seed: u32, steps: u32) -> u32 {
    let mut h = seed;
    for _ in 0..steps {
        h = h.wrapping_mul(0x9E37_79B1).rotate_left(5) ^ 0x5bd1_e995;
    }
    h
}

/// Rounds of read-another-block, sync, write-own, sync. Block 0 is slow to
/// read, so a barrier that does not hold shows as wrong cells.
#[kernel]
pub fn grid_rounds(grid: GridGroup, cells: &[AtomicU32]) {
    let n = cells.len();
    let g = grid.thread_rank() as usize;
    let stride = thread::block_size() + 1;
    let skew = if grid.block_rank() == 0 { SKEW } else { 0 };
    for round in 0..ROUNDS {
        let work = busy(g as u32 ^ round as u32, skew);
        let seen = cells[(g + stride * (round + 1)) % n].load(Relaxed);
        grid.sync();
        cells[g].store(seen.wrapping_mul(3).wrapping_add(work), Relaxed);
        grid.sync();
    }
}

fn expected_rounds(n: usize, block: usize) -> Vec<u32> {
    let mut cells: Vec<u32> = (0..n as u32).collect();
    let stride = block + 1;
    for round in 0..ROUNDS {
        let seen: Vec<u32> = (0..n).map(|g| cells[(g + stride * (round + 1)) % n]).collect();
        for g in 0..n {
            let skew = if g < block { SKEW } else { 0 };
            cells[g] = seen[g].wrapping_mul(3).wrapping_add(busy(g as u32 ^ round as u32, skew));
        }
    }
    cells
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "cooperative_groups")?;
    let mut failures = Vec::new();

    // Tiles.
    let n = BLOCK * BLOCKS;
    let data: Vec<u32> = (0..n).map(input).collect();
    let dev = DeviceBuffer::from_host(&stream, &data)?;
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, n * OUTS)?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! { kernel: tiles, stream: stream, module: module, config: config, args: [slice(dev), slice_mut(out)] }?;
    let gpu = out.to_host_vec(&stream)?;
    let cpu = expected_tiles(&data);
    const NAMES: [&str; PER_TILE] =
        ["rank/meta rank/size", "shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot", "reduce +", "reduce max", "scan"];
    for k in 0..OUTS {
        if let Some(g) = (0..n).find(|&g| gpu[g * OUTS + k] != cpu[g * OUTS + k]) {
            failures.push(format!(
                "tile of {}: {}: thread {} of block {}: GPU {:#x} CPU {:#x}",
                SIZES[k / PER_TILE], NAMES[k % PER_TILE], g % BLOCK, g / BLOCK, gpu[g * OUTS + k], cpu[g * OUTS + k]
            ));
        }
    }

    // Grid sync.
    let sms = ctx.multiprocessor_count()?;
    let block = 128u32;
    let blocks = 2 * sms;
    let cells_n = (blocks * block) as usize;
    let mut cells = DeviceBuffer::from_host(&stream, &(0..cells_n as u32).collect::<Vec<_>>())?;
    let mut barrier = GridBarrier::new(&stream)?;
    let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 };

    // Not cooperative: refused before the launch.
    let view = cells.as_atomic::<AtomicU32>();
    match cuda_launch! { kernel: grid_rounds, stream: stream, module: module, config: config, args: [grid(&mut barrier), view] } {
        Err(HostError::NotCooperative { .. }) => {}
        other => failures.push(format!("a GridGroup launch without .cooperative() was not refused: {other:?}")),
    }
    // Larger than the device holds at once: refused, saying how many fit.
    let huge = LaunchConfig { grid_dim: (sms * 64 + 1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    match cuda_launch! { kernel: grid_rounds, stream: stream, module: module, config: huge.cooperative(), args: [grid(&mut barrier), view] } {
        Err(e) if e.to_string().contains("runs at most") && e.to_string().contains("a grid-wide sync needs every block running") => {}
        other => failures.push(format!("a cooperative grid too large to be resident was not refused: {other:?}")),
    }
    cuda_launch! {
        kernel: grid_rounds, stream: stream, module: module, config: config.cooperative(), args: [grid(&mut barrier), view]
    }?;
    let got = cells.to_host_vec(&stream)?;
    let want = expected_rounds(cells_n, block as usize);
    if let Some(i) = (0..cells_n).find(|&i| got[i] != want[i]) {
        failures.push(format!("grid sync: cell {i}: GPU {} CPU {}", got[i], want[i]));
    }
    if failures.is_empty() {
        Ok(format!("tiles of 1..32 threads, the two refusals, {ROUNDS} rounds of grid sync over {blocks} blocks"))
    } else {
        Err(failures.join("\n").into())
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: cooperative groups matched the CPU: {what}");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
