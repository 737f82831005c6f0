//! A kernel fault poisons the context it happened in, and what comes after
//! depends on the backend: on the CPU emulator only that context (after
//! every handle of it is dropped, the next `CudaContext::new` gets a fresh,
//! working one); on a GPU the process (the driver refuses every new context
//! after a fault, and the error says to go on in a new process).
//!
//! Runs on the GPU where there is one, else on the CPU emulator in the mode
//! the test binary names (`OXIDE_EMULATE`, set before the first driver
//! call): `tests/fault.rs` host code, `tests/fault_device_code.rs` device
//! code. One test in each binary: the fault poisons every context of the
//! device alive at that moment, so nothing may run beside it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use cuda_core::emulator::{HostKernel, Mode};
use cuda_core::{launch_kernel_with_host_code, Backend, CudaContext, DeviceBuffer, LaunchConfig};
use cuda_driver_sys::DriverApi;

/// `fault` traps; `ones` sets `out[threadIdx.x] = 1`.
const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry fault()
{
    trap;
}

.visible .entry ones(.param .u64 ones_out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [ones_out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    mov.u32 %r2, 1;
    st.global.u32 [%rd2], %r2;
    ret;
}
"#;

fn config() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 }
}

/// The scenario, emulated in `mode` where there is no GPU.
pub fn a_fault_poisons_its_context_and_on_a_gpu_its_process(mode: Mode) {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", mode.env_value());
    }
    let panics = || panic!("boom in an emulated kernel");
    let fault_host = HostKernel::from_fn(&panics).named("fault");
    {
        let ctx = CudaContext::new(0).unwrap();
        let stream = ctx.default_stream();
        let module = ctx.load_module_ptx(PTX).unwrap();
        let fault = module.function("fault").unwrap();
        let mut params: [*mut c_void; 0] = [];
        // SAFETY: `fault` takes no parameters; the host code ignores them.
        unsafe { launch_kernel_with_host_code(&fault, config(), &stream, &mut params, &fault_host) }.unwrap();
        let e = ctx.synchronize().unwrap_err();
        assert!(e.is_sticky(), "{e}");
        assert!(e.to_string().contains("kernel `fault` failed"), "{e}");
        if ctx.backend() == Backend::Emulator(Mode::DeviceCode) {
            // The VM's report: the thread and the instruction.
            assert!(e.to_string().contains("thread (0, 0, 0) of block (0, 0, 0) executed `trap`"), "{e}");
        }
        // A second handle of the device shares the poisoned context.
        let again = CudaContext::new(0).unwrap();
        assert_eq!(again.synchronize().unwrap_err().code(), e.code());
        let copy = DeviceBuffer::from_host(&again.default_stream(), &[1u32, 2, 3]).unwrap_err();
        assert!(copy.is_sticky(), "{copy}");
    }
    // Every handle is gone.
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            assert!(!cuda_core::emulator::is_active(), "the emulator refused a new context: {e}");
            assert!(e.is_sticky(), "{e}");
            assert!(e.to_string().contains("Run what follows in a new process"), "{e}");
            return; // a GPU: nothing more can run in this process
        }
    };
    assert!(ctx.backend().is_emulated(), "a GPU gave a new context after a fault");
    ctx.synchronize().unwrap();
    let stream = ctx.default_stream();
    let out = DeviceBuffer::<u32>::zeroed(&stream, 32).unwrap();
    let module = ctx.load_module_ptx(PTX).unwrap();
    let ones = module.function("ones").unwrap();
    let calls = AtomicU32::new(0);
    let count = || {
        calls.fetch_add(1, Relaxed);
    };
    let ones_host = HostKernel::from_fn(&count).named("ones");
    let mut ptr = out.device_ptr();
    let mut params = [&mut ptr as *mut u64 as *mut c_void];
    // SAFETY: `ones` takes one device pointer to 32 u32s; the host code
    // ignores its parameters.
    unsafe { launch_kernel_with_host_code(&ones, config(), &stream, &mut params, &ones_host) }.unwrap();
    let read = out.to_host_vec(&stream).unwrap();
    match ctx.backend() {
        Backend::Emulator(Mode::HostCode) => {
            assert_eq!(calls.load(Relaxed), 32);
            // A raw launch has no host code to run: refused, saying what runs it.
            // SAFETY: `ones` takes one device pointer to 32 u32s.
            let e = unsafe { cuda_core::launch_kernel(&ones, config(), &stream, &mut params) }.unwrap_err();
            assert!(e.to_string().contains("device-code mode (OXIDE_EMULATE=1 or OXIDE_EMULATE=ptx)"), "{e}");
        }
        Backend::Gpu | Backend::Emulator(Mode::DeviceCode) => {
            assert_eq!(read, vec![1; 32]);
            assert_eq!(calls.load(Relaxed), 0, "the PTX ran, not the host code");
            // A raw launch hands over the PTX alone, which is all device code needs.
            let raw = DeviceBuffer::<u32>::zeroed(&stream, 32).unwrap();
            let mut ptr = raw.device_ptr();
            let mut params = [&mut ptr as *mut u64 as *mut c_void];
            // SAFETY: `ones` takes one device pointer to 32 u32s.
            unsafe { cuda_core::launch_kernel(&ones, config(), &stream, &mut params) }.unwrap();
            assert_eq!(raw.to_host_vec(&stream).unwrap(), vec![1; 32]);
        }
    }
}
