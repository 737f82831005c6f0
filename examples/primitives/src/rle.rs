//! Run-length encoding (u32, f32, u64) against the CPU: exact.

use crate::sort::Rng;
use crate::Sizes;
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};
use cuda_host::KernelModule;
use cuda_prims::rle::{run_length_encode, run_length_encode_on_cpu};
use std::sync::Arc;

fn check<T: PartialEq + DeviceRepr + std::fmt::Debug>(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    input: &[T],
    same: impl Fn(T, T) -> bool,
) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let n = input.len();
    let what = format!("{} n={n}", std::any::type_name::<T>());
    let e = |x: &dyn std::fmt::Display| format!("{what}: {x}");
    let d_in = DeviceBuffer::from_host(&stream, input).map_err(|x| e(&x))?;
    let mut unique = DeviceBuffer::<T>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut counts = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut runs = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|x| e(&x))?;
    run_length_encode(module, &stream, &d_in, &mut unique, &mut counts, &mut runs).map_err(|x| e(&x))?;
    let (cu, cc) = run_length_encode_on_cpu(input);
    let r = runs.to_host_vec(&stream).map_err(|x| e(&x))?[0] as usize;
    if r != cu.len() {
        return Err(e(&format!("{r} runs, the CPU finds {}", cu.len())));
    }
    let (gu, gc) = (unique.to_host_vec(&stream).map_err(|x| e(&x))?, counts.to_host_vec(&stream).map_err(|x| e(&x))?);
    match (0..r).find(|&i| !same(gu[i], cu[i]) || gc[i] != cc[i]) {
        Some(i) => Err(e(&format!("run {i}: GPU ({:?}, {}) CPU ({:?}, {})", gu[i], gc[i], cu[i], cc[i]))),
        None => Ok(1),
    }
}

pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let mut rng = Rng::new(0x41E);
    let lens: &[usize] = if sizes.emulated { &[0, 1, 2, 2047, 2049, 6000] } else { &[0, 1, 2, 2049, 1 << 20, (1 << 24) + 5] };
    let mut checks = misuse(ctx, module)?;
    for &n in lens {
        // Runs of random lengths (1 to 40), some of one value.
        let mut u = Vec::with_capacity(n);
        while u.len() < n {
            let v = (rng.next() % 4) as u32;
            let len = 1 + (rng.next() % 40) as usize;
            u.extend(std::iter::repeat(v).take(len.min(n - u.len())));
        }
        checks += check(ctx, module, &u, |a, b| a == b)?;
        checks += check(ctx, module, &vec![9u32; n], |a, b| a == b)?;
        let distinct: Vec<u64> = (0..n as u64).collect();
        checks += check(ctx, module, &distinct, |a, b| a == b)?;
        let f: Vec<f32> = u.iter().map(|&x| match x { 0 => 0.0, 1 => -0.0, 2 => f32::NAN, _ => 1.5 }).collect();
        checks += check(ctx, module, &f, |a: f32, b: f32| a.to_bits() == b.to_bits())?;
    }
    Ok(checks)
}

/// Misuse is refused before anything runs, with an error that says so.
fn misuse(ctx: &Arc<CudaContext>, module: &KernelModule) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &[1u32, 1, 3]).map_err(|e| e.to_string())?;
    let mut unique = DeviceBuffer::<u32>::zeroed(&stream, 3).map_err(|e| e.to_string())?;
    let mut counts = DeviceBuffer::<u32>::zeroed(&stream, 2).map_err(|e| e.to_string())?;
    let mut runs = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|e| e.to_string())?;
    match run_length_encode(module, &stream, &input, &mut unique, &mut counts, &mut runs) {
        Err(e) if e.to_string().contains("counts has 2 elements but must have 3") => Ok(1),
        other => Err(format!("run_length_encode into short counts: {other:?}")),
    }
}
