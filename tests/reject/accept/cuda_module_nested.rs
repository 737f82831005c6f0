//! Not an error: `#[cuda_module]` writes launchers for kernels of nested
//! inline modules too, each module in its own `launch`, with the nested
//! module's names (here its own element type) in scope.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_module, load_kernel_module};

#[cuda_module]
pub mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    #[kernel]
    pub fn top(mut out: DisjointSlice<u32>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 1;
        }
    }

    pub mod inner {
        use cuda_device::{kernel, thread, DisjointSlice};
        pub type Count = u32;

        #[kernel]
        pub fn nested(step: Count, mut out: DisjointSlice<Count>) {
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o += step;
            }
        }

        pub mod deeper {
            use cuda_device::{kernel, thread, DisjointSlice};
            #[kernel]
            pub fn deepest(mut out: DisjointSlice<u32>) {
                if let Some(o) = out.get_mut(thread::index_1d()) {
                    *o *= 2;
                }
            }
        }
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    let config = LaunchConfig::for_num_elems(64);
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    kernels::launch::top(&module, &stream, config, &mut out).unwrap();
    kernels::inner::launch::nested(&module, &stream, config, 2u32, &mut out).unwrap();
    kernels::inner::deeper::launch::deepest(&module, &stream, config, &mut out).unwrap();
}
