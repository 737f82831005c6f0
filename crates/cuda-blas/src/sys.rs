//! The sys layer: the C types, enum values and entry points of cuBLAS and
//! cuBLASLt that this crate uses, exactly as `cublas_api.h`, `cublasLt.h`
//! and `library_types.h` declare them, and opening the libraries with
//! `dlopen` (no link-time dependency).
//!
//! Nothing here checks an argument: the safe layer ([`Blas`](crate::Blas),
//! [`BlasLt`](crate::BlasLt)) does, before any of these is called.
//!
//! # Finding the libraries
//!
//! `libcublas` is the file named by `OXIDE_CUBLAS` if that is set (a path;
//! nothing else is tried then), else the first `libcublas.so.13` or
//! `libcublas.so.12` found in the CUDA toolkit (`$CUDA_HOME/lib64`,
//! `/usr/local/cuda/lib64`, `/usr/local/cuda/targets/x86_64-linux/lib`), in
//! the `nvidia-cublas` Python wheels (`site-packages/nvidia/cublas/lib`,
//! `nvidia/cu13/lib`, of the system's Pythons, `$VIRTUAL_ENV`,
//! `$CONDA_PREFIX` and `~/.local`), else those names on the loader's search path
//! (`LD_LIBRARY_PATH`, `ldconfig`). `libcublasLt` is `OXIDE_CUBLASLT`, else
//! the `libcublasLt` beside the `libcublas` found, else the same search.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_int, c_longlong, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// `cublasStatus_t`.
pub type cublasStatus_t = c_int;
/// `cublasHandle_t` (opaque).
pub type cublasHandle_t = *mut c_void;
/// `cublasLtHandle_t` (opaque).
pub type cublasLtHandle_t = *mut c_void;
/// `cublasLtMatmulDesc_t` (opaque).
pub type cublasLtMatmulDesc_t = *mut c_void;
/// `cublasLtMatrixLayout_t` (opaque).
pub type cublasLtMatrixLayout_t = *mut c_void;
/// `cublasLtMatmulPreference_t` (opaque).
pub type cublasLtMatmulPreference_t = *mut c_void;
/// `cudaStream_t` (the driver's `CUstream`).
pub type cudaStream_t = *mut c_void;
/// `cublasOperation_t`.
pub type cublasOperation_t = c_int;
/// `cudaDataType_t`.
pub type cudaDataType_t = c_int;
/// `cublasComputeType_t`.
pub type cublasComputeType_t = c_int;
/// `cublasGemmAlgo_t`.
pub type cublasGemmAlgo_t = c_int;

/// `CUBLAS_STATUS_SUCCESS`.
pub const CUBLAS_STATUS_SUCCESS: cublasStatus_t = 0;
/// `CUBLAS_OP_N`.
pub const CUBLAS_OP_N: cublasOperation_t = 0;
/// `CUBLAS_OP_T`.
pub const CUBLAS_OP_T: cublasOperation_t = 1;
/// `CUDA_R_32F`.
pub const CUDA_R_32F: cudaDataType_t = 0;
/// `CUDA_R_64F`.
pub const CUDA_R_64F: cudaDataType_t = 1;
/// `CUDA_R_16F`.
pub const CUDA_R_16F: cudaDataType_t = 2;
/// `CUDA_R_16BF`.
pub const CUDA_R_16BF: cudaDataType_t = 14;
/// `CUDA_R_8F_E4M3`.
pub const CUDA_R_8F_E4M3: cudaDataType_t = 28;
/// `CUDA_R_8F_E5M2`.
pub const CUDA_R_8F_E5M2: cudaDataType_t = 29;
/// `CUBLAS_COMPUTE_32F`.
pub const CUBLAS_COMPUTE_32F: cublasComputeType_t = 68;
/// `CUBLAS_COMPUTE_32F_FAST_TF32`.
pub const CUBLAS_COMPUTE_32F_FAST_TF32: cublasComputeType_t = 77;
/// `CUBLAS_COMPUTE_64F`.
pub const CUBLAS_COMPUTE_64F: cublasComputeType_t = 70;
/// `CUBLAS_GEMM_DEFAULT`.
pub const CUBLAS_GEMM_DEFAULT: cublasGemmAlgo_t = -1;

/// `CUBLASLT_MATMUL_DESC_TRANSA` (an `int32_t` `cublasOperation_t`).
pub const CUBLASLT_MATMUL_DESC_TRANSA: c_int = 3;
/// `CUBLASLT_MATMUL_DESC_TRANSB`.
pub const CUBLASLT_MATMUL_DESC_TRANSB: c_int = 4;
/// `CUBLASLT_MATMUL_DESC_EPILOGUE` (a `uint32_t` `cublasLtEpilogue_t`).
pub const CUBLASLT_MATMUL_DESC_EPILOGUE: c_int = 7;
/// `CUBLASLT_MATMUL_DESC_BIAS_POINTER` (a device pointer).
pub const CUBLASLT_MATMUL_DESC_BIAS_POINTER: c_int = 8;
/// `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` (a device pointer to one `float`).
pub const CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: c_int = 17;
/// `CUBLASLT_MATMUL_DESC_B_SCALE_POINTER` (a device pointer to one `float`).
pub const CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: c_int = 18;
/// `CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE` (an `int32_t` `cudaDataType_t`).
pub const CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: c_int = 26;
/// `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` (a `uint64_t`).
pub const CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: c_int = 1;
/// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES` (a `uint32_t`; B, C, D
/// follow as 6, 7, 8).
pub const CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: c_int = 5;
/// `CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT` (an `int32_t`).
pub const CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: c_int = 5;
/// `CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET` (an `int64_t`, in elements).
pub const CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: c_int = 6;
/// `CUBLASLT_EPILOGUE_DEFAULT`.
pub const CUBLASLT_EPILOGUE_DEFAULT: u32 = 1;
/// `CUBLASLT_EPILOGUE_RELU`.
pub const CUBLASLT_EPILOGUE_RELU: u32 = 2;
/// `CUBLASLT_EPILOGUE_BIAS`.
pub const CUBLASLT_EPILOGUE_BIAS: u32 = 4;
/// `CUBLASLT_EPILOGUE_RELU_BIAS`.
pub const CUBLASLT_EPILOGUE_RELU_BIAS: u32 = 6;
/// `CUBLASLT_EPILOGUE_GELU`.
pub const CUBLASLT_EPILOGUE_GELU: u32 = 32;
/// `CUBLASLT_EPILOGUE_GELU_BIAS`.
pub const CUBLASLT_EPILOGUE_GELU_BIAS: u32 = 36;

/// `cublasLtMatmulAlgo_t` (semi-opaque: 8 `uint64_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct cublasLtMatmulAlgo_t {
    /// Opaque.
    pub data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct cublasLtMatmulHeuristicResult_t {
    /// The algorithm to pass to `cublasLtMatmul`.
    pub algo: cublasLtMatmulAlgo_t,
    /// The workspace it needs, in bytes.
    pub workspaceSize: usize,
    /// Whether the other fields are valid (`CUBLAS_STATUS_SUCCESS`).
    pub state: cublasStatus_t,
    /// Device utilisation estimate.
    pub wavesCount: f32,
    /// Reserved.
    pub reserved: [c_int; 4],
}

use cuda_driver_sys::dl::{self, Library, RTLD_GLOBAL, RTLD_NOW};

/// Why a library table could not be made (the result layer turns it into a
/// [`BlasError`](crate::BlasError)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// No candidate could be opened: each path tried and what `dlopen` said.
    NotFound {
        /// `"libcublas"` or `"libcublasLt"`.
        library: &'static str,
        /// `path (dlerror)` for each candidate, in the order tried.
        tried: Vec<String>,
    },
    /// The library was opened but lacks a function (too old a cuBLAS).
    MissingSymbol {
        /// The file opened.
        path: PathBuf,
        /// The function missing.
        symbol: &'static str,
    },
}

/// Declares a table of entry points, one field per function named exactly
/// like the exported symbol, and its resolver.
macro_rules! api_table {
    ($(#[$doc:meta])* $table:ident { $($name:ident($($arg:ty),*) -> $ret:ty;)* }) => {
        $(#[$doc])*
        #[allow(non_snake_case)]
        #[derive(Clone, Debug)]
        pub struct $table {
            /// The file the functions come from.
            pub path: PathBuf,
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
        }

        impl $table {
            /// Resolves every entry point in the opened library `lib`.
            ///
            /// # Safety
            /// `lib` is a library whose symbols of these names have these
            /// C signatures.
            unsafe fn resolve(lib: Library, path: PathBuf) -> Result<Self, LoadError> {
                Ok($table {
                    $($name: {
                        let name = CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()).expect("NUL-terminated");
                        let p = lib.symbol(name);
                        if p.is_null() {
                            return Err(LoadError::MissingSymbol { path, symbol: stringify!($name) });
                        }
                        // SAFETY: the symbol has this C signature (caller).
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
                    },)*
                    path,
                })
            }
        }
    };
}

api_table! {
    /// The cuBLAS entry points this crate calls.
    CublasApi {
        cublasCreate_v2(*mut cublasHandle_t) -> cublasStatus_t;
        cublasDestroy_v2(cublasHandle_t) -> cublasStatus_t;
        cublasSetStream_v2(cublasHandle_t, cudaStream_t) -> cublasStatus_t;
        cublasSetWorkspace_v2(cublasHandle_t, *mut c_void, usize) -> cublasStatus_t;
        cublasGetVersion_v2(cublasHandle_t, *mut c_int) -> cublasStatus_t;
        cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, c_int, c_int, c_int,
                     *const c_void, *const c_void, cudaDataType_t, c_int,
                     *const c_void, cudaDataType_t, c_int,
                     *const c_void, *mut c_void, cudaDataType_t, c_int,
                     cublasComputeType_t, cublasGemmAlgo_t) -> cublasStatus_t;
        cublasGemmBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, c_int, c_int, c_int,
                            *const c_void, *const *const c_void, cudaDataType_t, c_int,
                            *const *const c_void, cudaDataType_t, c_int,
                            *const c_void, *const *mut c_void, cudaDataType_t, c_int,
                            c_int, cublasComputeType_t, cublasGemmAlgo_t) -> cublasStatus_t;
        cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, c_int, c_int, c_int,
                                   *const c_void, *const c_void, cudaDataType_t, c_int, c_longlong,
                                   *const c_void, cudaDataType_t, c_int, c_longlong,
                                   *const c_void, *mut c_void, cudaDataType_t, c_int, c_longlong,
                                   c_int, cublasComputeType_t, cublasGemmAlgo_t) -> cublasStatus_t;
    }
}

api_table! {
    /// The cuBLASLt entry points this crate calls.
    CublasLtApi {
        cublasLtCreate(*mut cublasLtHandle_t) -> cublasStatus_t;
        cublasLtDestroy(cublasLtHandle_t) -> cublasStatus_t;
        cublasLtMatmulDescCreate(*mut cublasLtMatmulDesc_t, cublasComputeType_t, cudaDataType_t) -> cublasStatus_t;
        cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t) -> cublasStatus_t;
        cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t, c_int, *const c_void, usize) -> cublasStatus_t;
        cublasLtMatrixLayoutCreate(*mut cublasLtMatrixLayout_t, cudaDataType_t, u64, u64, i64) -> cublasStatus_t;
        cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t) -> cublasStatus_t;
        cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t, c_int, *const c_void, usize) -> cublasStatus_t;
        cublasLtMatmulPreferenceCreate(*mut cublasLtMatmulPreference_t) -> cublasStatus_t;
        cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) -> cublasStatus_t;
        cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, c_int, *const c_void, usize) -> cublasStatus_t;
        cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                       cublasLtMatmulPreference_t, c_int, *mut cublasLtMatmulHeuristicResult_t,
                                       *mut c_int) -> cublasStatus_t;
        cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, *const c_void, *const c_void, cublasLtMatrixLayout_t,
                       *const c_void, cublasLtMatrixLayout_t, *const c_void, *const c_void, cublasLtMatrixLayout_t,
                       *mut c_void, cublasLtMatrixLayout_t, *const cublasLtMatmulAlgo_t, *mut c_void, usize,
                       cudaStream_t) -> cublasStatus_t;
    }
}

/// The sonames tried, newest first.
const CUBLAS_NAMES: [&str; 2] = ["libcublas.so.13", "libcublas.so.12"];
const CUBLASLT_NAMES: [&str; 2] = ["libcublasLt.so.13", "libcublasLt.so.12"];

/// The folders searched before the loader's own path: the CUDA toolkit and
/// the `nvidia-cublas` Python wheels.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join("lib64"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib"));
    let mut roots: Vec<PathBuf> = ["/usr/local/lib", "/usr/lib", "/opt/conda/lib"].iter().map(PathBuf::from).collect();
    for (var, sub) in [("VIRTUAL_ENV", "lib"), ("CONDA_PREFIX", "lib"), ("HOME", ".local/lib")] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            roots.push(PathBuf::from(v).join(sub));
        }
    }
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("python3") {
                for sub in ["site-packages", "dist-packages"] {
                    dirs.push(entry.path().join(sub).join("nvidia/cublas/lib"));
                    dirs.push(entry.path().join(sub).join("nvidia/cu13/lib"));
                }
            }
        }
    }
    dirs
}

/// The candidates for one library: the override alone if `env` is set,
/// else every `names` entry in every search folder, then the bare names.
fn candidates(env: &str, names: &[&str]) -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let mut paths = Vec::new();
    for dir in search_dirs() {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                paths.push(p);
            }
        }
    }
    paths.extend(names.iter().map(PathBuf::from));
    paths
}

/// `dlopen(path)`, or `dlerror()`'s text.
///
/// # Safety
/// Opening runs the library's initialisers: `path` must be a library that
/// may be loaded into this process (cuBLAS's).
unsafe fn open(path: &Path, flags: c_int) -> Result<Library, String> {
    let c = CString::new(path.to_string_lossy().as_bytes()).map_err(|_| "the path has a NUL byte".to_string())?;
    // SAFETY: the library is the caller's to vouch for.
    unsafe { dl::open(&c, flags) }
}

/// The `libcublasLt` file beside a `libcublas` one, if there is one.
fn lt_sibling(cublas: &Path) -> Option<PathBuf> {
    let name = cublas.file_name()?.to_string_lossy().replace("libcublas", "libcublasLt");
    let p = cublas.parent()?.join(name);
    p.is_file().then_some(p)
}

impl CublasApi {
    /// Opens libcublas as the [module docs](self) describe and resolves
    /// every entry point. `libcublasLt` from the same folder is opened
    /// first (`RTLD_GLOBAL`), so that cuBLAS finds the copy it was built
    /// with.
    ///
    /// Like `LD_LIBRARY_PATH`, `OXIDE_CUBLAS` is trusted to name cuBLAS.
    pub fn load() -> Result<CublasApi, LoadError> {
        // SAFETY: the candidates are cuBLAS's file names in the toolkit's
        // and NVIDIA's wheels' folders, or what the user named as cuBLAS.
        unsafe { Self::load_from(&candidates("OXIDE_CUBLAS", &CUBLAS_NAMES)) }
    }

    /// Tries `paths` in order (file paths, or bare names for the loader's
    /// search path) and resolves the first that opens.
    ///
    /// # Safety
    /// Opening a library runs its initialisers, and its symbols are taken
    /// to have cuBLAS's signatures: every path that opens must be a cuBLAS
    /// library, and a `libcublasLt` file beside it its cuBLASLt (a missing
    /// file is fine: it is an error).
    pub unsafe fn load_from(paths: &[PathBuf]) -> Result<CublasApi, LoadError> {
        let mut tried = Vec::new();
        for path in paths {
            if let Some(lt) = lt_sibling(path) {
                // Best effort: cuBLAS opens its own libcublasLt otherwise.
                // SAFETY: the cuBLASLt shipped beside this cuBLAS (caller).
                let _ = unsafe { open(&lt, RTLD_NOW | RTLD_GLOBAL) };
            }
            // SAFETY: a cuBLAS library (caller).
            match unsafe { open(path, RTLD_NOW) } {
                // SAFETY: a live handle of libcublas, never closed; the
                // table's signatures are cublas_api.h's.
                Ok(lib) => return unsafe { CublasApi::resolve(lib, path.clone()) },
                Err(why) => tried.push(format!("{} ({why})", path.display())),
            }
        }
        Err(LoadError::NotFound { library: "libcublas", tried })
    }
}

impl CublasLtApi {
    /// Opens libcublasLt as the [module docs](self) describe and resolves
    /// every entry point.
    pub fn load() -> Result<CublasLtApi, LoadError> {
        let mut paths = Vec::new();
        if std::env::var_os("OXIDE_CUBLASLT").filter(|p| !p.is_empty()).is_none() {
            if let Some(lt) = candidates("OXIDE_CUBLAS", &CUBLAS_NAMES).iter().find_map(|p| lt_sibling(p)) {
                paths.push(lt);
            }
        }
        paths.extend(candidates("OXIDE_CUBLASLT", &CUBLASLT_NAMES));
        // SAFETY: as for `CublasApi::load`.
        unsafe { Self::load_from(&paths) }
    }

    /// Tries `paths` in order and resolves the first that opens.
    ///
    /// # Safety
    /// As for [`CublasApi::load_from`], with cuBLASLt.
    pub unsafe fn load_from(paths: &[PathBuf]) -> Result<CublasLtApi, LoadError> {
        let mut tried = Vec::new();
        for path in paths {
            // SAFETY: a cuBLASLt library (caller).
            match unsafe { open(path, RTLD_NOW | RTLD_GLOBAL) } {
                // SAFETY: a live handle of libcublasLt, never closed; the
                // table's signatures are cublasLt.h's.
                Ok(lib) => return unsafe { CublasLtApi::resolve(lib, path.clone()) },
                Err(why) => tried.push(format!("{} ({why})", path.display())),
            }
        }
        Err(LoadError::NotFound { library: "libcublasLt", tried })
    }
}
