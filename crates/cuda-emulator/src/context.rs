//! The emulated device's contexts: the primary context, retained and
//! released like the driver's, and the fault each context carries.
//!
//! A kernel fault is sticky for the context it happened in, as on the GPU:
//! every later call on that context fails with it. It does not outlive the
//! context: when the last retain is released, the context is destroyed, and
//! the next retain makes a fresh one. So a program that drops every handle
//! of a faulted context gets a working one from the next `CudaContext::new`.
//! (Here the emulator is kinder than a GPU, whose driver refuses every new
//! context of a process after a fault: code that goes on after a fault must
//! do so in a new process to run on a GPU, which is what `cargo oxide test`
//! does for each test.)

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

use cuda_driver_sys::{CUcontext, CUresult, CUDA_ERROR_INVALID_CONTEXT, CUDA_SUCCESS};

/// One emulated context. Never freed (a handle may be used after its
/// context was destroyed: that use fails instead of touching freed memory).
pub(crate) struct Context {
    /// The sticky error (0 while healthy).
    sticky: AtomicI32,
    /// What the emulator found, for the first fault.
    detail: Mutex<Option<String>>,
    destroyed: AtomicBool,
    /// `CU_LIMIT_STACK_SIZE`, as `cuCtxSetLimit` last set it.
    stack_limit: AtomicUsize,
}

/// The per-thread stack a new context reports, the driver's default.
const DEFAULT_STACK_LIMIT: usize = 1024;

impl Context {
    fn new() -> &'static Context {
        Box::leak(Box::new(Context {
            sticky: AtomicI32::new(0),
            detail: Mutex::new(None),
            destroyed: AtomicBool::new(false),
            stack_limit: AtomicUsize::new(DEFAULT_STACK_LIMIT),
        }))
    }

    /// `CUDA_SUCCESS`, the sticky error of a faulted context, or
    /// `CUDA_ERROR_INVALID_CONTEXT` for a destroyed one.
    pub(crate) fn status(&self) -> CUresult {
        if self.destroyed.load(Ordering::SeqCst) {
            return CUDA_ERROR_INVALID_CONTEXT;
        }
        self.sticky.load(Ordering::SeqCst)
    }

    /// Marks the context failed with `code` (the first fault wins);
    /// `detail` explains it.
    pub(crate) fn fail(&self, code: CUresult, detail: Option<String>) {
        let _ = self.sticky.compare_exchange(CUDA_SUCCESS, code, Ordering::SeqCst, Ordering::SeqCst);
        if let Some(d) = detail {
            self.detail.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(d);
        }
    }

    /// The per-thread stack limit (`CU_LIMIT_STACK_SIZE`) in bytes.
    pub(crate) fn stack_limit(&self) -> usize {
        self.stack_limit.load(Ordering::SeqCst)
    }

    /// Remembers a new stack limit, as `cuCtxSetLimit` does.
    pub(crate) fn set_stack_limit(&self, bytes: usize) {
        self.stack_limit.store(bytes, Ordering::SeqCst);
    }

    /// The handle the driver API hands out.
    pub(crate) fn handle(&'static self) -> CUcontext {
        self as *const Context as CUcontext
    }

    /// The context behind a handle this module made (None for null).
    ///
    /// # Safety
    /// `handle` must be null or come from [`Context::handle`].
    pub(crate) unsafe fn from_handle(handle: CUcontext) -> Option<&'static Context> {
        // SAFETY: the caller's contract; contexts are never freed.
        unsafe { handle.cast::<Context>().as_ref() }
    }
}

/// The device's primary context and how often it is retained.
struct Primary {
    context: Option<&'static Context>,
    retains: usize,
}

static PRIMARY: Mutex<Primary> = Mutex::new(Primary { context: None, retains: 0 });

thread_local! {
    /// The calling thread's current context (`cuCtxSetCurrent`).
    static CURRENT: Cell<*const Context> = const { Cell::new(ptr::null()) };
}

/// `cuDevicePrimaryCtxRetain`: the primary context, made if it is not active.
pub(crate) fn retain_primary() -> &'static Context {
    let mut p = PRIMARY.lock().unwrap_or_else(|e| e.into_inner());
    p.retains += 1;
    let context: &'static Context = p.context.get_or_insert_with(Context::new);
    context
}

/// `cuDevicePrimaryCtxRelease`: the last release destroys the context.
pub(crate) fn release_primary() {
    let mut p = PRIMARY.lock().unwrap_or_else(|e| e.into_inner());
    p.retains = p.retains.saturating_sub(1);
    if p.retains == 0 {
        destroy(&mut p);
    }
}

fn destroy(p: &mut Primary) {
    if let Some(c) = p.context.take() {
        c.destroyed.store(true, Ordering::SeqCst);
    }
}

/// The calling thread's current context, if any.
pub(crate) fn current() -> Option<&'static Context> {
    // SAFETY: only `set_current` stores here, a pointer from `Context::handle` or null.
    unsafe { Context::from_handle(CURRENT.with(Cell::get).cast_mut().cast()) }
}

/// `cuCtxSetCurrent`.
pub(crate) fn set_current(context: Option<&'static Context>) {
    CURRENT.with(|c| c.set(context.map_or(ptr::null(), |c| c as *const Context)));
}

/// The status of the calling thread's current context (see
/// [`Context::status`]); `CUDA_ERROR_INVALID_CONTEXT` without one.
pub(crate) fn current_status() -> CUresult {
    current().map_or(CUDA_ERROR_INVALID_CONTEXT, Context::status)
}

/// The emulator's explanation of the fault of the context `handle`, if it
/// found one (a device panic is in the context's panic record instead).
///
/// # Safety
/// `handle` must be null or a context handle of the emulated driver.
pub unsafe fn fault_detail(handle: CUcontext) -> Option<String> {
    // SAFETY: the caller's contract.
    let context = unsafe { Context::from_handle(handle) }?;
    context.detail.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// A context of its own, outside the primary context's life (unit tests).
#[cfg(test)]
pub(crate) fn test_context() -> &'static Context {
    Context::new()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Held by every test of this crate that retains the primary context:
    /// it is process-wide, and tests run on parallel threads (a fault one
    /// test makes must not fail another's calls).
    pub(crate) static PRIMARY_CONTEXT: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_fault_stays_in_its_context_and_the_next_primary_context_is_fresh() {
        let _alone = PRIMARY_CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
        let first = retain_primary();
        let again = retain_primary();
        assert!(std::ptr::eq(first, again), "retains share the primary context");
        first.fail(719, Some("boom".into()));
        first.fail(700, Some("later".into()));
        assert_eq!(first.status(), 719, "the first fault wins");
        // SAFETY: a handle of this module.
        assert_eq!(unsafe { fault_detail(first.handle()) }.as_deref(), Some("boom"));
        release_primary();
        assert_eq!(first.status(), 719, "still retained once");
        release_primary();
        assert_eq!(first.status(), CUDA_ERROR_INVALID_CONTEXT, "destroyed with the last release");
        let fresh = retain_primary();
        assert!(!std::ptr::eq(first, fresh));
        assert_eq!(fresh.status(), CUDA_SUCCESS);
        set_current(Some(fresh));
        assert_eq!(current_status(), CUDA_SUCCESS);
        release_primary();
        assert_eq!(current_status(), CUDA_ERROR_INVALID_CONTEXT, "the current context was destroyed");
        set_current(None);
        assert_eq!(current_status(), CUDA_ERROR_INVALID_CONTEXT);
    }
}
