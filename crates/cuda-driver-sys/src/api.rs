//! [`DriverApi`], the table of driver entry points, and loading it from
//! `libcuda.so.1` with `dlopen`.
//!
//! Every function pointer is resolved when the table is made, so a missing
//! symbol is reported once, by name, instead of failing later in the middle
//! of a program. The table is plain data: whoever makes one decides where it
//! comes from (the NVIDIA driver, or an implementation of the same C
//! functions such as oxide's CPU emulator).

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void, CStr};
use std::fmt;

use crate::dl;
use crate::types::*;

/// What [`DriverApi::from_lookup`] does with an entry point its lookup does
/// not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// Fail with [`LoadError::MissingSymbol`] (a real driver must have them all).
    Fail,
    /// Fill the entry with a function that returns `CUDA_ERROR_NOT_SUPPORTED`
    /// (a partial implementation of the API).
    NotSupported,
}

/// Why a [`DriverApi`] could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// Neither `libcuda.so.1` nor `libcuda.so` could be opened; `reason` is
    /// what `dlopen` said.
    LibraryNotFound {
        /// `dlerror()`'s text for the first name tried.
        reason: String,
    },
    /// The library (or lookup) has no function of this name.
    MissingSymbol(&'static str),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::LibraryNotFound { reason } => write!(f, "libcuda.so.1 could not be loaded ({reason})"),
            LoadError::MissingSymbol(name) => write!(f, "the CUDA driver has no function `{name}`"),
        }
    }
}

impl std::error::Error for LoadError {}

/// Declares [`DriverApi`], one field per entry point named exactly like the
/// exported symbol, its resolver, and [`ENTRY_POINTS`].
macro_rules! driver_api {
    ($($name:ident($($arg:ty),*);)*) => {
        /// The resolved entry points of one driver implementation, each named
        /// exactly like the exported symbol and with its C signature.
        ///
        /// Calling an entry is `unsafe`: its arguments must satisfy the
        /// driver's contract for that function.
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        pub struct DriverApi {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) -> CUresult,
            )*
        }

        /// The names of the table's entry points, in declaration order.
        pub const ENTRY_POINTS: &[&str] = &[$(stringify!($name)),*];

        /// Entry points newer than the oldest driver oxide runs on (CUDA
        /// 12.3): a driver without them still loads, and these entries
        /// return `CUDA_ERROR_NOT_SUPPORTED`.
        pub const OPTIONAL_ENTRY_POINTS: &[&str] = &["cuStreamBeginCaptureToGraph", "cuStreamGetCaptureInfo_v3"];

        impl DriverApi {
            /// Resolves every entry point through `lookup` (`dlsym` on the
            /// driver library, or another implementation's table); a name
            /// `lookup` answers with null is handled as `missing` says.
            ///
            /// # Safety
            /// Every non-null pointer `lookup` returns for a name must be a
            /// function with the C signature declared here for that name.
            pub unsafe fn from_lookup(lookup: impl Fn(&CStr) -> *mut c_void, missing: Missing) -> Result<DriverApi, LoadError> {
                Ok(DriverApi {
                    $($name: {
                        let sym = concat!(stringify!($name), "\0");
                        let name = CStr::from_bytes_with_nul(sym.as_bytes()).expect("NUL-terminated");
                        let p = lookup(name);
                        if p.is_null() {
                            if missing == Missing::Fail && !OPTIONAL_ENTRY_POINTS.contains(&stringify!($name)) {
                                return Err(LoadError::MissingSymbol(stringify!($name)));
                            }
                            #[allow(non_snake_case)]
                            unsafe extern "C" fn $name($(_: $arg),*) -> CUresult {
                                CUDA_ERROR_NOT_SUPPORTED
                            }
                            $name
                        } else {
                            // SAFETY: the caller promises that the symbol is a
                            // function with the C signature declared here.
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
    cuCtxGetLimit(*mut usize, c_int);
    cuCtxSetLimit(c_int, usize);
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
    cuMemAllocAsync(*mut CUdeviceptr, usize, CUstream);
    cuMemFreeAsync(CUdeviceptr, CUstream);
    cuDeviceGetDefaultMemPool(*mut CUmemoryPool, CUdevice);
    // The value points at an int or a u64, by attribute (types.rs).
    cuMemPoolSetAttribute(CUmemoryPool, c_int, *mut c_void);
    cuMemPoolGetAttribute(CUmemoryPool, c_int, *mut c_void);
    cuMemPoolTrimTo(CUmemoryPool, usize);
    cuMemcpyHtoDAsync_v2(CUdeviceptr, *const c_void, usize, CUstream);
    cuMemcpyDtoHAsync_v2(*mut c_void, CUdeviceptr, usize, CUstream);
    cuMemsetD8Async(CUdeviceptr, c_uchar, usize, CUstream);
    cuMemcpyHtoD_v2(CUdeviceptr, *const c_void, usize);
    cuMemHostAlloc(*mut *mut c_void, usize, c_uint);
    cuMemHostGetDevicePointer_v2(*mut CUdeviceptr, *mut c_void, c_uint);
    cuMemFreeHost(*mut c_void);
    // Managed (unified) memory. The `_v2` forms take a `CUmemLocation` by
    // value (CUDA 12.2 and later; `cuda.h` maps the plain names to them).
    cuMemAllocManaged(*mut CUdeviceptr, usize, c_uint);
    cuMemPrefetchAsync_v2(CUdeviceptr, usize, CUmemLocation, c_uint, CUstream);
    cuMemAdvise_v2(CUdeviceptr, usize, CUmem_advise, CUmemLocation);
    // The data points at `usize` bytes the attribute fills (an int for the
    // attributes oxide asks).
    cuMemRangeGetAttribute(*mut c_void, usize, c_int, CUdeviceptr, usize);
    // Peer access between the contexts of two devices.
    cuDeviceCanAccessPeer(*mut c_int, CUdevice, CUdevice);
    cuCtxEnablePeerAccess(CUcontext, c_uint);
    cuCtxDisablePeerAccess(CUcontext);
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
    // The config is a `CUlaunchConfig` (types.rs); its stream is ignored.
    cuOccupancyMaxActiveClusters(*mut c_int, CUfunction, *const c_void);
    cuLaunchKernel(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream,
                   *mut *mut c_void, *mut *mut c_void);
    // The config is a `CUlaunchConfig` (types.rs).
    cuLaunchKernelEx(*const c_void, CUfunction, *mut *mut c_void, *mut *mut c_void);
    // CUDA Graphs. The edge data arguments are `CUgraphEdgeData` arrays;
    // oxide passes null (plain edges).
    cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode);
    cuStreamBeginCaptureToGraph(CUstream, CUgraph, *const CUgraphNode, *const c_void, usize, CUstreamCaptureMode);
    cuStreamEndCapture(CUstream, *mut CUgraph);
    cuStreamIsCapturing(CUstream, *mut CUstreamCaptureStatus);
    cuStreamGetCaptureInfo_v3(CUstream, *mut CUstreamCaptureStatus, *mut u64, *mut CUgraph, *mut *const CUgraphNode,
                              *mut *const c_void, *mut usize);
    cuGraphCreate(*mut CUgraph, c_uint);
    cuGraphAddKernelNode_v2(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_KERNEL_NODE_PARAMS);
    cuGraphKernelNodeGetParams_v2(CUgraphNode, *mut CUDA_KERNEL_NODE_PARAMS);
    cuGraphAddMemcpyNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_MEMCPY3D, CUcontext);
    cuGraphAddMemsetNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_MEMSET_NODE_PARAMS, CUcontext);
    cuGraphAddHostNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_HOST_NODE_PARAMS);
    cuGraphAddEmptyNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize);
    cuGraphAddChildGraphNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUgraph);
    // Graph memory nodes (CUDA 11.4).
    cuGraphAddMemAllocNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *mut CUDA_MEM_ALLOC_NODE_PARAMS);
    cuGraphAddMemFreeNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUdeviceptr);
    cuGraphAddEventRecordNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUevent);
    cuGraphAddEventWaitNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUevent);
    cuGraphGetNodes(CUgraph, *mut CUgraphNode, *mut usize);
    cuGraphNodeGetType(CUgraphNode, *mut CUgraphNodeType);
    cuGraphInstantiateWithFlags(*mut CUgraphExec, CUgraph, u64);
    cuGraphLaunch(CUgraphExec, CUstream);
    cuGraphExecKernelNodeSetParams_v2(CUgraphExec, CUgraphNode, *const CUDA_KERNEL_NODE_PARAMS);
    cuGraphExecUpdate_v2(CUgraphExec, CUgraph, *mut CUgraphExecUpdateResultInfo);
    cuGraphExecDestroy(CUgraphExec);
    cuGraphDestroy(CUgraph);
    // Conditional nodes (CUDA 12.3). `cuGraphAddNode` is the unversioned
    // symbol, without edge data (cuda.h's macro names `_v2`).
    cuGraphConditionalHandleCreate(*mut CUgraphConditionalHandle, CUgraph, CUcontext, c_uint, c_uint);
    cuGraphAddNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *mut CUgraphNodeParams);
}

impl DriverApi {
    /// Opens the NVIDIA driver library (`libcuda.so.1`, else `libcuda.so`)
    /// and resolves every entry point. The library is never closed, so the
    /// table stays valid for the rest of the process.
    pub fn load_libcuda() -> Result<DriverApi, LoadError> {
        let mut first_error = None;
        for name in [c"libcuda.so.1", c"libcuda.so"] {
            // SAFETY: opening the NVIDIA driver library runs only its own
            // initialisers.
            match unsafe { dl::open(name, dl::RTLD_NOW) } {
                // SAFETY: `lib` is a live handle to the NVIDIA driver
                // library, never closed, whose exported functions have the
                // signatures declared above; each `name` is NUL-terminated.
                Ok(lib) => return unsafe { DriverApi::from_lookup(|name| lib.symbol(name), Missing::Fail) },
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(LoadError::LibraryNotFound { reason: first_error.unwrap_or_default() })
    }

    /// Whether the NVIDIA driver loads and reports at least one GPU
    /// (`cuInit`, then `cuDeviceGetCount`, on the raw table): what a test
    /// asks before it chooses between a GPU and the emulator. No context
    /// is made, so a process's choice of cuda-core's backend stays open.
    pub fn gpu_present() -> bool {
        let Ok(api) = DriverApi::load_libcuda() else { return false };
        let mut count = 0;
        // SAFETY: cuInit takes flags 0; cuDeviceGetCount writes one int.
        unsafe { (api.cuInit)(0) == 0 && (api.cuDeviceGetCount)(&mut count) == 0 && count > 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_without_the_symbol_fails_by_name_or_fills_not_supported() {
        // SAFETY: the lookup returns only nulls.
        let err = unsafe { DriverApi::from_lookup(|_| std::ptr::null_mut(), Missing::Fail) }.err();
        assert_eq!(err, Some(LoadError::MissingSymbol("cuGetErrorName")));
        // SAFETY: as above.
        let api = unsafe { DriverApi::from_lookup(|_| std::ptr::null_mut(), Missing::NotSupported) }.unwrap();
        // SAFETY: the filled entry ignores its arguments.
        assert_eq!(unsafe { (api.cuCtxSynchronize)() }, CUDA_ERROR_NOT_SUPPORTED);
    }

    #[test]
    fn optional_entry_points_may_be_missing_from_a_real_driver() {
        // A driver with every symbol but the optional ones.
        unsafe extern "C" fn any() -> CUresult {
            0
        }
        let lookup = |name: &CStr| {
            if OPTIONAL_ENTRY_POINTS.contains(&name.to_str().unwrap()) {
                std::ptr::null_mut()
            } else {
                any as *mut c_void
            }
        };
        // SAFETY: the table is made, never called through `any`'s wrong signatures.
        let api = unsafe { DriverApi::from_lookup(lookup, Missing::Fail) }.unwrap();
        let mut status = 0;
        // SAFETY: the filled entry ignores its arguments.
        let r = unsafe { (api.cuStreamGetCaptureInfo_v3)(std::ptr::null_mut(), &mut status, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()) };
        assert_eq!(r, CUDA_ERROR_NOT_SUPPORTED);
    }

    #[test]
    fn a_lookup_is_asked_for_every_entry_point() {
        let asked = std::sync::Mutex::new(Vec::new());
        // SAFETY: the lookup returns only nulls.
        let _ = unsafe {
            DriverApi::from_lookup(
                |name| {
                    asked.lock().unwrap().push(name.to_str().unwrap().to_string());
                    std::ptr::null_mut()
                },
                Missing::NotSupported,
            )
        };
        assert_eq!(asked.into_inner().unwrap(), ENTRY_POINTS);
        assert!(OPTIONAL_ENTRY_POINTS.iter().all(|o| ENTRY_POINTS.contains(o)));
        assert!(ENTRY_POINTS.contains(&"cuDevicePrimaryCtxRelease_v2"));
    }
}
