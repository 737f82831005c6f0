//! A graph cannot be instantiated while one of its conditional bodies is
//! still being filled: the body holds the graph's mutable borrow, so the
//! exec always sees the finished body (and the graph keeps what it uses).
use cuda_core::{CudaContext, Graph};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let mut graph = Graph::new(&ctx).unwrap();
    let c = graph.condition(Some(0)).unwrap();
    let (_node, mut body) = graph.add_conditional_if(&[], &c).unwrap();
    let _exec = graph.instantiate().unwrap();
    body.add_empty(&[]).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot borrow `graph` as immutable because it is also borrowed as mutable
