//! host-cost: what oxide's host code adds to a stream-ordered allocation, to
//! a kernel launch and to an NCCL all-reduce, measured on the CPU.
//!
//! `bash benches/host-cost/run.sh` builds this program with `cargo oxide`
//! and runs it against `stub_libcuda.c`, a driver whose every entry point
//! returns at once: the time of an allocate + free pair or of a launch is
//! then oxide's own bookkeeping (checks, reference counts, locks, the
//! stream-order record) plus a few nanoseconds of stub calls, which the raw
//! rows (the same driver calls made directly) measure. `stub_libnccl.c` does
//! the same for NCCL. On a GPU the same work sits on top of the driver's
//! and NCCL's (`cargo oxide bench alloc launch allreduce`).
//!
//! ```text
//! host-cost [--walk KIB] [CASE] [ITERATIONS]
//!     all cases (median of rounds), or one case ITERATIONS times (for
//!     valgrind: run.sh --instructions, run.sh --footprint); with --walk,
//!     KIB KiB of memory are read between two calls
//! ```
//!
//! The walk stands in for what the real driver or NCCL does between two of
//! oxide's calls: NCCL's all-reduce runs microseconds of its own code over
//! its own memory, which leaves little of oxide's data in the first-level
//! cache (and, past its size, the second). A walk larger than a cache
//! evicts every line of it, so each call then misses on every distinct line
//! it touches, and a walk-only case (`none`) is the baseline that
//! `run.sh --footprint` subtracts: what is left is the case's own misses.
//!
//! `src/bin/nccl-check.rs` (`run.sh --check`) is a program of its own: its
//! many calls of each collective would change how the compiler inlines the
//! calls measured here.

use cuda_core::{CudaContext, CudaFunction, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_driver_sys::DriverApi;
use cuda_host::{cuda_launch, load_kernel_module, KernelModule};
use cuda_nccl::{Communicator, ReduceOp};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[cuda_host::cuda_module]
mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    /// Does nothing: a launch's cost is all host work.
    #[kernel]
    pub fn empty() {}

    /// `out[i] = k * x[i]`: a launch with a read buffer, a value and a written
    /// buffer, each ordered on the launch's stream.
    #[kernel]
    pub fn scale(x: &[f32], k: f32, mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = k * x[i.get()];
        }
    }
}

/// The bytes of one allocation (the size of the GPU benchmark's).
const BYTES: usize = 1 << 20;

/// What one case needs.
struct Setup {
    api: DriverApi,
    stream: Arc<CudaStream>,
    module: Option<KernelModule>,
    empty: CudaFunction,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    /// A one-rank communicator of the stub NCCL (run.sh's OXIDE_NCCL), or
    /// why there is none.
    nccl: Result<Communicator, String>,
}

type Case = fn(&mut Setup) -> Result<(), String>;

fn de(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The typed launcher's module, or why there is none (a plain `cargo build`
/// embeds no kernels: build with `cargo oxide build`).
fn module(s: &Setup) -> Result<&KernelModule, String> {
    s.module.as_ref().ok_or_else(|| "no embedded kernels: build with `cargo oxide build host-cost`".to_string())
}

const CFG: LaunchConfig = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };

/// The cases, each one allocate + free pair or one launch.
const CASES: &[(&str, &str, Case)] = &[
    ("none", "nothing (the loop alone: the baseline of --walk)", |_| Ok(())),
    ("alloc/raw", "cuMemAllocAsync + cuMemFreeAsync called directly", |s| {
        let mut p = 0u64;
        // SAFETY: out-pointer to a local; a live stream of the current context.
        let r = unsafe { (s.api.cuMemAllocAsync)(&mut p, BYTES, s.stream.raw()) };
        // SAFETY: `p` was just allocated on this stream.
        let f = unsafe { (s.api.cuMemFreeAsync)(p, s.stream.raw()) };
        if r != 0 || f != 0 {
            return Err(format!("cuMemAllocAsync/cuMemFreeAsync: {r}/{f}"));
        }
        Ok(())
    }),
    ("alloc/DeviceBuffer", "DeviceBuffer::alloc of 1 MiB and its drop", |s| {
        // SAFETY: never read; dropped at once.
        drop(unsafe { DeviceBuffer::<u8>::alloc(&s.stream, BYTES) }.map_err(de)?);
        Ok(())
    }),
    ("launch/raw", "cuLaunchKernel called directly", |s| {
        // SAFETY: `empty` takes no parameters; the stream is of the current context.
        let r = unsafe { (s.api.cuLaunchKernel)(s.empty.raw(), 1, 1, 1, 256, 1, 1, 0, s.stream.raw(), std::ptr::null_mut(), std::ptr::null_mut()) };
        if r != 0 {
            return Err(format!("cuLaunchKernel: {r}"));
        }
        Ok(())
    }),
    ("launch/cuda-core", "cuda_core::launch_kernel, no parameters", |s| {
        // SAFETY: `empty` takes no parameters.
        unsafe { cuda_core::launch_kernel(&s.empty, CFG, &s.stream, &mut []) }.map_err(de)
    }),
    ("launch/typed", "the #[cuda_module] launcher of `empty`", |s| {
        kernels::launch::empty(module(s)?, &s.stream, CFG).map_err(de)
    }),
    ("launch/cuda_launch!", "cuda_launch! of `empty`", |s| {
        let (module, stream) = (module(s)?, &s.stream);
        cuda_launch! { kernel: kernels::empty, stream: stream, module: module, config: CFG, args: [] }.map_err(de)
    }),
    ("launch/typed 3 args", "the #[cuda_module] launcher of `scale(&x, 2.0, &mut y)`", |s| {
        let module = s.module.as_ref().ok_or("no embedded kernels")?;
        kernels::launch::scale(module, &s.stream, CFG, &s.x, 2.0f32, &mut s.y).map_err(de)
    }),
    ("allreduce/raw", "ncclGroupStart, ncclAllReduce (256 f32), ncclGroupEnd called directly", |s| {
        s.nccl.as_ref().map_err(Clone::clone)?;
        let api = cuda_nccl::nccl_api().map_err(de)?;
        let (x, y) = (s.x.device_ptr() as *const std::ffi::c_void, s.y.device_ptr() as *mut std::ffi::c_void);
        // SAFETY: the stub NCCL reads no argument; a real one would get
        // live buffers of 256 f32 and a live stream.
        let r = unsafe {
            (api.ncclGroupStart)()
                | (api.ncclAllReduce)(x, y, 256, cuda_nccl::sys::ncclFloat32, cuda_nccl::sys::ncclSum, std::ptr::null_mut(), s.stream.raw())
                | (api.ncclGroupEnd)()
        };
        if r != 0 {
            return Err(format!("NCCL: {r}"));
        }
        Ok(())
    }),
    ("allreduce/cuda-nccl", "Communicator::all_reduce (256 f32) in a cuda_nccl::group", |s| {
        let comm = s.nccl.as_ref().map_err(Clone::clone)?;
        let (x, y, stream) = (&s.x, &mut s.y, &s.stream);
        cuda_nccl::group(|| comm.all_reduce(x.as_slice(), y.as_slice_mut(), ReduceOp::Sum, stream)).map_err(de)
    }),
    ("allreduce/raw single", "ncclAllReduce (256 f32) called directly, no group", |s| {
        s.nccl.as_ref().map_err(Clone::clone)?;
        let api = cuda_nccl::nccl_api().map_err(de)?;
        let (x, y) = (s.x.device_ptr() as *const std::ffi::c_void, s.y.device_ptr() as *mut std::ffi::c_void);
        // SAFETY: as for allreduce/raw.
        let r = unsafe {
            (api.ncclAllReduce)(x, y, 256, cuda_nccl::sys::ncclFloat32, cuda_nccl::sys::ncclSum, std::ptr::null_mut(), s.stream.raw())
        };
        if r != 0 {
            return Err(format!("NCCL: {r}"));
        }
        Ok(())
    }),
    ("allreduce/cuda-nccl single", "Communicator::all_reduce (256 f32), no group", |s| {
        let comm = s.nccl.as_ref().map_err(Clone::clone)?;
        comm.all_reduce(s.x.as_slice(), s.y.as_slice_mut(), ReduceOp::Sum, &s.stream).map_err(de)
    }),
    ("bcast/cuda-nccl single", "Communicator::broadcast (256 f32, root 0), no group", |s| {
        let comm = s.nccl.as_ref().map_err(Clone::clone)?;
        comm.broadcast(s.x.as_slice(), s.y.as_slice_mut(), 0, &s.stream).map_err(de)
    }),
    ("rscatter/cuda-nccl single", "Communicator::reduce_scatter (256 f32 on one rank), no group", |s| {
        let comm = s.nccl.as_ref().map_err(Clone::clone)?;
        comm.reduce_scatter(s.x.as_slice(), s.y.as_slice_mut(), ReduceOp::Sum, &s.stream).map_err(de)
    }),
];

fn setup() -> Result<Setup, String> {
    let ctx = CudaContext::new(0).map_err(de)?;
    let stream = ctx.new_stream().map_err(de)?;
    // The driver cuda-core loaded (the stub, on run.sh's LD_LIBRARY_PATH).
    let api = DriverApi::load_libcuda().map_err(de)?;
    let module = load_kernel_module(&ctx, "host_cost").ok();
    let empty = match &module {
        Some(m) => {
            let name = m.image().kernels.iter().find(|k| k.rust_path.ends_with("empty")).map(|k| k.ptx_name);
            m.cuda_module().function(name.ok_or("the image has no `empty`")?).map_err(de)?
        }
        // The stub driver loads any text and finds any name.
        None => ctx.load_module_ptx("// no kernels embedded").map_err(de)?.function("empty").map_err(de)?,
    };
    let x = DeviceBuffer::<f32>::zeroed(&stream, 256).map_err(de)?;
    let y = DeviceBuffer::<f32>::zeroed(&stream, 256).map_err(de)?;
    let nccl = match std::env::var_os("OXIDE_NCCL") {
        None => Err("no stub NCCL (OXIDE_NCCL; run.sh sets it)".to_string()),
        Some(_) => Communicator::init_all(std::slice::from_ref(&ctx)).map_err(de).and_then(|mut c| c.pop().ok_or_else(|| "no communicator".into())),
    };
    ctx.bind_to_thread().map_err(de)?;
    Ok(Setup { api, stream, module, empty, x, y, nccl })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Memory read, and code run, between two calls (`--walk`), so that each
/// call finds its data evicted from the caches the walk is larger than and
/// its code from the first level.
struct Walk(Vec<u64>);

impl Walk {
    fn new(kib: usize) -> Walk {
        // Distinct values: no page of it is the shared zero page.
        Walk((0..kib * 1024 / 8).map(|i| i as u64).collect())
    }

    /// Reads one word of every cache line (64 bytes) of the buffer; out of
    /// line, so that its misses are its own in a profile.
    #[inline(never)]
    fn run(&self) {
        let mut sum = 0u64;
        for line in self.0.chunks(8) {
            // SAFETY: a reference to a live element; volatile so that the
            // read is made every time.
            sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(&line[0]) });
        }
        std::hint::black_box(sum);
        walk_code();
    }
}

/// Runs 64 KiB of straight-line code (no-ops), twice a server core's
/// first-level instruction cache: the case's code is then fetched again on
/// each call, as after NCCL's own code ran. (The data walk, once larger
/// than the last level, evicts the case's code from there too.)
#[inline(never)]
fn walk_code() {
    // SAFETY: no-ops only: no register, memory or flag is touched.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(".rept 65536", "nop", ".endr", options(nomem, nostack, preserves_flags));
    }
    // SAFETY: as above (an aarch64 no-op is four bytes).
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(".rept 16384", "nop", ".endr", options(nomem, nostack, preserves_flags));
    }
}

fn run() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let walk = match args.iter().position(|a| a == "--walk") {
        Some(i) => {
            let kib = args.get(i + 1).ok_or("--walk needs a size in KiB")?.parse::<usize>().map_err(de)?;
            args.drain(i..i + 2);
            Some(Walk::new(kib))
        }
        None => None,
    };
    let between = || {
        if let Some(w) = &walk {
            w.run();
        }
    };
    let mut s = setup()?;
    if let Some(name) = args.first() {
        // One case, ITERATIONS times, untimed (run.sh counts instructions).
        let iterations: u64 = args.get(1).map_or(Ok(1), |n| n.parse()).map_err(de)?;
        let (_, _, case) = CASES.iter().find(|(n, _, _)| n == name).ok_or_else(|| format!("no case `{name}`"))?;
        for _ in 0..iterations {
            between();
            case(&mut s)?;
        }
        return Ok(());
    }
    // With a walk, fewer calls: each walk reads the whole buffer.
    let iterations: u32 = if walk.is_some() { 2_000 } else { 100_000 };
    const ROUNDS: usize = 21;
    // With a walk, each row also gives its time over `none` (the walk
    // and the loop alone): the case's own work, its misses included.
    let mut none_ns = None;
    match walk {
        Some(_) => println!("{:<27} {:>10} {:>10}  what", "case", "ns/call", "over none"),
        None => println!("{:<27} {:>10}  what", "case", "ns/call"),
    }
    for (name, what, case) in CASES {
        let mut times = Vec::with_capacity(ROUNDS);
        let mut skipped = None;
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..iterations {
                between();
                if let Err(e) = case(&mut s) {
                    skipped = Some(e);
                    break;
                }
            }
            times.push(start.elapsed().as_secs_f64() * 1e9 / f64::from(iterations));
            if skipped.is_some() {
                break;
            }
        }
        match skipped {
            Some(why) => println!("{name:<27} {:>10}  skipped: {why}", "-"),
            None if walk.is_some() => {
                let ns = median(times);
                let base = *none_ns.get_or_insert(ns);
                println!("{name:<27} {ns:>10.1} {:>10.1}  {what}", ns - base);
            }
            None => println!("{name:<27} {:>10.1}  {what}", median(times)),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host-cost: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// The stub is the driver run.sh times against: it must define every
    /// entry point oxide resolves (only the optional ones may be missing),
    /// or the timing run stops at load time, as it once did when
    /// `cuOccupancyMaxActiveClusters` joined the table.
    #[test]
    fn the_stub_driver_defines_every_required_entry_point() {
        let stub = include_str!("../stub_libcuda.c");
        let missing: Vec<&str> = cuda_driver_sys::ENTRY_POINTS
            .iter()
            .filter(|name| !cuda_driver_sys::OPTIONAL_ENTRY_POINTS.contains(name))
            .filter(|name| !stub.contains(&format!("SUCCEED({name})")) && !stub.contains(&format!("CUresult {name}(")))
            .copied()
            .collect();
        assert!(missing.is_empty(), "benches/host-cost/stub_libcuda.c lacks {missing:?}");
    }
}
