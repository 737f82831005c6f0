//! What an intrinsic stub does when host code calls it.

/// Aborts: `intrinsic` only exists on the GPU.
///
/// Stubs are `extern "C"`, so this panic cannot unwind out of them; the process
/// aborts after printing the message, which is what we want for a call that can
/// only be a mistake (a kernel called like a function instead of launched).
#[cold]
pub(crate) fn not_on_device(intrinsic: &str) -> ! {
    panic!(
        "oxide: the GPU intrinsic `{intrinsic}` was called on the host. \
         Kernels run on the GPU: launch them with `cuda_launch!` instead of calling them."
    )
}
