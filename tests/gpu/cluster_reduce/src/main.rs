//! GPU test: thread-block clusters (sm_90). A cluster-wide reduction through
//! distributed shared memory: every block sums its part, writes the sum into
//! block 0 of its cluster (remote store), and block 0 adds them up and also
//! reads every block's own partial sum (remote loads); the cluster
//! coordinates are recorded per block. Launched with clusters of 4 and of
//! 16 blocks (non-portable), checked against the CPU; a cluster shape that
//! does not divide the grid is refused by cuda-host before the driver.
//!
//! The kernel lives in a module nested in a `#[cuda_module]`, so it has a
//! typed launcher (`kernels::cluster::launch::cluster_sum`); half the shapes
//! go through `cuda_launch!`, half through the launcher, which takes the
//! same cluster configurations. Its twin `cluster_sum_of_4` has a
//! compile-time shape (`#[kernel(cluster_dims(4, 1, 1))]`): a plain launch
//! runs in clusters of 4, a launch asking for another shape is refused.

use cuda_core::{ClusterShapeError, CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{cluster, kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, cuda_module, load_kernel_module, HostError};
use kernels::cluster::{cluster_sum, cluster_sum_of_4};
use std::process::ExitCode;

const BLOCK: usize = 256;
const BLOCKS: usize = 32;
/// Per block: ctarank, num_ctas, cluster_idx.x, block_in_cluster.x, cluster_dim.x, num_clusters.x.
const INFO: usize = 6;

#[cuda_module]
pub mod kernels {
    /// Nested: its launcher is `kernels::cluster::launch::cluster_sum`.
    pub mod cluster {
        use super::super::*;

        /// Clusters of the launch's shape.
        #[kernel]
        pub fn cluster_sum(input: &[u32], sums: DisjointSlice<u64>, info: DisjointSlice<u32>) {
            sum_in_clusters(input, sums, info)
        }

        /// Clusters of 4 blocks whatever the launch says
        /// (`.reqnctapercluster 4, 1, 1`).
        #[kernel(cluster_dims(4, 1, 1))]
        pub fn cluster_sum_of_4(input: &[u32], sums: DisjointSlice<u64>, info: DisjointSlice<u32>) {
            sum_in_clusters(input, sums, info)
        }

        #[inline(always)]
        fn sum_in_clusters(input: &[u32], mut sums: DisjointSlice<u64>, mut info: DisjointSlice<u32>) {
            shared! {
                static WARPS: [u32; BLOCK / 32];
                static PARTIAL: [u64; 1];
                static GATHER: [u64; 16];
            }
            let t = thread::threadIdx_x() as usize;
            let block = thread::blockIdx_x() as usize;
            let rank = cluster::ctarank();
            // Every block of the cluster has started (its shared memory exists)
            // before anyone maps it; no memory ordering needed for that.
            cluster::arrive_relaxed();
            cluster::wait();

            let s = warp::sum(input[block * BLOCK + t]);
            if warp::lane_id() == 0 {
                // SAFETY: one writer per warp slot; read after the barrier.
                unsafe { WARPS.write(t / 32, s) };
            }
            thread::sync_threads();
            if t == 0 {
                // SAFETY: written before the barrier above.
                let total: u64 = (0..BLOCK / 32).map(|w| unsafe { WARPS.read(w) } as u64).sum();
                // SAFETY: one writer (thread 0); remote readers come after cluster::sync.
                unsafe { PARTIAL.write(0, total) };
                // Distributed shared memory store: slot `rank` of block 0's GATHER.
                // SAFETY: each block writes only its own slot; read after cluster::sync.
                unsafe { cluster::map(&GATHER, 0).write(rank as usize, total) };
                let (cx, _, _) = cluster::cluster_idx();
                let (bx, _, _) = cluster::block_in_cluster();
                let record = [rank, cluster::num_ctas(), cx, bx, cluster::cluster_dim().0, cluster::num_clusters().0];
                for (k, v) in record.into_iter().enumerate() {
                    // SAFETY: block `block` alone writes its INFO records.
                    unsafe { *info.get_unchecked_mut(block * INFO + k) = v };
                }
            }
            cluster::sync();
            if rank == 0 && t == 0 {
                let n = cluster::num_ctas();
                let mut gathered = 0u64;
                let mut pulled = 0u64;
                for r in 0..n {
                    // SAFETY: written before cluster::sync; nobody writes them again,
                    // and every block waits at the cluster barrier below before exiting.
                    unsafe {
                        gathered += GATHER.read(r as usize);
                        pulled += cluster::map(&PARTIAL, r).read(0);
                    }
                }
                let (cx, _, _) = cluster::cluster_idx();
                // SAFETY: cluster cx's rank-0 block alone writes these two.
                unsafe {
                    *sums.get_unchecked_mut(2 * cx as usize) = gathered;
                    *sums.get_unchecked_mut(2 * cx as usize + 1) = pulled;
                }
            }
            // Keep every block's shared memory alive until block 0 has read it.
            cluster::sync();
        }
    }
}

fn check(input: &[u32], cluster: usize, sums: &[u64], info: &[u32]) -> Result<(), String> {
    for b in 0..BLOCKS {
        let want = [(b % cluster) as u32, cluster as u32, (b / cluster) as u32, (b % cluster) as u32, cluster as u32, (BLOCKS / cluster) as u32];
        if info[b * INFO..b * INFO + INFO] != want {
            return Err(format!("cluster {cluster}: block {b} coordinates GPU {:?} CPU {want:?}", &info[b * INFO..b * INFO + INFO]));
        }
    }
    for c in 0..BLOCKS / cluster {
        let part = &input[c * cluster * BLOCK..(c + 1) * cluster * BLOCK];
        let want: u64 = part.iter().map(|&v| v as u64).sum();
        if sums[2 * c] != want || sums[2 * c + 1] != want {
            return Err(format!(
                "cluster {cluster}: cluster {c}: GPU gathered {} pulled {}, CPU {want}",
                sums[2 * c],
                sums[2 * c + 1]
            ));
        }
    }
    Ok(())
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "cluster_reduce")?;
    let input: Vec<u32> = (0..BLOCKS * BLOCK).map(|i| ((i as u32).wrapping_mul(2654435761) >> 8) & 0xffff).collect();
    let din = DeviceBuffer::from_host(&stream, &input)?;
    let launch = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    let mut done = Vec::new();
    for (cluster, non_portable) in [(4usize, false), (2, false), (8, false), (16, true)] {
        let mut sums = DeviceBuffer::<u64>::zeroed(&stream, 2 * BLOCKS)?;
        let mut info = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS * INFO)?;
        let mut config = launch.with_cluster((cluster as u32, 1, 1));
        if non_portable {
            config = config.allow_non_portable();
        }
        if cluster <= 4 {
            cuda_launch! {
                kernel: cluster_sum, stream: stream, module: module, config: config,
                args: [slice(din), slice_mut(sums), slice_mut(info)]
            }?;
        } else {
            kernels::cluster::launch::cluster_sum(&module, &stream, config, &din, &mut sums, &mut info)?;
        }
        check(&input, cluster, &sums.to_host_vec(&stream)?, &info.to_host_vec(&stream)?)?;
        done.push(cluster.to_string());
    }
    // A shape that does not divide the grid never reaches the driver.
    let mut sums = DeviceBuffer::<u64>::zeroed(&stream, 2 * BLOCKS)?;
    let mut info = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS * INFO)?;
    let bad = LaunchConfig { grid_dim: (30, 1, 1), ..launch }.with_cluster((4, 1, 1));
    let refused = cuda_launch! {
        kernel: cluster_sum, stream: stream, module: module, config: bad,
        args: [slice(din), slice_mut(sums), slice_mut(info)]
    };
    let refused_typed = kernels::cluster::launch::cluster_sum(&module, &stream, bad, &din, &mut sums, &mut info);
    for (how, refused) in [("cuda_launch!", refused), ("the typed launcher", refused_typed)] {
        match refused {
            Err(HostError::ClusterShape { error: ClusterShapeError::DoesNotDivideGrid { .. }, .. }) => {}
            other => return Err(format!("a cluster of 4 over 30 blocks was not refused by {how}: {other:?}").into()),
        }
    }
    // A compile-time shape: a plain launch runs in clusters of 4, so does one
    // that asks for 4; one that asks for 2 is refused, and so is a grid that
    // 4 does not divide.
    for (how, asked) in [("a plain launch", None), ("a launch in clusters of 4", Some((4, 1, 1)))] {
        let mut sums = DeviceBuffer::<u64>::zeroed(&stream, 2 * BLOCKS)?;
        let mut info = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS * INFO)?;
        match asked {
            None => kernels::cluster::launch::cluster_sum_of_4(&module, &stream, launch, &din, &mut sums, &mut info)?,
            Some(shape) => cuda_launch! {
                kernel: cluster_sum_of_4, stream: stream, module: module, config: launch.with_cluster(shape),
                args: [slice(din), slice_mut(sums), slice_mut(info)]
            }?,
        }
        check(&input, 4, &sums.to_host_vec(&stream)?, &info.to_host_vec(&stream)?).map_err(|e| format!("cluster_dims(4), {how}: {e}"))?;
    }
    let other = kernels::cluster::launch::cluster_sum_of_4(&module, &stream, launch.with_cluster((2, 1, 1)), &din, &mut sums, &mut info);
    match other {
        Err(HostError::ClusterDimsFixed { compiled: (4, 1, 1), launched: (2, 1, 1), .. }) => {}
        other => return Err(format!("cluster_dims(4) launched in clusters of 2 was not refused: {other:?}").into()),
    }
    let ragged = LaunchConfig { grid_dim: (30, 1, 1), ..launch };
    match kernels::cluster::launch::cluster_sum_of_4(&module, &stream, ragged, &din, &mut sums, &mut info) {
        Err(HostError::ClusterShape { error: ClusterShapeError::DoesNotDivideGrid { .. }, .. }) => {}
        other => return Err(format!("cluster_dims(4) over 30 blocks was not refused: {other:?}").into()),
    }
    Ok(format!("clusters of {} blocks and a compile-time cluster of 4", done.join(", ")))
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: cluster reduction through distributed shared memory matched the CPU for {what}; a wrong cluster shape was refused");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
