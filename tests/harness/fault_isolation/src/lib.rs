//! One test's kernel fault does not fail the other tests of the run.
//!
//! A kernel fault poisons the context it happened in, and on a GPU the whole
//! process: the driver refuses new contexts afterwards. So `cargo oxide test`
//! runs each test in a process of its own (cargo-oxide is the test binary's
//! runner), on a GPU and on the CPU emulator alike. The tests are named in
//! the order they are listed: `a_…` faults and fails (ignored unless asked
//! for: scripts/test.sh runs it with `--include-ignored` and expects exactly
//! it to fail), `b_…` faults and checks the report, the others run kernels
//! and must pass.

use cuda_device::{kernel, thread, DisjointSlice};

/// `out[i] = value + i`.
#[kernel]
pub fn fill(value: u32, mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get() as u32;
    if let Some(o) = out.get_mut(idx) {
        *o = value + i;
    }
}

/// `out[i] = input[i + 1]`: the last thread reads past the end and panics.
#[kernel]
pub fn shifted_copy(input: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = input[i + 1];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_core::{CudaContext, CudaStream, DeviceBuffer, ErrorKind, LaunchConfig};
    use cuda_host::{cuda_launch, load_kernel_module, HostError, KernelModule};
    use std::sync::Arc;

    const N: usize = 256;

    /// A context, its stream and this crate's kernels; `None` (after saying
    /// so) where there is nothing to run them on: no GPU and no emulator, or
    /// a build without the device linker (plain `cargo test`).
    fn setup(test: &str) -> Option<(Arc<CudaContext>, Arc<CudaStream>, KernelModule)> {
        let ctx = match CudaContext::new(0) {
            Ok(ctx) => ctx,
            Err(e) if matches!(e.kind(), ErrorKind::DriverNotFound | ErrorKind::NoDevice) => {
                eprintln!("skipped ({test}): no GPU, and not emulated (`cargo oxide test` emulates here): {e}");
                return None;
            }
            Err(e) => panic!("CudaContext::new(0): {e}"),
        };
        let stream = ctx.default_stream();
        match load_kernel_module(&ctx, "fault_isolation") {
            Ok(module) => Some((ctx, stream, module)),
            Err(e @ (HostError::ModuleNotFound { .. } | HostError::ImageVersionMismatch { .. })) => {
                eprintln!("skipped ({test}): not built by the device linker (`cargo oxide test` is): {e}");
                None
            }
            Err(e) => panic!("load_kernel_module: {e}"),
        }
    }

    fn config() -> LaunchConfig {
        LaunchConfig::for_num_elems(N as u32)
    }

    /// Launches the faulting kernel; the fault surfaces at the copy back.
    fn launch_fault(stream: &CudaStream, module: &KernelModule) -> Result<Vec<u32>, cuda_core::DriverError> {
        let input = DeviceBuffer::from_host(stream, &[7u32; N])?;
        let mut out = DeviceBuffer::<u32>::zeroed(stream, N)?;
        cuda_launch! {
            kernel: shifted_copy, stream: stream, module: module, config: config(),
            args: [slice(input), slice_mut(out)]
        }
        .expect("the launch itself succeeds; the fault comes with the next synchronisation");
        out.to_host_vec(stream)
    }

    fn check_fill(value: u32) {
        let Some((_ctx, stream, module)) = setup("fill") else { return };
        let mut out = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
        cuda_launch! {
            kernel: fill, stream: stream, module: module, config: config(),
            args: [value, slice_mut(out)]
        }
        .unwrap();
        let want: Vec<u32> = (0..N as u32).map(|i| value + i).collect();
        assert_eq!(out.to_host_vec(&stream).unwrap(), want);
    }

    #[test]
    #[ignore = "fails on purpose: scripts/test.sh runs it (--include-ignored) to show that the other tests pass"]
    fn a_failing_test_whose_kernel_faults() {
        let Some((_ctx, stream, module)) = setup("a_failing_test_whose_kernel_faults") else { return };
        launch_fault(&stream, &module).unwrap();
    }

    #[test]
    fn b_a_kernel_fault_is_reported_to_its_own_test() {
        let Some((ctx, stream, module)) = setup("b_a_kernel_fault_is_reported_to_its_own_test") else { return };
        let e = launch_fault(&stream, &module).unwrap_err();
        assert!(e.is_sticky(), "{e}");
        let panic = e.device_panic().expect("the device panic is in the error");
        assert!(panic.message.starts_with("index out of bounds: the len is 256 but the index is 256"), "{panic}");
        assert_eq!(panic.thread, (255, 0, 0));
        // The context stays unusable for the rest of this test.
        assert!(ctx.synchronize().unwrap_err().is_sticky());
    }

    #[test]
    fn c_a_kernel_runs_after_another_tests_fault() {
        check_fill(1000);
    }

    #[test]
    fn d_another_kernel_runs_after_it() {
        for value in [1, 2, 3] {
            check_fill(value);
        }
    }
}
