//! A graph's kernel node is a typed launch: a `DeviceBuffer<u32>` passed for
//! a `&[f32]` parameter is refused as in a launch on a stream.
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
    let input = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let mut graph = Graph::new(&ctx).unwrap();
    graph
        .add_kernel(&[], |s| {
            cuda_launch! {
                kernel: scale, stream: s, module: module,
                config: LaunchConfig::for_num_elems(64),
                args: [&input, 2.5f32, &mut out]
            }
        })
        .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `&DeviceBuffer<u32>` cannot be passed for a kernel parameter of type
