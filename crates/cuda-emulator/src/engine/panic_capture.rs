//! Device panics on the CPU: an emulated thread's kernel code runs under
//! `catch_unwind`, and a panic hook records where it panicked (file, line,
//! column, message) without printing, so the launch can fail with the same
//! panic record a GPU leaves ([`HostPanic`]).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Once;

use super::kernel::{HostKernel, HostPanic};
use super::thread::on_fiber;

thread_local! {
    /// Where the last panic in kernel code happened, from the panic hook.
    static LAST_PANIC: Cell<Option<(String, String, u32, u32)>> = const { Cell::new(None) };
}

/// Runs the kernel's host code for the current emulated thread; a panic
/// comes back as a [`HostPanic`] of `thread` in `block`.
///
/// # Safety
/// `params` must be what `kernel` expects (the launch's contract).
pub(super) unsafe fn run_kernel(
    kernel: &HostKernel,
    params: *const *mut c_void,
    thread: (u32, u32, u32),
    block: (u32, u32, u32),
) -> Result<(), HostPanic> {
    // SAFETY: the caller's contract.
    let outcome = std::panic::catch_unwind(|| unsafe { (kernel.call)(kernel.data, params) });
    let Err(payload) = outcome else { return Ok(()) };
    let (message, file, line, column) = LAST_PANIC.with(Cell::take).unwrap_or_else(|| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_string());
        (text, "<unknown>".to_string(), 0, 0)
    });
    std::mem::forget(payload); // dropping it could unwind again; it is small
    Err(HostPanic { message, file, line, column, thread, block })
}

/// Records where kernel code panicked (and keeps the default hook quiet for
/// it: the launch's error reports the panic); other panics go to the hook
/// that was installed before.
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !on_fiber() {
                return previous(info);
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| info.to_string());
            let (file, line, column) =
                info.location().map_or(("<unknown>".to_string(), 0, 0), |l| (l.file().to_string(), l.line(), l.column()));
            LAST_PANIC.with(|p| p.set(Some((message, file, line, column))));
        }));
    });
}
