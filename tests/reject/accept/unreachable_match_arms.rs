//! Undefined behaviour only behind a condition is the user's promise, not an
//! error: a `match` whose impossible arm is `unreachable_unchecked()`, and a
//! kernel that always panics (a located report at run time), still build.
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn pick(mut out: DisjointSlice<u32>, k: u32) {
    let idx = thread::index_1d();
    let v = match k % 3 {
        0 => 10,
        1 => 20,
        2 => 30,
        // SAFETY: `k % 3` is below 3.
        _ => unsafe { core::hint::unreachable_unchecked() },
    };
    if let Some(o) = out.get_mut(idx) {
        *o = v;
    }
}

#[kernel]
pub fn not_yet(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 1;
    }
    unimplemented!("the second pass");
}

fn main() {}
