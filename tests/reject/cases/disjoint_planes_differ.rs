//! `index_3d` with two numbers of rows per plane: (z * rows + y) * row_len
//! + x meets across planes when `rows` differs between threads.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn two_depths(row_len: usize, rows: usize, mut out: DisjointSlice<u32>) {
    let idx = if thread::threadIdx_z() == 0 {
        thread::index_3d(row_len, rows)
    } else {
        thread::index_3d(row_len, rows + 1)
    };
    if let Some(o) = out.get_mut(idx) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: two_depths, stream: stream, module: module,
        config: LaunchConfig { grid_dim: (1, 1, 1), block_dim: (8, 8, 4), shared_mem_bytes: 0 },
        args: [8usize, 8usize, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::two_depths` hands DisjointSlice::get_mut
//~ ERROR oxide could not compile the kernels for the GPU
