//! Device panics on the CPU: an emulated thread's kernel code runs under
//! `catch_unwind`, and a panic hook records where it panicked (file, line,
//! column, message) without printing, so the launch can fail with the same
//! panic record a GPU leaves ([`HostPanic`]).
//!
//! A panic that cannot unwind (out of an `extern "C"` function, a
//! destructor panicking while a panic unwinds, kernel code built with
//! `panic=abort`) never reaches `catch_unwind`: Rust prints "thread caused
//! non-unwinding panic. aborting." and calls `abort()`. On a GPU the same
//! panic is a trap that fails the launch, so the emulator catches the
//! `SIGABRT` that follows a panic its hook recorded on an emulated thread,
//! and ends that thread the way a failed thread ends (its fiber is dropped,
//! never resumed): the launch fails with the first panic's message and
//! place. Only that case is taken: an abort with no panic pending on the
//! fiber (a heap corruption found by `malloc`, an explicit
//! `std::process::abort`) or inside a hook's critical part aborts the
//! process as before.
//!
//! The OS thread keeps a count of panics in flight that Rust's unwinding
//! would have reset (`std::thread::panicking()` would answer `true` there
//! from then on), so the engine never runs a launch on the caller's thread
//! (`launch.rs`): its worker threads end with the launch. A user's own
//! `SIGABRT` handler installed after the first emulated launch replaces
//! this one.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::{Once, OnceLock};

use super::kernel::{HostKernel, HostPanic};
use super::thread::{hook_running, on_fiber};
use super::watchdog::{sigaction, SigAction, SA_NODEFER, SA_SIGINFO};

/// Where a panic of kernel code happened: message, file, line, column.
type PanicPlace = (String, String, u32, u32);

thread_local! {
    /// The first panic of the running kernel code not yet caught, from the
    /// panic hook (a panic that cannot unwind is often a second one: Rust's
    /// "panic in a function that cannot unwind" follows the user's panic).
    static PENDING_PANIC: Cell<Option<PanicPlace>> = const { Cell::new(None) };
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
    PENDING_PANIC.with(|p| p.set(None));
    // SAFETY: the caller's contract.
    let outcome = std::panic::catch_unwind(|| unsafe { (kernel.call)(kernel.data, params) });
    let Err(payload) = outcome else { return Ok(()) };
    let (message, file, line, column) = PENDING_PANIC.with(Cell::take).unwrap_or_else(|| {
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

/// The panic of the running kernel code that a `SIGABRT` follows, if one
/// is pending: taken, so it is reported once.
pub(super) fn take_pending_panic(thread: (u32, u32, u32), block: (u32, u32, u32)) -> Option<HostPanic> {
    let (message, file, line, column) = PENDING_PANIC.with(Cell::take)?;
    Some(HostPanic { message, file, line, column, thread, block })
}

/// Whether kernel code on this OS thread panicked and the panic was not
/// caught yet (reads one thread-local: safe in a signal handler).
fn panic_pending() -> bool {
    PENDING_PANIC.with(|p| {
        let pending = p.take();
        let some = pending.is_some();
        p.set(pending);
        some
    })
}

/// Records where kernel code panicked (and keeps the default hook quiet for
/// it: the launch's error reports the panic); other panics go to the hook
/// that was installed before. Also installs the `SIGABRT` handler that
/// turns a panic that cannot unwind into a failed launch.
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
            PENDING_PANIC.with(|p| {
                // The first panic is the kernel's; a later one while it is
                // pending is Rust's reaction to it.
                let first = p.take().unwrap_or((message, file, line, column));
                p.set(Some(first));
            });
        }));
        install_abort_handler();
    });
}

/// The `SIGABRT` disposition before ours, called for every abort that is
/// not a kernel panic's.
static PREVIOUS_ABORT: OnceLock<SigAction> = OnceLock::new();

const SIGABRT: c_int = 6;

fn install_abort_handler() {
    let ours = SigAction {
        handler: on_abort as *const () as usize,
        mask: [0; 16],
        // NODEFER: the handler may leave for good (to the scheduler), and
        // SIGABRT must not stay blocked on the worker after it.
        flags: SA_SIGINFO | SA_NODEFER,
        restorer: 0,
    };
    let mut previous = SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 };
    // SAFETY: both structs have the kernel ABI's layout; `on_abort` has the
    // SA_SIGINFO handler's signature.
    if unsafe { sigaction(SIGABRT, &ours, &mut previous) } == 0 {
        let _ = PREVIOUS_ABORT.set(previous);
    }
}

extern "C" fn on_abort(signal: c_int, info: *mut c_void, context: *mut c_void) {
    if on_fiber() && !hook_running() && panic_pending() {
        // SAFETY: this is the SIGABRT handler, raised synchronously by
        // `abort()` after the panic hook ran on this fiber, in kernel code
        // (not a hook): `fail_after_abort`'s contract.
        unsafe { super::scheduler::fail_after_abort(take_pending_panic) };
    }
    // Not a kernel panic's abort: what would have happened without us.
    // Returning from a SIGABRT handler makes `abort()` restore the default
    // action and raise again, so the process still ends.
    // SIG_DFL (abort() takes it from here) or SIG_IGN: nothing to do.
    if let Some(previous) = PREVIOUS_ABORT.get() {
        // SAFETY: read back from `sigaction` when ours was installed.
        unsafe { previous.forward(signal, info, context) };
    }
}
