//! Rust asm! written for x86 cannot be compiled for the GPU.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn with_asm(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let mut x: u32 = idx.get() as u32;
    unsafe { core::arch::asm!("add {0:e}, 1", inout(reg) x) };
    if let Some(o) = out.get_mut(idx) {
        *o = x;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: with_asm, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR inline assembly (asm!) is written for the host CPU and cannot be compiled for the GPU
//~ AT src/main.rs:10:14
//~ NOTE in kernel `reject_case::with_asm`
//~ NOTE call chain: `reject_case::with_asm`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
