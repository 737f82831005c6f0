//! Not an error: instructions the default target (sm_80) lacks, behind
//! tests of the target that it fails: `elect.sync` and the bulk L2
//! prefetch (sm_90) behind `arch::compute_capability() >= 90`, wgmma
//! (sm_90a) behind `arch::has(Feature::Wgmma)`. The device linker folds the
//! tests and deletes those branches, so the kernel builds; `cargo oxide
//! inspect` shows the fallback's `prefetch.L2` (the same calls outside such
//! a test: tests/reject/cases/fp8_old_arch.rs and the lit tests).
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::arch::{self, Feature};
use cuda_device::{cache, kernel, thread, warp, wgmma, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

//~ PTX prefetch.L2 [
#[kernel]
pub fn adaptive(data: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let mut v = data[idx.get()];
    if arch::compute_capability() >= 90 {
        cache::prefetch_l2_bulk(data);
        v += warp::elect_one(warp::FULL_MASK) as u32 as f32;
    } else {
        cache::prefetch_l2(data.as_ptr());
    }
    if arch::has(Feature::Wgmma) {
        let mut acc = wgmma::zeroed::<32>();
        // SAFETY: never reached on this target; on sm_90a the descriptors
        // would have to describe shared tiles.
        unsafe { wgmma::m64n64k16_f32_bf16(&mut acc, 0, 0, false) };
        v += acc[0];
    }
    if let Some(o) = out.get_mut(idx) {
        *o = v;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let data = DeviceBuffer::from_host(&stream, &[1.0f32; 64]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: adaptive, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(data), slice_mut(out)]
    }
    .unwrap();
}
