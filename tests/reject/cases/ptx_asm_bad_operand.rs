//! ptx_asm! takes only the operand types PTX has registers for: a u8 is refused
//! at its type, saying which types work.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn with_ptx(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let byte = idx.get() as u8;
    let r: u32;
    unsafe { ptx_asm!("cvt.u32.u8 {d}, {b};", d = out(u32) r, b = in(u8) byte) };
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
//~ ERROR ptx_asm!: `u8` cannot be a PTX operand; the operand types are bool, u16
//~ AT src/main.rs:12:70
