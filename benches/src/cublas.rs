//! cuBLAS, loaded with `dlopen` at run time: the reference of the GEMMs.
//!
//! The library is `$OXIDE_CUBLAS` (a path to `libcublas.so.*`), else the
//! first `libcublas.so.13` / `.12` found in the CUDA toolkit's lib64, the
//! `nvidia-cublas` Python package (`site-packages/nvidia/cublas/lib`), or
//! the loader's search path. `libcublasLt` from the same folder is loaded
//! first (with RTLD_GLOBAL) so that cuBLAS finds it.

use crate::reference::last_dl_error;
use cuda_core::CudaStream;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

type Handle = *mut c_void;
type Status = c_int;

const OP_N: c_int = 0;
const OP_T: c_int = 1;
const CUDA_R_16BF: c_int = 14;
const COMPUTE_32F: c_int = 68;
const GEMM_DEFAULT: c_int = -1;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;
const RTLD_GLOBAL: c_int = 0x100;

type CreateFn = unsafe extern "C" fn(*mut Handle) -> Status;
type DestroyFn = unsafe extern "C" fn(Handle) -> Status;
type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> Status;
#[rustfmt::skip]
type SgemmFn = unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, c_int, *const f32, u64, c_int,
                                    u64, c_int, *const f32, u64, c_int) -> Status;
#[rustfmt::skip]
type GemmExFn = unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, c_int, *const c_void, u64, c_int, c_int,
                                     u64, c_int, c_int, *const c_void, u64, c_int, c_int, c_int, c_int) -> Status;

/// A cuBLAS handle bound to one stream.
pub struct Cublas {
    handle: Handle,
    destroy: DestroyFn,
    sgemm: SgemmFn,
    gemm_ex: GemmExFn,
    /// The library loaded, for the table.
    pub path: PathBuf,
}

/// The candidate paths of libcublas, in the order tried.
fn candidates() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(p) = std::env::var_os("OXIDE_CUBLAS").filter(|p| !p.is_empty()) {
        paths.push(PathBuf::from(p));
    }
    let names = ["libcublas.so.13", "libcublas.so.12"];
    let mut dirs: Vec<PathBuf> = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
        .iter()
        .map(PathBuf::from)
        .collect();
    for root in ["/usr/local/lib", "/usr/lib", "/opt/conda/lib"] {
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("python3") {
                    for sub in ["site-packages", "dist-packages"] {
                        dirs.push(entry.path().join(sub).join("nvidia/cublas/lib"));
                        dirs.push(entry.path().join(sub).join("nvidia/cu13/lib"));
                    }
                }
            }
        }
    }
    for dir in &dirs {
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

/// Opens `path` with dlopen; its libcublasLt sibling first.
fn open(path: &Path) -> Option<*mut c_void> {
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let lt = dir.join(name.to_string_lossy().replace("libcublas", "libcublasLt"));
        if lt.is_file() {
            let c = CString::new(lt.to_string_lossy().as_bytes()).ok()?;
            // SAFETY: NUL-terminated path; the handle is never closed.
            unsafe { dlopen(c.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
        }
    }
    let c = CString::new(path.to_string_lossy().as_bytes()).ok()?;
    // SAFETY: as above.
    let lib = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
    (!lib.is_null()).then_some(lib)
}

/// One symbol of `lib`, as a function pointer of type `F`.
///
/// # Safety
/// `F` must be the C signature of the symbol `name`.
unsafe fn symbol<F: Copy>(lib: *mut c_void, name: &str) -> Result<F, String> {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: live handle, NUL-terminated name.
    let p = unsafe { dlsym(lib, c.as_ptr()) };
    if p.is_null() {
        return Err(format!("cuBLAS has no `{name}`"));
    }
    // SAFETY: F is a function pointer type of the symbol's signature (caller).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

fn check(status: Status, what: &str) -> Result<(), String> {
    if status == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with cublasStatus {status}"))
    }
}

impl Cublas {
    /// Loads cuBLAS and creates a handle that runs on `stream` (the
    /// stream's context must be current on this thread).
    pub fn new(stream: &CudaStream) -> Result<Cublas, String> {
        let mut tried = Vec::new();
        for path in candidates() {
            let Some(lib) = open(&path) else {
                tried.push(format!("{} ({})", path.display(), last_dl_error()));
                continue;
            };
            // SAFETY: the types are the C signatures from cublas_api.h.
            let (create, destroy, set_stream, sgemm, gemm_ex) = unsafe {
                (
                    symbol::<CreateFn>(lib, "cublasCreate_v2")?,
                    symbol::<DestroyFn>(lib, "cublasDestroy_v2")?,
                    symbol::<SetStreamFn>(lib, "cublasSetStream_v2")?,
                    symbol::<SgemmFn>(lib, "cublasSgemm_v2")?,
                    symbol::<GemmExFn>(lib, "cublasGemmEx")?,
                )
            };
            let mut handle: Handle = std::ptr::null_mut();
            // SAFETY: out-pointer to a local.
            check(unsafe { create(&mut handle) }, "cublasCreate")?;
            // SAFETY: live handle and stream.
            check(unsafe { set_stream(handle, stream.raw()) }, "cublasSetStream")?;
            return Ok(Cublas { handle, destroy, sgemm, gemm_ex, path });
        }
        Err(format!(
            "cuBLAS not found (set OXIDE_CUBLAS to libcublas.so.13); tried: {}",
            tried.join("; ")
        ))
    }

    /// Row-major `c` (m×n) = `a` (m×k) · `b` (k×n) in f32 (cublasSgemm).
    /// cuBLAS is column-major, so it computes cᵀ = bᵀ·aᵀ.
    ///
    /// # Safety
    /// The device pointers hold at least m·k, k·n and m·n floats.
    pub unsafe fn sgemm(&self, m: usize, n: usize, k: usize, a: u64, b: u64, c: u64) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (m as c_int, n as c_int, k as c_int);
        // SAFETY: the pointers are valid (caller); alpha and beta live.
        check(unsafe { (self.sgemm)(self.handle, OP_N, OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n) }, "cublasSgemm")
    }

    /// Row-major `c` (m×n, bf16) = `a` (m×k, bf16) · `b`ᵀ where `b` is
    /// row-major n×k, with f32 accumulation (cublasGemmEx,
    /// CUBLAS_COMPUTE_32F): the layout of oxide's wgmma GEMM. Column-major,
    /// that is cᵀ = op(b)·aᵀ with op = transpose.
    ///
    /// # Safety
    /// The device pointers hold at least m·k, n·k and m·n bf16s.
    pub unsafe fn gemm_bf16_nt(&self, m: usize, n: usize, k: usize, a: u64, b: u64, c: u64) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (m as c_int, n as c_int, k as c_int);
        // SAFETY: the pointers are valid (caller); alpha and beta live.
        let status = unsafe {
            (self.gemm_ex)(
                self.handle,
                OP_T,
                OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b,
                CUDA_R_16BF,
                k,
                a,
                CUDA_R_16BF,
                k,
                (&beta as *const f32).cast(),
                c,
                CUDA_R_16BF,
                n,
                COMPUTE_32F,
                GEMM_DEFAULT,
            )
        };
        check(status, "cublasGemmEx")
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle is live and dropped once.
        unsafe { (self.destroy)(self.handle) };
    }
}
