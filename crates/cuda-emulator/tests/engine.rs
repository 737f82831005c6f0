//! The CPU emulator's semantics, checked without a GPU: barriers, warp
//! collectives (full and partial masks, against the PTX definitions),
//! shared memory per block, atomics, and the faults it reports (barrier
//! divergence, shared-memory races, out-of-bounds shared accesses, device
//! panics).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use cuda_emulator::{run, Fault, Grid, HostKernel};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::{dynamic_shared, shared, thread, warp};

fn grid(blocks: u32, threads: u32) -> Grid {
    Grid { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

fn cells(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(u32::MAX)).collect()
}

fn values(v: &[AtomicU32]) -> Vec<u32> {
    v.iter().map(|x| x.load(Relaxed)).collect()
}

fn emulator_message(result: Result<(), Fault>) -> String {
    match result {
        Err(Fault::Emulator(m)) => m,
        other => panic!("expected an emulator fault, got {other:?}"),
    }
}

#[test]
fn coordinates_of_a_3d_launch() {
    let g = Grid { grid_dim: (2, 3, 2), block_dim: (4, 2, 3), shared_mem_bytes: 0 };
    let seen = cells(12 * 24);
    let body = || {
        let b = (thread::blockIdx_z() * 3 + thread::blockIdx_y()) * 2 + thread::blockIdx_x();
        let t = thread::block_linear_index() as u32;
        assert_eq!((thread::blockDim_x(), thread::blockDim_y(), thread::blockDim_z()), (4, 2, 3));
        assert_eq!((thread::gridDim_x(), thread::gridDim_y(), thread::gridDim_z()), (2, 3, 2));
        let id = (thread::threadIdx_z() * 2 + thread::threadIdx_y()) * 4 + thread::threadIdx_x();
        assert_eq!(id, t);
        seen[(b * 24 + t) as usize].store(b * 100 + t, Relaxed);
    };
    run(g, &HostKernel::from_fn(&body)).unwrap();
    let want: Vec<u32> = (0..12).flat_map(|b| (0..24).map(move |t| b * 100 + t)).collect();
    assert_eq!(values(&seen), want);
}

#[test]
fn barriers_order_shared_memory_and_each_block_has_its_own() {
    let out = cells(8 * 128);
    let body = || {
        shared! { static TILE: [u32; 128]; }
        let t = thread::threadIdx_x() as usize;
        let b = thread::blockIdx_x();
        // SAFETY: each thread writes its own slot; the barrier separates the reads.
        unsafe { TILE.write(t, b * 1000 + t as u32) };
        thread::sync_threads();
        let mirrored = unsafe { TILE.read(127 - t) };
        out[b as usize * 128 + t].store(mirrored, Relaxed);
    };
    run(grid(8, 128), &HostKernel::from_fn(&body)).unwrap();
    for b in 0..8u32 {
        for t in 0..128u32 {
            assert_eq!(out[(b * 128 + t) as usize].load(Relaxed), b * 1000 + 127 - t);
        }
    }
}

#[test]
fn barrier_reductions() {
    let out = cells(3);
    let body = || {
        let t = thread::threadIdx_x();
        let count = thread::sync_threads_count(t % 3 == 0);
        let all = thread::sync_threads_and(t < 1000);
        let any = thread::sync_threads_or(t == 77);
        let none = thread::sync_threads_or(false);
        if t == 5 {
            out[0].store(count, Relaxed);
            out[1].store(all as u32 + 2 * any as u32, Relaxed);
            out[2].store(none as u32, Relaxed);
        }
    };
    run(grid(1, 100), &HostKernel::from_fn(&body)).unwrap();
    assert_eq!(values(&out), [34, 3, 0]);
}

#[test]
fn dynamic_shared_memory_is_per_block_and_sized_by_the_launch() {
    let out = cells(4 * 64);
    let body = || {
        // SAFETY: the launch gives 64 u32s; each thread writes its own slot
        // before the barrier and reads another's after it.
        let (base, len) = unsafe { dynamic_shared::<u32>() };
        assert_eq!(len, 64);
        let t = thread::threadIdx_x() as usize;
        unsafe { base.add(t).write(thread::blockIdx_x() * 64 + t as u32) };
        thread::sync_threads();
        let v = unsafe { base.add((t + 1) % 64).read() };
        out[thread::blockIdx_x() as usize * 64 + t].store(v, Relaxed);
    };
    let g = Grid { shared_mem_bytes: 256, ..grid(4, 64) };
    run(g, &HostKernel::from_fn(&body)).unwrap();
    for b in 0..4u32 {
        for t in 0..64u32 {
            assert_eq!(out[(b * 64 + t) as usize].load(Relaxed), b * 64 + (t + 1) % 64);
        }
    }
}

#[test]
fn shuffles_follow_ptx_with_full_masks() {
    let out = cells(4 * 64);
    let body = || {
        let t = thread::threadIdx_x();
        let lane = warp::lane_id();
        let v = 100 + t;
        out[t as usize].store(warp::shfl_idx(warp::FULL_MASK, v, (lane * 7) % 32), Relaxed);
        out[64 + t as usize].store(warp::shfl_up(warp::FULL_MASK, v, 3), Relaxed);
        out[128 + t as usize].store(warp::shfl_down(warp::FULL_MASK, v, 5), Relaxed);
        out[192 + t as usize].store(warp::shfl_xor(warp::FULL_MASK, v, 9), Relaxed);
    };
    run(grid(1, 64), &HostKernel::from_fn(&body)).unwrap();
    for t in 0..64u32 {
        let (w, lane) = (t / 32 * 32, t % 32);
        assert_eq!(out[t as usize].load(Relaxed), 100 + w + (lane * 7) % 32, "idx {t}");
        let up = if lane >= 3 { lane - 3 } else { lane };
        assert_eq!(out[64 + t as usize].load(Relaxed), 100 + w + up, "up {t}");
        let down = if lane + 5 <= 31 { lane + 5 } else { lane };
        assert_eq!(out[128 + t as usize].load(Relaxed), 100 + w + down, "down {t}");
        assert_eq!(out[192 + t as usize].load(Relaxed), 100 + w + (lane ^ 9), "xor {t}");
    }
}

#[test]
fn partial_masks_form_independent_groups() {
    // Lanes 0..16 and 16..32 run separate collectives at the same time.
    let out = cells(32 * 6);
    let body = || {
        let lane = warp::lane_id();
        let mask = if lane < 16 { 0x0000_FFFF } else { 0xFFFF_0000 };
        let i = lane as usize;
        out[i].store(warp::shfl_xor(mask, lane * 10, 1), Relaxed);
        out[32 + i].store(warp::ballot(mask, lane % 3 == 0), Relaxed);
        out[64 + i].store(warp::all(mask, lane < 16) as u32 + 2 * warp::any(mask, lane == 20) as u32, Relaxed);
        out[96 + i].store(warp::reduce_add_u32(mask, lane), Relaxed);
        out[128 + i].store(warp::match_any(mask, lane / 4), Relaxed);
        out[160 + i].store(warp::elect_one(mask) as u32, Relaxed);
    };
    run(grid(1, 32), &HostKernel::from_fn(&body)).unwrap();
    let ballot_lo = (0..16).filter(|l| l % 3 == 0).fold(0u32, |m, l| m | 1 << l);
    let ballot_hi = (16..32).filter(|l| l % 3 == 0).fold(0u32, |m, l| m | 1 << l);
    for lane in 0..32u32 {
        let i = lane as usize;
        let lo = lane < 16;
        assert_eq!(out[i].load(Relaxed), (lane ^ 1) * 10);
        assert_eq!(out[32 + i].load(Relaxed), if lo { ballot_lo } else { ballot_hi });
        assert_eq!(out[64 + i].load(Relaxed), if lo { 1 } else { 2 });
        assert_eq!(out[96 + i].load(Relaxed), if lo { (0..16).sum() } else { (16..32).sum() });
        assert_eq!(out[128 + i].load(Relaxed), 0xF << (lane / 4 * 4));
        assert_eq!(out[160 + i].load(Relaxed), (lane == 0 || lane == 16) as u32);
    }
}

#[test]
fn shuffle_from_a_lane_outside_the_mask_returns_the_own_value() {
    let out = cells(8);
    let body = || {
        let lane = warp::lane_id();
        // Lanes 0..8 shuffle; lane 0 reads lane 12, which is not in the mask.
        let src = if lane == 0 { 12 } else { 7 - lane };
        out[lane as usize].store(warp::shfl_idx(0xFF, lane + 50, src), Relaxed);
    };
    run(grid(1, 8), &HostKernel::from_fn(&body)).unwrap();
    let want: Vec<u32> = (0..8).map(|l| if l == 0 { 50 } else { 50 + 7 - l }).collect();
    assert_eq!(values(&out), want);
}

#[test]
fn warp_sum_of_floats_and_64_bit_values() {
    let out = cells(2);
    let body = || {
        let lane = warp::lane_id();
        let s = warp::sum(lane as f32 * 0.5);
        let m = warp::max(lane as u64 * 1_000_000_007);
        if lane == 3 {
            out[0].store(s.to_bits(), Relaxed);
            out[1].store((m / 1_000_000_007) as u32, Relaxed);
        }
    };
    run(grid(1, 32), &HostKernel::from_fn(&body)).unwrap();
    assert_eq!(f32::from_bits(out[0].load(Relaxed)), 248.0);
    assert_eq!(out[1].load(Relaxed), 31);
}

#[test]
fn atomics_are_real_atomics_across_blocks() {
    let total = AtomicU64::new(0);
    let hits = AtomicU32::new(0);
    let body = || {
        total.fetch_add_scoped(thread::index_1d().get() as u64, Scope::Device, Relaxed);
        hits.fetch_add(1, Relaxed);
    };
    run(grid(64, 256), &HostKernel::from_fn(&body)).unwrap();
    let n = 64 * 256u64;
    assert_eq!(total.load(Relaxed), n * (n - 1) / 2);
    assert_eq!(hits.load(Relaxed), n as u32);
}

/// A spin-wait inside a block (legal since sm_70): the first thread waits
/// for a flag the last thread of its block sets, so the waiting threads
/// must let the others run. Per block: the value published with the flag.
fn spin_wait_in_each_block(wait: impl Fn(&AtomicU32) + Sync) -> Vec<u32> {
    let blocks = 4;
    let flags = cells(blocks);
    let payload = cells(blocks);
    let seen = cells(blocks * 64);
    for f in &flags {
        f.store(0, Relaxed);
    }
    let body = || {
        let (t, b) = (thread::threadIdx_x() as usize, thread::blockIdx_x() as usize);
        if t == 63 {
            payload[b].store(1000 + b as u32, Relaxed);
            flags[b].store_scoped(1, Scope::Block, std::sync::atomic::Ordering::Release);
        } else {
            wait(&flags[b]);
        }
        seen[b * 64 + t].store(payload[b].load(Relaxed), Relaxed);
    };
    run(grid(blocks as u32, 64), &HostKernel::from_fn(&body)).unwrap();
    values(&seen)
}

#[test]
fn a_spin_wait_on_a_cuda_device_atomic_lets_the_setter_run() {
    let acquire = std::sync::atomic::Ordering::Acquire;
    let seen = spin_wait_in_each_block(|flag| while flag.load_scoped(Scope::Block, acquire) == 0 {});
    let want: Vec<u32> = (0..4).flat_map(|b| std::iter::repeat_n(1000 + b, 64)).collect();
    assert_eq!(seen, want);
    // A core atomic with a nanosleep back-off: the sleep lets the others run.
    let seen = spin_wait_in_each_block(|flag| {
        while flag.load(acquire) == 0 {
            thread::nanosleep(100);
        }
    });
    assert_eq!(seen, want);
}

#[test]
fn an_early_return_before_a_barrier_is_reported_not_hung() {
    let body = || {
        if thread::threadIdx_x() >= 48 {
            return;
        }
        thread::sync_threads();
    };
    let msg = emulator_message(run(grid(2, 64), &HostKernel::from_fn(&body)));
    assert!(msg.contains("barrier divergence in block ("), "{msg}");
    assert!(msg.contains("48 thread(s) wait at sync_threads"), "{msg}");
    assert!(msg.contains("16 exited without reaching it (threads (48, 0, 0)"), "{msg}");
}

#[test]
fn a_lane_missing_from_a_full_mask_collective_is_reported() {
    let body = || {
        if warp::lane_id() == 5 {
            return;
        }
        warp::sum(1u32);
    };
    let msg = emulator_message(run(grid(1, 32), &HostKernel::from_fn(&body)));
    assert!(msg.contains("warp divergence in block (0, 0, 0)"), "{msg}");
    assert!(msg.contains("with mask 0xffffffff"), "{msg}");
    assert!(msg.contains("lane 5 exited"), "{msg}");
}

#[test]
fn a_shared_memory_race_names_both_threads_and_the_address() {
    let body = || {
        shared! { static SLOT: [u32; 4]; }
        let t = thread::threadIdx_x();
        // SAFETY (deliberately violated): two threads write element 1 with no barrier.
        if t == 3 || t == 40 {
            unsafe { SLOT.write(1, t) };
        }
        thread::sync_threads();
    };
    let msg = emulator_message(run(grid(1, 64), &HostKernel::from_fn(&body)));
    assert!(msg.contains("shared-memory race in block (0, 0, 0)"), "{msg}");
    assert!(msg.contains("thread (3, 0, 0) wrote byte 4 of a 16-byte shared array"), "{msg}");
    assert!(msg.contains("thread (40, 0, 0) then wrote it"), "{msg}");
}

#[test]
fn a_barrier_between_accesses_is_not_a_race() {
    let out = cells(64);
    let body = || {
        shared! { static SLOT: [u32; 1]; }
        let t = thread::threadIdx_x();
        if t == 0 {
            unsafe { SLOT.write(0, 7) };
        }
        thread::sync_threads();
        out[t as usize].store(unsafe { SLOT.read(0) }, Relaxed);
        thread::sync_threads();
        if t == 63 {
            unsafe { SLOT.write(0, 8) };
        }
    };
    run(grid(1, 64), &HostKernel::from_fn(&body)).unwrap();
    assert!(values(&out).iter().all(|&v| v == 7));
}

#[test]
fn a_read_after_an_unsynchronised_write_is_a_race() {
    let body = || {
        shared! { static SLOT: [u32; 1]; }
        if thread::threadIdx_x() == 0 {
            unsafe { SLOT.write(0, 1) };
        }
        if thread::threadIdx_x() == 33 {
            let _ = unsafe { SLOT.read(0) };
        }
    };
    let msg = emulator_message(run(grid(1, 64), &HostKernel::from_fn(&body)));
    assert!(msg.contains("thread (0, 0, 0) wrote byte 0") && msg.contains("thread (33, 0, 0) then read it"), "{msg}");
}

#[test]
fn shared_access_out_of_bounds_is_reported() {
    let body = || {
        shared! { static SMALL: [u32; 8]; }
        let t = thread::threadIdx_x() as usize;
        unsafe { SMALL.write(t, 1) };
    };
    let result = run(grid(1, 9), &HostKernel::from_fn(&body));
    if cfg!(debug_assertions) {
        // SharedArray's own debug assertion sees it first: a device panic.
        match result {
            Err(Fault::Panic(p)) => assert_eq!((p.message.as_str(), p.thread), ("assertion failed: i < N", (8, 0, 0))),
            other => panic!("expected a device panic, got {other:?}"),
        }
    } else {
        let msg = emulator_message(result);
        assert!(msg.contains("thread (8, 0, 0) of block (0, 0, 0): shared-memory access out of bounds: 4 bytes at byte 32 of a 32-byte shared array"), "{msg}");
    }
}

#[test]
fn a_device_panic_reports_thread_block_and_location() {
    let data = [1u32, 2, 3, 4];
    let body = || {
        let i = thread::index_1d().get();
        if thread::blockIdx_x() == 2 && thread::threadIdx_x() == 5 {
            let _ = std::hint::black_box(data[i]); // i = 21: out of bounds
        }
    };
    let line = line!() - 3;
    match run(grid(4, 8), &HostKernel::from_fn(&body)) {
        Err(Fault::Panic(p)) => {
            assert_eq!((p.thread, p.block), ((5, 0, 0), (2, 0, 0)));
            assert_eq!(p.message, "index out of bounds: the len is 4 but the index is 21");
            assert_eq!(p.file, file!());
            assert_eq!(p.line, line);
        }
        other => panic!("expected a device panic, got {other:?}"),
    }
}

#[test]
fn many_blocks_of_the_largest_size() {
    let sum = AtomicU64::new(0);
    let body = || {
        shared! { static PART: [u32; 1024]; }
        let t = thread::threadIdx_x() as usize;
        unsafe { PART.write(t, 1) };
        thread::sync_threads();
        if t == 0 {
            let s: u32 = (0..1024).map(|i| unsafe { PART.read(i) }).sum();
            sum.fetch_add(s as u64, Relaxed);
        }
    };
    run(grid(16, 1024), &HostKernel::from_fn(&body)).unwrap();
    assert_eq!(sum.load(Relaxed), 16 * 1024);
}

#[test]
fn the_target_query_answers_the_modelled_gpu_and_bulk_prefetch_is_a_hint() {
    // The host-code emulator runs the kernel's Rust, built for no target:
    // it answers the compute capability cuDeviceGetAttribute reports (9.0)
    // and the portable sm_90's features, so code behind
    // `compute_capability() >= 90` runs, and its bulk prefetch changes
    // nothing.
    let data: Vec<u32> = (0..256).collect();
    let seen = cells(4);
    let body = || {
        let t = thread::threadIdx_x() as usize;
        let sm = cuda_device::arch::compute_capability()
            + 1000 * cuda_device::arch::has(cuda_device::arch::Feature::Clusters) as u32
            + 2000 * cuda_device::arch::has(cuda_device::arch::Feature::Wgmma) as u32;
        if sm % 1000 >= 90 {
            cuda_device::cache::prefetch_l2_bulk(&data[t * 64..(t + 1) * 64]);
        }
        seen[t].store(sm + data[t * 64 + 1], Relaxed);
    };
    run(grid(1, 4), &HostKernel::from_fn(&body)).unwrap();
    // 9.0 with clusters (every sm_90 target), without wgmma (sm_90a only).
    assert_eq!(values(&seen), vec![1091, 1155, 1219, 1283]);
}
