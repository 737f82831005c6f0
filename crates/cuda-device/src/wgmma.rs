//! Warpgroup matrix multiply-accumulate (`wgmma.mma_async`, sm_90a).
//!
//! A warpgroup (four consecutive warps, the first a multiple of four) multiplies
//! a 64×K tile A by a K×N tile B (K = 16 for bf16 and f16, 32 for the FP8
//! types e4m3 and e5m2: 32 bytes of each row either way), both in shared
//! memory and described by 64-bit [descriptors](descriptor), into a 64×N
//! `f32` accumulator spread over its 128 threads: each holds N/2 values, a
//! `[f32; N/2]` the device linker keeps in registers (LowerWgmma.cpp).
//! Thread `t` (warp `w = t / 32`, lane `l`) holds, for each column block `j`
//! of 8:
//! `acc[4j] = D[r][c]`, `acc[4j+1] = D[r][c+1]`, `acc[4j+2] = D[r+8][c]`,
//! `acc[4j+3] = D[r+8][c+1]` with `r = 16w + l/4` and `c = 8j + 2(l%4)`.
//!
//! The instructions are asynchronous: [`fence`] before the first one (and
//! whenever the accumulators were touched by other code), [`commit_group`]
//! after a batch, [`wait_group`] before reading the accumulators or reusing
//! the shared memory. A is always K-major (rows of A contiguous along K, the
//! layout TMA writes for a row-major A). B is K-major for the plain
//! functions (`m64n128k16_f32_bf16`: a row-major N×K B, i.e. the product
//! A·Bᵀ of two row-major matrices) and MN-major for the `_trans_b` ones
//! (`m64n128k16_f32_bf16_trans_b`: a row-major K×N B, whose rows run along
//! N — attention's V in P·V). The descriptor's offsets mean different
//! things in the two layouts: see [`descriptor`]. The `_rs` functions take A
//! from registers instead (`m64n128k16_f32_bf16_rs_trans_b`): four words per
//! thread in the accumulator's layout, so a product just computed can be
//! rounded, packed and multiplied again without going through shared memory.
//!
//! ```
//! use cuda_device::wgmma;
//!
//! /// acc += A·Bᵀ for a 64×64 A tile and a 128×64 B tile (K = 64), both
//! /// bf16 in shared memory at 1024-byte aligned 32-bit addresses `a`, `b`,
//! /// written by TMA with the 128-byte swizzle.
//! /// SAFETY (caller): the whole warpgroup calls it with the same arguments.
//! /// (Start from `let mut acc = wgmma::zeroed::<64>();`.)
//! unsafe fn tile(acc: &mut [f32; 64], a: u32, b: u32) {
//!     wgmma::fence();
//!     for k in 0..4 {
//!         // Each k step of 16 elements is 32 bytes further along the rows
//!         // (`descriptor` spells out the fields for other layouts).
//!         let da = wgmma::kmajor_b128(a, 64, k);
//!         let db = wgmma::kmajor_b128(b, 128, k);
//!         wgmma::m64n128k16_f32_bf16(acc, da, db, true);
//!     }
//!     wgmma::commit_group();
//!     wgmma::wait_group::<0>();
//! }
//! ```

use crate::stubs;

/// The shared-memory layout (swizzle) a descriptor describes; the value is
/// the descriptor's bits 62–63.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Swizzle {
    /// Interleaved 8×16-byte core matrices, no swizzle.
    None = 0,
    /// 128-byte swizzle (8 rows of 128 bytes, 1024-byte atoms).
    B128 = 1,
    /// 64-byte swizzle.
    B64 = 2,
    /// 32-byte swizzle.
    B32 = 3,
}

/// A matrix descriptor: the operand's 32-bit shared `address`, the leading
/// and stride byte offsets and the swizzle. Addresses and offsets are in
/// bytes, multiples of 16.
///
/// With a swizzle, the tile is made of atoms of 8 rows of the swizzle's
/// width (1024 bytes for [`Swizzle::B128`]: 8 rows of 128 bytes), and the
/// offsets say where the next atom starts:
/// * K-major operand (rows along M or N, each contiguous along K): the
///   stride offset is the distance between 8-row groups along M/N (8 rows'
///   bytes, e.g. 1024 for 128-byte rows); the leading offset is unused (a
///   k16 step stays inside one 128-byte row: move `address` by 32 bytes per
///   step of 16 bf16).
/// * MN-major operand (the `_trans_b` functions' B: rows along K, each
///   contiguous along N): the stride offset is the distance between groups
///   of 8 K rows (1024 for 128-byte rows), the leading offset the distance
///   between consecutive swizzle-width chunks along N (64 bf16 for the
///   128-byte swizzle: for N = 128, the offset from the tile of columns
///   0–63 to that of columns 64–127, e.g. two TMA boxes). A k16 step is two
///   whole atoms: move `address` by 16 rows' bytes.
#[inline(always)]
pub const fn descriptor(address: u32, leading_byte_offset: u32, stride_byte_offset: u32, swizzle: Swizzle) -> u64 {
    const fn field(bytes: u32) -> u64 {
        ((bytes as u64 & 0x3ffff) >> 4) & 0x3fff
    }
    field(address) | field(leading_byte_offset) << 16 | field(stride_byte_offset) << 32 | (swizzle as u64) << 62
}

/// The descriptor of k step `k` of a K-major operand laid out as TMA writes
/// it with the 128-byte swizzle: boxes of 128-byte rows (64 bf16 or f16,
/// 128 FP8 values), each box `rows` rows, box after box from `tile`.
///
/// A k step covers 32 bytes of each row (16 bf16, 32 FP8), so four steps
/// walk one box and the fifth starts the next: its address moves by 32
/// bytes inside a box and by a whole box (`rows` × 128 bytes) between
/// boxes; the stride offset is one 8-row atom (1024 bytes).
#[inline(always)]
pub const fn kmajor_b128(tile: u32, rows: u32, k: u32) -> u64 {
    descriptor(tile + (k / 4) * rows * 128 + 32 * (k % 4), 16, 1024, Swizzle::B128)
}

/// The descriptor of k step `k` of an MN-major operand (the `_trans_b`
/// functions' B: rows along K, each contiguous along N) laid out as TMA
/// writes it with the 128-byte swizzle: boxes of 64 columns of N, each
/// `box_rows` rows (K) long, box after box from `tile`.
///
/// A k16 step is 16 rows further (two atoms); the leading offset is the
/// distance to the next box of 64 columns (`box_rows` × 128 bytes).
#[inline(always)]
pub const fn mnmajor_b128(tile: u32, box_rows: u32, k: u32) -> u64 {
    descriptor(tile + 16 * k * 128, box_rows * 128, 1024, Swizzle::B128)
}

/// A zeroed accumulator fragment. Use it rather than `[0.0; R]`: rustc
/// emits a store loop for a repeat expression, whose variable index keeps the
/// array in local memory, while this is one `memset` that SROA turns into
/// registers.
#[inline(always)]
pub fn zeroed<const R: usize>() -> [f32; R] {
    // SAFETY: all-zero bits are the f32 value 0.0.
    unsafe { core::mem::zeroed() }
}

/// Orders earlier register and shared-memory accesses before the next
/// wgmma instructions (`wgmma.fence.sync.aligned`). Warpgroup-wide.
#[inline(always)]
pub fn fence() {
    stubs::__oxide_stub_wgmma_fence()
}

/// Closes the current batch of wgmma instructions into a group
/// (`wgmma.commit_group.sync.aligned`). Warpgroup-wide.
#[inline(always)]
pub fn commit_group() {
    stubs::__oxide_stub_wgmma_commit_group()
}

/// Waits until at most `N` (0–3) groups are pending
/// (`wgmma.wait_group.sync.aligned N`); with 0, the accumulators can be read
/// and the operands' shared memory reused. Warpgroup-wide.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    match N {
        0 => stubs::__oxide_stub_wgmma_wait_group_0(),
        1 => stubs::__oxide_stub_wgmma_wait_group_1(),
        2 => stubs::__oxide_stub_wgmma_wait_group_2(),
        _ => stubs::__oxide_stub_wgmma_wait_group_3(),
    }
}

/// Two `f32` rounded to bf16 (to nearest even) and packed: `lo` in bits
/// 0–15, `hi` in 16–31 (`cvt.rn.bf16x2.f32`).
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    stubs::__oxide_stub_bf16x2_from_f32(hi, lo)
}

macro_rules! mma {
    (@layout k_major) => { "K-major (imm-trans-b 0)" };
    (@layout mn_major) => { "MN-major (imm-trans-b 1: rows along K, contiguous along N)" };
    ($($name:ident $stub:ident $n:literal $k:literal $r:literal $ty:literal $layout:ident;)*) => {$(
        #[doc = concat!("`acc` (+)= A·B for a 64×", stringify!($k), " A and a ", stringify!($k), "×", stringify!($n), " B of ", $ty, " in shared memory (`wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k", stringify!($k), ".f32.", $ty, ".", $ty, "`), A K-major, B ", mma!(@layout $layout), "; `scale_d` false ignores `acc`'s old values. Asynchronous: see the module docs.")]
        ///
        /// # Safety
        /// All 128 threads of a warpgroup call it together with the same
        /// descriptors, which describe tiles in shared memory in the layouts
        /// named above, that
        /// nobody writes until [`wait_group`] says the instruction is done;
        /// `acc` is not read or written by other code until then. Needs
        /// sm_90a.
        #[inline(always)]
        pub unsafe fn $name(acc: &mut [f32; $r], desc_a: u64, desc_b: u64, scale_d: bool) {
            stubs::$stub(acc.as_mut_ptr(), desc_a, desc_b, scale_d as u32)
        }
    )*};
}
macro_rules! mma_rs {
    ($($name:ident $stub:ident $n:literal $k:literal $r:literal $ty:literal $layout:ident;)*) => {$(
        #[doc = concat!("`acc` (+)= A·B for a 64×16 A in registers and a 16×", stringify!($n), " B of ", $ty, " in shared memory (`wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k16.f32.", $ty, ".", $ty, "` with A a register vector), B ", mma!(@layout $layout), "; `scale_d` false ignores `acc`'s old values. `a` is the thread's part of A: four words of two ", $ty, " each (low half first), in the accumulator's layout (module docs) for a 64×16 tile: `a[0]` = A[r][c, c+1], `a[1]` = A[r+8][c, c+1], `a[2]` = A[r][c+8, c+9], `a[3]` = A[r+8][c+8, c+9] (r = 16w + l/4, c = 2(l%4)). So columns 16k…16k+15 of a 64×N accumulator, `acc[8k..8k+8]` packed in pairs ([`pack_bf16x2`]), are such an A. Asynchronous: see the module docs.")]
        ///
        /// # Safety
        /// All 128 threads of a warpgroup call it together with the same
        /// descriptor, which describes a tile in shared memory in the layout
        /// named above that nobody writes until [`wait_group`] says the
        /// instruction is done; `acc` is not read or written by other code
        /// until then. Needs sm_90a.
        #[inline(always)]
        pub unsafe fn $name(acc: &mut [f32; $r], a: [u32; 4], desc_b: u64, scale_d: bool) {
            stubs::$stub(acc.as_mut_ptr(), a.as_ptr(), desc_b, scale_d as u32)
        }
    )*};
}
// One function per member of Stubs.def's wgmma families (m64n8k16 … m64n256k16
// for bf16 and f16 — A from shared memory or registers, B K-major or
// MN-major —, m64n8k32 … m64n256k32 for FP8 e4m3 and e5m2, both K-major),
// generated by build.rs from those rows.
include!(concat!(env!("OUT_DIR"), "/wgmma_shapes.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor's fields spelled out: address, leading and stride
    /// offsets in 16-byte units at bits 0, 16 and 32, the 128-byte swizzle
    /// at bit 62.
    fn b128(address: u64, leading: u64, stride: u64) -> u64 {
        address / 16 | (leading / 16) << 16 | (stride / 16) << 32 | 1 << 62
    }

    #[test]
    fn kmajor_steps_walk_a_box_then_jump_to_the_next() {
        // Inside the first box: 32 bytes a step.
        for k in 0..4 {
            assert_eq!(kmajor_b128(0x1000, 128, k), b128(0x1000 + 32 * k as u64, 16, 1024));
        }
        // Step 5 of a 128-row tile: one box (128 × 128 bytes) and one step on.
        assert_eq!(kmajor_b128(0x1000, 128, 5), b128(0x1000 + 128 * 128 + 32, 16, 1024));
        // A 64-row tile's boxes are half as far apart.
        assert_eq!(kmajor_b128(0x1000, 64, 7), b128(0x1000 + 64 * 128 + 96, 16, 1024));
    }

    #[test]
    fn mnmajor_steps_are_sixteen_rows_and_the_leading_offset_is_a_box() {
        assert_eq!(mnmajor_b128(0x1000, 64, 0), b128(0x1000, 64 * 128, 1024));
        assert_eq!(mnmajor_b128(0x1000, 64, 3), b128(0x1000 + 3 * 16 * 128, 64 * 128, 1024));
        assert_eq!(mnmajor_b128(0x2000, 128, 7), b128(0x2000 + 7 * 16 * 128, 128 * 128, 1024));
    }
}
