//! A host slice of a managed buffer held across a launch that writes the
//! buffer: the kernel would change the memory under the host's `&[f32]`
//! (and the host would read half-written values). `host()` borrows the
//! buffer, so the launch's `slice_mut` is a borrow error.
use cuda_core::{CudaContext, LaunchConfig, ManagedBuffer};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn double(mut v: DisjointSlice<f32>) {
    if let Some(x) = v.get_mut(thread::index_1d()) {
        *x *= 2.0;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut m = ManagedBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let seen = m.host().unwrap();
    cuda_launch! {
        kernel: double, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice_mut(m)]
    }
    .unwrap();
    assert_eq!(seen[0], 1.0);
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot borrow `m` as mutable because it is also borrowed as immutable
