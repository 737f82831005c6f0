//! A kernel cannot return a value: results go through an output parameter.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn answer(mut out: DisjointSlice<u32>) -> u32 {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = 1;
    }
    42
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: answer, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR a `#[kernel]` cannot return a value (found `-> u32`); remove the return type and write results through an output parameter such as `mut out: DisjointSlice<T>`
//~ AT src/main.rs:7:47
