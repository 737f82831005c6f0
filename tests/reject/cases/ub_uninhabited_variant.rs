//! A value of an uninhabited enum variant, made by `transmute` on every
//! path: the compiler proves the kernel can never run without undefined
//! behaviour and removes its body. That is a compile error, not a kernel
//! that silently does nothing.
use cuda_device::{kernel, thread, DisjointSlice};

pub enum Never {}

#[repr(u32)]
pub enum Value {
    Number(u32),
    Impossible(Never),
}

#[kernel]
pub fn read_impossible(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    // Discriminant 1 is `Impossible`, which no value can have.
    let v: Value = unsafe { core::mem::transmute::<(u32, u32), Value>((1, 7)) };
    let n = match v {
        Value::Number(n) => n,
        Value::Impossible(never) => match never {},
    };
    if let Some(o) = out.get_mut(idx) {
        *o = n;
    }
}

fn main() {}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::read_impossible` cannot run without undefined behaviour
//~ NOTE the compiler proved that every run of the kernel reaches undefined behaviour
//~ NOTE to see the line of the undefined behaviour, build with OXIDE_DEVICE_DEBUG=lines
//~ ERROR oxide could not compile the kernels for the GPU (1 error)
