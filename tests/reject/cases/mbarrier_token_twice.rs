//! An mbarrier arrival token is waited for once: `wait_for` takes it by
//! value and it is neither `Copy` nor `Clone`, so a second wait on the same
//! arrival (which would wait for a phase that is long over, or block a
//! thread that should have arrived again) does not compile.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{self, MBarrier};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn twice(mut out: DisjointSlice<u32>) {
    shared! { static BAR: [u64; 1]; }
    // SAFETY: BAR is used only as this mbarrier, initialised by thread 0.
    let bar = unsafe { MBarrier::at(BAR.as_mut_ptr()) };
    if thread::threadIdx_x() == 0 {
        unsafe { bar.init(256) };
        mbarrier::fence_init();
    }
    thread::sync_threads();
    let arrival = bar.arrive_token();
    bar.wait_for(arrival);
    bar.wait_for(arrival);
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: twice, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR use of moved value: `arrival`
//~ AT src/main.rs:22
