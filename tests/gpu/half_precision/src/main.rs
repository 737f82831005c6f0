//! GPU test: f16, bf16 and their packed pairs (`cuda_device::half`) at the
//! boundary values — conversions in every rounding mode, arithmetic, fused
//! multiply-add, square roots, comparisons, the paired f16x2/bf16x2
//! instructions — and over all 65,536 patterns (f16 to f32 and back, both
//! square roots), against the same Rust on the CPU, which is the bit-exact
//! CPU model.
//!
//! Each (operation, inputs) is one thread of one kernel, which calls the
//! same `ops::evaluate` the host does. Results must match bit for bit; an
//! exact widening of a NaN (`cvt.f32.f16`) only has to be a NaN, its payload
//! being the hardware's choice. A second kernel takes `DeviceBuffer<f16>`s
//! and an `f16` argument directly; a third adds pairs atomically
//! (`atom.add.noftz.f16x2`/`.bf16x2`) and a fourth adds single values
//! (`atom.add.noftz.f16`/`.bf16`), with values whose sums are exact, so
//! the result does not depend on the order of the adds.
//!
//! Prints one line per operation, then `N results matched` (exit 0), or
//! every mismatching operation with its first failing input (exit 1).
//! Needs sm_90 (the bf16 and bf16x2 atomic adds; bf16 and the packed conversions need sm_80).

mod ops;

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::half::{bf16, bf16x2, f16, f16x2, AtomicBF16, AtomicBF16x2, AtomicF16, AtomicF16x2};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use ops::{Check, Shape};
use std::process::ExitCode;

/// One thread per (operation, inputs).
#[kernel]
pub fn half_ops(op: &[u32], x: &[u64], y: &[u64], z: &[u64], mut out: DisjointSlice<u64>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = ops::evaluate(op[i], x[i], y[i], z[i]);
    }
}

/// `out[i] = input[i] * scale + bias`, rounded once, on typed buffers.
#[kernel]
pub fn scale_f16(input: &[f16], scale: f16, bias: f16, mut out: DisjointSlice<f16>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = input[idx.get()].mul_add(scale, bias);
    }
}

/// Thread `i` adds pair `i` into cell `i % cells` of each buffer, atomically.
#[kernel]
pub fn accumulate(
    halves: &[f16x2],
    brains: &[bf16x2],
    cells: usize,
    mut f16_cells: DisjointSlice<f16x2>,
    mut bf16_cells: DisjointSlice<bf16x2>,
) {
    let i = thread::index_1d().get();
    if i < halves.len() {
        // SAFETY: the host sized both buffers to `cells` pairs; during the
        // launch they are only accessed through these atomics.
        unsafe {
            AtomicF16x2::from_ptr(f16_cells.as_mut_ptr().add(i % cells)).fetch_add(halves[i]);
            AtomicBF16x2::from_ptr(bf16_cells.as_mut_ptr().add(i % cells)).fetch_add(brains[i]);
        }
    }
}

/// Thread `i` adds `halves[i]` and `brains[i]` into cell `i % cells` of
/// each buffer with the scalar atomics.
#[kernel]
pub fn accumulate_scalar(
    halves: &[f16],
    brains: &[bf16],
    cells: usize,
    mut f16_cells: DisjointSlice<f16>,
    mut bf16_cells: DisjointSlice<bf16>,
) {
    let i = thread::index_1d().get();
    if i < halves.len() {
        // SAFETY: the host sized both buffers to `cells` values; during the
        // launch they are only accessed through these atomics.
        unsafe {
            AtomicF16::from_ptr(f16_cells.as_mut_ptr().add(i % cells)).fetch_add(halves[i]);
            AtomicBF16::from_ptr(bf16_cells.as_mut_ptr().add(i % cells)).fetch_add(brains[i]);
        }
    }
}

const F16_VALUES: [u16; 20] = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x8400, 0x3555, 0x3c00, 0xbc00, 0x3c01, 0x7bff, 0xfbff,
    0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x1400, 0x5640, 0x0200,
];
const BF16_VALUES: [u16; 20] = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x8080, 0x3eab, 0x3f80, 0xbf80, 0x3f81, 0x7f7f, 0xff7f,
    0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x3c00, 0x4348, 0x0040,
];

fn f32_values() -> Vec<u64> {
    let up = |x: f32| f32::from_bits(x.to_bits() + 1);
    let down = |x: f32| f32::from_bits(x.to_bits() - 1);
    let p = |e: i32| 2f32.powi(e);
    let values = [
        0.0, -0.0, 1.0, 1.0 / 3.0, -1.0 / 3.0, 0.1, -0.1, 65504.0, down(65520.0), 65520.0, -65520.0, 65536.0, 1e9,
        f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0xffc0_0001), p(-14), down(p(-14)), p(-24),
        p(-25), up(p(-25)), p(-26), -p(-25), 1.0 + p(-11), up(1.0 + p(-11)), 1.0 + 3.0 * p(-11), 1.0 + p(-8),
        up(1.0 + p(-8)), 1.0 + 3.0 * p(-8), f32::MAX, f32::MIN, f32::MIN_POSITIVE, f32::from_bits(1),
        f32::from_bits(0x8000_0001), f32::from_bits(0x7f7f_8000), f32::from_bits(0x7f7f_7fff), p(-133), p(-134),
    ];
    values.iter().map(|v| v.to_bits() as u64).collect()
}

fn f64_values() -> Vec<u64> {
    let p = |e: i32| 2f64.powi(e);
    let values = [
        0.0, -0.0, 1.0, 1.0 / 3.0, -0.1, 1.0 + p(-11) + p(-40), 1.0 + p(-11), 1.0 + p(-8) + p(-40), 1.0 + p(-8),
        65520.0, 65520.0 - p(-30), -65520.0 + p(-30), 1e300, -1e-300, p(-25), p(-25) + p(-60), p(-24), p(-14),
        f64::NAN, f64::INFINITY, f64::NEG_INFINITY, p(-133), p(-134), p(-134) + p(-170), -p(-134),
        f64::MIN_POSITIVE, f64::MAX, 3.3895313892515355e38, 3.402823466385289e38,
    ];
    // NaNs with payloads and both signs: conversions from f64 keep the sign
    // and the leading fraction bits on the GPU (they were once modelled as
    // the canonical NaN, and the check let any NaN pass).
    let nans = [0x7ff4_0000_0000_0000, 0xfff8_0400_0000_0000, 0x7ff0_0000_0000_0001, 0x7fff_ffff_ffff_ffff];
    values.iter().map(|v| v.to_bits()).chain(nans).collect()
}

/// Every input triple of an operation of this shape.
fn inputs(shape: Shape) -> Vec<[u64; 3]> {
    let words = |v: &[u16]| v.iter().map(|&b| b as u64).collect::<Vec<_>>();
    let pairs = |v: &[u16]| {
        (0..v.len()).map(|i| v[i] as u64 | (v[(i * 7 + 3) % v.len()] as u64) << 16).collect::<Vec<_>>()
    };
    let tuples = |v: Vec<u64>, arity: u8| -> Vec<[u64; 3]> {
        match arity {
            1 => v.iter().map(|&a| [a, 0, 0]).collect(),
            2 => v.iter().flat_map(|&a| v.iter().map(move |&b| [a, b, 0])).collect(),
            _ => {
                let v: Vec<u64> = v.into_iter().step_by(2).collect();
                let mut out = Vec::new();
                for &a in &v {
                    for &b in &v {
                        for &c in &v {
                            out.push([a, b, c]);
                        }
                    }
                }
                out
            }
        }
    };
    match shape {
        Shape::F32 => tuples(f32_values(), 1),
        Shape::F64 => tuples(f64_values(), 1),
        Shape::F32Pair => tuples(f32_values(), 2),
        Shape::F16(n) => tuples(words(&F16_VALUES), n),
        Shape::BF16(n) => tuples(words(&BF16_VALUES), n),
        Shape::F16x2(n) => tuples(pairs(&F16_VALUES), n),
        Shape::BF16x2(n) => tuples(pairs(&BF16_VALUES), n),
        Shape::AllPatterns => tuples((0..=u16::MAX as u64).collect(), 1),
    }
}

/// Whether the GPU's result is the CPU's: bit for bit, NaNs included (the
/// model says which NaN each instruction gives).
fn matches(check: Check, gpu: u64, cpu: u64) -> bool {
    match check {
        Check::Bits | Check::F32 | Check::F64 | Check::F32Pair => gpu == cpu,
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "half_precision")?;

    let (mut op, mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for o in 0..ops::COUNT {
        for [a, b, c] in inputs(ops::shape(o)) {
            op.push(o);
            x.push(a);
            y.push(b);
            z.push(c);
        }
    }
    let n = op.len();
    let op_dev = DeviceBuffer::from_host(&stream, &op)?;
    let x_dev = DeviceBuffer::from_host(&stream, &x)?;
    let y_dev = DeviceBuffer::from_host(&stream, &y)?;
    let z_dev = DeviceBuffer::from_host(&stream, &z)?;
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: half_ops, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(op_dev), slice(x_dev), slice(y_dev), slice(z_dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;

    let mut failed = false;
    let mut matched = 0;
    for o in 0..ops::COUNT {
        let mut count = 0;
        let mut first = None;
        let mut total = 0;
        for i in (0..n).filter(|&i| op[i] == o) {
            total += 1;
            let cpu = ops::evaluate(o, x[i], y[i], z[i]);
            if matches(ops::check(o), gpu[i], cpu) {
                matched += 1;
            } else {
                count += 1;
                first.get_or_insert((x[i], y[i], z[i], gpu[i], cpu));
            }
        }
        match first {
            None => println!("ok    {:<30} {total} results", ops::name(o)),
            Some((a, b, c, g, h)) => {
                failed = true;
                println!(
                    "FAIL  {:<30} {count} of {total}: first x={a:#x} y={b:#x} z={c:#x}: GPU {g:#x} CPU {h:#x}",
                    ops::name(o)
                );
            }
        }
    }

    // Typed buffers and an f16 argument.
    let input: Vec<f16> = F16_VALUES.iter().map(|&b| f16::from_bits(b)).collect();
    let (scale, bias) = (f16::from_f32(-1.5), f16::from_f64(0.1));
    let input_dev = DeviceBuffer::from_host(&stream, &input)?;
    let mut scaled = DeviceBuffer::<f16>::zeroed(&stream, input.len())?;
    cuda_launch! {
        kernel: scale_f16, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(input.len() as u32),
        args: [slice(input_dev), scale, bias, slice_mut(scaled)]
    }?;
    let scaled = scaled.to_host_vec(&stream)?;
    let wrong: Vec<String> = input
        .iter()
        .zip(&scaled)
        .filter(|(v, s)| v.mul_add(scale, bias).to_bits() != s.to_bits())
        .map(|(v, s)| format!("{v:?} -> GPU {:#06x} CPU {:#06x}", s.to_bits(), v.mul_add(scale, bias).to_bits()))
        .collect();
    if wrong.is_empty() {
        matched += input.len();
        println!("ok    {:<30} {} results", "DeviceBuffer<f16> mul_add", input.len());
    } else {
        failed = true;
        println!("FAIL  DeviceBuffer<f16> mul_add: {}", wrong.join(", "));
    }
    // Atomic adds: 512 threads into 8 cells, small multiples of 1/4 (f16)
    // and whole numbers (bf16), so every partial sum is exact.
    let (threads, cells) = (512usize, 8usize);
    let halves: Vec<f16x2> = (0..threads)
        .map(|i| f16x2::new(f16::from_f32(0.5 * (i % 3 + 1) as f32), f16::from_f32(-0.25 * (i % 5 + 1) as f32)))
        .collect();
    let brains: Vec<bf16x2> =
        (0..threads).map(|i| bf16x2::new(bf16::from_f32((i % 2 + 1) as f32), bf16::NEG_ONE)).collect();
    let halves_dev = DeviceBuffer::from_host(&stream, &halves)?;
    let brains_dev = DeviceBuffer::from_host(&stream, &brains)?;
    let mut f16_cells = DeviceBuffer::<f16x2>::zeroed(&stream, cells)?;
    let mut bf16_cells = DeviceBuffer::<bf16x2>::zeroed(&stream, cells)?;
    cuda_launch! {
        kernel: accumulate, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(threads as u32),
        args: [slice(halves_dev), slice(brains_dev), cells, slice_mut(f16_cells), slice_mut(bf16_cells)]
    }?;
    let (f16_got, bf16_got) = (f16_cells.to_host_vec(&stream)?, bf16_cells.to_host_vec(&stream)?);
    let mut atomic_ok = true;
    for c in 0..cells {
        let lanes = |i: usize| (halves[i].to_f32s(), brains[i].to_f32s());
        let (mut h, mut b) = ((0.0f64, 0.0f64), (0.0f64, 0.0f64));
        for i in (c..threads).step_by(cells) {
            let ((h0, h1), (b0, b1)) = lanes(i);
            h = (h.0 + h0 as f64, h.1 + h1 as f64);
            b = (b.0 + b0 as f64, b.1 + b1 as f64);
        }
        let h_want = f16x2::new(f16::from_f64(h.0), f16::from_f64(h.1));
        let b_want = bf16x2::new(bf16::from_f64(b.0), bf16::from_f64(b.1));
        if f16_got[c].to_bits() != h_want.to_bits() || bf16_got[c].to_bits() != b_want.to_bits() {
            atomic_ok = false;
            println!(
                "FAIL  atomic add cell {c}: GPU {:?} {:?}, exact {:?} {:?}",
                f16_got[c], bf16_got[c], h_want, b_want
            );
        }
    }
    if atomic_ok {
        matched += 2 * cells;
        println!("ok    {:<30} {} results", "AtomicF16x2/AtomicBF16x2 add", 2 * cells);
    } else {
        failed = true;
    }

    // Scalar atomic adds: 768 threads into 6 cells (so neighbouring 16-bit
    // cells share 32-bit words), multiples of 1/8 (f16) and of 1/2 (bf16)
    // whose partial sums stay exact.
    let (threads, cells) = (768usize, 6usize);
    let halves: Vec<f16> = (0..threads).map(|i| f16::from_f32(0.125 * (i % 7) as f32 - 0.25)).collect();
    let brains: Vec<bf16> = (0..threads).map(|i| bf16::from_f32(0.5 * (i % 3) as f32 - 0.5 * (i % 2) as f32)).collect();
    let halves_dev = DeviceBuffer::from_host(&stream, &halves)?;
    let brains_dev = DeviceBuffer::from_host(&stream, &brains)?;
    let mut f16_cells = DeviceBuffer::<f16>::zeroed(&stream, cells)?;
    let mut bf16_cells = DeviceBuffer::<bf16>::zeroed(&stream, cells)?;
    cuda_launch! {
        kernel: accumulate_scalar, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(threads as u32),
        args: [slice(halves_dev), slice(brains_dev), cells, slice_mut(f16_cells), slice_mut(bf16_cells)]
    }?;
    let (f16_got, bf16_got) = (f16_cells.to_host_vec(&stream)?, bf16_cells.to_host_vec(&stream)?);
    let mut scalar_ok = true;
    for c in 0..cells {
        let h: f64 = (c..threads).step_by(cells).map(|i| halves[i].to_f64()).sum();
        let b: f64 = (c..threads).step_by(cells).map(|i| brains[i].to_f64()).sum();
        let (h_want, b_want) = (f16::from_f64(h), bf16::from_f64(b));
        // The test's own premise: the sums are exact in both formats.
        assert!(h_want.to_f64() == h && b_want.to_f64() == b, "cell {c}: the sums must be exact");
        if f16_got[c].to_bits() != h_want.to_bits() || bf16_got[c].to_bits() != b_want.to_bits() {
            scalar_ok = false;
            println!("FAIL  scalar atomic add cell {c}: GPU {:?} {:?}, exact {h} {b}", f16_got[c], bf16_got[c]);
        }
    }
    if scalar_ok {
        matched += 2 * cells;
        println!("ok    {:<30} {} results", "AtomicF16/AtomicBF16 add", 2 * cells);
    } else {
        failed = true;
    }

    // One sanity line a reader can check by hand.
    println!("      f16 0.1 = {:#06x}, bf16 1/3 = {:#06x}", f16::from_f32(0.1).to_bits(), bf16::from_f64(1.0 / 3.0).to_bits());

    if !failed {
        println!("✓ SUCCESS: {matched} half-precision results matched the CPU");
    }
    Ok(!failed)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
