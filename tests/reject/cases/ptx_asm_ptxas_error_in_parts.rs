//! PTX that ptxas rejects in one kernel of several is an error at the Rust
//! line of the ptx_asm!, as with one kernel: the kernels are assembled in
//! parts (Link/SplitByKernel.cpp), and where a part fails ptxas runs on the
//! whole PTX, whose lines the message points into.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

/// A kernel ptxas accepts, so the module has parts that assemble.
#[kernel]
pub fn plain(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let x = idx.get() as u32;
    if let Some(o) = out.get_mut(idx) {
        *o = x * 3;
    }
}

#[kernel]
pub fn with_ptx(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let x = idx.get() as u32;
    let r: u32;
    unsafe { ptx_asm!("add.s33 {d}, {x}, {x};", d = out(u32) r, x = in(u32) x) };
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
    cuda_launch! {
        kernel: plain, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR ptxas rejected the inline PTX of this ptx_asm!
//~ AT src/main.rs:24:14
//~ NOTE the PTX line: `add.s33
