//! Launch configurations checked against the kernel before the driver sees
//! them, so a wrong launch fails with a message that names the kernel and
//! says what to change, not with `CUDA_ERROR_INVALID_VALUE`.

use crate::HostError;
use cuda_core::{ClusterLaunchConfig, ClusterShapeError, LaunchConfig};

/// Which kinds of [`ThreadIndex`](cuda_device::ThreadIndex) a kernel can
/// hand `DisjointSlice::get_mut`, from the kernel table (docs/ABI.md §3,
/// `KernelRecord.flags`, recorded by the device linker through every call,
/// a call through a function pointer counting as a call of every function
/// whose address is taken), and so which launch shapes keep each thread's
/// index its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadIndexKinds(pub(crate) u64);

impl ThreadIndexKinds {
    /// A 1-D index ([`thread::index_1d`](cuda_device::thread::index_1d)):
    /// launches need y = z = 1 in grid and block.
    pub const ONE_D: u64 = crate::abi::KERNEL_INDEXES1D;
    /// A 2-D index ([`thread::index_2d`](cuda_device::thread::index_2d)):
    /// launches need z = 1 in grid and block.
    pub const TWO_D: u64 = crate::abi::KERNEL_INDEXES2D;
    /// A 3-D index ([`thread::index_3d`](cuda_device::thread::index_3d)):
    /// any launch shape.
    pub const THREE_D: u64 = crate::abi::KERNEL_INDEXES3D;

    /// The kinds with these flag bits (`ONE_D | TWO_D`, …).
    pub const fn from_bits(bits: u64) -> Self {
        ThreadIndexKinds(bits)
    }

    /// The flag bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether the kernel can hand get_mut an index of `kind` (one of the
    /// constants above).
    pub const fn contains(self, kind: u64) -> bool {
        self.0 & kind != 0
    }

    /// The first dimension a launch of `config` extends in that one of the
    /// kernel's index kinds ignores, with the constructor of that kind: the
    /// threads that differ only in that dimension would share indices.
    pub fn aliasing_dimension(self, config: &LaunchConfig) -> Option<(&'static str, char)> {
        let extends = |axis: usize| {
            let pick = |(x, y, z): (u32, u32, u32)| [x, y, z][axis];
            pick(config.block_dim) > 1 || pick(config.grid_dim) > 1
        };
        let kinds: [(u64, &'static str, &[(usize, char)]); 2] = [
            (Self::ONE_D, "thread::index_1d", &[(1, 'y'), (2, 'z')]),
            (Self::TWO_D, "thread::index_2d", &[(2, 'z')]),
        ];
        kinds
            .into_iter()
            .filter(|&(kind, _, _)| self.contains(kind))
            .find_map(|(_, constructor, ignored)| {
                ignored.iter().find(|&&(axis, _)| extends(axis)).map(|&(_, name)| (constructor, name))
            })
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

/// The checks that need no driver: no zero dimension, and no launch with
/// threads that the kernel's thread indices cannot tell apart.
#[inline]
pub(crate) fn check_shape(
    kernel: &str,
    indices: ThreadIndexKinds,
    config: &LaunchConfig,
) -> Result<(), HostError> {
    // Every launch passes through here: the usual answer is one expression,
    // the same rules as `refuse_shape`'s (where no dimension is 0, an axis
    // extends exactly when grid or block is more than 1 along it).
    let ((gx, gy, gz), (bx, by, bz)) = (config.grid_dim, config.block_dim);
    let positive = gx.min(gy).min(gz).min(bx).min(by).min(bz) != 0;
    let (flat_y, flat_z) = (gy == 1 && by == 1, gz == 1 && bz == 1);
    let one_d_ok = !indices.contains(ThreadIndexKinds::ONE_D) || (flat_y && flat_z);
    let two_d_ok = !indices.contains(ThreadIndexKinds::TWO_D) || flat_z;
    if positive && one_d_ok && two_d_ok {
        return Ok(());
    }
    refuse_shape(kernel, indices, config)
}

/// [`check_shape`]'s refusals, with what to change.
#[cold]
fn refuse_shape(kernel: &str, indices: ThreadIndexKinds, config: &LaunchConfig) -> Result<(), HostError> {
    for (what, dims) in [("grid_dim", config.grid_dim), ("block_dim", config.block_dim)] {
        if dims.0 == 0 || dims.1 == 0 || dims.2 == 0 {
            return Err(HostError::ZeroLaunchDimension { kernel: kernel.to_string(), what, dims });
        }
    }
    if let Some((index, dimension)) = indices.aliasing_dimension(config) {
        return Err(HostError::SharedThreadIndices {
            kernel: kernel.to_string(),
            index,
            dimension,
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
#[inline]
pub(crate) fn check_limits(
    kernel: &str,
    config: &LaunchConfig,
    limits: KernelLimits,
) -> Result<(), HostError> {
    if config.threads_per_block() <= u64::from(limits.max_threads_per_block)
        && config.shared_mem_bytes <= limits.max_dynamic_shared_bytes
    {
        return Ok(());
    }
    refuse_limits(kernel, config, limits)
}

/// [`check_limits`]'s refusals.
#[cold]
fn refuse_limits(kernel: &str, config: &LaunchConfig, limits: KernelLimits) -> Result<(), HostError> {
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

    const ONE_D: ThreadIndexKinds = ThreadIndexKinds(ThreadIndexKinds::ONE_D);
    const TWO_D: ThreadIndexKinds = ThreadIndexKinds(ThreadIndexKinds::TWO_D);
    const THREE_D: ThreadIndexKinds = ThreadIndexKinds(ThreadIndexKinds::THREE_D);
    const NONE: ThreadIndexKinds = ThreadIndexKinds(0);
    const LIMITS: KernelLimits = KernelLimits { max_threads_per_block: 512, max_dynamic_shared_bytes: 48 * 1024 };

    /// The (constructor, dimension) a refused launch names.
    fn refused(kinds: ThreadIndexKinds, grid: (u32, u32, u32), block: (u32, u32, u32)) -> (&'static str, char) {
        match check_shape("k", kinds, &config(grid, block, 0)) {
            Err(HostError::SharedThreadIndices { index, dimension, .. }) => (index, dimension),
            other => panic!("grid {grid:?} block {block:?}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn zero_dimensions_are_refused_with_the_kernel_named() {
        let err = check_shape("k::scale", THREE_D, &config((4, 0, 1), (256, 1, 1), 0)).unwrap_err();
        assert!(matches!(err, HostError::ZeroLaunchDimension { what: "grid_dim", dims: (4, 0, 1), .. }));
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::scale`: grid_dim (4, 0, 1) has a zero dimension; \
             every grid and block dimension must be at least 1 (use 1 for unused dimensions)"
        );
        let err = check_shape("k", NONE, &config((1, 1, 1), (0, 1, 1), 0)).unwrap_err();
        assert!(matches!(err, HostError::ZeroLaunchDimension { what: "block_dim", .. }));
    }

    #[test]
    fn a_1d_index_refuses_y_and_z_in_block_and_grid() {
        // The first program of issue 16 §3: index_1d with a block of (256, 4, 1).
        let err = check_shape("k::rows", ONE_D, &config((4, 1, 1), (256, 4, 1), 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::rows` with a 2-D block (256, 4, 1): it writes a DisjointSlice \
             through thread::index_1d, which ignores y, so threads that differ only in y would get the \
             same element; launch it 1-D (y = z = 1 in grid_dim and block_dim), or index with \
             thread::index_2d or thread::index_3d"
        );
        assert_eq!(refused(ONE_D, (4, 2, 1), (256, 1, 1)), ("thread::index_1d", 'y'));
        assert_eq!(refused(ONE_D, (4, 1, 1), (64, 1, 2)), ("thread::index_1d", 'z'));
        assert_eq!(refused(ONE_D, (4, 1, 3), (64, 1, 1)), ("thread::index_1d", 'z'));
        // y is named first; the message shows every part of the shape that extends in it.
        let err = check_shape("k", ONE_D, &config((4, 2, 1), (8, 8, 2), 0)).unwrap_err();
        assert!(err.to_string().contains("with a 3-D block (8, 8, 2) and a 2-D grid (4, 2, 1): "), "{err}");
        assert!(err.to_string().contains("ignores y,"), "{err}");
    }

    #[test]
    fn a_2d_index_refuses_z_in_block_and_grid() {
        // The second program of issue 16 §3: index_2d(32) with a block of (32, 8, 4).
        let err = check_shape("k::tile", TWO_D, &config((1, 1, 1), (32, 8, 4), 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k::tile` with a 3-D block (32, 8, 4): it writes a DisjointSlice \
             through thread::index_2d, which ignores z, so threads that differ only in z would get the \
             same element; launch it with z = 1 in grid_dim and block_dim, or index with thread::index_3d"
        );
        assert_eq!(refused(TWO_D, (2, 2, 2), (16, 16, 1)), ("thread::index_2d", 'z'));
        check_shape("k", TWO_D, &config((4, 4, 1), (16, 16, 1), 0)).unwrap();
        check_shape("k", TWO_D, &config((4, 1, 1), (256, 1, 1), 0)).unwrap();
    }

    #[test]
    fn every_kind_a_kernel_writes_through_is_checked() {
        let both = ThreadIndexKinds(ThreadIndexKinds::ONE_D | ThreadIndexKinds::THREE_D);
        assert_eq!(refused(both, (1, 1, 1), (16, 16, 1)), ("thread::index_1d", 'y'));
        let both = ThreadIndexKinds(ThreadIndexKinds::TWO_D | ThreadIndexKinds::THREE_D);
        assert_eq!(refused(both, (1, 1, 2), (16, 16, 1)), ("thread::index_2d", 'z'));
        check_shape("k", both, &config((4, 4, 1), (16, 16, 1), 0)).unwrap();
    }

    #[test]
    fn shapes_the_indices_cover_pass() {
        check_shape("k", ONE_D, &config((1000, 1, 1), (256, 1, 1), 0)).unwrap();
        check_shape("k", THREE_D, &config((4, 4, 1), (16, 16, 1), 0)).unwrap();
        check_shape("k", THREE_D, &config((4, 4, 4), (8, 8, 8), 0)).unwrap();
        // A kernel that writes through no ThreadIndex has no shared index to fear.
        check_shape("k", NONE, &config((4, 4, 4), (8, 8, 8), 0)).unwrap();
    }

    #[test]
    fn a_cluster_launch_is_checked_on_its_grid_and_block() {
        use crate::launch::LaunchShape;
        let clusters = config((8, 2, 1), (128, 1, 1), 0).with_cluster((2, 1, 1));
        let err = check_shape("k::reduce", ONE_D, &clusters.config()).unwrap_err();
        assert!(matches!(err, HostError::SharedThreadIndices { index: "thread::index_1d", dimension: 'y', .. }));
        let clusters = config((4, 4, 2), (8, 8, 1), 0).with_cluster((2, 2, 2));
        assert!(matches!(
            check_shape("k", TWO_D, &clusters.config()),
            Err(HostError::SharedThreadIndices { dimension: 'z', .. })
        ));
        check_shape("k", THREE_D, &clusters.config()).unwrap();
        check_shape("k", ONE_D, &config((8, 1, 1), (128, 1, 1), 0).with_cluster((4, 1, 1)).config()).unwrap();
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
             this kernel can run at most 512 (its register use, or its launch_bounds, limits it); \
             use smaller blocks and more of them, or declare the block you launch with \
             #[kernel(launch_bounds(N))] so that the compiler keeps the registers within what N threads allow"
        );
        // Past the GPU's own limit, a bound would not help.
        let err = check_limits("k", &config((1, 1, 1), (2048, 1, 1), 0), KernelLimits { max_threads_per_block: 1024, ..LIMITS }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot launch kernel `k` with block_dim (2048, 1, 1) = 2048 threads per block: \
             a block holds at most 1024 threads on this GPU; use smaller blocks and more of them"
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
             CudaFunction::set_max_dynamic_shared_memory (up to the device's opt-in maximum less the kernel's \
             static shared memory)"
        );
    }
}
