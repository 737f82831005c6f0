//! A conditional node's body borrows its graph: the graph cannot be dropped
//! (nor used otherwise) while the body is being filled, so a body never
//! outlives the graph that owns it.
use cuda_core::{CudaContext, Graph};

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let mut graph = Graph::new(&ctx).unwrap();
    let keep_going = graph.condition(Some(1)).unwrap();
    let (_node, mut body) = graph.add_conditional_while(&[], &keep_going).unwrap();
    drop(graph);
    body.add_empty(&[]).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot move out of `graph` because it is borrowed
