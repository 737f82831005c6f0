//! The watchdog: a launch never hangs on a thread that spins without
//! waiting.
//!
//! The host-code engine switches an emulated thread out only where it waits
//! (barriers, warp collectives, `cuda_device` atomics, `nanosleep`). A loop
//! on a `core::sync::atomic` (`while flag.load(Acquire) == 0 {}`, legal on
//! the GPU since sm_70) never waits, so the thread that would set the flag
//! never runs. Each worker OS thread counts its switches; a watchdog thread
//! looks every [`TICK`], and when a worker has not switched for the limit
//! ([`ENV`], seconds) while other threads of its block (or blocks not yet
//! started) wait for their turn, it signals that OS thread. The signal
//! handler takes the spinning thread off its fiber for good, and the launch
//! fails naming the threads involved (`deadlock.rs`).
//!
//! The handler acts only in kernel code, never inside a hook (which may hold
//! a lock or the block), and only on the request it was sent for. Ticks count
//! only while the watchdog itself runs, and a process under a debugger
//! (`TracerPid` in /proc/self/status) is left alone, so time stopped at a
//! breakpoint is never taken for a stall. x86-64 Linux only, like the fibers.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The environment variable with the watchdog's limit, in seconds (`0`
/// turns it off).
pub(crate) const ENV: &str = "OXIDE_EMULATE_WATCHDOG_S";

/// The limit when [`ENV`] is unset: long enough for any honest stretch of
/// computation between two waits of a debug-built kernel.
const DEFAULT_LIMIT: Duration = Duration::from_secs(10);

/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(100);

/// `SIGURG`: ignored by default and used by no runtime of the process (Go
/// picked it for preemption for the same reasons).
const SIGNAL: c_int = 23;

/// The watchdog's limit, read once; `None` when turned off.
fn limit() -> Option<Duration> {
    static LIMIT: OnceLock<Option<Duration>> = OnceLock::new();
    *LIMIT.get_or_init(|| match std::env::var(ENV) {
        Err(_) => Some(DEFAULT_LIMIT),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => (s > 0.0).then(|| Duration::from_secs_f64(s)),
            _ => {
                eprintln!("oxide emulator: {ENV}={v:?} is not a number of seconds; the watchdog keeps {DEFAULT_LIMIT:?}");
                Some(DEFAULT_LIMIT)
            }
        },
    })
}

/// The limit as the stall report gives it ("10 s").
pub(super) fn describe_limit() -> String {
    limit().map_or_else(|| "ever".to_string(), |d| format!("{} s", d.as_secs_f64()))
}

/// One worker OS thread, as the watchdog sees it.
pub(crate) struct WorkerWatch {
    /// `pthread_self()` of the worker.
    thread: usize,
    /// Fibers resumed so far (the worker's progress).
    switches: AtomicU64,
    /// Whether other threads of its block, or blocks not yet started,
    /// waited when it last resumed a thread.
    others_waiting: AtomicBool,
    /// Whether it runs a block now.
    in_block: AtomicBool,
    /// `switches + 1` when the watchdog asked it to stop the running thread
    /// (0: no request); a request made before the next switch is stale.
    stop_at: AtomicU64,
    /// The watchdog's own bookkeeping: the count it saw last, and how many
    /// ticks it has not moved.
    seen: AtomicU64,
    stalled_ticks: AtomicU32,
}

impl WorkerWatch {
    fn new(thread: usize) -> WorkerWatch {
        WorkerWatch {
            thread,
            switches: AtomicU64::new(0),
            others_waiting: AtomicBool::new(false),
            in_block: AtomicBool::new(false),
            stop_at: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            stalled_ticks: AtomicU32::new(0),
        }
    }

    /// The scheduler resumes a thread; `others_waiting` says whether
    /// anything else waits to run meanwhile.
    pub(super) fn switched(&self, others_waiting: bool) {
        self.switches.fetch_add(1, Relaxed);
        self.others_waiting.store(others_waiting, Relaxed);
    }

    pub(super) fn enter_block(&self) {
        self.in_block.store(true, Relaxed);
    }

    pub(super) fn leave_block(&self) {
        self.in_block.store(false, Relaxed);
    }

    /// Whether the watchdog asked to stop the thread running now.
    pub(super) fn asked_to_stop(&self) -> bool {
        self.stop_at.load(Relaxed) == self.switches.load(Relaxed) + 1
    }
}

/// The worker's registration; unregisters on drop.
pub(super) struct WatchGuard(Arc<WorkerWatch>);

impl std::ops::Deref for WatchGuard {
    type Target = WorkerWatch;
    fn deref(&self) -> &WorkerWatch {
        &self.0
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        WATCHED.lock().unwrap_or_else(|p| p.into_inner()).retain(|w| !Arc::ptr_eq(w, &self.0));
    }
}

/// The workers of every running launch.
static WATCHED: Mutex<Vec<Arc<WorkerWatch>>> = Mutex::new(Vec::new());

extern "C" {
    fn pthread_self() -> usize;
    fn pthread_kill(thread: usize, signal: c_int) -> c_int;
    pub(super) fn sigaction(signal: c_int, action: *const SigAction, previous: *mut SigAction) -> c_int;
}

/// `struct sigaction` of x86-64 Linux (glibc fills in the restorer).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct SigAction {
    pub(super) handler: usize,
    pub(super) mask: [u64; 16],
    pub(super) flags: c_int,
    pub(super) restorer: usize,
}
impl SigAction {
    /// Hands a signal to this handler, one installed before ours, as the
    /// kernel would have without ours. False where it is `SIG_DFL` or
    /// `SIG_IGN` (0 or 1), which each caller settles in its own way.
    ///
    /// # Safety
    /// `self` was filled in by `sigaction`, so its handler has the signature
    /// its flags say.
    pub(super) unsafe fn forward(&self, signal: c_int, info: *mut c_void, context: *mut c_void) -> bool {
        match self.handler {
            0 | 1 => false,
            f if self.flags & SA_SIGINFO != 0 => {
                // SAFETY: installed as an SA_SIGINFO handler by its owner.
                let f = unsafe { std::mem::transmute::<usize, extern "C" fn(c_int, *mut c_void, *mut c_void)>(f) };
                f(signal, info, context);
                true
            }
            f => {
                // SAFETY: installed as a plain handler by its owner.
                let f = unsafe { std::mem::transmute::<usize, extern "C" fn(c_int)>(f) };
                f(signal);
                true
            }
        }
    }
}
pub(super) const SA_SIGINFO: c_int = 4;
const SA_RESTART: c_int = 0x1000_0000;
/// The signal stays unblocked in the handler, which may never return.
pub(super) const SA_NODEFER: c_int = 0x4000_0000;

/// The handler (and flags) that was installed for [`SIGNAL`] before ours.
static PREVIOUS: OnceLock<SigAction> = OnceLock::new();

/// What the signal handler calls on the signalled OS thread: it stops the
/// running emulated thread if the watchdog asked for it, else returns.
static ON_REQUEST: OnceLock<unsafe fn()> = OnceLock::new();

/// Registers the calling worker OS thread (and starts the watchdog on first
/// use); with the watchdog off, a registration nobody looks at. When the
/// worker stalls, `on_request` is called on it, in a signal handler.
pub(super) fn watch_this_thread(on_request: unsafe fn()) -> WatchGuard {
    // SAFETY: pthread_self has no preconditions.
    let watch = Arc::new(WorkerWatch::new(unsafe { pthread_self() }));
    if let Some(limit) = limit() {
        start(limit, on_request);
        WATCHED.lock().unwrap_or_else(|p| p.into_inner()).push(watch.clone());
    }
    WatchGuard(watch)
}

/// Installs the signal handler and starts the watchdog thread (once).
fn start(limit: Duration, on_request: unsafe fn()) {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = ON_REQUEST.set(on_request);
        let ours = SigAction {
            handler: on_signal as *const () as usize,
            mask: [0; 16],
            flags: SA_SIGINFO | SA_RESTART | SA_NODEFER,
            restorer: 0,
        };
        let mut previous = SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 };
        // SAFETY: both structs have the kernel ABI's layout; `on_signal`
        // has the SA_SIGINFO handler's signature.
        if unsafe { sigaction(SIGNAL, &ours, &mut previous) } != 0 {
            return; // no handler, no watchdog: as before it existed
        }
        let _ = PREVIOUS.set(previous);
        let ticks = (limit.as_nanos() / TICK.as_nanos()).max(1) as u32;
        let _ = std::thread::Builder::new().name("oxide-emulator-watchdog".into()).spawn(move || loop {
            std::thread::sleep(TICK);
            look(ticks);
        });
    });
}

/// One look at every worker: signal those stalled for `ticks` ticks.
fn look(ticks: u32) {
    let watched = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    for w in watched.iter() {
        let switches = w.switches.load(Relaxed);
        let moved = w.seen.swap(switches, Relaxed) != switches;
        let blocking = w.in_block.load(Relaxed) && w.others_waiting.load(Relaxed);
        if moved || !blocking {
            w.stalled_ticks.store(0, Relaxed);
            continue;
        }
        if w.stalled_ticks.fetch_add(1, Relaxed) + 1 < ticks || traced() {
            continue;
        }
        // Asked again on every later tick, should the thread be in a hook now.
        w.stop_at.store(switches + 1, Relaxed);
        // SAFETY: the worker unregisters before its OS thread ends, and we
        // hold the registry's lock.
        unsafe { pthread_kill(w.thread, SIGNAL) };
    }
}

/// Whether a debugger traces this process.
fn traced() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines().any(|l| l.strip_prefix("TracerPid:").is_some_and(|pid| pid.trim() != "0"))
    })
}

extern "C" fn on_signal(signal: c_int, info: *mut c_void, context: *mut c_void) {
    if let Some(on_request) = ON_REQUEST.get() {
        // SAFETY: this is the watchdog's signal handler, where `on_request`
        // may be called. It returns only when the signal was not the
        // watchdog's request for this thread.
        unsafe { on_request() };
    }
    // SIG_DFL (ignore, for this signal) or SIG_IGN: nothing to do.
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: read back from `sigaction` when ours was installed.
        unsafe { previous.forward(signal, info, context) };
    }
}

const _: () = assert!(std::mem::size_of::<SigAction>() == 152);
