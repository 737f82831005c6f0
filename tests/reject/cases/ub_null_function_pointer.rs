//! A call through a null function pointer on every path of a kernel is
//! undefined behaviour the compiler can see: a compile error.
use cuda_device::{kernel, thread, DisjointSlice};

#[kernel]
pub fn call_null(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    #[allow(invalid_value)]
    let f: fn(u32) -> u32 = unsafe { core::mem::transmute::<usize, fn(u32) -> u32>(0) };
    let v = f(idx.get() as u32);
    if let Some(o) = out.get_mut(idx) {
        *o = v;
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::call_null` cannot run without undefined behaviour
//~ NOTE in kernel `reject_case::call_null`
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
