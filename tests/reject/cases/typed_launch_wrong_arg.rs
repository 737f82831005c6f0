//! A `&Vec<f32>` (host memory) passed to a `#[cuda_module]` typed launcher
//! for a `&[f32]` kernel parameter.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_module, load_kernel_module};

#[cuda_module]
mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    #[kernel]
    pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        if let Some(elem) = out.get_mut(idx) {
            *elem = input[idx.get()] * factor;
        }
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let host = vec![1.0f32; 64];
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    kernels::launch::scale(&module, &stream, LaunchConfig::for_num_elems(64), &host, 2.5f32, &mut out).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `&Vec<f32>` cannot be passed for a kernel parameter of type
//~ AT src/main.rs:25
