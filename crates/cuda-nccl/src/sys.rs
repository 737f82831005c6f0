//! The sys layer: the C types, enum values and entry points of NCCL that
//! this crate uses, exactly as `nccl.h` declares them, and opening
//! `libnccl.so.2` with `dlopen` (no link-time dependency).
//!
//! Nothing here checks an argument: the safe layer
//! ([`Communicator`](crate::Communicator)) does, before any of these is
//! called.
//!
//! # Finding the library
//!
//! The file named by `OXIDE_NCCL` if that is set (a path; nothing else is
//! tried then), else `libnccl.so.2` on the loader's search path
//! (`LD_LIBRARY_PATH`, `ldconfig`: the `libnccl2` package installs it in
//! `/usr/lib/x86_64-linux-gnu`), else in the CUDA toolkit (`$CUDA_HOME/lib`,
//! `$CUDA_HOME/lib64`, `/usr/local/cuda/lib`, `/usr/local/cuda/lib64`) and
//! the `nvidia-nccl` Python wheels (`site-packages/nvidia/nccl/lib` of the
//! system's Pythons, `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `~/.local`).
//!
//! The library must be NCCL [`MIN_VERSION`] or newer (`ncclCommSplit`,
//! `ncclAvg`, bf16 and the non-blocking configuration are all there);
//! fp8 needs [`FP8_VERSION`].

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use cuda_driver_sys::dl::{self, Library, RTLD_NOW};

/// `ncclResult_t`.
pub type ncclResult_t = c_int;
/// `ncclComm_t` (opaque).
pub type ncclComm_t = *mut c_void;
/// `ncclDataType_t`.
pub type ncclDataType_t = c_int;
/// `ncclRedOp_t`.
pub type ncclRedOp_t = c_int;
/// `cudaStream_t` (the driver's `CUstream`).
pub type cudaStream_t = *mut c_void;

/// `NCCL_UNIQUE_ID_BYTES`.
pub const NCCL_UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ncclUniqueId {
    /// Opaque bytes (an address and a magic number, for NCCL's bootstrap).
    pub internal: [c_char; NCCL_UNIQUE_ID_BYTES],
}

/// `ncclSuccess`.
pub const ncclSuccess: ncclResult_t = 0;
/// `ncclUnhandledCudaError`.
pub const ncclUnhandledCudaError: ncclResult_t = 1;
/// `ncclSystemError`.
pub const ncclSystemError: ncclResult_t = 2;
/// `ncclInternalError`.
pub const ncclInternalError: ncclResult_t = 3;
/// `ncclInvalidArgument`.
pub const ncclInvalidArgument: ncclResult_t = 4;
/// `ncclInvalidUsage`.
pub const ncclInvalidUsage: ncclResult_t = 5;
/// `ncclRemoteError`.
pub const ncclRemoteError: ncclResult_t = 6;
/// `ncclInProgress`.
pub const ncclInProgress: ncclResult_t = 7;

/// `ncclSum`.
pub const ncclSum: ncclRedOp_t = 0;
/// `ncclProd`.
pub const ncclProd: ncclRedOp_t = 1;
/// `ncclMax`.
pub const ncclMax: ncclRedOp_t = 2;
/// `ncclMin`.
pub const ncclMin: ncclRedOp_t = 3;
/// `ncclAvg`.
pub const ncclAvg: ncclRedOp_t = 4;

/// `ncclInt8`.
pub const ncclInt8: ncclDataType_t = 0;
/// `ncclUint8`.
pub const ncclUint8: ncclDataType_t = 1;
/// `ncclInt32`.
pub const ncclInt32: ncclDataType_t = 2;
/// `ncclUint32`.
pub const ncclUint32: ncclDataType_t = 3;
/// `ncclInt64`.
pub const ncclInt64: ncclDataType_t = 4;
/// `ncclUint64`.
pub const ncclUint64: ncclDataType_t = 5;
/// `ncclFloat16`.
pub const ncclFloat16: ncclDataType_t = 6;
/// `ncclFloat32`.
pub const ncclFloat32: ncclDataType_t = 7;
/// `ncclFloat64`.
pub const ncclFloat64: ncclDataType_t = 8;
/// `ncclBfloat16`.
pub const ncclBfloat16: ncclDataType_t = 9;
/// `ncclFloat8e4m3`.
pub const ncclFloat8e4m3: ncclDataType_t = 10;
/// `ncclFloat8e5m2`.
pub const ncclFloat8e5m2: ncclDataType_t = 11;

/// `NCCL_SPLIT_NOCOLOR`.
pub const NCCL_SPLIT_NOCOLOR: c_int = -1;
/// `NCCL_CONFIG_UNDEF_INT`.
pub const NCCL_CONFIG_UNDEF_INT: c_int = i32::MIN;
/// The `magic` of an `ncclConfig_t`.
pub const NCCL_CONFIG_MAGIC: c_uint = 0xcafe_beef;

/// `NCCL_VERSION(major, minor, patch)` (the encoding since 2.9).
pub const fn nccl_version(major: c_int, minor: c_int, patch: c_int) -> c_int {
    major * 10000 + minor * 100 + patch
}

/// The oldest NCCL this crate accepts (2.19: `ncclCommSplit`, `ncclAvg`,
/// bf16, and the non-blocking `ncclConfig_t` with `splitShare`).
pub const MIN_VERSION: c_int = nccl_version(2, 19, 0);
/// The oldest NCCL with the fp8 types (2.24).
pub const FP8_VERSION: c_int = nccl_version(2, 24, 0);

/// `ncclConfig_t`, the prefix of it that NCCL 2.19 defines. NCCL reads a
/// configuration by its `version` field, so an older layout is accepted by
/// newer libraries; `version` is 2.19's for that reason.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclConfig_t {
    /// `sizeof(ncclConfig_t)`.
    pub size: usize,
    /// [`NCCL_CONFIG_MAGIC`].
    pub magic: c_uint,
    /// The NCCL version the layout is of.
    pub version: c_uint,
    /// 0: calls return `ncclInProgress` instead of blocking.
    pub blocking: c_int,
    /// Unset.
    pub cgaClusterSize: c_int,
    /// Unset.
    pub minCTAs: c_int,
    /// Unset.
    pub maxCTAs: c_int,
    /// Unset (null).
    pub netName: *const c_char,
    /// Unset.
    pub splitShare: c_int,
}

impl ncclConfig_t {
    /// `NCCL_CONFIG_INITIALIZER` for this layout, with `blocking` set.
    pub fn new(blocking: bool) -> ncclConfig_t {
        ncclConfig_t {
            size: std::mem::size_of::<ncclConfig_t>(),
            magic: NCCL_CONFIG_MAGIC,
            version: MIN_VERSION as c_uint,
            blocking: blocking as c_int,
            cgaClusterSize: NCCL_CONFIG_UNDEF_INT,
            minCTAs: NCCL_CONFIG_UNDEF_INT,
            maxCTAs: NCCL_CONFIG_UNDEF_INT,
            netName: std::ptr::null(),
            splitShare: NCCL_CONFIG_UNDEF_INT,
        }
    }
}

/// Why the library table could not be made (the result layer turns it
/// into an [`NcclError`](crate::NcclError)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// No candidate could be opened: each path tried and what `dlopen` said.
    NotFound {
        /// `path (dlerror)` for each candidate, in the order tried.
        tried: Vec<String>,
    },
    /// The library is older than [`MIN_VERSION`], or lacks a function.
    TooOld {
        /// The file opened.
        path: PathBuf,
        /// Its `ncclGetVersion` (0 if it has none).
        version: c_int,
        /// A function it lacks, if that is why.
        missing: Option<&'static str>,
    },
}

/// Declares the table of entry points, one field per function named
/// exactly like the exported symbol, in the order listed, and its resolver.
/// The table is aligned to a cache line: the first eight entry points
/// share one.
macro_rules! api_table {
    ($(#[$doc:meta])* $table:ident { $($name:ident($($arg:ty),*) -> $ret:ty;)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[repr(C, align(64))]
        pub struct $table {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
            /// The file the functions come from.
            pub path: PathBuf,
            /// `ncclGetVersion`'s answer.
            pub version: c_int,
        }

        impl $table {
            /// Resolves every entry point in the opened library `lib`.
            ///
            /// # Safety
            /// `lib` is a library whose symbols of these names have these
            /// C signatures.
            unsafe fn resolve(lib: Library, path: PathBuf, version: c_int) -> Result<Self, LoadError> {
                Ok($table {
                    $($name: {
                        let name = CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()).expect("NUL-terminated");
                        let p = lib.symbol(name);
                        if p.is_null() {
                            return Err(LoadError::TooOld { path, version, missing: Some(stringify!($name)) });
                        }
                        // SAFETY: the symbol has this C signature (caller).
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
                    },)*
                    path,
                    version,
                })
            }
        }
    };
}

api_table! {
    /// The NCCL entry points this crate calls. The group calls and the
    /// collectives come first, in the table's first cache line: a group of
    /// collectives reads that line alone.
    NcclApi {
        ncclGroupStart() -> ncclResult_t;
        ncclGroupEnd() -> ncclResult_t;
        ncclAllReduce(*const c_void, *mut c_void, usize, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclBroadcast(*const c_void, *mut c_void, usize, ncclDataType_t, c_int, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclReduce(*const c_void, *mut c_void, usize, ncclDataType_t, ncclRedOp_t, c_int, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclAllGather(*const c_void, *mut c_void, usize, ncclDataType_t, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclReduceScatter(*const c_void, *mut c_void, usize, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclSend(*const c_void, usize, ncclDataType_t, c_int, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclRecv(*mut c_void, usize, ncclDataType_t, c_int, ncclComm_t, cudaStream_t) -> ncclResult_t;
        ncclGetVersion(*mut c_int) -> ncclResult_t;
        ncclGetUniqueId(*mut ncclUniqueId) -> ncclResult_t;
        ncclGetErrorString(ncclResult_t) -> *const c_char;
        ncclGetLastError(ncclComm_t) -> *const c_char;
        ncclCommInitRankConfig(*mut ncclComm_t, c_int, ncclUniqueId, c_int, *mut ncclConfig_t) -> ncclResult_t;
        ncclCommInitAll(*mut ncclComm_t, c_int, *const c_int) -> ncclResult_t;
        ncclCommSplit(ncclComm_t, c_int, c_int, *mut ncclComm_t, *mut ncclConfig_t) -> ncclResult_t;
        ncclCommFinalize(ncclComm_t) -> ncclResult_t;
        ncclCommDestroy(ncclComm_t) -> ncclResult_t;
        ncclCommAbort(ncclComm_t) -> ncclResult_t;
        ncclCommGetAsyncError(ncclComm_t, *mut ncclResult_t) -> ncclResult_t;
        ncclCommCount(ncclComm_t, *mut c_int) -> ncclResult_t;
        ncclCommCuDevice(ncclComm_t, *mut c_int) -> ncclResult_t;
        ncclCommUserRank(ncclComm_t, *mut c_int) -> ncclResult_t;
    }
}

/// The soname NCCL 2 has.
const SONAME: &str = "libnccl.so.2";

/// The folders searched after the loader's own path.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(&home).join("lib"));
        dirs.push(PathBuf::from(home).join("lib64"));
    }
    for d in ["/usr/local/cuda/lib", "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"] {
        dirs.push(PathBuf::from(d));
    }
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
                    dirs.push(entry.path().join(sub).join("nvidia/nccl/lib"));
                }
            }
        }
    }
    dirs
}

/// The candidates: the override alone if `OXIDE_NCCL` is set, else the
/// bare soname (the loader's path), then every search folder's copy.
pub fn candidates() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os("OXIDE_NCCL").filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let mut paths = vec![PathBuf::from(SONAME)];
    paths.extend(search_dirs().into_iter().map(|d| d.join(SONAME)).filter(|p| p.is_file()));
    paths
}

/// `dlopen(path)`, or `dlerror()`'s text.
///
/// # Safety
/// Opening runs the library's initialisers: `path` must be NCCL.
unsafe fn open(path: &Path) -> Result<Library, String> {
    let c = CString::new(path.to_string_lossy().as_bytes()).map_err(|_| "the path has a NUL byte".to_string())?;
    // SAFETY: the library is the caller's to vouch for.
    unsafe { dl::open(&c, RTLD_NOW) }
}

impl NcclApi {
    /// Opens NCCL as the [module docs](self) describe, checks its version
    /// and resolves every entry point.
    ///
    /// Like `LD_LIBRARY_PATH`, `OXIDE_NCCL` is trusted to name NCCL.
    pub fn load() -> Result<NcclApi, LoadError> {
        // SAFETY: the candidates are NCCL's soname in the loader's path and
        // in the toolkit's and NVIDIA's wheels' folders, or what the user
        // named as NCCL.
        unsafe { Self::load_from(&candidates()) }
    }

    /// Tries `paths` in order (file paths, or bare names for the loader's
    /// search path) and resolves the first that opens.
    ///
    /// # Safety
    /// Opening a library runs its initialisers, and its symbols are taken
    /// to have NCCL's signatures: every path that opens must be NCCL.
    pub unsafe fn load_from(paths: &[PathBuf]) -> Result<NcclApi, LoadError> {
        let mut tried = Vec::new();
        for path in paths {
            // SAFETY: an NCCL library (caller).
            let lib = match unsafe { open(path) } {
                Ok(lib) => lib,
                Err(why) => {
                    tried.push(format!("{} ({why})", path.display()));
                    continue;
                }
            };
            let get_version = lib.symbol(c"ncclGetVersion");
            let mut version = 0;
            if !get_version.is_null() {
                // SAFETY: `ncclGetVersion(int*)` per nccl.h; out-pointer to
                // a local.
                unsafe {
                    let f = std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_int) -> ncclResult_t>(get_version);
                    f(&mut version);
                }
            }
            if version < MIN_VERSION {
                return Err(LoadError::TooOld { path: path.clone(), version, missing: None });
            }
            // SAFETY: a live handle of NCCL, never closed; the table's
            // signatures are nccl.h's, and every one exists since MIN_VERSION.
            return unsafe { NcclApi::resolve(lib, path.clone(), version) };
        }
        Err(LoadError::NotFound { tried })
    }
}

/// `major.minor.patch` of an `NCCL_VERSION` code.
pub fn version_string(code: c_int) -> String {
    format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100)
}
