//! oxide-bench: oxide's Rust kernels against references, on one GPU, in one
//! process. Run through `cargo oxide bench [NAME] [--list]`.
//!
//! Every GPU benchmark runs oxide's kernel and its reference on the same
//! stream: the CUDA C++ twin of the same algorithm compiled by nvcc (`cuda/`,
//! built by build.rs), cuBLAS for the GEMMs (the bf16 one is the wgmma kernel
//! of examples/gemm_bf16, a library this package links), a device copy for
//! bandwidth, or raw `cuLaunchKernel` for launch overhead. Built for sm_90a
//! (Cargo.toml), which the wgmma kernel needs. Each checks its results first,
//! then times with CUDA events: warm-up runs, then the median of repeats.
//! One line per comparison: both times, the ratio and the target.
//!
//! The rebuild benchmark needs no GPU. Without a GPU the others are not run
//! and the program exits with 2 after saying so.

mod attn;
mod benches;
mod harness;
mod kernels;
mod prims;
mod prims_sort;
mod rebuild;
mod reference;

use harness::{header, Gpu, Row};
use std::process::ExitCode;

/// How a benchmark runs.
enum Runner {
    /// On the GPU.
    Gpu(fn(&Gpu) -> Result<Vec<Row>, String>),
    /// On the host (the rebuild benchmark).
    Host,
}

struct Bench {
    name: &'static str,
    about: &'static str,
    runner: Runner,
}

const BENCHES: &[Bench] = &[
    Bench { name: "vecadd", about: "c = a + b, 2^28 f32; vs nvcc and vs device copy bandwidth", runner: Runner::Gpu(benches::vecadd) },
    Bench { name: "saxpy", about: "y = a·x + y, 2^28 f32; vs nvcc", runner: Runner::Gpu(benches::saxpy) },
    Bench { name: "reduction", about: "sum of 2^28 f32 (block sums, then one block); vs nvcc", runner: Runner::Gpu(benches::reduction) },
    Bench { name: "transpose", about: "8192² f32 through 32×33 shared tiles; vs nvcc", runner: Runner::Gpu(benches::transpose) },
    Bench { name: "softmax", about: "row softmax of 4096×4096 f32, one block per row; vs nvcc", runner: Runner::Gpu(benches::softmax) },
    Bench { name: "sgemm", about: "4096³ f32 GEMM, 32×32 shared tiles; vs nvcc (and cuBLAS)", runner: Runner::Gpu(benches::sgemm) },
    Bench { name: "sgemm_fast", about: "4096³ f32 GEMM, 128×128 tiles, 8×8 per thread (examples/sgemm_fast); vs cuBLAS and its nvcc twin", runner: Runner::Gpu(benches::sgemm_fast) },
    Bench { name: "gemm_bf16_4096", about: "4096³ bf16 GEMM: wgmma kernel vs cuBLAS; simple tiled vs nvcc twin", runner: Runner::Gpu(benches::gemm_bf16_4096) },
    Bench { name: "gemm_fp8", about: "4096³ and 8192³ FP8 (e4m3) GEMM with per-tensor scales: wgmma kernel vs cuBLASLt", runner: Runner::Gpu(benches::gemm_fp8_rows) },
    Bench { name: "gemm_fp8_f32", about: "4096³ and 8192³ FP8 (e4m3) GEMM with per-tensor scales, f32 C: wgmma kernel vs cuBLASLt", runner: Runner::Gpu(benches::gemm_fp8_f32_rows) },
    Bench { name: "gemm_bf16_8192", about: "8192³ bf16 GEMM: wgmma kernel vs cuBLAS; simple tiled vs nvcc twin", runner: Runner::Gpu(benches::gemm_bf16_8192) },
    Bench { name: "gemm_f16", about: "4096³ and 8192³ f16 GEMM (f16 in and out): wgmma kernel vs cuBLAS", runner: Runner::Gpu(benches::gemm_f16_rows) },
    Bench { name: "gemm_bf16_llm", about: "bf16 GEMM on non-square LLM shapes (4096×14336×4096, 8192×1024×8192): wgmma kernel vs cuBLAS", runner: Runner::Gpu(benches::gemm_bf16_llm) },
    Bench { name: "attention_fwd", about: "fused attention forward (examples/attention: TMA, wgmma, online softmax), bf16, hd 128/64, causal and not, seq 2048–8192; vs torch sdpa's fastest backend (benches/torch/attention.py)", runner: Runner::Gpu(attn::attention_fwd) },
    Bench { name: "attention_bwd", about: "fused attention backward (examples/attention: dQ, dK, dV; TMA, wgmma, dQ by bulk f32 reductions), bf16, hd 128, causal and not, seq 2048–8192; vs torch sdpa's fastest backend's backward (benches/torch/attention.py)", runner: Runner::Gpu(attn::attention_bwd) },
    Bench { name: "launch", about: "empty launches back to back: typed launchers vs raw cuLaunchKernel", runner: Runner::Gpu(benches::launch) },
    Bench { name: "alloc", about: "1 MiB allocated and freed on a stream: DeviceBuffer vs cudaMallocAsync/cudaFreeAsync", runner: Runner::Gpu(benches::alloc) },
    Bench { name: "graph", about: "100 dependent small kernels: typed launches vs an oxide graph vs a CUDA C++ graph", runner: Runner::Gpu(benches::graph) },
    Bench { name: "allreduce", about: "f32 sum all-reduce over every GPU, 8 MiB–1 GiB: cuda-nccl vs NCCL called from CUDA C++", runner: Runner::Gpu(benches::allreduce) },
    Bench { name: "prims_reduce", about: "cuda-prims device-wide sum, u32/f32/u64, 2^20–2^28; vs CUB DeviceReduce", runner: Runner::Gpu(prims::prims_reduce) },
    Bench { name: "prims_scan", about: "cuda-prims inclusive/exclusive sum (decoupled look-back), u32/f32/u64, 2^20–2^28; vs CUB DeviceScan", runner: Runner::Gpu(prims::prims_scan) },
    Bench { name: "prims_select", about: "cuda-prims select_if (about half kept), u32/f32/u64, 2^20–2^28; vs CUB DeviceSelect::If", runner: Runner::Gpu(prims::prims_select) },
    Bench { name: "prims_sort", about: "cuda-prims radix sort (u32 keys 2^20–2^28; u64, f32 keys and u32 pairs at 2^24, 2^28) vs CUB DeviceRadixSort", runner: Runner::Gpu(prims_sort::prims_sort) },
    Bench { name: "prims_histogram", about: "cuda-prims histogram, 256 bins (u32 even 2^20–2^28; range, f32 at 2^28) vs CUB DeviceHistogram", runner: Runner::Gpu(prims_sort::prims_histogram) },
    Bench { name: "rebuild", about: "cargo oxide build after a kernel edit vs nvcc; the device link of 200 kernels, clean and after one edit, vs rustc (no GPU needed)", runner: Runner::Host },
];

fn usage() -> String {
    "usage: oxide-bench [--list] [NAME...]  (normally: cargo oxide bench [NAME] [--list])".to_string()
}

fn main() -> ExitCode {
    // The rebuild benchmark runs this program as the device linker's timing
    // stand-in (rebuild::timed_link).
    if let Some(real) = std::env::var_os(rebuild::LINK_WRAP_ENV) {
        return rebuild::timed_link(real);
    }
    let mut names = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--list" => {
                for b in BENCHES {
                    println!("{:<16} {}", b.name, b.about);
                }
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            _ if arg.starts_with('-') => {
                eprintln!("error: unknown option `{arg}`\n{}", usage());
                return ExitCode::FAILURE;
            }
            _ => names.push(arg),
        }
    }
    let mut selected: Vec<&Bench> = Vec::new();
    for name in &names {
        match BENCHES.iter().find(|b| b.name == name) {
            Some(b) => selected.push(b),
            None => {
                let all: Vec<&str> = BENCHES.iter().map(|b| b.name).collect();
                eprintln!("error: no benchmark named `{name}`\nhint: the benchmarks are: {}", all.join(", "));
                return ExitCode::FAILURE;
            }
        }
    }
    if selected.is_empty() {
        selected = BENCHES.iter().collect();
    }
    run(&selected)
}

fn run(selected: &[&Bench]) -> ExitCode {
    let wants_gpu = selected.iter().any(|b| matches!(b.runner, Runner::Gpu(_)));
    // The GPU, or why there is none (a reason to exit with 2, not a failure).
    let mut no_gpu = None;
    let mut gpu = None;
    if wants_gpu {
        match cuda_core::CudaContext::new(0) {
            Ok(ctx) => {
                let name = ctx.name().unwrap_or_default();
                let (major, minor) = ctx.compute_capability().unwrap_or((0, 0));
                let driver = cuda_core::driver_version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_default();
                println!("GPU: {name} (sm_{major}{minor}), driver CUDA {driver}; nvcc references built for {}", reference::NVCC_ARCH);
                match Gpu::open(ctx) {
                    Ok(g) => {
                        match &g.cublas {
                            Ok(b) => println!("cuBLAS: {}", b.library_path().map_or("CPU reference".into(), |p| p.display().to_string())),
                            Err(e) => println!("cuBLAS: not available ({e})"),
                        }
                        if let Err(e) = g.warm_up(500.0) {
                            eprintln!("error: warming up the GPU: {e}");
                            return ExitCode::FAILURE;
                        }
                        gpu = Some(g);
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            Err(e) if matches!(e.kind(), cuda_core::ErrorKind::DriverNotFound | cuda_core::ErrorKind::NoDevice) => {
                no_gpu = Some(e.to_string());
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }

    if gpu.is_some() || selected.iter().any(|b| matches!(b.runner, Runner::Host)) {
        println!("{}", header());
    }
    let mut failures = Vec::new();
    let mut missed = Vec::new();
    for bench in selected {
        let rows = match (&bench.runner, &gpu) {
            (Runner::Gpu(_), None) => continue,
            (Runner::Gpu(f), Some(g)) => f(g),
            (Runner::Host, _) => match rebuild::rebuild() {
                Ok(rows) => Ok(rows),
                Err(Ok(rebuild::Skipped(why))) => {
                    println!("{:<22} skipped: {why}", bench.name);
                    continue;
                }
                Err(Err(e)) => Err(e),
            },
        };
        match rows {
            Ok(rows) => {
                for r in rows {
                    println!("{}", r.format());
                    if r.met() == Some(false) {
                        missed.push(r.name.clone());
                    }
                }
            }
            Err(e) => {
                println!("{:<22} FAILED: {e}", bench.name);
                failures.push(bench.name);
            }
        }
    }
    if !missed.is_empty() {
        println!("targets missed: {}", missed.join(", "));
    }
    if !failures.is_empty() {
        eprintln!("error: {} benchmark(s) failed: {}", failures.len(), failures.join(", "));
        return ExitCode::FAILURE;
    }
    if let Some(why) = no_gpu {
        eprintln!("{why}");
        eprintln!(
            "no GPU: the benchmarks were built (oxide's PTX and nvcc's cubin), but the GPU ones could not run here"
        );
        return ExitCode::from(cuda_host::NO_GPU_EXIT_CODE);
    }
    ExitCode::SUCCESS
}
