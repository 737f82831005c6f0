//! GPU test: `gpu_printf!`'s C float conversions (`{:f}`, `{:g}`, `{:G}`,
//! `{:e}`, `{:E}`), the space flag, `#`, `+`, widths and precisions, over
//! values that C formats in every way it can: zeros of both signs, halves
//! that round to even, subnormals, the largest and smallest magnitudes,
//! `inf` and NaNs of both signs.
//!
//! The program runs itself as a child (`printf_c_floats child`), whose
//! kernel prints one line per value; the parent checks that the child's
//! stdout holds exactly the lines the host C library's `snprintf` writes
//! for the same values with the same C format (in any order).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{gpu_printf, kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::ffi::{c_char, c_int, CString};
use std::process::{Command, ExitCode};

/// The values printed, one per thread.
fn values() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -2.5,
        0.5,
        1.5,
        2.5,
        0.1,
        1.0 / 3.0,
        123_456.789,
        1e-5,
        9.999_999_5e-5,
        0.000_123_456,
        6.022_140_76e23,
        1e300,
        -1e300,
        1e-300,
        f64::MAX,
        f64::MIN_POSITIVE,
        2.225_073_858_507_200_9e-308, // the largest subnormal
        5e-324,                       // the smallest subnormal
        1e-40f32 as f64,              // an f32 subnormal, widened
        f32::MAX as f64,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ]
}

/// The C format that each `gpu_printf!` line below must print as.
const C_FORMAT: &str = "%2d: %f|%g|%G|%e|%E|% f|%.3f|%+.2e|%12.4g|%-10.1f|%#g|% .0f|% G\n";

#[kernel]
pub fn print_values(values: &[f64], mut status: DisjointSlice<i32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i < values.len() {
        let v = values[i];
        let printed = gpu_printf!(
            "{i:>2}: {v:f}|{v:g}|{v:G}|{v:e}|{v:E}|{v: f}|{v:.3f}|{v:+.2e}|{v:12.4g}|{v:<10.1f}|{v:#g}|{v: .0f}|{v: G}\n"
        );
        if let Some(s) = status.get_mut(idx) {
            *s = printed;
        }
    }
}

extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

/// The line C's printf writes for value `i`.
fn c_line(i: usize, v: f64) -> String {
    let format = CString::new(C_FORMAT).unwrap();
    let mut buf = vec![0u8; 8192];
    // SAFETY: the format's conversions are one int and thirteen doubles, passed
    // in that order; the buffer's size is given.
    let n = unsafe {
        snprintf(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), i as c_int, v, v, v, v, v, v, v, v, v, v, v, v, v)
    };
    assert!(n >= 0 && (n as usize) < buf.len(), "snprintf returned {n}");
    buf.truncate(n as usize);
    String::from_utf8(buf).unwrap()
}

/// The child: launches the kernel; its stdout is the device's lines only.
fn child() -> Result<(), Box<dyn std::error::Error>> {
    let values = values();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let dev = DeviceBuffer::from_host(&stream, &values)?;
    let mut status = DeviceBuffer::<i32>::zeroed(&stream, 32)?;
    let module = load_kernel_module(&ctx, "printf_c_floats")?;
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: print_values, stream: stream, module: module, config: config,
        args: [slice(dev), slice_mut(status)]
    }?;
    stream.synchronize()?; // the device's printf buffer is written out here
    let status = status.to_host_vec(&stream)?;
    // 14 placeholders per line, all printed (no truncation).
    if let Some(i) = (0..values.len()).find(|&i| status[i] != 14) {
        return Err(format!("thread {i}: gpu_printf! returned {}, expected 14", status[i]).into());
    }
    Ok(())
}

/// The parent: runs the child and compares its stdout with C's lines.
fn parent() -> Result<usize, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(&exe).arg("child").output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(cuda_host::NO_GPU_EXIT_CODE as i32) {
        return Err(format!("no GPU: {}", stderr.trim()));
    }
    if !out.status.success() {
        return Err(format!("the child failed ({}):\n{stderr}{stdout}", out.status));
    }
    let mut expected: Vec<String> = values().iter().enumerate().map(|(i, &v)| c_line(i, v)).collect();
    let mut printed: Vec<String> = stdout.split_inclusive('\n').map(str::to_string).collect();
    expected.sort();
    printed.sort();
    if printed == expected {
        return Ok(expected.len());
    }
    let missing: Vec<&String> = expected.iter().filter(|l| !printed.contains(l)).collect();
    let extra: Vec<&String> = printed.iter().filter(|l| !expected.contains(l)).collect();
    Err(format!(
        "the kernel's output differs from the C library's ({} lines printed, {} expected)\nmissing:\n{}extra:\n{}",
        printed.len(),
        expected.len(),
        missing.iter().map(|l| format!("  {l:?}\n")).collect::<String>(),
        extra.iter().map(|l| format!("  {l:?}\n")).collect::<String>(),
    ))
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("child") {
        return match child() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => cuda_host::report_failure(&*e),
        };
    }
    match parent() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} lines of C float conversions printed by gpu_printf! match the C library's printf");
            ExitCode::SUCCESS
        }
        Err(e) if e.starts_with("no GPU") => {
            eprintln!("{e}");
            ExitCode::from(cuda_host::NO_GPU_EXIT_CODE)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
