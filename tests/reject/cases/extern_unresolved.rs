//! A kernel calls a function of an `extern "C"` block that no device source
//! of the build defines (no build script names a .cu file): the error names
//! the kernel and the symbol, and says how to name the CUDA C++ file.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

extern "C" {
    fn cxx_scale(x: f32) -> f32;
}

#[kernel]
pub fn scaled(input: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = unsafe { cxx_scale(input[idx.get()]) };
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &[1.0f32; 64]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: scaled, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(input), slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `cxx_scale` cannot be called on the GPU: its body is not part of any crate the device linker was given
//~ AT src/main.rs:16:23
//~ NOTE in kernel `reject_case::scaled`
//~ NOTE `cxx_scale` is declared in an `extern` block, and no device source of this build defines it
//~ NOTE cargo::rustc-link-arg=--oxide-device-source=src/FILE.cu
//~ NOTE call chain: `reject_case::scaled` → `cxx_scale`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
