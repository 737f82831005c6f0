//! A block of 100 threads for cuda-prims' block operations: they take a
//! multiple of 32 threads, at most 1024.
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_prims::{block::Block, op::Max};

#[kernel]
pub fn block_max(input: &[u32], mut out: DisjointSlice<u32>) {
    shared! { static TEMP: [u32; 32]; }
    let idx = thread::index_1d();
    let x = input.get(idx.get()).copied().unwrap_or(0);
    let m = Block::<100>::reduce(x, Max, &TEMP);
    if let Some(o) = out.get_mut(idx) {
        *o = m;
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR BLOCK must be a multiple of 32 in 32..=1024
