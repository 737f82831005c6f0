//! A host-code kernel that runs off a device allocation through a raw
//! pointer fails the launch with an illegal address naming the thread, the
//! address and the allocation (`CUDA_ERROR_ILLEGAL_ADDRESS` on a GPU),
//! instead of corrupting the host heap (`munmap_chunk(): invalid pointer`
//! at a later `free`). A binary of its own: it installs the process's
//! fault handler.

use std::ptr;

use cuda_device::thread;
use cuda_emulator::{run, Fault, Grid, HostKernel, Mode};

fn grid(blocks: u32, threads: u32) -> Grid {
    Grid { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

fn illegal_address(result: Result<(), Fault>) -> String {
    match result {
        Err(Fault::IllegalAddress(m)) => m,
        other => panic!("expected an illegal address, got {other:?}"),
    }
}

#[test]
fn raw_pointer_accesses_past_an_allocation_fail_the_launch_naming_the_address() {
    let api = cuda_emulator::driver_api(Mode::HostCode);
    let mut ctx = ptr::null_mut();
    let mut device = 0u64;
    // SAFETY: out-pointers to locals; device 0 exists.
    unsafe {
        assert_eq!((api.cuInit)(0), 0);
        assert_eq!((api.cuDevicePrimaryCtxRetain)(&mut ctx, 0), 0);
        assert_eq!((api.cuCtxSetCurrent)(ctx), 0);
        assert_eq!((api.cuMemAlloc_v2)(&mut device, 4096), 0);
    }
    let base = device as usize;

    // Thread 5 writes five elements past the end of 1024 u32s.
    let body = || {
        let t = thread::threadIdx_x() as usize;
        if t == 5 {
            // SAFETY: none: the kernel's bug under test.
            unsafe { (base as *mut u32).add(1024 + t).write(1) };
        }
    };
    let m = illegal_address(run(grid(1, 32), &HostKernel::from_fn(&body)));
    let expected = format!(
        "emulator: thread (5, 0, 0) of block (0, 0, 0): illegal address {:#x}: 20 bytes past the end of the device \
         allocation of 4096 bytes at {base:#x}",
        base + 4096 + 20
    );
    assert_eq!(m, expected);

    // A read before the start, in a grid that runs on several workers.
    let body = || {
        if thread::blockIdx_x() == 9 && thread::threadIdx_x() == 0 {
            // SAFETY: none: the kernel's bug under test.
            std::hint::black_box(unsafe { (base as *const u32).sub(1).read_volatile() });
        }
        thread::sync_threads();
    };
    let m = illegal_address(run(grid(64, 256), &HostKernel::from_fn(&body)));
    assert!(m.starts_with("emulator: thread (0, 0, 0) of block (9, 0, 0): illegal address"), "{m}");
    assert!(m.ends_with(&format!("4 bytes before the start of the device allocation of 4096 bytes at {base:#x}")), "{m}");

    // The host heap is intact and launches work as before.
    let v: Vec<Vec<u8>> = (0..1000).map(|i| vec![i as u8; 100 + i]).collect();
    drop(v);
    let body = || {
        let t = thread::threadIdx_x() as usize;
        // SAFETY: 1024 u32s of the allocation; one per thread.
        unsafe { (base as *mut u32).add(t).write(t as u32) };
    };
    run(grid(1, 1024), &HostKernel::from_fn(&body)).unwrap();
    // SAFETY: 1024 u32s of the live allocation, written by the launch.
    let written = unsafe { std::slice::from_raw_parts(base as *const u32, 1024) };
    assert!(written.iter().enumerate().all(|(i, &x)| x == i as u32));
    // SAFETY: the allocation made above, freed once.
    unsafe {
        assert_eq!((api.cuMemFree_v2)(device), 0);
        assert_eq!((api.cuDevicePrimaryCtxRelease_v2)(0), 0);
    }
}
