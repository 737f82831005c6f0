//! GPU test: launch configurations that would be wrong are refused by
//! cuda-host before the driver sees them, with an error naming the kernel;
//! the same kernels launched correctly still compute the right answer. And
//! the module comes from the cubin the device linker assembled where the
//! GPU is the architecture it was built for (no JIT at load).
//!
//! Thread indices (issue 16 §3): for each index constructor, every launch
//! shape whose threads it cannot tell apart is refused, naming the kernel
//! and the dimension (1-D, 2-D and 3-D grids and blocks, and cluster
//! launches), among them the two programs; the shapes it covers run,
//! and every element is written by the one thread the CPU says owns it. An
//! index whose arithmetic would wrap gets no element. The refusals come from
//! cuda-host's check on the kernel table, so they are the same on the CPU
//! emulator (which has no cluster launches: there the accepted cluster
//! shapes stop at the driver instead, and are reported as skipped).
//!
//! The GPU's own limits, which the CPU emulator must apply too so that a
//! program that passes emulated is not refused on the GPU: a kernel whose
//! registers allow fewer than 1,024 threads a block, and a kernel whose
//! static shared memory leaves less than 48 KiB for dynamic shared memory
//! (and less than the opt-in maximum for a raised limit).

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{dynamic_shared, kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, HostError, KernelModule};
use std::process::ExitCode;

/// `out[i] = i`, indexed with x coordinates only.
#[kernel]
pub fn iota(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = idx.get() as u32;
    }
}

/// Values [`many_live`] holds at once.
const LIVE: usize = 96;

/// Holds [`LIVE`] loaded values at once (all of them are summed before any
/// is combined with the sum), so that ptxas gives it more than 64
/// registers: a GPU refuses it blocks of 1,024 threads, and so must the
/// CPU emulator (which reads the count from the image's cubin).
#[kernel]
pub fn many_live(input: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let base = idx.get() * LIVE;
    let mut v = [0u32; LIVE];
    unroll!(full, for k in 0..LIVE {
        v[k] = input.get(base + k).copied().unwrap_or(k as u32);
    });
    let mut sum = 0u32;
    unroll!(full, for k in 0..LIVE {
        sum = sum.wrapping_add(v[k]);
    });
    let mut acc = 0u32;
    unroll!(full, for k in 0..LIVE {
        acc = acc.rotate_left(5) ^ v[k].wrapping_mul(sum | 1);
    });
    if let Some(o) = out.get_mut(idx) {
        *o = acc;
    }
}

/// [`many_live`] on the CPU, for thread `i`.
fn many_live_on_cpu(input: &[u32], i: usize) -> u32 {
    let v: Vec<u32> = (0..LIVE).map(|k| input.get(i * LIVE + k).copied().unwrap_or(k as u32)).collect();
    let sum = v.iter().fold(0u32, |a, &x| a.wrapping_add(x));
    v.iter().fold(0u32, |acc, &x| acc.rotate_left(5) ^ x.wrapping_mul(sum | 1))
}

/// Words of [`staged_in_shared`]'s static array: 40 KiB, which leave a
/// block 8 KiB of dynamic shared memory until the kernel's limit is raised.
const STAGED_WORDS: usize = 10 * 1024;

/// `out[i]` = the global index of the thread that mirrors i's in its block,
/// passed through a 40 KiB static shared array, plus the launch's dynamic
/// shared memory in words.
#[kernel]
pub fn staged_in_shared(mut out: DisjointSlice<u32>) {
    shared! { static STAGE: [u32; STAGED_WORDS]; }
    let idx = thread::index_1d();
    let view = STAGE.stage(idx.get() as u32).sync();
    let mirrored = view.get(thread::blockDim_x() as usize - 1 - thread::threadIdx_x() as usize);
    view.done();
    // SAFETY: only the length is used, and it is the launch's own size.
    let (_, dynamic_words) = unsafe { dynamic_shared::<u32>() };
    if let Some(o) = out.get_mut(idx) {
        *o = mirrored.wrapping_add(dynamic_words as u32);
    }
}

/// [`staged_in_shared`] on the CPU: element `i` of blocks of `block`
/// threads launched with `dynamic` bytes of dynamic shared memory.
fn staged_on_cpu(i: usize, block: usize, dynamic: u32) -> u32 {
    (i / block * block + block - 1 - i % block) as u32 + dynamic / 4
}

/// The thread's global coordinates, one 10-bit field each, plus one (so an
/// element no thread wrote stays 0).
fn stamp() -> u32 {
    let global = |block: u32, dim: u32, thread: u32| block * dim + thread;
    let x = global(thread::blockIdx_x(), thread::blockDim_x(), thread::threadIdx_x());
    let y = global(thread::blockIdx_y(), thread::blockDim_y(), thread::threadIdx_y());
    let z = global(thread::blockIdx_z(), thread::blockDim_z(), thread::threadIdx_z());
    1 + x + (y << 10) + (z << 20)
}

/// Issue 16 §3's first program: a 1-D index in a kernel that also reads
/// `threadIdx_y` (in `stamp`), which the old check took for a 2-D kernel.
#[kernel]
pub fn rows_1d(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = stamp();
    }
}

/// A 2-D index over rows of `row_len` (issue 16 §3's second program, with
/// `row_len` = 32).
#[kernel]
pub fn tile_2d(row_len: usize, mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_2d(row_len)) {
        *o = stamp();
    }
}

/// A 3-D index over planes of `rows_per_plane` rows of `row_len`.
#[kernel]
pub fn volume_3d(row_len: usize, rows_per_plane: usize, mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_3d(row_len, rows_per_plane)) {
        *o = stamp();
    }
}

fn config(grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: shared }
}

/// Which index a kernel computes, with its row lengths.
#[derive(Clone, Copy, Debug)]
enum Index {
    OneD,
    TwoD(usize),
    ThreeD(usize, usize),
}

impl Index {
    /// The element the thread at global (x, y, z) owns, with the device's
    /// checked arithmetic: None outside its row or plane or past usize::MAX.
    fn of(self, (x, y, z): (usize, usize, usize)) -> Option<usize> {
        match self {
            Index::OneD => Some(x),
            Index::TwoD(row_len) => (x < row_len).then(|| y.checked_mul(row_len)?.checked_add(x)).flatten(),
            Index::ThreeD(row_len, rows) => (x < row_len && y < rows)
                .then(|| z.checked_mul(rows)?.checked_add(y)?.checked_mul(row_len)?.checked_add(x))
                .flatten(),
        }
    }
}

/// What `len` elements hold after a launch of `cfg` in which every thread
/// writes its stamp to the element it owns; an error if two threads own one.
fn expected(index: Index, cfg: &LaunchConfig, len: usize) -> Result<Vec<u32>, String> {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    let (nx, ny, nz) = (g.0 as usize * b.0 as usize, g.1 as usize * b.1 as usize, g.2 as usize * b.2 as usize);
    let mut want = vec![0u32; len];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let Some(i) = index.of((x, y, z)).filter(|&i| i < len) else { continue };
                if want[i] != 0 {
                    return Err(format!("{index:?} on {cfg:?}: two threads own element {i}"));
                }
                want[i] = 1 + x as u32 + ((y as u32) << 10) + ((z as u32) << 20);
            }
        }
    }
    Ok(want)
}

/// Launches `$kernel` (after zeroing `$out`) with `$cfg` (a LaunchConfig or
/// a ClusterLaunchConfig) and the arguments, then `$out` as the last one.
macro_rules! launch {
    ($ctx:expr, $kernel:ident, $cfg:expr, [$($arg:expr),*], $out:ident) => {{
        let (stream, module): (&CudaStream, &KernelModule) = ($ctx.0, $ctx.1);
        $out.memset(stream, 0)?;
        cuda_launch! { kernel: $kernel, stream: stream, module: module, config: $cfg, args: [$($arg,)* &mut $out] }
    }};
}

/// Expects the launch to be refused as sharing thread indices, naming the
/// kernel, the index constructor and the dimension.
fn refused(what: &str, result: Result<(), HostError>, kernel: &str, index: &str, dimension: char) -> Result<(), String> {
    let e = match result {
        Ok(()) => return Err(format!("{what}: the launch was accepted")),
        Err(e) => e,
    };
    match &e {
        HostError::SharedThreadIndices { kernel: k, index: i, dimension: d, .. }
            if *k == format!("launch_checks::{kernel}") && *i == index && *d == dimension =>
        {
            println!("refused ({what}): {e}");
            Ok(())
        }
        _ => Err(format!("{what}: wrong error: {e}")),
    }
}

/// Checks the buffer after an accepted launch against the CPU's owners.
fn compare(what: &str, got: &[u32], want: &[u32]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        None => {
            let written = want.iter().filter(|&&w| w != 0).count();
            println!("ran ({what}): {written} of {} elements, each by its owner", want.len());
            Ok(())
        }
        Some(i) => Err(format!("{what}: element {i} is {:#x}, the CPU says {:#x}", got[i], want[i])),
    }
}

fn run() -> Result<(usize, usize), Box<dyn std::error::Error>> {
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
            matches!(e, HostError::SharedThreadIndices { dimension: 'y', .. })
        }),
        ("zero grid", config((0, 1, 1), (256, 1, 1), 0), |e| matches!(e, HostError::ZeroLaunchDimension { .. })),
        ("block over the kernel's limit", config((1, 1, 1), (2048, 1, 1), 0), |e| {
            matches!(e, HostError::BlockTooLarge { .. })
        }),
        ("shared memory over the limit", config((16, 1, 1), (256, 1, 1), 1 << 20), |e| {
            matches!(e, HostError::SharedMemoryTooLarge { .. })
        }),
    ];
    let mut refusals = 0;
    for (what, cfg, expected) in cases {
        match cuda_launch! { kernel: iota, stream: stream, module: module, config: cfg, args: [&mut out] } {
            Err(e) if expected(&e) && e.to_string().contains("launch_checks::iota") => println!("refused ({what}): {e}"),
            Err(e) => return Err(format!("{what}: wrong error: {e}").into()),
            Ok(()) => return Err(format!("{what}: the launch was accepted").into()),
        }
        refusals += 1;
    }
    // The context is still healthy and the right launch works.
    cuda_launch! { kernel: iota, stream: stream, module: module, config: LaunchConfig::for_num_elems(4096), args: [&mut out] }?;
    let got = out.to_host_vec(&stream)?;
    if let Some(i) = (0..4096).find(|&i| got[i] != i as u32) {
        return Err(format!("element {i}: {}", got[i]).into());
    }

    // A kernel whose registers allow fewer than 1,024 threads a block: the
    // GPU's driver says so and the emulator reads it from the cubin, so a
    // program that passes emulated is not refused on the GPU. Then it runs
    // at the limit the error gave.
    let input: Vec<u32> = (0..4096u32 * LIVE as u32).map(|k| k.wrapping_mul(2654435761)).collect();
    let input_on_gpu = DeviceBuffer::from_host(&stream, &input)?;
    let heavy = |block: u32| config((4096 / block, 1, 1), (block, 1, 1), 0);
    let limit = match cuda_launch! { kernel: many_live, stream: stream, module: module, config: heavy(1024), args: [&input_on_gpu, &mut out] } {
        Err(HostError::BlockTooLarge { max_threads_per_block, .. }) if max_threads_per_block < 1024 => max_threads_per_block,
        Err(e) => return Err(format!("1,024 threads of a kernel with more than 64 registers: wrong error: {e}").into()),
        Ok(()) => match module.image().cubin {
            None => {
                println!("skipped (a block over the registers' limit): no cubin to read the registers from");
                0
            }
            Some(_) => return Err("1,024 threads of a kernel with more than 64 registers: the launch was accepted".into()),
        },
    };
    if limit > 0 {
        println!("refused (a block over what the registers allow): at most {limit} threads");
        refusals += 1;
        let block = 1 << limit.ilog2();
        cuda_launch! { kernel: many_live, stream: stream, module: module, config: heavy(block), args: [&input_on_gpu, &mut out] }?;
        let got = out.to_host_vec(&stream)?;
        if let Some(i) = (0..4096).find(|&i| got[i] != many_live_on_cpu(&input, i)) {
            return Err(format!("many_live in blocks of {block}, element {i}: {} (CPU {})", got[i], many_live_on_cpu(&input, i)).into());
        }
    }

    refusals += static_shared_limits(&stream, &module, &mut out)?;

    // Thread indices: the shapes each constructor cannot tell apart.
    let on = (&*stream, &module);
    let d1 = |grid, block| config(grid, block, 0);
    let (row, plane) = (32usize, 8usize);
    let refusals_of_indices = [
        ("issue 16: index_1d reading threadIdx_y, block (256, 4, 1)",
         launch!(on, rows_1d, d1((4, 1, 1), (256, 4, 1)), [], out), "rows_1d", "thread::index_1d", 'y'),
        ("index_1d, 2-D grid", launch!(on, rows_1d, d1((4, 2, 1), (256, 1, 1)), [], out), "rows_1d", "thread::index_1d", 'y'),
        ("index_1d, 3-D grid", launch!(on, rows_1d, d1((4, 1, 2), (256, 1, 1)), [], out), "rows_1d", "thread::index_1d", 'z'),
        ("index_1d, 3-D block", launch!(on, rows_1d, d1((4, 1, 1), (64, 1, 2)), [], out), "rows_1d", "thread::index_1d", 'z'),
        ("issue 16: index_2d(32), block (32, 8, 4)",
         launch!(on, tile_2d, d1((1, 1, 1), (32, 8, 4)), [row], out), "tile_2d", "thread::index_2d", 'z'),
        ("index_2d, 3-D grid", launch!(on, tile_2d, d1((1, 2, 2), (32, 8, 1)), [row], out), "tile_2d", "thread::index_2d", 'z'),
        ("index_1d in clusters of (2, 1, 1) over a 2-D grid",
         launch!(on, rows_1d, d1((8, 2, 1), (128, 1, 1)).with_cluster((2, 1, 1)), [], out), "rows_1d", "thread::index_1d", 'y'),
        ("index_2d in clusters of (2, 2, 2) over a 3-D grid",
         launch!(on, tile_2d, d1((2, 2, 2), (16, 8, 1)).with_cluster((2, 2, 2)), [row], out), "tile_2d", "thread::index_2d", 'z'),
    ];
    for (what, result, kernel, index, dimension) in refusals_of_indices {
        refused(what, result, kernel, index, dimension)?;
        refusals += 1;
    }

    // The shapes they cover run, each element written by its one owner.
    let len = out.len();
    let mut runs = 0;
    let accepted: [(&str, Index, LaunchConfig); 7] = [
        ("index_1d, 1-D grid and block", Index::OneD, d1((12, 1, 1), (256, 1, 1))),
        ("index_2d, 2-D grid of 2-D blocks", Index::TwoD(row), d1((2, 4, 1), (16, 8, 1))),
        ("index_2d, 1-D launch", Index::TwoD(row), d1((2, 1, 1), (64, 1, 1))),
        ("index_3d, 3-D grid of 3-D blocks", Index::ThreeD(row, plane), d1((2, 2, 3), (16, 4, 2))),
        ("index_3d, 2-D launch", Index::ThreeD(row, plane), d1((2, 3, 1), (16, 4, 1))),
        // y * row_len wraps to 16 for y = 2 (2 × (2^63 + 8) = 2^64 + 16):
        // those threads get no element instead of elements 16.. .
        ("index_2d whose rows would wrap", Index::TwoD((1 << 63) + 8), d1((1, 1, 1), (8, 4, 1))),
        // (z * rows + y) * row_len wraps to 8 + 8y + x for z = 1.
        ("index_3d whose planes would wrap", Index::ThreeD(8, (1 << 61) + 1), d1((1, 1, 1), (8, 2, 2))),
    ];
    for (what, index, cfg) in accepted {
        match index {
            Index::OneD => launch!(on, rows_1d, cfg, [], out)?,
            Index::TwoD(r) => launch!(on, tile_2d, cfg, [r], out)?,
            Index::ThreeD(r, p) => launch!(on, volume_3d, cfg, [r, p], out)?,
        }
        compare(what, &out.to_host_vec(&stream)?, &expected(index, &cfg, len)?)?;
        runs += 1;
    }
    // Clusters of a 3-D grid: a 3-D index covers them.
    let cfg = d1((2, 2, 2), (16, 4, 2));
    match launch!(on, volume_3d, cfg.with_cluster((2, 1, 1)), [row, plane], out) {
        Ok(()) => {
            compare("index_3d in clusters of (2, 1, 1)", &out.to_host_vec(&stream)?, &expected(Index::ThreeD(row, plane), &cfg, len)?)?;
            runs += 1;
        }
        Err(HostError::Driver(e)) if cuda_core::emulator::is_active() => {
            println!("skipped (index_3d in clusters of (2, 1, 1)): the CPU emulator has no cluster launches ({e})");
        }
        Err(e) => return Err(format!("index_3d in clusters: {e}").into()),
    }
    Ok((refusals, runs))
}

/// A kernel with 40 KiB of static shared memory: the driver's dynamic limit
/// is what they leave of 48 KiB, a launch past it is refused, one within it
/// runs; a raise past the opt-in maximum less the static part is refused,
/// one to it is taken and a launch that uses it runs. Returns the refusals.
fn static_shared_limits(
    stream: &CudaStream,
    module: &KernelModule,
    out: &mut DeviceBuffer<u32>,
) -> Result<usize, Box<dyn std::error::Error>> {
    const BLOCK: u32 = 256;
    let static_bytes = (STAGED_WORDS * 4) as u32;
    let unraised = 48 * 1024 - static_bytes;
    let ptx_name = module.image().kernels.iter().find(|k| k.rust_path.ends_with("::staged_in_shared")).ok_or("no staged_in_shared")?.ptx_name;
    let function = module.cuda_module().function(ptx_name)?;
    let attributes = function.attributes()?;
    if (attributes.static_shared_bytes, attributes.max_dynamic_shared_bytes) != (static_bytes, unraised) {
        return Err(format!(
            "staged_in_shared: the driver reports {} bytes of static shared memory and a dynamic limit of {}; \
             expected {static_bytes} and {unraised}",
            attributes.static_shared_bytes, attributes.max_dynamic_shared_bytes
        )
        .into());
    }
    let len = out.len();
    let staged = |dynamic| config((len as u32 / BLOCK, 1, 1), (BLOCK, 1, 1), dynamic);
    match cuda_launch! { kernel: staged_in_shared, stream: stream, module: module, config: staged(unraised + 16), args: [&mut *out] } {
        Err(e @ HostError::SharedMemoryTooLarge { max, .. }) if max == unraised => {
            println!("refused (dynamic shared memory past what {static_bytes} bytes of static leave): {e}")
        }
        Err(e) => return Err(format!("dynamic shared memory past what the static part leaves: wrong error: {e}").into()),
        Ok(()) => return Err("dynamic shared memory past what the static part leaves: the launch was accepted".into()),
    }
    let mut run = |dynamic: u32, what: &str| -> Result<(), Box<dyn std::error::Error>> {
        out.memset(stream, 0)?;
        cuda_launch! { kernel: staged_in_shared, stream: stream, module: module, config: staged(dynamic), args: [&mut *out] }?;
        let got = out.to_host_vec(stream)?;
        match (0..len).find(|&i| got[i] != staged_on_cpu(i, BLOCK as usize, dynamic)) {
            Some(i) => Err(format!("{what}: element {i} is {}, the CPU says {}", got[i], staged_on_cpu(i, BLOCK as usize, dynamic)).into()),
            None => Ok(println!("ran ({what}): {len} elements as on the CPU")),
        }
    };
    run(unraised, "8 KiB of dynamic shared memory beside 40 KiB of static")?;
    let optin = stream.context().limits()?.max_shared_memory_per_block_optin;
    match function.set_max_dynamic_shared_memory(optin - static_bytes + 16) {
        Err(e) => println!("refused (a dynamic limit past the opt-in maximum less the static part): {e}"),
        Ok(()) => return Err("a dynamic limit past the opt-in maximum less the static part was taken".into()),
    }
    function.set_max_dynamic_shared_memory(optin - static_bytes)?;
    run(optin - static_bytes, "the opt-in maximum of shared memory, static and dynamic")?;
    Ok(2)
}

fn main() -> ExitCode {
    match run() {
        Ok((refused, ran)) => {
            println!(
                "✓ SUCCESS: {refused} wrong launch configurations refused before the driver; the right ones \
                 computed every element by its owner ({ran} shapes)"
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
