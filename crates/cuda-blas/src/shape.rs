//! GEMM shapes: [`GemmConfig`] (what the caller asks for, in row-major or
//! column-major terms), [`StridedBatch`], and their validation into the
//! column-major arguments cuBLAS takes ([`Plan`]). Every check that keeps
//! cuBLAS inside the buffers is here, and runs before anything is queued.

use crate::element::Scalar;
use crate::result::{BlasError, Operand};

/// How the three matrices are stored: every one of A, B and C of a call
/// uses the same layout.
///
/// * [`RowMajor`](Layout::RowMajor): element (i, j) of a matrix with
///   leading dimension `ld` is at `i * ld + j` (C and Rust arrays,
///   `ndarray`'s default, PyTorch). `ld` is at least the number of columns.
/// * [`ColMajor`](Layout::ColMajor): element (i, j) is at `i + j * ld`
///   (Fortran, cuBLAS). `ld` is at least the number of rows.
///
/// cuBLAS itself is column-major; a row-major GEMM `C = A·B` is run as the
/// column-major `Cᵀ = Bᵀ·Aᵀ`, which reads the same bytes and costs nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Rows are contiguous.
    RowMajor,
    /// Columns are contiguous.
    ColMajor,
}

/// Whether a factor is used as stored or transposed (`op(X)` in
/// `C = alpha·op(A)·op(B) + beta·C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `op(X) = X`.
    No,
    /// `op(X) = Xᵀ`.
    Yes,
}

impl Transpose {
    pub(crate) fn raw(self) -> crate::sys::cublasOperation_t {
        match self {
            Transpose::No => crate::sys::CUBLAS_OP_N,
            Transpose::Yes => crate::sys::CUBLAS_OP_T,
        }
    }
}

/// The arithmetic of a GEMM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compute {
    /// Full precision of the element type (f16 and bf16 accumulate in f32).
    #[default]
    Default,
    /// f32 GEMMs only: the inputs are rounded to TF32 (10-bit mantissa) and
    /// multiplied on tensor cores, accumulating in f32
    /// (`CUBLAS_COMPUTE_32F_FAST_TF32`). Several times faster on sm_80 and
    /// later, with about 3 decimal digits per product.
    Tf32,
}

/// One GEMM, `C = alpha·op(A)·op(B) + beta·C`, where `op(A)` is `m × k`,
/// `op(B)` is `k × n` and `C` is `m × n`.
///
/// Stored, A is `m × k` (or `k × m` when transposed), B is `k × n` (or
/// `n × k`), each in [`layout`](Self::layout) with its leading dimension;
/// a leading dimension left `None` is the tight one (the number of columns
/// in row-major, of rows in column-major). When `beta` is zero C is only
/// written, never read (NaNs in it do not propagate).
///
/// ```
/// use cuda_blas::{GemmConfig, Layout, Transpose};
/// // C (4×3) = A (4×2) · Bᵀ, B stored row-major as 3×2.
/// let cfg = GemmConfig::<f32>::row_major(4, 3, 2).transpose_b();
/// assert_eq!((cfg.layout, cfg.trans_b), (Layout::RowMajor, Transpose::Yes));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmConfig<S> {
    /// How A, B and C are stored.
    pub layout: Layout,
    /// `op(A)`.
    pub trans_a: Transpose,
    /// `op(B)`.
    pub trans_b: Transpose,
    /// Rows of `op(A)` and of C.
    pub m: usize,
    /// Columns of `op(B)` and of C.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// The factor of the product.
    pub alpha: S,
    /// The factor of C's old value (zero: C is only written).
    pub beta: S,
    /// A's leading dimension (`None`: tight).
    pub lda: Option<usize>,
    /// B's leading dimension (`None`: tight).
    pub ldb: Option<usize>,
    /// C's leading dimension (`None`: tight).
    pub ldc: Option<usize>,
    /// The arithmetic.
    pub compute: Compute,
}

impl<S: Scalar> GemmConfig<S> {
    /// `C = A·B` with every matrix row-major and tight, `alpha = 1`, `beta = 0`.
    pub fn row_major(m: usize, n: usize, k: usize) -> Self {
        Self::new(Layout::RowMajor, m, n, k)
    }

    /// `C = A·B` with every matrix column-major and tight, `alpha = 1`, `beta = 0`.
    pub fn col_major(m: usize, n: usize, k: usize) -> Self {
        Self::new(Layout::ColMajor, m, n, k)
    }

    /// `C = A·B` in `layout`, tight, `alpha = 1`, `beta = 0`.
    pub fn new(layout: Layout, m: usize, n: usize, k: usize) -> Self {
        GemmConfig {
            layout,
            trans_a: Transpose::No,
            trans_b: Transpose::No,
            m,
            n,
            k,
            alpha: S::ONE,
            beta: S::ZERO,
            lda: None,
            ldb: None,
            ldc: None,
            compute: Compute::Default,
        }
    }

    /// Uses Aᵀ: A is stored `k × m`.
    pub fn transpose_a(mut self) -> Self {
        self.trans_a = Transpose::Yes;
        self
    }

    /// Uses Bᵀ: B is stored `n × k`.
    pub fn transpose_b(mut self) -> Self {
        self.trans_b = Transpose::Yes;
        self
    }

    /// Sets `alpha` and `beta`.
    pub fn scale(mut self, alpha: S, beta: S) -> Self {
        self.alpha = alpha;
        self.beta = beta;
        self
    }

    /// Sets the three leading dimensions.
    pub fn leading_dims(mut self, lda: usize, ldb: usize, ldc: usize) -> Self {
        (self.lda, self.ldb, self.ldc) = (Some(lda), Some(ldb), Some(ldc));
        self
    }

    /// Sets the arithmetic.
    pub fn with_compute(mut self, compute: Compute) -> Self {
        self.compute = compute;
        self
    }
}

/// A strided batch: `count` GEMMs of one shape, entry `i` reading A at
/// element `i * stride_a` of its buffer, B at `i * stride_b` and writing C
/// at `i * stride_c`.
///
/// A or B may be shared by all entries (stride 0); C's entries may not
/// overlap ([`BlasError::OverlappingOutput`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedBatch {
    /// How many GEMMs.
    pub count: usize,
    /// Elements between consecutive A matrices.
    pub stride_a: usize,
    /// Elements between consecutive B matrices.
    pub stride_b: usize,
    /// Elements between consecutive C matrices.
    pub stride_c: usize,
}

impl StridedBatch {
    /// `count` matrices of each operand stored back to back (each stride
    /// is the span of one matrix of `cfg`, leading dimensions included).
    pub fn packed<S: Scalar>(cfg: &GemmConfig<S>, count: usize) -> Result<StridedBatch, BlasError> {
        let [a, b, c] = operands(cfg)?;
        Ok(StridedBatch { count, stride_a: a.span()?, stride_b: b.span()?, stride_c: c.span()? })
    }

    /// One GEMM.
    pub(crate) const ONE: StridedBatch = StridedBatch { count: 1, stride_a: 0, stride_b: 0, stride_c: 0 };
}

/// One matrix as stored: `rows × cols` in `layout`, leading dimension `ld`.
#[derive(Clone, Copy, Debug)]
struct Stored {
    operand: Operand,
    /// Length of a contiguous run (columns in row-major, rows in column-major).
    inner: usize,
    /// Number of runs.
    outer: usize,
    ld: usize,
}

impl Stored {
    fn new(operand: Operand, layout: Layout, rows: usize, cols: usize, ld: Option<usize>) -> Result<Stored, BlasError> {
        let (inner, outer) = match layout {
            Layout::RowMajor => (cols, rows),
            Layout::ColMajor => (rows, cols),
        };
        let min = inner.max(1);
        let ld = ld.unwrap_or(min);
        if ld < min {
            return Err(BlasError::LeadingDimension { operand, ld, min });
        }
        fits_i32("a leading dimension", ld)?;
        Ok(Stored { operand, inner, outer, ld })
    }

    /// The elements from the first to the last one of the matrix, inclusive.
    fn span(&self) -> Result<usize, BlasError> {
        if self.inner == 0 || self.outer == 0 {
            return Ok(0);
        }
        self.ld
            .checked_mul(self.outer - 1)
            .and_then(|x| x.checked_add(self.inner))
            .ok_or(BlasError::TooLarge { what: "a matrix's span", value: usize::MAX })
    }

    /// The elements `count` entries `stride` apart touch; checked against `len`.
    fn check_len(&self, count: usize, stride: usize, len: usize) -> Result<usize, BlasError> {
        let span = self.span()?;
        let needed = if span == 0 || count == 0 {
            0
        } else {
            stride
                .checked_mul(count - 1)
                .and_then(|x| x.checked_add(span))
                .ok_or(BlasError::TooLarge { what: "a batch's span", value: usize::MAX })?
        };
        if needed > len {
            return Err(BlasError::BufferTooSmall { operand: self.operand, len, needed });
        }
        Ok(needed)
    }
}

fn fits_i32(what: &'static str, value: usize) -> Result<(), BlasError> {
    if value > i32::MAX as usize {
        return Err(BlasError::TooLarge { what, value });
    }
    Ok(())
}

fn operands<S>(cfg: &GemmConfig<S>) -> Result<[Stored; 3], BlasError> {
    let (ar, ac) = match cfg.trans_a {
        Transpose::No => (cfg.m, cfg.k),
        Transpose::Yes => (cfg.k, cfg.m),
    };
    let (br, bc) = match cfg.trans_b {
        Transpose::No => (cfg.k, cfg.n),
        Transpose::Yes => (cfg.n, cfg.k),
    };
    Ok([
        Stored::new(Operand::A, cfg.layout, ar, ac, cfg.lda)?,
        Stored::new(Operand::B, cfg.layout, br, bc, cfg.ldb)?,
        Stored::new(Operand::C, cfg.layout, cfg.m, cfg.n, cfg.ldc)?,
    ])
}

/// A checked call in cuBLAS's column-major terms:
/// `C = alpha·op1(X1)·op2(X2) + beta·C` with `op1(X1)` `m × k`, where X1 is
/// A and X2 is B for column-major input, and the other way round for
/// row-major input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Whether X1 is the caller's B (row-major input).
    pub swapped: bool,
    pub op1: Transpose,
    pub op2: Transpose,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub ld1: usize,
    pub ld2: usize,
    pub ldc: usize,
    pub stride1: usize,
    pub stride2: usize,
    pub stride_c: usize,
    pub count: usize,
    /// Elements of A, B, C the call touches (what the CPU reference views).
    pub needed: [usize; 3],
}

impl Plan {
    /// Checks `cfg` and `batch` against buffers of `lens` (A, B, C)
    /// elements.
    pub(crate) fn new<S>(cfg: &GemmConfig<S>, batch: &StridedBatch, lens: [usize; 3]) -> Result<Plan, BlasError> {
        for (what, v) in [("m", cfg.m), ("n", cfg.n), ("k", cfg.k), ("the batch count", batch.count)] {
            fits_i32(what, v)?;
        }
        for v in [batch.stride_a, batch.stride_b, batch.stride_c] {
            if v > i64::MAX as usize {
                return Err(BlasError::TooLarge { what: "a batch stride", value: v });
            }
        }
        let [a, b, c] = operands(cfg)?;
        let count = batch.count;
        let c_span = c.span()?;
        if count > 1 && c_span > 0 && batch.stride_c < c_span {
            return Err(BlasError::OverlappingOutput { stride: batch.stride_c, min: c_span });
        }
        let needed = [
            a.check_len(count, batch.stride_a, lens[0])?,
            b.check_len(count, batch.stride_b, lens[1])?,
            c.check_len(count, batch.stride_c, lens[2])?,
        ];
        let common = |swapped, op1, op2, m, n, ld1, ld2, stride1, stride2| Plan {
            swapped,
            op1,
            op2,
            m,
            n,
            k: cfg.k,
            ld1,
            ld2,
            ldc: c.ld,
            stride1,
            stride2,
            stride_c: batch.stride_c,
            count,
            needed,
        };
        Ok(match cfg.layout {
            Layout::ColMajor => {
                common(false, cfg.trans_a, cfg.trans_b, cfg.m, cfg.n, a.ld, b.ld, batch.stride_a, batch.stride_b)
            }
            // Row-major C (m×n) is column-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ, and a
            // row-major stored X is the column-major Xᵀ: same ops, swapped.
            Layout::RowMajor => {
                common(true, cfg.trans_b, cfg.trans_a, cfg.n, cfg.m, b.ld, a.ld, batch.stride_b, batch.stride_a)
            }
        })
    }

    /// Whether the call computes nothing (an empty C or batch).
    pub(crate) fn is_empty(&self) -> bool {
        self.m == 0 || self.n == 0 || self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cfg: &GemmConfig<f32>, lens: [usize; 3]) -> Result<Plan, BlasError> {
        Plan::new(cfg, &StridedBatch::ONE, lens)
    }

    #[test]
    fn tight_shapes_need_exactly_their_elements() {
        let cfg = GemmConfig::<f32>::row_major(3, 5, 7);
        let p = plan(&cfg, [21, 35, 15]).unwrap();
        assert_eq!(p.needed, [21, 35, 15]);
        assert!(p.swapped);
        assert_eq!((p.m, p.n, p.k, p.ld1, p.ld2, p.ldc), (5, 3, 7, 5, 7, 5));
        assert_eq!(
            plan(&cfg, [20, 35, 15]),
            Err(BlasError::BufferTooSmall { operand: Operand::A, len: 20, needed: 21 })
        );
    }

    #[test]
    fn leading_dimensions_are_checked_per_layout_and_transpose() {
        // Row-major A (3×7): ld ≥ 7. Transposed, A is 7×3: ld ≥ 3.
        let cfg = GemmConfig::<f32>::row_major(3, 5, 7).leading_dims(6, 5, 5);
        assert_eq!(plan(&cfg, [100; 3]), Err(BlasError::LeadingDimension { operand: Operand::A, ld: 6, min: 7 }));
        let cfg = GemmConfig::<f32>::row_major(3, 5, 7).transpose_a().leading_dims(3, 5, 5);
        assert!(plan(&cfg, [100; 3]).is_ok());
        // Column-major C (3×5): ld ≥ 3; a padded ld needs ld·4 + 3 elements.
        let cfg = GemmConfig::<f32>::col_major(3, 5, 7).leading_dims(3, 7, 4);
        assert_eq!(plan(&cfg, [21, 35, 19]).unwrap().needed[2], 19);
        assert_eq!(
            plan(&cfg, [21, 35, 18]),
            Err(BlasError::BufferTooSmall { operand: Operand::C, len: 18, needed: 19 })
        );
    }

    #[test]
    fn batches_check_the_last_entry_and_overlapping_outputs() {
        let cfg = GemmConfig::<f32>::row_major(2, 2, 2);
        let batch = StridedBatch::packed(&cfg, 3).unwrap();
        assert_eq!(batch, StridedBatch { count: 3, stride_a: 4, stride_b: 4, stride_c: 4 });
        assert!(Plan::new(&cfg, &batch, [12, 12, 12]).is_ok());
        let shared_b = StridedBatch { stride_b: 0, ..batch };
        assert_eq!(Plan::new(&cfg, &shared_b, [12, 4, 12]).unwrap().needed, [12, 4, 12]);
        let overlap = StridedBatch { stride_c: 3, ..batch };
        assert_eq!(Plan::new(&cfg, &overlap, [12, 12, 12]), Err(BlasError::OverlappingOutput { stride: 3, min: 4 }));
    }

    #[test]
    fn sizes_past_cublas_ints_are_refused() {
        let cfg = GemmConfig::<f32>::row_major(1 << 31, 1, 1);
        assert_eq!(plan(&cfg, [0; 3]), Err(BlasError::TooLarge { what: "m", value: 1 << 31 }));
        let huge = GemmConfig::<f32>::col_major(4, 4, 4).leading_dims(usize::MAX, 4, 4);
        assert!(matches!(plan(&huge, [0; 3]), Err(BlasError::TooLarge { .. })));
    }

    #[test]
    fn empty_products_need_nothing() {
        let cfg = GemmConfig::<f32>::row_major(0, 5, 7);
        let p = plan(&cfg, [0, 35, 0]).unwrap();
        assert!(p.is_empty());
        assert_eq!(p.needed, [0, 35, 0]);
    }
}
