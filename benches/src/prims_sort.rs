//! The prims_sort and prims_histogram rows: cuda-prims' radix sort and
//! histograms against CUB's `DeviceRadixSort` and `DeviceHistogram`
//! (`cuda/cub_sort.cu`), same data, same stream. Every result (oxide's and
//! CUB's) is checked against the CPU before anything is timed.
//!
//! CUB's temporary storage is allocated once, before timing, as a CUDA
//! C++ program that sorts repeatedly would; cuda-prims allocates its own on
//! the stream inside each call (from the device's memory pool), and that
//! time is part of its side. The rows keep freed memory in the pool while
//! they run ([`KeepPool`]), as such a program would: with the default
//! release threshold of 0 every synchronisation would hand the pool's
//! memory back and the next call map it again.

use crate::harness::{de, sizes, Gpu, Row, Target};
use cuda_core::{CudaStream, DeviceBuffer, DeviceRepr};
use cuda_prims::histogram::{histogram_even, histogram_on_cpu, histogram_range};
use cuda_prims::sort::{sort_keys, sort_pairs, Order, RadixKey};
use std::ffi::{c_int, c_void};

/// The target for the sort: 0.90 of CUB's speed.
const SORT_TARGET: Target = Target::SpeedAtLeast(0.90);
/// The target for the histogram: CUB's speed.
const HISTOGRAM_TARGET: Target = Target::SpeedAtLeast(1.0);
const WARMUP: usize = 2;
const REPEATS: usize = 10;

extern "C" {
    fn oxide_cub_sort_keys_u32(t: *mut c_void, tb: *mut usize, i: *const u32, o: *mut u32, n: usize, desc: c_int, s: *mut c_void) -> c_int;
    fn oxide_cub_sort_keys_u64(t: *mut c_void, tb: *mut usize, i: *const u64, o: *mut u64, n: usize, desc: c_int, s: *mut c_void) -> c_int;
    fn oxide_cub_sort_keys_f32(t: *mut c_void, tb: *mut usize, i: *const f32, o: *mut f32, n: usize, desc: c_int, s: *mut c_void) -> c_int;
    fn oxide_cub_sort_pairs_u32(
        t: *mut c_void,
        tb: *mut usize,
        ki: *const u32,
        ko: *mut u32,
        vi: *const u32,
        vo: *mut u32,
        n: usize,
        s: *mut c_void,
    ) -> c_int;
    fn oxide_cub_histogram_even_u32(
        t: *mut c_void,
        tb: *mut usize,
        x: *const u32,
        h: *mut u32,
        bins: c_int,
        lower: u32,
        upper: u32,
        n: usize,
        s: *mut c_void,
    ) -> c_int;
    fn oxide_cub_histogram_even_f32(
        t: *mut c_void,
        tb: *mut usize,
        x: *const f32,
        h: *mut u32,
        bins: c_int,
        lower: f32,
        upper: f32,
        n: usize,
        s: *mut c_void,
    ) -> c_int;
    fn oxide_cub_histogram_range_u32(
        t: *mut c_void,
        tb: *mut usize,
        x: *const u32,
        h: *mut u32,
        bins: c_int,
        levels: *const u32,
        n: usize,
        s: *mut c_void,
    ) -> c_int;
}

/// One CUB call made twice, as CUB wants: first for the size of its
/// temporary storage (allocated here, once, and kept by the caller), then
/// the real call through [`Cub::run`].
struct Cub<F: FnMut(*mut c_void, *mut usize) -> c_int> {
    call: F,
    temp: DeviceBuffer<u8>,
    bytes: usize,
}

impl<F: FnMut(*mut c_void, *mut usize) -> c_int> Cub<F> {
    fn new(stream: &CudaStream, mut call: F) -> Result<Self, String> {
        let mut bytes = 0usize;
        check_cub(call(std::ptr::null_mut(), &mut bytes))?;
        let temp = DeviceBuffer::<u8>::zeroed(stream, bytes.max(1)).map_err(de)?;
        Ok(Cub { call, temp, bytes })
    }

    fn run(&mut self) -> Result<(), String> {
        let mut bytes = self.bytes;
        check_cub((self.call)(self.temp.device_ptr() as *mut c_void, &mut bytes))
    }
}

fn check_cub(status: c_int) -> Result<(), String> {
    match status {
        0 => Ok(()),
        e => Err(format!("CUB failed with cudaError_t {e}")),
    }
}

/// `len` deterministic pseudo-random words (xorshift64).
fn random_words(len: usize, seed: u64) -> Vec<u64> {
    crate::harness::random_with(len, seed, |word| word)
}

/// Keeps what the pool holds across synchronisations while it lives, then
/// puts the pool's release threshold back and trims it.
pub(crate) struct KeepPool {
    pool: cuda_core::MemPool,
    threshold: u64,
}

impl KeepPool {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self, String> {
        let pool = gpu.ctx.memory_pool().map_err(de)?;
        let threshold = pool.release_threshold().map_err(de)?;
        pool.set_release_threshold(u64::MAX).map_err(de)?;
        Ok(KeepPool { pool, threshold })
    }
}

impl Drop for KeepPool {
    fn drop(&mut self) {
        // Best effort: a failure here leaves only a larger pool behind.
        let _ = self.pool.set_release_threshold(self.threshold);
        let _ = self.pool.trim_to(0);
    }
}

/// Checks `got` against the CPU's sorted keys, bit for bit.
fn check_sorted<K: RadixKey>(what: &str, got: &[K], want: &[K]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i].order_bits() != want[i].order_bits()) {
        None => Ok(()),
        Some(i) => Err(format!("{what}: key {i} differs from the CPU's sort ({} vs {})", got[i].order_bits(), want[i].order_bits())),
    }
}

fn ms_per_gkeys(n: usize, ms: f64) -> f64 {
    n as f64 / (ms * 1e-3) / 1e9
}

/// One keys-only row: oxide's sort_keys and CUB's SortKeys of the same keys.
fn sort_keys_row<K: RadixKey + DeviceRepr>(
    gpu: &Gpu,
    name: &str,
    keys: &[K],
    cub: impl FnMut(*mut c_void, *mut usize, *const K, *mut K) -> c_int,
) -> Result<Row, String> {
    let s = &gpu.stream;
    let n = keys.len();
    // Compared by order bits: f32 zeros of both signs are equal keys (the
    // example checks their bits and order; here the CPU need not be stable).
    let mut want = keys.to_vec();
    want.sort_unstable_by_key(|k| k.order_bits());
    let input = DeviceBuffer::from_host(s, keys).map_err(de)?;
    let mut out_ox = DeviceBuffer::<K>::zeroed(s, n).map_err(de)?;
    let out_cub = DeviceBuffer::<K>::zeroed(s, n).map_err(de)?;
    let (in_ptr, out_ptr) = (input.device_ptr() as *const K, out_cub.device_ptr() as *mut K);
    let mut cub = cub;
    let mut reference = Cub::new(s, |t, b| cub(t, b, in_ptr, out_ptr))?;
    sort_keys(&gpu.oxide, s, &input, &mut out_ox, Order::Ascending).map_err(|e| e.to_string())?;
    reference.run()?;
    check_sorted(&format!("{name} (oxide)"), &out_ox.to_host_vec(s).map_err(de)?, &want)?;
    check_sorted(&format!("{name} (CUB)"), &out_cub.to_host_vec(s).map_err(de)?, &want)?;
    let (t_ox, t_cub) = gpu.time_pair(
        WARMUP,
        REPEATS,
        || sort_keys(&gpu.oxide, s, &input, &mut out_ox, Order::Ascending).map_err(|e| e.to_string()),
        || reference.run(),
    )?;
    Ok(Row {
        name: name.into(),
        oxide: t_ox,
        unit: "ms",
        reference: "CUB".into(),
        reference_time: t_cub,
        target: SORT_TARGET,
        note: format!("{:.1} Gkeys/s vs {:.1}", ms_per_gkeys(n, t_ox), ms_per_gkeys(n, t_cub)),
    })
}

/// Checks sorted pairs whose values are the input indices: keys as the
/// CPU's, each value the index of its key, a permutation, stable.
fn check_pairs(what: &str, keys_in: &[u32], want: &[u32], keys: &[u32], values: &[u32]) -> Result<(), String> {
    check_sorted(what, keys, want)?;
    let mut seen = vec![false; keys.len()];
    for i in 0..keys.len() {
        let v = values[i] as usize;
        if v >= keys.len() || seen[v] || keys_in[v] != keys[i] {
            return Err(format!("{what}: value {i} ({v}) is not the index of key {}", keys[i]));
        }
        seen[v] = true;
        if i > 0 && keys[i] == keys[i - 1] && values[i] < values[i - 1] {
            return Err(format!("{what}: pairs {} and {i} of equal keys are out of input order", i - 1));
        }
    }
    Ok(())
}

fn sort_pairs_row(gpu: &Gpu, n: usize) -> Result<Row, String> {
    let s = &gpu.stream;
    let name = format!("prims_sort pairs 2^{}", n.trailing_zeros());
    let keys: Vec<u32> = random_words(n, 31).into_iter().map(|w| (w >> 32) as u32).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let mut want = keys.clone();
    want.sort_unstable();
    let k_in = DeviceBuffer::from_host(s, &keys).map_err(de)?;
    let v_in = DeviceBuffer::from_host(s, &values).map_err(de)?;
    let mut k_ox = DeviceBuffer::<u32>::zeroed(s, n).map_err(de)?;
    let mut v_ox = DeviceBuffer::<u32>::zeroed(s, n).map_err(de)?;
    let k_cub = DeviceBuffer::<u32>::zeroed(s, n).map_err(de)?;
    let v_cub = DeviceBuffer::<u32>::zeroed(s, n).map_err(de)?;
    let ptrs = (
        k_in.device_ptr() as *const u32,
        k_cub.device_ptr() as *mut u32,
        v_in.device_ptr() as *const u32,
        v_cub.device_ptr() as *mut u32,
    );
    let raw = s.raw();
    // SAFETY: the four buffers hold n u32s each and outlive `reference`;
    // the stream is live.
    let mut reference = Cub::new(s, |t, b| unsafe { oxide_cub_sort_pairs_u32(t, b, ptrs.0, ptrs.1, ptrs.2, ptrs.3, n, raw) })?;
    let oxide = |k_ox: &mut DeviceBuffer<u32>, v_ox: &mut DeviceBuffer<u32>| {
        sort_pairs(&gpu.oxide, s, &k_in, &v_in, k_ox, v_ox, Order::Ascending).map_err(|e| e.to_string())
    };
    oxide(&mut k_ox, &mut v_ox)?;
    reference.run()?;
    let (ko, vo) = (k_ox.to_host_vec(s).map_err(de)?, v_ox.to_host_vec(s).map_err(de)?);
    check_pairs(&format!("{name} (oxide)"), &keys, &want, &ko, &vo)?;
    let (kc, vc) = (k_cub.to_host_vec(s).map_err(de)?, v_cub.to_host_vec(s).map_err(de)?);
    check_pairs(&format!("{name} (CUB)"), &keys, &want, &kc, &vc)?;
    let (t_ox, t_cub) = gpu.time_pair(WARMUP, REPEATS, || oxide(&mut k_ox, &mut v_ox), || reference.run())?;
    Ok(Row {
        name,
        oxide: t_ox,
        unit: "ms",
        reference: "CUB".into(),
        reference_time: t_cub,
        target: SORT_TARGET,
        note: format!("{:.1} Gpairs/s vs {:.1}", ms_per_gkeys(n, t_ox), ms_per_gkeys(n, t_cub)),
    })
}

/// Radix sort: u32 keys 2^20…2^28, u64 and f32 keys and u32 pairs at 2^24
/// and 2^28, ascending.
pub fn prims_sort(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let _keep = KeepPool::new(gpu)?;
    let raw = gpu.stream.raw();
    let mut rows = Vec::new();
    for log in sizes(&[20, 22, 24, 26, 28])? {
        let n = 1usize << log;
        let keys: Vec<u32> = random_words(n, log as u64).into_iter().map(|w| (w >> 32) as u32).collect();
        // SAFETY (every CUB call below): the pointers are the row's device
        // buffers of n keys, alive for the row; the stream is live.
        rows.push(sort_keys_row(gpu, &format!("prims_sort u32 2^{log}"), &keys, |t, b, i, o| unsafe {
            oxide_cub_sort_keys_u32(t, b, i, o, n, 0, raw)
        })?);
    }
    for log in sizes(&[24, 28])? {
        let n = 1usize << log;
        let keys = random_words(n, 100 + log as u64);
        rows.push(sort_keys_row(gpu, &format!("prims_sort u64 2^{log}"), &keys, |t, b, i, o| unsafe {
            oxide_cub_sort_keys_u64(t, b, i, o, n, 0, raw)
        })?);
        drop(keys);
        let keys: Vec<f32> =
            random_words(n, 200 + log as u64).into_iter().map(|w| ((w >> 32) as i32 as f32) * 1e-3).collect();
        rows.push(sort_keys_row(gpu, &format!("prims_sort f32 2^{log}"), &keys, |t, b, i, o| unsafe {
            oxide_cub_sort_keys_f32(t, b, i, o, n, 0, raw)
        })?);
        rows.push(sort_pairs_row(gpu, n)?);
    }
    Ok(rows)
}

/// One histogram row: oxide's call and CUB's on the same samples, both
/// checked against `want`.
fn histogram_row(
    gpu: &Gpu,
    name: String,
    n: usize,
    want: &[u32],
    mut oxide: impl FnMut(&mut DeviceBuffer<u32>) -> Result<(), String>,
    cub: impl FnMut(*mut c_void, *mut usize, *mut u32) -> c_int,
) -> Result<Row, String> {
    let s = &gpu.stream;
    let mut hist_ox = DeviceBuffer::<u32>::zeroed(s, want.len()).map_err(de)?;
    let hist_cub = DeviceBuffer::<u32>::zeroed(s, want.len()).map_err(de)?;
    let out = hist_cub.device_ptr() as *mut u32;
    let mut cub = cub;
    let mut reference = Cub::new(s, |t, b| cub(t, b, out))?;
    oxide(&mut hist_ox)?;
    reference.run()?;
    for (who, hist) in [("oxide", &hist_ox), ("CUB", &hist_cub)] {
        let got = hist.to_host_vec(s).map_err(de)?;
        if let Some(b) = (0..want.len()).find(|&b| got[b] != want[b]) {
            return Err(format!("{name} ({who}): bin {b} is {} but the CPU counts {}", got[b], want[b]));
        }
    }
    let (t_ox, t_cub) = gpu.time_pair(WARMUP, REPEATS, || oxide(&mut hist_ox), || reference.run())?;
    Ok(Row {
        name,
        oxide: t_ox,
        unit: "ms",
        reference: "CUB".into(),
        reference_time: t_cub,
        target: HISTOGRAM_TARGET,
        note: format!("{:.0} GB/s vs {:.0}", 4.0 * n as f64 / (t_ox * 1e6), 4.0 * n as f64 / (t_cub * 1e6)),
    })
}

/// Histograms of 256 bins: even bins of u32 samples 2^20…2^28, of f32
/// samples and range bins of u32 samples at 2^28.
pub fn prims_histogram(gpu: &Gpu) -> Result<Vec<Row>, String> {
    const BINS: usize = 256;
    let _keep = KeepPool::new(gpu)?;
    let s = &gpu.stream;
    let raw = s.raw();
    let mut rows = Vec::new();
    for log in sizes(&[20, 24, 28])? {
        let n = 1usize << log;
        // Samples over a range a little wider than the bins' (some fall out).
        let samples: Vec<u32> = random_words(n, 300 + log as u64).into_iter().map(|w| (w >> 52) as u32).collect();
        let (lower, upper) = (100u32, 4000u32);
        let want = histogram_on_cpu(&samples, &[], BINS, lower, upper);
        let input = DeviceBuffer::from_host(s, &samples).map_err(de)?;
        let x = input.device_ptr() as *const u32;
        rows.push(histogram_row(
            gpu,
            format!("prims_histogram u32 2^{log}"),
            n,
            &want,
            |h| histogram_even(&gpu.oxide, s, &input, h, lower, upper).map_err(|e| e.to_string()),
            // SAFETY: n samples and BINS counters in live device buffers.
            |t, b, h| unsafe { oxide_cub_histogram_even_u32(t, b, x, h, BINS as c_int, lower, upper, n, raw) },
        )?);
        if log != 28 {
            continue;
        }
        let levels: Vec<u32> = (0..=BINS as u32).map(|i| 50 + i * i / 16 + i * 3).collect();
        let want = histogram_on_cpu(&samples, &levels, 0, 0, 0);
        let d_levels = DeviceBuffer::from_host(s, &levels).map_err(de)?;
        let l = d_levels.device_ptr() as *const u32;
        rows.push(histogram_row(
            gpu,
            format!("prims_histogram range 2^{log}"),
            n,
            &want,
            |h| histogram_range(&gpu.oxide, s, &input, &d_levels, h).map_err(|e| e.to_string()),
            // SAFETY: as above, and BINS + 1 levels.
            |t, b, h| unsafe { oxide_cub_histogram_range_u32(t, b, x, h, BINS as c_int, l, n, raw) },
        )?);
        drop(input);
        let samples: Vec<f32> = random_words(n, 400).into_iter().map(|w| (w >> 40) as f32 / (1u64 << 24) as f32).collect();
        let (lower, upper) = (0.0f32, 1.0f32);
        let want = histogram_on_cpu(&samples, &[], BINS, lower, upper);
        let input = DeviceBuffer::from_host(s, &samples).map_err(de)?;
        let x = input.device_ptr() as *const f32;
        rows.push(histogram_row(
            gpu,
            format!("prims_histogram f32 2^{log}"),
            n,
            &want,
            |h| histogram_even(&gpu.oxide, s, &input, h, lower, upper).map_err(|e| e.to_string()),
            // SAFETY: as above.
            |t, b, h| unsafe { oxide_cub_histogram_even_f32(t, b, x, h, BINS as c_int, lower, upper, n, raw) },
        )?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_checks_catch_instability_and_wrong_values() {
        let keys_in = [3u32, 1, 3, 2];
        let want = [1, 2, 3, 3];
        assert!(check_pairs("ok", &keys_in, &want, &want, &[1, 3, 0, 2]).is_ok());
        assert!(check_pairs("unstable", &keys_in, &want, &want, &[1, 3, 2, 0]).is_err());
        assert!(check_pairs("wrong", &keys_in, &want, &want, &[1, 3, 0, 0]).is_err());
        assert!(check_sorted("keys", &[1u32, 3, 2], &[1u32, 2, 3]).is_err());
    }

    #[test]
    fn histogram_samples_spread_over_the_bins() {
        let samples: Vec<u32> = random_words(1 << 16, 1).into_iter().map(|w| (w >> 52) as u32).collect();
        let hist = histogram_on_cpu(&samples, &[], 256, 100, 4000);
        assert!(hist.iter().all(|&c| c > 100), "{hist:?}");
    }
}
