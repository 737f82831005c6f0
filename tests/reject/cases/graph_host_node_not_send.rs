//! A graph's host node runs on a driver thread at every launch: a function
//! holding an `Rc` (not `Send`) is refused.
use cuda_core::{CudaContext, Graph};
use std::rc::Rc;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let count = Rc::new(std::cell::Cell::new(0));
    let mut graph = Graph::new(&ctx).unwrap();
    graph.add_host(&[], move || count.set(count.get() + 1)).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot be sent between threads safely
