//! GPU test: every kind of device panic (bounds, overflow, unwrap on None and
//! on Err, expect, explicit `panic!` with and without values, `unreachable!`,
//! a bounds check in a tile read that the device linker versions, messages
//! that format integers, floats, bools and chars with options, an `assert!`
//! with a value the GPU cannot print, core's own formatted assert in
//! `clamp`) fails the launch with a Rust error that carries the panic
//! message, with the values formatted as on the host, the file:line:col, and
//! the thread and block index; the device also prints them; the next call on
//! the context fails instead of hanging. Never a wrong answer. (Built in the
//! dev profile, as scripts/test.sh builds it: rustc shares core's generic
//! code there, and core's formatted asserts reach the device.)
//!
//! A panic leaves the CUDA context unusable, so each kind runs in its own
//! child process (this program run with the kind's name); the parent checks
//! what each child reported and what the device printed.

use cuda_core::{CudaContext, DeviceBuffer, DriverError, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::{Command, ExitCode};

/// One panic kind: the kernel mode, the message the host must see (its
/// start), what the device's printf line must contain, and the source line
/// of the panicking expression.
struct Kind {
    name: &'static str,
    mode: u32,
    message: &'static str,
    printed: &'static str,
    line: u32,
}

/// The thread that panics in modes 1.. (thread 5 of block 1).
const PANICKING_THREAD: usize = 256 + 5;

const ARMS_START: u32 = line!() + 11;
#[kernel]
pub fn panics(mode: u32, input: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    let mut value = 0u32;
    if mode == 0 {
        value = input[i + 3]; // past the end for the last three threads
    } else if i == PANICKING_THREAD {
        let x = input[i]; // u32::MAX - 1 at this index
        value = match mode {
            1 => x + 2,
            2 => input.get(i + 10_000).copied().unwrap(),
            3 => *input.get(i + 10_000).expect("the element must exist"),
            4 => u8::try_from(x).unwrap() as u32,
            5 => panic!("boom in a kernel"),
            6 => unreachable!(),
            7 => panic!("value {} too large at {}", x, i),
            9 => panic!("[{:#x} {:>6}|{:<4}|{:+} {:08.3} {:e} {:?}]", x, i as u16, -3i8, 5i64, 2.5f32, 1.5e10f64, 0.1f32),
            10 => panic!("[{} {} {:?} {} {:?} {}]", x == 7, 'é', 'q', -1i128, u128::MAX, i as isize),
            11 => {
                assert!(x < 10, "x = {x}, i = {i:?}, pair = {:?}", (x, i));
                x
            }
            12 => x.clamp(i as u32 + 10, i as u32),
            13 => {
                assert_eq!(x, i as u32);
                x
            }
            14 => {
                assert_ne!(x, x, "same at {}", i);
                x
            }
            15 => {
                let r: Result<u32, i16> = if x > 5 { Err(-(i as i16)) } else { Ok(x) };
                r.unwrap()
            }
            _ => x,
        };
    } else if mode == 8 {
        // A tile read (rows × cols = 1024 elements over a 512-element
        // input): the device linker's second body without the check is not
        // taken, and the first body's check fails from row 16 on. (Wrapping
        // arithmetic, as in a release build, so the debug build has the
        // index shape the device linker versions.)
        let (rows, cols) = (out.len() / 16, out.len() / 16);
        let (row, col) = (i / 16, i % 16);
        if row < rows && col < cols {
            value = input[row.wrapping_mul(cols).wrapping_add(col)];
        }
    }
    if let Some(o) = out.get_mut(idx) {
        *o = value;
    }
}

const KINDS: [Kind; 16] = [
    Kind { name: "bounds", mode: 0, message: "index out of bounds: the len is 512 but the index is ", printed: "index out of bounds: the len is 512 but the index is ", line: ARMS_START - 4 },
    Kind { name: "overflow", mode: 1, message: "attempt to add with overflow", printed: "attempt to add with overflow", line: ARMS_START },
    Kind { name: "unwrap_none", mode: 2, message: "called `Option::unwrap()` on a `None` value", printed: "called `Option::unwrap()` on a `None` value", line: ARMS_START + 1 },
    Kind { name: "expect", mode: 3, message: "the element must exist", printed: "the element must exist", line: ARMS_START + 2 },
    Kind { name: "unwrap_err", mode: 4, message: "called `Result::unwrap()` on an `Err` value", printed: "called `Result::unwrap()` on an `Err` value", line: ARMS_START + 3 },
    Kind { name: "explicit", mode: 5, message: "boom in a kernel", printed: "boom in a kernel", line: ARMS_START + 4 },
    Kind { name: "unreachable", mode: 6, message: "internal error: entered unreachable code", printed: "internal error: entered unreachable code", line: ARMS_START + 5 },
    // The values are formatted on the host from the panic record, exactly
    // as Rust formats them; the device's printf line prints what printf
    // can (here all of it).
    Kind { name: "formatted", mode: 7, message: "value 4294967294 too large at 261", printed: "value 4294967294 too large at 261", line: ARMS_START + 6 },
    Kind { name: "tiled", mode: 8, message: "index out of bounds: the len is 512 but the index is ", printed: "index out of bounds: the len is 512 but the index is ", line: ARMS_START + 37 },
    // Options: `#x`, alignment and width, sign, zero padding with a
    // precision, exponent, Debug of a float. printf has no `{:e}` and prints
    // floats without a precision to their round-trip digits.
    Kind { name: "formatted_options", mode: 9, message: "[0xfffffffe    261|-3  |+5 0002.500 1.5e10 0.1]", printed: "[0xfffffffe    261|-3  |+5 0002.500 ", line: ARMS_START + 7 },
    // bool, char (Display and Debug), 128-bit integers, isize.
    Kind { name: "formatted_types", mode: 10, message: "[false é 'q' -1 340282366920938463463374607431768211455 261]", printed: "[false ", line: ARMS_START + 8 },
    // A tuple the GPU cannot format prints as `{..}` there (the CPU
    // emulator formats it); the values before it are the same on both.
    Kind { name: "assert_values", mode: 11, message: "x = 4294967294, i = 261, pair = ", printed: "x = 4294967294, i = 261, pair = ", line: ARMS_START + 10 },
    // core's own formatted assert (`{:?}` of the bounds), in a debug build.
    Kind { name: "clamp", mode: 12, message: "min > max. min = 271, max = 261", printed: "min > max. min = 271, max = 261", line: ARMS_START + 13 },
    // assert_eq!, assert_ne! with a message, and unwrap on an `Err`: core's
    // messages with the operands' Debug.
    Kind { name: "assert_eq", mode: 13, message: "assertion `left == right` failed\n  left: 4294967294\n right: 261", printed: "assertion `left == right` failed\n  left: 4294967294\n right: 261", line: ARMS_START + 15 },
    Kind { name: "assert_ne", mode: 14, message: "assertion `left != right` failed: same at 261\n  left: 4294967294\n right: 4294967294", printed: "assertion `left != right` failed: same at 261\n  left: 4294967294\n right: 4294967294", line: ARMS_START + 19 },
    Kind { name: "unwrap_err_value", mode: 15, message: "called `Result::unwrap()` on an `Err` value: -261", printed: "called `Result::unwrap()` on an `Err` value: -261", line: ARMS_START + 24 },
];

/// Launches the kernel in `kind`'s mode and returns the error the launch ends with.
fn fail_launch(kind: &Kind) -> Result<DriverError, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut host_input = vec![7u32; 512];
    host_input[PANICKING_THREAD] = u32::MAX - 1;
    let input = DeviceBuffer::from_host(&stream, &host_input)?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 512)?;
    let module = load_kernel_module(&ctx, "device_panics")?;
    cuda_launch! {
        kernel: panics, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(512),
        args: [kind.mode, slice(input), slice_mut(out)]
    }?;
    let err = match stream.synchronize() {
        Ok(()) => return Err("the kernel finished without an error".into()),
        Err(e) => e,
    };
    if out.to_host_vec(&stream).is_ok() {
        return Err("a call after the fault succeeded".into());
    }
    Ok(err)
}

/// The child: checks the error value of one panic kind.
fn child(kind: &Kind) -> Result<(), Box<dyn std::error::Error>> {
    let err = fail_launch(kind)?;
    println!("host error: {err}");
    let text = err.to_string();
    if !text.contains("device_panics::panics") {
        return Err("the error does not name the kernel".into());
    }
    let p = err.device_panic().ok_or("the error carries no device panic")?;
    let mut problems = Vec::new();
    if !p.message.starts_with(kind.message) {
        problems.push(format!("message `{}`, expected `{}`", p.message, kind.message));
    }
    if kind.mode == 11 && !(p.message.ends_with("{..}") || p.message.ends_with("(4294967294, 261)")) {
        problems.push(format!("message `{}` drops the value it cannot print", p.message));
    }
    if p.file != file!() || p.line != kind.line {
        problems.push(format!("location {}:{}, expected {}:{}", p.file, p.line, file!(), kind.line));
    }
    let global = p.block.0 as usize * 256 + p.thread.0 as usize;
    let expected_thread = match kind.mode {
        0 => (509..512).contains(&global),
        8 => (256..512).contains(&global),
        _ => global == PANICKING_THREAD,
    };
    if !expected_thread || p.thread.1 != 0 || p.block.1 != 0 {
        problems.push(format!("thread {:?} block {:?} is not the panicking one", p.thread, p.block));
    }
    if kind.mode == 0 && !p.message.ends_with(&(global + 3).to_string()) {
        problems.push(format!("the index in `{}` is not {}", p.message, global + 3));
    }
    let tile_index = (global / 16) * 32 + global % 16;
    if kind.mode == 8 && !p.message.ends_with(&tile_index.to_string()) {
        problems.push(format!("the index in `{}` is not {}", p.message, tile_index));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ").into()) }
}

/// The parent: runs one child per kind and checks the device's printout.
fn parent() -> Result<usize, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    for kind in &KINDS {
        let out = Command::new(&exe).arg(kind.name).output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(cuda_host::NO_GPU_EXIT_CODE as i32) {
            return Err(format!("no GPU: {}", stderr.trim()));
        }
        let printed = format!("panicked at {}:{}:", file!(), kind.line);
        let ok = out.status.success() && stdout.contains(&printed) && stdout.contains(kind.printed);
        println!("{} {}", if ok { "ok  " } else { "FAIL" }, kind.name);
        if !ok {
            println!("{}{}", stdout, stderr);
            failures.push(kind.name);
        }
    }
    if failures.is_empty() { Ok(KINDS.len()) } else { Err(format!("failed kinds: {failures:?}")) }
}

fn main() -> ExitCode {
    if let Some(name) = std::env::args().nth(1) {
        let Some(kind) = KINDS.iter().find(|k| k.name == name) else {
            eprintln!("unknown panic kind `{name}`");
            return ExitCode::FAILURE;
        };
        return match child(kind) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => cuda_host::report_failure(&*e),
        };
    }
    match parent() {
        Ok(n) => {
            println!("✓ SUCCESS: all {n} device panic kinds failed their launch with a located, readable error");
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
