//! sgemm_fast (library): C = A·B in `f32` on CUDA cores (no tensor cores),
//! register-blocked, written in Rust. The kernel and its host setup live
//! here so that the example (`src/main.rs`, which checks it against the CPU
//! and cuBLAS) and the benchmarks (`benches/`, row `sgemm_fast`) run the
//! same code: the device linker compiles [`sgemm_fast`] into whichever
//! program links this crate, and [`launch`] launches it from there.
//!
//! A (M×K), B (K×N) and C (M×N) are row-major, of any shape. The fast path
//! is taken by the blocks whose tile lies wholly inside C when K is a
//! multiple of [`BK`], N a multiple of 4 and the buffers 16-byte aligned
//! (every `DeviceBuffer` is).
//!
//! The algorithm: a block of [`THREADS`] threads computes a [`BM`]×[`BN`]
//! tile of C; each thread owns an 8×8 piece of it, 64 accumulators in
//! registers: rows `4·ty + {0..4}` and `64 + 4·ty + {0..4}`, the same for
//! columns with `tx` (`tx`, `ty` < 16; a warp is an 8×4 patch of them).
//! The block walks K in steps of [`BK`]:
//! 1. Every thread loads one `float4` of the A tile (BM×BK, a row's 4
//!    consecutive K) and one of the B tile (BK×BN, 4 consecutive columns) from
//!    global memory into registers, 128-bit loads, coalesced.
//! 2. It stores them into the other one of two shared-memory buffers: B as
//!    it is, A transposed (K-major, rows padded by 4 floats, so the four
//!    scalar stores of a warp hit 32 different banks), so that for each `k`
//!    the A values a thread needs are consecutive too.
//! 3. For each `k` of the step, it reads two `float4` of A and two of B from
//!    shared memory (a warp reads 64 consecutive bytes of A and 128 of B,
//!    each shared by several lanes: one wavefront per load) and does the 64
//!    FMAs of their outer product.
//!
//! The loads of step `s + 1` are issued before the FMAs of step `s` and
//! stored after them (register prefetch, double buffering), so one barrier
//! per step separates a buffer's writes from its reads.
//!
//! Edges: a block whose tile overhangs C (or any block when the shape or
//! alignment rules out 128-bit accesses) runs the same loop compiled a
//! second time with checked scalar loads (zeros outside A and B) and checked
//! stores. Which copy runs is decided once per block, so interior blocks pay
//! nothing for the edges.
//!
//! ```ignore
//! let module = load_kernel_module(&ctx, "my_program")?;
//! let dims = Dims { m: 4096, n: 4096, k: 4096 };
//! sgemm_fast::launch(&module, &stream, dims, &a, &b, &mut c)?;
//! ```

use cuda_core::{CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};

/// Rows of C per block.
pub const BM: usize = 128;
/// Columns of C per block.
pub const BN: usize = 128;
/// The K step: columns of the A tile and rows of the B tile per step.
pub const BK: usize = 8;
/// Threads per block (16×16, each computing 8×8 elements of C).
pub const THREADS: usize = 256;
/// Row stride of the transposed A tile in shared memory: BM plus 4 floats,
/// which moves the four K rows one thread stores to different banks and
/// keeps every row 16-byte aligned.
const A_STRIDE: usize = BM + 4;
/// Elements of one A buffer (K-major) and of one B buffer.
const A_TILE: usize = BK * A_STRIDE;
const B_TILE: usize = BK * BN;

/// The problem shape: A is m×k, B is k×n, C is m×n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B (the reduction).
    pub k: usize,
}

impl Dims {
    /// Floating-point operations of one product (2·m·n·k).
    pub fn flops(self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// Four floats as one 16-byte aligned value: loading or storing one is a
/// single 128-bit access (`ld.v4.f32`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct F4([f32; 4]);

/// Reads the 16-byte aligned `F4` at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 readable floats.
#[inline(always)]
unsafe fn read4(p: *const f32) -> [f32; 4] {
    p.cast::<F4>().read().0
}

/// Writes `v` to the 16-byte aligned `F4` at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and valid for writing 4 floats.
#[inline(always)]
unsafe fn write4(p: *mut f32, v: [f32; 4]) {
    p.cast::<F4>().write(F4(v))
}

/// This thread's part of one K step's tiles, on its way from global to
/// shared memory: 4 consecutive K of one A row, 4 consecutive columns of
/// one B row.
#[derive(Clone, Copy)]
struct Staged {
    a: [f32; 4],
    b: [f32; 4],
}

/// Where this thread's global loads of a step read: row `a_row` of the A
/// tile at K offset `a_k`, row `b_k` of the B tile at column `b_col`.
#[derive(Clone, Copy)]
struct LoadSlot {
    a_row: usize,
    a_k: usize,
    b_k: usize,
    b_col: usize,
}

impl LoadSlot {
    #[inline(always)]
    fn of(tid: usize) -> LoadSlot {
        LoadSlot { a_row: tid / 2, a_k: (tid % 2) * 4, b_k: tid / 32, b_col: (tid % 32) * 4 }
    }
}

/// Loads this thread's part of the step at `k0` of the tile at
/// (`row0`, `col0`). `EDGE`: element by element, zeros outside A and B;
/// otherwise two 128-bit loads, which the caller's block-wide check allows.
///
/// # Safety
/// `a.len() ≥ m·k` and `b.len() ≥ k·n`; without `EDGE` also: the tile lies
/// inside C (`row0 + BM ≤ m`, `col0 + BN ≤ n`), `k0 + BK ≤ k`, k and n are
/// multiples of 4 and `a`, `b` are 16-byte aligned.
#[inline(always)]
unsafe fn load_step<const EDGE: bool>(
    d: Dims,
    a: &[f32],
    b: &[f32],
    slot: LoadSlot,
    row0: usize,
    col0: usize,
    k0: usize,
) -> Staged {
    let (row, ka) = (row0 + slot.a_row, k0 + slot.a_k);
    let (kb, col) = (k0 + slot.b_k, col0 + slot.b_col);
    if !EDGE {
        // SAFETY: (the caller's contract) row < m, ka + 4 ≤ k, so the four
        // floats lie in A's row `row`; ka and k are multiples of 4 and `a`
        // 16-byte aligned, so the address is. The same for B.
        return Staged { a: read4(a.as_ptr().add(row * d.k + ka)), b: read4(b.as_ptr().add(kb * d.n + col)) };
    }
    let mut staged = Staged { a: [0.0; 4], b: [0.0; 4] };
    for j in 0..4 {
        if row < d.m && ka + j < d.k {
            // SAFETY: row < m and ka + j < k: inside a.len() ≥ m·k.
            staged.a[j] = *a.get_unchecked(row * d.k + ka + j);
        }
        if kb < d.k && col + j < d.n {
            // SAFETY: kb < k and col + j < n: inside b.len() ≥ k·n.
            staged.b[j] = *b.get_unchecked(kb * d.n + col + j);
        }
    }
    staged
}

/// This thread's `(tx, ty)` (both < 16) for a thread index below THREADS.
/// Each warp is an 8×4 patch of them: its lanes read 4 distinct `float4` of
/// A (64 bytes) and 8 of B (128 bytes) per `k`, one shared-memory wavefront
/// each (a 16×2 patch would need two for B).
#[inline(always)]
fn compute_slot(tid: usize) -> (usize, usize) {
    let (warp, lane) = (tid / 32, tid % 32);
    ((warp % 2) * 8 + lane % 8, (warp / 2) * 4 + lane / 8)
}

/// Stores a step's loads into shared buffers `at` and `bt`: A transposed,
/// B as it is.
///
/// # Safety
/// `at` and `bt` point to an A and a B buffer of this block (A_TILE and
/// B_TILE floats, 16-byte aligned); no thread reads them until a barrier
/// follows, and every thread's reads of them finished before a barrier that
/// precedes this.
#[inline(always)]
unsafe fn store_step(at: *mut f32, bt: *mut f32, slot: LoadSlot, s: Staged) {
    for j in 0..4 {
        // SAFETY: a_k + j < BK and a_row < BM: inside the A buffer; this
        // thread's slots alone.
        at.add((slot.a_k + j) * A_STRIDE + slot.a_row).write(s.a[j]);
    }
    // SAFETY: b_k < BK, b_col + 4 ≤ BN, b_col a multiple of 4: an aligned
    // F4 inside the B buffer, this thread's alone.
    write4(bt.add(slot.b_k * BN + slot.b_col), s.b);
}

/// The 64 FMAs of each `k` of one step, from shared buffers `at`, `bt`.
///
/// # Safety
/// The buffers hold a complete step (written before a barrier that precedes
/// this, not written again before the next barrier); `tx`, `ty` < 16.
#[inline(always)]
unsafe fn multiply_step(at: *const f32, bt: *const f32, tx: usize, ty: usize, acc: &mut [[f32; 8]; 8]) {
    // Unrolled so that ptxas sees every shared load of the step and can
    // issue them ahead of the FMAs that need them.
    unroll!(full, for kk in 0..BK {
        // SAFETY: 4·ty + 64 + 4 ≤ BM and 4·tx + 64 + 4 ≤ BN, kk < BK: inside
        // the buffers; multiples of 4 from 16-byte aligned rows (A_STRIDE and
        // BN are multiples of 4).
        let a_row = at.add(kk * A_STRIDE);
        let b_row = bt.add(kk * BN);
        let (a0, a1) = (read4(a_row.add(4 * ty)), read4(a_row.add(64 + 4 * ty)));
        let (b0, b1) = (read4(b_row.add(4 * tx)), read4(b_row.add(64 + 4 * tx)));
        let av = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
        let bv = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
        for i in 0..8 {
            for j in 0..8 {
                acc[i][j] = av[i].mul_add(bv[j], acc[i][j]);
            }
        }
    });
}

/// Writes the 8×8 accumulators to C: rows `row0 + 4·ty + {0..4}` (and
/// `+ 64`), columns `col0 + 4·tx + {0..4}` (and `+ 64`). `EDGE`: element by
/// element, only those inside C; otherwise 128-bit stores.
///
/// # Safety
/// `c.len() ≥ m·n`; without `EDGE` also: the tile lies inside C, n is a
/// multiple of 4 and `c` is 16-byte aligned. The elements belong to this
/// thread alone (its block's tile, its tx and ty).
#[inline(always)]
unsafe fn store_c<const EDGE: bool>(
    d: Dims,
    c: &mut DisjointSlice<f32>,
    acc: &[[f32; 8]; 8],
    row0: usize,
    col0: usize,
    tx: usize,
    ty: usize,
) {
    let base = c.as_mut_ptr();
    // Indexed rather than `acc.iter().enumerate()`, which clippy prefers:
    // that spelling left the body too large for the inliner before the
    // device linker forced kernel bodies inline (compiler/test/
    // kernel-body-inline.ll); indexed, the kernel inlines either way.
    #[allow(clippy::needless_range_loop)]
    for i in 0..8 {
        let row = row0 + 4 * ty + (i % 4) + (i / 4) * 64;
        for half in 0..2 {
            let col = col0 + 4 * tx + half * 64;
            let v = [acc[i][4 * half], acc[i][4 * half + 1], acc[i][4 * half + 2], acc[i][4 * half + 3]];
            if !EDGE {
                // SAFETY: row < m, col + 4 ≤ n (inside the tile), aligned as
                // `c` is, n and col being multiples of 4.
                write4(base.add(row * d.n + col), v);
            } else if row < d.m {
                for (j, &x) in v.iter().enumerate() {
                    if col + j < d.n {
                        // SAFETY: row < m, col + j < n: inside c.len() ≥ m·n.
                        base.add(row * d.n + col + j).write(x);
                    }
                }
            }
        }
    }
}

/// The whole K loop of one block and the store of its tile: `EDGE` picks
/// checked or 128-bit global accesses (see [`load_step`], [`store_c`]).
///
/// # Safety
/// As for `load_step` and `store_c` with the same `EDGE`; every thread of
/// the block calls it with the same arguments except `tid` (the barriers).
#[inline(always)]
unsafe fn block_product<const EDGE: bool>(
    d: Dims,
    a: &[f32],
    b: &[f32],
    c: &mut DisjointSlice<f32>,
    tid: usize,
    row0: usize,
    col0: usize,
) {
    shared! {
        static A_TILES: [f32; 2 * A_TILE];
        static B_TILES: [f32; 2 * B_TILE];
    }
    let (a_tiles, b_tiles) = (A_TILES.as_mut_ptr(), B_TILES.as_mut_ptr());
    let slot = LoadSlot::of(tid);
    let (tx, ty) = compute_slot(tid);
    let mut acc = [[0.0f32; 8]; 8];
    let steps = d.k.div_ceil(BK);
    if steps == 0 {
        store_c::<EDGE>(d, c, &acc, row0, col0, tx, ty);
        return;
    }
    // SAFETY (every shared access below): buffer `s % 2` is written in step
    // s − 1 (or before the loop) and read in step s; the barrier at the end
    // of each step orders the writes before the reads, and the reads of
    // buffer s % 2 (step s) before its next writes (step s + 1).
    let first = load_step::<EDGE>(d, a, b, slot, row0, col0, 0);
    store_step(a_tiles, b_tiles, slot, first);
    thread::sync_threads();
    let mut step = 0;
    while step < steps {
        let cur = step % 2;
        let has_next = step + 1 < steps;
        let next = if has_next {
            load_step::<EDGE>(d, a, b, slot, row0, col0, (step + 1) * BK)
        } else {
            Staged { a: [0.0; 4], b: [0.0; 4] }
        };
        multiply_step(a_tiles.add(cur * A_TILE), b_tiles.add(cur * B_TILE), tx, ty, &mut acc);
        if has_next {
            store_step(a_tiles.add((1 - cur) * A_TILE), b_tiles.add((1 - cur) * B_TILE), slot, next);
        }
        thread::sync_threads();
        step += 1;
    }
    store_c::<EDGE>(d, c, &acc, row0, col0, tx, ty);
}

/// `c` = `a`·`b` (row-major, shape `dims`). Launch with [`config`]:
/// [`THREADS`] threads per block, one block per [`BM`]×[`BN`] tile of C.
#[kernel(launch_bounds(256, 2))]
pub fn sgemm_fast(dims: Dims, a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    // Uniform conditions: either the whole block stops here or none of it.
    assert!(
        thread::blockDim_x() as usize == THREADS && thread::blockDim_y() == 1 && thread::blockDim_z() == 1,
        "launch sgemm_fast with 256×1×1 threads per block (sgemm_fast::config)"
    );
    let d = dims;
    assert!(
        a.len() >= d.m * d.k && b.len() >= d.k * d.n && c.len() >= d.m * d.n,
        "sgemm_fast: a buffer is smaller than the shape says"
    );
    let tid = thread::threadIdx_x() as usize;
    let row0 = thread::blockIdx_y() as usize * BM;
    let col0 = thread::blockIdx_x() as usize * BN;
    let aligned = |p: usize| p % 16 == 0;
    // `%` rather than clippy's `is_multiple_of`: the same test, but that
    // spelling reshapes the optimised code enough for ptxas to spill here.
    #[allow(clippy::manual_is_multiple_of)]
    let interior = row0 + BM <= d.m
        && col0 + BN <= d.n
        && d.k % BK == 0
        && d.n % 4 == 0
        && aligned(a.as_ptr() as usize)
        && aligned(b.as_ptr() as usize)
        && aligned(c.as_mut_ptr() as usize);
    // SAFETY: the lengths are checked above; `interior` is exactly the
    // fast path's extra condition (BK is a multiple of 4, so k is); the
    // block shape is THREADS×1×1, so tid < THREADS and every thread of the
    // block takes the same branch.
    unsafe {
        if interior {
            block_product::<false>(d, a, b, &mut c, tid, row0, col0);
        } else {
            block_product::<true>(d, a, b, &mut c, tid, row0, col0);
        }
    }
}

/// The launch shape for `dims`: one block of [`THREADS`] threads per
/// [`BM`]×[`BN`] tile of C.
pub fn config(dims: Dims) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (dims.n.div_ceil(BN) as u32, dims.m.div_ceil(BM) as u32, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// What [`launch`] returns on failure.
///
/// `Send` and `Sync`, so that a launch can run inside
/// `CudaStream::capture` (which records it into a CUDA graph) or on
/// another thread and hand its error back.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Launches [`sgemm_fast`] (compiled into `module`) on `stream`,
/// asynchronously: `c` = `a`·`b` for the shape `dims` (nothing when C is
/// empty; zeros when K is 0). Fails if a buffer is
/// smaller than the shape needs or the grid is too large (M over 65535·BM),
/// and on driver errors.
pub fn launch(
    module: &KernelModule,
    stream: &CudaStream,
    dims: Dims,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    c: &mut DeviceBuffer<f32>,
) -> Result<(), Error> {
    let (m, n, k) = (dims.m, dims.n, dims.k);
    if a.len() < m * k || b.len() < k * n || c.len() < m * n {
        return Err(format!(
            "sgemm_fast {dims:?} needs A, B, C of {}, {}, {} elements; they have {}, {}, {}",
            m * k,
            k * n,
            m * n,
            a.len(),
            b.len(),
            c.len()
        )
        .into());
    }
    if m == 0 || n == 0 {
        // C is empty: nothing to launch (a grid of zero blocks is an error).
        return Ok(());
    }
    if m.div_ceil(BM) > 65535 {
        return Err(format!("sgemm_fast: M = {m} needs more than 65535 block rows (at most {} rows)", 65535 * BM).into());
    }
    let config = config(dims);
    cuda_launch! { kernel: sgemm_fast, stream: stream, module: module, config: config,
        args: [dims, slice(*a), slice(*b), slice_mut(*c)] }?;
    Ok(())
}
