//! transpose: an 8192×8192 `f32` matrix transposed through shared-memory
//! tiles, checked bit for bit against the CPU (and a ragged 1000×1500 matrix,
//! for the edges).
//!
//! A naive transpose reads rows and writes columns: one of the two is always
//! a strided access, where each thread of a warp touches a different 32-byte
//! sector. The tiled version makes both sides coalesced:
//! 1. A block of 32×8 threads owns a 32×32 tile. It reads the tile row by row
//!    (four rows per thread, eight apart): a warp reads 32 consecutive floats
//!    of one input row, and stores them in a row of the shared tile.
//! 2. Block barrier.
//! 3. The block writes the transposed tile row by row: a warp writes 32
//!    consecutive floats of one *output* row, which it reads from a *column*
//!    of the shared tile.
//!
//! The shared tile is 32×33, not 32×32; see [`TILE_STRIDE`].
//!
//! The input's elements are all distinct, so a value in the wrong place is
//! caught; the check compares bit patterns.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;
use std::time::Instant;

/// Side of the square tile a block transposes.
const TILE: usize = 32;
/// Rows of threads in a block.
const BLOCK_ROWS: usize = 8;
/// Elements each thread moves: tile rows `ty`, `ty + 8`, `ty + 16`, `ty + 24`.
const ROWS_PER_THREAD: usize = TILE / BLOCK_ROWS;
/// Floats from one row of the shared tile to the next: one more than the tile
/// is wide.
///
/// Shared memory has 32 banks of 4 bytes; word `a` lives in bank `a % 32`. In
/// step 3 a warp reads one column of the tile, i.e. the words `c`,
/// `c + stride`, …, `c + 31·stride`. With a stride of 32 all 32 words are in
/// the same bank, and the hardware serialises them into 32 accesses. With a
/// stride of 33, word `r·33 + c` is in bank `(r + c) % 32`, so the 32 rows hit
/// 32 different banks and the column is read in one access. Row reads (step 1)
/// are conflict-free either way. The 33rd column is never used.
const TILE_STRIDE: usize = TILE + 1;

/// `out` (cols × rows, row-major) = the transpose of `input` (rows × cols,
/// row-major). Launch with `(TILE, BLOCK_ROWS)` threads per block and
/// `(ceil(cols / TILE), ceil(rows / TILE))` blocks.
#[kernel]
pub fn transpose(input: &[f32], rows: usize, cols: usize, mut out: DisjointSlice<f32>) {
    shared! { static TILE_BUF: [f32; TILE * TILE_STRIDE]; }
    // The unsafe accesses below rely on this shape (a uniform condition, so
    // either every thread of the block passes or every one stops here).
    assert!(
        thread::blockDim_x() as usize == TILE && thread::blockDim_y() as usize == BLOCK_ROWS,
        "launch transpose with (32, 8) threads per block"
    );
    let tx = thread::threadIdx_x() as usize;
    let ty = thread::threadIdx_y() as usize;
    // The tile's top-left corner in the input.
    let tile_row = thread::blockIdx_y() as usize * TILE;
    let tile_col = thread::blockIdx_x() as usize * TILE;

    // 1. Coalesced reads of tile rows `ty`, `ty + 8`, …: input row
    //    `tile_row + r`, column `tile_col + tx`. All four loads are issued
    //    before the first value is stored, so their latencies overlap.
    let mut loaded = [None; ROWS_PER_THREAD];
    for (i, value) in loaded.iter_mut().enumerate() {
        let (row, col) = (tile_row + ty + i * BLOCK_ROWS, tile_col + tx);
        if row < rows && col < cols {
            *value = Some(input[row * cols + col]);
        }
    }
    for (i, value) in loaded.iter().enumerate() {
        if let Some(value) = *value {
            let r = ty + i * BLOCK_ROWS;
            // SAFETY: r < TILE and tx < TILE (the assert above), so the slot
            // is in bounds, and slot (r, tx) is this thread's alone; the
            // barrier below separates the write from every read.
            unsafe { TILE_BUF.write(r * TILE_STRIDE + tx, value) };
        }
    }

    // 2. Every element of the tile is in shared memory after this barrier.
    thread::sync_threads();

    // 3. Coalesced writes: output row `tile_col + r` (an input column),
    //    output column `tile_row + tx` (an input row), i.e. tile element (tx, r).
    for i in 0..ROWS_PER_THREAD {
        let r = ty + i * BLOCK_ROWS;
        let (out_row, out_col) = (tile_col + r, tile_row + tx);
        if out_row < cols && out_col < rows {
            // SAFETY: tile slot (tx, r) is in bounds and was written in step 1
            // (its input element exists exactly when this output element
            // does), before the barrier; nobody writes the tile again.
            let value = unsafe { TILE_BUF.read(tx * TILE_STRIDE + r) };
            let o = out_row * rows + out_col;
            if o < out.len() {
                // SAFETY: o is in bounds. Each output element (out_row,
                // out_col) is written by exactly one thread of the grid: the
                // one whose block covers it and whose (tx, r) selects it.
                unsafe { *out.get_unchecked_mut(o) = value };
            }
        }
    }
}

/// A distinct, finite, normal float for every element index below 2^26:
/// bit patterns 0x3000_0000 + i (exponent field 0x60..0x68, so no NaN, no
/// infinity, no subnormal that anything could flush).
fn element(i: usize) -> f32 {
    assert!(i < 1 << 26);
    f32::from_bits(0x3000_0000 + i as u32)
}

/// Transposes a `rows`×`cols` matrix on the GPU, checks every element against
/// the CPU, and returns the kernel's time of the second launch (the first one
/// warms up) in seconds.
fn check(
    ctx: &std::sync::Arc<CudaContext>,
    module: &cuda_host::KernelModule,
    rows: usize,
    cols: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let host: Vec<f32> = (0..rows * cols).map(element).collect();
    let input = DeviceBuffer::from_host(&stream, &host)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, rows * cols)?;
    let config = LaunchConfig {
        grid_dim: (cols.div_ceil(TILE) as u32, rows.div_ceil(TILE) as u32, 1),
        block_dim: (TILE as u32, BLOCK_ROWS as u32, 1),
        shared_mem_bytes: 0,
    };
    let mut seconds = 0.0;
    for _ in 0..2 {
        stream.synchronize()?;
        let start = Instant::now();
        cuda_launch! {
            kernel: transpose, stream: stream, module: module, config: config,
            args: [slice(input), rows, cols, slice_mut(out)]
        }?;
        stream.synchronize()?;
        seconds = start.elapsed().as_secs_f64();
    }
    let gpu = out.to_host_vec(&stream)?;
    for r in 0..rows {
        for c in 0..cols {
            let (want, got) = (host[r * cols + c], gpu[c * rows + r]);
            if want.to_bits() != got.to_bits() {
                return Err(format!(
                    "{rows}×{cols}: out[{c}][{r}] is {got:e} ({:#010x}), expected in[{r}][{c}] = {want:e} ({:#010x})",
                    got.to_bits(),
                    want.to_bits()
                )
                .into());
            }
        }
    }
    Ok(seconds)
}

fn run() -> Result<f64, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let module = load_kernel_module(&ctx, "transpose")?;
    // Ragged edges: neither side a multiple of the tile, not square.
    check(&ctx, &module, 1000, 1500)?;
    let seconds = check(&ctx, &module, side(), side())?;
    Ok(seconds)
}

/// Side of the large square matrix.
const N: usize = 8192;
/// The side on the CPU emulator (`--emulate`).
const N_EMULATED: usize = 1024;

fn side() -> usize {
    if cuda_core::emulator::is_active() { N_EMULATED } else { N }
}

fn main() -> ExitCode {
    match run() {
        Ok(seconds) => {
            let n = side();
            let bytes = 2.0 * (n * n * std::mem::size_of::<f32>()) as f64;
            println!(
                "✓ SUCCESS: {n}×{n} and 1000×1500 f32 transposes equal the CPU's bit for bit \
                 ({n}² in {:.3} ms, {:.0} GB/s read+write; informational)",
                seconds * 1e3,
                bytes / seconds / 1e9
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
