//! cxx_export: CUDA C++ kernels calling Rust device functions.
//!
//! The functions below are exported with `#[device] #[no_mangle] pub
//! extern "C" fn`: oxide keeps them in its PTX as `.visible .func`.
//! `build-cubin.sh` compiles `kernels.cu` with nvcc as relocatable device
//! code and links it with that PTX by nvlink into `cxx_export.cubin`; this
//! program loads the cubin through cuda-core, launches the C++ kernels and
//! checks every result against the same Rust functions run on the CPU.
//!
//! The cubin is found at the first argument, else `$CXX_EXPORT_CUBIN`, else
//! `cxx_export.cubin` beside the executable.

use cuda_core::{launch_kernel, CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::device;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::ExitCode;

/// a·x + y with one rounding, for CUDA C++'s `cxx_saxpy`.
#[device]
#[no_mangle]
pub extern "C" fn rust_saxpy(a: f32, x: f32, y: f32) -> f32 {
    a.mul_add(x, y)
}

/// The number of Collatz steps from `n` to 1 (0 for 0 and 1), at most 1000.
#[device]
#[no_mangle]
pub extern "C" fn rust_collatz_steps(n: u32) -> u32 {
    let (mut n, mut steps) = (n as u64, 0u32);
    while n > 1 && steps < 1000 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

fn cubin_path() -> PathBuf {
    if let Some(arg) = std::env::args_os().nth(1) {
        return arg.into();
    }
    if let Some(env) = std::env::var_os("CXX_EXPORT_CUBIN") {
        return env.into();
    }
    let exe = std::env::current_exe().unwrap_or_default();
    exe.with_file_name("cxx_export.cubin")
}

fn report<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: impl Fn(usize) -> T) -> bool {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        None => {
            println!("ok    {what}");
            true
        }
        Some(i) => {
            println!("FAIL  {what}: element {i}: GPU {:?} CPU {:?}", got[i], want(i));
            false
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    const N: usize = 1 << 14;
    let path = cubin_path();
    let image = std::fs::read(&path).map_err(|e| {
        format!("cannot read {} ({e}): build it with tests/gpu/cxx_export/build-cubin.sh", path.display())
    })?;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = ctx.load_module_image(&image)?;
    let config = LaunchConfig::for_num_elems(N as u32);

    let xs: Vec<f32> = (0..N).map(|i| i as f32 * 0.37 - 1000.0).collect();
    let ys: Vec<f32> = (0..N).map(|i| (i % 97) as f32 * 1.5e-3).collect();
    let a = 1.0f32 / 3.0;
    let x_dev = DeviceBuffer::from_host(&stream, &xs)?;
    let y_dev = DeviceBuffer::from_host(&stream, &ys)?;
    let saxpy = module.function("cxx_saxpy")?;
    let (mut a_arg, mut x_ptr, mut y_ptr, mut n) = (a, x_dev.device_ptr(), y_dev.device_ptr(), N as i32);
    let mut params = [
        (&mut a_arg as *mut f32).cast::<c_void>(),
        (&mut x_ptr as *mut u64).cast::<c_void>(),
        (&mut y_ptr as *mut u64).cast::<c_void>(),
        (&mut n as *mut i32).cast::<c_void>(),
    ];
    // SAFETY: cxx_saxpy takes (float, const float*, float*, int); both buffers
    // hold N floats and outlive the copy below, which waits for the kernel.
    unsafe { launch_kernel(&saxpy, config, &stream, &mut params)? };
    let got: Vec<u32> = y_dev.to_host_vec(&stream)?.iter().map(|v| v.to_bits()).collect();
    let mut ok = report("cxx_saxpy → rust_saxpy", &got, |i| rust_saxpy(a, xs[i], ys[i]).to_bits());

    let starts: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(7919) % 100_000).collect();
    let s_dev = DeviceBuffer::from_host(&stream, &starts)?;
    let out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let collatz = module.function("cxx_collatz")?;
    let (mut s_ptr, mut o_ptr) = (s_dev.device_ptr(), out.device_ptr());
    let mut params = [
        (&mut s_ptr as *mut u64).cast::<c_void>(),
        (&mut o_ptr as *mut u64).cast::<c_void>(),
        (&mut n as *mut i32).cast::<c_void>(),
    ];
    // SAFETY: cxx_collatz takes (const unsigned*, unsigned*, int); both
    // buffers hold N values and outlive the copy below.
    unsafe { launch_kernel(&collatz, config, &stream, &mut params)? };
    let got = out.to_host_vec(&stream)?;
    ok &= report("cxx_collatz → rust_collatz_steps", &got, |i| rust_collatz_steps(starts[i]));
    println!("{}", if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
