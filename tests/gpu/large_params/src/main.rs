//! GPU test: kernel parameters past the 4 KiB of older PTX ISAs, in the
//! 32764-byte parameter space of sm_90 (PTX ISA 8.1): a `[u32; 2000]` passed
//! by value (8000 bytes) with `cuda_launch!` and with a `#[cuda_module]`
//! launcher, and a kernel whose parameters fill the space to the byte. Every
//! thread reads the table at an index of its own; the host compares with the
//! same Rust on the CPU. Exits non-zero on a difference.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_launch, cuda_module, load_kernel_module};
use std::process::ExitCode;

const N: usize = 1024;
/// Table entries that fill the space: 16 bytes of output slice, then
/// 8187 × 4 bytes = 32764.
const FULL: usize = 8187;

#[cuda_module]
pub mod kernels {
    use super::FULL;
    use cuda_device::{kernel, thread, DisjointSlice};

    /// What thread `i` of `lookup` computes (shared with the CPU).
    pub fn mix(i: usize, table: &[u32], scale: u32) -> u32 {
        let a = table[(i * 7) % table.len()];
        let b = table[table.len() - 1 - i % table.len()];
        a.wrapping_mul(scale) ^ b.rotate_left(i as u32 % 32)
    }

    /// 8000 bytes of table by value, a scalar and the output: 8024 bytes.
    #[kernel]
    pub fn lookup(table: [u32; 2000], scale: u32, mut out: DisjointSlice<u32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = mix(i, &table, scale);
        }
    }

    /// The output slice (16 bytes) and 32748 bytes of table: 32764 bytes.
    #[kernel]
    pub fn full_space(mut out: DisjointSlice<u32>, table: [u32; FULL]) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = mix(i, &table, 3);
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "large_params")?;
    let config = LaunchConfig::for_num_elems(N as u32);
    let table: [u32; 2000] = std::array::from_fn(|k| (k as u32).wrapping_mul(2654435761) ^ 0x5bd1_e995);
    let scale = 0x9e37_79b9u32;
    let want: Vec<u32> = (0..N).map(|i| kernels::mix(i, &table, scale)).collect();
    let mut ok = true;

    let mut out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: kernels::lookup, stream: stream, module: module, config: config,
        args: [table, scale, slice_mut(out)]
    }?;
    ok &= report("cuda_launch! with a [u32; 2000] by value (8024 bytes)", &out.to_host_vec(&stream)?, &want);

    let mut out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    kernels::launch::lookup(&module, &stream, config, table, scale, &mut out)?;
    ok &= report("#[cuda_module] launcher with 8024 bytes", &out.to_host_vec(&stream)?, &want);

    let full: Box<[u32; FULL]> = Box::new(std::array::from_fn(|k| (k as u32 + 1).wrapping_mul(0x85eb_ca6b)));
    let want_full: Vec<u32> = (0..N).map(|i| kernels::mix(i, &full[..], 3)).collect();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let full = *full;
    cuda_launch! {
        kernel: kernels::full_space, stream: stream, module: module, config: config,
        args: [slice_mut(out), full]
    }?;
    ok &= report("32764 bytes of parameters", &out.to_host_vec(&stream)?, &want_full);

    if ok {
        println!("✓ SUCCESS: kernels with large parameters matched the CPU");
    }
    Ok(ok)
}

fn report(what: &str, got: &[u32], want: &[u32]) -> bool {
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        None => {
            println!("ok    {what}");
            true
        }
        Some(i) => {
            println!("FAIL  {what}: thread {i}: GPU {:#x} CPU {:#x}", got[i], want[i]);
            false
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
