//! Safe RAII over the CUDA driver API.
//!
//! `libcuda.so.1` is opened at run time with `dlopen` (once per process), so
//! a program using this crate builds and starts on a machine without an
//! NVIDIA driver; there every entry point returns a [`DriverError`] of kind
//! [`ErrorKind::DriverNotFound`] that says so, instead of panicking.
//!
//! Ownership follows the driver's object tree: a [`CudaContext`] (the
//! device's primary context) is shared as `Arc`; each [`CudaStream`],
//! [`CudaModule`] and [`DeviceBuffer`] holds an `Arc` to its context, and each
//! [`CudaFunction`] one to its module, so nothing is released while in use.
//! Every call binds the right context to the calling thread first, so all of
//! these may be used from any thread.
//!
//! ```no_run
//! use std::ffi::c_void;
//! use cuda_core::{launch_kernel, CudaContext, DeviceBuffer, LaunchConfig};
//!
//! # fn main() -> Result<(), cuda_core::DriverError> {
//! # let ptx = "";
//! let ctx = CudaContext::new(0)?;
//! println!("{} (sm_{}{})", ctx.name()?, ctx.compute_capability()?.0, ctx.compute_capability()?.1);
//! let stream = ctx.default_stream();
//! let input = DeviceBuffer::from_host(&stream, &[1.0f32; 1024])?;
//! let output = DeviceBuffer::<f32>::zeroed(&stream, 1024)?;
//!
//! let module = ctx.load_module_ptx(ptx)?;
//! let scale = module.function("scale")?;
//! // One pointer per kernel parameter, each to the argument's bytes.
//! let (mut a, mut n, mut b) = (input.device_ptr(), input.len(), output.device_ptr());
//! let mut params = [
//!     &mut a as *mut u64 as *mut c_void,
//!     &mut n as *mut usize as *mut c_void,
//!     &mut b as *mut u64 as *mut c_void,
//! ];
//! // SAFETY: the kernel takes (*const f32, usize, *mut f32).
//! unsafe { launch_kernel(&scale, LaunchConfig::for_num_elems(1024), &stream, &mut params)? };
//! let result: Vec<f32> = output.to_host_vec(&stream)?;
//! # Ok(())
//! # }
//! ```
//!
//! Streams order work; [`CudaEvent`]s order streams against each other
//! ([`CudaStream::wait`]) and time them ([`CudaEvent::elapsed_ms`]);
//! [`CudaStream::launch_host_fn`] runs a Rust closure when a stream reaches it.
//! [`CudaContext::limits`], [`CudaFunction::attributes`] and the occupancy
//! queries ([`CudaFunction::max_potential_block_size`]) size launches.
//! [`Device`] answers device queries without a context ([`Device::all`]);
//! thread-block clusters launch with [`LaunchConfig::with_cluster`] and
//! [`launch_kernel_cluster`]; [`tensor_map`] builds validated TMA
//! descriptors; a kernel's panic reaches the host as a [`DevicePanic`]
//! inside its [`DriverError`].
//!
//! # Memory safety
//!
//! No safe call can cause undefined behaviour on the host:
//!
//! * Buffer elements implement [`DeviceRepr`] (every byte pattern is a valid
//!   value), so zeroed memory, memsets and whatever a kernel wrote are
//!   always valid `T`s when read back. `DeviceBuffer::<bool>` or
//!   `DeviceBuffer::<&u8>` cannot be created; uninitialised allocation
//!   ([`DeviceBuffer::alloc`]) is `unsafe`.
//! * Ranges are bounds-checked ([`DeviceBuffer::slice`] panics like slice
//!   indexing); copies check lengths and that buffer and stream share a context.
//! * An asynchronous copy with a [`PinnedHostBuffer`] records an event in
//!   that buffer; host access to it (`Deref`/`DerefMut`) and its drop wait
//!   for those events. (A guard borrowing the host memory would be unsound:
//!   `mem::forget` of it is safe and would free the borrow mid-copy.)
//! * A buffer used on several streams orders them: a read waits for the
//!   last write queued on another stream, a write for that and every read
//!   since (see [`DeviceSlice::order_read`]), so a copy never returns what a
//!   kernel on another stream has not finished writing.
//! * A [`DeviceBuffer`] is allocated on the stream it is made with, from the
//!   device's memory pool, and freed on that stream when dropped
//!   (`cuMemAllocAsync` / `cuMemFreeAsync`; [`MemPool`] tunes the pool). The
//!   allocation and the free count as writes in the ordering above, so the
//!   free waits for every kernel or copy queued on any stream, and a drop
//!   never blocks the host. (A device without memory pools falls back to
//!   `cuMemAlloc`; a drop then waits for the context's queued work.)
//! * A [`ManagedBuffer`] (`cuMemAllocManaged`) is shared by kernels and the
//!   host at one address. Its host slices come from
//!   [`ManagedBuffer::host`], which first waits for the last GPU write
//!   queued on any stream, and [`ManagedBuffer::host_mut`], which waits for
//!   every queued use; the slices borrow the buffer, so a launch that would
//!   touch it meanwhile is a borrow error, and graphs refuse it (a graph
//!   launch is not held back by borrows). Peer access between GPUs:
//!   [`CudaContext::enable_peer_access`], [`DeviceBuffer::copy_from_peer`].
//! * Drops never panic; errors there are ignored. A kernel fault is *sticky*
//!   ([`DriverError::is_sticky`]): it is reported by the next call that
//!   synchronises or submits work, naming the last kernel launched. It
//!   poisons the context it happened in; on a GPU the whole process (the
//!   driver refuses new contexts after a fault, so `cargo oxide test` runs
//!   each test in a process of its own), on the CPU emulator only that
//!   context (once every handle of it is dropped, [`CudaContext::new`] gets
//!   a fresh one).
//!
//! Only Linux is supported (the library is found as `libcuda.so.1`).
//!
//! # Layers
//!
//! As in cudarc, sys → result → safe. `cuda-driver-sys` is the raw layer:
//! the driver's C types, the table of entry points, loading `libcuda.so.1`;
//! no policy. This crate's `backend` module decides, once, where the table
//! comes from (the NVIDIA driver, or the `cuda-emulator` crate's table when
//! `OXIDE_EMULATE` selects a mode), and its `driver` module turns each
//! `CUresult` into a `Result<_, DriverError>`. The safe API on top asks a
//! context which [`Backend`] it runs on where the two differ (an emulated
//! launch hands the emulator the kernel's host code), and nowhere else.
//!
//! # Without a GPU
//!
//! With `OXIDE_EMULATE` set in the environment (`cargo oxide run --emulate`)
//! no driver is loaded: the [`emulator`] stands in for it, on host memory.
//! `OXIDE_EMULATE=1` (or `ptx`) runs the PTX the device linker produced, on
//! the `ptx-vm` virtual machine: every launch, raw [`launch_kernel`] and
//! cluster launches included. `OXIDE_EMULATE=host` runs kernels launched
//! through `cuda-host` as their Rust code on the CPU with CUDA's semantics
//! (debuggable with gdb; it proves the Rust, not oxide's output).

#![warn(missing_docs)]

/// The reserved names the device linker agrees on, generated by build.rs from
/// `compiler/include/oxide/Abi.def`.
mod abi {
    include!(concat!(env!("OUT_DIR"), "/abi.rs"));
}
mod backend;
mod cluster;
mod context;
mod cooperative;
mod device;
mod driver;
pub mod emulator;
mod error;
mod graph;
mod managed;
mod mem_pool;
mod memory;
mod module;
mod panic;
mod panic_message;
mod peer;
mod stream_local;
mod stream_order;
mod temp_buffer;
pub mod tensor_map;

pub use backend::Backend;

pub use cluster::{
    launch_kernel_cluster, launch_kernel_cluster_with_host_code, ClusterLaunchConfig, ClusterShapeError, MAX_NON_PORTABLE_CLUSTER_SIZE,
    MAX_PORTABLE_CLUSTER_SIZE,
};
pub use cooperative::{
    launch_kernel_cooperative, launch_kernel_cooperative_with_host_code, CooperativeLaunchConfig, CooperativeLaunchError,
};
pub use context::{CudaContext, CudaEvent, CudaStream, DeviceLimits};
pub use device::Device;
pub use driver::driver_version;
pub use error::{builtin_name, DriverError, ErrorKind};
pub use graph::{BodyGraph, ConditionalBodies, Graph, GraphCondition, GraphError, GraphExec, GraphNode, StreamCapture, TempNodes};
pub use managed::{ManagedBuffer, ManagedError, MemAdvice, MemLocation};
pub use mem_pool::MemPool;
pub use temp_buffer::TempBuffer;
pub use memory::{DeviceAtomicSlice, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, FillValue, PinnedHostBuffer};
/// `#[derive(DeviceRepr)]`: the impl of [`DeviceRepr`](trait@DeviceRepr), for a type
/// that checks out (see the trait).
pub use cuda_macros::DeviceRepr;
pub use module::{launch_kernel, launch_kernel_with_host_code, CudaFunction, CudaModule, FunctionAttributes, LaunchConfig};
pub use panic::DevicePanic;
pub use peer::PeerError;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        assert_send_sync::<CudaContext>();
        assert_send_sync::<CudaStream>();
        assert_send_sync::<CudaModule>();
        assert_send_sync::<CudaFunction>();
        assert_send_sync::<DriverError>();
    }

    #[test]
    fn for_num_elems_rounds_up() {
        let cases = [
            (0, 1),
            (1, 1),
            (255, 1),
            (256, 1),
            (257, 2),
            (1024, 4),
            (1025, 5),
            (u32::MAX, 16_777_216),
        ];
        for (n, blocks) in cases {
            let c = LaunchConfig::for_num_elems(n);
            assert_eq!(c.grid_dim, (blocks, 1, 1), "n = {n}");
            assert_eq!(c.block_dim, (256, 1, 1));
            assert_eq!(c.shared_mem_bytes, 0);
            assert!(c.validate().is_ok());
        }
    }

    fn config(grid_dim: (u32, u32, u32), block_dim: (u32, u32, u32)) -> LaunchConfig {
        LaunchConfig {
            grid_dim,
            block_dim,
            shared_mem_bytes: 0,
        }
    }

    #[test]
    fn launch_config_validation() {
        assert!(config((1, 1, 1), (1024, 1, 1)).validate().is_ok());
        assert!(config((65535, 65535, 65535), (32, 32, 1))
            .validate()
            .is_ok());
        let bad = [
            (
                config((0, 1, 1), (256, 1, 1)),
                "grid_dim (0, 1, 1) has a zero dimension",
            ),
            (
                config((1, 1, 1), (256, 0, 1)),
                "block_dim (256, 0, 1) has a zero dimension",
            ),
            (
                config((1, 1, 1), (1025, 1, 1)),
                "1025 threads per block; the limit is 1024",
            ),
            (config((1, 1, 1), (64, 32, 1)), "2048 threads per block"),
            (config((1, 1, 1), (1, 1, 128)), "block_dim.z = 128"),
            (config((1, 65536, 1), (1, 1, 1)), "exceeds the limits"),
            (config((u32::MAX, 1, 1), (1, 1, 1)), "exceeds the limits"),
        ];
        for (cfg, text) in bad {
            let e = cfg.validate().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidLaunchConfig);
            assert_eq!(e.name(), "OXIDE_INVALID_LAUNCH_CONFIG");
            assert!(e.code() < 0);
            let shown = e.to_string();
            assert!(shown.starts_with("invalid launch config: "), "{shown}");
            assert!(shown.contains(text), "{shown:?} lacks {text:?}");
            assert!(shown.ends_with("[launch_kernel]"), "{shown}");
        }
    }

    #[test]
    fn sticky_errors() {
        for code in [700, 702, 710, 714, 715, 716, 717, 718, 719] {
            assert!(DriverError::from_code(code, "cuCtxSynchronize").is_sticky(), "{code}");
        }
        for code in [1, 2, 100, 200, 218, 400, 500, 600, 701, 999] {
            assert!(!DriverError::from_code(code, "cuX").is_sticky(), "{code}");
        }
        let own = config((0, 1, 1), (1, 1, 1)).validate().unwrap_err();
        assert!(!own.is_sticky());
    }

    fn limits() -> DeviceLimits {
        DeviceLimits {
            max_threads_per_block: 1024,
            max_block_dim: (1024, 1024, 64),
            max_grid_dim: (i32::MAX as u32, 65535, 65535),
            max_shared_memory_per_block: 48 * 1024,
            max_shared_memory_per_block_optin: 227 * 1024,
            max_shared_memory_per_multiprocessor: 228 * 1024,
            total_constant_memory: 64 * 1024,
            warp_size: 32,
            max_registers_per_block: 65536,
            max_threads_per_multiprocessor: 2048,
            multiprocessor_count: 132,
        }
    }

    #[test]
    fn launch_config_against_device_limits() {
        let l = limits();
        assert!(config((1, 1, 1), (1024, 1, 1)).validate_for(&l).is_ok());
        let mut c = config((1, 1, 1), (256, 1, 1));
        c.shared_mem_bytes = 227 * 1024;
        assert!(c.validate_for(&l).is_ok());
        c.shared_mem_bytes += 1;
        let e = c.validate_for(&l).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidLaunchConfig);
        assert!(e.to_string().contains("allows at most 232448 per block"), "{e}");

        let small = DeviceLimits { max_threads_per_block: 512, max_block_dim: (512, 512, 64), max_grid_dim: (100, 10, 1), ..l };
        let e = config((1, 1, 1), (1024, 1, 1)).validate_for(&small).unwrap_err();
        assert!(e.to_string().contains("1024 threads per block; this device allows 512"), "{e}");
        let e = config((1, 1, 2), (1, 1, 1)).validate_for(&small).unwrap_err();
        assert!(e.to_string().contains("grid_dim (1, 1, 2) exceeds this device's (100, 10, 1)"), "{e}");
        let e = config((1, 1, 1), (1, 1, 128)).validate_for(&small).unwrap_err();
        assert!(e.to_string().contains("block_dim.z = 128"), "generic check first: {e}");
    }

    #[test]
    fn event_and_stream_handles_are_send_and_sync() {
        assert_send_sync::<CudaEvent>();
        assert_send_sync::<DeviceLimits>();
        assert_send_sync::<FunctionAttributes>();
    }

    #[test]
    fn error_name_table() {
        assert_eq!(builtin_name(0), Some(("CUDA_SUCCESS", "no error")));
        assert_eq!(builtin_name(2).unwrap().0, "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(builtin_name(218).unwrap().0, "CUDA_ERROR_INVALID_PTX");
        assert_eq!(builtin_name(700).unwrap().0, "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert_eq!(builtin_name(719).unwrap().0, "CUDA_ERROR_LAUNCH_FAILED");
        assert_eq!(builtin_name(999).unwrap().0, "CUDA_ERROR_UNKNOWN");
        assert_eq!(builtin_name(12345), None);
    }

    #[test]
    fn driver_error_display() {
        // Without a loaded driver the built-in table is used; with one, the
        // driver gives the same name and message for this code.
        let e = DriverError::from_code(2, "cuMemAlloc_v2");
        assert_eq!(e.kind(), ErrorKind::Driver);
        assert_eq!(
            (e.code(), e.name(), e.operation()),
            (2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc_v2")
        );
        assert_eq!(
            e.to_string(),
            "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory [cuMemAlloc_v2]"
        );
        let e = e.with_detail("first").with_detail("second");
        assert_eq!(e.detail(), Some("first\nsecond"));
        assert!(e.to_string().ends_with("[cuMemAlloc_v2]\nfirst\nsecond"));
        assert_eq!(
            DriverError::from_code(100, "cuInit").kind(),
            ErrorKind::NoDevice
        );
        let odd = DriverError::from_code(4242, "cuX");
        assert_eq!(odd.kind(), ErrorKind::Driver);
        assert!(odd.to_string().contains("(4242)"), "{odd}");
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(odd);
        assert!(boxed.to_string().contains("cuX"));
    }

    /// On a machine with no driver every entry point fails cleanly with the
    /// helpful message; on a GPU machine the check is skipped.
    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        let e = match CudaContext::new(0) {
            Ok(_) => return eprintln!("skipped: a CUDA driver and GPU are present"),
            Err(e) if e.kind() != ErrorKind::DriverNotFound => {
                return eprintln!("skipped: driver present ({e})");
            }
            Err(e) => e,
        };
        let text = e.to_string();
        assert!(
            text.starts_with("no CUDA driver found: libcuda.so.1 could not be loaded ("),
            "{text}"
        );
        assert!(
            text.contains("oxide programs need an NVIDIA driver to run kernels"),
            "{text}"
        );
        assert!(
            text.contains("`cargo oxide doctor` checks the setup."),
            "{text}"
        );
        assert_eq!((e.code(), e.name()), (-1, "OXIDE_DRIVER_NOT_FOUND"));
        for other in [
            CudaContext::device_count().map(drop).unwrap_err(),
            driver_version().map(drop).unwrap_err(),
            CudaContext::new(3).map(drop).unwrap_err(),
        ] {
            assert_eq!(other, e);
        }
    }
}
