//! Warpgroup matrix multiply-accumulate (`wgmma.mma_async`, sm_90a).
//!
//! A warpgroup (four consecutive warps, the first a multiple of four) multiplies
//! a 64×16 tile A by a 16×N tile B, both in shared memory and described by
//! 64-bit [descriptors](descriptor), into a 64×N `f32` accumulator spread
//! over its 128 threads: each holds N/2 values, a `[f32; N/2]` the device
//! linker keeps in registers (LowerWgmma.cpp). Thread `t` (warp `w = t / 32`,
//! lane `l`) holds, for each column block `j` of 8:
//! `acc[4j] = D[r][c]`, `acc[4j+1] = D[r][c+1]`, `acc[4j+2] = D[r+8][c]`,
//! `acc[4j+3] = D[r+8][c+1]` with `r = 16w + l/4` and `c = 8j + 2(l%4)`.
//!
//! The instructions are asynchronous: [`fence`] before the first one (and
//! whenever the accumulators were touched by other code), [`commit_group`]
//! after a batch, [`wait_group`] before reading the accumulators or reusing
//! the shared memory. Both operands are K-major here (rows of A and rows of
//! B's transpose are contiguous along K), the layout TMA writes for
//! row-major A and a row-major N×K B.
//!
//! ```
//! use cuda_device::wgmma::{self, descriptor, Swizzle};
//!
//! /// acc += A·Bᵀ for a 64×64 A tile and a 128×64 B tile (K = 64), both
//! /// bf16 in shared memory at 1024-byte aligned 32-bit addresses `a`, `b`,
//! /// written by TMA with the 128-byte swizzle.
//! /// SAFETY (caller): the whole warpgroup calls it with the same arguments.
//! /// (Start from `let mut acc = wgmma::zeroed::<64>();`.)
//! unsafe fn tile(acc: &mut [f32; 64], a: u32, b: u32) {
//!     wgmma::fence();
//!     for k in 0..4 {
//!         // Each k step of 16 elements is 32 bytes further along the rows.
//!         let da = descriptor(a + 32 * k, 16, 1024, Swizzle::B128);
//!         let db = descriptor(b + 32 * k, 16, 1024, Swizzle::B128);
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
/// and stride byte offsets (between core matrices along K, and between
/// 8-row groups; for K-major swizzled layouts the stride is 8 rows' bytes,
/// e.g. 1024 for 128-byte rows, and the leading offset is unused) and the
/// swizzle. Addresses and offsets are in bytes, multiples of 16.
#[inline(always)]
pub const fn descriptor(address: u32, leading_byte_offset: u32, stride_byte_offset: u32, swizzle: Swizzle) -> u64 {
    const fn field(bytes: u32) -> u64 {
        ((bytes as u64 & 0x3ffff) >> 4) & 0x3fff
    }
    field(address) | field(leading_byte_offset) << 16 | field(stride_byte_offset) << 32 | (swizzle as u64) << 62
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
    stubs::__oxide_stub_cvt_bf16x2_f32(hi, lo)
}

macro_rules! mma {
    ($($name:ident $stub:ident $n:literal $r:literal $ty:literal;)*) => {$(
        #[doc = concat!("`acc` (+)= A·B for a 64×16 A and a 16×", stringify!($n), " B of ", $ty, " in shared memory (`wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k16.f32.", $ty, ".", $ty, "`); `scale_d` false ignores `acc`'s old values. Asynchronous: see the module docs.")]
        ///
        /// # Safety
        /// All 128 threads of a warpgroup call it together with the same
        /// descriptors, which describe K-major tiles in shared memory that
        /// nobody writes until [`wait_group`] says the instruction is done;
        /// `acc` is not read or written by other code until then. Needs
        /// sm_90a.
        #[inline(always)]
        pub unsafe fn $name(acc: &mut [f32; $r], desc_a: u64, desc_b: u64, scale_d: bool) {
            stubs::$stub(acc.as_mut_ptr(), desc_a, desc_b, scale_d as u32)
        }
    )*};
}
mma! {
    m64n8k16_f32_bf16 __oxide_stub_wgmma_m64n8k16_f32_bf16 8 4 "bf16";
    m64n16k16_f32_bf16 __oxide_stub_wgmma_m64n16k16_f32_bf16 16 8 "bf16";
    m64n24k16_f32_bf16 __oxide_stub_wgmma_m64n24k16_f32_bf16 24 12 "bf16";
    m64n32k16_f32_bf16 __oxide_stub_wgmma_m64n32k16_f32_bf16 32 16 "bf16";
    m64n40k16_f32_bf16 __oxide_stub_wgmma_m64n40k16_f32_bf16 40 20 "bf16";
    m64n48k16_f32_bf16 __oxide_stub_wgmma_m64n48k16_f32_bf16 48 24 "bf16";
    m64n56k16_f32_bf16 __oxide_stub_wgmma_m64n56k16_f32_bf16 56 28 "bf16";
    m64n64k16_f32_bf16 __oxide_stub_wgmma_m64n64k16_f32_bf16 64 32 "bf16";
    m64n72k16_f32_bf16 __oxide_stub_wgmma_m64n72k16_f32_bf16 72 36 "bf16";
    m64n80k16_f32_bf16 __oxide_stub_wgmma_m64n80k16_f32_bf16 80 40 "bf16";
    m64n88k16_f32_bf16 __oxide_stub_wgmma_m64n88k16_f32_bf16 88 44 "bf16";
    m64n96k16_f32_bf16 __oxide_stub_wgmma_m64n96k16_f32_bf16 96 48 "bf16";
    m64n104k16_f32_bf16 __oxide_stub_wgmma_m64n104k16_f32_bf16 104 52 "bf16";
    m64n112k16_f32_bf16 __oxide_stub_wgmma_m64n112k16_f32_bf16 112 56 "bf16";
    m64n120k16_f32_bf16 __oxide_stub_wgmma_m64n120k16_f32_bf16 120 60 "bf16";
    m64n128k16_f32_bf16 __oxide_stub_wgmma_m64n128k16_f32_bf16 128 64 "bf16";
    m64n136k16_f32_bf16 __oxide_stub_wgmma_m64n136k16_f32_bf16 136 68 "bf16";
    m64n144k16_f32_bf16 __oxide_stub_wgmma_m64n144k16_f32_bf16 144 72 "bf16";
    m64n152k16_f32_bf16 __oxide_stub_wgmma_m64n152k16_f32_bf16 152 76 "bf16";
    m64n160k16_f32_bf16 __oxide_stub_wgmma_m64n160k16_f32_bf16 160 80 "bf16";
    m64n168k16_f32_bf16 __oxide_stub_wgmma_m64n168k16_f32_bf16 168 84 "bf16";
    m64n176k16_f32_bf16 __oxide_stub_wgmma_m64n176k16_f32_bf16 176 88 "bf16";
    m64n184k16_f32_bf16 __oxide_stub_wgmma_m64n184k16_f32_bf16 184 92 "bf16";
    m64n192k16_f32_bf16 __oxide_stub_wgmma_m64n192k16_f32_bf16 192 96 "bf16";
    m64n200k16_f32_bf16 __oxide_stub_wgmma_m64n200k16_f32_bf16 200 100 "bf16";
    m64n208k16_f32_bf16 __oxide_stub_wgmma_m64n208k16_f32_bf16 208 104 "bf16";
    m64n216k16_f32_bf16 __oxide_stub_wgmma_m64n216k16_f32_bf16 216 108 "bf16";
    m64n224k16_f32_bf16 __oxide_stub_wgmma_m64n224k16_f32_bf16 224 112 "bf16";
    m64n232k16_f32_bf16 __oxide_stub_wgmma_m64n232k16_f32_bf16 232 116 "bf16";
    m64n240k16_f32_bf16 __oxide_stub_wgmma_m64n240k16_f32_bf16 240 120 "bf16";
    m64n248k16_f32_bf16 __oxide_stub_wgmma_m64n248k16_f32_bf16 248 124 "bf16";
    m64n256k16_f32_bf16 __oxide_stub_wgmma_m64n256k16_f32_bf16 256 128 "bf16";
    m64n8k16_f32_f16 __oxide_stub_wgmma_m64n8k16_f32_f16 8 4 "f16";
    m64n16k16_f32_f16 __oxide_stub_wgmma_m64n16k16_f32_f16 16 8 "f16";
    m64n24k16_f32_f16 __oxide_stub_wgmma_m64n24k16_f32_f16 24 12 "f16";
    m64n32k16_f32_f16 __oxide_stub_wgmma_m64n32k16_f32_f16 32 16 "f16";
    m64n40k16_f32_f16 __oxide_stub_wgmma_m64n40k16_f32_f16 40 20 "f16";
    m64n48k16_f32_f16 __oxide_stub_wgmma_m64n48k16_f32_f16 48 24 "f16";
    m64n56k16_f32_f16 __oxide_stub_wgmma_m64n56k16_f32_f16 56 28 "f16";
    m64n64k16_f32_f16 __oxide_stub_wgmma_m64n64k16_f32_f16 64 32 "f16";
    m64n72k16_f32_f16 __oxide_stub_wgmma_m64n72k16_f32_f16 72 36 "f16";
    m64n80k16_f32_f16 __oxide_stub_wgmma_m64n80k16_f32_f16 80 40 "f16";
    m64n88k16_f32_f16 __oxide_stub_wgmma_m64n88k16_f32_f16 88 44 "f16";
    m64n96k16_f32_f16 __oxide_stub_wgmma_m64n96k16_f32_f16 96 48 "f16";
    m64n104k16_f32_f16 __oxide_stub_wgmma_m64n104k16_f32_f16 104 52 "f16";
    m64n112k16_f32_f16 __oxide_stub_wgmma_m64n112k16_f32_f16 112 56 "f16";
    m64n120k16_f32_f16 __oxide_stub_wgmma_m64n120k16_f32_f16 120 60 "f16";
    m64n128k16_f32_f16 __oxide_stub_wgmma_m64n128k16_f32_f16 128 64 "f16";
    m64n136k16_f32_f16 __oxide_stub_wgmma_m64n136k16_f32_f16 136 68 "f16";
    m64n144k16_f32_f16 __oxide_stub_wgmma_m64n144k16_f32_f16 144 72 "f16";
    m64n152k16_f32_f16 __oxide_stub_wgmma_m64n152k16_f32_f16 152 76 "f16";
    m64n160k16_f32_f16 __oxide_stub_wgmma_m64n160k16_f32_f16 160 80 "f16";
    m64n168k16_f32_f16 __oxide_stub_wgmma_m64n168k16_f32_f16 168 84 "f16";
    m64n176k16_f32_f16 __oxide_stub_wgmma_m64n176k16_f32_f16 176 88 "f16";
    m64n184k16_f32_f16 __oxide_stub_wgmma_m64n184k16_f32_f16 184 92 "f16";
    m64n192k16_f32_f16 __oxide_stub_wgmma_m64n192k16_f32_f16 192 96 "f16";
    m64n200k16_f32_f16 __oxide_stub_wgmma_m64n200k16_f32_f16 200 100 "f16";
    m64n208k16_f32_f16 __oxide_stub_wgmma_m64n208k16_f32_f16 208 104 "f16";
    m64n216k16_f32_f16 __oxide_stub_wgmma_m64n216k16_f32_f16 216 108 "f16";
    m64n224k16_f32_f16 __oxide_stub_wgmma_m64n224k16_f32_f16 224 112 "f16";
    m64n232k16_f32_f16 __oxide_stub_wgmma_m64n232k16_f32_f16 232 116 "f16";
    m64n240k16_f32_f16 __oxide_stub_wgmma_m64n240k16_f32_f16 240 120 "f16";
    m64n248k16_f32_f16 __oxide_stub_wgmma_m64n248k16_f32_f16 248 124 "f16";
    m64n256k16_f32_f16 __oxide_stub_wgmma_m64n256k16_f32_f16 256 128 "f16";
}
