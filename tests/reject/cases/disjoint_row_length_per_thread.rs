//! A row length that differs between threads: `index_2d` is `y * row_len +
//! x`, so thread (0, 1) with row length 32 and thread (32, 0) with 64 would
//! both get element 32. The device linker requires one value per launch.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn ragged(mut out: DisjointSlice<u32>) {
    let row_len = 32 + 32 * (thread::threadIdx_x() as usize % 2);
    if let Some(o) = out.get_mut(thread::index_2d(row_len)) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: ragged, stream: stream, module: module,
        config: LaunchConfig { grid_dim: (1, 1, 1), block_dim: (64, 16, 1), shared_mem_bytes: 0 },
        args: [&mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::ragged` hands DisjointSlice::get_mut an index from thread::index_2d whose row length is not the same in every thread of the launch
//~ AT src/main.rs:11:26
//~ NOTE threads that pass different row lengths can compute the same index
//~ ERROR oxide could not compile the kernels for the GPU
