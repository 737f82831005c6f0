//! The runner: launches one case at a time, compares it with the CPU, prints
//! one line per case and keeps the tally.

use crate::compare::Compare;
use crate::inputs;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_launch, load_kernel_module, KernelModule};
use std::error::Error;
use std::sync::Arc;

/// What the output buffer holds before a launch, so that a kernel which
/// silently did not run cannot pass by leaving the right answer behind.
const POISON: u128 = 0x5EED_5EED_5EED_5EED_5EED_5EED_5EED_5EED;

/// The verdict on one case.
pub enum Outcome {
    /// Every result matched; `worst_ulp` is the largest float distance seen.
    Passed { worst_ulp: Option<u64> },
    /// Some results differ beyond the tolerance.
    Differs(String),
    /// The launch or the copy back failed.
    Error(String),
}

/// The device side: the stream, this program's kernels and the input columns.
pub struct Gpu {
    pub stream: Arc<CudaStream>,
    pub module: KernelModule,
    a: DeviceBuffer<u64>,
    b: DeviceBuffer<u64>,
}

/// The input columns on both sides, and the tally.
pub struct Suite {
    /// `None` in the unit tests, which run every case on the CPU only (to
    /// prove that no case panics or overflows for any input).
    gpu: Option<Gpu>,
    a: Vec<u64>,
    b: Vec<u64>,
    passed: usize,
    failed: usize,
    cpu_only_cases: usize,
}

impl Suite {
    /// Opens the first GPU, loads this program's kernels and uploads the inputs.
    pub fn new() -> Result<Self, Box<dyn Error>> {
        let mut suite = Suite::cpu_only();
        let ctx = CudaContext::new(0)?;
        let stream = ctx.default_stream();
        let module = load_kernel_module(&ctx, "conformance")?;
        let a = DeviceBuffer::from_host(&stream, &suite.a)?;
        let b = DeviceBuffer::from_host(&stream, &suite.b)?;
        suite.gpu = Some(Gpu {
            stream,
            module,
            a,
            b,
        });
        Ok(suite)
    }

    /// A suite that only runs the CPU side of each case.
    pub fn cpu_only() -> Self {
        let (a, b) = inputs::all_pairs(&inputs::interesting_values());
        Suite {
            gpu: None,
            a,
            b,
            passed: 0,
            failed: 0,
            cpu_only_cases: 0,
        }
    }

    /// Runs one case: `f` over every input pair on the CPU and on the GPU
    /// (there, its own instance of `conformance_device::run_case`), compared
    /// as `compare` says.
    pub fn case<F>(&mut self, name: &str, compare: Compare, f: F)
    where
        F: Fn(u64, u64) -> u128 + Copy + Unpin + 'static,
    {
        let cpu: Vec<u128> = self.a.iter().zip(&self.b).map(|(&a, &b)| f(a, b)).collect();
        let Some(gpu) = &self.gpu else {
            self.cpu_only_cases += 1;
            return;
        };
        let outcome = match run_case_on(gpu, self.a.len(), f) {
            Ok(results) => self.compare(compare, &results, &cpu),
            Err(e) => Outcome::Error(e.to_string()),
        };
        self.record(name, outcome);
    }

    /// Compares GPU and CPU results element by element; a failure names the
    /// first differing input pair.
    pub fn compare(&self, compare: Compare, gpu: &[u128], cpu: &[u128]) -> Outcome {
        let mut worst = 0;
        let mut differing = 0;
        let mut first = None;
        for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
            let distance = compare.distance(g, c);
            if distance > compare.tolerance() {
                differing += 1;
                first.get_or_insert(i);
            }
            worst = worst.max(distance);
        }
        let worst_ulp = compare.counts_ulps().then_some(worst);
        let Some(i) = first else {
            return Outcome::Passed { worst_ulp };
        };
        let mut report = format!(
            "{differing} of {} differ; first a={:#x} b={:#x}: GPU {} CPU {}",
            cpu.len(),
            self.a[i],
            self.b[i],
            compare.describe(gpu[i]),
            compare.describe(cpu[i]),
        );
        if let Some(ulps) = worst_ulp {
            report += &format!(
                " (worst {} ulp, allowed {})",
                describe_ulps(ulps),
                compare.tolerance()
            );
        }
        Outcome::Differs(report)
    }

    /// Prints the line for one case and counts it.
    pub fn record(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Outcome::Passed { worst_ulp } => {
                self.passed += 1;
                match worst_ulp {
                    Some(ulps) if ulps > 0 => println!("ok    {name} (worst {ulps} ulp)"),
                    _ => println!("ok    {name}"),
                }
            }
            Outcome::Differs(why) | Outcome::Error(why) => {
                self.failed += 1;
                println!("FAIL  {name}: {why}");
            }
        }
    }

    /// The device side, for checks other than [`Suite::case`]; `None` when
    /// running on the CPU only.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// The input columns `(a, b)`.
    pub fn inputs(&self) -> (&[u64], &[u64]) {
        (&self.a, &self.b)
    }

    /// `(passed, failed)` so far.
    pub fn tally(&self) -> (usize, usize) {
        (self.passed, self.failed)
    }

    /// How many cases ran on the CPU only.
    #[cfg(test)]
    pub fn cpu_only_cases(&self) -> usize {
        self.cpu_only_cases
    }
}

/// `f` applied to every input pair by the GPU. (A by-value kernel argument
/// is `Copy + Unpin + 'static`: cuda-host's `KernelArg`.)
fn run_case_on<F>(gpu: &Gpu, n: usize, f: F) -> Result<Vec<u128>, Box<dyn Error>>
where
    F: Fn(u64, u64) -> u128 + Copy + Unpin + 'static,
{
    let mut out = DeviceBuffer::from_host(&gpu.stream, &vec![POISON; n])?;
    cuda_launch! {
        kernel: conformance_device::run_case, stream: gpu.stream, module: gpu.module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [f, slice(gpu.a), slice(gpu.b), slice_mut(out)]
    }?;
    Ok(out.to_host_vec(&gpu.stream)?)
}

/// An ulp distance for a report; NaN against a number has no finite distance.
fn describe_ulps(ulps: u64) -> String {
    if ulps == u64::MAX {
        "NaN-vs-number".to_string()
    } else {
        ulps.to_string()
    }
}
