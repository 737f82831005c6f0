//! Kernels that no host code launches are compiled and checked all the same,
//! and `cargo oxide inspect` shows their PTX: a program with no launch at
//! all, a kernel with a lifetime parameter, and one in a private module.
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn never_launched(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 7;
    }
}

#[kernel]
pub fn borrowed_input<'a>(input: &'a [u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = input[idx.get()] + 1;
    }
}

mod inner {
    use cuda_device::{kernel, thread, DisjointSlice};

    #[kernel]
    fn private_kernel(mut out: DisjointSlice<f32>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 0.5;
        }
    }
}

fn main() {
    println!("nothing is launched");
}

// Expected in `cargo oxide inspect` (tests/reject/run.sh); the names are
// substrings of both manglings (legacy `_ZN…35__oxide…`, v0 `_R…35___oxide…`):
//~ PTX _oxide_kernel_entry_never_launched
//~ PTX _oxide_kernel_entry_borrowed_input
//~ PTX _oxide_kernel_entry_private_kernel
