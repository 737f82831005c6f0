//! GPU test: PTX's own float → integer conversion (`cvt.rzi`, written with
//! `ptx_asm!`) from f32 and f64 to every integer width, at the edges,
//! against a CPU model of what the GPU gives.
//!
//! The model is Rust's saturating `as` except for NaN, where the GPU is not
//! Rust: NaN gives 0 from f32 to 8–32 bits, and the destination's sign bit
//! alone (0x80, 0x8000, …, unsigned destinations too) from f64 or to 64
//! bits (measured on an H100). oxide-link therefore never relies on
//! `cvt.rzi` for a Rust cast (docs/DESIGN.md), and the PTX VM's `cvt` gives
//! these values, so that code which does (a pass, a user's inline PTX) fails
//! in the emulator as it would on the GPU. This program holds both to the
//! same table: on the GPU it checks the model, emulated it checks the VM.
//!
//! Prints `PASS: N results matched` (exit 0), or each mismatch and `FAIL`
//! (exit 1).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Results per input: f32 then f64, each to s8 u8 s16 u16 s32 u32 s64 u64.
const RESULTS: usize = 16;

#[kernel]
pub fn float_to_int_cvt(xs: &[f64], mut out: DisjointSlice<[u64; RESULTS]>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i >= xs.len() {
        return;
    }
    let d = xs[i];
    let f = d as f32;
    let (fs8, fu8, fs16, fu16, fs32, fu32): (u32, u32, u16, u16, u32, u32);
    let (ds8, du8, ds16, du16, ds32, du32): (u32, u32, u16, u16, u32, u32);
    let (fs64, fu64, ds64, du64): (u64, u64, u64, u64);
    // SAFETY: each block converts its input operand into its output
    // operand and touches nothing else.
    unsafe {
        ptx_asm!("{{ .reg .b32 t; cvt.rzi.s8.f32 t, {x}; and.b32 {d}, t, 255; }}", d = out(u32) fs8, x = in(f32) f, options(pure, nomem));
        ptx_asm!("{{ .reg .b32 t; cvt.rzi.u8.f32 t, {x}; and.b32 {d}, t, 255; }}", d = out(u32) fu8, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.s16.f32 {d}, {x};", d = out(u16) fs16, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.u16.f32 {d}, {x};", d = out(u16) fu16, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.s32.f32 {d}, {x};", d = out(u32) fs32, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.u32.f32 {d}, {x};", d = out(u32) fu32, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.s64.f32 {d}, {x};", d = out(u64) fs64, x = in(f32) f, options(pure, nomem));
        ptx_asm!("cvt.rzi.u64.f32 {d}, {x};", d = out(u64) fu64, x = in(f32) f, options(pure, nomem));
        ptx_asm!("{{ .reg .b32 t; cvt.rzi.s8.f64 t, {x}; and.b32 {d}, t, 255; }}", d = out(u32) ds8, x = in(f64) d, options(pure, nomem));
        ptx_asm!("{{ .reg .b32 t; cvt.rzi.u8.f64 t, {x}; and.b32 {d}, t, 255; }}", d = out(u32) du8, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.s16.f64 {d}, {x};", d = out(u16) ds16, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.u16.f64 {d}, {x};", d = out(u16) du16, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.s32.f64 {d}, {x};", d = out(u32) ds32, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.u32.f64 {d}, {x};", d = out(u32) du32, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.s64.f64 {d}, {x};", d = out(u64) ds64, x = in(f64) d, options(pure, nomem));
        ptx_asm!("cvt.rzi.u64.f64 {d}, {x};", d = out(u64) du64, x = in(f64) d, options(pure, nomem));
    }
    let r = [
        fs8 as u64, fu8 as u64, fs16 as u64, fu16 as u64, fs32 as u64, fu32 as u64, fs64, fu64,
        ds8 as u64, du8 as u64, ds16 as u64, du16 as u64, ds32 as u64, du32 as u64, ds64, du64,
    ];
    if let Some(slot) = out.get_mut(idx) {
        *slot = r;
    }
}

/// What `cvt.rzi` gives, as bits of a `bits`-wide destination: Rust's
/// saturating cast, but for NaN 0 from f32 below 64 bits, else the sign bit.
fn model(x: f64, from_f64: bool, bits: u32, signed: bool) -> u64 {
    if x.is_nan() {
        return if from_f64 || bits == 64 { 1 << (bits - 1) } else { 0 };
    }
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let v = match (bits, signed) {
        (8, true) => x as i8 as u64,
        (8, false) => x as u8 as u64,
        (16, true) => x as i16 as u64,
        (16, false) => x as u16 as u64,
        (32, true) => x as i32 as u64,
        (32, false) => x as u32 as u64,
        (64, true) => x as i64 as u64,
        _ => x as u64,
    };
    v & mask
}

fn expected(d: f64) -> [u64; RESULTS] {
    let f = d as f32 as f64;
    let mut r = [0u64; RESULTS];
    for (k, (bits, signed)) in [(8, true), (8, false), (16, true), (16, false), (32, true), (32, false), (64, true), (64, false)]
        .into_iter()
        .enumerate()
    {
        r[k] = model(f, false, bits, signed);
        r[8 + k] = model(d, true, bits, signed);
    }
    r
}

const NAMES: [&str; 8] = ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"];

/// Every boundary of every width (each side of it), infinities, NaNs of
/// both signs and several payloads, zeros, subnormals and fractions.
fn inputs() -> Vec<f64> {
    let mut xs = vec![
        f64::NAN, -f64::NAN, f64::from_bits(0x7ff0_0000_0000_0001), f64::from_bits(0xfff8_dead_beef_0000),
        f64::INFINITY, f64::NEG_INFINITY, 1e30, -1e30, 0.0, -0.0, 0.75, -0.5, -0.99, -1.0,
        f64::from_bits(1), -f64::from_bits(1), f64::MIN_POSITIVE, 3e9, -3e9, 1.9e19, 9.3e18, -9.3e18, 1e300, -1e300,
    ];
    for bits in [8, 16, 32, 64] {
        let max_u = 2f64.powi(bits);
        let max_s = 2f64.powi(bits - 1);
        for edge in [max_u, max_s, -max_s] {
            xs.extend([edge, edge - 1.0, edge + 1.0, edge - 0.5, edge + 0.5]);
        }
    }
    xs
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "float_to_int_cvt")?;
    let xs = inputs();
    let n = xs.len();
    let xs_dev = DeviceBuffer::from_host(&stream, &xs)?;
    let mut out = DeviceBuffer::<[u64; RESULTS]>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: float_to_int_cvt, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(xs_dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let mut bad = 0;
    for (i, &x) in xs.iter().enumerate() {
        let want = expected(x);
        for k in 0..RESULTS {
            if gpu[i][k] != want[k] {
                bad += 1;
                let from = if k < 8 { "f32" } else { "f64" };
                println!("mismatch: cvt.rzi.{}.{from} of {x:e} ({:#018x}): gpu {:#x}, model {:#x}", NAMES[k % 8], x.to_bits(), gpu[i][k], want[k]);
            }
        }
    }
    let total = n * RESULTS;
    if bad == 0 {
        println!("PASS: {total} results matched ({n} inputs, f32 and f64 to 8, 16, 32 and 64 bits, signed and unsigned)");
        Ok(true)
    } else {
        println!("FAIL: {bad} of {total} results differ");
        Ok(false)
    }
}
