//! The one non-generic library kernel, `conformance_device::saxpy`, launched
//! from this crate and checked like a case.

use crate::compare::Compare;
use crate::harness::{Gpu, Outcome, Suite};
use conformance_device::saxpy_element;
use cuda_core::{DeviceBuffer, LaunchConfig};
use cuda_host::cuda_launch;
use std::error::Error;

/// A factor with a full mantissa, so that a fused multiply-add (which Rust
/// forbids here) would round differently from the separate multiply and add.
const ALPHA: f32 = 1.1;

/// What the output holds before the launch (see `harness::POISON`).
const POISON: f32 = -1234.5;

/// Runs `kernel/saxpy` over the suite's inputs read as `f32`s and records it.
pub fn check(suite: &mut Suite) {
    let Some(gpu) = suite.gpu() else {
        return;
    };
    let (a, b) = suite.inputs();
    let x: Vec<f32> = a.iter().map(|&bits| f32::from_bits(bits as u32)).collect();
    let y: Vec<f32> = b.iter().map(|&bits| f32::from_bits(bits as u32)).collect();
    let outcome = match run(gpu, &x, &y) {
        Ok(gpu_results) => {
            let cpu: Vec<u128> = x
                .iter()
                .zip(&y)
                .map(|(&x, &y)| saxpy_element(ALPHA, x, y).to_bits().into())
                .collect();
            suite.compare(Compare::F32Ulp(0), &gpu_results, &cpu)
        }
        Err(e) => Outcome::Error(e.to_string()),
    };
    suite.record("kernel/saxpy", outcome);
}

/// `ALPHA * x + y` on the GPU, as bits.
fn run(gpu: &Gpu, x: &[f32], y: &[f32]) -> Result<Vec<u128>, Box<dyn Error>> {
    let device_x = DeviceBuffer::from_host(&gpu.stream, x)?;
    let device_y = DeviceBuffer::from_host(&gpu.stream, y)?;
    let mut out = DeviceBuffer::from_host(&gpu.stream, &vec![POISON; x.len()])?;
    cuda_launch! {
        kernel: conformance_device::saxpy, stream: gpu.stream, module: gpu.module,
        config: LaunchConfig::for_num_elems(x.len() as u32),
        args: [ALPHA, slice(device_x), slice(device_y), slice_mut(out)]
    }?;
    Ok(out
        .to_host_vec(&gpu.stream)?
        .iter()
        .map(|v| v.to_bits().into())
        .collect())
}
