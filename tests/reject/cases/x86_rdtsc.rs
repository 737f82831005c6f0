//! _rdtsc is an x86 instruction.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn cycles(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let t = unsafe { core::arch::x86_64::_rdtsc() };
    if let Some(o) = out.get_mut(idx) {
        *o = t as u32;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: cycles, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `core::core_arch::x86::rdtsc::_rdtsc` cannot be called on the GPU: x86 intrinsics are instructions of the host CPU, which the GPU does not have
//~ AT src/main.rs:9:22
//~ NOTE in kernel `reject_case::cycles`
//~ NOTE call chain: `reject_case::cycles` → `core::core_arch::x86::rdtsc::_rdtsc`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
