//! A host-code kernel that writes past the end of a `DeviceBuffer` through a
//! raw pointer fails its launch with `CUDA_ERROR_ILLEGAL_ADDRESS`, as on the
//! GPU, naming the address, and the host heap stays intact (it used to be
//! corrupted: `munmap_chunk(): invalid pointer` at a later free). Emulated
//! as host code where there is no GPU (one test: the fault poisons the
//! context).

use std::ffi::c_void;

use cuda_core::emulator::HostKernel;
use cuda_core::{launch_kernel_with_host_code, CudaContext, DeviceBuffer, LaunchConfig};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry overrun(.param .u64 overrun_out)
{
    ret;
}
"#;

#[test]
fn a_raw_pointer_overrun_is_an_illegal_address_not_a_corrupted_heap() {
    if std::env::var_os("OXIDE_EMULATE").is_none() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "host");
    }
    let ctx = CudaContext::new(0).unwrap();
    if !ctx.backend().is_emulated() || cuda_core::emulator::mode() != Some(cuda_core::emulator::Mode::HostCode) {
        eprintln!("skipped: runs in host-code emulation only");
        return;
    }
    let stream = ctx.default_stream();
    let out = DeviceBuffer::<u64>::zeroed(&stream, 512).unwrap();
    let base = out.device_ptr() as usize;
    // Every thread writes one element past the end (4096 bytes: the guard page).
    let overrun = || {
        // SAFETY: none: the kernel's bug under test.
        unsafe { (base as *mut u64).add(512).write(0xdead) };
    };
    let host = HostKernel::from_fn(&overrun).named("overrun");
    let module = ctx.load_module_ptx(PTX).unwrap();
    let f = module.function("overrun").unwrap();
    let mut ptr = out.device_ptr();
    let mut params = [&mut ptr as *mut u64 as *mut c_void];
    let config = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `overrun` takes one pointer; the host code ignores its parameters.
    unsafe { launch_kernel_with_host_code(&f, config, &stream, &mut params, &host) }.unwrap();
    let e = ctx.synchronize().unwrap_err();
    assert_eq!(e.code(), 700, "{e}");
    assert!(e.is_sticky(), "{e}");
    let text = e.to_string();
    assert!(text.contains(&format!("illegal address {:#x}: 0 bytes past the end of the device allocation of 4096 bytes at {base:#x}", base + 4096)), "{text}");
    // The host heap is intact.
    let v: Vec<Vec<u64>> = (0..1000).map(|i| vec![i; 64 + i as usize]).collect();
    assert_eq!(v[999].len(), 64 + 999);
}
