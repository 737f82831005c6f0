//! GPU test: launch configurations that would be wrong are refused by
//! cuda-host before the driver sees them, with an error naming the kernel;
//! the same kernels launched correctly still compute the right answer. And
//! the module comes from the cubin the device linker assembled where the
//! GPU is the architecture it was built for (no JIT at load).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, HostError};
use std::process::ExitCode;

/// out[i] = i, indexed with x coordinates only.
#[kernel]
pub fn iota(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = idx.get() as u32;
    }
}

fn config(grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: shared }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4096)?;
    let module = load_kernel_module(&ctx, "launch_checks")?;
    match module.image().cubin {
        Some(cubin) => {
            let (major, minor) = ctx.compute_capability()?;
            let fits = !cuda_core::emulator::is_active() && major * 10 + minor == cubin.sm;
            if module.is_precompiled() != fits {
                return Err(format!(
                    "cubin for sm_{} on a {major}.{minor} GPU: loaded from it = {}, expected {fits}",
                    cubin.sm,
                    module.is_precompiled()
                )
                .into());
            }
            let how = if fits { "loaded from it" } else { "the PTX was JIT-compiled instead" };
            println!("image: {} bytes of cubin for sm_{}; {how}", cubin.bytes.len(), cubin.sm);
        }
        None => println!("image: no cubin (no ptxas at link time, or device debug info): the PTX was JIT-compiled"),
    }

    let cases: [(&str, LaunchConfig, fn(&HostError) -> bool); 4] = [
        ("2-D block of an index_1d kernel", config((16, 1, 1), (16, 16, 1), 0), |e| {
            matches!(e, HostError::SharedThreadIndices { .. })
        }),
        ("zero grid", config((0, 1, 1), (256, 1, 1), 0), |e| matches!(e, HostError::ZeroLaunchDimension { .. })),
        ("block over the kernel's limit", config((1, 1, 1), (2048, 1, 1), 0), |e| {
            matches!(e, HostError::BlockTooLarge { .. })
        }),
        ("shared memory over the limit", config((16, 1, 1), (256, 1, 1), 1 << 20), |e| {
            matches!(e, HostError::SharedMemoryTooLarge { .. })
        }),
    ];
    for (what, cfg, expected) in cases {
        match cuda_launch! { kernel: iota, stream: stream, module: module, config: cfg, args: [&mut out] } {
            Err(e) if expected(&e) && e.to_string().contains("launch_checks::iota") => println!("refused ({what}): {e}"),
            Err(e) => return Err(format!("{what}: wrong error: {e}").into()),
            Ok(()) => return Err(format!("{what}: the launch was accepted").into()),
        }
    }
    // The context is still healthy and the right launch works.
    cuda_launch! { kernel: iota, stream: stream, module: module, config: LaunchConfig::for_num_elems(4096), args: [&mut out] }?;
    let got = out.to_host_vec(&stream)?;
    if let Some(i) = (0..4096).find(|&i| got[i] != i as u32) {
        return Err(format!("element {i}: {}", got[i]).into());
    }
    Ok(4)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} wrong launch configurations refused before the driver; the right one computed 4096 elements");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
