//! GPU test: an out-of-bounds index in a kernel fails the launch with an error
//! that names the kernel, the device prints the Rust file:line:col with the
//! thread and block, and the next call on the context fails instead of
//! hanging. It never produces a wrong answer.
//!
//! The program runs itself as a child process so it can read what the device
//! printed (device printf goes to the process's stdout). Exits 0 when all of
//! the above holds.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::{Command, ExitCode};

/// The line of the indexing expression below (kept in step with it).
const INDEX_LINE: u32 = line!() + 8;

/// Reads `input[i + shift]`: past the end for the last `shift` threads.
#[kernel]
pub fn read_past_end(input: &[u32], shift: usize, mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = input[i + shift];
    }
}

/// The child: launches the faulting kernel and checks the host-side errors.
fn child() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &vec![7u32; 256])?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 256)?;
    let module = load_kernel_module(&ctx, "panic_oob")?;
    cuda_launch! {
        kernel: read_past_end, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(256),
        args: [slice(input), 3usize, slice_mut(out)]
    }?;
    let err = match stream.synchronize() {
        Ok(()) => return Err("the out-of-bounds kernel finished without an error".into()),
        Err(e) => e.to_string(),
    };
    println!("launch failed as expected: {err}");
    if !err.contains("panic_oob::read_past_end") {
        return Err(format!("the error does not name the kernel: {err}").into());
    }
    match out.to_host_vec(&stream) {
        Ok(_) => Err("a call after the fault succeeded".into()),
        Err(e) => {
            println!("the next call on the context fails too: {}", e.name());
            Ok(())
        }
    }
}

/// The parent: runs the child and checks what the device printed.
fn parent() -> Result<(), Box<dyn std::error::Error>> {
    let output = Command::new(std::env::current_exe()?).env("OXIDE_TEST_CHILD", "1").output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    if output.status.code() == Some(cuda_host::NO_GPU_EXIT_CODE as i32) {
        return Err(stderr.trim().to_string().into());
    }
    if !output.status.success() {
        return Err("the child's checks failed".into());
    }
    let expected = [
        format!("GPU thread (253, 0, 0) of block (0, 0, 0) panicked at {}:{INDEX_LINE}:14:", file!()),
        "index out of bounds: the len is 256 but the index is 256".to_string(),
    ];
    for line in &expected {
        if !stdout.contains(line.as_str()) {
            return Err(format!("the device did not print `{line}`").into());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    if std::env::var_os("OXIDE_TEST_CHILD").is_some() {
        return match child() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => cuda_host::report_failure(&*e),
        };
    }
    match parent() {
        Ok(()) => {
            println!("✓ SUCCESS: the device panic failed the launch, named the kernel and its line");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            if e.to_string().contains("no GPU") {
                return ExitCode::from(cuda_host::NO_GPU_EXIT_CODE);
            }
            ExitCode::FAILURE
        }
    }
}
