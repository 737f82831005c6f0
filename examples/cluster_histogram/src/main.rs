//! cluster_histogram: a histogram with more bins than one block's shared
//! memory should hold, spread over the blocks of a thread-block cluster
//! (sm_90). Block r of a cluster of 4 owns bins r*1024 .. r*1024+1024 in its
//! shared memory; every thread adds each of its values to the owning block's
//! bin through distributed shared memory (a cluster-scope atomic on
//! `cluster::map`'s address), then each block adds its bins into the global
//! histogram. Checked against the CPU.

use core::sync::atomic::{AtomicU32, Ordering};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::{cluster, kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Blocks per cluster.
const CLUSTER: usize = 4;
/// Bins per block; the histogram has CLUSTER * BLOCK_BINS bins.
const BLOCK_BINS: usize = 1024;
const BINS: usize = CLUSTER * BLOCK_BINS;

#[kernel]
pub fn cluster_histogram(data: &[u32], mut hist: DisjointSlice<u32>) {
    shared! { static LOCAL: [AtomicU32; BLOCK_BINS]; }
    let tid = thread::threadIdx_x() as usize;
    let threads = thread::blockDim_x() as usize;
    let mut bin = tid;
    while bin < BLOCK_BINS {
        // SAFETY: each thread zeroes its own bins; the cluster barrier below
        // comes before any atomic access, local or remote.
        unsafe { LOCAL.write(bin, AtomicU32::new(0)) };
        bin += threads;
    }
    cluster::sync();

    let stride = thread::gridDim_x() as usize * threads;
    let mut i = thread::index_1d().get();
    while i < data.len() {
        let b = data[i] as usize % BINS;
        let owner = cluster::map(&LOCAL, (b / BLOCK_BINS) as u32);
        // SAFETY: initialised before the barrier; the owner stays alive until
        // the cluster barrier below, and every access is atomic.
        unsafe { owner.get_ref(b % BLOCK_BINS) }.fetch_add_scoped(1, Scope::Cluster, Ordering::Relaxed);
        i += stride;
    }
    // All remote additions into this block's bins are done (and visible).
    cluster::sync();

    let first = cluster::ctarank() as usize * BLOCK_BINS;
    let global = hist.as_mut_ptr();
    let mut bin = tid;
    while bin < BLOCK_BINS && first + bin < hist.len() {
        // SAFETY: in bounds; `hist` is only accessed atomically by the launch,
        // and AtomicU32 has u32's layout.
        let count = unsafe { LOCAL.get_ref(bin) }.load(Ordering::Relaxed);
        if count > 0 {
            unsafe { AtomicU32::from_ptr(global.add(first + bin)) }.fetch_add_scoped(count, Scope::Device, Ordering::Relaxed);
        }
        bin += threads;
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 1 << 22;
    let data: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2654435761) >> 7 ^ (i % 13)).collect();
    let mut cpu = vec![0u32; BINS];
    for &v in &data {
        cpu[v as usize % BINS] += 1;
    }

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &data)?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, BINS)?;
    let module = load_kernel_module(&ctx, "cluster_histogram")?;
    // A multiple of the cluster size: clusters must tile the grid.
    let blocks = ctx.multiprocessor_count()? * 2 / CLUSTER as u32 * CLUSTER as u32;
    let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
        .with_cluster((CLUSTER as u32, 1, 1));
    cuda_launch! {
        kernel: cluster_histogram, stream: stream, module: module, config: config,
        args: [slice(input), slice_mut(hist)]
    }?;
    let gpu = hist.to_host_vec(&stream)?;
    if let Some(b) = (0..BINS).find(|&b| gpu[b] != cpu[b]) {
        return Err(format!("bin {b}: GPU {} vs CPU {}", gpu[b], cpu[b]).into());
    }
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: all {BINS} bins of {n} values, spread over clusters of {CLUSTER} blocks, matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
