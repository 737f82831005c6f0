//! A row length read from device memory: nothing says every thread reads
//! the same value, so the device linker cannot prove one row length.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn width_from_buffer(widths: &[usize], mut out: DisjointSlice<u32>) {
    let row_len = widths[thread::threadIdx_x() as usize % widths.len()];
    if let Some(o) = out.get_mut(thread::index_2d(row_len)) {
        *o = 1;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let widths = DeviceBuffer::from_host(&stream, &[32usize, 64]).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: width_from_buffer, stream: stream, module: module,
        config: LaunchConfig { grid_dim: (1, 1, 1), block_dim: (64, 16, 1), shared_mem_bytes: 0 },
        args: [&widths, &mut out]
    }
    .unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR kernel `reject_case::width_from_buffer` hands DisjointSlice::get_mut an index from thread::index_2d whose row length is not the same in every thread of the launch: it is read from memory
//~ AT src/main.rs:10:26
