//! The cuda-prims rows: the Rust device-wide primitives against CUB's
//! (`cuda/cub.cu`), same data, same stream, sizes 2^20 … 2^28, u32, f32 and
//! u64. Each size is checked against the CPU first (both sides), then timed
//! in turns.
//!
//! The float inputs are small integers (−8 … 8), so that every partial sum
//! of any association is exact in f32: the reduce and scan results must
//! equal the CPU's exactly whatever order a side adds in. cuda-prims'
//! temporary storage is allocated inside each timed call, from the stream's
//! pool (as a user calls it); CUB's is allocated once before timing (as a
//! CUB user who sized it does). The pool keeps its default release
//! threshold (0), so each timed call's allocation maps memory the previous
//! synchronisation handed back; with [`KEEP_POOL_ENV`] set the rows keep
//! freed memory in the pool while they run, as the sort rows always do
//! (`prims_sort.rs`), which leaves a call's scratch mapped between calls:
//! the difference is what that mapping costs a call.

use crate::harness::{de, sizes, wants_type, Gpu, Row, Target};
use crate::prims_sort::KeepPool;
use cuda_core::{CudaStream, DeviceBuffer};
use cuda_prims::op::{Element, Sum};
use cuda_prims::PrimsError;
use std::ffi::{c_int, c_void};

/// The target: at least CUB's speed.
const AT_LEAST_CUB: Target = Target::SpeedAtLeast(1.0);

/// log2 of the sizes of every row.
const LOG_SIZES: [u32; 5] = [20, 22, 24, 26, 28];

/// Set (to anything), the reduce, scan and select rows keep freed memory in
/// the device's pool while they run (see the module docs).
const KEEP_POOL_ENV: &str = "OXIDE_BENCH_KEEP_POOL";

/// The pool kept for the rows' lifetime if [`KEEP_POOL_ENV`] asks for it.
fn keep_pool(gpu: &Gpu) -> Result<Option<KeepPool>, String> {
    if std::env::var_os(KEEP_POOL_ENV).is_none() {
        return Ok(None);
    }
    Ok(Some(KeepPool::new(gpu)?))
}

/// What the rows' notes add when the pool is kept.
fn pool_note() -> &'static str {
    if std::env::var_os(KEEP_POOL_ENV).is_some() { "; pool kept" } else { "" }
}

extern "C" {
    /// `cuda/cub.cu`: cub::DeviceReduce::Sum/Min/Max (op 0/1/2).
    fn oxide_cub_reduce(
        ty: c_int,
        op: c_int,
        input: *const c_void,
        out: *mut c_void,
        n: usize,
        temp: *mut c_void,
        temp_bytes: *mut usize,
        stream: *mut c_void,
    ) -> c_int;
    /// `cuda/cub.cu`: cub::DeviceScan::InclusiveSum (inclusive != 0) or ExclusiveSum.
    fn oxide_cub_scan(
        ty: c_int,
        inclusive: c_int,
        input: *const c_void,
        out: *mut c_void,
        n: usize,
        temp: *mut c_void,
        temp_bytes: *mut usize,
        stream: *mut c_void,
    ) -> c_int;
    /// `cuda/cub.cu`: cub::DeviceSelect::If(x < threshold), count into a
    /// device `u64`.
    fn oxide_cub_select_if(
        ty: c_int,
        input: *const c_void,
        out: *mut c_void,
        count: *mut c_void,
        n: usize,
        threshold: f64,
        temp: *mut c_void,
        temp_bytes: *mut usize,
        stream: *mut c_void,
    ) -> c_int;
}

/// An element type of the rows.
pub trait BenchElem: Element + PartialEq + PartialOrd + std::fmt::Debug {
    /// `cub.cu`'s type code.
    const CUB: c_int;
    /// The name in the rows.
    const NAME: &'static str;
    /// A value from random bits.
    fn sample(bits: u64) -> Self;
    /// The select rows' threshold (about half the values lie below).
    fn threshold() -> Self;
    /// As an f64 (the threshold passed to CUB).
    fn to_f64(self) -> f64;
}
impl BenchElem for u32 {
    const CUB: c_int = 0;
    const NAME: &'static str = "u32";
    fn sample(bits: u64) -> Self {
        (bits >> 32) as u32
    }
    fn threshold() -> Self {
        1 << 31
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl BenchElem for f32 {
    const CUB: c_int = 1;
    const NAME: &'static str = "f32";
    fn sample(bits: u64) -> Self {
        ((bits >> 40) % 17) as f32 - 8.0
    }
    fn threshold() -> Self {
        0.5
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl BenchElem for u64 {
    const CUB: c_int = 2;
    const NAME: &'static str = "u64";
    fn sample(bits: u64) -> Self {
        bits
    }
    fn threshold() -> Self {
        1 << 63
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

/// `len` deterministic samples.
fn samples<T: BenchElem>(len: usize, seed: u64) -> Vec<T> {
    crate::harness::random_with(len, seed, T::sample)
}

fn pe(e: PrimsError) -> String {
    e.to_string()
}

fn cub_status(what: &str, status: c_int) -> Result<(), String> {
    match status {
        0 => Ok(()),
        e => Err(format!("CUB's {what} failed with cudaError_t {e}")),
    }
}

/// CUB's temporary storage for one call shape: `query` writes the bytes.
fn cub_temp(stream: &CudaStream, query: impl FnOnce(*mut usize) -> c_int, what: &str) -> Result<DeviceBuffer<u8>, String> {
    let mut bytes = 0usize;
    cub_status(what, query(&mut bytes))?;
    // SAFETY: CUB's scratch; CUB writes what it reads.
    unsafe { DeviceBuffer::<u8>::alloc(stream, bytes.max(1)) }.map_err(de)
}

fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e-3) / 1e9
}

fn repeats(n: usize) -> usize {
    if n <= 1 << 22 { 100 } else { 30 }
}

fn row(name: String, oxide: f64, cub: f64, note: String) -> Row {
    Row { name, oxide, unit: "ms", reference: "CUB".into(), reference_time: cub, target: AT_LEAST_CUB, note }
}

fn reduce_rows<T: BenchElem>(gpu: &Gpu, rows: &mut Vec<Row>) -> Result<(), String> {
    if !wants_type(T::NAME) {
        return Ok(());
    }
    let s = &gpu.stream;
    for log in sizes(&LOG_SIZES)? {
        let n = 1usize << log;
        let host = samples::<T>(n, 40 + log as u64);
        let want = host.iter().fold(T::default(), |a, &b| <Sum as cuda_prims::op::ReduceOp<T>>::combine(&Sum, a, b));
        let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
        drop(host);
        let mut out_ox = DeviceBuffer::<T>::zeroed(s, 1).map_err(de)?;
        let out_cub = DeviceBuffer::<T>::zeroed(s, 1).map_err(de)?;
        let (inp, outp) = (input.device_ptr() as *const c_void, out_cub.device_ptr() as *mut c_void);
        // SAFETY (both CUB calls): `input` holds n T, `out_cub` one T, the
        // temp buffer the bytes CUB asked for; the stream is live.
        let temp = cub_temp(
            s,
            |b| unsafe { oxide_cub_reduce(T::CUB, 0, inp, outp, n, std::ptr::null_mut(), b, s.raw()) },
            "DeviceReduce::Sum size query",
        )?;
        let mut temp_bytes = temp.len();
        let tp = temp.device_ptr() as *mut c_void;
        let oxide_into =
            |out: &mut DeviceBuffer<T>| cuda_prims::reduce::reduce_into(&gpu.oxide, s, &input, out, Sum).map_err(pe);
        let mut cub = || cub_status("DeviceReduce::Sum", unsafe { oxide_cub_reduce(T::CUB, 0, inp, outp, n, tp, &mut temp_bytes, s.raw()) });
        oxide_into(&mut out_ox)?;
        cub()?;
        for (who, out) in [("cuda-prims", &out_ox), ("CUB", &out_cub)] {
            let got = out.to_host_vec(s).map_err(de)?[0];
            if got != want {
                return Err(format!("prims_reduce {} 2^{log} ({who}): GPU {got:?}, CPU {want:?}", T::NAME));
            }
        }
        let (t_ox, t_cub) = gpu.time_pair(3, repeats(n), || oxide_into(&mut out_ox), &mut cub)?;
        let bytes = (n * std::mem::size_of::<T>()) as f64;
        rows.push(row(
            format!("prims_reduce {} 2^{log}", T::NAME),
            t_ox,
            t_cub,
            format!("sum; read {:.0} GB/s vs {:.0}{}", gbps(bytes, t_ox), gbps(bytes, t_cub), pool_note()),
        ));
    }
    Ok(())
}

/// Device-wide sum of u32, f32 and u64, 2^20 … 2^28 elements.
pub fn prims_reduce(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let _keep = keep_pool(gpu)?;
    let mut rows = Vec::new();
    reduce_rows::<u32>(gpu, &mut rows)?;
    reduce_rows::<f32>(gpu, &mut rows)?;
    reduce_rows::<u64>(gpu, &mut rows)?;
    Ok(rows)
}

/// The first element of `got` that is not the inclusive (or exclusive)
/// sum of `host` up to it.
fn check_scan<T: BenchElem>(host: &[T], got: &[T], inclusive: bool) -> Option<(usize, T)> {
    let mut acc = T::default();
    for (i, (&x, &g)) in host.iter().zip(got).enumerate() {
        let before = acc;
        acc = <Sum as cuda_prims::op::ReduceOp<T>>::combine(&Sum, acc, x);
        let want = if inclusive { acc } else { before };
        if g != want {
            return Some((i, want));
        }
    }
    None
}

fn scan_rows<T: BenchElem>(gpu: &Gpu, rows: &mut Vec<Row>, inclusive: bool, logs: &[u32]) -> Result<(), String> {
    if !wants_type(T::NAME) {
        return Ok(());
    }
    let s = &gpu.stream;
    let kind = if inclusive { "inclusive" } else { "exclusive" };
    for log in sizes(logs)? {
        let n = 1usize << log;
        let host = samples::<T>(n, 50 + log as u64);
        let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
        let mut out_ox = DeviceBuffer::<T>::zeroed(s, n).map_err(de)?;
        let out_cub = DeviceBuffer::<T>::zeroed(s, n).map_err(de)?;
        let (inp, outp) = (input.device_ptr() as *const c_void, out_cub.device_ptr() as *mut c_void);
        let inc = inclusive as c_int;
        // SAFETY (both CUB calls): `input` and `out_cub` hold n T each, the
        // temp buffer the bytes CUB asked for; the stream is live.
        let temp = cub_temp(
            s,
            |b| unsafe { oxide_cub_scan(T::CUB, inc, inp, outp, n, std::ptr::null_mut(), b, s.raw()) },
            "DeviceScan size query",
        )?;
        let mut temp_bytes = temp.len();
        let tp = temp.device_ptr() as *mut c_void;
        let oxide_into = |out: &mut DeviceBuffer<T>| {
            if inclusive {
                cuda_prims::scan::inclusive_scan(&gpu.oxide, s, &input, out, Sum).map_err(pe)
            } else {
                cuda_prims::scan::exclusive_scan(&gpu.oxide, s, &input, out, Sum).map_err(pe)
            }
        };
        let mut cub = || cub_status("DeviceScan", unsafe { oxide_cub_scan(T::CUB, inc, inp, outp, n, tp, &mut temp_bytes, s.raw()) });
        oxide_into(&mut out_ox)?;
        cub()?;
        for (who, out) in [("cuda-prims", &out_ox), ("CUB", &out_cub)] {
            let got = out.to_host_vec(s).map_err(de)?;
            if let Some((i, want)) = check_scan(&host, &got, inclusive) {
                return Err(format!("prims_scan {kind} {} 2^{log} ({who}): element {i}: GPU {:?}, CPU {want:?}", T::NAME, got[i]));
            }
        }
        drop(host);
        let (t_ox, t_cub) = gpu.time_pair(3, repeats(n), || oxide_into(&mut out_ox), &mut cub)?;
        let bytes = (2 * n * std::mem::size_of::<T>()) as f64;
        rows.push(row(
            format!("prims_scan {}{} 2^{log}", if inclusive { "" } else { "ex " }, T::NAME),
            t_ox,
            t_cub,
            format!("sum; read+write {:.0} GB/s vs {:.0}{}", gbps(bytes, t_ox), gbps(bytes, t_cub), pool_note()),
        ));
    }
    Ok(())
}

/// Device-wide inclusive sums of u32, f32 and u64, 2^20 … 2^28 elements,
/// and exclusive sums of u32 (the rows marked `ex`).
pub fn prims_scan(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let _keep = keep_pool(gpu)?;
    let mut rows = Vec::new();
    scan_rows::<u32>(gpu, &mut rows, true, &LOG_SIZES)?;
    scan_rows::<f32>(gpu, &mut rows, true, &LOG_SIZES)?;
    scan_rows::<u64>(gpu, &mut rows, true, &LOG_SIZES)?;
    scan_rows::<u32>(gpu, &mut rows, false, &[24, 28])?;
    Ok(rows)
}

fn select_rows<T: BenchElem>(gpu: &Gpu, rows: &mut Vec<Row>) -> Result<(), String> {
    if !wants_type(T::NAME) {
        return Ok(());
    }
    let s = &gpu.stream;
    let t = T::threshold();
    for log in sizes(&LOG_SIZES)? {
        let n = 1usize << log;
        let host = samples::<T>(n, 60 + log as u64);
        let want: Vec<T> = host.iter().copied().filter(|&x| x < t).collect();
        let input = DeviceBuffer::from_host(s, &host).map_err(de)?;
        drop(host);
        let mut out_ox = DeviceBuffer::<T>::zeroed(s, n).map_err(de)?;
        let mut count_ox = DeviceBuffer::<u64>::zeroed(s, 1).map_err(de)?;
        let out_cub = DeviceBuffer::<T>::zeroed(s, n).map_err(de)?;
        let count_cub = DeviceBuffer::<u64>::zeroed(s, 1).map_err(de)?;
        let (inp, outp, cp) =
            (input.device_ptr() as *const c_void, out_cub.device_ptr() as *mut c_void, count_cub.device_ptr() as *mut c_void);
        let th = t.to_f64();
        // SAFETY (both CUB calls): `input` and `out_cub` hold n T each,
        // `count_cub` one u64, the temp buffer the bytes CUB asked for.
        let temp = cub_temp(
            s,
            |b| unsafe { oxide_cub_select_if(T::CUB, inp, outp, cp, n, th, std::ptr::null_mut(), b, s.raw()) },
            "DeviceSelect::If size query",
        )?;
        let mut temp_bytes = temp.len();
        let tp = temp.device_ptr() as *mut c_void;
        let oxide_into = |out: &mut DeviceBuffer<T>, count: &mut DeviceBuffer<u64>| {
            cuda_prims::select::select_if_into(&gpu.oxide, s, &input, out, count, move |x: T| x < t).map_err(pe)
        };
        let mut cub = || {
            cub_status("DeviceSelect::If", unsafe { oxide_cub_select_if(T::CUB, inp, outp, cp, n, th, tp, &mut temp_bytes, s.raw()) })
        };
        oxide_into(&mut out_ox, &mut count_ox)?;
        cub()?;
        for (who, out, count) in [("cuda-prims", &out_ox, &count_ox), ("CUB", &out_cub, &count_cub)] {
            let kept = count.to_host_vec(s).map_err(de)?[0] as usize;
            let got = out.to_host_vec(s).map_err(de)?;
            if kept != want.len() {
                return Err(format!("prims_select {} 2^{log} ({who}): {kept} selected, CPU {}", T::NAME, want.len()));
            }
            if let Some(i) = (0..kept).find(|&i| got[i] != want[i]) {
                return Err(format!("prims_select {} 2^{log} ({who}): element {i}: GPU {:?}, CPU {:?}", T::NAME, got[i], want[i]));
            }
        }
        let selected = want.len();
        drop(want);
        let (t_ox, t_cub) = gpu.time_pair(3, repeats(n), || oxide_into(&mut out_ox, &mut count_ox), &mut cub)?;
        let bytes = ((n + selected) * std::mem::size_of::<T>()) as f64;
        rows.push(row(
            format!("prims_select {} 2^{log}", T::NAME),
            t_ox,
            t_cub,
            format!(
                "x < {t:?}, {:.0}% kept; read+write {:.0} GB/s vs {:.0}{}",
                100.0 * selected as f64 / n as f64,
                gbps(bytes, t_ox),
                gbps(bytes, t_cub),
                pool_note()
            ),
        ));
    }
    Ok(())
}

/// Device-wide select_if (x below a threshold that keeps about half) of
/// u32, f32 and u64, 2^20 … 2^28 elements.
pub fn prims_select(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let _keep = keep_pool(gpu)?;
    let mut rows = Vec::new();
    select_rows::<u32>(gpu, &mut rows)?;
    select_rows::<f32>(gpu, &mut rows)?;
    select_rows::<u64>(gpu, &mut rows)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_check_finds_the_first_wrong_element() {
        let host = [1u32, 2, 3, 4];
        assert_eq!(check_scan(&host, &[1, 3, 6, 10], true), None);
        assert_eq!(check_scan(&host, &[0, 1, 3, 6], false), None);
        assert_eq!(check_scan(&host, &[1, 3, 7, 10], true), Some((2, 6)));
        assert_eq!(check_scan(&[u32::MAX, 2], &[u32::MAX, 1], true), None);
    }

    #[test]
    fn float_samples_sum_exactly() {
        // Small integers: every partial sum is exact in f32, in any order.
        let v = samples::<f32>(1 << 16, 1);
        assert!(v.iter().all(|x| x.fract() == 0.0 && (-8.0..=8.0).contains(x)));
        let forward: f32 = v.iter().sum();
        let backward: f32 = v.iter().rev().sum();
        assert_eq!(forward, backward);
    }
}
