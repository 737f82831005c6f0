//! GPU test: launch-time specialisation. The device linker gives a kernel
//! whose bounds checks follow from a condition on its arguments a second
//! entry without them, and writes the condition into the kernel table; each
//! launch evaluates it on the host and runs the unchecked entry only where it
//! holds (docs/ABI.md §3, cuda_host::condition).
//!
//! Checked here: the table has the entries and conditions over the right
//! parameter bytes (also on the CPU emulator, which reads the same table);
//! on the GPU and in the emulator's device-code mode (the PTX, on the PTX
//! VM), launches where the condition holds run the unchecked entry
//! (`KernelModule::unchecked_launches`) and launches where it fails run the
//! checked one, both with the CPU's answer; a dynamic shared memory limit the
//! user raised on the kernel's entry carries over to the unchecked one. The
//! failing side's panics are device_panics' business (its `tiled` kind).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, EmbeddedKernel, KernelModule};
use std::process::ExitCode;

/// `c[i] = a[i] + b[i]`: unchecked where c.len() <= a.len() and <= b.len().
#[kernel]
pub fn add(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out) = c.get_mut(idx) {
        *out = a[i] + b[i];
    }
}

/// out = 2 × input over a rows × cols grid of 16 × 16 blocks: unchecked where
/// rows × cols <= input.len() (and the user's own `o < out.len()` test goes
/// too where rows × cols <= out.len()).
#[kernel]
pub fn double_tile(input: &[f32], rows: usize, cols: usize, mut out: DisjointSlice<f32>) {
    let col = thread::blockIdx_x() as usize * 16 + thread::threadIdx_x() as usize;
    let row = thread::blockIdx_y() as usize * 16 + thread::threadIdx_y() as usize;
    if row < rows && col < cols {
        // Wrapping, as in a release build: a debug build's overflow check
        // would hide the index shape.
        let o = row.wrapping_mul(cols).wrapping_add(col);
        let v = input[o] * 2.0;
        if o < out.len() {
            // SAFETY: in bounds; one thread per (row, col), so per `o`.
            unsafe { *out.get_unchecked_mut(o) = v };
        }
    }
}

/// `c[i] = a[i] + b[i]` through this thread's word of dynamic shared memory
/// (launched with more than the default 48 KiB).
#[kernel]
pub fn add_staged(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    let t = thread::threadIdx_x() as usize;
    // SAFETY: the launch provides SHARED_BYTES, more than a word per thread.
    let (stage, len) = unsafe { cuda_device::shared::dynamic_shared::<f32>() };
    if let Some(out) = c.get_mut(idx) {
        let v = a[i] + b[i];
        if t < len {
            // SAFETY: word t is this thread's alone.
            unsafe {
                stage.add(t).write_volatile(v);
                *out = stage.add(t).read_volatile();
            }
        }
    }
}

const N: usize = 1 << 16;
const SHARED_BYTES: u32 = 64 * 1024;

/// The bytes of a slice parameter (data pointer, length) and of a usize.
fn slice_bytes(len: usize) -> Vec<u8> {
    [0x1000u64.to_le_bytes(), (len as u64).to_le_bytes()].concat()
}
fn usize_bytes(v: usize) -> Vec<u8> {
    (v as u64).to_le_bytes().to_vec()
}

fn kernel<'m>(module: &'m KernelModule, name: &str) -> Result<&'m EmbeddedKernel, String> {
    let suffix = format!("::{name}");
    module
        .image()
        .kernels
        .iter()
        .find(|k| k.rust_path.ends_with(&suffix))
        .ok_or_else(|| format!("kernel {name} is not in the image"))
}

/// Evaluates kernel `name`'s condition for these parameter bytes and checks
/// the answer.
fn expect_condition(
    module: &KernelModule,
    name: &str,
    params: &[Vec<u8>],
    config: &LaunchConfig,
    want: bool,
) -> Result<(), String> {
    let k = kernel(module, name)?;
    let unchecked = k.unchecked.as_ref().ok_or_else(|| format!("{name} has no unchecked entry"))?;
    let bytes: Vec<&[u8]> = params.iter().map(Vec::as_slice).collect();
    let got = unchecked.condition.evaluate(&bytes, config);
    if got != Some(want) {
        return Err(format!("{name}: condition {:?} gave {got:?}, expected {want}", unchecked.condition));
    }
    Ok(())
}

fn check_eq(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        None => Ok(()),
        Some(i) => Err(format!("{what}: element {i} is {} but the CPU says {}", got[i], want[i])),
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "launch_conditions")?;
    // On a GPU and in the emulator's device-code mode the PTX runs, entries
    // and all; in host-code mode the kernel's Rust code runs instead.
    let device_code = ctx.backend().runs_device_code();
    let mut checks = 0;

    // The table: every kernel has an unchecked entry, and its condition reads
    // the lengths at bytes 8..16 of the slice parameters.
    let cfg = LaunchConfig::for_num_elems(N as u32);
    for name in ["add", "add_staged"] {
        let (long, short) = (slice_bytes(N), slice_bytes(N - 1));
        expect_condition(&module, name, &[long.clone(), long.clone(), long.clone()], &cfg, true)?;
        expect_condition(&module, name, &[long.clone(), short.clone(), long.clone()], &cfg, false)?;
        expect_condition(&module, name, &[short.clone(), long.clone(), long.clone()], &cfg, false)?;
        expect_condition(&module, name, &[long.clone(), long.clone(), short], &cfg, true)?;
        checks += 4;
    }
    let (rows, cols) = (200usize, 300usize);
    let tile_cfg = LaunchConfig { grid_dim: (19, 13, 1), block_dim: (16, 16, 1), shared_mem_bytes: 0 };
    let tile = |input: usize, out: usize| {
        vec![slice_bytes(input), usize_bytes(rows), usize_bytes(cols), slice_bytes(out)]
    };
    expect_condition(&module, "double_tile", &tile(rows * cols, rows * cols), &tile_cfg, true)?;
    expect_condition(&module, "double_tile", &tile(rows * cols - 1, rows * cols), &tile_cfg, false)?;
    expect_condition(&module, "double_tile", &tile(rows * cols, rows * cols - 1), &tile_cfg, false)?;
    // A product past 64 bits is compared exactly, not wrapped.
    let huge = vec![slice_bytes(1 << 20), usize_bytes(1 << 40), usize_bytes(1 << 40), slice_bytes(1 << 20)];
    expect_condition(&module, "double_tile", &huge, &tile_cfg, false)?;
    checks += 4;
    println!("kernel table: {checks} condition checks passed");

    // Launches. `expect` is the number of unchecked launches so far (none on
    // the host-code emulator, which runs the kernel's Rust code).
    let mut expect = 0u64;
    let mut launched = |module: &KernelModule, unchecked: bool, what: &str| -> Result<(), String> {
        if unchecked && device_code {
            expect += 1;
        }
        let got = module.unchecked_launches();
        if got != expect {
            return Err(format!("{what}: {got} unchecked launches so far, expected {expect}"));
        }
        println!("{what}: {} entry", if unchecked && device_code { "unchecked" } else { "checked" });
        Ok(())
    };

    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| 3.0 - i as f32).collect();
    let (a_d, b_d) = (DeviceBuffer::from_host(&stream, &a)?, DeviceBuffer::from_host(&stream, &b)?);
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();

    // Condition holds: c as long as a and b.
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    cuda_launch! { kernel: add, stream: stream, module: module, config: cfg, args: [&a_d, &b_d, &mut c] }?;
    check_eq("add", &c.to_host_vec(&stream)?, &sum)?;
    launched(&module, true, "add, c.len == a.len == b.len")?;

    // Condition fails (c longer than a and b), but the grid stops at a's
    // length, so no check fails: the checked entry runs and is right.
    let mut c_long = DeviceBuffer::<f32>::zeroed(&stream, N + 1000)?;
    cuda_launch! { kernel: add, stream: stream, module: module, config: cfg, args: [&a_d, &b_d, &mut c_long] }?;
    check_eq("add into a longer c", &c_long.to_host_vec(&stream)?[..N], &sum)?;
    launched(&module, false, "add, c.len > a.len")?;

    // The tile, both ways.
    let input: Vec<f32> = (0..rows * cols + 7).map(|i| (i % 1000) as f32).collect();
    let input_d = DeviceBuffer::from_host(&stream, &input)?;
    let doubled: Vec<f32> = input[..rows * cols].iter().map(|x| x * 2.0).collect();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, rows * cols)?;
    cuda_launch! { kernel: double_tile, stream: stream, module: module, config: tile_cfg, args: [&input_d, rows, cols, &mut out] }?;
    check_eq("double_tile", &out.to_host_vec(&stream)?, &doubled)?;
    launched(&module, true, "double_tile, rows × cols <= both lengths")?;
    let mut out_short = DeviceBuffer::<f32>::zeroed(&stream, rows * cols - 50)?;
    cuda_launch! { kernel: double_tile, stream: stream, module: module, config: tile_cfg, args: [&input_d, rows, cols, &mut out_short] }?;
    check_eq("double_tile into a shorter out", &out_short.to_host_vec(&stream)?, &doubled[..rows * cols - 50])?;
    launched(&module, false, "double_tile, out shorter than the tile (the user's test keeps it in bounds)")?;

    // Dynamic shared memory over 48 KiB, allowed on the kernel's own entry
    // (where a user of the driver API would set it): the unchecked entry
    // must get the same limit, or the launch would fail.
    // (The host-code emulator keeps the default limit: there it gets 16 KiB.)
    let shared_mem_bytes = if device_code { SHARED_BYTES } else { 16 * 1024 };
    if device_code {
        let ptx_name = kernel(&module, "add_staged")?.ptx_name;
        module.cuda_module().function(ptx_name)?.set_max_dynamic_shared_memory(SHARED_BYTES)?;
    }
    let staged_cfg = LaunchConfig { shared_mem_bytes, ..cfg };
    let mut c2 = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    cuda_launch! { kernel: add_staged, stream: stream, module: module, config: staged_cfg, args: [&a_d, &b_d, &mut c2] }?;
    check_eq("add_staged", &c2.to_host_vec(&stream)?, &sum)?;
    launched(&module, true, "add_staged with 64 KiB of dynamic shared memory (16 KiB as host code)")?;
    checks += 5;
    Ok(checks)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
