//! The emulated device's limits on a block and on a multiprocessor (a
//! Hopper GPU's), and occupancy as the driver computes it from them
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`,
//! `cuOccupancyMaxPotentialBlockSize`) with what the emulator knows of a
//! kernel: its largest block and its static shared memory.
//!
//! Programs size grids from these answers (a cooperative grid must fit on
//! the device at once; a persistent kernel launches one block per slot), so
//! an answer the GPU would not give is a program tested against the wrong
//! numbers: a block size the kernel's launch bounds refuse, or more blocks
//! than the shared memory they ask for lets a multiprocessor hold. A block
//! is limited by warps (64 a multiprocessor), blocks (32) and shared memory
//! (228 KiB a multiprocessor, each block's share rounded up to 128 bytes
//! with the 1 KiB the driver reserves for it). Registers are not: the
//! emulator has none (cuda-host applies their limit to launches from the
//! image's cubin).

/// Bytes of shared memory a block may have without a raised limit (static
/// and dynamic together): `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`.
pub(crate) const SHARED_PER_BLOCK: u32 = 48 * 1024;
/// The most shared memory a block may have with a raised limit:
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
pub(crate) const SHARED_PER_BLOCK_OPTIN: u32 = 227 * 1024;
/// Warps a multiprocessor holds at once.
const WARPS_PER_MULTIPROCESSOR: u32 = 64;
/// Blocks a multiprocessor holds at once.
const BLOCKS_PER_MULTIPROCESSOR: u32 = 32;
/// Shared memory of a multiprocessor
/// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`).
pub(crate) const SHARED_PER_MULTIPROCESSOR: u32 = 228 * 1024;
/// Shared memory the driver reserves in each block
/// (`CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK`).
pub(crate) const RESERVED_SHARED_PER_BLOCK: u32 = 1024;
/// The unit a block's shared memory is allocated in.
const SHARED_ALLOCATION_UNIT: u32 = 128;

/// What occupancy depends on, of one kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel {
    /// Its largest block (`.maxntid`/`.reqntid`, else 1024).
    pub(crate) max_threads: u32,
    /// Its static shared memory, bytes.
    pub(crate) static_shared: u32,
}

/// Blocks of `threads` threads with `dynamic_shared` bytes of dynamic shared
/// memory each that one multiprocessor holds at once; 0 where no block
/// fits (too many threads for the kernel, or too much shared memory).
pub(crate) fn blocks_per_multiprocessor(kernel: Kernel, threads: u32, dynamic_shared: u64) -> u32 {
    if threads == 0 || threads > kernel.max_threads {
        return 0;
    }
    let by_warps = WARPS_PER_MULTIPROCESSOR / threads.div_ceil(32);
    let shared = u64::from(kernel.static_shared) + dynamic_shared + u64::from(RESERVED_SHARED_PER_BLOCK);
    let shared = shared.div_ceil(u64::from(SHARED_ALLOCATION_UNIT)) * u64::from(SHARED_ALLOCATION_UNIT);
    let by_shared = (u64::from(SHARED_PER_MULTIPROCESSOR) / shared).min(u64::from(u32::MAX)) as u32;
    by_warps.min(BLOCKS_PER_MULTIPROCESSOR).min(by_shared)
}

/// The block size that keeps the most threads resident on a multiprocessor
/// (the largest such, a multiple of 32, at most `limit` where it is not 0)
/// and the smallest grid that fills `multiprocessors` with it: `(grid,
/// block)`, `(0, 0)` where no block fits.
pub(crate) fn potential_block_size(kernel: Kernel, dynamic_shared: u64, limit: u32, multiprocessors: u32) -> (u32, u32) {
    let most = if limit > 0 { limit.min(kernel.max_threads) } else { kernel.max_threads };
    let mut best = (0, 0);
    let mut best_threads = 0;
    let whole_warps = (1..=most.min(1024) / 32).rev().map(|w| w * 32);
    // A limit under one warp is the block itself.
    let candidates = whole_warps.chain((most < 32).then_some(most).filter(|&b| b > 0));
    for block in candidates {
        let blocks = blocks_per_multiprocessor(kernel, block, dynamic_shared);
        if blocks * block > best_threads {
            best_threads = blocks * block;
            best = (blocks.saturating_mul(multiprocessors), block);
        }
    }
    best
}

/// The most blocks a cluster may have (with the non-portable attribute).
const MAX_CLUSTER_BLOCKS: u64 = 16;

/// Clusters of `cluster` blocks (each of `threads` threads and
/// `dynamic_shared` bytes) that `multiprocessors` hold at once
/// (`cuOccupancyMaxActiveClusters`): the emulated device is one group of
/// multiprocessors, so every resident block slot counts, in whole clusters.
/// `None` for a cluster of no blocks or more than a cluster may have.
pub(crate) fn clusters_resident(
    kernel: Kernel,
    threads: u32,
    dynamic_shared: u64,
    cluster: u64,
    multiprocessors: u32,
) -> Option<u32> {
    if cluster == 0 || cluster > MAX_CLUSTER_BLOCKS {
        return None;
    }
    let slots = u64::from(blocks_per_multiprocessor(kernel, threads, dynamic_shared)) * u64::from(multiprocessors);
    Some((slots / cluster).min(u64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Kernel = Kernel { max_threads: 1024, static_shared: 0 };

    #[test]
    fn warps_and_blocks_limit_small_kernels() {
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 0), 8);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 1024, 0), 2);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 384, 0), 5);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 33, 0), 32, "two warps a block, 32 blocks");
        assert_eq!(blocks_per_multiprocessor(PLAIN, 32, 0), 32);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 1, 0), 32);
    }

    #[test]
    fn shared_memory_limits_with_the_reserved_kilobyte() {
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 100 * 1024), 2);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 113 * 1024), 2, "2 × (113 + 1) KiB = 228 KiB");
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 113 * 1024 + 1), 1, "rounded up to 128 bytes");
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 227 * 1024), 1);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, 227 * 1024 + 1), 0);
        let with_static = Kernel { max_threads: 1024, static_shared: 40 * 1024 };
        assert_eq!(blocks_per_multiprocessor(with_static, 256, 0), 5, "228 / 41");
        assert_eq!(blocks_per_multiprocessor(with_static, 256, 187 * 1024), 1);
        assert_eq!(blocks_per_multiprocessor(PLAIN, 256, u64::MAX - 2048), 0);
    }

    #[test]
    fn blocks_past_the_kernels_limit_do_not_fit() {
        let bounded = Kernel { max_threads: 256, static_shared: 0 };
        assert_eq!(blocks_per_multiprocessor(bounded, 257, 0), 0);
        assert_eq!(blocks_per_multiprocessor(bounded, 0, 0), 0);
        assert_eq!(potential_block_size(bounded, 0, 0, 4), (32, 256));
    }

    #[test]
    fn the_potential_block_keeps_the_most_threads_resident() {
        assert_eq!(potential_block_size(PLAIN, 0, 0, 2), (4, 1024));
        assert_eq!(potential_block_size(PLAIN, 0, 64, 2), (64, 64));
        // Under a limit of 100: 96 threads keep 63 warps resident (21
        // blocks), 64 threads all 64 (32 blocks).
        assert_eq!(potential_block_size(PLAIN, 0, 100, 3), (96, 64));
        // 100 KiB a block: two blocks at most, so the largest block wins.
        assert_eq!(potential_block_size(PLAIN, 100 * 1024, 0, 1), (2, 1024));
        assert_eq!(potential_block_size(PLAIN, 228 * 1024, 0, 1), (0, 0));
        assert_eq!(potential_block_size(PLAIN, 0, 16, 1), (32, 16));
    }

    #[test]
    fn clusters_take_whole_groups_of_block_slots() {
        // One block of 200 KiB a multiprocessor: pairs on 2 and 3 of them.
        assert_eq!(clusters_resident(PLAIN, 384, 200 * 1024, 2, 2), Some(1));
        assert_eq!(clusters_resident(PLAIN, 384, 200 * 1024, 2, 3), Some(1));
        assert_eq!(clusters_resident(PLAIN, 384, 200 * 1024, 4, 3), Some(0), "4 blocks never resident on 3");
        // 256 threads, no shared memory: 8 blocks a multiprocessor.
        assert_eq!(clusters_resident(PLAIN, 256, 0, 8, 2), Some(2));
        assert_eq!(clusters_resident(PLAIN, 256, 0, 16, 2), Some(1));
        assert_eq!(clusters_resident(PLAIN, 256, 0, 17, 2), None, "past the largest cluster");
        assert_eq!(clusters_resident(PLAIN, 256, 0, 0, 2), None);
        assert_eq!(clusters_resident(PLAIN, 2048, 0, 2, 2), Some(0), "a block the kernel cannot take");
    }
}
