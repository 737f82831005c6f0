//! Shared by the cuda-core tests that run on the GPU where there is one and
//! on the CPU emulator (device code) elsewhere: the backend choice and the
//! hand-written `affine` kernel, `p[i] = p[i] * mul + add` for `i < n`.

use std::sync::{Arc, Once};

use cuda_core::{launch_kernel, CudaContext, CudaFunction, CudaStream, DeviceBuffer, DriverError, LaunchConfig};
use cuda_driver_sys::DriverApi;

pub const AFFINE_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry affine(
    .param .u64 affine_p,
    .param .u32 affine_n,
    .param .u32 affine_mul,
    .param .u32 affine_add
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [affine_p];
    ld.param.u32 %r1, [affine_n];
    ld.param.u32 %r2, [affine_mul];
    ld.param.u32 %r3, [affine_add];
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, %tid.x;
    mad.lo.s32 %r7, %r4, %r5, %r6;
    setp.ge.u32 %p1, %r7, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r7, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r8, [%rd4];
    mad.lo.s32 %r9, %r8, %r2, %r3;
    st.global.u32 [%rd4], %r9;
DONE:
    ret;
}
"#;

/// The context (the emulator's without a GPU), a new stream (one that may
/// capture), and the `affine` kernel of a module of the caller's own
/// (dropped with it: cuda-core puts the unload off past other tests'
/// captures).
pub fn setup() -> (Arc<CudaContext>, Arc<CudaStream>, CudaFunction) {
    static BACKEND: Once = Once::new();
    BACKEND.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
            // SAFETY (edition 2021: safe): before any test of this binary
            // reaches cuda-core (they all wait for this `Once`).
            std::env::set_var("OXIDE_EMULATE", "ptx");
        }
    });
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let f = ctx.load_module_ptx(AFFINE_PTX).unwrap().function("affine").unwrap();
    (ctx, stream, f)
}

/// Queues `p = p * mul + add` over the whole of `p` on `stream` (a raw
/// launch of `affine`, whose buffer the caller keeps alive as long as the
/// work or the graphs that record it). Not every test binary that shares
/// this module launches it that way.
#[allow(dead_code)]
pub fn affine(f: &CudaFunction, stream: &CudaStream, p: &DeviceBuffer<u32>, mul: u32, add: u32) -> Result<(), DriverError> {
    // SAFETY: `p` is `p.len()` elements of live device memory, kept by the
    // caller until the work is done.
    unsafe { affine_raw(f, stream, p.device_ptr(), p.len(), mul, add) }
}

/// Queues `affine` over the `len` u32s at device address `ptr`.
///
/// # Safety
/// `ptr` is `len` u32s of device memory the kernel may write, alive until
/// the work is done.
#[allow(dead_code)]
pub unsafe fn affine_raw(f: &CudaFunction, stream: &CudaStream, ptr: u64, len: usize, mul: u32, add: u32) -> Result<(), DriverError> {
    let (mut ptr, mut n, mut mul, mut add) = (ptr, len as u32, mul, add);
    let mut params = [
        (&mut ptr as *mut u64).cast(),
        (&mut n as *mut u32).cast(),
        (&mut mul as *mut u32).cast(),
        (&mut add as *mut u32).cast(),
    ];
    // SAFETY: four parameters of the kernel's types; the memory is the
    // caller's promise.
    unsafe { launch_kernel(f, LaunchConfig::for_num_elems(n), stream, &mut params) }
}
