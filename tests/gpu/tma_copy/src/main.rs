//! tma_copy: the TMA and mbarrier round trip on its own. Each block loads a
//! 16×32 box of an f32 matrix into shared memory with one TMA copy (thread
//! 0, completing on an mbarrier everyone waits on), every thread turns its
//! elements x into 2x + 1 with ordinary shared-memory accesses, and thread 0
//! stores the box back into a second matrix with a TMA store
//! (`fence.proxy.async` first, `commit_group` + `wait_group_read` after).
//!
//! The matrix is 100×76: neither dimension is a multiple of the box, so the
//! edge boxes check that loads fill out-of-bounds elements with zeros and
//! stores skip them (the output's other elements stay as initialised). The
//! CPU checks every element. A second part checks that the host refuses an
//! invalid tensor map with a typed error before the driver sees it.
//!
//! A third runs the box in pairs of blocks (a cluster of two): for each box
//! of a column, each block loads half of the box's rows and multicasts them
//! into both blocks' shared memory (`tma::load_2d_multicast`), so each block
//! holds the whole box; block 0 stores 2x + 1 of it, block 1 3x − 1, into
//! two matrices. The pair walks every box of its column through one buffer:
//! a block's next multicast writes into the other's buffer too, so it waits
//! until both have stored the box (each arrives on both blocks' "empty"
//! barrier, `MBarrier::arrive_cluster_after_reads`). A half that never arrived, or one
//! that overwrote a box still being stored, shows in the results.

use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorMapError};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, shared_address, MBarrier};
use cuda_device::{cluster, kernel, shared, thread, tma};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Box width (elements; 128 bytes).
const BOX_X: u32 = 32;
/// Box height.
const BOX_Y: u32 = 16;
/// Threads per block.
const THREADS: u32 = 256;

/// out = 2·in + 1 box by box through shared memory. Launch with 256
/// threads and one block per box: (ceil(cols/32), ceil(rows/16)).
#[kernel]
pub fn scale_boxes(map_in: u64, map_out: u64) {
    shared! {
        static TILE: [f32; (BOX_X * BOX_Y) as usize] align 128;
        static BAR: [u64; 1];
    }
    // SAFETY: BAR is a shared word used only as this barrier.
    let bar = unsafe { MBarrier::at(BAR.as_mut_ptr()) };
    let tid = thread::threadIdx_x();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + barrier publish it.
        unsafe { bar.init(1) };
        mbarrier::fence_init();
    }
    thread::sync_threads();
    let x = (thread::blockIdx_x() * BOX_X) as i32;
    let y = (thread::blockIdx_y() * BOX_Y) as i32;
    let tile = shared_address(TILE.as_mut_ptr());
    if tid == 0 {
        bar.arrive_expect_tx(BOX_X * BOX_Y * 4);
        // SAFETY: map_in is a valid 2-D f32 map with a 32×16 box (host);
        // TILE is 128-byte aligned shared memory of the box's size, untouched
        // until the barrier completes.
        unsafe { tma::load_2d(tile, map_in, bar, x, y) };
    }
    bar.wait(0);
    let mut i = tid;
    while i < BOX_X * BOX_Y {
        // SAFETY: i < the tile's length; element i is this thread's alone
        // (stride THREADS) and the TMA bytes are visible after the wait.
        unsafe { TILE.write(i as usize, 2.0 * TILE.read(i as usize) + 1.0) };
        i += THREADS;
    }
    // Every thread's writes, then the asynchronous proxy may read them.
    tma::fence_proxy_async_shared();
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: map_out is valid (host); the tile is complete (barrier
        // above) and not written again; the block waits for the store to
        // have read it before exiting.
        unsafe { tma::store_2d(map_out, tile, x, y) };
        tma::commit_group();
        tma::wait_group_read::<0>();
    }
}

/// Rows of the box each block of a pair loads and multicasts.
const HALF_Y: u32 = BOX_Y / 2;

/// The pairs' part (module docs): launch with clusters of two along x, one
/// pair per column of boxes (grid x = 2·⌈cols/32⌉), 256 threads; `map_half`
/// has 32×8 boxes, the outputs' maps 32×16.
#[kernel(cluster_dims(2, 1, 1))]
pub fn scale_box_pairs(map_half: u64, map_out_a: u64, map_out_b: u64, box_rows: u32) {
    shared! {
        static TILE: [f32; (BOX_X * BOX_Y) as usize] align 128;
        static BARS: [u64; 2];
    }
    // SAFETY (both): shared words used only as these barriers.
    let full = unsafe { MBarrier::at(BARS.as_mut_ptr()) };
    let empty = unsafe { MBarrier::at(BARS.as_mut_ptr().add(1)) };
    let tid = thread::threadIdx_x();
    let rank = cluster::ctarank();
    if tid == 0 {
        // SAFETY: one thread initialises; fence + the cluster barrier
        // publish it to both blocks before either copies or arrives.
        unsafe {
            full.init(1);
            // Both blocks' leaders, once each has stored the box.
            empty.init(2);
        }
        mbarrier::fence_init();
    }
    cluster::sync();
    let x = ((thread::blockIdx_x() / 2) * BOX_X) as i32;
    let tile = shared_address(TILE.as_mut_ptr());
    let mut round = 0;
    while round < box_rows {
        let y = (round * BOX_Y) as i32;
        if tid == 0 {
            if round > 0 {
                // Both blocks stored the last box: both buffers are free.
                empty.wait((round - 1) & 1);
            }
            full.arrive_expect_tx(BOX_X * BOX_Y * 4);
            // SAFETY: map_half is a valid 32×8 f32 map (host); both blocks'
            // buffers are free (above) and their `full` barriers expect the
            // whole box, half from each block; neither block exits before
            // the cluster barrier at the end.
            unsafe {
                tma::load_2d_multicast(tile + rank * HALF_Y * BOX_X * 4, map_half, full, x, y + (rank * HALF_Y) as i32, 0b11)
            };
        }
        full.wait(round & 1);
        let mut i = tid;
        while i < BOX_X * BOX_Y {
            // SAFETY: i < the tile's length; element i is this thread's
            // alone, and both halves are visible after the wait.
            unsafe {
                let v = TILE.read(i as usize);
                TILE.write(i as usize, if rank == 0 { 2.0 * v + 1.0 } else { 3.0 * v - 1.0 });
            }
            i += THREADS;
        }
        tma::fence_proxy_async_shared();
        thread::sync_threads();
        if tid == 0 {
            let map_out = if rank == 0 { map_out_a } else { map_out_b };
            // SAFETY: a valid 32×16 map (host); the tile is complete and not
            // written again before the store has read it (wait below).
            unsafe { tma::store_2d(map_out, tile, x, y) };
            tma::commit_group();
            tma::wait_group_read::<0>();
            // SAFETY: ranks 0 and 1 are this pair, whose barriers were
            // initialised before the first cluster barrier and which leave
            // only after the last. The store has read the tile (wait
            // above): the arrival only frees it, a block-scope release.
            unsafe {
                empty.arrive_cluster_after_reads(0);
                empty.arrive_cluster_after_reads(1);
            }
        }
        // No thread reads the tile again before the next round's `full`.
        thread::sync_threads();
        round += 1;
    }
    // The other block may still arrive on this block's barrier.
    cluster::sync();
}

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    let stream = ctx.default_stream();
    let (rows, cols) = (100usize, 76usize);
    let input: Vec<f32> = (0..rows * cols).map(|i| (i % 1000) as f32 * 0.25 - 50.0).collect();
    let run = || -> Result<Vec<f32>, Box<dyn std::error::Error>> {
        let module = load_kernel_module(&ctx, "tma_copy")?;
        let a = DeviceBuffer::from_host(&stream, &input)?;
        let mut b = DeviceBuffer::<f32>::zeroed(&stream, rows * cols)?;
        b.fill(&stream, -7.0)?;
        let map = |p: u64| {
            TensorMap::tiled(TensorDataType::F32, p, &[cols as u64, rows as u64], &[4 * cols as u64], &[BOX_X, BOX_Y])
                .encode()
        };
        let map_in = map(a.device_ptr())?.upload(&stream)?;
        let map_out = map(b.device_ptr())?.upload(&stream)?;
        let config = LaunchConfig {
            grid_dim: ((cols as u32).div_ceil(BOX_X), (rows as u32).div_ceil(BOX_Y), 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (pi, po) = (map_in.device_ptr(), map_out.device_ptr());
        cuda_launch! { kernel: scale_boxes, stream: stream, module: module, config: config, args: [pi, po] }?;
        Ok(b.to_host_vec(&stream)?)
    };
    let out = match run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let wrong = input.iter().zip(&out).filter(|(x, y)| 2.0 * **x + 1.0 != **y).count();
    println!("TMA load → shared → TMA store of a {rows}×{cols} f32 matrix in 32×16 boxes: {wrong} wrong");

    // A 76-column f32 row is 304 bytes; 75 columns (300 bytes) is not a
    // multiple of 16 and must be refused before the driver is called.
    let refused = TensorMap::tiled(TensorDataType::F32, 0x1000, &[75, 100], &[300], &[BOX_X, BOX_Y]).encode();
    let typed = matches!(refused, Err(TensorMapError::Stride { index: 0, stride: 300, multiple: 16 }));
    println!("a 300-byte row stride is refused with a typed error: {typed}");

    let pairs = || -> Result<(Vec<f32>, Vec<f32>), Box<dyn std::error::Error>> {
        let module = load_kernel_module(&ctx, "tma_copy")?;
        let a = DeviceBuffer::from_host(&stream, &input)?;
        let mut outs = [DeviceBuffer::<f32>::zeroed(&stream, rows * cols)?, DeviceBuffer::<f32>::zeroed(&stream, rows * cols)?];
        for out in &mut outs {
            out.fill(&stream, -7.0)?;
        }
        let map = |p: u64, box_y: u32| {
            TensorMap::tiled(TensorDataType::F32, p, &[cols as u64, rows as u64], &[4 * cols as u64], &[BOX_X, box_y]).encode()
        };
        let map_half = map(a.device_ptr(), HALF_Y)?.upload(&stream)?;
        let map_a = map(outs[0].device_ptr(), BOX_Y)?.upload(&stream)?;
        let map_b = map(outs[1].device_ptr(), BOX_Y)?.upload(&stream)?;
        let config = LaunchConfig {
            grid_dim: (2 * (cols as u32).div_ceil(BOX_X), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (ph, pa, pb) = (map_half.device_ptr(), map_a.device_ptr(), map_b.device_ptr());
        let box_rows = (rows as u32).div_ceil(BOX_Y);
        cuda_launch! { kernel: scale_box_pairs, stream: stream, module: module, config: config, args: [ph, pa, pb, box_rows] }?;
        let [oa, ob] = outs;
        Ok((oa.to_host_vec(&stream)?, ob.to_host_vec(&stream)?))
    };
    let pairs_wrong = match pairs() {
        Ok((oa, ob)) => {
            let wrong_a = input.iter().zip(&oa).filter(|(x, y)| 2.0 * **x + 1.0 != **y).count();
            let wrong_b = input.iter().zip(&ob).filter(|(x, y)| 3.0 * **x - 1.0 != **y).count();
            println!("pairs of blocks, each box multicast half by half: block 0's {wrong_a} wrong, block 1's {wrong_b} wrong");
            wrong_a + wrong_b
        }
        Err(e) => {
            eprintln!("pairs: {e}");
            1
        }
    };
    if wrong == 0 && typed && pairs_wrong == 0 {
        println!("✓ SUCCESS: TMA round trip matches the CPU");
        ExitCode::SUCCESS
    } else {
        println!("✗ FAILED");
        ExitCode::FAILURE
    }
}
