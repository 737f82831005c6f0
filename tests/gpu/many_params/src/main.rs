//! GPU test: kernels with more than 12 parameters (the launchers' old
//! limit), launched with `cuda_launch!` and with a `#[cuda_module]`
//! launcher: 32 parameters (the most a launch passes) of mixed sizes and
//! alignments, slices among them, and a kernel whose parameters fill the 4 KiB
//! parameter space to the byte. Every thread combines the parameters with its
//! index; the host compares with the same Rust on the CPU. Exits non-zero on
//! a difference.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_launch, cuda_module, load_kernel_module};
use std::process::ExitCode;

const N: usize = 256;

#[cuda_module]
pub mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    /// What thread `i` of `wide` computes (shared with the CPU).
    #[allow(clippy::too_many_arguments)]
    pub fn combine(
        i: usize,
        scalars: [u32; 24],
        wide: u64,
        narrow: u8,
        signed: i16,
        half: f32,
        pair: (u32, u64),
        triple: [u16; 3],
        weights: &[u32],
        offsets: &[u64],
    ) -> u64 {
        let mut acc = wide.wrapping_mul(i as u64 + 1);
        for (k, &s) in scalars.iter().enumerate() {
            acc = acc.wrapping_mul(31).wrapping_add(s as u64 ^ (i as u64 + k as u64));
        }
        acc = acc.wrapping_add(narrow as u64).wrapping_add(signed as i64 as u64);
        acc = acc.wrapping_add((half * i as f32) as u64);
        acc = acc.wrapping_add(pair.0 as u64 * pair.1);
        acc = acc.wrapping_add(triple.iter().map(|&t| t as u64).sum::<u64>());
        acc.wrapping_add(weights[i % weights.len()] as u64).wrapping_add(offsets[i % offsets.len()])
    }

    /// 32 parameters: 24 scalars, seven of other shapes, the output.
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn wide(
        s0: u32, s1: u32, s2: u32, s3: u32, s4: u32, s5: u32, s6: u32, s7: u32,
        s8: u32, s9: u32, s10: u32, s11: u32, s12: u32, s13: u32, s14: u32, s15: u32,
        s16: u32, s17: u32, s18: u32, s19: u32, s20: u32, s21: u32, s22: u32, s23: u32,
        wide: u64, narrow: u8, signed: i16, half: f32, pair: (u32, u64), triple: [u16; 3],
        weights: &[u32], mut out: DisjointSlice<u64>,
    ) {
        let scalars = [
            s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18,
            s19, s20, s21, s22, s23,
        ];
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = combine(i, scalars, wide, narrow, signed, half, pair, triple, weights, &[7, 11]);
        }
    }

    /// Parameters that fill the parameter space exactly: 4 + 4 (padding) +
    /// 4056 + 16 (the output) + 16 (a slice) = 4096 bytes.
    #[kernel]
    pub fn full_space(first: u32, table: [u64; 507], weights: &[u32], mut out: DisjointSlice<u64>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = table[i % table.len()] * first as u64 + weights[i % weights.len()] as u64;
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "many_params")?;
    let config = LaunchConfig::for_num_elems(N as u32);
    let scalars: [u32; 24] = std::array::from_fn(|k| (k as u32 + 3).wrapping_mul(2654435761));
    let weights: Vec<u32> = (0..37).map(|w| w * w + 1).collect();
    let weights_dev = DeviceBuffer::from_host(&stream, &weights)?;
    let (wide, narrow, signed, half, pair, triple) = (0x1234_5678_9abc_u64, 200u8, -3i16, 1.5f32, (9u32, 1u64 << 40), [1u16, 2, 65535]);
    let want: Vec<u64> = (0..N)
        .map(|i| kernels::combine(i, scalars, wide, narrow, signed, half, pair, triple, &weights, &[7, 11]))
        .collect();
    let mut ok = true;

    let mut out = DeviceBuffer::<u64>::zeroed(&stream, N)?;
    let s = scalars;
    cuda_launch! {
        kernel: kernels::wide, stream: stream, module: module, config: config,
        args: [s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11],
               s[12], s[13], s[14], s[15], s[16], s[17], s[18], s[19], s[20], s[21], s[22], s[23],
               wide, narrow, signed, half, pair, triple, slice(weights_dev), slice_mut(out)]
    }?;
    let got = out.to_host_vec(&stream)?;
    ok &= report("cuda_launch! with 32 arguments", &got, &want);

    let mut out = DeviceBuffer::<u64>::zeroed(&stream, N)?;
    kernels::launch::wide(
        &module, &stream, config, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11],
        s[12], s[13], s[14], s[15], s[16], s[17], s[18], s[19], s[20], s[21], s[22], s[23], wide, narrow,
        signed, half, pair, triple, &weights_dev, &mut out,
    )?;
    let got = out.to_host_vec(&stream)?;
    ok &= report("#[cuda_module] launcher with 32 parameters", &got, &want);

    let table: [u64; 507] = std::array::from_fn(|k| (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20);
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, N)?;
    cuda_launch! {
        kernel: kernels::full_space, stream: stream, module: module, config: config,
        args: [3u32, table, slice(weights_dev), slice_mut(out)]
    }?;
    let want_full: Vec<u64> = (0..N).map(|i| table[i % 507] * 3 + weights[i % weights.len()] as u64).collect();
    let got = out.to_host_vec(&stream)?;
    ok &= report("4096 bytes of parameters", &got, &want_full);

    if ok {
        println!("✓ SUCCESS: kernels with many parameters matched the CPU");
    }
    Ok(ok)
}

fn report(what: &str, got: &[u64], want: &[u64]) -> bool {
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
