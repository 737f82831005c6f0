//! A ThreadIndex cannot be a kernel argument: every thread would receive the
//! same one. The host cannot make one (the constructors answer only inside
//! a launch), and one taken out of an emulated launch (here: made by a
//! closure run as emulated threads, on the host's own thread) is refused by
//! the launch because it is not `Unpin`.
use cuda_core::emulator::{self, Grid, HostKernel};
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};
use std::cell::Cell;

#[kernel]
pub fn everyone_writes(idx: ThreadIndex, mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(idx) {
        *o += 1;
    }
}

thread_local! {
    static STOLEN: Cell<Option<ThreadIndex>> = const { Cell::new(None) };
}

fn main() {
    let grid = Grid { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let steal = || STOLEN.with(|s| s.set(Some(thread::index_1d())));
    emulator::run(grid, &HostKernel::from_fn(&steal)).unwrap();
    let idx = STOLEN.with(|s| s.get()).unwrap();

    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: everyone_writes, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [idx, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `PhantomPinned` cannot be unpinned
//~ NOTE required because it appears within the type `ThreadIndex`
//~ NOTE required for `ThreadIndex` to implement `KernelArg<ThreadIndex>`
