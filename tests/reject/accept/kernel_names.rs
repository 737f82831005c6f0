//! Not an error: every way a Rust programmer names a kernel in
//! `cuda_launch!`. A `use` of it (the kernel's name travels with its entry),
//! a glob import, a path, a renamed import, a generic kernel with and
//! without a turbofish, a raw identifier, and a kernel declared inside the
//! function that launches it.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_launch, load_kernel_module};

mod hashing {
    use cuda_device::{kernel, thread, DisjointSlice};

    #[kernel]
    pub fn hash_all(input: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = input[i.get()].wrapping_mul(0x9e37_79b9);
        }
    }

    #[kernel]
    pub fn fill<T: Copy>(value: T, mut out: DisjointSlice<T>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = value;
        }
    }

    #[kernel]
    pub fn r#type(mut out: DisjointSlice<u32>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 7;
        }
    }
}

mod globbed {
    pub use super::hashing::*;
}

use hashing::hash_all;
use hashing::hash_all as renamed;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let config = LaunchConfig::for_num_elems(64);
    let input = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    cuda_launch! { kernel: hash_all, stream: stream, module: module, config: config, args: [&input, &mut out] }.unwrap();
    cuda_launch! { kernel: renamed, stream: stream, module: module, config: config, args: [&input, &mut out] }.unwrap();
    cuda_launch! { kernel: hashing::hash_all, stream: stream, module: module, config: config, args: [&input, &mut out] }.unwrap();
    cuda_launch! { kernel: globbed::hash_all, stream: stream, module: module, config: config, args: [&input, &mut out] }.unwrap();
    cuda_launch! { kernel: hashing::fill, stream: stream, module: module, config: config, args: [3u32, &mut out] }.unwrap();
    cuda_launch! { kernel: hashing::fill::<u32>, stream: stream, module: module, config: config, args: [3u32, &mut out] }.unwrap();
    cuda_launch! { kernel: hashing::r#type, stream: stream, module: module, config: config, args: [&mut out] }.unwrap();

    #[cuda_device::kernel]
    fn local(mut out: cuda_device::DisjointSlice<u32>) {
        if let Some(o) = out.get_mut(cuda_device::thread::index_1d()) {
            *o = 1;
        }
    }
    cuda_launch! { kernel: local, stream: stream, module: module, config: config, args: [&mut out] }.unwrap();
}
