//! A kernel that no host code launches is still compiled and checked: the
//! Vec in it needs the host allocator.
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn never_launched(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let v: Vec<u32> = vec![1; 4];
    if let Some(o) = out.get_mut(idx) {
        *o = v[0];
    }
}

fn main() {
    println!("no launch here");
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `alloc::vec::from_elem
//~ ERROR cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
//~ AT src/main.rs:8:23
//~ NOTE in kernel `reject_case::never_launched`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
