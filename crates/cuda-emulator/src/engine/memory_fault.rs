//! Illegal addresses in host code: a kernel that runs off the end of a
//! device allocation through a raw pointer touches the allocation's guard
//! page (`crate::memory`), and the processor's fault (`SIGSEGV`) fails the
//! launch as `CUDA_ERROR_ILLEGAL_ADDRESS` would on a GPU, naming the
//! address, instead of corrupting or killing the host.
//!
//! The handler acts only when all of these hold: an emulated thread runs
//! kernel code on the faulting OS thread (not a hook, which may hold a lock
//! or the block), and the address lies in a guard page of a live device
//! allocation. Then the faulting access did not happen, and the thread is
//! ended as a failed thread ends (its fiber dropped, never resumed). Every
//! other fault goes to the handler installed before (Rust's stack-overflow
//! report, or the default: the process dies as it would have).

use std::ffi::{c_int, c_void};
use std::sync::{Once, OnceLock};

use super::thread::{hook_running, on_fiber};
use super::watchdog::{sigaction, SigAction, SA_NODEFER, SA_SIGINFO};

const SIGBUS: c_int = 7;
const SIGSEGV: c_int = 11;
const SA_ONSTACK: c_int = 0x0800_0000;

/// The dispositions before ours: `SIGSEGV`, `SIGBUS`.
static PREVIOUS: [OnceLock<SigAction>; 2] = [OnceLock::new(), OnceLock::new()];

/// Installs the handler (once per process).
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (slot, signal) in PREVIOUS.iter().zip([SIGSEGV, SIGBUS]) {
            let ours = SigAction {
                handler: on_fault as *const () as usize,
                mask: [0; 16],
                // ONSTACK as Rust's own handler (a stack overflow is not
                // ours, but reaches us first); NODEFER: the handler may leave
                // for good, and the signal must not stay blocked after it.
                flags: SA_SIGINFO | SA_NODEFER | SA_ONSTACK,
                restorer: 0,
            };
            let mut previous = SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 };
            // SAFETY: both structs have the kernel ABI's layout; `on_fault`
            // has the SA_SIGINFO handler's signature.
            if unsafe { sigaction(signal, &ours, &mut previous) } == 0 {
                let _ = slot.set(previous);
            }
        }
    });
}

/// `si_addr` of a fault's `siginfo_t` (x86-64 Linux: after three ints and
/// their padding).
///
/// # Safety
/// `info` must be the kernel's `siginfo_t` of a `SIGSEGV` or `SIGBUS`.
unsafe fn fault_address(info: *const c_void) -> u64 {
    // SAFETY: the caller's contract; the field is a pointer at offset 16.
    unsafe { info.cast::<u8>().add(16).cast::<u64>().read() }
}

extern "C" fn on_fault(signal: c_int, info: *mut c_void, context: *mut c_void) {
    if on_fiber() && !hook_running() {
        // SAFETY: the kernel's siginfo_t of this SIGSEGV/SIGBUS handler.
        let address = unsafe { fault_address(info) };
        if let Some(what) = crate::memory::describe_guard_fault(address) {
            // SAFETY: this handler runs for a fault of kernel code (not a
            // hook) on this OS thread's running emulated thread.
            unsafe { super::scheduler::fail_after_memory_fault(what) };
        }
    }
    let slot = if signal == SIGSEGV { &PREVIOUS[0] } else { &PREVIOUS[1] };
    // SAFETY: read back from `sigaction` when ours was installed.
    let forwarded = slot.get().is_some_and(|previous| unsafe { previous.forward(signal, info, context) });
    if !forwarded {
        // SIG_DFL (or SIG_IGN, which the kernel does not honour for a
        // fault): restore it; returning re-runs the access, which then
        // ends the process as it would have without us.
        let default = SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 };
        // SAFETY: a valid struct; resetting a disposition is always allowed.
        unsafe { sigaction(signal, &default, std::ptr::null_mut()) };
    }
}
