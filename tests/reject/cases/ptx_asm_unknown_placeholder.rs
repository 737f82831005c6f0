//! A placeholder of ptx_asm! that names no operand is refused at the template,
//! listing the operands there are.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn with_ptx(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let x = idx.get() as u32;
    let r: u32;
    unsafe { ptx_asm!("add.u32 {d}, {x}, {y};", d = out(u32) r, x = in(u32) x) };
    if let Some(o) = out.get_mut(idx) {
        *o = r;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: with_ptx, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR ptx_asm!: the template names `{y}`, but no operand is called `y` (the named operands: d, x)
//~ AT src/main.rs:12:23
