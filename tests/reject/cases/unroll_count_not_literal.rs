//! unroll!'s count must be an integer literal (or `full`): a variable is refused
//! at the macro, saying what to write.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn sum_all(data: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let mut s = 0u32;
    let n = 4;
    cuda_device::unroll!(n, for k in 0..data.len() {
        s = s.wrapping_add(data[k] ^ idx.get() as u32);
    });
    if let Some(o) = out.get_mut(idx) {
        *o = s;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let data = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: sum_all, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(data), slice_mut(out)]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR unroll!: the count must be an integer literal or `full`; found `n`
//~ AT src/main.rs:12:26
