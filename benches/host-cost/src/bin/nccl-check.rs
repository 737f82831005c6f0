//! nccl-check: every collective and point-to-point call of cuda-nccl on
//! NCCL's path (the stub driver's and stub NCCL's communicator of one
//! rank, as run.sh sets them up; not the emulator's), in its usual form
//! and in each misuse its checks refuse, one line per call with its
//! result. The lines of two builds compared (`diff`) show whether a change
//! to the calls' paths changed any answer: `bash benches/host-cost/run.sh
//! --check`.

use cuda_core::{CudaContext, DeviceBuffer};
use cuda_nccl::{group, Communicator, ReduceOp, F8E4M3};
use std::process::ExitCode;

fn de(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn run() -> Result<(), String> {
    let ctx = CudaContext::new(0).map_err(de)?;
    let st = &ctx.new_stream().map_err(de)?;
    let comms = Communicator::init_all(std::slice::from_ref(&ctx)).map_err(de)?;
    let comm = &comms[0];
    if comm.is_emulated() {
        return Err("the emulator's communicator: run through run.sh --check (the stub driver and NCCL)".into());
    }
    // A stream of a second context of the same device (another `Arc`, the
    // same driver context), and a second stream of this one.
    let other_ctx = CudaContext::new(0).map_err(de)?;
    let other_ctx_stream = other_ctx.new_stream().map_err(de)?;
    let st2 = st.context().new_stream().map_err(de)?;
    let mut a = DeviceBuffer::<f32>::zeroed(st, 256).map_err(de)?;
    let mut b = DeviceBuffer::<f32>::zeroed(st, 256).map_err(de)?;
    let mut f8a = DeviceBuffer::<F8E4M3>::zeroed(st, 256).map_err(de)?;
    let mut f8b = DeviceBuffer::<F8E4M3>::zeroed(st, 256).map_err(de)?;
    let (rank, size) = (comm.rank(), comm.size());
    let show = |what: &str, r: Result<(), cuda_nccl::NcclError>| println!("{what:<44} {r:?}");
    for (name, stream) in [("own stream", st), ("second stream", &st2), ("other context's stream", &other_ctx_stream)] {
        println!("-- {name} (rank {rank} of {size})");
        show("all_reduce", comm.all_reduce(a.as_slice(), b.as_slice_mut(), ReduceOp::Sum, stream));
        show("all_reduce Avg", comm.all_reduce(a.as_slice(), b.as_slice_mut(), ReduceOp::Avg, stream));
        show("all_reduce short recv", comm.all_reduce(a.as_slice(), b.slice_mut(..128), ReduceOp::Sum, stream));
        show("all_reduce fp8 Max", comm.all_reduce(f8a.as_slice(), f8b.as_slice_mut(), ReduceOp::Max, stream));
        show("all_reduce fp8 Avg", comm.all_reduce(f8a.as_slice(), f8b.as_slice_mut(), ReduceOp::Avg, stream));
        show("all_reduce_in_place", comm.all_reduce_in_place(a.as_slice_mut(), ReduceOp::Prod, stream));
        show("all_reduce_in_place fp8 Avg", comm.all_reduce_in_place(f8a.as_slice_mut(), ReduceOp::Avg, stream));
        show("broadcast", comm.broadcast(a.as_slice(), b.as_slice_mut(), 0, stream));
        show("broadcast root = size", comm.broadcast(a.as_slice(), b.as_slice_mut(), size, stream));
        show("broadcast short recv", comm.broadcast(a.as_slice(), b.slice_mut(..128), 0, stream));
        show("broadcast_in_place", comm.broadcast_in_place(a.as_slice_mut(), 0, stream));
        show("broadcast_in_place root = size", comm.broadcast_in_place(a.as_slice_mut(), size, stream));
        show("reduce", comm.reduce(a.as_slice(), b.as_slice_mut(), ReduceOp::Min, 0, stream));
        show("reduce root = size", comm.reduce(a.as_slice(), b.as_slice_mut(), ReduceOp::Min, size, stream));
        show("reduce short recv", comm.reduce(a.as_slice(), b.slice_mut(..128), ReduceOp::Min, 0, stream));
        show("reduce fp8 Avg", comm.reduce(f8a.as_slice(), f8b.as_slice_mut(), ReduceOp::Avg, 0, stream));
        show("all_gather", comm.all_gather(a.as_slice(), b.slice_mut(..256 * size), stream));
        show("all_gather short recv", comm.all_gather(a.as_slice(), b.slice_mut(..128), stream));
        show("reduce_scatter", comm.reduce_scatter(a.as_slice(), b.slice_mut(..256 / size), ReduceOp::Max, stream));
        show("reduce_scatter short send", comm.reduce_scatter(a.slice(..128), b.as_slice_mut(), ReduceOp::Max, stream));
        show("reduce_scatter fp8 Avg", comm.reduce_scatter(f8a.as_slice(), f8b.as_slice_mut(), ReduceOp::Avg, stream));
        show("send to self", comm.send(a.as_slice(), rank, stream));
        show("send to self in a group", group(|| comm.send(a.as_slice(), rank, stream)));
        show("send peer = size", comm.send(a.as_slice(), size, stream));
        show("recv from self", comm.recv(a.as_slice_mut(), rank, stream));
        show("recv from self in a group", group(|| comm.recv(a.as_slice_mut(), rank, stream)));
        show("recv peer = size", comm.recv(a.as_slice_mut(), size, stream));
        show("all_reduce in a group", group(|| comm.all_reduce(a.as_slice(), b.as_slice_mut(), ReduceOp::Sum, stream)));
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nccl-check: {e}");
            ExitCode::FAILURE
        }
    }
}
