//! Storage local to a stream: [`CudaStream::with_local`].
//!
//! A library call that needs device memory of its own on every call
//! (cuda-prims' scans keep the status words of their look-back there) pays
//! for an allocation and a memset each time unless something keeps that
//! memory between calls. A process-wide cache keyed by stream would have to
//! hold the stream alive (a buffer holds its home stream), so it could never
//! tell when the user is done with it. The stream itself is the owner whose
//! lifetime the user holds: what a library keeps here is dropped with the
//! [`CudaStream`], and a [`DeviceBuffer`](crate::DeviceBuffer) in it is then
//! freed in stream order, after the work queued before. A buffer holds the
//! stream's driver handle, not the `CudaStream`, so keeping one here makes
//! no cycle.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::context::CudaStream;

/// The values kept on one stream, at most one of each type.
#[derive(Default)]
pub(crate) struct StreamLocals {
    values: Mutex<Vec<Box<dyn Any + Send>>>,
    /// The thread inside [`CudaStream::with_local`] ([`thread_mark`]; 0:
    /// none), so that a call from within `f` panics instead of deadlocking.
    holder: AtomicUsize,
}

impl std::fmt::Debug for StreamLocals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.values.try_lock().map(|v| v.len());
        f.debug_struct("StreamLocals").field("values", &held.ok()).finish()
    }
}

/// A number unique to the calling thread among the live ones (never 0):
/// the address of a thread-local.
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|m| m as *const u8 as usize)
}

/// Marks the holder for the lock's span; unmarks on every exit, a panic
/// included.
struct Holding<'a>(&'a AtomicUsize);

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

impl CudaStream {
    /// Runs `f` on this stream's value of type `T`, made by `init` on the
    /// first call: storage local to the stream, as `thread_local!` is to a
    /// thread. A library keeps there what it would otherwise allocate on
    /// every call on the stream: scratch memory, and the bookkeeping that
    /// says what is in it.
    ///
    /// The value lives as long as this `CudaStream` and is dropped with it;
    /// a [`DeviceBuffer`](crate::DeviceBuffer) in it is then freed in
    /// stream order, after the work queued before. There is one value per
    /// type: key it with a type private to your crate, so that no other
    /// code reaches it. Calls from several threads take turns: the value
    /// is locked while `init` and `f` run, so work that `f` queues on the
    /// stream is queued in the order the value records.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cuda_core::DriverError> {
    /// use cuda_core::{CudaContext, DeviceBuffer};
    ///
    /// /// This crate's scratch on a stream.
    /// struct Scratch(DeviceBuffer<u32>);
    ///
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// for _ in 0..3 {
    ///     // Allocated by the first call only.
    ///     let make = || Ok(Scratch(DeviceBuffer::zeroed(&stream, 1024)?));
    ///     let len = stream.with_local(make, |s: &mut Scratch| Ok::<_, cuda_core::DriverError>(s.0.len()))?;
    ///     assert_eq!(len, 1024);
    /// }
    /// drop(stream); // frees the scratch after the stream's work
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `init`'s error (nothing is kept then: the next call runs `init`
    /// again) or `f`'s.
    ///
    /// # Panics
    /// If `init` or `f` calls `with_local` on this stream again (the values
    /// are locked). A panic in `f` leaves the value as `f` left it.
    ///
    /// A value that holds this stream's `Arc<CudaStream>` keeps the stream
    /// alive for ever, as any `Arc` cycle does: keep what the value needs
    /// from the stream, not the stream.
    pub fn with_local<T, R, E>(
        &self,
        init: impl FnOnce() -> Result<T, E>,
        f: impl FnOnce(&mut T) -> Result<R, E>,
    ) -> Result<R, E>
    where
        T: Any + Send,
    {
        let locals = self.locals();
        let me = thread_mark();
        // Only this thread can have stored its own mark, so the check is
        // exact for it whatever the others do.
        assert!(
            locals.holder.load(Ordering::Acquire) != me,
            "CudaStream::with_local called again from within a with_local call on the same stream"
        );
        let mut values = locals.values.lock().unwrap_or_else(|e| e.into_inner());
        locals.holder.store(me, Ordering::Release);
        let _holding = Holding(&locals.holder);
        let index = match values.iter().position(|v| v.is::<T>()) {
            Some(i) => i,
            None => {
                values.push(Box::new(init()?));
                values.len() - 1
            }
        };
        let value = values[index].downcast_mut::<T>().expect("the value found by its type");
        f(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_marks_differ_between_live_threads() {
        let here = thread_mark();
        assert_ne!(here, 0);
        assert_eq!(here, thread_mark());
        let there = std::thread::spawn(thread_mark).join().unwrap();
        // The other thread has ended, but its mark was taken while both lived.
        assert_ne!(here, there);
    }
}
