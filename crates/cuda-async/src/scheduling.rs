//! Where operations run: a [`StreamPool`] per device and the
//! [`SchedulingPolicy`] that picks one of its streams for each operation.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuda_core::{CudaContext, CudaStream};

use crate::AsyncError;

/// Streams in the pool [`default_pool`] creates.
pub const DEFAULT_POOL_STREAMS: usize = 4;

/// Picks the stream of a pool that the next scheduled operation runs on.
///
/// Operations on different streams may run concurrently on the GPU; the
/// steps of one operation always run in order on the stream chosen for it.
/// Implement this trait for policies other than [`RoundRobin`] (a policy
/// that pins work to one stream, one that weighs streams by their queued
/// work, …).
pub trait SchedulingPolicy: Send + Sync + fmt::Debug {
    /// The index (in `0..streams`) of the stream for the next operation;
    /// an index out of range is taken modulo `streams`. Called once per
    /// scheduled operation, possibly from several threads at once.
    fn select(&self, streams: usize) -> usize;
}

/// The default policy: stream 0, 1, …, n−1, 0, 1, … in scheduling order.
#[derive(Debug, Default)]
pub struct RoundRobin {
    next: AtomicUsize,
}

impl RoundRobin {
    /// A round-robin policy starting at stream 0.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SchedulingPolicy for RoundRobin {
    fn select(&self, streams: usize) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % streams.max(1)
    }
}

/// Always the same stream: every operation scheduled with it is ordered
/// after the previous ones (useful for debugging a suspected race).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SameStream(pub usize);

impl SchedulingPolicy for SameStream {
    fn select(&self, _streams: usize) -> usize {
        self.0
    }
}

/// A set of streams of one device and the policy that spreads operations
/// over them. Share it as `Arc<StreamPool>`.
///
/// The streams are non-blocking (`CU_STREAM_NON_BLOCKING`): they do not
/// wait for the legacy default stream, only for each other where an
/// operation says so ([`zip`](crate::DeviceOperation::zip),
/// [`join_all`](crate::join_all)).
///
/// ```no_run
/// use cuda_async::{value, DeviceOperation, StreamPool, SameStream};
/// # fn main() -> Result<(), cuda_async::AsyncError> {
/// let ctx = cuda_core::CudaContext::new(0)?;
/// let pool = StreamPool::new(&ctx, 8)?;                       // round robin
/// let serial = StreamPool::with_policy(&ctx, 1, SameStream(0))?;
/// assert_eq!(value(3).sync_in(&pool)?, 3);
/// # drop(serial); Ok(()) }
/// ```
#[derive(Debug)]
pub struct StreamPool {
    ctx: Arc<CudaContext>,
    streams: Vec<Arc<CudaStream>>,
    policy: Box<dyn SchedulingPolicy>,
}

impl StreamPool {
    /// `streams` new non-blocking streams on `ctx`'s device, round robin.
    pub fn new(ctx: &Arc<CudaContext>, streams: usize) -> Result<Arc<StreamPool>, AsyncError> {
        Self::with_policy(ctx, streams, RoundRobin::new())
    }

    /// `streams` new non-blocking streams on `ctx`'s device, chosen by `policy`.
    pub fn with_policy(
        ctx: &Arc<CudaContext>,
        streams: usize,
        policy: impl SchedulingPolicy + 'static,
    ) -> Result<Arc<StreamPool>, AsyncError> {
        if streams == 0 {
            return Err(AsyncError::InvalidPool(
                "a pool needs at least one stream (StreamPool::new(&ctx, 0))".into(),
            ));
        }
        let streams = (0..streams)
            .map(|_| ctx.new_stream_non_blocking())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(StreamPool { ctx: ctx.clone(), streams, policy: Box::new(policy) }))
    }

    /// A pool of existing streams (all of one context), chosen by `policy`.
    pub fn from_streams(
        streams: Vec<Arc<CudaStream>>,
        policy: impl SchedulingPolicy + 'static,
    ) -> Result<Arc<StreamPool>, AsyncError> {
        let Some(first) = streams.first() else {
            return Err(AsyncError::InvalidPool("a pool needs at least one stream".into()));
        };
        let ctx = first.context().clone();
        if let Some(i) = streams.iter().position(|s| !Arc::ptr_eq(s.context(), &ctx)) {
            return Err(AsyncError::InvalidPool(format!(
                "stream {i} belongs to device {}, stream 0 to device {}: a pool is one device's",
                streams[i].context().ordinal(),
                ctx.ordinal()
            )));
        }
        Ok(Arc::new(StreamPool { ctx, streams, policy: Box::new(policy) }))
    }

    /// The stream the policy picks for the next operation.
    pub fn next_stream(&self) -> &Arc<CudaStream> {
        &self.streams[self.policy.select(self.streams.len()) % self.streams.len()]
    }

    /// The stream after `stream` in the pool's order (wrapping), for work
    /// forked off an operation running on `stream`; `None` if the pool has
    /// one stream or `stream` is not one of its streams and the pool has no
    /// other.
    pub(crate) fn stream_after(&self, stream: &CudaStream, offset: usize) -> Option<&Arc<CudaStream>> {
        let n = self.streams.len();
        let at = self.streams.iter().position(|s| std::ptr::eq(&**s, stream));
        let next = match at {
            Some(i) => (i + offset) % n,
            None => (offset - 1) % n,
        };
        let chosen = &self.streams[next];
        (!std::ptr::eq(&**chosen, stream)).then_some(chosen)
    }

    /// All streams of the pool.
    pub fn streams(&self) -> &[Arc<CudaStream>] {
        &self.streams
    }

    /// The device context of the pool.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Waits until the work on every stream of the pool has finished.
    pub fn synchronize(&self) -> Result<(), AsyncError> {
        for s in &self.streams {
            s.synchronize()?;
        }
        Ok(())
    }
}

static DEFAULT_POOL: Mutex<Option<Arc<StreamPool>>> = Mutex::new(None);

/// The pool that `.await`, `.sync()` and [`DeviceOperation::future`](crate::DeviceOperation::future)
/// use: the one given to [`set_default_pool`], else [`DEFAULT_POOL_STREAMS`]
/// round-robin streams on device 0, created on first use.
///
/// Fails (without caching the failure) when there is no driver or GPU.
pub fn default_pool() -> Result<Arc<StreamPool>, AsyncError> {
    let mut slot = DEFAULT_POOL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(pool) = &*slot {
        return Ok(pool.clone());
    }
    let ctx = CudaContext::new(0)?;
    let pool = StreamPool::new(&ctx, DEFAULT_POOL_STREAMS)?;
    *slot = Some(pool.clone());
    Ok(pool)
}

/// Makes `pool` the default pool (for operations scheduled from now on);
/// returns the previous one.
pub fn set_default_pool(pool: Arc<StreamPool>) -> Option<Arc<StreamPool>> {
    DEFAULT_POOL.lock().unwrap_or_else(|p| p.into_inner()).replace(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_cycles_through_every_stream() {
        let rr = RoundRobin::new();
        let picks: Vec<usize> = (0..9).map(|_| rr.select(4)).collect();
        assert_eq!(picks, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
        assert_eq!(RoundRobin::new().select(0), 0, "never divides by zero");
    }

    #[test]
    fn round_robin_is_fair_across_threads() {
        let rr = Arc::new(RoundRobin::new());
        let counts: Vec<usize> = {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let rr = rr.clone();
                    std::thread::spawn(move || (0..1000).map(|_| rr.select(3)).collect::<Vec<_>>())
                })
                .collect();
            let mut counts = vec![0; 3];
            for h in handles {
                for i in h.join().unwrap() {
                    counts[i] += 1;
                }
            }
            counts
        };
        // 4000 picks over 3 streams: each gets 1333 or 1334.
        assert!(counts.iter().all(|&c| c == 1333 || c == 1334), "{counts:?}");
    }

    #[test]
    fn custom_policies_plug_in() {
        #[derive(Debug)]
        struct LastStream;
        impl SchedulingPolicy for LastStream {
            fn select(&self, streams: usize) -> usize {
                streams - 1
            }
        }
        let policy: Box<dyn SchedulingPolicy> = Box::new(LastStream);
        assert_eq!(policy.select(4), 3);
        assert_eq!(SameStream(2).select(4), 2);
    }

    #[test]
    fn pools_need_a_driver_and_a_stream() {
        match default_pool() {
            Err(e) => {
                assert!(e.is_no_gpu(), "{e}");
                assert!(e.to_string().contains("no CUDA driver found") || e.to_string().contains("no CUDA GPU"), "{e}");
                // Not cached: asking again gives the same answer again.
                assert!(default_pool().unwrap_err().is_no_gpu());
            }
            Ok(pool) => {
                eprintln!("(a GPU is present: checking the pool instead)");
                assert_eq!(pool.streams().len(), DEFAULT_POOL_STREAMS);
                let e = StreamPool::new(pool.context(), 0).unwrap_err();
                assert!(e.to_string().contains("at least one stream"), "{e}");
            }
        }
        let e = StreamPool::from_streams(Vec::new(), RoundRobin::new()).unwrap_err();
        assert!(matches!(e, AsyncError::InvalidPool(_)), "{e}");
    }
}
