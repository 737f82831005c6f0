//! Installing emulator hooks is unsafe: a hook that answered the thread
//! coordinates wrongly (here: outside any launch, the same for everyone)
//! would let host code make any ThreadIndex it likes.
use cuda_device::emulation::{install, Hooks};
use cuda_device::thread;

fn zero() -> u32 {
    0
}
fn one() -> u32 {
    1
}
static FORGED: Hooks = Hooks {
    thread_idx_x: Some(zero),
    block_idx_x: Some(zero),
    block_dim_x: Some(one),
    ..Hooks::NONE
};

fn main() {
    install(&FORGED);
    let _idx = thread::index_1d();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR call to unsafe function `install` is unsafe and requires unsafe
