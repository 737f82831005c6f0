//! `CudaFunction::max_active_clusters` on the GPU where there is one, else on
//! the CPU emulator: clusters of two blocks that each take a multiprocessor's
//! shared memory fit at most half the multiprocessors; a kernel compiled for
//! one cluster shape answers for that shape and refuses another; shapes a
//! launch would refuse are refused before the driver sees them.

use cuda_core::{ClusterShapeError, CudaContext, LaunchConfig};
use cuda_driver_sys::DriverApi;

/// `free` takes any cluster shape; `pair` was compiled for clusters of two.
const PTX: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry free() { ret; }
.visible .entry pair() .reqnctapercluster 2, 1, 1 { ret; }
";

fn shape(grid: u32, threads: u32, shared: u32, cluster: u32) -> cuda_core::ClusterLaunchConfig {
    LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: shared }
        .with_cluster((cluster, 1, 1))
}

// One test in this binary: it chooses the backend for the process.
#[test]
fn clusters_resident_at_once() {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "ptx");
    }
    let ctx = CudaContext::new(0).unwrap();
    let emulated = ctx.backend().is_emulated();
    let limits = ctx.limits().unwrap();
    let sms = limits.multiprocessor_count;
    let module = ctx.load_module_ptx(PTX).unwrap();
    let free = module.function("free").unwrap();

    // Blocks that need a whole multiprocessor's shared memory each.
    let big = limits.max_shared_memory_per_block_optin - 1024;
    free.set_max_dynamic_shared_memory(big).unwrap();
    let per_sm = free.max_active_blocks_per_multiprocessor(384, big as usize).unwrap();
    assert_eq!(per_sm, 1, "one such block a multiprocessor");
    let pairs = free.max_active_clusters(&shape(2, 384, big, 2)).unwrap();
    eprintln!("{sms} multiprocessors: {pairs} clusters of 2 blocks of {big} bytes");
    assert!(pairs >= 1 && 2 * pairs <= sms, "{pairs} pairs on {sms} multiprocessors");
    if emulated {
        assert_eq!(pairs, sms / 2, "the emulator's multiprocessors form one group");
    }
    let quads = free.max_active_clusters(&shape(4, 384, big, 4)).unwrap();
    assert!(4 * quads <= sms && quads <= pairs, "{quads} clusters of 4 against {pairs} of 2");

    // Small blocks: several a multiprocessor, never more blocks than slots.
    let small = free.max_active_clusters(&shape(8, 128, 0, 8)).unwrap();
    let slots = free.max_active_blocks_per_multiprocessor(128, 0).unwrap() * sms;
    assert!(small >= 1 && 8 * small <= slots, "{small} clusters of 8 in {slots} block slots");

    // The kernel compiled for pairs answers for pairs, and refuses fours.
    let pair = module.function("pair").unwrap();
    assert!(pair.max_active_clusters(&shape(2, 128, 0, 2)).unwrap() >= 1);
    let e = pair.max_active_clusters(&shape(4, 128, 0, 4)).unwrap_err();
    eprintln!("a kernel of pairs asked for fours: {e}");
    if emulated {
        assert_eq!(e.name(), "CUDA_ERROR_INVALID_CLUSTER_SIZE", "{e}");
        assert!(e.to_string().contains("kernel `pair`"), "{e}");
    }

    // Shapes a launch refuses are refused here, before the driver.
    let e = free.max_active_clusters(&shape(3, 128, 0, 2)).unwrap_err();
    assert!(e.to_string().contains(&ClusterShapeError::DoesNotDivideGrid { axis: 'x', grid: 3, cluster: 2 }.to_string()), "{e}");
    let e = free.max_active_clusters(&shape(16, 128, 0, 16)).unwrap_err();
    assert!(e.to_string().contains("16"), "a cluster of 16 without allow_non_portable: {e}");
}
