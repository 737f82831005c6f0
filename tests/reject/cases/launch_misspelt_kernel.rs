//! A misspelt kernel name in `cuda_launch!`: the error names what the user
//! wrote and suggests the kernel, never a generated name.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn scale(factor: f32, mut out: DisjointSlice<f32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o *= factor;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: scal, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [2.0f32, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `scal`
//~ AT src/main.rs:20:17
