//! GPU test: std's float math on the device (lowered to libdevice) agrees with
//! the same Rust functions on the CPU: exactly where IEEE 754 requires a
//! correctly rounded result, within 2 ulp for the transcendental functions.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Every function applied to one input; the kernel and the CPU both call it.
const FUNCTIONS: usize = 12;
fn apply(f: usize, x: f32) -> f32 {
    match f {
        0 => x.sqrt(),
        1 => x.abs().floor(),
        2 => x.mul_add(1.5, -0.25),
        3 => x.sin(),
        4 => x.cos(),
        5 => x.exp(),
        6 => x.abs().ln(),
        7 => x.abs().powf(1.7),
        8 => x.cbrt(),
        9 => x.tanh(),
        10 => x.atan2(0.75),
        _ => x.powi(3),
    }
}
/// Functions whose result IEEE 754 defines exactly.
fn is_exact(f: usize) -> bool {
    f <= 2
}

#[kernel]
pub fn float_math(input: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = apply(i % FUNCTIONS, input[i / FUNCTIONS]);
    }
}

fn ulps(a: f32, b: f32) -> u32 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        if bits < 0 { i32::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let mut inputs: Vec<f32> = (0..4000).map(|i| (i as f32 - 2000.0) * 0.0137).collect();
    inputs.extend([0.0, -0.0, 1.0, -1.0, f32::MIN_POSITIVE, 1e-30, 88.0, -87.0, f32::INFINITY, f32::NAN]);
    let n = inputs.len() * FUNCTIONS;

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let input = DeviceBuffer::from_host(&stream, &inputs)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, n)?;
    let module = load_kernel_module(&ctx, "float_math")?;
    cuda_launch! {
        kernel: float_math, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(input), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let mut worst = [0u32; FUNCTIONS];
    for (i, &g) in gpu.iter().enumerate() {
        let (f, x) = (i % FUNCTIONS, inputs[i / FUNCTIONS]);
        let c = apply(f, x);
        let d = ulps(g, c);
        worst[f] = worst[f].max(d);
        let allowed = if is_exact(f) { 0 } else { 2 };
        if d > allowed {
            return Err(format!("function {f} at x = {x:e}: GPU {g:e}, CPU {c:e} ({d} ulp)").into());
        }
    }
    println!("worst ulp per function: {worst:?}");
    Ok(n)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} float results matched the CPU (exact or ≤ 2 ulp)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
