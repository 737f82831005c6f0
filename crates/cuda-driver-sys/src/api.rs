//! Loading `libcuda.so.1` with `dlopen` and the table of driver entry points.
//!
//! The library is opened once per process ([`OnceLock`]); every function
//! pointer is resolved at that moment, so a missing symbol is reported once,
//! by name, instead of failing later in the middle of a program.

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void, CStr};
use std::sync::OnceLock;

use crate::error::{DriverError, ErrorKind};

pub(crate) type CUresult = c_int;
pub(crate) type CUdevice = c_int;
pub(crate) type CUdeviceptr = u64;
pub(crate) type CUcontext = *mut c_void;
pub(crate) type CUmodule = *mut c_void;
pub(crate) type CUfunction = *mut c_void;
pub(crate) type CUstream = *mut c_void;
pub(crate) type CUevent = *mut c_void;
/// `CUhostFn`: a host function run by a stream (`cuLaunchHostFunc`).
pub(crate) type CUhostFn = unsafe extern "C" fn(*mut c_void);
/// `CUoccupancyB2DSize`: block size → dynamic shared memory bytes.
pub(crate) type CUoccupancyB2DSize = Option<unsafe extern "C" fn(c_int) -> usize>;

// Enum values from cuda.h.
pub(crate) const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
pub(crate) const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub(crate) const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub(crate) const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
pub(crate) const CU_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;
pub(crate) const CU_JIT_INFO_LOG_BUFFER: c_int = 3;
pub(crate) const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
pub(crate) const CU_JIT_GENERATE_DEBUG_INFO: c_int = 11;
pub(crate) const CU_JIT_GENERATE_LINE_INFO: c_int = 13;
pub(crate) const CU_STREAM_DEFAULT: c_uint = 0;
pub(crate) const CU_STREAM_NON_BLOCKING: c_uint = 1;
pub(crate) const CU_EVENT_DEFAULT: c_uint = 0;
pub(crate) const CU_EVENT_DISABLE_TIMING: c_uint = 2;
pub(crate) const CUDA_ERROR_NOT_READY: c_int = 600;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}
const RTLD_NOW: c_int = 2;

/// Declares [`Driver`], one field per entry point named exactly like the
/// exported symbol, and the loader that fills it in.
macro_rules! driver_api {
    ($($name:ident($($arg:ty),*);)*) => {
        /// The resolved entry points of the loaded driver.
        #[allow(non_snake_case)]
        pub(crate) struct Driver {
            $(pub(crate) $name: unsafe extern "C" fn($($arg),*) -> CUresult,)*
        }

        impl Driver {
            /// Resolves every entry point through `lookup` (`dlsym` on the
            /// driver library, or the emulator's table). A symbol `lookup`
            /// does not know is an error, or with `emulated`, an entry that
            /// fails with `CUDA_ERROR_NOT_SUPPORTED` naming itself.
            ///
            /// # Safety
            /// Every non-null pointer `lookup` returns for a name must be a
            /// function with the C signature declared here for that name.
            unsafe fn resolve(lookup: impl Fn(&std::ffi::CStr) -> *mut c_void, emulated: bool) -> Result<Driver, DriverError> {
                Ok(Driver {
                    $($name: {
                        let sym = concat!(stringify!($name), "\0");
                        let name = std::ffi::CStr::from_bytes_with_nul(sym.as_bytes()).expect("NUL-terminated");
                        let p = lookup(name);
                        if p.is_null() {
                            if !emulated {
                                return Err(missing_symbol(stringify!($name)));
                            }
                            #[allow(non_snake_case)]
                            unsafe extern "C" fn $name($(_: $arg),*) -> CUresult {
                                crate::emulator::unsupported(stringify!($name))
                            }
                            $name
                        } else {
                            // SAFETY: the symbol is the driver function of this
                            // name, whose C signature is the one declared here.
                            unsafe {
                                std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> CUresult>(p)
                            }
                        }
                    },)*
                })
            }
        }
    };
}

driver_api! {
    cuGetErrorName(CUresult, *mut *const c_char);
    cuGetErrorString(CUresult, *mut *const c_char);
    cuInit(c_uint);
    cuDriverGetVersion(*mut c_int);
    cuDeviceGet(*mut CUdevice, c_int);
    cuDeviceGetCount(*mut c_int);
    cuDeviceGetName(*mut c_char, c_int, CUdevice);
    cuDeviceGetAttribute(*mut c_int, c_int, CUdevice);
    cuDeviceTotalMem_v2(*mut usize, CUdevice);
    cuDevicePrimaryCtxRetain(*mut CUcontext, CUdevice);
    cuDevicePrimaryCtxRelease_v2(CUdevice);
    cuCtxGetCurrent(*mut CUcontext);
    cuCtxSetCurrent(CUcontext);
    cuCtxSynchronize();
    cuStreamCreate(*mut CUstream, c_uint);
    cuStreamDestroy_v2(CUstream);
    cuStreamSynchronize(CUstream);
    cuStreamQuery(CUstream);
    cuStreamWaitEvent(CUstream, CUevent, c_uint);
    cuLaunchHostFunc(CUstream, CUhostFn, *mut c_void);
    cuEventCreate(*mut CUevent, c_uint);
    cuEventDestroy_v2(CUevent);
    cuEventRecord(CUevent, CUstream);
    cuEventQuery(CUevent);
    cuEventSynchronize(CUevent);
    cuEventElapsedTime(*mut f32, CUevent, CUevent);
    cuMemGetInfo_v2(*mut usize, *mut usize);
    cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, usize, CUstream);
    cuMemcpyPeerAsync(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream);
    cuMemsetD16Async(CUdeviceptr, u16, usize, CUstream);
    cuMemsetD32Async(CUdeviceptr, c_uint, usize, CUstream);
    cuMemAlloc_v2(*mut CUdeviceptr, usize);
    cuMemFree_v2(CUdeviceptr);
    cuMemcpyHtoDAsync_v2(CUdeviceptr, *const c_void, usize, CUstream);
    cuMemcpyDtoHAsync_v2(*mut c_void, CUdeviceptr, usize, CUstream);
    cuMemsetD8Async(CUdeviceptr, c_uchar, usize, CUstream);
    cuMemcpyHtoD_v2(CUdeviceptr, *const c_void, usize);
    cuMemHostAlloc(*mut *mut c_void, usize, c_uint);
    cuMemHostGetDevicePointer_v2(*mut CUdeviceptr, *mut c_void, c_uint);
    cuMemFreeHost(*mut c_void);
    cuModuleGetGlobal_v2(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
    cuModuleLoadDataEx(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    cuModuleUnload(CUmodule);
    cuModuleGetFunction(*mut CUfunction, CUmodule, *const c_char);
    cuFuncGetAttribute(*mut c_int, c_int, CUfunction);
    cuFuncSetAttribute(CUfunction, c_int, c_int);
    cuTensorMapEncodeTiled(*mut c_void, c_uint, c_uint, *mut c_void, *const u64, *const u64, *const c_uint,
                           *const c_uint, c_uint, c_uint, c_uint, c_uint);
    cuOccupancyMaxActiveBlocksPerMultiprocessor(*mut c_int, CUfunction, c_int, usize);
    cuOccupancyMaxPotentialBlockSize(*mut c_int, *mut c_int, CUfunction, CUoccupancyB2DSize, usize, c_int);
    cuLaunchKernel(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream,
                   *mut *mut c_void, *mut *mut c_void);
    // The config is a `cluster::CUlaunchConfig`.
    cuLaunchKernelEx(*const c_void, CUfunction, *mut *mut c_void, *mut *mut c_void);
}

/// Calls a driver entry point and turns its `CUresult` into a `Result`
/// whose error names the symbol: `cu!(d, cuMemFree_v2(ptr))`. Must be used
/// inside an `unsafe` block (it calls a foreign function).
macro_rules! cu {
    ($d:expr, $f:ident($($a:expr),* $(,)?)) => {
        $crate::error::check(($d.$f)($($a),*), stringify!($f))
    };
}
pub(crate) use cu;

static DRIVER: OnceLock<Result<Driver, DriverError>> = OnceLock::new();
static INIT: OnceLock<Result<(), DriverError>> = OnceLock::new();

/// The driver's function table, loading the library on first use.
pub(crate) fn driver() -> Result<&'static Driver, DriverError> {
    DRIVER.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The driver, loaded and `cuInit`-ed (once per process).
pub(crate) fn initialized() -> Result<&'static Driver, DriverError> {
    let d = driver()?;
    INIT.get_or_init(|| {
        // SAFETY: cuInit takes a flags word that must be 0.
        unsafe { cu!(d, cuInit(0)) }.map_err(|e| match e.code() {
            100 => e.with_message(
                "no CUDA GPU found: the NVIDIA driver is loaded but reports no device. \
                 `cargo oxide doctor` checks the setup.",
            ),
            34 => e.with_detail(
                "the libcuda.so.1 found is the CUDA toolkit's stub library; install the NVIDIA \
                 driver or take the stubs directory out of LD_LIBRARY_PATH",
            ),
            _ => e,
        })
    })
    .clone()?;
    Ok(d)
}

/// The driver if it has already been loaded successfully (never loads it).
pub(crate) fn loaded() -> Option<&'static Driver> {
    DRIVER.get().and_then(|r| r.as_ref().ok())
}

fn load() -> Result<Driver, DriverError> {
    if crate::emulator::is_active() {
        crate::emulator::install_hooks();
        // SAFETY: the emulator's symbols have the signatures declared above.
        return unsafe { Driver::resolve(crate::emulator::symbol, true) };
    }
    let mut first_error = None;
    for name in [c"libcuda.so.1", c"libcuda.so"] {
        // SAFETY: `name` is NUL-terminated; RTLD_NOW is a valid flag.
        let lib = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
        if !lib.is_null() {
            // SAFETY: `lib` is a live handle to the NVIDIA driver library; it
            // is never closed, so the resolved pointers stay valid forever.
            // SAFETY: `lib` is live and `name` NUL-terminated for each lookup.
            return unsafe { Driver::resolve(|name| dlsym(lib, name.as_ptr()), false) };
        }
        first_error.get_or_insert_with(last_dl_error);
    }
    let why = first_error.unwrap_or_default();
    Err(DriverError::new(
        ErrorKind::DriverNotFound,
        format!(
            "no CUDA driver found: libcuda.so.1 could not be loaded ({why}). oxide programs need an \
             NVIDIA driver to run kernels; `cargo oxide doctor` checks the setup."
        ),
        "",
    ))
}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string that stays
    // valid until the next dl* call on this thread; we copy it at once.
    unsafe {
        let msg = dlerror();
        if msg.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        }
    }
}

fn missing_symbol(name: &str) -> DriverError {
    DriverError::new(
        ErrorKind::MissingSymbol,
        format!(
            "the CUDA driver (libcuda.so.1) has no function `{name}`: the installed NVIDIA driver \
             is too old for oxide; update it (`cargo oxide doctor` checks the setup)."
        ),
        "dlsym",
    )
}

/// The version of the installed CUDA driver as `(major, minor)`, e.g. `(13, 0)`.
///
/// Needs no GPU, only the driver library. Fails with
/// [`ErrorKind::DriverNotFound`] where no driver is installed.
pub fn driver_version() -> Result<(u32, u32), DriverError> {
    let d = driver()?;
    let mut v: c_int = 0;
    // SAFETY: writes one int to `v`.
    unsafe { cu!(d, cuDriverGetVersion(&mut v))? };
    let v = v.max(0) as u32;
    Ok((v / 1000, (v % 1000) / 10))
}
