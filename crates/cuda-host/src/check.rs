//! Launch configurations checked against the kernel before the driver sees
//! them, so a wrong launch fails with a message that names the kernel and
//! says what to change, not with `CUDA_ERROR_INVALID_VALUE`.

use crate::HostError;
use cuda_core::{ClusterLaunchConfig, ClusterShapeError, LaunchConfig};

/// Which thread coordinates a kernel can read, from the kernel table
/// (docs/ABI.md §3, `KernelRecord.flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coordinates(pub(crate) u64);

impl Coordinates {
    /// The kernel reads `threadIdx.x` or `blockIdx.x`.
    pub const READS_X: u64 = crate::abi::KERNEL_READS_X;
    /// The kernel reads `threadIdx.y/z` or `blockIdx.y/z` (or might: inline
    /// assembly, indirect calls).
    pub const READS_YZ: u64 = crate::abi::KERNEL_READS_YZ;

    /// Whether the kernel reads an x coordinate and no y or z coordinate, so
    /// that in a 2-D or 3-D launch several threads compute the same index.
    pub fn x_only(self) -> bool {
        self.0 & Self::READS_X != 0 && self.0 & Self::READS_YZ == 0
    }
}

/// The limits of one compiled kernel that a launch must respect (function
/// attributes; register use can make them lower than the device's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelLimits {
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub max_dynamic_shared_bytes: u32,
}

/// The checks that need no driver: no zero dimension, and no 2-D/3-D launch
/// of a kernel that indexes with x coordinates only.
pub(crate) fn check_shape(
    kernel: &str,
    reads: Coordinates,
    config: &LaunchConfig,
) -> Result<(), HostError> {
    for (what, dims) in [("grid_dim", config.grid_dim), ("block_dim", config.block_dim)] {
        if dims.0 == 0 || dims.1 == 0 || dims.2 == 0 {
            return Err(HostError::ZeroLaunchDimension { kernel: kernel.to_string(), what, dims });
        }
    }
    let rank = |(_, y, z): (u32, u32, u32)| if z > 1 { 3 } else if y > 1 { 2 } else { 1 };
    let (block_rank, grid_rank) = (rank(config.block_dim), rank(config.grid_dim));
    if reads.x_only() && (block_rank > 1 || grid_rank > 1) {
        return Err(HostError::SharedThreadIndices {
            kernel: kernel.to_string(),
            block_dim: config.block_dim,
            grid_dim: config.grid_dim,
        });
    }
    Ok(())
}

/// The cluster checks: the shape (no GPU needed), then that the device has
/// clusters (compute capability 9.0, given when known).
pub(crate) fn check_cluster(
    kernel: &str,
    config: &ClusterLaunchConfig,
    compute_capability: Option<(u32, u32)>,
) -> Result<(), HostError> {
    let refuse = |error| HostError::ClusterShape {
        kernel: kernel.to_string(),
        cluster_dim: config.cluster_dim,
        grid_dim: config.launch.grid_dim,
        error,
    };
    config.validate().map_err(refuse)?;
    match compute_capability {
        Some(cc) if cc.0 < 9 => Err(refuse(ClusterShapeError::NeedsSm90 { compute_capability: cc })),
        _ => Ok(()),
    }
}

/// The checks against the compiled kernel's limits.
pub(crate) fn check_limits(
    kernel: &str,
    config: &LaunchConfig,
    limits: KernelLimits,
) -> Result<(), HostError> {
    let threads = config.threads_per_block();
    if threads > u64::from(limits.max_threads_per_block) {
        return Err(HostError::BlockTooLarge {
            kernel: kernel.to_string(),
            block_dim: config.block_dim,
            max_threads_per_block: limits.max_threads_per_block,
        });
    }
    if config.shared_mem_bytes > limits.max_dynamic_shared_bytes {
        return Err(HostError::SharedMemoryTooLarge {
            kernel: kernel.to_string(),
            requested: config.shared_mem_bytes,
            max: limits.max_dynamic_shared_bytes,
        });
    }
    Ok(())
}

/// "a 2-D block (16, 16, 1)", for messages.
pub(crate) fn describe(what: &str, (x, y, z): (u32, u32, u32)) -> String {
    let rank = if z > 1 { 3 } else if y > 1 { 2 } else { 1 };
    format!("a {rank}-D {what} ({x}, {y}, {z})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32) -> LaunchConfig {
        LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: shared }
    }

    const X_ONLY: Coordinates = Coordinates(Coordinates::READS_X);
    const XY: Coordinates = Coordinates(Coordinates::READS_X | Coordinates::READS_YZ);
    const NONE: Coordinates = Coordinates(0);
    const LIMITS: KernelLimits = KernelLimits { max_threads_per_block: 512, max_dynamic_shared_bytes: 48 * 1024 };

    #[test]
    fn zero_dimensions_are_refused_with_the_kernel_named() {
        let err = check_shape("k::scale", XY, &config((4, 0, 1), (256, 1, 1), 0)).unwrap_err();
        assert!(matches!(err, HostError::ZeroLaunchDimension { what: "grid_dim", dims: (4, 0, 1), .. }));
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::scale`: grid_dim (4, 0, 1) has a zero dimension; \
             every grid and block dimension must be at least 1 (use 1 for unused dimensions)"
        );
        let err = check_shape("k", XY, &config((1, 1, 1), (0, 1, 1), 0)).unwrap_err();
        assert!(matches!(err, HostError::ZeroLaunchDimension { what: "block_dim", .. }));
    }

    #[test]
    fn x_only_kernels_refuse_multi_dimensional_launches() {
        let err = check_shape("k::scale", X_ONLY, &config((4, 1, 1), (16, 16, 1), 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `k::scale` indexes with x coordinates only (thread::index_1d), but the launch has \
             a 2-D block (16, 16, 1): threads would share indices; launch it 1-D (y = z = 1 in grid_dim \
             and block_dim) or use index_2d"
        );
        let err = check_shape("k", X_ONLY, &config((4, 1, 2), (256, 1, 1), 0)).unwrap_err();
        assert!(err.to_string().contains("but the launch has a 3-D grid (4, 1, 2): threads"), "{err}");
        let err = check_shape("k", X_ONLY, &config((4, 2, 1), (8, 8, 2), 0)).unwrap_err();
        assert!(err.to_string().contains("a 3-D block (8, 8, 2) and a 2-D grid (4, 2, 1)"), "{err}");
        assert!(matches!(err, HostError::SharedThreadIndices { .. }));
    }

    #[test]
    fn other_kernels_and_1d_launches_pass() {
        check_shape("k", X_ONLY, &config((1000, 1, 1), (256, 1, 1), 0)).unwrap();
        check_shape("k", XY, &config((4, 4, 1), (16, 16, 1), 0)).unwrap();
        check_shape("k", XY, &config((4, 4, 4), (8, 8, 8), 0)).unwrap();
        // A kernel that reads no coordinate cannot build a ThreadIndex.
        check_shape("k", NONE, &config((4, 4, 1), (16, 16, 1), 0)).unwrap();
    }

    #[test]
    fn blocks_beyond_the_kernels_limit_are_refused() {
        check_limits("k", &config((1, 1, 1), (512, 1, 1), 0), LIMITS).unwrap();
        check_limits("k", &config((1, 1, 1), (16, 32, 1), 0), LIMITS).unwrap();
        let err = check_limits("k::big", &config((1, 1, 1), (32, 32, 1), 0), LIMITS).unwrap_err();
        assert!(matches!(err, HostError::BlockTooLarge { max_threads_per_block: 512, .. }));
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::big` with block_dim (32, 32, 1) = 1024 threads per block: \
             this kernel can run at most 512 (its register use limits it); use smaller blocks \
             and more of them, or lower its register use with #[kernel(launch_bounds(512))]"
        );
    }

    #[test]
    fn wrong_cluster_shapes_are_refused_before_the_driver() {
        let launch = config((10, 1, 1), (128, 1, 1), 0);
        check_cluster("k", &config((8, 1, 1), (128, 1, 1), 0).with_cluster((4, 1, 1)), Some((9, 0))).unwrap();
        let err = check_cluster("k::reduce", &launch.with_cluster((4, 1, 1)), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::reduce` in clusters of (4, 1, 1) blocks over the grid (10, 1, 1): \
             the cluster's 4 blocks in x do not divide the grid's 10; make grid_dim.x a multiple of cluster_dim.x"
        );
        let big = config((32, 1, 1), (128, 1, 1), 0).with_cluster((16, 1, 1));
        let err = check_cluster("k", &big, None).unwrap_err();
        assert!(matches!(err, HostError::ClusterShape { error: ClusterShapeError::TooLarge { max: 8, .. }, .. }));
        check_cluster("k", &big.allow_non_portable(), None).unwrap();
        let err = check_cluster("k", &config((8, 1, 1), (128, 1, 1), 0).with_cluster((2, 1, 1)), Some((8, 0)))
            .unwrap_err();
        assert!(err.to_string().ends_with("thread-block clusters need a GPU of compute capability 9.0 or newer (Hopper); this one is 8.0"), "{err}");
    }

    #[test]
    fn dynamic_shared_memory_beyond_the_limit_is_refused() {
        check_limits("k", &config((1, 1, 1), (32, 1, 1), 48 * 1024), LIMITS).unwrap();
        let err = check_limits("k::tile", &config((1, 1, 1), (32, 1, 1), 64 * 1024), LIMITS).unwrap_err();
        assert!(matches!(err, HostError::SharedMemoryTooLarge { requested: 65536, max: 49152, .. }));
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::tile` with 65536 bytes of dynamic shared memory: its limit is \
             49152 bytes; ask for less in LaunchConfig::shared_mem_bytes, or raise the limit with \
             CudaFunction::set_max_dynamic_shared_memory (above 48 KiB, up to the device's opt-in maximum)"
        );
    }
}
