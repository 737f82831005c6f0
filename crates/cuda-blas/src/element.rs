//! The element types a GEMM runs on ([`GemmElement`]: f32, f64, f16, bf16),
//! the ones cuBLASLt's epilogues take ([`LtElement`]: f32, f16, bf16), the
//! scalar type of `alpha` and `beta` ([`Scalar`]: f32, or f64 for f64), and
//! those of an FP8 matmul: its inputs ([`Fp8Element`], the pairs cuBLASLt
//! multiplies: [`Fp8Pair`]) and outputs ([`Fp8Output`], with the type of
//! their bias).
//!
//! Every trait is sealed: the set is what cuBLAS computes, and the CPU
//! reference of the emulator implements exactly these.

use cuda_core::DeviceRepr;
use cuda_device::half::{bf16, f16, f8e4m3, f8e5m2};
use cuda_emulator::collective::fp8;

use crate::sys::{self, cublasComputeType_t, cudaDataType_t};

mod private {
    pub trait Sealed {}
}

/// The type of `alpha` and `beta`, and of the accumulation: `f32` for f32,
/// f16 and bf16 GEMMs (f16 and bf16 accumulate in f32), `f64` for f64.
pub trait Scalar:
    Copy + Send + Sync + std::fmt::Debug + PartialEq + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + private::Sealed + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The value rounded to TF32 (10 explicit mantissa bits, to nearest);
    /// f64 is returned unchanged. The CPU reference of TF32 compute.
    fn to_tf32(self) -> Self;
    /// `max(self, 0)` (the ReLU epilogue).
    fn relu(self) -> Self;
    /// The tanh approximation of GELU that cuBLASLt's epilogue computes.
    fn gelu(self) -> Self;
}

impl private::Sealed for f32 {}
impl Scalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn to_tf32(self) -> f32 {
        if !self.is_finite() {
            return self;
        }
        // Round to nearest (ties away) at bit 13, then clear the 13 low bits.
        f32::from_bits(self.to_bits().wrapping_add(0x1000) & !0x1fff)
    }
    fn relu(self) -> f32 {
        self.max(0.0)
    }
    fn gelu(self) -> f32 {
        (self as f64).gelu() as f32
    }
}

impl private::Sealed for f64 {}
impl Scalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn to_tf32(self) -> f64 {
        self
    }
    fn relu(self) -> f64 {
        self.max(0.0)
    }
    fn gelu(self) -> f64 {
        const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
        0.5 * self * (1.0 + (SQRT_2_OVER_PI * (self + 0.044_715 * self * self * self)).tanh())
    }
}

/// An element type of a cuBLAS GEMM: `f32`, `f64`, and `cuda_device::half`'s
/// `f16` and `bf16`.
///
/// A GEMM takes A, B and C of one element type (a mismatch does not
/// compile) and `alpha`, `beta` of its [`Scalar`](GemmElement::Scalar).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type cuBLAS multiplies",
    label = "a GEMM of `{Self}`",
    note = "cuda-blas GEMMs take f32, f64, f16 or bf16 (cuda_device::half) buffers"
)]
pub trait GemmElement: DeviceRepr + Copy + Send + Sync + private::Sealed + 'static {
    /// The type of `alpha`, `beta` and the accumulation.
    type Scalar: Scalar;
    /// The `cudaDataType_t` of the elements.
    const DATA_TYPE: cudaDataType_t;
    /// The default `cublasComputeType_t`.
    const COMPUTE: cublasComputeType_t;
    /// The Rust name, for errors.
    const NAME: &'static str;
    /// The value as the accumulation type.
    fn to_scalar(self) -> Self::Scalar;
    /// The accumulation type's value stored as an element (rounded to
    /// nearest).
    fn from_scalar(s: Self::Scalar) -> Self;
}

impl GemmElement for f32 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_32F;
    const COMPUTE: cublasComputeType_t = sys::CUBLAS_COMPUTE_32F;
    const NAME: &'static str = "f32";
    fn to_scalar(self) -> f32 {
        self
    }
    fn from_scalar(s: f32) -> f32 {
        s
    }
}

impl GemmElement for f64 {
    type Scalar = f64;
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_64F;
    const COMPUTE: cublasComputeType_t = sys::CUBLAS_COMPUTE_64F;
    const NAME: &'static str = "f64";
    fn to_scalar(self) -> f64 {
        self
    }
    fn from_scalar(s: f64) -> f64 {
        s
    }
}

impl private::Sealed for f16 {}
impl GemmElement for f16 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_16F;
    const COMPUTE: cublasComputeType_t = sys::CUBLAS_COMPUTE_32F;
    const NAME: &'static str = "f16";
    fn to_scalar(self) -> f32 {
        self.to_f32()
    }
    fn from_scalar(s: f32) -> f16 {
        f16::from_f32(s)
    }
}

impl private::Sealed for bf16 {}
impl GemmElement for bf16 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_16BF;
    const COMPUTE: cublasComputeType_t = sys::CUBLAS_COMPUTE_32F;
    const NAME: &'static str = "bf16";
    fn to_scalar(self) -> f32 {
        self.to_f32()
    }
    fn from_scalar(s: f32) -> bf16 {
        bf16::from_f32(s)
    }
}

/// An element type of a cuBLASLt matmul with an epilogue
/// ([`BlasLt::matmul`](crate::BlasLt::matmul)): `f32`, `f16`, `bf16`, all
/// with `f32` scalars and accumulation.
#[diagnostic::on_unimplemented(
    message = "cuBLASLt epilogues take f32, f16 or bf16, not `{Self}`",
    label = "a matmul of `{Self}`",
    note = "for f64 use `Blas::gemm` (no epilogue)"
)]
pub trait LtElement: GemmElement<Scalar = f32> {}
impl LtElement for f32 {}
impl LtElement for f16 {}
impl LtElement for bf16 {}

/// An FP8 input of [`BlasLt::matmul_fp8`](crate::BlasLt::matmul_fp8):
/// `cuda_device::half`'s [`f8e4m3`] and [`f8e5m2`], the types kernels use.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an FP8 type cuBLASLt multiplies",
    label = "an FP8 matmul input of `{Self}`",
    note = "FP8 matmuls take cuda_device::half::f8e4m3 or f8e5m2 inputs; for f16, bf16 or f32 use `BlasLt::matmul`"
)]
pub trait Fp8Element: DeviceRepr + Copy + Send + Sync + private::Sealed + 'static {
    /// The `cudaDataType_t` of the elements.
    const DATA_TYPE: cudaDataType_t;
    /// The Rust name, for errors.
    const NAME: &'static str;
    /// The exact value, decoded on the host (a NaN code gives a NaN).
    ///
    /// Unlike `f8e4m3::to_f32`, which is the GPU's conversion instruction
    /// (sm_89) wherever it is called, so that the device linker refuses it
    /// in a crate whose kernels are built for an older GPU, this is plain
    /// host code: host code of any crate may decode FP8 with it.
    fn to_f32(self) -> f32;
}

impl private::Sealed for f8e4m3 {}
impl Fp8Element for f8e4m3 {
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_8F_E4M3;
    const NAME: &'static str = "f8e4m3";
    fn to_f32(self) -> f32 {
        fp8::decode(fp8::E4M3, self.to_bits())
    }
}

impl private::Sealed for f8e5m2 {}
impl Fp8Element for f8e5m2 {
    const DATA_TYPE: cudaDataType_t = sys::CUDA_R_8F_E5M2;
    const NAME: &'static str = "f8e5m2";
    fn to_f32(self) -> f32 {
        fp8::decode(fp8::E5M2, self.to_bits())
    }
}

/// The FP8 A types cuBLASLt multiplies with a B of type `B`: E4M3 × E4M3,
/// E4M3 × E5M2 and E5M2 × E4M3. E5M2 × E5M2 has no kernel (both factors
/// would have two mantissa bits) and does not compile.
#[diagnostic::on_unimplemented(
    message = "cuBLASLt has no FP8 matmul of `{Self}` × `{B}`",
    label = "A is `{Self}`, B is `{B}`",
    note = "FP8 matmuls take f8e4m3 × f8e4m3, f8e4m3 × f8e5m2 or f8e5m2 × f8e4m3: store one factor as f8e4m3"
)]
pub trait Fp8Pair<B: Fp8Element>: Fp8Element {}
// Blanket impls over B, so that B is taken from the argument (a single
// impl per A would make rustc infer B from it and report a confusing
// mismatch of B's buffer instead of the rule).
impl<B: Fp8Element> Fp8Pair<B> for f8e4m3 {}
impl<B: Fp8TimesE5m2> Fp8Pair<B> for f8e5m2 {}

/// The FP8 types cuBLASLt multiplies with an E5M2 factor: only
/// [`f8e4m3`] (E5M2 × E5M2 has no kernel).
#[diagnostic::on_unimplemented(
    message = "cuBLASLt has no FP8 matmul of `f8e5m2` × `{Self}`",
    label = "B is `{Self}` and A is `f8e5m2`",
    note = "FP8 matmuls take f8e4m3 × f8e4m3, f8e4m3 × f8e5m2 or f8e5m2 × f8e4m3: store one factor as f8e4m3"
)]
pub trait Fp8TimesE5m2: Fp8Element {}
impl Fp8TimesE5m2 for f8e4m3 {}

/// An output (C and D) type of an FP8 matmul, and the type of its bias:
/// f32 (with a bf16 bias), f16 (f16 bias), bf16 (bf16 bias), as cuBLASLt's
/// table of FP8 type combinations has them.
#[diagnostic::on_unimplemented(
    message = "an FP8 matmul cannot write `{Self}`",
    label = "an FP8 matmul into `{Self}`",
    note = "FP8 matmuls write f32, f16 or bf16 (cuda_device::half)"
)]
pub trait Fp8Output: LtElement {
    /// The element type of an [`Epilogue`](crate::Epilogue)'s bias.
    type Bias: LtElement;
}
impl Fp8Output for f32 {
    type Bias = bf16;
}
impl Fp8Output for f16 {
    type Bias = f16;
}
impl Fp8Output for bf16 {
    type Bias = bf16;
}

#[cfg(test)]
mod tests {
    use super::Fp8Element;
    use cuda_device::half::{f8e4m3, f8e5m2};

    #[test]
    fn host_decoding_matches_cuda_devices_model_for_every_code() {
        for code in 0..=255u8 {
            let (a, b) = (Fp8Element::to_f32(f8e4m3::from_bits(code)), f8e4m3::from_bits(code).to_f32());
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "e4m3 {code:#04x}: {a} vs {b}");
            let (a, b) = (Fp8Element::to_f32(f8e5m2::from_bits(code)), f8e5m2::from_bits(code).to_f32());
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "e5m2 {code:#04x}: {a} vs {b}");
        }
    }
}
