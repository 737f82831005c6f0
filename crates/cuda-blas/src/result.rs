//! The result layer: [`CublasStatus`] (a `cublasStatus_t` by name) and
//! [`BlasError`], every failure of this crate, each with a `Display` that
//! says what to do about it.

use std::fmt;

use cuda_core::DriverError;

use crate::sys::{self, cublasStatus_t, LoadError};

/// A `cublasStatus_t` other than success, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CublasStatus {
    /// `CUBLAS_STATUS_NOT_INITIALIZED` (1).
    NotInitialized,
    /// `CUBLAS_STATUS_ALLOC_FAILED` (3).
    AllocFailed,
    /// `CUBLAS_STATUS_INVALID_VALUE` (7).
    InvalidValue,
    /// `CUBLAS_STATUS_ARCH_MISMATCH` (8).
    ArchMismatch,
    /// `CUBLAS_STATUS_MAPPING_ERROR` (11).
    MappingError,
    /// `CUBLAS_STATUS_EXECUTION_FAILED` (13).
    ExecutionFailed,
    /// `CUBLAS_STATUS_INTERNAL_ERROR` (14).
    InternalError,
    /// `CUBLAS_STATUS_NOT_SUPPORTED` (15).
    NotSupported,
    /// `CUBLAS_STATUS_LICENSE_ERROR` (16).
    LicenseError,
    /// A value this crate does not know.
    Other(i32),
}

impl CublasStatus {
    /// The status for a raw value; `None` for `CUBLAS_STATUS_SUCCESS`.
    pub fn from_raw(status: cublasStatus_t) -> Option<CublasStatus> {
        Some(match status {
            sys::CUBLAS_STATUS_SUCCESS => return None,
            1 => CublasStatus::NotInitialized,
            3 => CublasStatus::AllocFailed,
            7 => CublasStatus::InvalidValue,
            8 => CublasStatus::ArchMismatch,
            11 => CublasStatus::MappingError,
            13 => CublasStatus::ExecutionFailed,
            14 => CublasStatus::InternalError,
            15 => CublasStatus::NotSupported,
            16 => CublasStatus::LicenseError,
            other => CublasStatus::Other(other),
        })
    }

    /// The raw value.
    pub fn raw(self) -> i32 {
        match self {
            CublasStatus::NotInitialized => 1,
            CublasStatus::AllocFailed => 3,
            CublasStatus::InvalidValue => 7,
            CublasStatus::ArchMismatch => 8,
            CublasStatus::MappingError => 11,
            CublasStatus::ExecutionFailed => 13,
            CublasStatus::InternalError => 14,
            CublasStatus::NotSupported => 15,
            CublasStatus::LicenseError => 16,
            CublasStatus::Other(v) => v,
        }
    }

    /// The C name (`CUBLAS_STATUS_…`).
    pub fn name(self) -> &'static str {
        match self {
            CublasStatus::NotInitialized => "CUBLAS_STATUS_NOT_INITIALIZED",
            CublasStatus::AllocFailed => "CUBLAS_STATUS_ALLOC_FAILED",
            CublasStatus::InvalidValue => "CUBLAS_STATUS_INVALID_VALUE",
            CublasStatus::ArchMismatch => "CUBLAS_STATUS_ARCH_MISMATCH",
            CublasStatus::MappingError => "CUBLAS_STATUS_MAPPING_ERROR",
            CublasStatus::ExecutionFailed => "CUBLAS_STATUS_EXECUTION_FAILED",
            CublasStatus::InternalError => "CUBLAS_STATUS_INTERNAL_ERROR",
            CublasStatus::NotSupported => "CUBLAS_STATUS_NOT_SUPPORTED",
            CublasStatus::LicenseError => "CUBLAS_STATUS_LICENSE_ERROR",
            CublasStatus::Other(_) => "CUBLAS_STATUS_UNKNOWN",
        }
    }

    /// What usually causes it and what to try.
    fn hint(self) -> &'static str {
        match self {
            CublasStatus::NotInitialized => {
                "cuBLAS could not initialise: the CUDA driver is missing or too old for this cuBLAS, or the GPU is in a failed state"
            }
            CublasStatus::AllocFailed => "cuBLAS could not allocate device memory: free some, or use smaller problems",
            CublasStatus::InvalidValue => {
                "cuBLAS rejected an argument this crate did not check; please report it with the shapes used"
            }
            CublasStatus::ArchMismatch => {
                "the GPU lacks a feature this call needs (e.g. bf16 GEMM before sm_80): use another element type"
            }
            CublasStatus::MappingError => "cuBLAS could not access GPU memory (a texture bind or a copy failed)",
            CublasStatus::ExecutionFailed => {
                "the GPU program failed to run: a previous kernel may have left the context in an error state"
            }
            CublasStatus::InternalError => "cuBLAS failed internally, often after an earlier asynchronous error on the stream",
            CublasStatus::NotSupported => "this cuBLAS does not support the combination of types, layout and epilogue asked for",
            CublasStatus::LicenseError => "cuBLAS reported a licence error",
            CublasStatus::Other(_) => "an unknown status; check the cuBLAS documentation of this version",
        }
    }
}

impl fmt::Display for CublasStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.raw())
    }
}

/// One of the three operands of a GEMM (D, the output of a cuBLASLt matmul,
/// is C), or a cuBLASLt bias vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The left factor.
    A,
    /// The right factor.
    B,
    /// The output (and addend when `beta != 0`).
    C,
    /// The bias vector of a cuBLASLt epilogue.
    Bias,
    /// The scale factor of A of an FP8 matmul.
    ScaleA,
    /// The scale factor of B of an FP8 matmul.
    ScaleB,
    /// The workspace given to [`Blas::set_workspace`](crate::Blas::set_workspace).
    Workspace,
    /// The stream given to [`Blas::set_stream`](crate::Blas::set_stream).
    Stream,
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operand::A => "A",
            Operand::B => "B",
            Operand::C => "C",
            Operand::Bias => "the bias",
            Operand::ScaleA => "A's scale",
            Operand::ScaleB => "B's scale",
            Operand::Workspace => "the workspace",
            Operand::Stream => "the stream",
        })
    }
}

/// Every failure of this crate. Shape errors are found before cuBLAS is
/// called, so nothing has been queued when one is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlasError {
    /// `libcublas` (or `libcublasLt`) could not be opened.
    LibraryNotFound {
        /// `"libcublas"` or `"libcublasLt"`.
        library: &'static str,
        /// `path (dlopen's reason)` for each candidate tried.
        tried: Vec<String>,
    },
    /// The library opened lacks a function this crate calls.
    MissingSymbol {
        /// The file opened.
        path: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// A cuBLAS or cuBLASLt function returned an error status.
    Status {
        /// The function called.
        call: &'static str,
        /// What it returned.
        status: CublasStatus,
    },
    /// A call into cuda-core (binding the context, ordering a buffer's
    /// uses, allocating the cuBLASLt workspace) failed.
    Driver(DriverError),
    /// A leading dimension smaller than the rows of its (column-major view
    /// of the) matrix.
    LeadingDimension {
        /// Which matrix.
        operand: Operand,
        /// The leading dimension given.
        ld: usize,
        /// The smallest one allowed.
        min: usize,
    },
    /// A buffer shorter than the matrices the call would read or write.
    BufferTooSmall {
        /// Which matrix.
        operand: Operand,
        /// The elements the buffer (or view) holds.
        len: usize,
        /// The elements the call touches.
        needed: usize,
    },
    /// A dimension, leading dimension, stride or batch count larger than
    /// cuBLAS's 32-bit (64-bit for strides) arguments hold, or a size that
    /// overflows `usize`.
    TooLarge {
        /// Which value.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// The matrices of two batch entries of C overlap (C's stride is smaller
    /// than one C matrix): the entries would race.
    OverlappingOutput {
        /// C's batch stride.
        stride: usize,
        /// The elements of one C matrix.
        min: usize,
    },
    /// A buffer of another context (device) than the handle's.
    WrongContext {
        /// Which operand.
        operand: Operand,
    },
    /// A pointer-array batch with different numbers of A, B and C matrices.
    BatchCountMismatch {
        /// The A matrices given.
        a: usize,
        /// The B matrices given.
        b: usize,
        /// The C matrices given.
        c: usize,
    },
    /// TF32 compute was asked for a GEMM of another element type than f32.
    Tf32NeedsF32 {
        /// The element type used.
        element: &'static str,
    },
    /// A cuBLAS call on a stream that captures a graph, by a handle without
    /// a workspace of its own (cuBLAS would allocate one, which a capture
    /// cannot record).
    CaptureNeedsWorkspace {
        /// The call refused.
        call: &'static str,
    },
    /// A call that cannot be captured into a graph was made on a stream
    /// that captures one.
    NotCapturable {
        /// The call refused.
        call: &'static str,
        /// Why a graph cannot record it.
        why: &'static str,
    },
    /// An FP8 matmul on a GPU without FP8 tensor cores (compute capability
    /// below 8.9).
    Fp8NeedsSm89 {
        /// The GPU's compute capability.
        major: u32,
        /// Its minor number.
        minor: u32,
    },
    /// An FP8 matmul in another layout than cuBLASLt's FP8 kernels take:
    /// "TN" in column-major terms (A transposed, B not), which is, in
    /// row-major terms, A as stored and B transposed.
    Fp8Layout {
        /// The layout of the call.
        layout: crate::Layout,
        /// Its `op(A)`.
        trans_a: crate::Transpose,
        /// Its `op(B)`.
        trans_b: crate::Transpose,
    },
    /// A dimension or leading dimension of an FP8 matmul that is not a
    /// multiple of 16 (elements of A and B, 16 bytes of C).
    Fp8NotMultipleOf16 {
        /// Which value (`m`, `n`, `k`, `lda`, `ldb`, `ldc`, a batch stride).
        what: &'static str,
        /// Its value.
        value: usize,
        /// The multiple it must be, in elements.
        multiple: usize,
    },
    /// An operand of an FP8 matmul whose address is not 16-byte aligned
    /// (a view that starts inside a buffer).
    Fp8Misaligned {
        /// Which operand.
        operand: Operand,
        /// Its device address.
        address: u64,
    },
}

impl BlasError {
    /// The error for a failed status of `call`; `Ok` for success.
    pub(crate) fn check(call: &'static str, status: cublasStatus_t) -> Result<(), BlasError> {
        match CublasStatus::from_raw(status) {
            None => Ok(()),
            Some(status) => Err(BlasError::Status { call, status }),
        }
    }
}

impl From<LoadError> for BlasError {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::NotFound { library, tried } => BlasError::LibraryNotFound { library, tried },
            LoadError::MissingSymbol { path, symbol } => {
                BlasError::MissingSymbol { path: path.display().to_string(), symbol }
            }
        }
    }
}

impl From<DriverError> for BlasError {
    fn from(e: DriverError) -> Self {
        BlasError::Driver(e)
    }
}

impl fmt::Display for BlasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlasError::LibraryNotFound { library, tried } => {
                let (env, package) = if *library == "libcublasLt" {
                    ("OXIDE_CUBLASLT", "libcublasLt.so.13")
                } else {
                    ("OXIDE_CUBLAS", "libcublas.so.13")
                };
                write!(
                    f,
                    "{library} could not be loaded: install cuBLAS (the CUDA toolkit's `libcublas` package, or \
                     `pip install nvidia-cublas`) or set {env} to the path of {package}; tried: {}",
                    if tried.is_empty() { "nothing".to_string() } else { tried.join("; ") }
                )
            }
            BlasError::MissingSymbol { path, symbol } => {
                write!(f, "{path} has no function `{symbol}`: this cuBLAS is too old, install cuBLAS 12 or newer")
            }
            BlasError::Status { call, status } => write!(f, "{status} from {call}: {}", status.hint()),
            BlasError::Driver(e) => write!(f, "{e}"),
            BlasError::LeadingDimension { operand, ld, min } => write!(
                f,
                "the leading dimension of {operand} is {ld} but must be at least {min} (the length of one of its \
                 rows in row-major, columns in column-major, as stored)"
            ),
            BlasError::BufferTooSmall { operand, len, needed } => write!(
                f,
                "{operand} holds {len} elements but the shapes, leading dimension and batch stride given read or \
                 write {needed}: pass a larger buffer or smaller shapes"
            ),
            BlasError::TooLarge { what, value } => {
                write!(f, "{what} is {value}, more than cuBLAS accepts: split the problem into smaller GEMMs")
            }
            BlasError::OverlappingOutput { stride, min } => write!(
                f,
                "the batch stride of C is {stride} but one C matrix spans {min} elements: the batch entries would \
                 write the same elements; use a stride of at least {min}"
            ),
            BlasError::WrongContext { operand } => write!(
                f,
                "{operand} belongs to another context (device) than the BLAS handle: make the handle on a stream \
                 of the buffer's device, or copy the buffer there"
            ),
            BlasError::BatchCountMismatch { a, b, c } => write!(
                f,
                "a batched GEMM needs as many A, B and C matrices, but got {a} A, {b} B and {c} C"
            ),
            BlasError::Tf32NeedsF32 { element } => {
                write!(f, "TF32 compute applies to f32 GEMMs only, not {element}: use Compute::Default")
            }
            BlasError::CaptureNeedsWorkspace { call } => write!(
                f,
                "{call} was called while its stream captures a graph, but the handle has no workspace of its own \
                 (cuBLAS cannot allocate one inside a capture): make the handle with Blas::with_workspace, or call \
                 Blas::set_workspace before the capture begins"
            ),
            BlasError::NotCapturable { call, why } => {
                write!(f, "{call} cannot be captured into a graph: {why}; call it outside the capture")
            }
            BlasError::Fp8NeedsSm89 { major, minor } => write!(
                f,
                "FP8 matmuls need a GPU of compute capability 8.9 or newer (Ada, Hopper), but this one is \
                 {major}.{minor}: convert the inputs to f16 or bf16 and use BlasLt::matmul"
            ),
            BlasError::Fp8Layout { layout, trans_a, trans_b } => {
                let fix = match layout {
                    crate::Layout::RowMajor => {
                        "in row-major, A is stored m×k as is and B is stored n×k, transposed: \
                         GemmConfig::row_major(m, n, k).transpose_b()"
                    }
                    crate::Layout::ColMajor => {
                        "in column-major, A is stored k×m, transposed, and B is stored k×n as is: \
                         GemmConfig::col_major(m, n, k).transpose_a()"
                    }
                };
                write!(
                    f,
                    "cuBLASLt's FP8 matmuls take only the \"TN\" layout (A transposed, B not, in column-major \
                     terms), but this call is {layout:?} with op(A) = {trans_a:?}, op(B) = {trans_b:?}: {fix} \
                     (transpose the data first if it is stored otherwise)"
                )
            }
            BlasError::Fp8NotMultipleOf16 { what, value, multiple } => write!(
                f,
                "{what} of an FP8 matmul is {value}, not a multiple of {multiple} (cuBLASLt's FP8 kernels need \
                 16-byte rows and tiles): pad the matrices with zeros"
            ),
            BlasError::Fp8Misaligned { operand, address } => write!(
                f,
                "{operand} of an FP8 matmul is at {address:#x}, not 16-byte aligned (cuBLASLt's FP8 kernels \
                 need it): pass a view that starts at a multiple of 16 bytes, or copy it into its own buffer"
            ),
        }
    }
}

impl std::error::Error for BlasError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BlasError::Driver(e) => Some(e),
            _ => None,
        }
    }
}
