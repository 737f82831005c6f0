//! GPU test: `setmaxnreg` (sm_90a; built with `--arch sm_90a`). A block of
//! three warp groups specialises them like a producer/consumer kernel: group 0
//! gives registers back (`decrease_max_registers`), groups 1 and 2 take more
//! (`increase_max_registers`); then every thread computes a value with many
//! live registers, checked against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, warpgroup, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 384;
const BLOCKS: usize = 8;
const TERMS: usize = 16;

/// A value with `TERMS` independent accumulators (registers).
#[inline(always)]
fn mix(seed: u32) -> u32 {
    let mut acc = [0u32; TERMS];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = seed.wrapping_mul(2 * k as u32 + 1) ^ (k as u32).rotate_left(k as u32);
    }
    for round in 0..8u32 {
        for k in 0..TERMS {
            acc[k] = acc[k].rotate_left(5).wrapping_add(acc[(k + 1) % TERMS] ^ round);
        }
    }
    acc.iter().fold(0, |s, &a| s ^ a)
}

#[kernel(launch_bounds(384, 1))]
pub fn specialised(seeds: &[u32], mut out: DisjointSlice<u32>) {
    let group = warpgroup::index();
    if group == 0 {
        warpgroup::decrease_max_registers::<40>();
    } else {
        warpgroup::increase_max_registers::<232>();
    }
    let i = thread::index_1d();
    let v = mix(seeds[i.get()]) ^ group;
    if let Some(o) = out.get_mut(i) {
        *o = v;
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "setmaxnreg")?;
    let n = BLOCK * BLOCKS;
    let seeds: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    let dseeds = DeviceBuffer::from_host(&stream, &seeds)?;
    let mut dout = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: specialised, stream: stream, module: module, config: config,
        args: [slice(dseeds), slice_mut(dout)]
    }?;
    let gpu = dout.to_host_vec(&stream)?;
    for i in 0..n {
        let want = mix(seeds[i]) ^ ((i % BLOCK) / 128) as u32;
        if gpu[i] != want {
            return Err(format!("thread {i}: GPU {:#x} CPU {want:#x}", gpu[i]).into());
        }
    }
    Ok(n)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: setmaxnreg: {n} threads of 3 specialised warp groups matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
