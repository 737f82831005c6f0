//! cuda-async on a GPU: results, concurrency across streams, wake-up by the
//! host function, and drop safety. Each test skips with a message where
//! there is no GPU.

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::{gpu, module, spin, spin_timed};
use cuda_async::{
    block_on, join_all, memory, value, DeviceBox, DeviceOperation, RoundRobin, SameStream,
    StreamPool,
};
use cuda_core::DeviceBuffer;

/// The tests that time GPU work, or watch one stream, run one at a time.
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timed() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn upload_compute_and_read_back_with_sync_and_await() {
    let Some(ctx) = gpu("upload_compute_and_read_back_with_sync_and_await") else { return };
    let pool = StreamPool::new(&ctx, 3).unwrap();
    let data: Vec<u32> = (0..100_000).collect();
    // Blocking, on a pool.
    let (_dev, host) = memory::upload(data.clone()).and_then(memory::to_host).sync_in(&pool).unwrap();
    assert_eq!(&host[..], &data[..]);
    // Awaited on the crate's executor, on one stream.
    let stream = pool.streams()[1].clone();
    let host = block_on(
        memory::upload(data.clone())
            .then(|s, mut buf| {
                buf.fill(s, 7u32)?;
                Ok(buf)
            })
            .and_then(memory::to_host)
            .map(|(_, h)| h)
            .schedule_on(&stream),
    )
    .unwrap();
    assert!(host.iter().all(|&x| x == 7));
    // `.await` through IntoFuture (the default pool).
    let n = block_on(async { value(5).zip(memory::zeroed::<u8>(3)).await }).unwrap();
    assert_eq!(n.0, 5);
    assert_eq!(n.1.len(), 3);
}

#[test]
fn shared_box_is_read_by_many_operations_without_copies() {
    let Some(ctx) = gpu("shared_box_is_read_by_many_operations_without_copies") else { return };
    let pool = StreamPool::new(&ctx, 4).unwrap();
    let shared = DeviceBox::upload(vec![3.5f32; 4096]).sync_in(&pool).unwrap();
    let ptr = shared.device_ptr();
    let reads = join_all((0..6).map(|_| memory::to_host(shared.clone())));
    let outs = reads.sync_in(&pool).unwrap();
    for (b, host) in &outs {
        assert_eq!(b.device_ptr(), ptr, "every operation read the one upload");
        assert!(host.iter().all(|&x| x == 3.5));
    }
    assert_eq!(DeviceBox::share_count(&shared), 7);
    drop(outs);
    assert_eq!(DeviceBox::share_count(&shared), 1);
}

#[test]
fn join_all_overlaps_on_the_pools_streams() {
    let Some(ctx) = gpu("join_all_overlaps_on_the_pools_streams") else { return };
    let _timed = timed();
    let m = module(&ctx);
    let pool = StreamPool::new(&ctx, 4).unwrap();
    let bufs: Vec<DeviceBuffer<u32>> =
        (0..4).map(|_| DeviceBuffer::zeroed(&pool.streams()[0], 1).unwrap()).collect();
    pool.synchronize().unwrap();
    // Warm-up (module function lookup, first launch).
    let bufs = join_all(bufs.into_iter().map(|b| spin(&m, b, 1))).sync_in(&pool).unwrap();
    let t = Instant::now();
    let bufs = join_all(bufs.into_iter().map(|b| spin(&m, b, 200))).sync_in(&pool).unwrap();
    let four = t.elapsed();
    for b in &bufs {
        assert_eq!(b.to_host_vec(&pool.streams()[0]).unwrap(), [42]);
    }
    // Four 200 ms kernels on four streams: about 200 ms, not 800.
    assert!(four < Duration::from_millis(500), "join_all took {four:?}: the streams did not overlap");

    // On a one-stream pool the same join is serial.
    let one = StreamPool::with_policy(&ctx, 1, SameStream(0)).unwrap();
    let t = Instant::now();
    let _ = join_all(bufs.into_iter().map(|b| spin(&m, b, 50))).sync_in(&one).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(195), "{:?}", t.elapsed());
}

#[test]
fn tasks_scheduled_round_robin_run_concurrently_and_are_woken() {
    let Some(ctx) = gpu("tasks_scheduled_round_robin_run_concurrently_and_are_woken") else { return };
    let _timed = timed();
    let m = module(&ctx);
    let pool = StreamPool::with_policy(&ctx, 4, RoundRobin::new()).unwrap();
    // The buffers are allocated up front, on a stream no task runs on: a
    // buffer's first use on another stream waits for the work queued on its
    // home stream, and a home stream that runs a task (or a read-back
    // waiting for one) would serialise the tasks that follow it (the GPU
    // suite saw them run one, one, then two at a time).
    let home = ctx.new_stream_non_blocking().unwrap();
    let bufs: Vec<DeviceBuffer<u64>> = (0..4).map(|_| DeviceBuffer::zeroed(&home, 3).unwrap()).collect();
    home.synchronize().unwrap();
    // Four independent tasks, each on its own thread with block_on, which
    // returns only if the task's completion wakes it; each reads its buffer
    // back on a stream of its own, for the same reason.
    let handles: Vec<_> = bufs
        .into_iter()
        .map(|buf| {
            let (m, pool, ctx) = (m.clone(), pool.clone(), ctx.clone());
            std::thread::spawn(move || {
                let buf = block_on(spin_timed(&m, buf, 100).schedule(&pool)).unwrap();
                buf.to_host_vec(&ctx.new_stream_non_blocking().unwrap()).unwrap()
            })
        })
        .collect();
    let runs: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for run in &runs {
        assert_eq!(run[0], 42, "a task's kernel did not run");
        assert!(run[2] >= run[1] + 100_000_000, "a kernel stopped early: {run:?}");
    }
    // Overlap from the GPU's own clock, not the host's: there is an instant
    // at which all four kernels were running (the latest start is before the
    // earliest end). Run one after another, each would start after the
    // previous one ended.
    let latest_start = runs.iter().map(|r| r[1]).max().unwrap();
    let earliest_end = runs.iter().map(|r| r[2]).min().unwrap();
    assert!(
        latest_start < earliest_end,
        "the four tasks did not all run at once on the GPU (start, end in ns): {:?}",
        runs.iter().map(|r| (r[1], r[2])).collect::<Vec<_>>()
    );
}

#[test]
fn dropping_an_unfinished_operation_keeps_its_buffers_until_the_gpu_is_done() {
    let Some(ctx) = gpu("dropping_an_unfinished_operation_keeps_its_buffers_until_the_gpu_is_done") else {
        return;
    };
    let _timed = timed();
    let m = module(&ctx);
    let pool = StreamPool::new(&ctx, 2).unwrap();
    let stream = pool.streams()[0].clone();
    let out = DeviceBuffer::<u32>::zeroed(&stream, 1).unwrap();
    stream.synchronize().unwrap();
    let released_before = cuda_async::released_count();

    let mut fut = spin(&m, out, 300).schedule_on(&stream);
    // Poll once: the kernel is enqueued and running.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    assert!(fut.is_scheduled());

    let t = Instant::now();
    drop(fut);
    assert!(t.elapsed() < Duration::from_millis(50), "drop blocked for {:?}", t.elapsed());
    // The kernel still runs and will write into the buffer: it is kept.
    assert!(!stream.is_complete().unwrap(), "the kernel finished too early for this test");
    assert!(cuda_async::pending_releases() >= 1, "the buffer was not kept for the GPU");

    // Once the stream is past the kernel, the keeper frees it by itself.
    stream.synchronize().unwrap();
    let start = Instant::now();
    while cuda_async::released_count() == released_before {
        assert!(start.elapsed() < Duration::from_secs(2), "the buffer was never released");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(cuda_async::pending_releases(), 0);
}
