//! Histograms (even and range bins; u32, i32, f32 samples) against the
//! CPU's count by the same rules: exact.

use crate::sort::Rng;
use crate::Sizes;
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};
use cuda_host::KernelModule;
use cuda_prims::histogram::{histogram_even, histogram_on_cpu, histogram_range, Sample, SHARED_BINS};
use std::sync::Arc;

fn compare(what: &str, gpu: &[u32], cpu: &[u32]) -> Result<usize, String> {
    match (0..cpu.len()).find(|&b| gpu[b] != cpu[b]) {
        Some(b) => Err(format!("{what}: bin {b}: GPU {} CPU {}", gpu[b], cpu[b])),
        None => Ok(1),
    }
}

/// Even bins over `lower..upper` and range bins between `levels`.
fn check<T: Sample + DeviceRepr + std::fmt::Debug>(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    samples: &[T],
    bins: usize,
    lower: T,
    upper: T,
    levels: &[T],
) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let what = format!("{} n={} bins={bins} [{lower:?}, {upper:?})", std::any::type_name::<T>(), samples.len());
    let e = |x: &dyn std::fmt::Display| format!("{what}: {x}");
    let d_samples = DeviceBuffer::from_host(&stream, samples).map_err(|x| e(&x))?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, bins).map_err(|x| e(&x))?;
    // Stale counts must be overwritten.
    hist.fill(&stream, 7).map_err(|x| e(&x))?;
    histogram_even(module, &stream, &d_samples, &mut hist, lower, upper).map_err(|x| e(&x))?;
    let gpu = hist.to_host_vec(&stream).map_err(|x| e(&x))?;
    let mut checks = compare(&format!("{what} even"), &gpu, &histogram_on_cpu(samples, &[], bins, lower, upper))?;

    let d_levels = DeviceBuffer::from_host(&stream, levels).map_err(|x| e(&x))?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, levels.len() - 1).map_err(|x| e(&x))?;
    histogram_range(module, &stream, &d_samples, &d_levels, &mut hist).map_err(|x| e(&x))?;
    let gpu = hist.to_host_vec(&stream).map_err(|x| e(&x))?;
    checks += compare(&format!("{what} range"), &gpu, &histogram_on_cpu(samples, levels, 0, lower, upper))?;
    Ok(checks)
}

/// Every sample type at the sizes of this run, with few and many bins.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let mut rng = Rng::new(0x4157_0641);
    let lens: &[usize] = if sizes.emulated { &[0, 1, 2047, 2049, 5000] } else { &[0, 1, 2049, 1 << 20, (1 << 24) + 3] };
    let mut checks = misuse(ctx, module)?;
    for &n in lens {
        // The CPU's count in a debug build is what takes the time at 2^24.
        let all_bins = [1, 7, 256, SHARED_BINS + 3];
        let bins_list: &[usize] = if n > 1 << 20 { &all_bins[2..3] } else { &all_bins };
        for &bins in bins_list {
            let u: Vec<u32> = (0..n).map(|_| (rng.next() % 5000) as u32).collect();
            let levels: Vec<u32> = (0..=bins as u32).map(|i| 100 + i * 4000 / bins as u32 + i).collect();
            checks += check(ctx, module, &u, bins, 100, 4900, &levels)?;
            // The whole u32 range: past 32 bits for the product of most
            // samples with the bin count; and a power-of-two range.
            let wide: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
            checks += check(ctx, module, &wide, bins, 7, u32::MAX - 3, &levels)?;
            checks += check(ctx, module, &u, bins, 0, 4096, &levels)?;

            let i: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            let levels: Vec<i32> = (0..=bins as i64).map(|k| (i32::MIN as i64 / 2 + k * (1 << 31) / bins as i64) as i32).collect();
            checks += check(ctx, module, &i, bins, i32::MIN, i32::MAX, &levels)?;

            let f: Vec<f32> = (0..n)
                .map(|_| match rng.next() % 50 {
                    0 => f32::NAN,
                    1 => 1.0,
                    2 => -0.0,
                    w => (w as f32 / 25.0 - 0.8) * 1.3,
                })
                .collect();
            let levels: Vec<f32> = (0..=bins).map(|k| -0.5 + k as f32 / bins as f32).collect();
            checks += check(ctx, module, &f, bins, -0.25, 1.0, &levels)?;
        }
    }
    Ok(checks)
}

/// Misuse is refused before anything runs, with an error that says so.
fn misuse(ctx: &Arc<CudaContext>, module: &KernelModule) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let samples = DeviceBuffer::from_host(&stream, &[1u32, 2]).map_err(|e| e.to_string())?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, 4).map_err(|e| e.to_string())?;
    match histogram_even(module, &stream, &samples, &mut hist, 5, 5) {
        Err(e) if e.to_string().contains("lower < upper") => {}
        other => return Err(format!("histogram_even over an empty range: {other:?}")),
    }
    let unsorted = DeviceBuffer::from_host(&stream, &[0u32, 5, 3, 9, 10]).map_err(|e| e.to_string())?;
    match histogram_range(module, &stream, &samples, &unsorted, &mut hist) {
        Err(e) if e.to_string().contains("ascending") => {}
        other => return Err(format!("histogram_range with unsorted levels: {other:?}")),
    }
    let few = DeviceBuffer::from_host(&stream, &[0u32, 5]).map_err(|e| e.to_string())?;
    match histogram_range(module, &stream, &samples, &few, &mut hist) {
        Err(e) if e.to_string().contains("levels has 2 elements but must have 5") => {}
        other => return Err(format!("histogram_range with too few levels: {other:?}")),
    }
    Ok(3)
}
