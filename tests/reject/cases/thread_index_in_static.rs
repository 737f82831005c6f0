//! No lock or other static holds a ThreadIndex (it is not `Send`): a kernel
//! publishing its index for the others to take would hand them one element.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};
use std::sync::Mutex;

static LAST: Mutex<Option<ThreadIndex>> = Mutex::new(None);

#[kernel]
pub fn publish(mut out: DisjointSlice<u32>) {
    *LAST.lock().unwrap() = Some(thread::index_1d());
    if let Some(o) = LAST.lock().unwrap().and_then(|idx| out.get_mut(idx)) {
        *o += 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: publish, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [&mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `*const ()` cannot be sent between threads safely
//~ NOTE required because it appears within the type `ThreadIndex`
