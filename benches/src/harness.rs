//! What every benchmark shares: the GPU session, timing with CUDA events,
//! the result rows and the table, deterministic inputs and result checks.

use crate::kernels::BLOCK_1D;
use crate::reference::{self, RawArgs};
use cuda_core::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig};
use cuda_host::{load_kernel_module, load_kernel_module_from_ptx, KernelModule};

/// Names a PTX file to load oxide's kernels from instead of the embedded
/// PTX: the same kernels built another way (a device-linker experiment),
/// timed without rebuilding the program.
pub const PTX_OVERRIDE: &str = "OXIDE_BENCH_PTX";
use std::sync::Arc;

/// How long the `gate` kernel holds the GPU before each timed run (ns):
/// far longer than the host needs to submit any benchmark's work.
const GATE_NS: u64 = 100_000;

/// Everything a GPU benchmark needs, set up once.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    /// A stream of its own (not the legacy default stream), shared by oxide's
    /// kernels, the nvcc twins and cuBLAS.
    pub stream: Arc<CudaStream>,
    /// oxide's kernels (the PTX the device linker embedded in this program).
    pub oxide: KernelModule,
    /// The nvcc-compiled twins.
    pub nvcc: Arc<CudaModule>,
    /// The twins' `gate` kernel, launched in front of every timed run.
    gate: CudaFunction,
    /// cuBLAS (the `cuda-blas` crate, on `stream`), or why it could not be loaded.
    pub cublas: Result<cuda_blas::Blas, String>,
}

impl Gpu {
    /// Opens device 0 and loads both modules; cuBLAS is loaded on first use.
    pub fn open(ctx: Arc<CudaContext>) -> Result<Gpu, String> {
        let stream = ctx.new_stream().map_err(|e| e.to_string())?;
        let oxide = match std::env::var_os(PTX_OVERRIDE) {
            None => load_kernel_module(&ctx, "oxide_bench").map_err(|e| e.to_string())?,
            Some(path) => {
                let ptx = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{PTX_OVERRIDE}={}: {e}", path.to_string_lossy()))?;
                eprintln!("oxide's kernels from {} ({PTX_OVERRIDE}), not the embedded PTX", path.to_string_lossy());
                // SAFETY: what the variable names is, by its documented use
                // (benches/README.md), a device-linker build of these same
                // kernels: the variant under test, not foreign code.
                unsafe { load_kernel_module_from_ptx(&ctx, "oxide_bench", &ptx) }.map_err(|e| e.to_string())?
            }
        };
        let nvcc = reference::load(&ctx)?;
        let gate = nvcc.function("gate").map_err(|e| e.to_string())?;
        ctx.bind_to_thread().map_err(|e| e.to_string())?;
        let cublas = cuda_blas::Blas::new(&stream).map_err(|e| e.to_string());
        Ok(Gpu { ctx, stream, oxide, nvcc, gate, cublas })
    }

    /// cuBLAS, or an error saying why it is missing.
    pub fn cublas(&self) -> Result<&cuda_blas::Blas, String> {
        self.cublas.as_ref().map_err(Clone::clone)
    }

    /// The median time in milliseconds of `repeats` runs of `work` after
    /// `warmup` unmeasured ones, each run between two events on the stream.
    pub fn time_ms(
        &self,
        warmup: usize,
        repeats: usize,
        mut work: impl FnMut() -> Result<(), String>,
    ) -> Result<f64, String> {
        for _ in 0..warmup {
            work()?;
        }
        let mut times = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            times.push(self.time_once(&mut work)?);
        }
        Ok(median(&mut times))
    }

    /// The median times in milliseconds of `a` and `b`, measured in turns
    /// (a, b, b, a, a, b, …) after `warmup` unmeasured runs of each, so that
    /// clock changes, the state of the memory system and going first fall on
    /// both alike.
    pub fn time_pair(
        &self,
        warmup: usize,
        repeats: usize,
        mut a: impl FnMut() -> Result<(), String>,
        mut b: impl FnMut() -> Result<(), String>,
    ) -> Result<(f64, f64), String> {
        for _ in 0..warmup {
            a()?;
            b()?;
        }
        let (mut ta, mut tb) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
        for i in 0..repeats {
            if i % 2 == 0 {
                ta.push(self.time_once(&mut a)?);
                tb.push(self.time_once(&mut b)?);
            } else {
                tb.push(self.time_once(&mut b)?);
                ta.push(self.time_once(&mut a)?);
            }
        }
        Ok((median(&mut ta), median(&mut tb)))
    }

    /// One run of `work` between two events, in milliseconds.
    ///
    /// The GPU is kept busy by the `gate` kernel while the host records the
    /// start event and submits `work`: had it been idle, it would pass the
    /// start event at once and then wait for the host's launches, and the
    /// time would include how long the host took to submit them (a few µs:
    /// 2 % of a 150 µs transpose, and more for whichever launch path does
    /// more on the host). The launch benchmark measures that part.
    fn time_once(&self, work: &mut impl FnMut() -> Result<(), String>) -> Result<f64, String> {
        let start = self.ctx.new_event().map_err(de)?;
        let end = self.ctx.new_event().map_err(de)?;
        let one_thread = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: gate(unsigned long long) takes one 8-byte value and
        // touches no memory.
        unsafe { RawArgs::new().u64(GATE_NS).launch(&self.gate, one_thread, &self.stream)? };
        start.record(&self.stream).map_err(de)?;
        work()?;
        end.record(&self.stream).map_err(de)?;
        end.synchronize().map_err(de)?;
        Ok(start.elapsed_ms(&end).map_err(de)? as f64)
    }

    /// Keeps the GPU busy for about `ms` milliseconds (memsets of 1 GiB),
    /// so the first benchmark does not run at idle clocks.
    pub fn warm_up(&self, ms: f64) -> Result<(), String> {
        let mut buffer = cuda_core::DeviceBuffer::<u32>::zeroed(&self.stream, 1 << 28).map_err(de)?;
        let start = std::time::Instant::now();
        let mut value = 0u32;
        while start.elapsed().as_secs_f64() * 1e3 < ms {
            for _ in 0..8 {
                value = value.wrapping_add(1);
                buffer.fill(&self.stream, value).map_err(de)?;
            }
            self.stream.synchronize().map_err(de)?;
        }
        Ok(())
    }
}

/// Set to a comma-separated list of log2 sizes (`22,28`), the rows that
/// sweep sizes (the cuda-prims rows) run only those: a profiler run of one
/// size, or a quick A/B of the sizes that miss.
pub const SIZES_ENV: &str = "OXIDE_BENCH_SIZES";

/// The log2 sizes of `all` that [`SIZES_ENV`] keeps (all of them when it
/// is unset or empty); an entry that is not a number is an error naming it.
pub fn sizes(all: &[u32]) -> Result<Vec<u32>, String> {
    sizes_in(all, std::env::var(SIZES_ENV).ok().as_deref())
}

/// Set to a comma-separated list of element types (`u64`, `u32,f32`), the
/// cuda-prims reduce, scan and select rows run only those: with
/// [`SIZES_ENV`], one row a profiler can pick out.
pub const TYPES_ENV: &str = "OXIDE_BENCH_TYPES";

/// Whether [`TYPES_ENV`] keeps the rows of element type `name` (every type
/// when it is unset or empty).
pub fn wants_type(name: &str) -> bool {
    type_in(name, std::env::var(TYPES_ENV).ok().as_deref())
}

/// Whether `spec` (a [`TYPES_ENV`] value) keeps element type `name`.
fn type_in(name: &str, spec: Option<&str>) -> bool {
    match spec.filter(|s| !s.trim().is_empty()) {
        None => true,
        Some(spec) => spec.split(',').any(|t| t.trim() == name),
    }
}

/// The log2 sizes of `all` that `spec` (a [`SIZES_ENV`] value) keeps.
fn sizes_in(all: &[u32], spec: Option<&str>) -> Result<Vec<u32>, String> {
    let Some(spec) = spec.filter(|s| !s.trim().is_empty()) else { return Ok(all.to_vec()) };
    let mut keep = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let log = item.parse::<u32>().map_err(|_| format!("{SIZES_ENV}: `{item}` is not a log2 size (e.g. 22,28)"))?;
        keep.push(log);
    }
    Ok(all.iter().copied().filter(|log| keep.contains(log)).collect())
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of nothing");
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// A 1-D launch of `n` threads in blocks of `BLOCK_1D`.
pub fn config_1d(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK_1D as usize) as u32, 1, 1),
        block_dim: (BLOCK_1D, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// How the ratio of a row reads, and what it must reach.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// reference time / oxide time (a speed-up) must be at least this.
    SpeedAtLeast(f64),
    /// oxide time / reference time must be at most this.
    TimeAtMost(f64),
    /// Printed for information only (speed-up, reference / oxide).
    None,
    /// Printed for information only, as a time ratio (oxide / reference).
    TimeRatio,
}

/// One line of the table.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    /// oxide's time, and its unit ("ms", "µs", "s").
    pub oxide: f64,
    pub unit: &'static str,
    /// What oxide is compared with ("nvcc", "cuBLAS", "memcpy", …).
    pub reference: String,
    pub reference_time: f64,
    pub target: Target,
    /// Throughput and the like.
    pub note: String,
}

impl Row {
    /// The ratio the row reports: a speed-up (reference / oxide) unless the
    /// target is a time ratio.
    pub fn ratio(&self) -> f64 {
        match self.target {
            Target::TimeAtMost(_) | Target::TimeRatio => self.oxide / self.reference_time,
            _ => self.reference_time / self.oxide,
        }
    }

    /// Whether the target is met (None when there is none).
    ///
    /// The ratio is judged as printed, to three decimals: repeated runs
    /// move it by a few parts in ten thousand, so "1.000" that a fourth
    /// digit would call 0.9997 is parity, not a miss.
    pub fn met(&self) -> Option<bool> {
        let printed = (self.ratio() * 1000.0).round() / 1000.0;
        match self.target {
            Target::SpeedAtLeast(t) => Some(printed >= t),
            Target::TimeAtMost(t) => Some(printed <= t),
            Target::None | Target::TimeRatio => None,
        }
    }

    /// The row as printed.
    pub fn format(&self) -> String {
        let (ratio_kind, target) = match self.target {
            Target::SpeedAtLeast(t) => ("ref/oxide", format!("≥ {t:.2}")),
            Target::TimeAtMost(t) => ("oxide/ref", format!("≤ {t:.2}")),
            Target::None => ("ref/oxide", "-".to_string()),
            Target::TimeRatio => ("oxide/ref", "-".to_string()),
        };
        let mark = match self.met() {
            Some(true) => "ok",
            Some(false) => "MISSED",
            None => "",
        };
        format!(
            "{:<22} {:>10.3} {:<2}  {:<8} {:>10.3} {:<2}  {:>6.3}x {:<9}  {:<7} {:<6}  {}",
            self.name,
            self.oxide,
            self.unit,
            self.reference,
            self.reference_time,
            self.unit,
            self.ratio(),
            ratio_kind,
            target,
            mark,
            self.note
        )
    }
}

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:<22} {:>13}  {:<8} {:>13}  {:<17}  {:<7} {:<6}  {}",
        "benchmark", "oxide", "reference", "time", "ratio", "target", "", "notes"
    )
}

/// `len` deterministic pseudo-random `f32`s in [-1, 1), generated in
/// parallel chunks (each seeded from `seed` and its index).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    random_with(len, seed, |bits| (bits >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
}

/// `len` deterministic bf16 bit patterns of values in [-1, 1) (an f32 in
/// [-1, 1) rounded to nearest even bf16).
pub fn random_bf16(len: usize, seed: u64) -> Vec<u16> {
    random_with(len, seed, |bits| f32_to_bf16((bits >> 40) as f32 / (1u64 << 23) as f32 - 1.0))
}

/// The bf16 nearest `x` (ties to even); `x` must be finite.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounding = 0x7fff + ((bits >> 16) & 1);
    ((bits + rounding) >> 16) as u16
}

/// The `f32` a bf16 bit pattern denotes.
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `len` values `map(word)` of deterministic xorshift64 words, made in
/// parallel chunks (each chunk its own stream of words from `seed`).
pub fn random_with<T: Send + Default + Clone>(len: usize, seed: u64, map: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); len];
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).min(16);
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let map = &map;
            scope.spawn(move || {
                let mut state = seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                for v in part {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *v = map(state);
                }
            });
        }
    });
    out
}

/// About `count` indices spread over `0..len`, first and last included.
pub fn sample_indices(len: usize, count: usize) -> Vec<usize> {
    let step = (len / count.max(1)).max(1);
    let mut v: Vec<usize> = (0..len).step_by(step).map(|i| (i + i / step * 7919) % len).collect();
    v.push(len - 1);
    v
}

/// Checks that `got` and `want` are equal bit for bit; the error names the
/// first difference.
pub fn check_identical(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {} but should be {} ({} of {} differ)",
            got[i],
            want[i],
            got.iter().zip(want).filter(|(g, w)| g.to_bits() != w.to_bits()).count(),
            got.len()
        )),
    }
}

/// Checks |got − want| ≤ tolerance(i) for every element.
pub fn check_close(
    what: &str,
    got: &[f32],
    want: &[f32],
    tolerance: impl Fn(usize) -> f64,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let error = (g as f64 - w as f64).abs();
        if !(error <= tolerance(i)) {
            return Err(format!("{what}: element {i} is {g} but should be {w} (error {error:e} > {:e})", tolerance(i)));
        }
    }
    Ok(())
}

/// A driver error as the benchmarks' error type.
pub fn de(e: cuda_core::DriverError) -> String {
    e.to_string()
}

/// A cuBLAS error (from cuda-blas) as the benchmarks' error type.
pub fn be(e: cuda_blas::BlasError) -> String {
    e.to_string()
}

/// A host error (from a typed launch) as the benchmarks' error type.
pub fn he(e: cuda_host::HostError) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_keep_what_the_variable_names() {
        assert!(type_in("u64", None) && type_in("u64", Some("")));
        assert!(type_in("u64", Some("u32, u64")));
        assert!(!type_in("u64", Some("u32,f32")));
        assert!(!type_in("u6", Some("u64")));
    }

    #[test]
    fn sizes_keep_what_the_variable_names() {
        let all = [20, 22, 24, 26, 28];
        assert_eq!(sizes_in(&all, None).unwrap(), all);
        assert_eq!(sizes_in(&all, Some("28")).unwrap(), [28]);
        assert_eq!(sizes_in(&all, Some(" 22, 28 ,")).unwrap(), [22, 28]);
        // A size the row does not sweep is no row; the order is the row's.
        assert_eq!(sizes_in(&all, Some("28,21,20")).unwrap(), [20, 28]);
        // Set but empty: as if unset.
        assert_eq!(sizes_in(&all, Some(" ")).unwrap(), all);
        let err = sizes_in(&all, Some("22,2^28")).unwrap_err();
        assert!(err.contains("`2^28`") && err.contains(SIZES_ENV), "{err}");
    }

    fn row(oxide: f64, reference_time: f64, target: Target) -> Row {
        Row {
            name: "r".into(),
            oxide,
            unit: "ms",
            reference: "nvcc".into(),
            reference_time,
            target,
            note: String::new(),
        }
    }

    #[test]
    fn targets_are_judged_as_printed() {
        // 0.9997 prints as 1.000: parity; 0.9994 prints as 0.999: a miss.
        assert_eq!(row(1.0, 0.9997, Target::SpeedAtLeast(1.0)).met(), Some(true));
        assert_eq!(row(1.0, 0.9994, Target::SpeedAtLeast(1.0)).met(), Some(false));
        assert_eq!(row(1.0504, 1.0, Target::TimeAtMost(1.05)).met(), Some(true));
        assert_eq!(row(1.0506, 1.0, Target::TimeAtMost(1.05)).met(), Some(false));
        assert_eq!(row(1.0, 2.0, Target::None).met(), None);
    }
}
