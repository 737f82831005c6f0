//! Segmented reduce (sum, min, max; u32, i32, f32, u64) against the CPU:
//! integers exact, float sums within the reordering bound.

use crate::sort::Rng;
use crate::Sizes;
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};
use cuda_host::KernelModule;
use cuda_prims::op::{Element, Max, Min, ReduceOp, Sum};
use cuda_prims::segmented::{segmented_reduce, segmented_reduce_on_cpu};
use std::sync::Arc;

/// Segment lengths: empty, single, around a warp and long ones.
fn offsets(segments: usize, long: usize, rng: &mut Rng) -> Vec<u32> {
    let mut offsets = vec![0u32];
    for s in 0..segments {
        let len = match s % 6 {
            0 => 0,
            1 => 1,
            2 => 31 + (rng.next() % 3) as usize,
            3 => (rng.next() % 200) as usize,
            4 => long + (rng.next() % 7) as usize,
            _ => (rng.next() % 2000) as usize,
        };
        offsets.push(offsets.last().copied().unwrap_or(0) + len as u32);
    }
    offsets
}

fn check<T: Element + DeviceRepr + std::fmt::Debug, O: ReduceOp<T> + Default>(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    input: &[T],
    offs: &[u32],
    close: impl Fn(T, T, usize) -> bool,
) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let what = format!("{} {} segments={}", std::any::type_name::<T>(), std::any::type_name::<O>(), offs.len() - 1);
    let e = |x: &dyn std::fmt::Display| format!("{what}: {x}");
    let d_in = DeviceBuffer::from_host(&stream, input).map_err(|x| e(&x))?;
    let d_offs = DeviceBuffer::from_host(&stream, offs).map_err(|x| e(&x))?;
    let mut out = DeviceBuffer::<T>::zeroed(&stream, offs.len() - 1).map_err(|x| e(&x))?;
    segmented_reduce(module, &stream, &d_in, &d_offs, &mut out, O::default()).map_err(|x| e(&x))?;
    let gpu = out.to_host_vec(&stream).map_err(|x| e(&x))?;
    let cpu = segmented_reduce_on_cpu(input, offs, O::default());
    for s in 0..cpu.len() {
        if !close(gpu[s], cpu[s], (offs[s + 1] - offs[s]) as usize) {
            return Err(e(&format!("segment {s}: GPU {:?} CPU {:?}", gpu[s], cpu[s])));
        }
    }
    Ok(1)
}

pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let mut rng = Rng::new(0x5E6_0E47);
    let cases: &[(usize, usize)] = if sizes.emulated { &[(0, 0), (1, 5), (13, 300)] } else { &[(0, 0), (1, 5), (1000, 5000), (20000, 2000)] };
    let mut checks = misuse(ctx, module)?;
    for &(segments, long) in cases {
        let offs = offsets(segments, long, &mut rng);
        let n = *offs.last().unwrap_or(&0) as usize + 3;
        let u: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
        let exact = |a: u32, b: u32, _| a == b;
        checks += check::<u32, Sum>(ctx, module, &u, &offs, exact)?;
        checks += check::<u32, Min>(ctx, module, &u, &offs, exact)?;
        checks += check::<u32, Max>(ctx, module, &u, &offs, exact)?;
        let i: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
        checks += check::<i32, Min>(ctx, module, &i, &offs, |a, b, _| a == b)?;
        checks += check::<i32, Sum>(ctx, module, &i, &offs, |a, b, _| a == b)?;
        let w: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        checks += check::<u64, Max>(ctx, module, &w, &offs, |a, b, _| a == b)?;
        let f: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect();
        // |Σ - Σ'| ≤ len · ε · Σ|x| ≤ len² · ε for |x| < 1.
        checks += check::<f32, Sum>(ctx, module, &f, &offs, |a, b, len| ((a - b).abs() as f64) <= (len * len) as f64 * f32::EPSILON as f64 + 1e-6)?;
        checks += check::<f32, Min>(ctx, module, &f, &offs, |a, b, _| a.to_bits() == b.to_bits())?;
        checks += check::<f32, Max>(ctx, module, &f, &offs, |a, b, _| a.to_bits() == b.to_bits())?;
    }
    Ok(checks)
}

/// Misuse is refused before anything runs, with an error that says so.
fn misuse(ctx: &Arc<CudaContext>, module: &KernelModule) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).map_err(|e| e.to_string())?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 2).map_err(|e| e.to_string())?;
    let descending = DeviceBuffer::from_host(&stream, &[0u32, 2, 1]).map_err(|e| e.to_string())?;
    match segmented_reduce(module, &stream, &input, &descending, &mut out, Sum) {
        Err(e) if e.to_string().contains("must ascend") => {}
        other => return Err(format!("descending offsets: {other:?}")),
    }
    let past_end = DeviceBuffer::from_host(&stream, &[0u32, 2, 4]).map_err(|e| e.to_string())?;
    match segmented_reduce(module, &stream, &input, &past_end, &mut out, Sum) {
        Err(e) if e.to_string().contains("input has 3 elements") => {}
        other => return Err(format!("offsets past the input: {other:?}")),
    }
    let mut short = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|e| e.to_string())?;
    match segmented_reduce(module, &stream, &input, &descending, &mut short, Sum) {
        Err(e) if e.to_string().contains("has 1 elements but must have 2") => {}
        other => return Err(format!("output shorter than the segments: {other:?}")),
    }
    Ok(3)
}
