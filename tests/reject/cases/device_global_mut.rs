//! A device global cannot be `static mut`: kernels share it, so safe code
//! changes it through atomics and a plain value only under `unsafe`.
use cuda_device::{device_global, kernel, thread, DisjointSlice};

#[device_global]
static mut LIMIT: u32 = 10;

#[kernel]
pub fn clamp(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = idx.get() as u32;
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR a #[device_global] static cannot be `mut`: kernels share it, so safe code changes it through atomics
