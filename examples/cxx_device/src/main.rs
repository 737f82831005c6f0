//! cxx_device: Rust kernels calling CUDA C++ `__device__` functions, and a
//! CUDA C++ kernel calling a Rust `#[device]` function, in one device link.
//!
//! `src/ops.cu` is CUDA C++; `build.rs` names it with
//! `cargo::rustc-link-arg=--oxide-device-source=src/ops.cu`, and the device
//! linker compiles it with nvcc and links it with the kernels into one PTX
//! module (docs/DESIGN.md, "CUDA C++ device code"). The kernels declare
//! what they call in an `extern "C"` block, libdevice's `__nv_sinf`
//! included, and one of them calls a vendor device library: CUB's
//! `BlockReduce`, a header library of the CUDA toolkit that ops.cu includes
//! and nvcc compiles into the same link. The CUDA C++ kernel `cxx_cubes` is
//! launched through `extern_kernels!`'s typed launcher. Every result is checked against the same computation on the
//! CPU, bit for bit (the sine within libdevice's documented error).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{device, kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, extern_kernels, load_kernel_module, HostError};
use std::process::ExitCode;

extern_kernels! {
    /// ops.cu: `extern "C" __global__ void cxx_cubes(const float *in, float *out, int n)`.
    fn cxx_cubes(input: *const f32, output: *mut f32, n: i32);
}

/// Wrong declarations of the same kernel, which its launches refuse.
mod misdeclared {
    cuda_host::extern_kernels! {
        /// `n` declared 64-bit: the C++ `int` is 4 bytes.
        pub fn cxx_cubes(input: *const f32, output: *mut f32, n: i64);
    }
    /// A name no device source defines.
    pub mod missing {
        cuda_host::extern_kernels! {
            /// Not in ops.cu.
            pub fn cxx_squares(input: *const f32, output: *mut f32, n: i32);
        }
    }
}

/// The C++ `struct Affine` of ops.cu, passed by pointer (a struct by value
/// cannot cross: the device linker says why).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Affine {
    scale: f32,
    shift: f32,
}

extern "C" {
    /// (a·x + b)·x + 1, each step rounded once (ops.cu).
    fn cxx_poly(x: f32, a: f32, b: f32) -> f32;
    /// A multiply-xorshift mix of `h` and `v` (ops.cu).
    fn cxx_mix(h: u32, v: u32) -> u32;
    /// scale·x + shift, rounded once (ops.cu).
    fn cxx_affine(t: *const Affine, x: f32) -> f32;
    /// CUDA C++'s `sinf` (ops.cu).
    fn cxx_sin(x: f32) -> f32;
    /// CUB's `BlockReduce` sum over a block of [`CXX_BLOCK`] threads, all of
    /// which call it; thread 0 gets the sum (ops.cu).
    fn cxx_block_sum(v: u32) -> u32;
    /// libdevice's sine, by its own name.
    fn __nv_sinf(x: f32) -> f32;
}

/// x³, exported to CUDA C++: ops.cu's `cxx_cubes` kernel calls it.
#[device]
#[no_mangle]
pub extern "C" fn rust_cube(x: f32) -> f32 {
    x * x * x
}

/// The block size ops.cu's `cxx_block_sum` is compiled for.
const CXX_BLOCK: u32 = 256;

/// `sums[block]` = the sum of this block's keys, by CUB's block reduction
/// (a vendor device library, through ops.cu). Launched with CXX_BLOCK
/// threads per block over a multiple of CXX_BLOCK keys.
#[kernel]
pub fn block_sums(keys: &[u32], mut sums: DisjointSlice<u32>) {
    let i = (thread::blockIdx_x() * CXX_BLOCK + thread::threadIdx_x()) as usize;
    // SAFETY: every thread of the block calls it (the launch covers whole
    // blocks of keys); it reads only its argument and its own shared memory.
    let sum = unsafe { cxx_block_sum(keys[i]) };
    if thread::threadIdx_x() == 0 {
        // SAFETY: thread 0 of each block alone writes its block's element.
        unsafe { *sums.get_unchecked_mut(thread::blockIdx_x() as usize) = sum };
    }
}

#[kernel]
pub fn poly(xs: &[f32], a: f32, b: f32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        // SAFETY: ops.cu defines cxx_poly with this signature; it reads only its arguments.
        *o = unsafe { cxx_poly(xs[idx.get()], a, b) };
    }
}

#[kernel]
pub fn mix(keys: &[u32], seed: u32, mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        // SAFETY: as above, for cxx_mix.
        *o = unsafe { cxx_mix(seed, keys[idx.get()]) };
    }
}

#[kernel]
pub fn affine_sin(xs: &[f32], t: Affine, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        // SAFETY: cxx_affine reads the C++ Affine, whose layout #[repr(C)]
        // Affine has, through the pointer, during the call; __nv_sinf is
        // libdevice's sinf.
        *o = unsafe { __nv_sinf(cxx_affine(&t, xs[idx.get()])) };
    }
}

#[kernel]
pub fn sines(xs: &[f32], scale: f32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        let x = xs[idx.get()] * scale;
        // SAFETY: cxx_sin and __nv_sinf read only their argument.
        *o = unsafe { cxx_sin(x) - __nv_sinf(x) };
    }
}

/// The CPU's cxx_poly.
fn cpu_poly(x: f32, a: f32, b: f32) -> f32 {
    a.mul_add(x, b).mul_add(x, 1.0)
}

/// The CPU's cxx_mix.
fn cpu_mix(h: u32, v: u32) -> u32 {
    let mut h = h ^ v;
    h = h.wrapping_mul(0x9E37_79B1);
    h ^= h >> 15;
    h = h.wrapping_mul(0x85EB_CA77);
    h ^ (h >> 13)
}

fn first_mismatch<T: Copy + std::fmt::Debug>(
    label: &str,
    got: &[T],
    want: impl Fn(usize) -> T,
    same: impl Fn(T, T) -> bool,
) -> Result<(), String> {
    match (0..got.len()).find(|&i| !same(got[i], want(i))) {
        None => Ok(()),
        Some(i) => Err(format!("{label}[{i}]: GPU {:?}, CPU {:?}", got[i], want(i))),
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 4096;
    let xs: Vec<f32> = (0..N).map(|i| (i as f32 / N as f32) * 6.0 - 3.0).collect();
    let keys: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let (a, b, seed) = (0.75f32, -1.25f32, 0xC0FF_EE11u32);
    let t = Affine { scale: 1.5, shift: 0.25 };

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let x_dev = DeviceBuffer::from_host(&stream, &xs)?;
    let k_dev = DeviceBuffer::from_host(&stream, &keys)?;
    let mut f_out = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    let mut u_out = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let module = load_kernel_module(&ctx, "cxx_device")?;
    let config = LaunchConfig::for_num_elems(N as u32);

    cuda_launch! { kernel: poly, stream: stream, module: module, config: config,
                   args: [slice(x_dev), a, b, slice_mut(f_out)] }?;
    let got = f_out.to_host_vec(&stream)?;
    first_mismatch("poly", &got, |i| cpu_poly(xs[i], a, b), |g, w| g.to_bits() == w.to_bits())?;

    cuda_launch! { kernel: mix, stream: stream, module: module, config: config,
                   args: [slice(k_dev), seed, slice_mut(u_out)] }?;
    let got = u_out.to_host_vec(&stream)?;
    first_mismatch("mix", &got, |i| cpu_mix(seed, keys[i]), |g, w| g == w)?;

    cuda_launch! { kernel: affine_sin, stream: stream, module: module, config: config,
                   args: [slice(x_dev), t, slice_mut(f_out)] }?;
    let got = f_out.to_host_vec(&stream)?;
    // libdevice's sinf is within 2 ulp of the exact sine; the CPU's in f64
    // rounded to f32 is within half an ulp.
    first_mismatch(
        "affine_sin",
        &got,
        |i| (t.scale.mul_add(xs[i], t.shift) as f64).sin() as f32,
        |g, w| (g - w).abs() <= 3.0 * f32::EPSILON * w.abs().max(f32::MIN_POSITIVE),
    )?;

    // nvcc's sinf and libdevice's, each with its own copy of the reduction
    // table, on arguments large enough to need it: the same algorithm, so
    // the same bits.
    cuda_launch! { kernel: sines, stream: stream, module: module, config: config,
                   args: [slice(x_dev), 1.0e6f32, slice_mut(f_out)] }?;
    let got = f_out.to_host_vec(&stream)?;
    first_mismatch("sines", &got, |_| 0.0f32, |g, w| g.to_bits() == w.to_bits())?;

    // CUB's block reduction, called from a Rust kernel.
    let blocks = N / CXX_BLOCK as usize;
    let mut sums = DeviceBuffer::<u32>::zeroed(&stream, blocks)?;
    let whole_blocks = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (CXX_BLOCK, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! { kernel: block_sums, stream: stream, module: module, config: whole_blocks,
                   args: [slice(k_dev), slice_mut(sums)] }?;
    let got = sums.to_host_vec(&stream)?;
    let block_sum = |b: usize| keys[b * CXX_BLOCK as usize..(b + 1) * CXX_BLOCK as usize].iter().fold(0u32, |s, &k| s.wrapping_add(k));
    first_mismatch("block_sums (CUB)", &got, block_sum, |g, w| g == w)?;

    // The CUDA C++ kernel, through its typed launcher, calling the Rust rust_cube.
    // SAFETY: cxx_cubes reads n floats of `input` and writes n of `output`;
    // both buffers hold N.
    unsafe { cxx_cubes(&module, &stream, config, &x_dev, &mut f_out, N as i32)? };
    let got = f_out.to_host_vec(&stream)?;
    first_mismatch("cxx_cubes", &got, |i| xs[i] * xs[i] * xs[i], |g, w| g.to_bits() == w.to_bits())?;
    // SAFETY (both): refused before the launch, as checked below.
    match unsafe { misdeclared::cxx_cubes(&module, &stream, config, &x_dev, &mut f_out, N as i64) } {
        Err(HostError::ExternParams { declared, found, .. }) if declared == [8, 8, 8] && found == [8, 8, 4] => {}
        other => return Err(format!("cxx_cubes declared with an i64 count was not refused: {other:?}").into()),
    }
    match unsafe { misdeclared::missing::cxx_squares(&module, &stream, config, &x_dev, &mut f_out, N as i32) } {
        Err(HostError::ExternKernelNotFound { .. }) => {}
        other => return Err(format!("a kernel no device source defines was not refused: {other:?}").into()),
    }
    Ok(N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} elements each of 4 Rust kernels calling CUDA C++, a block reduction by CUB's headers, and 1 CUDA C++ kernel calling Rust (typed launcher) matched the CPU; 2 misdeclared launchers refused");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
