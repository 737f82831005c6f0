//! GPU test: the shared memory of a `static` in a generic kernel belongs
//! to each instance alone. Two generic kernels with a 24 KiB shared array
//! each, two instances apiece, and a generic kernel with a small shared
//! tile that asks for 40 KiB of dynamic shared memory: every kernel fits
//! CUDA's default 48 KiB per block only if it is given its own statics and
//! no other kernel's. Such statics are reached by several parts of the
//! split device module; oxide-link defines them in each part
//! (SplitByKernel.cpp) because nvlink, given them as external symbols, laid
//! them out once for the whole image (the debug build of examples/primitives
//! gave every `select_tiles` kernel 33 KB of the sort's arrays). This
//! program is a check of the rule on the GPU, not a reproduction: with the
//! old rule its image happened to come out right. Every result is checked
//! against the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{dynamic_shared, kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 256;
const BLOCKS: usize = 4;
/// 24 KiB of u32.
const WORDS: usize = 6144;
/// 40 KiB of u32.
const DYNAMIC_WORDS: usize = 10240;

/// The element types the kernels are instantiated for.
pub trait Word: Copy {
    fn from_u32(x: u32) -> Self;
}
impl Word for u32 {
    fn from_u32(x: u32) -> Self {
        x
    }
}
impl Word for u64 {
    fn from_u32(x: u32) -> Self {
        x as u64 | 1 << 40
    }
}

/// What slot k of an array holds for `seed`.
fn slot(k: usize, seed: u32) -> u32 {
    (k as u32).wrapping_mul(2654435761) ^ seed
}

/// What thread t reads back: two slots far apart, written by other threads.
fn reads(t: usize, len: usize) -> (usize, usize) {
    ((t * 7 + 1) % len, len - 1 - t)
}

#[kernel]
pub fn array_a<T: Word>(seed: u32, mut out: DisjointSlice<T>) {
    shared! { static A: [u32; WORDS]; }
    let t = thread::threadIdx_x() as usize;
    let mut k = t;
    while k < WORDS {
        // SAFETY: slot k is this thread's alone until the barrier.
        unsafe { A.write(k, slot(k, seed)) };
        k += BLOCK;
    }
    thread::sync_threads();
    let (i, j) = reads(t, WORDS);
    // SAFETY: after the barrier nothing writes A.
    let v = unsafe { A.read(i).wrapping_add(A.read(j)) };
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = T::from_u32(v);
    }
}

#[kernel]
pub fn array_b<T: Word>(seed: u32, mut out: DisjointSlice<T>) {
    shared! { static B: [u32; WORDS]; }
    let t = thread::threadIdx_x() as usize;
    let mut k = t;
    while k < WORDS {
        // SAFETY: slot k is this thread's alone until the barrier.
        unsafe { B.write(k, slot(k, seed) ^ 0x5555) };
        k += BLOCK;
    }
    thread::sync_threads();
    let (i, j) = reads(t, WORDS);
    // SAFETY: after the barrier nothing writes B.
    let v = unsafe { B.read(i) ^ B.read(j) };
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = T::from_u32(v);
    }
}

#[kernel]
pub fn tile<T: Word>(seed: u32, mut out: DisjointSlice<T>) {
    shared! { static TILE: [u32; BLOCK]; }
    let t = thread::threadIdx_x() as usize;
    // SAFETY: the launch gives DYNAMIC_WORDS u32s (checked by `len`); each
    // slot is written by one thread before the barrier, read after it.
    let v = unsafe {
        let (dynamic, len) = dynamic_shared::<u32>();
        let mut k = t;
        while k < len {
            dynamic.add(k).write(slot(k, seed));
            k += BLOCK;
        }
        TILE.write(t, seed.wrapping_add(t as u32));
        thread::sync_threads();
        if len != DYNAMIC_WORDS {
            u32::MAX
        } else {
            let (i, j) = reads(t, len);
            dynamic.add(i).read().wrapping_mul(3) ^ dynamic.add(j).read() ^ TILE.read(BLOCK - 1 - t)
        }
    };
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = T::from_u32(v);
    }
}

/// The CPU's results of the three kernels for `seed` (thread g, block-local t).
fn expected(kernel: &str, seed: u32) -> Vec<u32> {
    (0..BLOCK * BLOCKS)
        .map(|g| {
            let t = g % BLOCK;
            match kernel {
                "array_a" => {
                    let (i, j) = reads(t, WORDS);
                    slot(i, seed).wrapping_add(slot(j, seed))
                }
                "array_b" => {
                    let (i, j) = reads(t, WORDS);
                    (slot(i, seed) ^ 0x5555) ^ (slot(j, seed) ^ 0x5555)
                }
                _ => {
                    let (i, j) = reads(t, DYNAMIC_WORDS);
                    slot(i, seed).wrapping_mul(3) ^ slot(j, seed) ^ seed.wrapping_add((BLOCK - 1 - t) as u32)
                }
            }
        })
        .collect()
}

fn check<T: Word + PartialEq + std::fmt::Debug>(name: &str, got: &[T], want: &[u32]) -> Result<(), String> {
    match got.iter().zip(want).position(|(g, &w)| *g != T::from_u32(w)) {
        Some(i) => Err(format!("{name}: element {i} is {:?}, the CPU says {:?}", got[i], T::from_u32(want[i]))),
        None => Ok(()),
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "shared_per_kernel")?;
    let n = BLOCK * BLOCKS;
    let plain = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    let dynamic = LaunchConfig { shared_mem_bytes: (DYNAMIC_WORDS * 4) as u32, ..plain };
    let mut checks = 0;
    let mut o32 = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let mut o64 = DeviceBuffer::<u64>::zeroed(&stream, n)?;

    cuda_launch! { kernel: array_a::<u32>, stream: stream, module: module, config: plain, args: [11u32, slice_mut(o32)] }?;
    check("array_a::<u32>", &o32.to_host_vec(&stream)?, &expected("array_a", 11))?;
    cuda_launch! { kernel: array_a::<u64>, stream: stream, module: module, config: plain, args: [12u32, slice_mut(o64)] }?;
    check("array_a::<u64>", &o64.to_host_vec(&stream)?, &expected("array_a", 12))?;
    cuda_launch! { kernel: array_b::<u32>, stream: stream, module: module, config: plain, args: [13u32, slice_mut(o32)] }?;
    check("array_b::<u32>", &o32.to_host_vec(&stream)?, &expected("array_b", 13))?;
    cuda_launch! { kernel: array_b::<u64>, stream: stream, module: module, config: plain, args: [14u32, slice_mut(o64)] }?;
    check("array_b::<u64>", &o64.to_host_vec(&stream)?, &expected("array_b", 14))?;
    cuda_launch! { kernel: tile::<u32>, stream: stream, module: module, config: dynamic, args: [15u32, slice_mut(o32)] }?;
    check("tile::<u32>", &o32.to_host_vec(&stream)?, &expected("tile", 15))?;
    cuda_launch! { kernel: tile::<u64>, stream: stream, module: module, config: dynamic, args: [16u32, slice_mut(o64)] }?;
    check("tile::<u64>", &o64.to_host_vec(&stream)?, &expected("tile", 16))?;
    checks += 6 * n;
    Ok(checks)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: three generic kernels with shared statics, two instances each, matched the CPU ({n} values)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
