//! A kernel's static shared memory counts against its block's shared memory,
//! on the GPU where there is one, else on the CPU emulator: the dynamic
//! limit starts at what it leaves of 48 KiB, a raise past the opt-in maximum
//! less it is refused with an error that says how much the kernel may have,
//! and a raise to exactly that is taken.

use cuda_core::CudaContext;
use cuda_driver_sys::DriverApi;

/// `with_tile` declares 40 KiB; the module's other kernel 8 KiB more, which
/// `with_tile` does not reach and so does not get.
const PTX: &str = "
.version 8.0
.target sm_80
.address_size 64
.shared .align 16 .b8 tile[40960];
.shared .align 16 .b8 other[8192];
.visible .entry with_tile() { .reg .b32 %r<2>; mov.u32 %r1, 7; st.shared.u32 [tile], %r1; ret; }
.visible .entry with_other() { .reg .b32 %r<2>; mov.u32 %r1, 7; st.shared.u32 [other], %r1; ret; }
";

// One test in this binary: it chooses the backend for the process.
#[test]
fn static_shared_memory_counts_against_the_dynamic_limit() {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "ptx");
    }
    let ctx = CudaContext::new(0).unwrap();
    let module = ctx.load_module_ptx(PTX).unwrap();
    let f = module.function("with_tile").unwrap();
    let a = f.attributes().unwrap();
    assert_eq!(a.static_shared_bytes, 40960, "{a:?}");
    assert_eq!(a.max_dynamic_shared_bytes, 48 * 1024 - 40960, "{a:?}");

    let optin = ctx.limits().unwrap().max_shared_memory_per_block_optin;
    let e = f.set_max_dynamic_shared_memory(optin - 40960 + 16).unwrap_err();
    assert_eq!(e.name(), "CUDA_ERROR_INVALID_VALUE", "{e}");
    let want = format!(
        "kernel `with_tile` has 40960 bytes of static shared memory, which count against the device's {optin} \
         bytes per block: its dynamic shared memory limit can be at most {}",
        optin - 40960
    );
    assert_eq!(e.detail(), Some(want.as_str()), "{e}");
    assert_eq!(f.attributes().unwrap().max_dynamic_shared_bytes, 48 * 1024 - 40960, "a refused raise changes nothing");

    f.set_max_dynamic_shared_memory(optin - 40960).unwrap();
    assert_eq!(f.attributes().unwrap().max_dynamic_shared_bytes, optin - 40960);
    // The module's other kernel has its own 8 KiB, and so its own bound.
    let other = module.function("with_other").unwrap();
    assert_eq!(other.attributes().unwrap().static_shared_bytes, 8192);
    other.set_max_dynamic_shared_memory(optin - 8192).unwrap();
}
