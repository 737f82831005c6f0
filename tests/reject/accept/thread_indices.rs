//! Not an error: thread indices whose row lengths are one value for the
//! whole launch. A constant, a kernel parameter, arithmetic on parameters
//! and the grid and block sizes, a slice's length, the same value through
//! a helper that is not inlined, a 3-D index beside a 2-D one of the same
//! row length, a 1-D index beside them, and generic code over the kinds.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::thread::{self, Dimensions, ThreeD, TwoD};
use cuda_device::{kernel, DisjointSlice, ThreadIndex};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn constant_rows(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_2d(64)) {
        *o = 1;
    }
}

#[kernel]
pub fn parameter_rows(cols: u32, planes: usize, mut out: DisjointSlice<u32>) {
    let row_len = cols as usize * 2;
    let idx = if thread::threadIdx_z() == 0 {
        thread::index_2d(row_len).get()
    } else {
        thread::index_3d(row_len, planes).get()
    };
    if thread::blockIdx_z() == 0 {
        if let Some(o) = out.get_mut(thread::index_2d(row_len)) {
            *o = idx as u32;
        }
    } else if let Some(o) = out.get_mut(thread::index_3d(row_len, planes)) {
        *o = 3;
    }
}

/// The launch's width in threads, from the grid and block sizes.
#[kernel]
pub fn launch_width(mut out: DisjointSlice<u32>) {
    let width = thread::gridDim_x() as usize * thread::blockDim_x() as usize;
    if let Some(o) = out.get_mut(thread::index_2d(width)) {
        *o = 1;
    }
}

/// The row length from the slice's own length: rows of `len / rows`.
#[kernel]
pub fn rows_of_the_slice(rows: usize, mut out: DisjointSlice<u32>) {
    let row_len = out.len() / rows.max(1);
    if let Some(o) = out.get_mut(thread::index_2d(row_len)) {
        *o = 1;
    }
}

#[inline(never)]
fn store<D: Dimensions>(out: &mut DisjointSlice<u32>, idx: ThreadIndex<D>, value: u32) {
    if let Some(o) = out.get_mut(idx) {
        *o = value;
    }
}

#[kernel]
pub fn through_a_helper(row_len: usize, mut out: DisjointSlice<u32>) {
    let idx: ThreadIndex<TwoD> = thread::index_2d(row_len);
    store(&mut out, idx, 1);
    let idx: ThreadIndex<ThreeD> = thread::index_3d(row_len, 4);
    store(&mut out, idx, 2);
    let idx: ThreadIndex = thread::index_1d();
    store(&mut out, idx, 3);
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let flat = LaunchConfig::for_num_elems(4096);
    let square = LaunchConfig { grid_dim: (4, 4, 1), block_dim: (16, 16, 1), shared_mem_bytes: 0 };
    cuda_launch! { kernel: constant_rows, stream: stream, module: module, config: square, args: [&mut out] }.unwrap();
    cuda_launch! { kernel: parameter_rows, stream: stream, module: module, config: square, args: [16u32, 8usize, &mut out] }
        .unwrap();
    cuda_launch! { kernel: launch_width, stream: stream, module: module, config: square, args: [&mut out] }.unwrap();
    cuda_launch! { kernel: rows_of_the_slice, stream: stream, module: module, config: square, args: [64usize, &mut out] }
        .unwrap();
    cuda_launch! { kernel: through_a_helper, stream: stream, module: module, config: flat, args: [64usize, &mut out] }
        .unwrap();
}
