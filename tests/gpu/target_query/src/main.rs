//! GPU test: `arch::compute_capability()`, `arch::has` and
//! `cache::prefetch_l2_bulk`. Built for sm_90 (Cargo.toml), the queries are
//! 90 and clusters and tma without wgmma (sm_90a's) in every thread, on the
//! GPU and in both emulators. Each block asks L2 for slices of the input
//! before reading it, in bulk behind a test of the target (the sm_80 branch
//! asks line by line): whole tiles, tiles cut at an element that is not
//! 16-byte aligned at either end, slices shorter than 16 bytes, empty ones,
//! one past the input's end (empty), and one in shared memory (no request).
//! No request may change a value or fault: every output is checked
//! against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::arch::{self, Feature};
use cuda_device::{cache, kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 128;
const BLOCKS: usize = 24;

#[kernel]
pub fn query(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(i) {
        // The compute capability, and the features as thousands: 1 clusters,
        // 2 tma, 4 wgmma.
        let features = arch::has(Feature::Clusters) as u32 + 2 * arch::has(Feature::Tma) as u32
            + 4 * arch::has(Feature::Wgmma) as u32;
        *o = arch::compute_capability() + 1000 * features;
    }
}

/// Asks L2 for `part` in the way the target allows.
#[inline(always)]
fn ask_for(part: &[u32]) {
    if arch::compute_capability() >= 90 {
        cache::prefetch_l2_bulk(part);
    } else {
        for line in part.chunks(32) {
            cache::prefetch_l2(line.as_ptr());
        }
    }
}

#[kernel]
pub fn prefetch_then_read(data: &[u32], mut out: DisjointSlice<u32>) {
    shared! { static STAGE: [u32; BLOCK]; }
    let block = thread::blockIdx_x() as usize;
    let t = thread::threadIdx_x() as usize;
    let start = block * BLOCK;
    let end = data.len().min(start + BLOCK);
    if t == 0 {
        // The block's own tile, the next block's, and cut ones.
        ask_for(&data[start.min(data.len())..end]);
        ask_for(&data[end..data.len().min(end + BLOCK)]);
        let cut = (start + 1).min(end);
        ask_for(&data[cut..end.saturating_sub(1).max(cut)]);
        ask_for(&data[cut..(cut + 3).min(end)]);
        ask_for(&data[end..end]);
        ask_for(&data[data.len()..]);
    }
    let i = thread::index_1d();
    let value = if i.get() < data.len() { data[i.get()] } else { 0 };
    let view = STAGE.stage(value).sync();
    if t == 0 {
        // SAFETY: every thread wrote its element before `sync`, and until
        // `done` the block only reads the array.
        ask_for(unsafe { core::slice::from_raw_parts(STAGE.as_mut_ptr() as *const u32, BLOCK) });
    }
    let neighbour = view.get((t + 1) % BLOCK);
    view.done();
    if let Some(o) = out.get_mut(i) {
        *o = value.wrapping_mul(3) ^ neighbour;
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "target_query")?;
    let mut checks = 0;

    let threads = BLOCK * 2;
    let mut dq = DeviceBuffer::<u32>::zeroed(&stream, threads)?;
    cuda_launch! {
        kernel: query, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(threads as u32),
        args: [slice_mut(dq)]
    }?;
    for (i, sm) in dq.to_host_vec(&stream)?.into_iter().enumerate() {
        if sm != 3090 {
            return Err(format!(
                "thread {i}: compute_capability() = {}, features {} (1 clusters, 2 tma, 4 wgmma); built for sm_90: 90 and 3",
                sm % 1000,
                sm / 1000
            )
            .into());
        }
        checks += 1;
    }

    // Lengths that end inside a tile, on a 16-byte boundary and off one.
    for n in [BLOCK * BLOCKS, BLOCK * BLOCKS - 5, BLOCK * 3 + 1, 7] {
        let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995).collect();
        let ddata = DeviceBuffer::from_host(&stream, &data)?;
        let blocks = n.div_ceil(BLOCK);
        let mut dout = DeviceBuffer::<u32>::zeroed(&stream, blocks * BLOCK)?;
        let config = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
        cuda_launch! {
            kernel: prefetch_then_read, stream: stream, module: module, config: config,
            args: [slice(ddata), slice_mut(dout)]
        }?;
        let gpu = dout.to_host_vec(&stream)?;
        let at = |i: usize| data.get(i).copied().unwrap_or(0);
        for (i, &got) in gpu.iter().enumerate() {
            let block = i / BLOCK * BLOCK;
            let want = at(i).wrapping_mul(3) ^ at(block + (i - block + 1) % BLOCK);
            if got != want {
                return Err(format!("n = {n}, element {i}: GPU {got:#x}, CPU {want:#x}").into());
            }
            checks += 1;
        }
    }
    Ok(checks)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: target_query: compute_capability() = 90 and sm_90's features everywhere, bulk L2 prefetches changed nothing ({n} checks)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
