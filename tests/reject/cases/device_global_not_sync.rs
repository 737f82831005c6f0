//! A device global is shared by every thread of every launch: its type must
//! be `Sync`, so a `Cell` (unsynchronised interior mutability) is refused.
use core::cell::Cell;
use cuda_device::{device_global, kernel, thread, DisjointSlice};

#[device_global]
static NEXT: Cell<u32> = Cell::new(0);

#[kernel]
pub fn take(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = NEXT.get();
        NEXT.set(*o + 1);
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR `Cell<u32>` cannot be shared between threads safely
//~ AT src/main.rs:6
//~ NOTE required for `DeviceGlobal<Cell<u32>>` to implement `Sync`
