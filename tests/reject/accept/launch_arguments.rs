//! Not an error: the argument forms a launch accepts. `&buffer` for `&[T]`,
//! `&mut buffer` for `DisjointSlice<T>` and `&mut [T]`, views of part of a
//! buffer, the `slice(..)` / `slice_mut(..)` forms, scalars by value, and a
//! closure (Copy) for a generic `F: Fn` parameter. A `ManagedBuffer` goes
//! wherever a `DeviceBuffer` does, in every form, and a host slice of it
//! may be read between launches.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig, ManagedBuffer};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(elem) = out.get_mut(idx) {
        *elem = input[idx.get()] * factor;
    }
}

#[kernel]
pub fn map<F: Fn(f32) -> f32 + Copy>(f: F, input: &[f32], out: &mut [f32]) {
    let i = thread::index_1d().get();
    if i == 0 {
        for (o, x) in out.iter_mut().zip(input) {
            *o = f(*x);
        }
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &[1.0f32; 64]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let config = LaunchConfig::for_num_elems(64);
    cuda_launch! {
        kernel: scale, stream: stream, module: module, config: config,
        args: [&input, 2.5f32, &mut out]
    }
    .unwrap();
    cuda_launch! {
        kernel: scale, stream: stream, module: module, config: config,
        args: [input.slice(..32), 2.5f32, out.slice_mut(32..)]
    }
    .unwrap();
    cuda_launch! {
        kernel: scale, stream: stream, module: module, config: config,
        args: [slice(input), 2.5f32, slice_mut(out)]
    }
    .unwrap();
    let factor = 3.0f32;
    cuda_launch! {
        kernel: map, stream: stream, module: module, config: config,
        args: [move |x| x * factor, &input, &mut out]
    }
    .unwrap();
    let managed_in = ManagedBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let mut managed_out = ManagedBuffer::<f32>::zeroed(&ctx, 64).unwrap();
    cuda_launch! {
        kernel: scale, stream: stream, module: module, config: config,
        args: [&managed_in, 2.5f32, &mut managed_out]
    }
    .unwrap();
    let seen = managed_out.host().unwrap()[0];
    let read_only = managed_in.host().unwrap();
    cuda_launch! {
        kernel: scale, stream: stream, module: module, config: config,
        args: [slice(managed_in), seen, slice_mut(managed_out)]
    }
    .unwrap();
    assert_eq!(read_only[0], 1.0); // a read-only launch may overlap a host read
    cuda_launch! {
        kernel: map, stream: stream, module: module, config: config,
        args: [move |x| x * factor, &managed_in, &mut out]
    }
    .unwrap();
}
