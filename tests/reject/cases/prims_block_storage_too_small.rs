//! A block scan of 256 threads given a shared array of 4 elements: it
//! needs one per warp (`Block::<256>::WARPS`, 8).
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_prims::{block::Block, op::Sum};

#[kernel]
pub fn prefix(input: &[u32], mut out: DisjointSlice<u32>) {
    shared! { static TEMP: [u32; 4]; }
    let idx = thread::index_1d();
    let x = input.get(idx.get()).copied().unwrap_or(0);
    let (before, _) = Block::<256>::exclusive_scan(x, Sum, &TEMP);
    if let Some(o) = out.get_mut(idx) {
        *o = before;
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR the shared array of a block scan needs Block::<BLOCK>::WARPS elements
