//! Panics in host-code kernels fail the launch the way a trap fails it on
//! the GPU, whatever kind of panic it is, and leave the host as it was:
//! a panic that cannot unwind (out of an `extern "C"` function, out of a
//! destructor that runs during unwinding, in a crate built with
//! `panic=abort`) is reported with its message instead of aborting the
//! process; after a launch that failed with threads left mid-kernel, the
//! host's own panics reach the host's panic hook again.
//!
//! One test in its own binary: it installs a panic hook of its own (the
//! process's, shared by every test of a binary) before the emulator's.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

use cuda_device::thread;
use cuda_emulator::{run, Fault, Grid, HostKernel};

/// Host panics the host's hook saw (the emulator's hook passes them on).
static HOST_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn grid(blocks: u32, threads: u32) -> Grid {
    Grid { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// A host panic, caught: whether the host's hook saw it.
fn host_hook_sees_a_host_panic(label: &str) -> bool {
    let before = HOST_PANICS.lock().unwrap().len();
    let caught = std::panic::catch_unwind(|| panic!("host panic after {label}"));
    assert!(caught.is_err());
    let seen = HOST_PANICS.lock().unwrap();
    seen.len() == before + 1 && seen.last().is_some_and(|m| m == &format!("host panic after {label}"))
}

extern "C" fn cannot_unwind(lane: u32) -> u32 {
    if lane == 7 {
        panic!("lane {lane} panicked where no unwinding is allowed");
    }
    lane
}

struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if std::thread::panicking() {
            panic!("a destructor panicked during unwinding");
        }
    }
}

fn device_panic(result: Result<(), Fault>) -> cuda_emulator::HostPanic {
    match result {
        Err(Fault::Panic(p)) => p,
        other => panic!("expected a device panic, got {other:?}"),
    }
}

#[test]
fn every_kind_of_kernel_panic_fails_the_launch_and_the_host_keeps_its_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info.payload().downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| info.payload().downcast_ref::<String>().cloned());
        HOST_PANICS.lock().unwrap().push(message.unwrap_or_default());
    }));
    assert!(host_hook_sees_a_host_panic("installing the hook"));

    // Thread 3 panics while the others of its block wait at a barrier: the
    // launch fails with threads left mid-kernel.
    let body = || {
        if thread::threadIdx_x() == 3 {
            panic!("thread 3 gives up");
        }
        thread::sync_threads();
    };
    let p = device_panic(run(grid(1, 32), &HostKernel::from_fn(&body)));
    assert_eq!((p.message.as_str(), p.thread), ("thread 3 gives up", (3, 0, 0)));
    assert!(host_hook_sees_a_host_panic("a launch that failed mid-kernel"), "the host's panic hook went quiet");

    // The same in a grid large enough to run on worker threads.
    let p = device_panic(run(grid(64, 256), &HostKernel::from_fn(&body)));
    assert_eq!(p.message, "thread 3 gives up");
    assert!(host_hook_sees_a_host_panic("a failed launch on workers"));

    // A panic out of an `extern "C"` function cannot unwind: the launch
    // fails with the panic's own message and place.
    let body = || {
        std::hint::black_box(cannot_unwind(thread::threadIdx_x()));
        thread::sync_threads();
    };
    for blocks in [1, 64] {
        let p = device_panic(run(grid(blocks, 256), &HostKernel::from_fn(&body)));
        assert_eq!(p.message, "lane 7 panicked where no unwinding is allowed");
        assert_eq!(p.thread, (7, 0, 0));
        assert_eq!(p.file, file!());
        assert!(host_hook_sees_a_host_panic("a panic that could not unwind"));
        assert!(!std::thread::panicking());
    }

    // A destructor that panics while a panic unwinds (a panic while panicking).
    let body = || {
        let _guard = PanicsOnDrop;
        if thread::threadIdx_x() == 0 {
            panic!("the first panic");
        }
    };
    let p = device_panic(run(grid(1, 32), &HostKernel::from_fn(&body)));
    assert_eq!(p.message, "the first panic");
    assert!(host_hook_sees_a_host_panic("a panic while panicking"));

    // Launches run as before on the same OS threads.
    let count = AtomicU32::new(0);
    let body = || {
        count.fetch_add(1, Relaxed);
        thread::sync_threads();
    };
    run(grid(64, 256), &HostKernel::from_fn(&body)).unwrap();
    run(grid(1, 32), &HostKernel::from_fn(&body)).unwrap();
    assert_eq!(count.load(Relaxed), 64 * 256 + 32);
    assert!(!std::thread::panicking());
}
