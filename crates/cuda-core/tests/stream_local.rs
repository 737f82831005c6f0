//! Storage local to a stream (`CudaStream::with_local`), on the GPU where
//! there is one, else on the CPU emulator: a value is made once per type
//! and stream, kept between calls, dropped with its stream (a buffer in it
//! freed after the stream's work), not kept when its `init` fails, and a
//! nested call panics instead of deadlocking.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_core::{CudaContext, DeviceBuffer, DriverError};
use cuda_driver_sys::DriverApi;

/// A value that counts its drops, with a buffer on the stream.
struct Counted {
    calls: u32,
    buffer: DeviceBuffer<u32>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A second type: a value of its own on the same stream.
struct Other(u64);

// One test in this binary: it chooses the backend for the process.
#[test]
fn a_stream_keeps_one_value_per_type_until_it_is_dropped() {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "ptx");
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let inits = AtomicUsize::new(0);

    let make = || -> Result<Counted, DriverError> {
        inits.fetch_add(1, Ordering::SeqCst);
        Ok(Counted { calls: 0, buffer: DeviceBuffer::zeroed(&stream, 256)?, drops: drops.clone() })
    };
    // Made by the first call only; each call sees the last one's changes.
    for round in 1..=3u32 {
        let calls = stream
            .with_local(make, |c: &mut Counted| {
                c.calls += 1;
                c.buffer.memset(&stream, round as u8)?;
                Ok::<_, DriverError>(c.calls)
            })
            .unwrap();
        assert_eq!(calls, round);
    }
    assert_eq!(inits.load(Ordering::SeqCst), 1);

    // Another type has a value of its own; the first is untouched.
    let other = stream.with_local(|| Ok::<_, DriverError>(Other(7)), |o: &mut Other| Ok(o.0)).unwrap();
    assert_eq!(other, 7);
    let read = stream.with_local(make, |c: &mut Counted| c.buffer.to_host_vec(&stream)).unwrap();
    assert_eq!(read, vec![0x0303_0303; 256]);

    // Another stream keeps values of its own.
    let second = ctx.new_stream().unwrap();
    let made_there = AtomicUsize::new(0);
    second
        .with_local(
            || {
                made_there.fetch_add(1, Ordering::SeqCst);
                Ok::<_, DriverError>(Other(9))
            },
            |o: &mut Other| {
                assert_eq!(o.0, 9);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(made_there.load(Ordering::SeqCst), 1);

    // A failed init keeps nothing: the next call makes the value.
    struct Late(u8);
    let failed = second.with_local(|| Err::<Late, &str>("no"), |_: &mut Late| Ok(()));
    assert_eq!(failed, Err("no"));
    assert_eq!(second.with_local(|| Ok::<_, &str>(Late(4)), |l: &mut Late| Ok(l.0)), Ok(4));

    // A nested call on the same stream panics (the values are locked) and
    // leaves the stream usable; one on another stream is fine.
    let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        stream.with_local(|| Ok::<_, DriverError>(Other(1)), |_: &mut Other| stream.with_local(|| Ok(Late(0)), |_: &mut Late| Ok(())))
    }));
    let message = nested.expect_err("a nested call must panic");
    let text = message.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| message.downcast_ref::<String>().cloned());
    assert!(text.unwrap_or_default().contains("again from within"));
    let across = stream.with_local(|| Ok::<_, DriverError>(Other(1)), |o: &mut Other| {
        second.with_local(|| Ok(Late(0)), |l: &mut Late| Ok(o.0 + l.0 as u64))
    });
    assert_eq!(across.unwrap(), 7 + 4);

    // Other threads take turns on one stream's value.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    stream.with_local(make, |c: &mut Counted| Ok::<_, DriverError>(c.calls += 1)).unwrap();
                }
            });
        }
    });
    let calls = stream.with_local(make, |c: &mut Counted| Ok::<_, DriverError>(c.calls)).unwrap();
    assert_eq!(calls, 3 + 200);
    assert_eq!(inits.load(Ordering::SeqCst), 1);

    // Dropped with the stream, its buffer with it (after the queued work).
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(stream);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    second.synchronize().unwrap();
}
