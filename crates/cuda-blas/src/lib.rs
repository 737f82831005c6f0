//! cuBLAS and cuBLASLt from Rust, on cuda-core's buffers and streams.
//!
//! `libcublas` and `libcublasLt` are opened at run time with `dlopen`, as
//! cuda-core opens the driver: a program using this crate builds and starts
//! without them, and a missing library is a [`BlasError::LibraryNotFound`]
//! that says what to install (or which variable, `OXIDE_CUBLAS` /
//! `OXIDE_CUBLASLT`, names the file). See [`sys`] for where they are looked
//! for.
//!
//! * [`Blas`]: a cuBLAS handle bound to one stream. [`Blas::gemm`],
//!   [`Blas::gemm_strided_batched`] and [`Blas::gemm_batched`] for f32,
//!   f64, f16 and bf16 (f16/bf16 accumulate in f32), with TF32 compute for
//!   f32 ([`Compute::Tf32`]).
//! * [`BlasLt`]: cuBLASLt matmuls with a fused [`Epilogue`] (bias, ReLU,
//!   GELU, and bias + activation) for f32, f16 and bf16, and
//!   [`BlasLt::matmul_fp8`]: FP8 inputs (`f8e4m3`, `f8e5m2` of
//!   `cuda_device::half`) with per-tensor [`Fp8Scales`], writing f32, f16
//!   or bf16, on sm_89 and newer (every cuBLASLt FP8 rule is checked
//!   first).
//! * [`ops`]: the GEMMs as cuda-async `DeviceOperation`s (chained with
//!   kernels, scheduled on a stream pool, captured into graphs).
//! * [`GemmConfig`]: the shape of a call, row-major or column-major
//!   ([`Layout`]), with transposes, `alpha`/`beta` and leading dimensions.
//!
//! # Safety and checks
//!
//! Every shape, leading dimension, batch stride and buffer length is
//! checked before cuBLAS is called, so no safe call can make cuBLAS read or
//! write outside a buffer; a violation is a typed [`BlasError`] and nothing
//! is queued. A, B and C have one element type (a mismatch does not
//! compile), C is a [`DeviceSliceMut`](cuda_core::DeviceSliceMut) (so it
//! cannot alias A or B), and a buffer of another context than the handle's
//! is refused ([`BlasError::WrongContext`]). Each call orders its operands
//! like a kernel launch does (cuda-core's stream-ordered tracking): A, B
//! and a bias are reads, C is a write, so work on other streams that uses
//! them waits for, or is waited for by, the GEMM.
//!
//! # Without a GPU
//!
//! Under cuda-core's CPU emulator (`OXIDE_EMULATE`, or `cargo oxide run` on
//! a machine without a GPU) no library is loaded: the same calls run a CPU
//! reference implementation (plain loops; f16, bf16 and FP8 widened to
//! f32 exactly, TF32 inputs rounded to 10 mantissa bits) on the emulated
//! device memory, in stream order. The checks are the same as on a GPU.
//!
//! # Example
//!
//! ```
//! use cuda_blas::{Blas, GemmConfig};
//! use cuda_core::{CudaContext, DeviceBuffer};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let blas = Blas::new(&stream)?;
//!
//! // Row-major A (2×3) · B (3×2).
//! let a = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let b = DeviceBuffer::from_host(&stream, &[7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0])?;
//! let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
//! blas.gemm(&GemmConfig::row_major(2, 2, 3), a.as_slice(), b.as_slice(), c.as_slice_mut())?;
//! assert_eq!(c.to_host_vec(&stream)?, [58.0, 64.0, 139.0, 154.0]);
//!
//! // A buffer too small for the shape is refused before cuBLAS runs.
//! let err = blas.gemm(&GemmConfig::row_major(3, 2, 3), a.as_slice(), b.as_slice(), c.as_slice_mut());
//! assert!(matches!(err, Err(cuda_blas::BlasError::BufferTooSmall { .. })));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod blas;
mod cpu;
mod element;
mod lt;
pub mod ops;
mod result;
mod shape;
pub mod sys;

pub use blas::{cublas_api, cublaslt_api, Blas};
pub use element::{Fp8Element, Fp8Output, Fp8Pair, Fp8TimesE5m2, GemmElement, LtElement, Scalar};
pub use lt::{BlasLt, Epilogue, Fp8Scales, WORKSPACE_BYTES};
pub use result::{BlasError, CublasStatus, Operand};
pub use shape::{Compute, GemmConfig, Layout, StridedBatch, Transpose};

/// The CPU reference of a GEMM on host slices, for checking results: the
/// arithmetic the emulator runs (f16/bf16 widened to f32 and accumulated in
/// f32, TF32 inputs rounded when `cfg.compute` is [`Compute::Tf32`]), with
/// the same checks as [`Blas::gemm`].
pub fn gemm_reference<T: GemmElement>(
    cfg: &GemmConfig<T::Scalar>,
    a: &[T],
    b: &[T],
    c: &mut [T],
) -> Result<(), BlasError> {
    gemm_reference_batched(cfg, &StridedBatch { count: 1, stride_a: 0, stride_b: 0, stride_c: 0 }, a, b, c)
}

/// [`gemm_reference`] for a strided batch.
pub fn gemm_reference_batched<T: GemmElement>(
    cfg: &GemmConfig<T::Scalar>,
    batch: &StridedBatch,
    a: &[T],
    b: &[T],
    c: &mut [T],
) -> Result<(), BlasError> {
    blas::compute_type::<T>(cfg.compute)?;
    let plan = shape::Plan::new(cfg, batch, [a.len(), b.len(), c.len()])?;
    let (x1, x2) = if plan.swapped { (b, a) } else { (a, b) };
    let tf32 = cfg.compute == Compute::Tf32;
    cpu::gemm(&plan, cfg.alpha, cfg.beta, tf32, x1, x2, c, None, cpu::Activation::None);
    Ok(())
}
