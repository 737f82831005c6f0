//! Managed (unified) memory: buffers that kernels and the host share at one
//! address, with no explicit copies, and peer copies between GPUs.
//!
//! * The host fills `x` and `y` in place (`host_mut`); the buffers are
//!   advised to live on the GPU and prefetched there on the stream.
//! * A kernel computes `y = a * x + y`; the host reads `y` right after the
//!   launch (`host` waits for the kernel, no synchronize needed) once it
//!   was prefetched back.
//! * The host rewrites `x` while a second kernel that only reads `x` and
//!   `y` is queued on another stream: `host_mut` waits for that kernel
//!   first, so it sees the old `x`.
//! * With two GPUs, a buffer on GPU 0 is copied to GPU 1 (`copy_from_peer`,
//!   peer access enabled where the devices allow it); on one GPU (or the
//!   emulator) that part says it was skipped, after checking that a device
//!   is not its own peer.
//!
//! Every value is compared with the same computation on the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig, ManagedBuffer, MemAdvice, MemLocation, PeerError};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// `y[i] = a * x[i] + y[i]`.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(yi) = y.get_mut(idx) {
        *yi = a * x[i] + *yi;
    }
}

/// `out[i] = x[i] * y[i]`.
#[kernel]
pub fn product(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = x[i] * y[i];
    }
}

const N: usize = 1 << 16;

fn check(case: &str, got: &[f32], want: impl Fn(usize) -> f32) -> Result<(), String> {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        None => {
            println!("  {case}: {} elements right", got.len());
            Ok(())
        }
        Some(i) => Err(format!(
            "{case}: element {i} is {}, the CPU gives {} ({} of {} wrong)",
            got[i],
            want(i),
            (0..got.len()).filter(|&j| got[j] != want(j)).count(),
            got.len()
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let (a_stream, b_stream) = (ctx.new_stream_non_blocking()?, ctx.new_stream_non_blocking()?);
    let module = load_kernel_module(&ctx, "managed_memory")?;
    let config = LaunchConfig::for_num_elems(N as u32);
    let gpu = MemLocation::device_of(&ctx);
    let x0 = |i: usize| (i % 1000) as f32 * 0.5;
    let y0 = |i: usize| (i % 7) as f32;
    let a = 2.0f32;

    // Filled on the host in place, then moved to the GPU ahead of the kernel.
    let mut x = ManagedBuffer::<f32>::zeroed(&ctx, N)?;
    let mut y = ManagedBuffer::<f32>::zeroed(&ctx, N)?;
    for (i, v) in x.host_mut()?.iter_mut().enumerate() {
        *v = x0(i);
    }
    for (i, v) in y.host_mut()?.iter_mut().enumerate() {
        *v = y0(i);
    }
    x.advise(MemAdvice::ReadMostly)?;
    y.advise(MemAdvice::PreferredLocation(gpu))?;
    println!("  advice: x read-mostly = {}, y preferred location = {:?}", x.is_read_mostly()?, y.preferred_location()?);
    x.prefetch_to(gpu, &a_stream)?;
    y.prefetch_to(gpu, &a_stream)?;

    cuda_launch! { kernel: saxpy, stream: a_stream, module: module, config: config, args: [a, slice(x), slice_mut(y)] }?;
    y.prefetch_to(MemLocation::Host, &a_stream)?;
    // No synchronize: `host` waits for the kernel's write.
    check("y = a*x + y, read on the host after the kernel", y.host()?, |i| a * x0(i) + y0(i))?;

    // A kernel on another stream reads x and y; the host then rewrites x:
    // `host_mut` waits for that kernel, which therefore used the old x.
    let mut prod = ManagedBuffer::<f32>::zeroed(&ctx, N)?;
    cuda_launch! { kernel: product, stream: b_stream, module: module, config: config, args: [slice(x), slice(y), slice_mut(prod)] }?;
    for v in x.host_mut()?.iter_mut() {
        *v = -1.0;
    }
    check("x * y on stream B, before the host rewrote x", prod.host()?, |i| x0(i) * (a * x0(i) + y0(i)))?;
    check("x rewritten on the host", x.host()?, |_| -1.0)?;
    // And a kernel after the host write sees the new x.
    cuda_launch! { kernel: saxpy, stream: a_stream, module: module, config: config, args: [1.0f32, slice(x), slice_mut(y)] }?;
    check("y + x after the host's write of x", &y.to_vec()?, |i| a * x0(i) + y0(i) - 1.0)?;

    // Peer access and copies between GPUs.
    let again = CudaContext::new(0)?;
    if ctx.can_access_peer(&again)? {
        return Err("a device reported itself as its own peer".into());
    }
    match ctx.enable_peer_access(&again) {
        Err(PeerError::SameDevice { .. }) => {}
        other => return Err(format!("enabling peer access to the same device gave {other:?}").into()),
    }
    if CudaContext::device_count()? < 2 {
        println!("  peer copy: skipped (one GPU; a device is not its own peer, as checked)");
    } else {
        let gpu1 = CudaContext::new(1)?;
        let direct = gpu1.can_access_peer(&ctx)?;
        if direct {
            gpu1.enable_peer_access(&ctx)?;
        }
        let s1 = gpu1.new_stream_non_blocking()?;
        let src_data: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let src = DeviceBuffer::from_host(&a_stream, &src_data)?;
        let mut dst = DeviceBuffer::<u32>::zeroed(&s1, N)?;
        dst.copy_from_peer(&s1, &src)?;
        let got = dst.to_host_vec(&s1)?;
        if got != src_data {
            return Err("the peer copy from GPU 0 to GPU 1 differs from the source".into());
        }
        println!("  peer copy GPU 0 -> GPU 1: {N} elements right ({})", if direct { "peer access" } else { "staged by the driver" });
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("✓ SUCCESS: managed memory shared by kernels and the host matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
