//! Thread-block cluster launches (sm_90): [`ClusterLaunchConfig`] and
//! [`launch_kernel_cluster`] (`cuLaunchKernelEx` with the
//! `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` attribute).
//!
//! ```no_run
//! # use cuda_core::LaunchConfig;
//! // 64 blocks of 256 threads, in clusters of 4 consecutive blocks.
//! let config = LaunchConfig { grid_dim: (64, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
//!     .with_cluster((4, 1, 1));
//! assert!(config.validate().is_ok());
//! ```

use std::ffi::c_void;
use std::fmt;

use crate::context::{CudaContext, CudaStream};
use crate::driver::{cu, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED};
use crate::error::{DriverError, ErrorKind};
use crate::module::{driver_launch_config, launch_ex, CudaFunction, LaunchAttr, LaunchConfig};

/// A launch whose blocks are grouped into clusters of `cluster_dim` blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClusterLaunchConfig {
    /// Grid, block and dynamic shared memory, as for any launch.
    pub launch: LaunchConfig,
    /// Blocks per cluster, (x, y, z); each must divide the grid's.
    pub cluster_dim: (u32, u32, u32),
    /// Allows clusters of 9 to 16 blocks (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`),
    /// which only some GPUs (H100, H200) can schedule.
    pub non_portable: bool,
}

/// The most blocks in a cluster that every cluster-capable GPU supports.
pub const MAX_PORTABLE_CLUSTER_SIZE: u32 = 8;
/// The most blocks in a cluster with [`ClusterLaunchConfig::non_portable`].
pub const MAX_NON_PORTABLE_CLUSTER_SIZE: u32 = 16;

/// Why a cluster shape cannot be launched (checked before the driver sees it).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterShapeError {
    /// A cluster dimension is 0.
    ZeroDimension {
        /// The cluster dimensions asked for.
        cluster_dim: (u32, u32, u32),
    },
    /// A cluster dimension does not divide the grid's dimension on that axis.
    DoesNotDivideGrid {
        /// `'x'`, `'y'` or `'z'`.
        axis: char,
        /// The grid's blocks on that axis.
        grid: u32,
        /// The cluster's blocks on that axis.
        cluster: u32,
    },
    /// More blocks in a cluster than allowed.
    TooLarge {
        /// Blocks per cluster asked for.
        size: u64,
        /// The limit that applies (8, or 16 with `non_portable`).
        max: u32,
        /// Whether non-portable sizes were allowed.
        non_portable: bool,
    },
    /// The GPU has no clusters (they need compute capability 9.0).
    NeedsSm90 {
        /// The device's compute capability.
        compute_capability: (u32, u32),
    },
}

impl fmt::Display for ClusterShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ClusterShapeError::ZeroDimension { cluster_dim: (x, y, z) } => write!(
                f,
                "cluster_dim ({x}, {y}, {z}) has a zero dimension; use 1 for unused dimensions"
            ),
            ClusterShapeError::DoesNotDivideGrid { axis, grid, cluster } => write!(
                f,
                "the cluster's {cluster} blocks in {axis} do not divide the grid's {grid}; \
                 make grid_dim.{axis} a multiple of cluster_dim.{axis}"
            ),
            ClusterShapeError::TooLarge { size, max, non_portable: false } => write!(
                f,
                "a cluster of {size} blocks is more than the portable limit of {max}; use at most \
                 {max}, or up to {MAX_NON_PORTABLE_CLUSTER_SIZE} with .allow_non_portable() (H100/H200)"
            ),
            ClusterShapeError::TooLarge { size, max, non_portable: true } => {
                write!(f, "a cluster of {size} blocks is more than the limit of {max}")
            }
            ClusterShapeError::NeedsSm90 { compute_capability: (major, minor) } => write!(
                f,
                "thread-block clusters need a GPU of compute capability 9.0 or newer (Hopper); \
                 this one is {major}.{minor}"
            ),
        }
    }
}

impl std::error::Error for ClusterShapeError {}

impl ClusterShapeError {
    /// This refusal as the error of `api`, the call that checked the shape;
    /// every cluster refusal reads "invalid cluster shape: …".
    fn refused_by(self, api: &'static str) -> DriverError {
        DriverError::new(ErrorKind::InvalidLaunchConfig, format!("invalid cluster shape: {self}"), api)
    }
}

/// For `?` on [`ClusterLaunchConfig::validate`] in code that returns
/// [`DriverError`].
impl From<ClusterShapeError> for DriverError {
    fn from(e: ClusterShapeError) -> Self {
        e.refused_by("ClusterLaunchConfig::validate")
    }
}

impl LaunchConfig {
    /// This launch with its blocks grouped into clusters of `cluster_dim`.
    pub fn with_cluster(self, cluster_dim: (u32, u32, u32)) -> ClusterLaunchConfig {
        ClusterLaunchConfig { launch: self, cluster_dim, non_portable: false }
    }
}

impl ClusterLaunchConfig {
    /// Allows up to [`MAX_NON_PORTABLE_CLUSTER_SIZE`] blocks per cluster.
    pub fn allow_non_portable(mut self) -> Self {
        self.non_portable = true;
        self
    }

    /// Blocks per cluster (`x * y * z`).
    pub fn cluster_size(&self) -> u64 {
        let (x, y, z) = self.cluster_dim;
        x as u64 * y as u64 * z as u64
    }

    /// The checks that need no GPU: no zero dimension, each cluster dimension
    /// divides the grid's, at most 8 blocks (16 when non-portable).
    pub fn validate(&self) -> Result<(), ClusterShapeError> {
        let (c, g) = (self.cluster_dim, self.launch.grid_dim);
        if c.0 == 0 || c.1 == 0 || c.2 == 0 {
            return Err(ClusterShapeError::ZeroDimension { cluster_dim: c });
        }
        for (axis, grid, cluster) in [('x', g.0, c.0), ('y', g.1, c.1), ('z', g.2, c.2)] {
            if grid % cluster != 0 {
                return Err(ClusterShapeError::DoesNotDivideGrid { axis, grid, cluster });
            }
        }
        let max = if self.non_portable { MAX_NON_PORTABLE_CLUSTER_SIZE } else { MAX_PORTABLE_CLUSTER_SIZE };
        if self.cluster_size() > max as u64 {
            return Err(ClusterShapeError::TooLarge { size: self.cluster_size(), max, non_portable: self.non_portable });
        }
        Ok(())
    }
}


/// [`launch_kernel`](crate::launch_kernel) with clusters: checks the shape
/// ([`ClusterLaunchConfig::validate`], the grid limits, a GPU of compute
/// capability 9.0 or newer), allows non-portable sizes on the function if
/// asked, and launches with `cuLaunchKernelEx`.
///
/// # Safety
/// As for [`launch_kernel`](crate::launch_kernel).
pub unsafe fn launch_kernel_cluster(
    f: &CudaFunction,
    config: &ClusterLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch_cluster(f, config, stream, params, None) }
}

/// [`launch_kernel_cluster`] with the kernel's host code, whose name (the
/// Rust path, from `cuda-host`) a fault report then gives instead of the
/// PTX name. The CPU emulator runs cluster launches in its device-code
/// mode only (the host-code engine has no clusters), so `host` is not run.
///
/// # Safety
/// As for [`launch_kernel`](crate::launch_kernel); and `host` must be the
/// host code of `f`'s kernel.
pub unsafe fn launch_kernel_cluster_with_host_code(
    f: &CudaFunction,
    config: &ClusterLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: &cuda_emulator::HostKernel,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch_cluster(f, config, stream, params, Some(host)) }
}

impl CudaFunction {
    /// How many clusters of `config`'s shape, each block with its block size
    /// and dynamic shared memory, the GPU holds at once
    /// (`cuOccupancyMaxActiveClusters`): the grid of a persistent cluster
    /// kernel, which must not launch more clusters than run together.
    /// Clusters must fit in one group of multiprocessors (a GPC), so this can
    /// be fewer than the multiprocessors' block slots divided by the cluster
    /// size. The shape is checked as for a launch; the grid's size does not
    /// matter beyond that. The kernel's dynamic shared memory limit must
    /// already allow `config`'s ([`CudaFunction::set_max_dynamic_shared_memory`]),
    /// else the driver answers 0.
    ///
    /// ```no_run
    /// # fn demo(f: &cuda_core::CudaFunction, sms: u32) -> Result<(), cuda_core::DriverError> {
    /// use cuda_core::LaunchConfig;
    /// let shape = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (384, 1, 1), shared_mem_bytes: 200 << 10 }
    ///     .with_cluster((2, 1, 1));
    /// let clusters = f.max_active_clusters(&shape)?;
    /// let grid = (2 * clusters).min(2 * sms); // one persistent wave of pairs
    /// # let _ = grid; Ok(()) }
    /// ```
    pub fn max_active_clusters(&self, config: &ClusterLaunchConfig) -> Result<u32, DriverError> {
        let ctx = &self.module.ctx;
        prepare_cluster_function(self, config, ctx, "CudaFunction::max_active_clusters")?;
        let d = ctx.bind()?;
        let mut attr = LaunchAttr::Cluster(config.cluster_dim).driver_attribute();
        let shape = driver_launch_config(config.launch, std::ptr::null_mut(), &mut attr);
        let mut clusters: std::ffi::c_int = 0;
        // SAFETY: `shape` and `attr` are laid out as cuda.h's structs and
        // live across the call, which reads them and writes one int; the
        // function handle is live.
        unsafe { cu!(d, cuOccupancyMaxActiveClusters(&mut clusters, self.func, std::ptr::addr_of!(shape).cast())) }
            .map_err(|e| e.with_detail(format!("while asking how many clusters of kernel `{}` fit", self.name)))?;
        Ok(clusters.max(0) as u32)
    }
}

/// What every use of a cluster shape checks before the driver sees it (the
/// launch's own limits, the shape against the grid, a GPU of compute
/// capability 9.0 or later), and the function attribute a non-portable size
/// needs (the emulator takes any size). `api` names the caller in errors.
fn prepare_cluster_function(
    f: &CudaFunction,
    config: &ClusterLaunchConfig,
    ctx: &CudaContext,
    api: &'static str,
) -> Result<(), DriverError> {
    let refuse = |e: ClusterShapeError| e.refused_by(api);
    config.launch.validate()?;
    config.validate().map_err(refuse)?;
    let compute_capability = ctx.compute_capability()?;
    if compute_capability.0 < 9 {
        return Err(refuse(ClusterShapeError::NeedsSm90 { compute_capability }));
    }
    if config.non_portable && !ctx.backend().is_emulated() {
        let d = ctx.bind()?;
        // SAFETY: the function handle is live; the attribute takes an int.
        unsafe { cu!(d, cuFuncSetAttribute(f.func, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)) }?;
    }
    Ok(())
}

/// # Safety
/// As for [`launch_kernel_cluster_with_host_code`].
unsafe fn launch_cluster(
    f: &CudaFunction,
    config: &ClusterLaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&cuda_emulator::HostKernel>,
) -> Result<(), DriverError> {
    crate::module::check_same_context(f, stream, "launch_kernel_cluster")?;
    prepare_cluster_function(f, config, stream.context(), "launch_kernel_cluster")?;
    let c = config.cluster_dim;
    let how = format!("with clusters of ({}, {}, {}) blocks", c.0, c.1, c.2);
    // SAFETY: the caller's contract.
    unsafe { launch_ex(f, config.launch, stream, params, host, LaunchAttr::Cluster(c), &how) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(x: u32, y: u32) -> LaunchConfig {
        LaunchConfig { grid_dim: (x, y, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 }
    }

    #[test]
    fn shapes_that_divide_the_grid_pass() {
        grid(64, 1).with_cluster((8, 1, 1)).validate().unwrap();
        grid(16, 4).with_cluster((2, 2, 1)).validate().unwrap();
        grid(32, 1).with_cluster((16, 1, 1)).allow_non_portable().validate().unwrap();
    }

    #[test]
    fn wrong_shapes_are_refused_with_a_reason() {
        let e = grid(10, 1).with_cluster((4, 1, 1)).validate().unwrap_err();
        assert_eq!(e, ClusterShapeError::DoesNotDivideGrid { axis: 'x', grid: 10, cluster: 4 });
        assert_eq!(
            e.to_string(),
            "the cluster's 4 blocks in x do not divide the grid's 10; make grid_dim.x a multiple of cluster_dim.x"
        );
        let e = grid(32, 1).with_cluster((16, 1, 1)).validate().unwrap_err();
        assert!(matches!(e, ClusterShapeError::TooLarge { size: 16, max: 8, non_portable: false }));
        assert!(e.to_string().contains("allow_non_portable"), "{e}");
        let e = grid(32, 2).with_cluster((16, 2, 1)).allow_non_portable().validate().unwrap_err();
        assert!(matches!(e, ClusterShapeError::TooLarge { size: 32, max: 16, non_portable: true }));
        let e = grid(4, 1).with_cluster((0, 1, 1)).validate().unwrap_err();
        assert!(matches!(e, ClusterShapeError::ZeroDimension { .. }));
        let d: DriverError = e.into();
        assert_eq!(d.kind(), ErrorKind::InvalidLaunchConfig);
    }

    #[test]
    fn a_refusal_through_question_mark_reads_as_the_launches_do() {
        let shape = grid(10, 1).with_cluster((4, 1, 1)).validate().unwrap_err();
        let by_question_mark = DriverError::from(shape.clone()).to_string();
        let by_launch = shape.clone().refused_by("launch_kernel_cluster").to_string();
        assert!(by_question_mark.starts_with(&format!("invalid cluster shape: {shape}")), "{by_question_mark}");
        assert!(by_launch.starts_with(&format!("invalid cluster shape: {shape}")), "{by_launch}");
        assert!(by_launch.ends_with("[launch_kernel_cluster]"), "{by_launch}");
    }
}
