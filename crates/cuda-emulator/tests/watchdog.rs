//! A spin-wait the host-code engine cannot switch out of (a loop on a
//! `core::sync::atomic` that never calls an intrinsic) fails the launch with
//! a report naming the threads, instead of hanging; the OS threads that ran
//! it work afterwards. (A test binary of its own: the watchdog's limit is
//! read once per process.)

use std::sync::atomic::{AtomicU32, Ordering::{Acquire, Relaxed, Release}};
use std::time::{Duration, Instant};

use cuda_device::thread;
use cuda_emulator::{run, Fault, Grid, HostKernel};

#[test]
fn a_spin_on_a_core_atomic_is_reported_as_a_deadlock_naming_the_threads() {
    // SAFETY (edition 2021: safe): the only test of this process, before
    // any launch reads the variable.
    std::env::set_var("OXIDE_EMULATE_WATCHDOG_S", "0.5");
    let flag = AtomicU32::new(0);
    let body = || {
        if thread::threadIdx_x() == 63 {
            flag.store(1, Release);
        } else {
            while flag.load(Acquire) == 0 {}
        }
    };
    let start = Instant::now();
    let grid = Grid { grid_dim: (1, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    let message = match run(grid, &HostKernel::from_fn(&body)) {
        Err(Fault::Emulator(m)) => m,
        other => panic!("expected the watchdog's report, got {other:?}"),
    };
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(10), "took {took:?}");
    assert!(
        message.starts_with("emulator: deadlock in block (0, 0, 0): thread (0, 0, 0) ran for 0.5 s without waiting"),
        "{message}"
    );
    assert!(message.contains("threads (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0) and 59 more wait for their turn"), "{message}");
    assert!(message.contains("OXIDE_EMULATE=ptx") && message.contains("OXIDE_EMULATE_WATCHDOG_S"), "{message}");

    // Every worker of a launch with many blocks stalls the same way; each
    // is stopped, and the launch fails once.
    let flags: Vec<AtomicU32> = (0..16).map(|_| AtomicU32::new(0)).collect();
    let body = || {
        let b = thread::blockIdx_x() as usize;
        if thread::threadIdx_x() == 1023 {
            flags[b].store(1, Release);
        } else {
            while flags[b].load(Acquire) == 0 {}
        }
    };
    let grid = Grid { grid_dim: (16, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    let result = run(grid, &HostKernel::from_fn(&body));
    assert!(matches!(&result, Err(Fault::Emulator(m)) if m.contains("deadlock in block")), "{result:?}");

    // The OS threads that ran the stalled fibers run kernels as before.
    let count = AtomicU32::new(0);
    let body = || {
        count.fetch_add(1, Relaxed);
        thread::sync_threads();
    };
    run(Grid { grid_dim: (32, 1, 1), block_dim: (512, 1, 1), shared_mem_bytes: 0 }, &HostKernel::from_fn(&body)).unwrap();
    assert_eq!(count.load(Relaxed), 32 * 512);
}
