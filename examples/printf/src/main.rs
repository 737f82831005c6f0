//! printf: `gpu_printf!` and `gpu_println!` in a kernel, checked against
//! Rust's own `format!`.
//!
//! Two threads (thread 0 of block 0 and the last thread of block 1) print
//! lines with every kind of argument and spec. The same lines are written
//! once, in `report!`, which the kernel expands with `gpu_printf!` and the
//! host with `format!`, so the GPU's output is compared with Rust's
//! formatting of the same values.
//!
//! The device's printf output reaches the process's stdout when the host
//! synchronises, so the program runs itself as a child process (`printf
//! child`) and the parent checks that the child printed exactly the expected
//! lines (in any order between the two threads).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{gpu_printf, gpu_println, kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::{Command, ExitCode};

const BLOCK: u32 = 64;
const GRID: u32 = 2;
const INTS: [i64; 2] = [-1_234_567, 9_000_000_000_123];
const FLOATS: [f64; 2] = [1.5, -0.03125];

/// What one printing thread prints: computed from the same inputs on both
/// sides.
#[derive(Clone, Copy)]
pub struct Values {
    block: u32,
    tid: u32,
    int: i64,
    float: f64,
    data: *const i64,
}

impl Values {
    fn of(block: u32, tid: u32, ints: &[i64], floats: &[f64], data: *const i64) -> Self {
        let k = block as usize % 2;
        Values {
            block,
            tid,
            int: ints[k],
            float: floats[k],
            data,
        }
    }
}

/// The report of one thread: one `$print!` per line (`$println!` for the
/// last), written once for the GPU (`gpu_printf`) and the CPU (`format!`).
/// Evaluates to the result of the `returns` line.
macro_rules! report {
    ($print:ident, $println:ident, $v:expr) => {{
        let v: Values = $v;
        let (block, tid, i, x) = (v.block, v.tid, v.int, v.float);
        let xf = x as f32;
        $print!(
            "[{block}.{tid}] ints: {} {} {} {} {} {} {} {} {} {}\n",
            i as i8,
            i as i16,
            i as i32,
            i,
            i as u8,
            i as u16,
            i as u32,
            i as u64,
            i as isize,
            i as usize
        );
        $print!(
            "[{block}.{tid}] radix: {:x} {:X} {:#x} {:#010x} {:o} {:#o} {:b} {:#b} {:x} {:+#X}\n",
            i as i32,
            i as u32,
            i as u8,
            i as u16,
            i as u8,
            i,
            i as i8,
            i as u8 & 7,
            -1i32,
            &(i as u64)
        );
        $print!(
            "[{block}.{tid}] floats: {} {} {:.3} {:.0} {:+.2} {:08.3} {:<8.2}| {:>9.1}| {:.5}\n",
            x,
            xf,
            x,
            x,
            xf,
            x,
            xf,
            -x,
            &xf
        );
        $print!(
            "[{block}.{tid}] special: {} {} {} {:>6}| {:<5}| {:+} {} {:05}\n",
            f64::NAN,
            f32::INFINITY,
            -f64::INFINITY,
            f64::NAN,
            f64::INFINITY,
            f64::INFINITY,
            -0.0f64,
            -f32::INFINITY
        );
        $print!(
            "[{block}.{tid}] text: {} {:.3} [{:>7}] [{:<6}] {} {} {} {} {} [{}]\n",
            "héllo",
            "héllo",
            "wörld",
            "ab",
            tid == 0,
            tid != 0,
            'λ',
            '😀',
            '%',
            "{}"
        );
        $print!(
            "[{block}.{tid}] pointers: {:p} {:#p} {:p} {:>12p}|\n",
            core::ptr::null::<u8>(),
            0x1000 as *const u8,
            v.data,
            0xbeef as *mut u32
        );
        $print!(
            "[{block}.{tid}] escapes: {{braces}} 100% {1}-{0}-{1} {name} {tid:>4}|{tid:<4}|\n",
            block,
            tid,
            name = "named"
        );
        $print!("long {:200}|{:>100}|\n", "x", "y");
        let returned = $print!("[{block}.{tid}] returns {} {} {} {}\n", 1, 2u8, 3.5, "four");
        $println!("[{block}.{tid}] done");
        returned
    }};
}

/// Prints the report from thread 0 of block 0 and the last thread of block 1;
/// `status[i]` = what the `returns` line's `gpu_printf!` returned: its 6 placeholders.
#[kernel]
pub fn show(ints: &[i64], floats: &[f64], mut status: DisjointSlice<i32>) {
    let idx = thread::index_1d();
    let (block, tid) = (thread::blockIdx_x(), thread::threadIdx_x());
    if (block == 0 && tid == 0) || (block == 1 && tid == thread::blockDim_x() - 1) {
        let v = Values::of(block, tid, ints, floats, ints.as_ptr());
        let returned = report!(gpu_printf, gpu_println, v);
        // `{:e}` is C's `%e`, not Rust's `{:e}`: checked separately.
        gpu_printf!(
            "[{block}.{tid}] exp: {:e} {:.2E}\n",
            v.float,
            v.float as f32
        );
        if let Some(s) = status.get_mut(idx) {
            *s = returned;
        }
    }
}

/// The two printing threads, as (block, thread).
const PRINTERS: [(u32, u32); 2] = [(0, 0), (1, BLOCK - 1)];

/// The lines the GPU must print, computed with `format!`. `data` is the
/// device address of `INTS`.
fn expected_lines(data: u64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    macro_rules! expect {
        ($($arg:tt)*) => {
            lines.push(as_printed(format!($($arg)*)))
        };
    }
    macro_rules! expect_line {
        ($($arg:tt)*) => {
            lines.push(format!("{}\n", format!($($arg)*)))
        };
    }
    for (block, tid) in PRINTERS {
        let v = Values::of(block, tid, &INTS, &FLOATS, data as usize as *const i64);
        report!(expect, expect_line, v);
        lines.push(format!(
            "[{block}.{tid}] exp: {} {}\n",
            c_exp(format!("{:.6e}", v.float)),
            c_exp(format!("{:.2E}", v.float as f32))
        ));
    }
    lines
}

/// What `gpu_printf!` prints for a line `format!` prints as `full`: cut at
/// `TEXT_LIMIT` bytes with `...` and the newline kept. (Exact for the lines
/// here: the only one over the limit has no C conversions, so its format
/// text and its output have the same length.)
fn as_printed(full: String) -> String {
    use cuda_device::printf::TEXT_LIMIT;
    let body = full.strip_suffix('\n').unwrap_or(&full);
    if body.len() <= TEXT_LIMIT {
        return full;
    }
    let newline = if full.ends_with('\n') { "\n" } else { "" };
    format!("{}...{newline}", &full[..TEXT_LIMIT])
}

/// Rust's exponent form (`1.500000e0`) in C's form (`1.500000e+00`), which
/// is what `{:e}` prints on the GPU.
fn c_exp(rust: String) -> String {
    let split = rust.find(['e', 'E']).expect("an exponent");
    let (mantissa, exponent) = rust.split_at(split);
    let letter = &exponent[..1];
    let value: i32 = exponent[1..].parse().expect("a number");
    let sign = if value < 0 { '-' } else { '+' };
    format!("{mantissa}{letter}{sign}{:02}", value.abs())
}

/// Tag of the line on which the child reports the device address of `INTS`.
const DATA_TAG: &str = "data at ";

/// The child: launches the kernel; the device's lines go to stdout.
fn child() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let n = (GRID * BLOCK) as usize;
    let ints = DeviceBuffer::from_host(&stream, &INTS)?;
    let floats = DeviceBuffer::from_host(&stream, &FLOATS)?;
    let mut status = DeviceBuffer::<i32>::zeroed(&stream, n)?;
    let module = load_kernel_module(&ctx, "printf")?;
    let config = LaunchConfig {
        grid_dim: (GRID, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    cuda_launch! {
        kernel: show, stream: stream, module: module, config: config,
        args: [slice(ints), slice(floats), slice_mut(status)]
    }?;
    stream.synchronize()?; // the device's printf buffer is written out here
    let status = status.to_host_vec(&stream)?;
    for (i, &s) in status.iter().enumerate() {
        let printer = PRINTERS.iter().any(|&(b, t)| (b * BLOCK + t) as usize == i);
        let want = if printer { 6 } else { 0 };
        if s != want {
            return Err(format!("thread {i}: gpu_printf! returned {s}, expected {want}").into());
        }
    }
    // On stderr: stdout carries only the device's lines.
    eprintln!("{DATA_TAG}{:#x}", ints.device_ptr());
    Ok(())
}

/// The parent: runs the child and compares its stdout with the expected lines.
fn parent() -> Result<usize, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(&exe)
        .arg("child")
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(cuda_host::NO_GPU_EXIT_CODE as i32) {
        return Err(format!("no GPU: {}", stderr.trim()));
    }
    if !out.status.success() {
        return Err(format!(
            "the child failed ({}):\n{stderr}{stdout}",
            out.status
        ));
    }
    let data = stderr
        .lines()
        .find_map(|l| l.strip_prefix(DATA_TAG))
        .and_then(|hex| u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| format!("the child did not report the data address:\n{stderr}"))?;

    let mut expected = expected_lines(data);
    let mut printed: Vec<String> = stdout.split_inclusive('\n').map(str::to_string).collect();
    expected.sort();
    printed.sort();
    if printed == expected {
        return Ok(expected.len());
    }
    let missing: Vec<&String> = expected.iter().filter(|l| !printed.contains(l)).collect();
    let extra: Vec<&String> = printed.iter().filter(|l| !expected.contains(l)).collect();
    Err(format!(
        "the GPU's output differs from format!'s ({} lines printed, {} expected)\nmissing:\n{}extra:\n{}",
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
            println!("✓ SUCCESS: all {n} lines printed by gpu_printf! from 2 threads match Rust's format!");
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

/// The same report, built on the host with `__gpu_format!` (the C format
/// string and arguments `gpu_printf!` hands to `vprintf`) and rendered with
/// the host C library's `snprintf`, as CUDA renders device printf output on
/// the host: checks every line against `format!` without a GPU.
#[cfg(test)]
mod tests {
    use super::*;
    use cuda_device::printf::__private::{__gpu_format, CFormat};
    use std::ffi::{c_char, c_int, CString};

    extern "C" {
        fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
    }

    /// What CUDA's printf prints for `format`.
    fn render(format: &CFormat) -> String {
        let text = format.format();
        let mut args = format.args().iter();
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            match (text[i], text.get(i + 1)) {
                (b'%', Some(b'%')) => {
                    out.push(b'%');
                    i += 2;
                }
                (b'%', _) => {
                    let len = text[i..]
                        .iter()
                        .position(|b| b"duefgE".contains(b))
                        .expect("a conversion")
                        + 1;
                    let conversion = CString::new(&text[i..i + len]).unwrap();
                    let arg = *args.next().expect("an argument for each conversion");
                    let mut buf = vec![0u8; 1024];
                    let (ptr, size) = (buf.as_mut_ptr().cast::<c_char>(), buf.len());
                    // SAFETY: `conversion` is one NUL-terminated conversion
                    // taking one argument of the type passed; `buf` holds `size` bytes.
                    let n = unsafe {
                        match text[i + len - 1] {
                            b'd' | b'u' => snprintf(ptr, size, conversion.as_ptr(), arg),
                            _ => snprintf(ptr, size, conversion.as_ptr(), f64::from_bits(arg)),
                        }
                    };
                    out.extend_from_slice(&buf[..n as usize]);
                    i += len;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        assert!(args.next().is_none(), "unused arguments");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn every_line_renders_like_format() {
        let data = 0x7f00_1234_5678u64;
        let mut rendered: Vec<String> = Vec::new();
        let mut returns = Vec::new();
        macro_rules! on_host {
            ($($arg:tt)*) => {{
                let format = __gpu_format!($($arg)*);
                rendered.push(render(&format));
                format.printed() as i32
            }};
        }
        // `gpu_println!` is `gpu_printf!` with "\n" appended to the format
        // (checked by cuda-macros' tests).
        macro_rules! on_host_line {
            ($($arg:tt)*) => {{
                let format = __gpu_format!($($arg)*);
                rendered.push(render(&format) + "\n");
            }};
        }
        for (block, tid) in PRINTERS {
            let v = Values::of(block, tid, &INTS, &FLOATS, data as usize as *const i64);
            returns.push(report!(on_host, on_host_line, v));
            let exp = __gpu_format!(
                "[{block}.{tid}] exp: {:e} {:.2E}\n",
                v.float,
                v.float as f32
            );
            rendered.push(render(&exp));
        }
        assert_eq!(returns, [6, 6]);
        let expected = expected_lines(data);
        for (got, want) in rendered.iter().zip(&expected) {
            assert_eq!(got, want);
        }
        assert_eq!(rendered.len(), expected.len());
    }

    #[test]
    fn exponents_in_c_form() {
        assert_eq!(c_exp(format!("{:.6e}", 1.5)), "1.500000e+00");
        assert_eq!(c_exp(format!("{:.2E}", -0.03125f32)), "-3.12E-02");
        assert_eq!(c_exp(format!("{:.1e}", 1e123)), "1.0e+123");
    }
}
