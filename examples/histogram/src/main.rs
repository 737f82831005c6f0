//! histogram: 256 bins counted with shared-memory atomics, then merged into
//! the global histogram with one atomic add per bin and block.

use core::sync::atomic::{AtomicU32, Ordering};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BINS: usize = 256;

/// Adds every byte of `data` to `hist` (which must have 256 zeroed bins).
#[kernel]
pub fn histogram(data: &[u8], mut hist: DisjointSlice<u32>) {
    shared! { static LOCAL: [AtomicU32; BINS]; }
    let tid = thread::threadIdx_x() as usize;
    let threads = thread::blockDim_x() as usize;
    let mut bin = tid;
    while bin < BINS {
        // SAFETY: each thread zeroes its own bins; the barrier below comes
        // before any atomic access.
        unsafe { LOCAL.write(bin, AtomicU32::new(0)) };
        bin += threads;
    }
    thread::sync_threads();

    let stride = thread::gridDim_x() as usize * threads;
    let mut i = thread::index_1d().get();
    while i < data.len() {
        // SAFETY: all bins were initialised before the barrier.
        unsafe { LOCAL.get_ref(data[i] as usize) }.fetch_add(1, Ordering::Relaxed);
        i += stride;
    }
    thread::sync_threads();

    let global = hist.as_mut_ptr();
    let mut bin = tid;
    while bin < BINS.min(hist.len()) {
        // SAFETY: bin is in bounds; `hist` is only accessed atomically by all
        // threads of the launch, and AtomicU32 has u32's layout.
        let count = unsafe { LOCAL.get_ref(bin) }.load(Ordering::Relaxed);
        if count > 0 {
            unsafe { AtomicU32::from_ptr(global.add(bin)) }.fetch_add(count, Ordering::Relaxed);
        }
        bin += threads;
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 1 << 24;
    let data: Vec<u8> = (0..N).map(|i| ((i * 2654435761usize) >> 13) as u8 ^ (i % 7) as u8).collect();
    let mut cpu = vec![0u32; BINS];
    for &b in &data {
        cpu[b as usize] += 1;
    }

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &data)?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, BINS)?;
    let module = load_kernel_module(&ctx, "histogram")?;
    let config = LaunchConfig { grid_dim: (ctx.multiprocessor_count()? * 4, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: histogram, stream: stream, module: module, config: config,
        args: [slice(input), slice_mut(hist)]
    }?;
    let gpu = hist.to_host_vec(&stream)?;
    if let Some(b) = (0..BINS).find(|&b| gpu[b] != cpu[b]) {
        return Err(format!("bin {b}: GPU {} vs CPU {}", gpu[b], cpu[b]).into());
    }
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: all 256 bins of {n} bytes matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
