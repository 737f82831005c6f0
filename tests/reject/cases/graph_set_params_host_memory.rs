//! New arguments for an instantiated graph's kernel node get the checks of a
//! typed launch: host memory (`&Vec<f32>`) is refused.
use cuda_core::{CudaContext, DeviceBuffer, Graph, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = input[idx.get()] * factor;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let host = vec![1.0f32; 64];
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let config = LaunchConfig::for_num_elems(64);
    let mut graph = Graph::new(&ctx).unwrap();
    let node = graph
        .add_kernel(&[], |s| {
            cuda_launch! { kernel: scale, stream: s, module: module, config: config, args: [&input, 2.5f32, &mut out] }
        })
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.set_kernel_params(node, |s| {
        cuda_launch! { kernel: scale, stream: s, module: module, config: config, args: [&host, 2.5f32, &mut out] }
    })
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `&Vec<f32>` cannot be passed for a kernel parameter of type
