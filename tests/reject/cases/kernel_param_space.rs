//! A kernel whose parameters need more than the 4 KiB parameter space is a
//! compile error naming the kernel and its byte count, with what to do.
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn big_table(table: [u64; 512], mut out: DisjointSlice<u64>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = table[idx.get() % 512];
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::big_table` takes 4112 bytes of parameters; a kernel's parameter space holds 4096
//~ NOTE pass large values through device memory instead
