//! Warp-wide 8x8 matrix moves between shared memory and registers:
//! `ldmatrix` (sm_75) and `stmatrix` (sm_90), for 16-bit elements.
//!
//! A *fragment* is the part of an 8x8 matrix of 16-bit elements that one
//! lane holds: one `u32` with two neighbouring elements of one row. Lane `l`
//! holds row `l / 4`, columns `2 * (l % 4)` (low 16 bits) and
//! `2 * (l % 4) + 1` (high 16 bits); [`fragment_position`] computes it. This
//! is the layout the `mma` instructions take their A and B operands in. The
//! `_trans` forms move the transposed matrix: lane `l` holds column `l / 4`,
//! rows `2 * (l % 4)` and `2 * (l % 4) + 1`.
//!
//! The `x1`, `x2` and `x4` forms move one, two or four matrices at once.
//! Each matrix row is 8 contiguous elements (16 bytes, 16-byte aligned) in a
//! `shared!` array, and the lanes say where the rows are: lanes 0..8 give the
//! rows of matrix 0, lanes 8..16 those of matrix 1, and so on; each lane
//! passes the index of its row's first element. Every lane of the warp must
//! call the function together (it is a warp-collective `.sync.aligned` op).
//!
//! ```
//! use cuda_device::{kernel, matrix, shared, thread, warp, DisjointSlice};
//!
//! /// Each warp loads an 8x8 tile and writes its fragments out.
//! #[kernel]
//! pub fn fragments(tile: &[u16], mut out: DisjointSlice<u32>) {
//!     shared! { static TILE: [u16; 64]; }
//!     let lane = warp::lane_id() as usize;
//!     for i in [2 * lane, 2 * lane + 1] {
//!         // SAFETY: each lane writes its own two elements; barrier below.
//!         unsafe { TILE.write(i, tile[i]) };
//!     }
//!     thread::sync_threads();
//!     // SAFETY: written before the barrier, not written again.
//!     let fragment = unsafe { matrix::load_x1(&TILE, (lane % 8) * 8) };
//!     if let Some(o) = out.get_mut(thread::index_1d()) {
//!         *o = fragment;
//!     }
//! }
//! ```

use crate::shared::{Alignment, SharedArray};
use crate::stubs;

mod sealed {
    pub trait Sealed {}
}

/// A 16-bit element type of the matrices (`.b16`).
pub trait B16: Copy + sealed::Sealed {}
impl sealed::Sealed for u16 {}
impl sealed::Sealed for i16 {}
impl B16 for u16 {}
impl B16 for i16 {}

/// Where, in an 8x8 matrix, the element that lane `lane` holds in half `half`
/// (0: low 16 bits, 1: high 16 bits) of its fragment sits, as (row, column).
/// For the `_trans` forms swap the two.
pub const fn fragment_position(lane: u32, half: u32) -> (usize, usize) {
    ((lane / 4) as usize, (2 * (lane % 4) + half) as usize)
}

/// The address of this lane's row; panics unless the row lies in the array
/// and starts on a 16-byte boundary.
#[inline(always)]
fn row_ptr<T: B16, const N: usize, A: Alignment>(tile: &SharedArray<T, N, A>, row_start: usize) -> *mut u8 {
    assert!(row_start % 8 == 0 && row_start + 8 <= N, "matrix row outside the tile or not 16-byte aligned");
    // In bounds (checked above); SharedArray is at least 16-byte aligned.
    tile.as_mut_ptr().wrapping_add(row_start).cast()
}

macro_rules! loads {
    ($($(#[$doc:meta])* $name:ident => $stub:ident -> $ret:ty, $unpack:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The rows are initialised and no thread writes them between the
        /// barrier that follows those writes and this load.
        #[inline(always)]
        pub unsafe fn $name<T: B16, const N: usize, A: Alignment>(
            tile: &SharedArray<T, N, A>,
            row_start: usize,
        ) -> $ret {
            let unpack: fn(_) -> $ret = $unpack;
            unpack(stubs::$stub(row_ptr(tile, row_start)))
        }
    )*};
}

macro_rules! stores {
    ($($(#[$doc:meta])* $name:ident($f:ident: $arg:ty) => $stub:ident($($e:expr),*);)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// No other thread reads or writes the rows until a barrier follows
        /// this store.
        #[inline(always)]
        pub unsafe fn $name<T: B16, const N: usize, A: Alignment>(
            tile: &SharedArray<T, N, A>,
            row_start: usize,
            $f: $arg,
        ) {
            stubs::$stub(row_ptr(tile, row_start), $($e),*)
        }
    )*};
}

fn split2(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

fn split4(v: u128) -> [u32; 4] {
    [v as u32, (v >> 32) as u32, (v >> 64) as u32, (v >> 96) as u32]
}

loads! {
    /// Loads one 8x8 matrix (`ldmatrix...x1`): lanes 0..8 give its rows.
    load_x1 => __oxide_stub_ldmatrix_x1 -> u32, |v| v;
    /// Loads two matrices (`.x2`): lanes 0..16 give their rows; fragment `i`
    /// is of matrix `i`.
    load_x2 => __oxide_stub_ldmatrix_x2 -> [u32; 2], split2;
    /// Loads four matrices (`.x4`): all 32 lanes give rows.
    load_x4 => __oxide_stub_ldmatrix_x4 -> [u32; 4], split4;
    /// [`load_x1`] of the transposed matrix (`.trans`).
    load_x1_trans => __oxide_stub_ldmatrix_x1_trans -> u32, |v| v;
    /// [`load_x2`] of the transposed matrices (`.trans`).
    load_x2_trans => __oxide_stub_ldmatrix_x2_trans -> [u32; 2], split2;
    /// [`load_x4`] of the transposed matrices (`.trans`).
    load_x4_trans => __oxide_stub_ldmatrix_x4_trans -> [u32; 4], split4;
}

stores! {
    /// Stores one 8x8 matrix from fragments (`stmatrix...x1`, sm_90): lanes
    /// 0..8 give its rows.
    store_x1(fragment: u32) => __oxide_stub_stmatrix_x1(fragment);
    /// Stores two matrices (`.x2`): lanes 0..16 give their rows.
    store_x2(fragments: [u32; 2]) => __oxide_stub_stmatrix_x2(fragments[0], fragments[1]);
    /// Stores four matrices (`.x4`): all 32 lanes give rows.
    store_x4(fragments: [u32; 4]) => __oxide_stub_stmatrix_x4(fragments[0], fragments[1], fragments[2], fragments[3]);
    /// [`store_x1`] of the transposed matrix (`.trans`).
    store_x1_trans(fragment: u32) => __oxide_stub_stmatrix_x1_trans(fragment);
    /// [`store_x2`] of the transposed matrices (`.trans`).
    store_x2_trans(fragments: [u32; 2]) => __oxide_stub_stmatrix_x2_trans(fragments[0], fragments[1]);
    /// [`store_x4`] of the transposed matrices (`.trans`).
    store_x4_trans(fragments: [u32; 4]) => __oxide_stub_stmatrix_x4_trans(fragments[0], fragments[1], fragments[2], fragments[3]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_layout_follows_the_ptx_isa() {
        // Lane 0 holds row 0, columns 0 and 1; lane 5 row 1, columns 2, 3;
        // lane 31 row 7, columns 6, 7.
        assert_eq!(fragment_position(0, 0), (0, 0));
        assert_eq!(fragment_position(0, 1), (0, 1));
        assert_eq!(fragment_position(5, 0), (1, 2));
        assert_eq!(fragment_position(31, 1), (7, 7));
        let mut seen = [[false; 8]; 8];
        for lane in 0..32 {
            for half in 0..2 {
                let (r, c) = fragment_position(lane, half);
                assert!(!seen[r][c]);
                seen[r][c] = true;
            }
        }
    }
}
