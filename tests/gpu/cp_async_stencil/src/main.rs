//! GPU test: `cp.async` (sm_80). A double-buffered 1-D stencil: each block
//! walks over several tiles, loading tile k+1 into one shared buffer with
//! asynchronous copies (the halo past the ends zero-filled) while it computes
//! tile k from the other. A second kernel copies 8- and 16-byte elements
//! through the `.ca` and `.cg` paths. Both are checked against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::cp_async::{self, Cache};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Threads per block = elements per tile.
const TILE: usize = 256;
/// One buffer: the tile and one halo element on each side, rounded up.
const STRIDE: usize = TILE + 4;
const BLOCKS: usize = 16;
/// Tiles in all; each block does several (and the last one is partial).
const N: usize = TILE * BLOCKS * 5 - 37;

/// Starts the copies of tile `tile` (with its halo) into buffer `slot`.
#[inline(always)]
fn load_tile(buf: &cuda_device::SharedArray<f32, { 2 * STRIDE }>, x: &[f32], tile: usize, slot: usize) {
    let t = thread::threadIdx_x() as usize;
    // Buffer element j holds x[tile * TILE + j - 1] (j = 0 and TILE + 1: halo).
    let first = (tile * TILE).wrapping_sub(1);
    // SAFETY: each thread copies distinct buffer elements (t, and TILE + t
    // for t < 2); nobody reads the buffer before wait + barrier, and the
    // barrier at the end of each step keeps the previous readers out.
    unsafe {
        cp_async::copy_or_zero(buf, slot * STRIDE + t, x, first.wrapping_add(t));
        if t < 2 {
            cp_async::copy_or_zero(buf, slot * STRIDE + TILE + t, x, first.wrapping_add(TILE + t));
        }
    }
    cp_async::commit();
}

#[kernel]
pub fn stencil(x: &[f32], mut y: DisjointSlice<f32>) {
    shared! { static BUF: [f32; 2 * STRIDE]; }
    let t = thread::threadIdx_x() as usize;
    let tiles = x.len().div_ceil(TILE);
    let step = thread::gridDim_x() as usize;
    let mut tile = thread::blockIdx_x() as usize;
    let mut slot = 0;
    if tile < tiles {
        load_tile(&BUF, x, tile, 0);
    }
    while tile < tiles {
        let next = tile + step;
        if next < tiles {
            load_tile(&BUF, x, next, 1 - slot);
            cp_async::wait_group::<1>(); // this tile's batch is done; the next still loads
        } else {
            cp_async::wait_group::<0>();
        }
        thread::sync_threads();
        let i = tile * TILE + t;
        if i < x.len() {
            let b = slot * STRIDE + t;
            // SAFETY: the copies of this buffer completed (wait) in every
            // thread (barrier); nobody writes it until the barrier below.
            let v = unsafe { 0.25 * BUF.read(b) + 0.5 * BUF.read(b + 1) + 0.25 * BUF.read(b + 2) };
            // SAFETY: element i belongs to this thread alone (tile, t).
            unsafe { *y.get_unchecked_mut(i) = v };
        }
        thread::sync_threads();
        tile = next;
        slot = 1 - slot;
    }
}

/// 8-byte elements with `.ca`, 16-byte ones with `.cg` (zero past the end
/// of `b`), doubled on the way out.
#[kernel]
pub fn wide_copies(a: &[[u32; 2]], b: &[[f32; 4]], mut out_a: DisjointSlice<[u32; 2]>, mut out_b: DisjointSlice<[f32; 4]>) {
    shared! {
        static A: [[u32; 2]; 128];
        static B: [[f32; 4]; 128];
    }
    let t = thread::threadIdx_x() as usize;
    let i = thread::index_1d();
    // SAFETY: each thread copies into its own slot and reads only that slot,
    // after its own wait.
    unsafe {
        cp_async::copy(&A, t, a, i.get());
        cp_async::copy_or_zero_with(Cache::Global, &B, t, b, i.get());
        cp_async::commit();
        cp_async::wait_all();
        let (va, vb) = (A.read(t), B.read(t));
        if let Some(o) = out_a.get_mut(i) {
            *o = [va[0] * 2, va[1] * 2];
        }
        if let Some(o) = out_b.get_mut(i) {
            *o = [vb[0] * 2.0, vb[1] * 2.0, vb[2] * 2.0, vb[3] * 2.0];
        }
    }
}

fn cpu_stencil(x: &[f32]) -> Vec<f32> {
    let at = |i: isize| if i < 0 || i as usize >= x.len() { 0.0 } else { x[i as usize] };
    (0..x.len() as isize).map(|i| 0.25 * at(i - 1) + 0.5 * at(i) + 0.25 * at(i + 1)).collect()
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "cp_async_stencil")?;

    let x: Vec<f32> = (0..N).map(|i| ((i * 7919) % 1000) as f32 * 0.125 - 40.0).collect();
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut dy = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (TILE as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! { kernel: stencil, stream: stream, module: module, config: config, args: [slice(dx), slice_mut(dy)] }?;
    let gpu = dy.to_host_vec(&stream)?;
    let cpu = cpu_stencil(&x);
    if let Some(i) = (0..N).find(|&i| gpu[i] != cpu[i]) {
        return Err(format!("stencil: element {i}: GPU {} CPU {}", gpu[i], cpu[i]).into());
    }

    let n = 1000;
    let a: Vec<[u32; 2]> = (0..n as u32).map(|i| [i, i ^ 0x5555]).collect();
    let b: Vec<[f32; 4]> = (0..n).map(|i| [i as f32, -(i as f32), 0.5, i as f32 * 0.25]).collect();
    let mut oa = DeviceBuffer::<[u32; 2]>::zeroed(&stream, n)?;
    // Past b's end the copies write zeros: start from something else.
    let mut ob = DeviceBuffer::from_host(&stream, &vec![[-1.0f32; 4]; 1024])?;
    let config = LaunchConfig { grid_dim: ((n as u32).div_ceil(128), 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    // `copy` needs its source in bounds: a covers the whole grid.
    let pa: Vec<[u32; 2]> = a.iter().copied().chain(std::iter::repeat([0; 2])).take(1024).collect();
    let (da, db) = (DeviceBuffer::from_host(&stream, &pa)?, DeviceBuffer::from_host(&stream, &b)?);
    cuda_launch! {
        kernel: wide_copies, stream: stream, module: module, config: config,
        args: [slice(da), slice(db), slice_mut(oa), slice_mut(ob)]
    }?;
    let (ga, gb) = (oa.to_host_vec(&stream)?, ob.to_host_vec(&stream)?);
    for i in 0..1024 {
        let want_b = if i < n { b[i].map(|v| v * 2.0) } else { [0.0; 4] };
        let a_ok = i >= n || ga[i] == [a[i][0] * 2, a[i][1] * 2];
        if !a_ok || gb[i] != want_b {
            let got_a = ga.get(i).copied();
            return Err(format!("wide copies: element {i}: GPU {got_a:?} {:?}, CPU b {want_b:?}", gb[i]).into());
        }
    }
    Ok(format!("{N} stencil outputs over {} double-buffered tiles and 1024 8/16-byte copies ({} zero-filled)", N.div_ceil(TILE), 1024 - n))
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: cp.async: {what} matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
