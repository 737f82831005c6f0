//! Not an error: a kernel that takes a graph condition's handle and sets it
//! from one thread, inside `unsafe` with its contract. The PTX calls CUDA's
//! `cudaGraphSetConditional`, which the driver resolves at load (no library
//! is linked for it).
use cuda_core::{CudaContext, Graph, LaunchConfig};
use cuda_device::graph::{self, ConditionHandle};
use cuda_device::{kernel, thread};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn stop_after(limit: u32, round: u32, keep_going: ConditionHandle) {
    if thread::index_1d().get() == 0 {
        // SAFETY: one thread sets it, in a node of the handle's graph.
        unsafe { graph::set_condition(keep_going, (round < limit) as u32) };
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let c = g.condition(Some(1)).unwrap();
    let (_, mut body) = g.add_conditional_while(&[], &c).unwrap();
    body.add_kernel(&[], |s| {
        cuda_launch! { kernel: stop_after, stream: s, module: module,
                       config: LaunchConfig::for_num_elems(32), args: [4u32, 0u32, c.handle()] }
    })
    .unwrap();
}

//~ PTX call.uni cudaGraphSetConditional, (param0, param1);
