//! cuda-nccl against a CPU computation of every collective, on the GPU
//! where there is one (with NCCL; as many ranks as GPUs), else on the CPU
//! emulator (1 to 4 ranks): every element type and reduction, several
//! sizes, one thread per rank and one thread driving every rank in a
//! group; split, send/recv, graph capture, cuda-async; and the misuse
//! errors (lengths, roots, peers, ranks that disagree or never come).

use std::sync::{Arc, Once};
use std::time::Duration;

use cuda_async::DeviceOperation;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_device::half::{bf16, f16};
use cuda_driver_sys::DriverApi;
use cuda_nccl::{ops, Bootstrap, Communicator, Group, NcclElement, NcclError, Operand, ReduceOp, UniqueId, F8E4M3, F8E5M2};

fn gpu_count() -> usize {
    let Ok(api) = DriverApi::load_libcuda() else { return 0 };
    let mut count = 0;
    // SAFETY: cuInit takes flags 0; cuDeviceGetCount writes one int.
    if unsafe { (api.cuInit)(0) == 0 && (api.cuDeviceGetCount)(&mut count) == 0 } {
        count as usize
    } else {
        0
    }
}

/// Emulates unless there is a GPU (or OXIDE_EMULATE says otherwise).
fn setup() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && gpu_count() == 0 {
            // SAFETY (edition 2021: safe): set once, before cuda-core reads it.
            std::env::set_var("OXIDE_EMULATE", "1");
        }
    });
}

fn emulated() -> bool {
    setup();
    CudaContext::new(0).unwrap().backend().is_emulated()
}

/// The world sizes to test: 1..=4 emulated, 1..=GPUs on a GPU.
fn world_sizes() -> Vec<usize> {
    if emulated() {
        vec![1, 2, 3, 4]
    } else {
        (1..=gpu_count().min(8)).collect()
    }
}

/// The context of rank `rank`: GPU `rank`, or the emulator's one device.
fn context(rank: usize) -> Arc<CudaContext> {
    CudaContext::new(if emulated() { 0 } else { rank }).unwrap()
}

/// Runs `f(comm, stream)` on `n` ranks, one thread each (init_rank).
fn on_ranks<R: Send>(n: usize, f: impl Fn(&Communicator, &Arc<CudaStream>) -> R + Sync) -> Vec<R> {
    setup();
    let id = UniqueId::new(&context(0)).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let f = &f;
                s.spawn(move || {
                    let ctx = context(rank);
                    let comm = Communicator::init_rank(&ctx, &id, rank, n).unwrap();
                    let stream = ctx.new_stream().unwrap();
                    f(&comm, &stream)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Element conversions for the test's own f64 reference.
trait Elem: NcclElement + PartialEq {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    const FLOAT: bool;
    /// The relative rounding of one step.
    const EPS: f64;
}
macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn of(x: f64) -> Self { x as $t }
            fn f64(self) -> f64 { self as f64 }
            const FLOAT: bool = false;
            const EPS: f64 = 0.0;
        }
    )*};
}
int_elem!(i8, u8, i32, u32, i64, u64);
impl Elem for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
    const FLOAT: bool = true;
    const EPS: f64 = f32::EPSILON as f64;
}
impl Elem for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn f64(self) -> f64 {
        self
    }
    const FLOAT: bool = true;
    const EPS: f64 = f64::EPSILON;
}
impl Elem for f16 {
    fn of(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn f64(self) -> f64 {
        self.to_f32() as f64
    }
    const FLOAT: bool = true;
    const EPS: f64 = 1.0 / 1024.0;
}
impl Elem for bf16 {
    fn of(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn f64(self) -> f64 {
        self.to_f32() as f64
    }
    const FLOAT: bool = true;
    const EPS: f64 = 1.0 / 128.0;
}
impl Elem for F8E4M3 {
    fn of(x: f64) -> Self {
        F8E4M3::from_f32(x as f32)
    }
    fn f64(self) -> f64 {
        self.to_f32() as f64
    }
    const FLOAT: bool = true;
    const EPS: f64 = 1.0 / 8.0;
}
impl Elem for F8E5M2 {
    fn of(x: f64) -> Self {
        F8E5M2::from_f32(x as f32)
    }
    fn f64(self) -> f64 {
        self.to_f32() as f64
    }
    const FLOAT: bool = true;
    const EPS: f64 = 1.0 / 4.0;
}

/// Rank `rank`'s input element `i`: 1 or 2, so that sums and products of
/// up to 4 ranks are exact in every type (fp8 included).
fn input(rank: usize, i: usize) -> f64 {
    ((rank * 7 + i * 3 + i / 5) % 2 + 1) as f64
}

/// The reduction of element `i` over `n` ranks, exactly (in f64).
fn reference(op: ReduceOp, n: usize, float: bool, i: usize) -> f64 {
    let xs = (0..n).map(|r| input(r, i));
    match op {
        ReduceOp::Sum => xs.sum(),
        ReduceOp::Prod => xs.product(),
        ReduceOp::Max => xs.fold(f64::MIN, f64::max),
        ReduceOp::Min => xs.fold(f64::MAX, f64::min),
        ReduceOp::Avg if float => xs.sum::<f64>() / n as f64,
        ReduceOp::Avg => (xs.sum::<f64>() / n as f64).trunc(),
    }
}

fn close<T: Elem>(got: T, want: f64, n: usize, what: &str) {
    let g = got.f64();
    // Exact but for Avg of floats (1/n is rounded, and the sum then).
    let tol = if T::FLOAT { 4.0 * n as f64 * T::EPS * want.abs().max(1.0) } else { 0.0 };
    assert!((g - want).abs() <= tol, "{what}: {} got {g}, want {want}", T::NAME);
}

const SIZES: [usize; 3] = [1, 5, 1031];

/// An operation NCCL lacks (Avg of fp8) is refused by every reduction
/// before NCCL is called, on every backend, leaving the outputs untouched.
fn avg_is_refused<T: Elem>(comm: &Communicator, send: &DeviceBuffer<T>, stream: &Arc<CudaStream>) {
    let len = send.len();
    let fill = vec![T::of(100.0); len * comm.size()];
    let mut out = DeviceBuffer::from_host(stream, &fill).unwrap();
    let refused = |r: Result<(), NcclError>, call: &str| match r {
        Err(NcclError::AvgOfFp8 { call: c, element }) => {
            assert_eq!((c, element), (call, T::NAME));
        }
        other => panic!("{call} Avg of {} must be refused, got {other:?}", T::NAME),
    };
    refused(comm.all_reduce(send.as_slice(), out.slice_mut(..len), ReduceOp::Avg, stream), "ncclAllReduce");
    refused(comm.all_reduce_in_place(out.slice_mut(..len), ReduceOp::Avg, stream), "ncclAllReduce");
    refused(comm.reduce(send.as_slice(), out.slice_mut(..len), ReduceOp::Avg, 0, stream), "ncclReduce");
    let big = DeviceBuffer::from_host(stream, &fill).unwrap();
    refused(comm.reduce_scatter(big.as_slice(), out.slice_mut(..len), ReduceOp::Avg, stream), "ncclReduceScatter");
    assert!(out.to_host_vec(stream).unwrap() == fill, "a refused call wrote");
}

/// Every collective of one element type on this rank, checked.
fn every_collective<T: Elem>(comm: &Communicator, stream: &Arc<CudaStream>) {
    let (rank, n) = (comm.rank(), comm.size());
    for len in SIZES {
        let host: Vec<T> = (0..len).map(|i| T::of(input(rank, i))).collect();
        let send = DeviceBuffer::from_host(stream, &host).unwrap();
        for op in ReduceOp::ALL {
            let what = format!("all_reduce {op:?} of {len} on rank {rank}/{n}");
            let mut recv = DeviceBuffer::<T>::zeroed(stream, len).unwrap();
            if !op.is_available_for::<T>() {
                avg_is_refused(comm, &send, stream);
                continue;
            }
            comm.all_reduce(send.as_slice(), recv.as_slice_mut(), op, stream).unwrap();
            comm.wait(stream).unwrap();
            for (i, &g) in recv.to_host_vec(stream).unwrap().iter().enumerate() {
                close(g, reference(op, n, T::FLOAT, i), n, &what);
            }
            // In place, and reduce to the last rank.
            let mut buf = DeviceBuffer::from_host(stream, &host).unwrap();
            comm.all_reduce_in_place(buf.as_slice_mut(), op, stream).unwrap();
            let root = n - 1;
            let mut out = DeviceBuffer::from_host(stream, &vec![T::of(100.0); len]).unwrap();
            comm.reduce(send.as_slice(), out.as_slice_mut(), op, root, stream).unwrap();
            comm.wait(stream).unwrap();
            let (buf, out) = (buf.to_host_vec(stream).unwrap(), out.to_host_vec(stream).unwrap());
            for i in 0..len {
                let want = reference(op, n, T::FLOAT, i);
                close(buf[i], want, n, &format!("in-place {what}"));
                close(out[i], if rank == root { want } else { 100.0 }, n, &format!("reduce {op:?} to {root}, rank {rank}"));
            }
        }
        // Broadcast from every root.
        for root in 0..n {
            let mut recv = DeviceBuffer::<T>::zeroed(stream, len).unwrap();
            comm.broadcast(send.as_slice(), recv.as_slice_mut(), root, stream).unwrap();
            let got = recv.to_host_vec(stream).unwrap();
            assert!(got.iter().enumerate().all(|(i, &g)| g == T::of(input(root, i))), "broadcast from {root}: {}", T::NAME);
        }
        // All-gather: rank order.
        let mut gathered = DeviceBuffer::<T>::zeroed(stream, len * n).unwrap();
        comm.all_gather(send.as_slice(), gathered.as_slice_mut(), stream).unwrap();
        let got = gathered.to_host_vec(stream).unwrap();
        for r in 0..n {
            for i in 0..len {
                assert!(got[r * len + i] == T::of(input(r, i)), "all_gather block {r} elem {i}: {}", T::NAME);
            }
        }
        // Reduce-scatter: block `rank` of the reduction of len × n elements.
        let big: Vec<T> = (0..len * n).map(|i| T::of(input(rank, i))).collect();
        let big = DeviceBuffer::from_host(stream, &big).unwrap();
        let mut block = DeviceBuffer::<T>::zeroed(stream, len).unwrap();
        comm.reduce_scatter(big.as_slice(), block.as_slice_mut(), ReduceOp::Sum, stream).unwrap();
        comm.wait(stream).unwrap();
        for (i, &g) in block.to_host_vec(stream).unwrap().iter().enumerate() {
            close(g, reference(ReduceOp::Sum, n, T::FLOAT, rank * len + i), n, "reduce_scatter");
        }
    }
}

fn every_type(comm: &Communicator, stream: &Arc<CudaStream>) {
    every_collective::<f32>(comm, stream);
    every_collective::<f64>(comm, stream);
    every_collective::<f16>(comm, stream);
    every_collective::<bf16>(comm, stream);
    every_collective::<i8>(comm, stream);
    every_collective::<u8>(comm, stream);
    every_collective::<i32>(comm, stream);
    every_collective::<u32>(comm, stream);
    every_collective::<i64>(comm, stream);
    every_collective::<u64>(comm, stream);
    let fp8 = comm.is_emulated() || cuda_nccl::version().is_ok_and(|v| v >= cuda_nccl::sys::FP8_VERSION);
    if fp8 {
        every_collective::<F8E4M3>(comm, stream);
        every_collective::<F8E5M2>(comm, stream);
    }
}

#[test]
fn every_collective_every_type_every_world_size() {
    for n in world_sizes() {
        on_ranks(n, every_type);
    }
}

#[test]
fn integer_sums_wrap_and_float_max_ignores_order() {
    on_ranks(world_sizes().into_iter().max().unwrap(), |comm, stream| {
        let n = comm.size() as u8;
        let mut buf = DeviceBuffer::from_host(stream, &[200u8, 255]).unwrap();
        comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap();
        assert_eq!(buf.to_host_vec(stream).unwrap(), [200u8.wrapping_mul(n), 255u8.wrapping_mul(n)]);
        let mut x = DeviceBuffer::from_host(stream, &[-(comm.rank() as f32), comm.rank() as f32]).unwrap();
        comm.all_reduce_in_place(x.as_slice_mut(), ReduceOp::Max, stream).unwrap();
        assert_eq!(x.to_host_vec(stream).unwrap(), [0.0, (comm.size() - 1) as f32]);
    });
}

#[test]
fn one_thread_drives_every_rank_in_a_group() {
    setup();
    let n = world_sizes().into_iter().max().unwrap();
    let contexts: Vec<_> = (0..n).map(context).collect();
    let comms = Communicator::init_all(&contexts).unwrap();
    let streams: Vec<_> = contexts.iter().map(|c| c.new_stream().unwrap()).collect();
    let mut bufs: Vec<_> =
        (0..n).map(|r| DeviceBuffer::from_host(&streams[r], &[r as i64 + 1, 10 * r as i64]).unwrap()).collect();
    let group = Group::start();
    for r in 0..n {
        comms[r].all_reduce_in_place(bufs[r].as_slice_mut(), ReduceOp::Sum, &streams[r]).unwrap();
    }
    group.end().unwrap();
    let want = [(1..=n as i64).sum::<i64>(), 10 * (0..n as i64).sum::<i64>()];
    for r in 0..n {
        assert_eq!(bufs[r].to_host_vec(&streams[r]).unwrap(), want);
    }
    // A ring: every rank sends to the next and receives from the previous,
    // all in one group.
    let sends: Vec<_> = (0..n).map(|r| DeviceBuffer::from_host(&streams[r], &[r as u32; 3]).unwrap()).collect();
    let mut recvs: Vec<_> = (0..n).map(|r| DeviceBuffer::<u32>::zeroed(&streams[r], 3).unwrap()).collect();
    cuda_nccl::group(|| {
        for r in 0..n {
            comms[r].send(sends[r].as_slice(), (r + 1) % n, &streams[r])?;
            comms[r].recv(recvs[r].as_slice_mut(), (r + n - 1) % n, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for r in 0..n {
        assert_eq!(recvs[r].to_host_vec(&streams[r]).unwrap(), [((r + n - 1) % n) as u32; 3]);
    }
}

#[test]
fn send_recv_exchange_between_threads() {
    let n = world_sizes().into_iter().max().unwrap();
    on_ranks(n, |comm, stream| {
        let (rank, n) = (comm.rank(), comm.size());
        let data: Vec<f64> = (0..100).map(|i| (rank * 1000 + i) as f64).collect();
        let send = DeviceBuffer::from_host(stream, &data).unwrap();
        let mut recv = DeviceBuffer::<f64>::zeroed(stream, 100).unwrap();
        let group = Group::start();
        comm.send(send.as_slice(), (rank + 1) % n, stream).unwrap();
        comm.recv(recv.as_slice_mut(), (rank + n - 1) % n, stream).unwrap();
        group.end().unwrap();
        comm.wait(stream).unwrap();
        let from = (rank + n - 1) % n;
        assert_eq!(recv.to_host_vec(stream).unwrap(), (0..100).map(|i| (from * 1000 + i) as f64).collect::<Vec<_>>());
    });
}

#[test]
fn split_into_even_and_odd_ranks() {
    let n = world_sizes().into_iter().max().unwrap();
    on_ranks(n, |comm, stream| {
        let rank = comm.rank();
        // Odd ranks in reverse order (key), and rank 0 takes no part.
        let color = if rank == 0 { None } else { Some((rank % 2) as u32) };
        let key = if rank % 2 == 1 { -(rank as i32) } else { rank as i32 };
        let Some(sub) = comm.split(color, key).unwrap() else {
            assert_eq!(rank, 0);
            return;
        };
        let members: Vec<usize> = (1..n).filter(|r| r % 2 == rank % 2).collect();
        assert_eq!(sub.size(), members.len());
        let mut order = members.clone();
        if rank % 2 == 1 {
            order.reverse();
        }
        assert_eq!(sub.rank(), order.iter().position(|&r| r == rank).unwrap());
        let mut buf = DeviceBuffer::from_host(stream, &[rank as i32]).unwrap();
        sub.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap();
        sub.wait(stream).unwrap();
        assert_eq!(buf.to_host_vec(stream).unwrap(), [members.iter().sum::<usize>() as i32]);
    });
}

#[test]
fn a_captured_all_reduce_replays_on_every_launch() {
    let n = world_sizes().into_iter().max().unwrap();
    on_ranks(n, |comm, stream| {
        let mut buf = DeviceBuffer::from_host(stream, &[1.0f32, 2.0]).unwrap();
        let capture = stream.begin_capture().unwrap();
        comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap();
        let graph = capture.end().unwrap();
        assert_eq!(buf.to_host_vec(stream).unwrap(), [1.0, 2.0], "a capture runs nothing");
        let exec = graph.instantiate().unwrap();
        exec.launch(stream).unwrap();
        exec.launch(stream).unwrap();
        comm.wait(stream).unwrap();
        let k = (comm.size() * comm.size()) as f32;
        assert_eq!(buf.to_host_vec(stream).unwrap(), [k, 2.0 * k]);
    });
}

#[test]
fn all_reduce_as_a_device_operation() {
    let n = world_sizes().into_iter().max().unwrap();
    let results = on_ranks(n, |comm, stream| {
        // The communicator moves into an Arc for the operation; `on_ranks`
        // lends it, so make a world of our own on a split.
        let comm = Arc::new(comm.split(Some(0), 0).unwrap().unwrap());
        let buf = DeviceBuffer::from_host(stream, &[comm.rank() as u64 + 1; 4]).unwrap();
        let buf = ops::all_reduce(&comm, buf, ReduceOp::Prod).sync_on(stream).unwrap();
        let buf = ops::broadcast(&comm, buf, 0).sync_on(stream).unwrap();
        buf.to_host_vec(stream).unwrap()
    });
    let fact: u64 = (1..=n as u64).product();
    assert!(results.iter().all(|r| r == &[fact; 4]), "{results:?}");
}

#[test]
fn lengths_roots_and_peers_are_checked_before_the_call() {
    on_ranks(1, |comm, stream| {
        let send = DeviceBuffer::from_host(stream, &[1.0f32; 4]).unwrap();
        let mut short = DeviceBuffer::<f32>::zeroed(stream, 3).unwrap();
        let e = comm.all_reduce(send.as_slice(), short.as_slice_mut(), ReduceOp::Sum, stream).unwrap_err();
        assert!(matches!(e, NcclError::LengthMismatch { operand: Operand::Recv, expected: 4, actual: 3, .. }), "{e:?}");
        assert!(e.to_string().contains("nothing was queued"), "{e}");
        let e = comm.all_gather(send.as_slice(), short.as_slice_mut(), stream).unwrap_err();
        assert!(matches!(e, NcclError::LengthMismatch { call: "ncclAllGather", expected: 4, .. }), "{e:?}");
        let e = comm.reduce_scatter(send.as_slice(), short.as_slice_mut(), ReduceOp::Sum, stream).unwrap_err();
        assert!(matches!(e, NcclError::LengthMismatch { operand: Operand::Send, expected: 3, actual: 4, .. }), "{e:?}");
        let mut out = DeviceBuffer::<f32>::zeroed(stream, 4).unwrap();
        let e = comm.broadcast(send.as_slice(), out.as_slice_mut(), 1, stream).unwrap_err();
        assert!(matches!(e, NcclError::RankOutOfRange { rank: 1, size: 1, .. }), "{e:?}");
        let e = comm.reduce(send.as_slice(), out.as_slice_mut(), ReduceOp::Max, 5, stream).unwrap_err();
        assert!(matches!(e, NcclError::RankOutOfRange { rank: 5, .. }), "{e:?}");
        let e = comm.send(send.as_slice(), 3, stream).unwrap_err();
        assert!(matches!(e, NcclError::RankOutOfRange { call: "ncclSend", rank: 3, .. }), "{e:?}");
        let e = comm.recv(out.as_slice_mut(), 0, stream).unwrap_err();
        assert!(matches!(e, NcclError::SelfPeer { call: "ncclRecv", rank: 0 }), "{e:?}");
        assert!(e.to_string().contains("same group"), "{e}");
        // Nothing was written by the refused calls.
        assert_eq!(out.to_host_vec(stream).unwrap(), [0.0; 4]);
        assert_eq!(short.to_host_vec(stream).unwrap(), [0.0; 3]);
        // A send to oneself inside a group, with its receive, is fine.
        let group = Group::start();
        comm.send(send.as_slice(), 0, stream).unwrap();
        comm.recv(out.as_slice_mut(), 0, stream).unwrap();
        group.end().unwrap();
        assert_eq!(out.to_host_vec(stream).unwrap(), [1.0; 4]);
    });
}

#[test]
fn bad_worlds_are_refused() {
    setup();
    let ctx = context(0);
    let id = UniqueId::new(&ctx).unwrap();
    let e = Communicator::init_rank(&ctx, &id, 2, 2).unwrap_err();
    assert!(matches!(e, NcclError::BadWorld(_)), "{e:?}");
    let e = Communicator::init_all(&[]).unwrap_err();
    assert!(matches!(e, NcclError::BadWorld(_)), "{e:?}");
    // The text form round-trips; a wrong one says what an id looks like.
    assert_eq!(id.to_string().parse::<UniqueId>().unwrap(), id);
    let e = "abc".parse::<UniqueId>().unwrap_err();
    assert!(e.to_string().contains("256 hex digits"), "{e}");
    if emulated() {
        // A GPU's id cannot meet an emulated rank.
        let gpu_id = UniqueId::from_bytes([7; 128]);
        let e = Communicator::init_rank(&ctx, &gpu_id, 0, 1).unwrap_err();
        assert!(matches!(e, NcclError::IdKind { id_emulated: false }), "{e:?}");
        assert!(e.to_string().contains("OXIDE_EMULATE"), "{e}");
    } else {
        // NCCL runs one rank per GPU.
        let e = Communicator::init_all(&[ctx.clone(), ctx.clone()]).unwrap_err();
        assert!(matches!(e, NcclError::DuplicateDevice { device: 0 }), "{e:?}");
    }
}

/// The emulator's stricter checks: what would hang or corrupt on NCCL.
mod emulated_only {
    use super::*;

    fn skip() -> bool {
        if !emulated() {
            eprintln!("skipped: emulator-only (NCCL would hang)");
            return true;
        }
        false
    }

    #[test]
    fn ranks_that_disagree_fail_with_both_calls_named() {
        if skip() {
            return;
        }
        let errors = on_ranks(2, |comm, stream| {
            let len = 4 + comm.rank(); // rank 1 passes a longer buffer
            let mut buf = DeviceBuffer::<f32>::zeroed(stream, len).unwrap();
            let e = comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap_err();
            // The communicator accepts no more work afterwards.
            let again = comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap_err();
            assert!(matches!(again, NcclError::CommFailed { .. }), "{again:?}");
            assert!(comm.async_error().is_err());
            e
        });
        for e in errors {
            let msg = e.to_string();
            assert!(matches!(e, NcclError::Mismatch(_)), "{e:?}");
            assert!(msg.contains("0: ncclAllReduce of 4 F32 Sum") && msg.contains("1: ncclAllReduce of 5 F32 Sum"), "{msg}");
        }
        // Different collectives in one round.
        let errors = on_ranks(2, |comm, stream| {
            let mut buf = DeviceBuffer::<i32>::zeroed(stream, 4).unwrap();
            if comm.rank() == 0 {
                comm.broadcast_in_place(buf.as_slice_mut(), 0, stream).unwrap_err()
            } else {
                comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Max, stream).unwrap_err()
            }
        });
        assert!(errors.iter().all(|e| e.to_string().contains("ncclBroadcast of 4 I32 root 0")), "{errors:?}");
    }

    #[test]
    fn a_send_and_receive_that_disagree_fail_on_both_sides() {
        if skip() {
            return;
        }
        let errors = on_ranks(2, |comm, stream| {
            if comm.rank() == 0 {
                let buf = DeviceBuffer::from_host(stream, &[1u32; 4]).unwrap();
                comm.send(buf.as_slice(), 1, stream).unwrap_err()
            } else {
                let mut buf = DeviceBuffer::<u32>::zeroed(stream, 5).unwrap();
                let e = comm.recv(buf.as_slice_mut(), 0, stream).unwrap_err();
                assert_eq!(buf.to_host_vec(stream).unwrap(), [0; 5], "nothing was received");
                e
            }
        });
        for e in errors {
            let msg = e.to_string();
            assert!(msg.contains("0: ncclSend of 4 U32 to 1") && msg.contains("1: ncclRecv of 5 U32 from 0"), "{msg}");
        }
    }

    #[test]
    fn a_rank_that_never_comes_is_a_timeout_naming_it() {
        if skip() {
            return;
        }
        let errors = on_ranks(3, |comm, stream| {
            comm.set_timeout(Duration::from_millis(300));
            let mut buf = DeviceBuffer::<u64>::zeroed(stream, 2).unwrap();
            if comm.rank() == 2 {
                // Rank 2 "dies": it never calls; its peers must not hang.
                std::thread::sleep(Duration::from_millis(600));
                return None;
            }
            Some(comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream).unwrap_err())
        });
        let timeouts = errors.iter().flatten().filter(|e| matches!(e, NcclError::Timeout { missing, .. } if missing == &[2])).count();
        let aborted = errors.iter().flatten().filter(|e| matches!(e, NcclError::Aborted { .. })).count();
        // The first to time out aborts the communicator; the other sees that.
        assert_eq!(timeouts + aborted, 2, "{errors:?}");
        assert!(timeouts >= 1, "{errors:?}");
        let msg = errors.iter().flatten().find(|e| matches!(e, NcclError::Timeout { .. })).unwrap().to_string();
        assert!(msg.contains("[2]") && msg.contains("aborted") && msg.contains("OXIDE_NCCL_TIMEOUT"), "{msg}");
    }

    #[test]
    fn one_thread_without_a_group_times_out_with_a_hint() {
        if skip() {
            return;
        }
        let ctx = context(0);
        let comms = Communicator::init_all(&[ctx.clone(), ctx.clone()]).unwrap();
        comms[0].set_timeout(Duration::from_millis(200));
        let stream = ctx.new_stream().unwrap();
        let mut buf = DeviceBuffer::<f32>::zeroed(&stream, 2).unwrap();
        let e = comms[0].all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, &stream).unwrap_err();
        assert!(matches!(e, NcclError::Timeout { ref missing, .. } if missing == &[1]), "{e:?}");
        // Rank 1's communicator was aborted by the timeout.
        let e = comms[1].all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, &stream).unwrap_err();
        assert!(matches!(e, NcclError::Aborted { by: Some(0) }), "{e:?}");
    }

    #[test]
    fn an_abort_fails_the_peers_pending_calls() {
        if skip() {
            return;
        }
        // Ranks owned here: rank 1 aborts while rank 0 waits.
        let ctx = context(0);
        let mut comms = Communicator::init_all(&[ctx.clone(), ctx.clone()]).unwrap();
        let rank1 = comms.pop().unwrap();
        let rank0 = comms.pop().unwrap();
        let waiter = std::thread::spawn(move || {
            let stream = ctx.new_stream().unwrap();
            let mut buf = DeviceBuffer::<f32>::zeroed(&stream, 2).unwrap();
            rank0.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, &stream).unwrap_err()
        });
        std::thread::sleep(Duration::from_millis(100));
        rank1.abort();
        let e = waiter.join().unwrap();
        assert!(matches!(e, NcclError::Aborted { by: Some(1) }), "{e:?}");
        assert!(e.to_string().contains("make a new one"), "{e}");
    }

    #[test]
    fn a_rank_that_left_fails_its_peers_at_once() {
        if skip() {
            return;
        }
        let ctx = context(0);
        let mut comms = Communicator::init_all(&[ctx.clone(), ctx.clone()]).unwrap();
        drop(comms.pop()); // rank 1 destroys its communicator
        let stream = ctx.new_stream().unwrap();
        let mut buf = DeviceBuffer::<f32>::zeroed(&stream, 2).unwrap();
        let start = std::time::Instant::now();
        let e = comms[0].all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, &stream).unwrap_err();
        assert!(e.to_string().contains("rank 1 destroyed its communicator"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}

/// The bootstraps, with ranks as threads (processes or machines in a job).
mod bootstrap {
    use super::*;

    fn meet(boot: impl Fn(usize) -> Bootstrap + Sync, n: usize) -> Vec<Result<i32, NcclError>> {
        setup();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|rank| {
                    let boot = &boot;
                    s.spawn(move || {
                        let ctx = context(rank);
                        let comm = Communicator::from_bootstrap(&ctx, &boot(rank), rank, n, Duration::from_secs(20))?;
                        let stream = ctx.new_stream()?;
                        let mut buf = DeviceBuffer::from_host(&stream, &[rank as i32 + 1])?;
                        comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, &stream)?;
                        Ok(buf.to_host_vec(&stream)?[0])
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    #[test]
    fn tcp_rendezvous() {
        let n = world_sizes().into_iter().max().unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let sums = meet(|_| Bootstrap::Tcp(addr.clone()), n);
        let want = (1..=n as i32).sum::<i32>();
        assert!(sums.iter().all(|s| s.as_ref().ok() == Some(&want)), "{sums:?}");
    }

    #[test]
    fn tcp_rendezvous_refuses_a_rank_with_another_world_size() {
        setup();
        let addr = format!("127.0.0.1:{}", free_port());
        let ctx = context(0);
        let (a, c) = (addr.clone(), ctx.clone());
        let server = std::thread::spawn(move || Bootstrap::Tcp(a).unique_id(&c, 0, 2, Duration::from_secs(10)));
        let e = Bootstrap::Tcp(addr).unique_id(&ctx, 1, 3, Duration::from_secs(10)).unwrap_err();
        assert!(e.to_string().contains("says the world has 3 ranks, rank 0 says 2"), "{e}");
        assert!(server.join().unwrap().is_err());
    }

    #[test]
    fn a_missing_rank_0_is_a_timeout_not_a_hang() {
        setup();
        let addr = format!("127.0.0.1:{}", free_port());
        let e = Bootstrap::Tcp(addr).unique_id(&context(0), 1, 2, Duration::from_millis(300)).unwrap_err();
        assert!(e.to_string().contains("could not reach rank 0"), "{e}");
        let path = std::env::temp_dir().join(format!("oxide-nccl-missing-{}", std::process::id()));
        let e = Bootstrap::File(path).unique_id(&context(0), 1, 2, Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("did not write"), "{e}");
    }

    #[test]
    fn file_rendezvous() {
        let n = world_sizes().into_iter().max().unwrap();
        let path = std::env::temp_dir().join(format!("oxide-nccl-id-{}-{}", std::process::id(), free_port()));
        let _ = std::fs::remove_file(&path);
        let sums = meet(|_| Bootstrap::File(path.clone()), n);
        let _ = std::fs::remove_file(&path);
        let want = (1..=n as i32).sum::<i32>();
        assert!(sums.iter().all(|s| s.as_ref().ok() == Some(&want)), "{sums:?}");
    }

    #[test]
    fn env_bootstrap_reads_a_launchers_id() {
        setup();
        let id = UniqueId::new(&context(0)).unwrap();
        // SAFETY (edition 2021: safe): a variable no other test reads.
        std::env::set_var("OXIDE_TEST_NCCL_ID", id.to_string());
        let got = Bootstrap::Env("OXIDE_TEST_NCCL_ID".into()).unique_id(&context(0), 0, 1, Duration::from_secs(1)).unwrap();
        assert_eq!(got, id);
        let e = Bootstrap::Env("OXIDE_TEST_NCCL_UNSET".into()).unique_id(&context(0), 0, 1, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("OXIDE_TEST_NCCL_UNSET"), "{e}");
        let e = Bootstrap::Alone.unique_id(&context(0), 0, 2, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("OXIDE_NCCL_ADDR"), "{e}");
    }
}

/// Regression: NCCL 2.28.3's one-rank `Avg` of f64 left the last element
/// of a 65,537-element buffer unwritten (0) on an H200; one rank's average
/// is asked of NCCL as its sum, which is a copy.
#[test]
fn one_rank_avg_writes_every_element() {
    on_ranks(1, |comm, stream| {
        for len in [65_535usize, 65_537, 65_539, (1 << 20) + 1] {
            let host: Vec<f64> = (0..len).map(|i| (i % 7) as f64 - 3.5).collect();
            let send = DeviceBuffer::from_host(stream, &host).unwrap();
            let mut recv = DeviceBuffer::<f64>::zeroed(stream, len).unwrap();
            comm.all_reduce(send.as_slice(), recv.as_slice_mut(), ReduceOp::Avg, stream).unwrap();
            let mut reduced = DeviceBuffer::<f64>::zeroed(stream, len).unwrap();
            comm.reduce(send.as_slice(), reduced.as_slice_mut(), ReduceOp::Avg, 0, stream).unwrap();
            let mut scattered = DeviceBuffer::<f64>::zeroed(stream, len).unwrap();
            comm.reduce_scatter(send.as_slice(), scattered.as_slice_mut(), ReduceOp::Avg, stream).unwrap();
            comm.wait(stream).unwrap();
            assert!(recv.to_host_vec(stream).unwrap() == host, "all_reduce Avg of {len}");
            assert!(reduced.to_host_vec(stream).unwrap() == host, "reduce Avg of {len}");
            assert!(scattered.to_host_vec(stream).unwrap() == host, "reduce_scatter Avg of {len}");
        }
    });
}
