//! [`block_on`]: the smallest executor, for programs without one.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Wakes the thread that runs `block_on`.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on the current thread, which sleeps (parks)
/// whenever the future is pending until its waker is called.
///
/// ```
/// assert_eq!(cuda_async::block_on(async { 6 * 7 }), 42);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            // A wake between the poll and the park leaves the token set, so
            // park returns at once; spurious wake-ups just poll again.
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Pending until another thread sets it, counting polls.
    struct Later {
        polls: Arc<AtomicUsize>,
        started: bool,
        done: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Future for Later {
        type Output = &'static str;
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.done.load(Ordering::SeqCst) {
                return Poll::Ready("done");
            }
            if !self.started {
                self.started = true;
                let (waker, done) = (cx.waker().clone(), self.done.clone());
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(30));
                    done.store(true, Ordering::SeqCst);
                    waker.wake();
                });
            }
            Poll::Pending
        }
    }

    #[test]
    fn sleeps_until_woken_instead_of_spinning() {
        let polls = Arc::new(AtomicUsize::new(0));
        let fut = Later { polls: polls.clone(), started: false, done: Default::default() };
        assert_eq!(block_on(fut), "done");
        // One poll to start, one after the wake (a spurious unpark may add one).
        let n = polls.load(Ordering::SeqCst);
        assert!((2..=3).contains(&n), "{n} polls: block_on spins");
    }
}
