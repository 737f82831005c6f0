//! The per-thread stack limit, on the GPU where there is one, else on the
//! CPU emulator (which remembers the limit as the driver does):
//! `ensure_stack_size` raises it to at least what is asked and never lowers
//! it, and a second context handle of the same device sees the raise.

use cuda_core::CudaContext;
use cuda_driver_sys::DriverApi;

// One test in this binary: it chooses the backend for the process.
#[test]
fn ensure_stack_size_raises_the_limit_and_never_lowers_it() {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "ptx");
    }
    let ctx = CudaContext::new(0).unwrap();
    let before = ctx.stack_size().unwrap();
    assert!(before > 0, "a context has a stack");

    let wanted = before + 3000;
    ctx.ensure_stack_size(wanted).unwrap();
    let raised = ctx.stack_size().unwrap();
    assert!(raised >= wanted, "asked for {wanted}, the limit is {raised}");

    // Asking for less keeps what the context has.
    ctx.ensure_stack_size(before).unwrap();
    assert_eq!(ctx.stack_size().unwrap(), raised);

    // Another handle of the same (primary) context sees the raise and
    // leaves it.
    let other = CudaContext::new(0).unwrap();
    other.ensure_stack_size(wanted).unwrap();
    assert_eq!(other.stack_size().unwrap(), raised);
}
