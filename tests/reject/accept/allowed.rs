//! Not an error: what the rejection rules must let through. Panics with
//! formatted messages (`assert!`, `Result::unwrap` with a `Debug` error,
//! `expect`), a `&dyn Trait` call, atomics on device memory, reading a
//! constant static.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use core::sync::atomic::{AtomicU32, Ordering};

static TABLE: [u32; 4] = [1, 2, 3, 4];

trait Shape { fn area(&self) -> u32; }
struct Sq(u32);
impl Shape for Sq { fn area(&self) -> u32 { self.0 * self.0 } }

#[inline(never)]
fn pick(d: &dyn Shape) -> u32 { d.area() }

#[kernel]
pub fn ok(input: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    assert!(i < 1 << 20, "index {} too large", i);
    let v = input.get(i).copied().unwrap_or(0);
    let r: Result<u32, core::num::TryFromIntError> = u32::try_from(i as u64);
    let w = r.unwrap();
    let x: u8 = u8::try_from(w & 0x7f).expect("fits");
    let local = AtomicU32::new(0);
    local.fetch_add(1, Ordering::Relaxed);
    let s = Sq(x as u32);
    let a = pick(&s);
    debug_assert_eq!(a, (x as u32) * (x as u32));
    if let Some(o) = out.get_mut(idx) {
        *o = v + TABLE[i % 4] + local.load(Ordering::Relaxed) + a;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &vec![1u32; 64]).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: ok, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(input), slice_mut(out)]
    }
    .unwrap();
}
