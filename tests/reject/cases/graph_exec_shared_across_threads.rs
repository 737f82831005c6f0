//! An instantiated graph may move to another thread but not be launched from
//! two at once (the driver does not synchronise an exec's launches and
//! updates): `GraphExec` is not `Sync`.
use cuda_core::{CudaContext, Graph};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let exec = Graph::new(&ctx).unwrap().instantiate().unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| exec.launch(&stream).unwrap());
        exec.launch(&stream).unwrap();
    });
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot be shared between threads safely
