//! The host cannot read a device global that holds a pointer: its value is a
//! device address, meaningless on the host (the type is not `GlobalData`).
use cuda_core::CudaContext;
use cuda_device::{device_global, kernel, thread, DisjointSlice};
use cuda_host::load_kernel_module;

#[device_global]
static WINDOW: &'static [u32] = &[1, 2, 3];

#[kernel]
pub fn sum(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = WINDOW.iter().sum();
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let _window = module.read_global(&WINDOW).unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR the trait bound `&'static [u32]: GlobalData` is not satisfied
