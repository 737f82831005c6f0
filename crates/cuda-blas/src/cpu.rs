//! The CPU reference: what the emulator runs instead of cuBLAS, and what
//! tests compare the GPU with. Plain loops over a checked [`Plan`], in
//! cuBLAS's column-major terms; f16, bf16 and FP8 are widened to f32
//! (exactly), multiplied and accumulated in f32, and rounded once when
//! stored.

use crate::element::{Fp8Element, Fp8Output, GemmElement, Scalar};
use crate::shape::{Plan, Transpose};

/// The pointwise function applied last (cuBLASLt's epilogues).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation {
    None,
    Relu,
    Gelu,
}

/// `C = act(alpha·op1(X1)·op2(X2) + beta·C + bias[i])` for every batch entry.
///
/// `x1`, `x2` are the plan's first and second operands (B and A for a
/// row-major call), `bias` has `plan.m` elements (indexed by C's
/// column-major row).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm<T: GemmElement>(
    plan: &Plan,
    alpha: T::Scalar,
    beta: T::Scalar,
    tf32: bool,
    x1: &[T],
    x2: &[T],
    c: &mut [T],
    bias: Option<&[T]>,
    act: Activation,
) {
    if plan.is_empty() {
        return;
    }
    let load = |x: T| {
        let s = x.to_scalar();
        if tf32 {
            s.to_tf32()
        } else {
            s
        }
    };
    for e in 0..plan.count {
        let (o1, o2, oc) = (e * plan.stride1, e * plan.stride2, e * plan.stride_c);
        for j in 0..plan.n {
            for i in 0..plan.m {
                let mut acc = T::Scalar::ZERO;
                for p in 0..plan.k {
                    let a = match plan.op1 {
                        Transpose::No => x1[o1 + i + p * plan.ld1],
                        Transpose::Yes => x1[o1 + p + i * plan.ld1],
                    };
                    let b = match plan.op2 {
                        Transpose::No => x2[o2 + p + j * plan.ld2],
                        Transpose::Yes => x2[o2 + j + p * plan.ld2],
                    };
                    acc = acc + load(a) * load(b);
                }
                let out = &mut c[oc + i + j * plan.ldc];
                let mut v = alpha * acc;
                if beta != T::Scalar::ZERO {
                    v = v + beta * out.to_scalar();
                }
                if let Some(bias) = bias {
                    v = v + bias[i].to_scalar();
                }
                v = match act {
                    Activation::None => v,
                    Activation::Relu => v.relu(),
                    Activation::Gelu => v.gelu(),
                };
                *out = T::from_scalar(v);
            }
        }
    }
}

/// The FP8 matmul `C = act(alpha·op1(X1)·op2(X2) + beta·C + bias[i])`, one
/// batch entry; `alpha` already holds the product of the two scales.
///
/// Products of two FP8 values are exact in f32 (at most 4 × 4 significant
/// bits), so the only roundings are the f32 sums, the scaling and the
/// final store, as on the tensor cores.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_fp8<X1: Fp8Element, X2: Fp8Element, D: Fp8Output>(
    plan: &Plan,
    alpha: f32,
    beta: f32,
    x1: &[X1],
    x2: &[X2],
    c: &mut [D],
    bias: Option<&[D::Bias]>,
    act: Activation,
) {
    if plan.is_empty() {
        return;
    }
    // Decoded once: the loop below reads each element m or n times.
    let x1: Vec<f32> = x1.iter().map(|x| x.to_f32()).collect();
    let x2: Vec<f32> = x2.iter().map(|x| x.to_f32()).collect();
    for e in 0..plan.count {
        let (o1, o2, oc) = (e * plan.stride1, e * plan.stride2, e * plan.stride_c);
        for j in 0..plan.n {
            for i in 0..plan.m {
                let mut acc = 0.0f32;
                for p in 0..plan.k {
                    let a = match plan.op1 {
                        Transpose::No => x1[o1 + i + p * plan.ld1],
                        Transpose::Yes => x1[o1 + p + i * plan.ld1],
                    };
                    let b = match plan.op2 {
                        Transpose::No => x2[o2 + p + j * plan.ld2],
                        Transpose::Yes => x2[o2 + j + p * plan.ld2],
                    };
                    acc += a * b;
                }
                let out = &mut c[oc + i + j * plan.ldc];
                let mut v = alpha * acc;
                if beta != 0.0 {
                    v += beta * out.to_scalar();
                }
                if let Some(bias) = bias {
                    v += bias[i].to_scalar();
                }
                v = match act {
                    Activation::None => v,
                    Activation::Relu => v.relu(),
                    Activation::Gelu => v.gelu(),
                };
                *out = D::from_scalar(v);
            }
        }
    }
}

/// Views of the device memory of an emulated call, for [`gemm`].
///
/// # Safety
/// Each address points at (at least) its `needed` elements of host memory
/// (the emulator's device memory), valid and not written by anything else
/// while the views live; `c` does not overlap `x1`, `x2` or `bias`.
pub(crate) unsafe fn views<'a, T>(x1: u64, n1: usize, x2: u64, n2: usize, c: u64, nc: usize) -> (&'a [T], &'a [T], &'a mut [T]) {
    // SAFETY: the caller's contract; an empty view needs no memory.
    unsafe { (view(x1, n1), view(x2, n2), if nc == 0 { &mut [] } else { std::slice::from_raw_parts_mut(c as *mut T, nc) }) }
}

/// A unique view of `n` elements at `p`.
///
/// # Safety
/// As for [`views`]: nothing else reads or writes the memory while the
/// view lives.
pub(crate) unsafe fn view_mut<'a, T>(p: u64, n: usize) -> &'a mut [T] {
    if n == 0 {
        &mut []
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(p as *mut T, n) }
    }
}

/// A shared view of `n` elements at `p`.
///
/// # Safety
/// As for [`views`].
pub(crate) unsafe fn view<'a, T>(p: u64, n: usize) -> &'a [T] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p as *const T, n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{GemmConfig, StridedBatch};

    #[test]
    fn a_row_major_product_matches_the_textbook() {
        // A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]: A·B = [[19, 22], [43, 50]].
        let cfg = GemmConfig::<f32>::row_major(2, 2, 2);
        let plan = Plan::new(&cfg, &StridedBatch::ONE, [4, 4, 4]).unwrap();
        let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
        let mut c = [f32::NAN; 4];
        // Row-major: the first operand is B.
        gemm(&plan, 1.0, 0.0, false, &b, &a, &mut c, None, Activation::None);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        let cfg_t = GemmConfig::<f32>::row_major(2, 2, 2).transpose_a();
        let plan = Plan::new(&cfg_t, &StridedBatch::ONE, [4, 4, 4]).unwrap();
        gemm(&plan, 1.0, 0.0, false, &b, &a, &mut c, None, Activation::None);
        // Aᵀ·B = [[1·5+3·7, 1·6+3·8], [2·5+4·7, 2·6+4·8]].
        assert_eq!(c, [26.0, 30.0, 38.0, 44.0]);
    }

    #[test]
    fn tf32_rounding_keeps_ten_mantissa_bits() {
        assert_eq!(1.0f32.to_tf32(), 1.0);
        assert_eq!((1.0f32 + f32::EPSILON).to_tf32(), 1.0);
        assert_eq!((1.0f32 + 1.0 / 1024.0).to_tf32(), 1.0 + 1.0 / 1024.0);
        assert_eq!((-2.0f32).relu(), 0.0);
        assert!((1.0f32.gelu() - 0.841_192).abs() < 1e-5);
    }
}
