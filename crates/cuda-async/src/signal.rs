//! Completion signals set by stream host functions, and the keeper thread
//! that releases abandoned work and watches for context faults.
//!
//! A [`Signal`] is set by a host function enqueued with `cuLaunchHostFunc`
//! behind an operation's work: the driver runs it on its own thread once
//! the stream gets there, and it wakes the waiting task (a `Waker`) or
//! thread (a `Condvar`). Nobody polls for completion.
//!
//! The keeper (one background thread, started on first use) does two jobs
//! a host function may not do, because it must not call CUDA:
//! * **Releasing abandoned outputs.** When an unfinished operation's future
//!   is dropped, its outputs (buffers the GPU may still be writing) are
//!   *buried* with their signal instead of dropped. The signal's host
//!   function tells the keeper when the stream has passed that point, and
//!   the keeper drops them then, on its own thread. Nothing is freed early
//!   and nothing stays for good.
//! * **Reporting faults.** The driver never runs host functions after a
//!   fault of the context (an illegal address, a device panic), so a waiter
//!   would wait for ever. While signals are outstanding the keeper checks
//!   their streams every [`FAULT_CHECK_INTERVAL`] (`cuStreamQuery`) and
//!   fails the signals of a stream that reports an error with that error.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cuda_core::{CudaStream, DriverError};

use crate::AsyncError;

/// How often the keeper asks the streams of outstanding work whether they
/// failed. Completion itself is signalled at once by the host function.
pub const FAULT_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// The outcome of the work behind a signal.
#[derive(Debug, Clone)]
enum State {
    Pending,
    Done,
    Failed(DriverError),
}

#[derive(Debug)]
struct Inner {
    state: State,
    waker: Option<Waker>,
    /// Outputs were buried with this signal: tell the keeper when it is set.
    buried: bool,
}

/// Set once the GPU has reached a point of a stream (or the stream failed).
#[derive(Debug)]
pub(crate) struct Signal {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl Signal {
    pub(crate) fn new() -> Arc<Signal> {
        Arc::new(Signal {
            inner: Mutex::new(Inner { state: State::Pending, waker: None, buried: false }),
            cv: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave `Inner` inconsistent
        // (each update is one assignment), so a poisoned lock is still good.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the work done and wakes its waiter. Called from a host
    /// function on a driver thread: calls no CUDA.
    pub(crate) fn complete(&self) {
        self.finish(State::Done);
    }

    /// Marks the work failed with `error` (first outcome wins).
    pub(crate) fn fail(&self, error: DriverError) {
        self.finish(State::Failed(error));
    }

    fn finish(&self, outcome: State) {
        let (waker, buried) = {
            let mut inner = self.lock();
            if !matches!(inner.state, State::Pending) {
                return;
            }
            inner.state = outcome;
            (inner.waker.take(), inner.buried)
        };
        self.cv.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
        if buried {
            keeper().nudge();
        }
    }

    /// Whether the signal has been set (either way).
    pub(crate) fn is_set(&self) -> bool {
        !matches!(self.lock().state, State::Pending)
    }

    /// The outcome if set, registering `cx`'s waker otherwise.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<(), AsyncError>> {
        let mut inner = self.lock();
        match &inner.state {
            State::Pending => {
                match &inner.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => inner.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            State::Done => Poll::Ready(Ok(())),
            State::Failed(e) => Poll::Ready(Err(AsyncError::Driver(e.clone()))),
        }
    }

    /// Blocks the calling thread until the signal is set (no spinning: a
    /// condition variable).
    pub(crate) fn wait(&self) -> Result<(), AsyncError> {
        let mut inner = self.lock();
        loop {
            match &inner.state {
                State::Pending => inner = self.cv.wait(inner).unwrap_or_else(|p| p.into_inner()),
                State::Done => return Ok(()),
                State::Failed(e) => return Err(AsyncError::Driver(e.clone())),
            }
        }
    }
}

/// Outputs kept until their signal is set.
struct Grave {
    signal: Arc<Signal>,
    _outputs: Box<dyn Any + Send>,
}

/// A stream with outstanding work, and the signal behind that work.
struct Watch {
    stream: Arc<CudaStream>,
    signal: Arc<Signal>,
}

#[derive(Default)]
struct KeeperState {
    graves: Vec<Grave>,
    watches: Vec<Watch>,
    started: bool,
}

/// The keeper thread's shared state (one per process).
pub(crate) struct Keeper {
    state: Mutex<KeeperState>,
    cv: Condvar,
    released: AtomicUsize,
}

pub(crate) fn keeper() -> &'static Keeper {
    static KEEPER: OnceLock<Keeper> = OnceLock::new();
    KEEPER.get_or_init(|| Keeper {
        state: Mutex::new(KeeperState::default()),
        cv: Condvar::new(),
        released: AtomicUsize::new(0),
    })
}

impl Keeper {
    fn lock(&self) -> MutexGuard<'_, KeeperState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the thread on first use (with the lock held).
    fn ensure_started(&'static self, state: &mut KeeperState) {
        if !state.started {
            state.started = true;
            let spawned = std::thread::Builder::new()
                .name("cuda-async keeper".into())
                .spawn(move || self.run());
            if spawned.is_err() {
                // Without the thread, graves are still emptied by
                // `release_finished` and at every schedule.
                state.started = false;
            }
        }
    }

    /// Wakes the keeper. Taking the lock first means the keeper is either
    /// before its last check (and will see the change) or already waiting.
    fn nudge(&self) {
        drop(self.lock());
        self.cv.notify_all();
    }

    /// Keeps `outputs` until `signal` is set, then drops them on the
    /// keeper thread.
    pub(crate) fn bury(&'static self, signal: Arc<Signal>, outputs: Box<dyn Any + Send>) {
        signal.lock().buried = true;
        let mut state = self.lock();
        state.graves.push(Grave { signal, _outputs: outputs });
        self.ensure_started(&mut state);
        drop(state);
        self.cv.notify_all();
    }

    /// Watches `stream` for faults until `signal` is set.
    pub(crate) fn watch(&'static self, stream: Arc<CudaStream>, signal: Arc<Signal>) {
        let mut state = self.lock();
        // Only an idle keeper (waiting without a timeout) needs waking; a
        // busy one looks at the new watch at its next check.
        let idle = state.watches.is_empty() && state.graves.is_empty();
        state.watches.push(Watch { stream, signal });
        self.ensure_started(&mut state);
        drop(state);
        if idle {
            self.cv.notify_all();
        }
    }

    /// Drops the buried outputs whose work has finished; returns how many
    /// graves were emptied.
    pub(crate) fn release_finished(&self) -> usize {
        let finished: Vec<Grave> = {
            let mut state = self.lock();
            let (done, keep) = std::mem::take(&mut state.graves)
                .into_iter()
                .partition(|g| g.signal.is_set());
            state.graves = keep;
            done
        };
        let n = finished.len();
        drop(finished); // outside the lock: a buffer's drop calls the driver
        self.released.fetch_add(n, Ordering::Relaxed);
        n
    }

    pub(crate) fn pending(&self) -> usize {
        self.lock().graves.len()
    }

    pub(crate) fn released(&self) -> usize {
        self.released.load(Ordering::Relaxed)
    }

    fn run(&'static self) {
        loop {
            self.release_finished();
            // The watches of finished work go, and are dropped outside the
            // lock: a watch may hold the last handle of its stream, whose
            // drop destroys the stream (a driver call), and a host function
            // that completes a buried signal takes this lock (`nudge`) on
            // the driver's one callback thread, which no driver call made
            // under the lock may wait for.
            let ended: Vec<Watch> = {
                let mut state = self.lock();
                let (ended, live) = std::mem::take(&mut state.watches).into_iter().partition(|w| w.signal.is_set());
                state.watches = live;
                ended
            };
            drop(ended);
            let state = self.lock();
            let busy = !state.watches.is_empty() || !state.graves.is_empty();
            // Each stream is asked once, however much work waits on it.
            let mut streams: Vec<Arc<CudaStream>> = Vec::new();
            for w in &state.watches {
                if !streams.iter().any(|s| Arc::ptr_eq(s, &w.stream)) {
                    streams.push(w.stream.clone());
                }
            }
            if state.graves.iter().any(|g| g.signal.is_set()) {
                continue;
            }
            if !busy {
                drop(self.cv.wait(state).unwrap_or_else(|p| p.into_inner()));
                continue;
            }
            drop(self.cv.wait_timeout(state, FAULT_CHECK_INTERVAL).unwrap_or_else(|p| p.into_inner()));
            for stream in streams {
                if let Err(e) = stream.is_complete() {
                    let failed: Vec<Arc<Signal>> = self
                        .lock()
                        .watches
                        .iter()
                        .filter(|w| Arc::ptr_eq(&w.stream, &stream))
                        .map(|w| w.signal.clone())
                        .collect();
                    for signal in failed {
                        signal.fail(e.clone());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;

    /// Counts its drops.
    struct Tracked(Arc<AtomicUsize>);
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn wait_until(what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(5), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn buried_outputs_live_until_their_signal_then_are_released() {
        let drops = Arc::new(AtomicUsize::new(0));
        let signal = Signal::new();
        keeper().bury(signal.clone(), Box::new((Tracked(drops.clone()), Tracked(drops.clone()))));
        // The "GPU" has not reached the signal: nothing may be freed, even
        // when someone sweeps.
        keeper().release_finished();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        // The host function runs (on another thread, like the driver's).
        let s = signal.clone();
        std::thread::spawn(move || s.complete()).join().unwrap();
        // The keeper thread drops them without anyone sweeping.
        wait_until("the keeper to release the outputs", || drops.load(Ordering::SeqCst) == 2);
    }

    #[test]
    fn wait_returns_once_set_from_another_thread() {
        let signal = Signal::new();
        let s = signal.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            s.complete();
        });
        signal.wait().unwrap();
        t.join().unwrap();
        assert!(signal.is_set());
    }

    #[test]
    fn failure_reaches_the_waiter_and_first_outcome_wins() {
        let signal = Signal::new();
        signal.fail(DriverError::from_code(700, "cuStreamQuery"));
        signal.complete();
        let e = signal.wait().unwrap_err();
        assert_eq!(e.driver_error().map(|d| d.code()), Some(700));
    }

    #[test]
    fn poll_registers_the_waker_and_is_woken() {
        struct Flag(AtomicBool);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let signal = Signal::new();
        assert!(signal.poll(&mut cx).is_pending());
        assert!(!flag.0.load(Ordering::SeqCst));
        signal.complete();
        assert!(flag.0.load(Ordering::SeqCst), "complete() wakes the registered waker");
        assert!(matches!(signal.poll(&mut cx), Poll::Ready(Ok(()))));
    }
}
