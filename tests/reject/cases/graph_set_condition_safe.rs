//! Setting a condition is `unsafe`: concurrent calls for one handle are
//! undefined behaviour (CUDA's documentation), and which threads call it is
//! a run-time property of the kernel the compiler cannot see.
use cuda_core::{CudaContext, Graph, LaunchConfig};
use cuda_device::graph::{self, ConditionHandle};
use cuda_device::kernel;
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn every_thread_sets(c: ConditionHandle) {
    graph::set_condition(c, 1);
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let c = g.condition(Some(0)).unwrap();
    g.add_kernel(&[], |s| {
        cuda_launch! { kernel: every_thread_sets, stream: s, module: module,
                       config: LaunchConfig::for_num_elems(256), args: [c.handle()] }
    })
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR call to unsafe function `set_condition` is unsafe and requires unsafe
//~ AT src/main.rs:11:5
