//! The driver's C types and the enum values oxide passes or checks, as
//! `cuda.h` declares them.

use std::ffi::{c_int, c_uint, c_void};

/// `CUresult`: 0 is `CUDA_SUCCESS`, anything else an error code.
pub type CUresult = c_int;
/// `CUdevice`: a device handle (its ordinal on every driver so far).
pub type CUdevice = c_int;
/// `CUdeviceptr`: an address in the device's (unified) address space.
pub type CUdeviceptr = u64;
/// `CUcontext`: an opaque context handle.
pub type CUcontext = *mut c_void;
/// `CUmodule`: an opaque handle of a loaded image.
pub type CUmodule = *mut c_void;
/// `CUfunction`: an opaque handle of one kernel of a module.
pub type CUfunction = *mut c_void;
/// `CUstream`: an opaque stream handle (null is the legacy default stream).
pub type CUstream = *mut c_void;
/// `CUevent`: an opaque event handle.
pub type CUevent = *mut c_void;
/// `CUmemoryPool`: an opaque memory pool handle (`cuMemAllocAsync` draws
/// from the device's current pool).
pub type CUmemoryPool = *mut c_void;
/// `CUhostFn`: a host function run by a stream (`cuLaunchHostFunc`).
pub type CUhostFn = unsafe extern "C" fn(*mut c_void);
/// `CUoccupancyB2DSize`: block size → dynamic shared memory bytes.
pub type CUoccupancyB2DSize = Option<unsafe extern "C" fn(c_int) -> usize>;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_INVALID_VALUE`.
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
/// `CUDA_ERROR_STUB_LIBRARY`: the libcuda found is the toolkit's stub.
pub const CUDA_ERROR_STUB_LIBRARY: CUresult = 34;
/// `CUDA_ERROR_NO_DEVICE`.
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
/// `CUDA_ERROR_INVALID_DEVICE`: no device of that ordinal.
pub const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
/// `CUDA_ERROR_INVALID_CONTEXT`.
pub const CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
/// `CUDA_ERROR_INVALID_PTX`.
pub const CUDA_ERROR_INVALID_PTX: CUresult = 218;
/// `CUDA_ERROR_INVALID_HANDLE`.
pub const CUDA_ERROR_INVALID_HANDLE: CUresult = 400;
/// `CUDA_ERROR_NOT_FOUND`: no symbol of that name.
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
/// `CUDA_ERROR_NOT_READY`: queued work has not finished (not a failure).
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
/// `CUDA_ERROR_ILLEGAL_ADDRESS`: a kernel accessed memory outside every allocation.
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CUresult = 700;
/// `CUDA_ERROR_CONTEXT_IS_DESTROYED`.
pub const CUDA_ERROR_CONTEXT_IS_DESTROYED: CUresult = 709;
/// `CUDA_ERROR_LAUNCH_FAILED`: a kernel faulted (a trap, a device panic).
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
/// `CUDA_ERROR_NOT_SUPPORTED`.
pub const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;

/// `CUresult`s after which a context is unusable: a kernel faulted (illegal
/// address, timeout, assert, hardware stack error, illegal instruction,
/// misaligned address, invalid address space, invalid PC, launch failure).
/// Every later call on that context returns the same error.
pub const STICKY_RESULTS: [CUresult; 9] = [700, 702, 710, 714, 715, 716, 717, 718, 719];

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
pub const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
/// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`: `cuMemAllocAsync` and the
/// `cuMemPool*` functions work on the device.
pub const CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: c_int = 115;
/// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` (u64): bytes a pool keeps reserved
/// across synchronisations instead of returning them to the OS.
pub const CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: c_int = 4;
/// `CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT` (u64): bytes the pool holds from the OS.
pub const CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: c_int = 5;
/// `CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH` (u64): the high-water mark of the
/// reserved bytes (setting it to 0 resets it).
pub const CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: c_int = 6;
/// `CU_MEMPOOL_ATTR_USED_MEM_CURRENT` (u64): bytes of live allocations.
pub const CU_MEMPOOL_ATTR_USED_MEM_CURRENT: c_int = 7;
/// `CU_MEMPOOL_ATTR_USED_MEM_HIGH` (u64): the high-water mark of the used
/// bytes (setting it to 0 resets it).
pub const CU_MEMPOOL_ATTR_USED_MEM_HIGH: c_int = 8;
/// `CU_LIMIT_STACK_SIZE`: the per-thread stack in bytes (`cuCtxGetLimit`,
/// `cuCtxSetLimit`).
pub const CU_LIMIT_STACK_SIZE: c_int = 0;
/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
pub const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
/// `CU_FUNC_ATTRIBUTE_NUM_REGS`.
pub const CU_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;
/// `CU_JIT_INFO_LOG_BUFFER`.
pub const CU_JIT_INFO_LOG_BUFFER: c_int = 3;
/// `CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES`.
pub const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;
/// `CU_JIT_ERROR_LOG_BUFFER`.
pub const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
pub const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
/// `CU_JIT_GENERATE_DEBUG_INFO`.
pub const CU_JIT_GENERATE_DEBUG_INFO: c_int = 11;
/// `CU_JIT_GENERATE_LINE_INFO`.
pub const CU_JIT_GENERATE_LINE_INFO: c_int = 13;
/// `CU_STREAM_DEFAULT`.
pub const CU_STREAM_DEFAULT: c_uint = 0;
/// `CU_STREAM_NON_BLOCKING`.
pub const CU_STREAM_NON_BLOCKING: c_uint = 1;
/// `CU_EVENT_DEFAULT`.
pub const CU_EVENT_DEFAULT: c_uint = 0;
/// `CU_EVENT_DISABLE_TIMING`.
pub const CU_EVENT_DISABLE_TIMING: c_uint = 2;

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`: a [`CUlaunchAttribute`] whose
/// value is the cluster shape.
pub const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: c_uint = 4;
/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`: a [`CUlaunchAttribute`] whose value
/// is an int at the start of the union (1: a cooperative launch, as
/// `cuLaunchCooperativeKernel` makes).
pub const CU_LAUNCH_ATTRIBUTE_COOPERATIVE: c_uint = 2;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
pub const CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: c_int = 14;

/// `CUlaunchAttributeValue`: a 64-byte union, of which oxide uses one
/// member, `clusterDim`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue {
    /// `clusterDim.{x, y, z}`: blocks per cluster.
    pub cluster_dim: [c_uint; 3],
    /// The rest of the union.
    pub pad: [u8; 52],
}

/// `CUlaunchAttribute`: the attribute's id, padding to 8 bytes, its value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttribute {
    /// `CUlaunchAttributeID` (e.g. [`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`]).
    pub id: c_uint,
    /// Padding.
    pub pad: [u8; 4],
    /// The value, read as the id says.
    pub value: CUlaunchAttributeValue,
}

/// `CUlaunchConfig`: what `cuLaunchKernelEx` takes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchConfig {
    /// Blocks in the grid.
    pub grid_dim: [c_uint; 3],
    /// Threads per block.
    pub block_dim: [c_uint; 3],
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: c_uint,
    /// The stream.
    pub stream: CUstream,
    /// `num_attrs` attributes.
    pub attrs: *mut CUlaunchAttribute,
    /// How many attributes `attrs` holds.
    pub num_attrs: c_uint,
}

const _: () = assert!(std::mem::size_of::<CUlaunchAttribute>() == 72);
const _: () = assert!(std::mem::size_of::<CUlaunchConfig>() == 56);
