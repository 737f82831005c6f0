//! GPU test: timing a kernel with events, the way programs do it.
//!
//! Events from `CudaStream::record_event` time (an event made without
//! timing only orders work, and `elapsed_ms` refuses it with an error that
//! says so), and `elapsed_ms` waits for the end event itself: asked right
//! after the launch, while the kernel still runs, it used to fail with
//! CUDA_ERROR_NOT_READY on the H200. `?` takes driver errors and launch
//! errors alike in a function returning `HostError`.

use cuda_core::{CudaContext, DeviceBuffer, ErrorKind, LaunchConfig};
use cuda_device::kernel;
use cuda_host::{cuda_launch, load_kernel_module, HostError};
use std::process::ExitCode;

/// Runs `iterations` rounds of xorshift on one thread: a kernel that takes
/// a while, its result written so nothing is optimised away.
#[kernel]
pub fn spin(out: &mut [u64], iterations: u64) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut i = 0;
    while i < iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i += 1;
    }
    out[0] = x;
}

fn xorshift(iterations: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Times `iterations` rounds of `spin`: the milliseconds, the kernel's
/// result, and what timing against an event without timing answered.
fn time_spin(iterations: u64) -> Result<(f32, u64, Option<cuda_core::DriverError>), HostError> {
    let ctx = CudaContext::new(0)?; // a DriverError
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "event_timing")?; // a HostError
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, 1)?;
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };

    let start = stream.record_event()?;
    cuda_launch! { kernel: spin, stream: stream, module: module, config: one, args: [slice_mut(out), iterations] }?;
    let end = stream.record_event()?;
    // No synchronize: elapsed_ms waits for `end`.
    let ms = start.elapsed_ms(&end)?;
    let got = out.to_host_vec(&stream)?[0];
    let untimed = stream.record_event_without_timing()?;
    Ok((ms, got, start.elapsed_ms(&untimed).err()))
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let iterations: u64 = if cuda_core::emulator::is_active() { 20_000 } else { 20_000_000 };
    let (ms, got, refusal) = time_spin(iterations)?;
    if !(ms > 0.0) {
        return Err(format!("the kernel took {ms} ms").into());
    }
    let want = xorshift(iterations);
    if got != want {
        return Err(format!("spin computed {got:#x}, the CPU {want:#x}").into());
    }
    match refusal {
        Some(e) if e.kind() == ErrorKind::InvalidArgument && e.to_string().contains("record_event") => {}
        other => return Err(format!("timing against an event without timing answered {other:?}").into()),
    }
    Ok(format!("{iterations} rounds in {ms:.3} ms, timed without a synchronize"))
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: {what}; an event without timing refused");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
