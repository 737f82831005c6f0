//! constant_poly: a polynomial whose coefficients live in constant memory.
//!
//! Every thread evaluates the same polynomial, so all threads of a warp read
//! the same coefficient at the same time: the access constant memory's
//! broadcast cache is made for. The host runs the kernel with the coefficients
//! the Rust initialiser gives, then replaces them with `set_constant` and runs
//! it again; both results are checked against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{constant, kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const DEGREE: usize = 8;

#[constant]
static COEFFS: [f32; DEGREE] = [1.0, -0.5, 0.25, -0.125, 0.0625, -0.03125, 0.015625, -0.0078125];

/// Horner's rule with the coefficients in `coeffs`, lowest degree first;
/// the kernel and the CPU both call it.
fn horner(coeffs: &[f32; DEGREE], x: f32) -> f32 {
    coeffs.iter().rev().fold(0.0, |acc, &c| acc.mul_add(x, c))
}

/// `out[i] = COEFFS(x[i])`.
#[kernel]
pub fn polynomial(x: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = horner(&COEFFS, x[idx.get()]);
    }
}

fn check(gpu: &[f32], xs: &[f32], coeffs: &[f32; DEGREE], label: &str) -> Result<(), String> {
    match (0..xs.len()).find(|&i| gpu[i].to_bits() != horner(coeffs, xs[i]).to_bits()) {
        None => Ok(()),
        Some(i) => Err(format!("{label}: x = {}: GPU {} CPU {}", xs[i], gpu[i], horner(coeffs, xs[i]))),
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 1 << 20;
    let xs: Vec<f32> = (0..N).map(|i| (i as f32 / N as f32) * 4.0 - 2.0).collect();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let x_dev = DeviceBuffer::from_host(&stream, &xs)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "constant_poly")?;
    let config = LaunchConfig::for_num_elems(N as u32);

    cuda_launch! { kernel: polynomial, stream: stream, module: module, config: config,
                   args: [slice(x_dev), slice_mut(out)] }?;
    let initial: [f32; DEGREE] = *COEFFS;
    check(&out.to_host_vec(&stream)?, &xs, &initial, "initial coefficients")?;

    let updated: [f32; DEGREE] = [0.5, 1.5, -2.0, 0.75, 0.0, 0.125, -0.25, 1.0];
    module.set_constant(&COEFFS, &updated)?;
    cuda_launch! { kernel: polynomial, stream: stream, module: module, config: config,
                   args: [slice(x_dev), slice_mut(out)] }?;
    check(&out.to_host_vec(&stream)?, &xs, &updated, "coefficients set by the host")?;
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} evaluations matched the CPU with the initial and the host-set coefficients");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
