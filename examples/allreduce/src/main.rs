//! NCCL's collectives from Rust (the `cuda-nccl` crate), every one checked
//! against the same computation on the CPU: all-reduce (sum, prod, max,
//! min, avg; out of place and in place), reduce, broadcast, all-gather,
//! reduce-scatter and a send/recv ring, for f32, f64, f16, bf16, i8, u8,
//! i32, u32, i64, u64 and fp8, at several sizes. The first all-reduce
//! reduces what an oxide kernel wrote on each rank.
//!
//! ```text
//! cargo oxide run allreduce                      # every GPU of this machine (emulated: 4 ranks)
//! cargo oxide run allreduce -- --ranks 2         # 2 ranks, one thread each
//! cargo oxide run allreduce -- --sizes 1,4096,16777216   # default: 1,7,1000,65537,1048576 (emulated: up to 4099)
//! OXIDE_RANK=r OXIDE_WORLD_SIZE=n OXIDE_NCCL_ADDR=host:port allreduce   # one rank of a job
//! ```
//!
//! Without `OXIDE_RANK` (or `RANK`) the program runs every rank itself:
//! one thread per rank (`Communicator::init_rank`), then one thread driving
//! every rank in a group (`Communicator::init_all`). With it, it is one
//! rank of a multi-process job whose unique id comes through the bootstrap
//! the environment names (docs/NCCL.md). On the CPU emulator the ranks
//! share its one device; on a GPU rank r uses GPU r (`OXIDE_LOCAL_RANK` in
//! a job).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::half::{bf16, f16};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use cuda_nccl::{Communicator, Group, NcclElement, NcclError, ReduceOp, UniqueId, World, F8E4M3, F8E5M2};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Rank `rank`'s input element `i`: 1 or 2, so that sums and products of
/// up to 8 ranks are exact in every element type (fp8 included).
fn input(rank: usize, i: usize) -> f64 {
    ((rank * 7 + i * 3 + i / 5) % 2 + 1) as f64
}

/// `out[i] = input(rank, i)`, on the GPU.
#[kernel]
pub fn fill(mut out: DisjointSlice<f32>, rank: u32) {
    let idx = thread::index_1d();
    let i = idx.get() as u32;
    if let Some(x) = out.get_mut(idx) {
        *x = ((rank * 7 + i * 3 + i / 5) % 2 + 1) as f32;
    }
}

/// The reduction of element `i` over `n` ranks, in f64 (exact: the inputs
/// are small integers).
fn reference(op: ReduceOp, n: usize, float: bool, offset: usize, i: usize) -> f64 {
    let xs = (0..n).map(|r| input(r, offset + i));
    match op {
        ReduceOp::Sum => xs.sum(),
        ReduceOp::Prod => xs.product(),
        ReduceOp::Max => xs.fold(f64::MIN, f64::max),
        ReduceOp::Min => xs.fold(f64::MAX, f64::min),
        ReduceOp::Avg if float => xs.sum::<f64>() / n as f64,
        ReduceOp::Avg => (xs.sum::<f64>() / n as f64).trunc(),
    }
}

/// An element type with its conversions and rounding.
trait Elem: NcclElement + PartialEq {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    /// The relative rounding of one step (0 for integers: exact).
    const EPS: f64;
}
macro_rules! elem {
    ($t:ty, $of:expr, $to:expr, $eps:expr) => {
        impl Elem for $t {
            fn of(x: f64) -> Self {
                $of(x)
            }
            fn f64(self) -> f64 {
                $to(self)
            }
            const EPS: f64 = $eps;
        }
    };
}
elem!(f32, |x| x as f32, |x: f32| x as f64, f32::EPSILON as f64);
elem!(f64, |x| x, |x| x, f64::EPSILON);
elem!(f16, f16::from_f64, |x: f16| x.to_f32() as f64, 1.0 / 1024.0);
elem!(bf16, bf16::from_f64, |x: bf16| x.to_f32() as f64, 1.0 / 128.0);
elem!(F8E4M3, |x| F8E4M3::from_f32(x as f32), |x: F8E4M3| x.to_f32() as f64, 1.0 / 8.0);
elem!(F8E5M2, |x| F8E5M2::from_f32(x as f32), |x: F8E5M2| x.to_f32() as f64, 1.0 / 4.0);
elem!(i8, |x| x as i8, |x| x as f64, 0.0);
elem!(u8, |x| x as u8, |x| x as f64, 0.0);
elem!(i32, |x| x as i32, |x| x as f64, 0.0);
elem!(u32, |x| x as u32, |x| x as f64, 0.0);
elem!(i64, |x| x as i64, |x| x as f64, 0.0);
elem!(u64, |x| x as u64, |x| x as f64, 0.0);

/// Checks `got` against `want(i)`; the bound is the reordering and
/// rounding of `n` steps (only Avg of floats is not exact).
fn check<T: Elem>(what: &str, got: &[T], n: usize, want: impl Fn(usize) -> f64) -> Result<(), Error> {
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        let tol = 4.0 * n as f64 * T::EPS * w.abs().max(1.0);
        if (g.f64() - w).abs() > tol {
            return Err(format!("{what} ({}): element {i} is {}, the CPU says {w}", T::NAME, g.f64()).into());
        }
    }
    Ok(())
}

/// Every collective for `T` at every size on this rank; returns how many
/// checks passed.
fn every_collective<T: Elem>(comm: &Communicator, stream: &Arc<CudaStream>, sizes: &[usize]) -> Result<usize, Error> {
    let (rank, n) = (comm.rank(), comm.size());
    let float = T::EPS > 0.0;
    let mut passed = 0;
    for &len in sizes {
        let host: Vec<T> = (0..len).map(|i| T::of(input(rank, i))).collect();
        let send = DeviceBuffer::from_host(stream, &host)?;
        for op in ReduceOp::ALL {
            let mut recv = DeviceBuffer::<T>::zeroed(stream, len)?;
            if !op.is_available_for::<T>() {
                // Refused before NCCL is called, on every backend.
                match comm.all_reduce(send.as_slice(), recv.as_slice_mut(), op, stream) {
                    Err(NcclError::AvgOfFp8 { .. }) => continue,
                    other => return Err(format!("all_reduce {op:?} of {} must be refused, got {other:?}", T::NAME).into()),
                }
            }
            comm.all_reduce(send.as_slice(), recv.as_slice_mut(), op, stream)?;
            let mut inplace = DeviceBuffer::from_host(stream, &host)?;
            comm.all_reduce_in_place(inplace.as_slice_mut(), op, stream)?;
            let root = len % n;
            let mut reduced = DeviceBuffer::from_host(stream, &vec![T::of(100.0); len])?;
            comm.reduce(send.as_slice(), reduced.as_slice_mut(), op, root, stream)?;
            comm.wait(stream)?;
            let want = |i| reference(op, n, float, 0, i);
            check(&format!("all_reduce {op:?} of {len}"), &recv.to_host_vec(stream)?, n, want)?;
            check(&format!("in-place all_reduce {op:?} of {len}"), &inplace.to_host_vec(stream)?, n, want)?;
            let want_reduced = |i| if rank == root { want(i) } else { 100.0 };
            check(&format!("reduce {op:?} of {len} to rank {root}"), &reduced.to_host_vec(stream)?, n, want_reduced)?;
            passed += 3;
        }
        let root = (len + 1) % n;
        let mut bcast = DeviceBuffer::<T>::zeroed(stream, len)?;
        comm.broadcast(send.as_slice(), bcast.as_slice_mut(), root, stream)?;
        let mut gathered = DeviceBuffer::<T>::zeroed(stream, len * n)?;
        comm.all_gather(send.as_slice(), gathered.as_slice_mut(), stream)?;
        let big: Vec<T> = (0..len * n).map(|i| T::of(input(rank, i))).collect();
        let big = DeviceBuffer::from_host(stream, &big)?;
        let mut block = DeviceBuffer::<T>::zeroed(stream, len)?;
        comm.reduce_scatter(big.as_slice(), block.as_slice_mut(), ReduceOp::Sum, stream)?;
        // A ring: to the next rank, from the previous, in one group.
        let mut ring = DeviceBuffer::<T>::zeroed(stream, len)?;
        if n > 1 {
            let g = Group::start();
            comm.send(send.as_slice(), (rank + 1) % n, stream)?;
            comm.recv(ring.as_slice_mut(), (rank + n - 1) % n, stream)?;
            g.end()?;
        }
        comm.wait(stream)?;
        check(&format!("broadcast of {len} from rank {root}"), &bcast.to_host_vec(stream)?, n, |i| input(root, i))?;
        check(&format!("all_gather of {len}"), &gathered.to_host_vec(stream)?, n, |i| input(i / len, i % len))?;
        check(&format!("reduce_scatter of {len}"), &block.to_host_vec(stream)?, n, |i| {
            reference(ReduceOp::Sum, n, float, rank * len, i)
        })?;
        if n > 1 {
            let from = (rank + n - 1) % n;
            check(&format!("send/recv ring of {len}"), &ring.to_host_vec(stream)?, n, |i| input(from, i))?;
        }
        passed += 4;
    }
    Ok(passed)
}

/// Everything on one rank: a kernel's output all-reduced, then every type.
fn rank_main(comm: &Communicator, ctx: &Arc<CudaContext>, sizes: &[usize]) -> Result<usize, Error> {
    let stream = ctx.new_stream()?;
    let (rank, n) = (comm.rank(), comm.size());
    // A kernel writes this rank's input; the all-reduce on the same stream
    // reads it after the kernel.
    let len = 4099;
    let module = load_kernel_module(ctx, "allreduce")?;
    let mut x = DeviceBuffer::<f32>::zeroed(&stream, len)?;
    cuda_launch! { kernel: fill, stream: stream, module: module,
                   config: LaunchConfig::for_num_elems(len as u32), args: [slice_mut(x), rank as u32] }?;
    comm.all_reduce_in_place(x.as_slice_mut(), ReduceOp::Sum, &stream)?;
    comm.wait(&stream)?;
    check("all_reduce of a kernel's output", &x.to_host_vec(&stream)?, n, |i| reference(ReduceOp::Sum, n, true, 0, i))?;
    let mut passed = 1;
    passed += every_collective::<f32>(comm, &stream, sizes)?;
    passed += every_collective::<f64>(comm, &stream, sizes)?;
    passed += every_collective::<f16>(comm, &stream, sizes)?;
    passed += every_collective::<bf16>(comm, &stream, sizes)?;
    passed += every_collective::<i8>(comm, &stream, sizes)?;
    passed += every_collective::<u8>(comm, &stream, sizes)?;
    passed += every_collective::<i32>(comm, &stream, sizes)?;
    passed += every_collective::<u32>(comm, &stream, sizes)?;
    passed += every_collective::<i64>(comm, &stream, sizes)?;
    passed += every_collective::<u64>(comm, &stream, sizes)?;
    if comm.is_emulated() || cuda_nccl::version()? >= cuda_nccl::sys::FP8_VERSION {
        passed += every_collective::<F8E4M3>(comm, &stream, sizes)?;
        passed += every_collective::<F8E5M2>(comm, &stream, sizes)?;
    } else {
        println!("  rank {rank}: fp8 skipped (NCCL {} is older than 2.24)", cuda_nccl::sys::version_string(cuda_nccl::version()?));
    }
    Ok(passed)
}

struct Args {
    ranks: Option<usize>,
    /// `None`: the default for the backend.
    sizes: Option<Vec<usize>>,
}

fn args() -> Result<Args, Error> {
    let mut a = Args { ranks: None, sizes: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--ranks" => a.ranks = Some(value()?.parse().map_err(|_| "--ranks takes a number")?),
            "--sizes" => {
                let sizes: Vec<usize> =
                    value()?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>().map_err(|_| "--sizes takes numbers")?;
                a.sizes = Some(sizes)
            }
            other => return Err(format!("unknown argument `{other}` (allreduce [--ranks N] [--sizes a,b,c])").into()),
        }
    }
    if a.sizes.as_ref().is_some_and(|s| s.contains(&0)) {
        return Err("--sizes: every size must be at least 1".into());
    }
    Ok(a)
}

fn run() -> Result<String, Error> {
    let args = args()?;
    // The emulator computes on the CPU: smaller sizes keep the run short.
    let sizes: &[usize] = match &args.sizes {
        Some(s) => s,
        None if CudaContext::new(0)?.backend().is_emulated() => &[1, 7, 1000, 4099],
        None => &[1, 7, 1000, 65537, 1 << 20],
    };
    let launched = std::env::var_os("OXIDE_RANK").is_some() || std::env::var_os("RANK").is_some();
    if launched {
        // One rank of a multi-process job.
        let world = World::from_env()?;
        let ctx = CudaContext::new(if CudaContext::new(0)?.backend().is_emulated() { 0 } else { world.local_rank })?;
        let comm = Communicator::from_bootstrap(&ctx, &world.bootstrap, world.rank, world.size, Duration::from_secs(120))?;
        let passed = rank_main(&comm, &ctx, sizes)?;
        return Ok(format!("rank {} of {}: {passed} checks match the CPU", world.rank, world.size));
    }
    let ctx0 = CudaContext::new(0)?;
    let emulated = ctx0.backend().is_emulated();
    let n = match args.ranks {
        Some(n) => n,
        None if emulated => 4,
        None => CudaContext::device_count()?,
    };
    if n == 0 {
        return Err("--ranks must be at least 1".into());
    }
    let device = |rank: usize| if emulated { 0 } else { rank };
    println!(
        "allreduce: {n} rank(s) on {}, sizes {:?}",
        if emulated { "the CPU emulator".to_string() } else { format!("{n} GPU(s)") },
        sizes
    );

    // One thread per rank, meeting through a unique id.
    let id = UniqueId::new(&ctx0)?;
    let results: Vec<Result<usize, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                s.spawn(move || -> Result<usize, Error> {
                    let ctx = CudaContext::new(device(rank))?;
                    let comm = Communicator::init_rank(&ctx, &id, rank, n)?;
                    rank_main(&comm, &ctx, sizes).map_err(|e| format!("rank {rank}: {e}").into())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into()))).collect()
    });
    let mut total = 0;
    for (rank, r) in results.into_iter().enumerate() {
        let passed = r?;
        println!("  ok  rank {rank}: {passed} checks (one thread per rank)");
        total += passed;
    }

    // One thread driving every rank: init_all, and a group per collective.
    let contexts = (0..n).map(|r| CudaContext::new(device(r))).collect::<Result<Vec<_>, _>>()?;
    let comms = Communicator::init_all(&contexts)?;
    let streams = contexts.iter().map(|c| c.new_stream()).collect::<Result<Vec<_>, _>>()?;
    let len = 10_007;
    let mut bufs = (0..n)
        .map(|r| DeviceBuffer::from_host(&streams[r], &(0..len).map(|i| input(r, i) as f32).collect::<Vec<_>>()))
        .collect::<Result<Vec<_>, _>>()?;
    cuda_nccl::group(|| {
        for r in 0..n {
            comms[r].all_reduce_in_place(bufs[r].as_slice_mut(), ReduceOp::Avg, &streams[r])?;
        }
        Ok::<_, NcclError>(())
    })?;
    for r in 0..n {
        comms[r].wait(&streams[r])?;
        check("grouped all_reduce Avg", &bufs[r].to_host_vec(&streams[r])?, n, |i| reference(ReduceOp::Avg, n, true, 0, i))?;
    }
    println!("  ok  one thread, {n} rank(s) in a group: all_reduce Avg of {len}");
    Ok(format!("{} checks on {n} rank(s) match the CPU", total + n))
}

fn main() -> ExitCode {
    match run() {
        Ok(summary) => {
            println!("PASS");
            println!("✓ SUCCESS: allreduce: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAIL");
            cuda_host::report_failure(&*e)
        }
    }
}
