//! A kernel without `self` written in an `impl` block: its launch handle is a
//! type named like it, which an `impl` cannot hold. One error says so and
//! what to do (before, rustc's parser errors about a generated `struct`).
use cuda_device::{kernel, thread, DisjointSlice};

pub struct Scaler;

impl Scaler {
    #[kernel]
    pub fn scale(factor: f32, mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        if let Some(o) = out.get_mut(idx) {
            *o *= factor;
        }
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR a `#[kernel]` must be a free function, but `scale` is in an `impl` block
//~ AT src/main.rs:10:12
