//! A conditional node's body cannot escape the function that made it while
//! its graph stays behind: the body's lifetime is the graph's borrow.
use cuda_core::{BodyGraph, CudaContext, Graph};

fn body_of_a_local_graph() -> BodyGraph<'static> {
    let ctx = CudaContext::new(0).unwrap();
    let mut graph = Graph::new(&ctx).unwrap();
    let c = graph.condition(Some(0)).unwrap();
    let (_node, body) = graph.add_conditional_if(&[], &c).unwrap();
    body
}

fn main() {
    let _ = body_of_a_local_graph();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot return value referencing local variable `graph`
