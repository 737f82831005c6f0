//! A kernel is a free function of a module: a method (with `self`) has no
//! receiver the GPU could be handed.
use cuda_device::{kernel, thread, DisjointSlice};

pub struct Scaler {
    pub factor: f32,
}

impl Scaler {
    #[kernel]
    pub fn scale(&self, mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        if let Some(o) = out.get_mut(idx) {
            *o *= self.factor;
        }
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR a `#[kernel]` cannot take `self`: kernels are free functions; move it out of the `impl` block
