//! A kernel whose parameters need more than the parameter space (4096 bytes
//! below PTX ISA 8.1, 32764 from it on: sm_90) is a compile error naming the
//! kernel and its byte count, with what to do. This one is past both, so the
//! case holds on every target (compiler/test/kernel-param-space.ll checks
//! each target's limit).
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn big_table(table: [u64; 4100], mut out: DisjointSlice<u64>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = table[idx.get() % 4100];
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::big_table` takes 32816 bytes of parameters; a kernel's parameter space holds
//~ NOTE that is the parameter space of sm_
//~ NOTE pass large values through device memory instead
