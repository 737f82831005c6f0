//! Two launch-wide row lengths, one per get_mut: thread (0, 1) writes
//! element `a` through the first and thread (a, 0) could write it through
//! the second when `b > a`. Every 2-D index a kernel writes through must use
//! one row length.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn two_widths(a: usize, b: usize, mut out: DisjointSlice<u32>) {
    if thread::threadIdx_x() % 2 == 0 {
        if let Some(o) = out.get_mut(thread::index_2d(a)) {
            *o = 1;
        }
    } else if let Some(o) = out.get_mut(thread::index_2d(b)) {
        *o = 2;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: two_widths, stream: stream, module: module,
        config: LaunchConfig { grid_dim: (1, 1, 1), block_dim: (64, 16, 1), shared_mem_bytes: 0 },
        args: [32usize, 64usize, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::two_widths` hands DisjointSlice::get_mut thread indices with different row lengths (src/main.rs:
//~ NOTE every 2-D and 3-D index a kernel writes through must use the same row length
