//! GPU test: mbarrier arrival tokens (`MBarrier::arrive_token` /
//! `wait_for`), the barrier's phases tracked by the tokens instead of a
//! parity counted by hand. Each block runs ROUNDS rounds over one mbarrier
//! that expects all its threads: every thread writes its value into shared
//! memory, arrives and waits for its token (the writes are then visible),
//! reads another thread's value, and arrives and waits again before the next
//! round overwrites it: 2·ROUNDS phases, alternating parity. A missing or
//! early completion would read a stale or a next-round value; each thread's
//! result is checked against the same rounds on the CPU.
//!
//! A second kernel runs the rounds across the two blocks of a cluster
//! (`MBarrier::arrive_cluster`): each thread writes its value into the other
//! block's shared memory and arrives on that block's "full" barrier; once
//! its own "full" phase completes it reads a value the other block wrote and
//! arrives on the other block's "empty" barrier, which the writers wait on
//! before the next round overwrites what was read. An arrival on the wrong
//! block, or a phase completing early, reads a stale or a next-round value.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, MBarrier};
use cuda_device::{cluster, kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 256;
const BLOCKS: usize = 6;
const ROUNDS: u32 = 7;

/// Thread `t`'s value in round `round`, from what it holds.
fn step(held: u32, t: u32, round: u32) -> u32 {
    held.wrapping_mul(0x9E37_79B1).rotate_left(round + 3) ^ (t << 8) ^ round
}

/// Whose value thread `t` reads in round `round`.
fn partner(t: usize, round: u32) -> usize {
    (t * 37 + 11 + round as usize * 5) % BLOCK
}

#[kernel]
pub fn rounds(seeds: &[u32], mut out: DisjointSlice<u32>) {
    shared! {
        static VALUES: [u32; BLOCK];
        static BAR: [u64; 1];
    }
    let t = thread::threadIdx_x() as usize;
    let i = thread::index_1d();
    // SAFETY: BAR is a shared u64 used only as this mbarrier; thread 0
    // initialises it before the block barrier publishes it.
    let bar = unsafe { MBarrier::at(BAR.as_mut_ptr()) };
    if t == 0 {
        unsafe { bar.init(BLOCK as u32) };
        mbarrier::fence_init();
    }
    thread::sync_threads();
    let mut held = seeds[i.get()];
    for round in 0..ROUNDS {
        // SAFETY: slot t is this thread's; the others read it only after the
        // phase below completes, and it is rewritten only after the next one.
        unsafe { VALUES.write(t, step(held, t as u32, round)) };
        bar.wait_for(bar.arrive_token());
        // SAFETY: written before the completed phase; not rewritten until
        // every thread has arrived below.
        held ^= unsafe { VALUES.read(partner(t, round)) };
        bar.wait_for(bar.arrive_token());
    }
    if let Some(o) = out.get_mut(i) {
        *o = held;
    }
}

/// The rounds between the two blocks of each cluster (module docs).
#[kernel(cluster_dims(2, 1, 1))]
pub fn pair_rounds(seeds: &[u32], mut out: DisjointSlice<u32>) {
    shared! {
        static INBOX: [u32; BLOCK];
        static BARS: [u64; 2];
    }
    let t = thread::threadIdx_x() as usize;
    let i = thread::index_1d();
    // SAFETY (both): shared words used only as these barriers; thread 0
    // initialises them before the cluster barrier publishes them to both
    // blocks.
    let full = unsafe { MBarrier::at(BARS.as_mut_ptr()) };
    let empty = unsafe { MBarrier::at(BARS.as_mut_ptr().add(1)) };
    if t == 0 {
        unsafe {
            full.init(BLOCK as u32);
            empty.init(BLOCK as u32);
        }
        mbarrier::fence_init();
    }
    cluster::sync();
    let other = 1 - cluster::ctarank();
    let inbox = cluster::map(&INBOX, other);
    let mut held = seeds[i.get()];
    for round in 0..ROUNDS {
        if round > 0 {
            // The other block has read what this block wrote last round.
            empty.wait((round - 1) & 1);
        }
        // SAFETY: slot t of the other block's inbox is this thread's; the
        // other block reads it only after its `full` phase below, and it is
        // rewritten only after that block's `empty` arrivals.
        unsafe { inbox.write(t, step(held, t as u32, round)) };
        // SAFETY: rank `other` is in this cluster of two; both blocks
        // initialised their barriers before the first cluster barrier and
        // leave only after the last.
        unsafe { full.arrive_cluster(other) };
        full.wait(round & 1);
        // SAFETY: written by the other block before its arrivals, which
        // completed this phase; not rewritten before this block's `empty`
        // arrivals below.
        held ^= unsafe { INBOX.read(partner(t, round)) };
        // SAFETY: as above.
        unsafe { empty.arrive_cluster(other) };
    }
    if let Some(o) = out.get_mut(i) {
        *o = held;
    }
    // The other block may still write into this block's inbox or arrive.
    cluster::sync();
}

/// The same rounds between the blocks of each pair on the CPU.
fn expected_pairs(seeds: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(seeds.len());
    for pair in seeds.chunks(2 * BLOCK) {
        let mut held = [pair[..BLOCK].to_vec(), pair[BLOCK..].to_vec()];
        for round in 0..ROUNDS {
            let values: Vec<Vec<u32>> = held.iter().map(|h| (0..BLOCK).map(|t| step(h[t], t as u32, round)).collect()).collect();
            for b in 0..2 {
                for t in 0..BLOCK {
                    held[b][t] ^= values[1 - b][partner(t, round)];
                }
            }
        }
        out.extend(held.concat());
    }
    out
}

/// The same rounds on the CPU, block by block.
fn expected(seeds: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(seeds.len());
    for block in seeds.chunks(BLOCK) {
        let mut held = block.to_vec();
        for round in 0..ROUNDS {
            let values: Vec<u32> = (0..BLOCK).map(|t| step(held[t], t as u32, round)).collect();
            for t in 0..BLOCK {
                held[t] ^= values[partner(t, round)];
            }
        }
        out.extend(held);
    }
    out
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "mbarrier_tokens")?;
    let n = BLOCK * BLOCKS;
    let seeds: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x85EB_CA6B) ^ 0xC2B2_AE35).collect();
    let dseeds = DeviceBuffer::from_host(&stream, &seeds)?;
    let mut dout = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: rounds, stream: stream, module: module, config: config,
        args: [slice(dseeds), slice_mut(dout)]
    }?;
    let gpu = dout.to_host_vec(&stream)?;
    let cpu = expected(&seeds);
    if let Some(i) = (0..n).find(|&i| gpu[i] != cpu[i]) {
        return Err(format!("thread {i}: GPU {:#x} CPU {:#x}", gpu[i], cpu[i]).into());
    }
    dout.memset(&stream, 0)?;
    cuda_launch! {
        kernel: pair_rounds, stream: stream, module: module, config: config,
        args: [slice(dseeds), slice_mut(dout)]
    }?;
    let gpu = dout.to_host_vec(&stream)?;
    let cpu = expected_pairs(&seeds);
    if let Some(i) = (0..n).find(|&i| gpu[i] != cpu[i]) {
        return Err(format!("pairs, thread {i}: GPU {:#x} CPU {:#x}", gpu[i], cpu[i]).into());
    }
    Ok(n)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!(
                "✓ SUCCESS: mbarrier tokens: {n} threads, {} phases each, and the same rounds between the blocks of clusters of two, matched the CPU",
                2 * ROUNDS
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
