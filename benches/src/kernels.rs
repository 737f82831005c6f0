//! oxide's side of every benchmark: the Rust kernels.
//!
//! Each kernel is the same algorithm as the CUDA C++ kernel of the same name
//! in `cuda/kernels.cu` (same block shape, tiling and work per thread), so the
//! ratio the harness prints compares the compilers. They are written the way
//! an oxide user would write them: slices with their bounds checks,
//! `DisjointSlice` for outputs, `shared!` tiles.

use cuda_host::cuda_module;

/// Threads per block of the 1-D kernels (vecadd, saxpy, empty).
pub const BLOCK_1D: u32 = 256;
/// Side of the square tiles of transpose and the GEMMs.
pub const TILE: usize = 32;
/// Rows of threads in a tiled block (`TILE` × `BLOCK_ROWS` threads).
pub const BLOCK_ROWS: usize = 8;
/// Threads per block of the reduction.
pub const REDUCE_BLOCK: u32 = 256;
/// Threads per block of softmax (one block per row).
pub const SOFTMAX_BLOCK: u32 = 256;

#[cuda_module]
pub mod kernels {
    use super::{BLOCK_ROWS, REDUCE_BLOCK, SOFTMAX_BLOCK, TILE};
    use cuda_device::shared::SharedArray;
    use cuda_device::{kernel, shared, thread, warp, DisjointSlice};

    /// Rows of a C tile each thread of a GEMM (or transpose) block handles.
    const ROWS_PER_THREAD: usize = TILE / BLOCK_ROWS;
    /// Warps in a reduction or softmax block.
    const WARPS: usize = (REDUCE_BLOCK / 32) as usize;
    const SOFTMAX_WARPS: usize = (SOFTMAX_BLOCK / 32) as usize;

    /// Shared tiles of the GEMMs: TILE × TILE floats.
    type Tile = SharedArray<f32, { TILE * TILE }>;

    /// The multiply step of the tiled GEMMs, between their two barriers:
    /// `acc[i] += A[ty + i·BLOCK_ROWS][kk] · B[kk][tx]` over the tiles' k.
    #[inline(always)]
    fn multiply_tiles(a_tile: &Tile, b_tile: &Tile, tx: usize, ty: usize, acc: &mut [f32; ROWS_PER_THREAD]) {
        for kk in 0..TILE {
            // SAFETY: written before the barrier; nobody writes until the next.
            let b_value = unsafe { b_tile.read(kk * TILE + tx) };
            for (i, sum) in acc.iter_mut().enumerate() {
                // SAFETY: as for the B tile.
                let a_value = unsafe { a_tile.read((ty + i * BLOCK_ROWS) * TILE + kk) };
                *sum = a_value.mul_add(b_value, *sum);
            }
        }
    }

    /// The tiled GEMMs' epilogue: this thread's rows of its C tile, those
    /// inside the m × n matrix.
    #[inline(always)]
    fn store_rows(c: &mut DisjointSlice<f32>, acc: &[f32; ROWS_PER_THREAD], first_row: usize, col: usize, m: usize, n: usize) {
        for (i, sum) in acc.iter().enumerate() {
            let row = first_row + i * BLOCK_ROWS;
            let index = row * n + col;
            if row < m && col < n && index < c.len() {
                // SAFETY: in bounds; element (row, col) is this thread's alone.
                unsafe { *c.get_unchecked_mut(index) = *sum };
            }
        }
    }

    /// Does nothing: the launch overhead benchmark.
    #[kernel]
    pub fn empty() {}

    /// `data[i] += 1`: the small kernel of the graph benchmark (100 of them
    /// depend on each other through `data`).
    #[kernel]
    pub fn bump(mut data: DisjointSlice<u32>) {
        if let Some(x) = data.get_mut(thread::index_1d()) {
            *x = x.wrapping_add(1);
        }
    }

    /// `c[i] = a[i] + b[i]`, one thread per element.
    #[kernel]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(out) = c.get_mut(idx) {
            *out = a[i] + b[i];
        }
    }

    /// `y[i] = alpha·x[i] + y[i]` (one fused multiply-add), one thread per element.
    #[kernel]
    pub fn saxpy(alpha: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(out) = y.get_mut(idx) {
            *out = alpha.mul_add(x[i], *out);
        }
    }

    /// `partial[block]` = the sum of this block's grid-stride share of
    /// `input`: each warp sums with shuffles, warp 0 sums the warp sums.
    /// Launch with `REDUCE_BLOCK` threads per block.
    #[kernel(launch_bounds(REDUCE_BLOCK, 4))]
    pub fn block_sum(input: &[f32], mut partial: DisjointSlice<f32>) {
        shared! { static WARP_SUMS: [f32; WARPS]; }
        let tid = thread::threadIdx_x() as usize;
        let block = thread::blockIdx_x() as usize;
        let stride = thread::gridDim_x() as usize * REDUCE_BLOCK as usize;
        let mut acc = 0.0f32;
        let mut i = block * REDUCE_BLOCK as usize + tid;
        while i < input.len() {
            acc += input[i];
            i += stride;
        }
        let warp_total = warp::sum(acc);
        if tid % 32 == 0 {
            // SAFETY: tid / 32 < WARPS (launch bounds); lane 0 of each warp
            // writes its own slot, and the barrier below orders the reads.
            unsafe { WARP_SUMS.write(tid / 32, warp_total) };
        }
        thread::sync_threads();
        if tid < 32 {
            // SAFETY: every warp's slot was written before the barrier.
            let v = if tid < WARPS { unsafe { WARP_SUMS.read(tid) } } else { 0.0 };
            let total = warp::sum(v);
            if tid == 0 && block < partial.len() {
                // SAFETY: in bounds; one thread per block writes its block's slot.
                unsafe { *partial.get_unchecked_mut(block) = total };
            }
        }
    }

    /// `out` (cols × rows) = the transpose of `input` (rows × cols), through a
    /// 32×33 shared tile; 32×8 threads per block, four elements per thread.
    #[kernel]
    pub fn transpose(input: &[f32], rows: usize, cols: usize, mut out: DisjointSlice<f32>) {
        const STRIDE: usize = TILE + 1;
        shared! { static BUF: [f32; TILE * STRIDE]; }
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let tile_row = thread::blockIdx_y() as usize * TILE;
        let tile_col = thread::blockIdx_x() as usize * TILE;
        for i in 0..ROWS_PER_THREAD {
            let (row, col) = (tile_row + ty + i * BLOCK_ROWS, tile_col + tx);
            if row < rows && col < cols {
                // SAFETY: launched with 32×8 threads, so the slot is in
                // bounds and this thread's alone; the barrier orders reads.
                unsafe { BUF.write((ty + i * BLOCK_ROWS) * STRIDE + tx, input[row * cols + col]) };
            }
        }
        thread::sync_threads();
        for i in 0..ROWS_PER_THREAD {
            let r = ty + i * BLOCK_ROWS;
            let (out_row, out_col) = (tile_col + r, tile_row + tx);
            if out_row < cols && out_col < rows {
                // SAFETY: slot (tx, r) was written before the barrier (its
                // input element exists exactly when this output does).
                let value = unsafe { BUF.read(tx * STRIDE + r) };
                let o = out_row * rows + out_col;
                if o < out.len() {
                    // SAFETY: in bounds; exactly one thread of the grid
                    // writes each output element.
                    unsafe { *out.get_unchecked_mut(o) = value };
                }
            }
        }
    }

    /// [`transpose`] with its four loads issued before the first shared
    /// store (each value kept in a register): a diagnostic variant, not
    /// part of the comparison. nvcc schedules the plain version like this by
    /// itself; oxide cannot while a bounds check's panic branch sits between
    /// one element's store and the next one's load.
    #[kernel]
    pub fn transpose_loads_first(input: &[f32], rows: usize, cols: usize, mut out: DisjointSlice<f32>) {
        const STRIDE: usize = TILE + 1;
        shared! { static BUF: [f32; TILE * STRIDE]; }
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let tile_row = thread::blockIdx_y() as usize * TILE;
        let tile_col = thread::blockIdx_x() as usize * TILE;
        let mut loaded = [None; ROWS_PER_THREAD];
        for (i, value) in loaded.iter_mut().enumerate() {
            let (row, col) = (tile_row + ty + i * BLOCK_ROWS, tile_col + tx);
            if row < rows && col < cols {
                *value = Some(input[row * cols + col]);
            }
        }
        for (i, value) in loaded.iter().enumerate() {
            if let Some(value) = *value {
                // SAFETY: as in transpose.
                unsafe { BUF.write((ty + i * BLOCK_ROWS) * STRIDE + tx, value) };
            }
        }
        thread::sync_threads();
        for i in 0..ROWS_PER_THREAD {
            let r = ty + i * BLOCK_ROWS;
            let (out_row, out_col) = (tile_col + r, tile_row + tx);
            if out_row < cols && out_col < rows {
                // SAFETY: as in transpose.
                let value = unsafe { BUF.read(tx * STRIDE + r) };
                let o = out_row * rows + out_col;
                if o < out.len() {
                    // SAFETY: as in transpose.
                    unsafe { *out.get_unchecked_mut(o) = value };
                }
            }
        }
    }

    /// [`sgemm`] with each step's eight loads issued before the first shared
    /// store: the same diagnostic variant as [`transpose_loads_first`].
    #[kernel]
    pub fn sgemm_loads_first(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        shared! {
            static A_TILE: [f32; TILE * TILE];
            static B_TILE: [f32; TILE * TILE];
        }
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let tile_row = thread::blockIdx_y() as usize * TILE;
        let tile_col = thread::blockIdx_x() as usize * TILE;
        let col = tile_col + tx;
        let mut acc = [0.0f32; ROWS_PER_THREAD];
        let mut k0 = 0;
        while k0 < k {
            let mut a_values = [0.0f32; ROWS_PER_THREAD];
            let mut b_values = [0.0f32; ROWS_PER_THREAD];
            for i in 0..ROWS_PER_THREAD {
                let r = ty + i * BLOCK_ROWS;
                let (a_row, a_col) = (tile_row + r, k0 + tx);
                if a_row < m && a_col < k {
                    a_values[i] = a[a_row * k + a_col];
                }
                let b_row = k0 + r;
                if b_row < k && col < n {
                    b_values[i] = b[b_row * n + col];
                }
            }
            for i in 0..ROWS_PER_THREAD {
                let r = ty + i * BLOCK_ROWS;
                // SAFETY: as in sgemm.
                unsafe {
                    A_TILE.write(r * TILE + tx, a_values[i]);
                    B_TILE.write(r * TILE + tx, b_values[i]);
                }
            }
            thread::sync_threads();
            multiply_tiles(&A_TILE, &B_TILE, tx, ty, &mut acc);
            thread::sync_threads();
            k0 += TILE;
        }
        store_rows(&mut c, &acc, tile_row + ty, col, m, n);
    }

    /// The maximum (`IS_MAX`) or sum of one value per thread over the block,
    /// in every thread: warp shuffles, one slot per warp in `scratch`, then
    /// shuffles again. Every thread of the block must call it.
    #[inline(always)]
    fn block_reduce<const IS_MAX: bool>(v: f32, scratch: &SharedArray<f32, SOFTMAX_WARPS>) -> f32 {
        let tid = thread::threadIdx_x() as usize;
        let v = if IS_MAX { warp::max(v) } else { warp::sum(v) };
        if tid % 32 == 0 {
            // SAFETY: tid / 32 < SOFTMAX_WARPS (SOFTMAX_BLOCK threads); each
            // warp's lane 0 writes its own slot; the barrier orders the reads.
            unsafe { scratch.write(tid / 32, v) };
        }
        thread::sync_threads();
        let lane = tid % 32;
        let w = if lane < SOFTMAX_WARPS {
            // SAFETY: written before the barrier above.
            unsafe { scratch.read(lane) }
        } else if IS_MAX {
            f32::NEG_INFINITY
        } else {
            0.0
        };
        let w = if IS_MAX { warp::max(w) } else { warp::sum(w) };
        // The next call writes `scratch` again.
        thread::sync_threads();
        w
    }

    /// `out[row] = softmax(input[row])` for a row-major matrix with `cols`
    /// columns; one block of SOFTMAX_BLOCK threads per row, each striding over
    /// the columns: the row maximum, Σ exp(x − max), then exp(x − max) / Σ.
    #[kernel]
    pub fn softmax(input: &[f32], cols: usize, mut out: DisjointSlice<f32>) {
        shared! { static SCRATCH: [f32; SOFTMAX_WARPS]; }
        let row = thread::blockIdx_x() as usize;
        let first = thread::threadIdx_x() as usize;
        let step = SOFTMAX_BLOCK as usize;
        let x = &input[row * cols..(row + 1) * cols];
        let mut max = f32::NEG_INFINITY;
        let mut j = first;
        while j < cols {
            max = if x[j] > max { x[j] } else { max };
            j += step;
        }
        let max = block_reduce::<true>(max, &SCRATCH);
        let mut sum = 0.0f32;
        j = first;
        while j < cols {
            sum += (x[j] - max).exp();
            j += step;
        }
        let sum = block_reduce::<false>(sum, &SCRATCH);
        let inv = 1.0 / sum;
        j = first;
        let base = row * cols;
        while j < cols {
            let value = (x[j] - max).exp() * inv;
            if base + j < out.len() {
                // SAFETY: in bounds; element (row, j) belongs to this block's
                // row and this thread's stride alone.
                unsafe { *out.get_unchecked_mut(base + j) = value };
            }
            j += step;
        }
    }

    /// c (m×n) = a (m×k) · b (k×n), row-major `f32`; 32×8 threads compute a
    /// 32×32 tile of c, four rows per thread, stepping along k by 32.
    #[kernel]
    pub fn sgemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        shared! {
            static A_TILE: [f32; TILE * TILE];
            static B_TILE: [f32; TILE * TILE];
        }
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let tile_row = thread::blockIdx_y() as usize * TILE;
        let tile_col = thread::blockIdx_x() as usize * TILE;
        let col = tile_col + tx;
        let mut acc = [0.0f32; ROWS_PER_THREAD];
        let mut k0 = 0;
        while k0 < k {
            for i in 0..ROWS_PER_THREAD {
                let r = ty + i * BLOCK_ROWS;
                let (a_row, a_col) = (tile_row + r, k0 + tx);
                let a_value = if a_row < m && a_col < k { a[a_row * k + a_col] } else { 0.0 };
                let b_row = k0 + r;
                let b_value = if b_row < k && col < n { b[b_row * n + col] } else { 0.0 };
                // SAFETY: 32×8 threads, so the slot is in bounds and this
                // thread's alone; barriers separate it from every read.
                unsafe {
                    A_TILE.write(r * TILE + tx, a_value);
                    B_TILE.write(r * TILE + tx, b_value);
                }
            }
            thread::sync_threads();
            multiply_tiles(&A_TILE, &B_TILE, tx, ty, &mut acc);
            thread::sync_threads();
            k0 += TILE;
        }
        store_rows(&mut c, &acc, tile_row + ty, col, m, n);
    }

    /// A bf16 bit pattern widened to the `f32` it denotes.
    #[inline(always)]
    fn bf16_to_f32(bits: u16) -> f32 {
        f32::from_bits((bits as u32) << 16)
    }

    /// The bf16 GEMM's simple tiled kernel (the `gemm_bf16_*/tiled` rows,
    /// against its nvcc twin; the fast one is examples/gemm_bf16's wgmma
    /// kernel): sgemm's tiling with bf16 inputs (bit patterns in `u16`)
    /// widened to `f32` as a tile is loaded, `f32` accumulation and an `f32`
    /// result.
    #[kernel]
    pub fn gemm_bf16(m: usize, n: usize, k: usize, a: &[u16], b: &[u16], mut c: DisjointSlice<f32>) {
        shared! {
            static A_TILE: [f32; TILE * TILE];
            static B_TILE: [f32; TILE * TILE];
        }
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let tile_row = thread::blockIdx_y() as usize * TILE;
        let tile_col = thread::blockIdx_x() as usize * TILE;
        let col = tile_col + tx;
        let mut acc = [0.0f32; ROWS_PER_THREAD];
        let mut k0 = 0;
        while k0 < k {
            for i in 0..ROWS_PER_THREAD {
                let r = ty + i * BLOCK_ROWS;
                let (a_row, a_col) = (tile_row + r, k0 + tx);
                let a_value = if a_row < m && a_col < k { bf16_to_f32(a[a_row * k + a_col]) } else { 0.0 };
                let b_row = k0 + r;
                let b_value = if b_row < k && col < n { bf16_to_f32(b[b_row * n + col]) } else { 0.0 };
                // SAFETY: as in sgemm.
                unsafe {
                    A_TILE.write(r * TILE + tx, a_value);
                    B_TILE.write(r * TILE + tx, b_value);
                }
            }
            thread::sync_threads();
            multiply_tiles(&A_TILE, &B_TILE, tx, ty, &mut acc);
            thread::sync_threads();
            k0 += TILE;
        }
        store_rows(&mut c, &acc, tile_row + ty, col, m, n);
    }
}
