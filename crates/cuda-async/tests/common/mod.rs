//! Shared by the GPU test programs: the GPU or a visible skip, and a
#![allow(dead_code)] // each test program uses a part
//! hand-written PTX module (no device linker needed).

use std::ffi::c_void;
use std::sync::Arc;

use cuda_async::{launch, DeviceOperation};
use cuda_core::{launch_kernel, CudaContext, CudaModule, DeviceBuffer, ErrorKind, LaunchConfig};

/// The context of GPU 0, or `None` (after saying so) without driver or GPU.
pub fn gpu(test: &str) -> Option<Arc<CudaContext>> {
    match CudaContext::new(0) {
        Ok(ctx) => Some(ctx),
        Err(e) if matches!(e.kind(), ErrorKind::DriverNotFound | ErrorKind::NoDevice) => {
            eprintln!("skipped: no CUDA driver/GPU ({test}): {e}");
            None
        }
        Err(e) => panic!("CudaContext::new(0) failed unexpectedly: {e}"),
    }
}

/// `spin(out, ns)`: thread 0 waits `ns` nanoseconds (`%globaltimer`), then
/// writes 42 to `out[0]`. `spin_timed(out, ns)`: the same on a `u64` buffer,
/// and it also writes the GPU's clock when it started and when it stopped
/// waiting into `out[1]` and `out[2]`. `fault()`: traps (a sticky context
/// error).
pub const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry spin(
    .param .u64 spin_out,
    .param .u64 spin_ns
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [spin_out];
    ld.param.u64 %rd2, [spin_ns];
    mov.u64 %rd3, %globaltimer;
WAIT:
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p2, %rd5, %rd2;
    @%p2 bra WAIT;
    cvta.to.global.u64 %rd6, %rd1;
    mov.u32 %r1, 42;
    st.global.u32 [%rd6], %r1;
DONE:
    ret;
}

.visible .entry spin_timed(
    .param .u64 spin_timed_out,
    .param .u64 spin_timed_ns
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE_TIMED;
    ld.param.u64 %rd1, [spin_timed_out];
    ld.param.u64 %rd2, [spin_timed_ns];
    mov.u64 %rd3, %globaltimer;
WAIT_TIMED:
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p2, %rd5, %rd2;
    @%p2 bra WAIT_TIMED;
    cvta.to.global.u64 %rd6, %rd1;
    mov.u64 %rd7, 42;
    st.global.u64 [%rd6], %rd7;
    st.global.u64 [%rd6+8], %rd3;
    st.global.u64 [%rd6+16], %rd4;
DONE_TIMED:
    ret;
}

.visible .entry fault()
{
    trap;
}
"#;

pub fn module(ctx: &Arc<CudaContext>) -> Arc<CudaModule> {
    ctx.load_module_ptx(PTX).expect("the test PTX loads")
}

/// An operation that keeps the GPU busy `ms` milliseconds, then writes 42
/// into `out[0]`; hands `out` back.
pub fn spin(
    module: &Arc<CudaModule>,
    out: DeviceBuffer<u32>,
    ms: u64,
) -> impl DeviceOperation<Output = DeviceBuffer<u32>> {
    spin_entry(module, "spin", out, ms)
}

/// `spin` that also records when it ran: `out` (three `u64`s at least)
/// comes back holding 42, then the GPU clock (`%globaltimer`, ns) at the
/// kernel's start and at its end.
pub fn spin_timed(
    module: &Arc<CudaModule>,
    out: DeviceBuffer<u64>,
    ms: u64,
) -> impl DeviceOperation<Output = DeviceBuffer<u64>> {
    assert!(out.len() >= 3, "spin_timed writes three u64s");
    spin_entry(module, "spin_timed", out, ms)
}

/// Launches the PTX entry `entry(out, ns)` (`spin` or `spin_timed`) on one
/// warp and hands `out` back.
fn spin_entry<T: cuda_core::DeviceRepr + Send + 'static>(
    module: &Arc<CudaModule>,
    entry: &'static str,
    mut out: DeviceBuffer<T>,
    ms: u64,
) -> impl DeviceOperation<Output = DeviceBuffer<T>> {
    let module = module.clone();
    launch(move |stream| {
        let f = module.function(entry)?;
        let (mut ptr, mut ns) = (out.device_ptr(), ms * 1_000_000);
        let mut params = [&mut ptr as *mut u64 as *mut c_void, &mut ns as *mut u64 as *mut c_void];
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: both entries take (u64 pointer, u64); `spin` writes one
        // u32 and `spin_timed` three u64s, which `out` holds (their callers
        // check); `out` travels on with the operation's output, so it
        // outlives the kernel.
        unsafe { launch_kernel(&f, cfg, stream, &mut params)? };
        let _ = &mut out;
        Ok(out)
    })
}
