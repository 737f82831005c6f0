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
/// `CUgraph`: an opaque graph handle (a DAG of operations).
pub type CUgraph = *mut c_void;
/// `CUgraphNode`: an opaque handle of one node of a graph.
pub type CUgraphNode = *mut c_void;
/// `CUgraphExec`: an opaque handle of an instantiated (executable) graph.
pub type CUgraphExec = *mut c_void;
/// `CUstreamCaptureStatus` (`CU_STREAM_CAPTURE_STATUS_*`).
pub type CUstreamCaptureStatus = c_int;
/// `CUstreamCaptureMode` (`CU_STREAM_CAPTURE_MODE_*`).
pub type CUstreamCaptureMode = c_int;
/// `CUgraphNodeType` (`CU_GRAPH_NODE_TYPE_*`).
pub type CUgraphNodeType = c_int;
/// `CUgraphConditionalHandle`: the condition of a conditional node, which
/// device code sets with `cudaGraphSetConditional`.
pub type CUgraphConditionalHandle = u64;
/// `CUhostFn`: a host function run by a stream (`cuLaunchHostFunc`).
pub type CUhostFn = unsafe extern "C" fn(*mut c_void);
/// `CUoccupancyB2DSize`: block size → dynamic shared memory bytes.
pub type CUoccupancyB2DSize = Option<unsafe extern "C" fn(c_int) -> usize>;

/// `CUmem_advise` (`CU_MEM_ADVISE_*`).
#[allow(non_camel_case_types)]
pub type CUmem_advise = c_int;
/// `CUmemLocationType` (`CU_MEM_LOCATION_TYPE_*`).
pub type CUmemLocationType = c_int;

/// `CUmemLocation`: where memory is (or should be): a device by ordinal,
/// or the host (`id` ignored). Passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CUmemLocation {
    /// `CU_MEM_LOCATION_TYPE_DEVICE` or `CU_MEM_LOCATION_TYPE_HOST`, …
    pub type_: CUmemLocationType,
    /// The device ordinal for a device location.
    pub id: c_int,
}

/// `CUmemPoolProps`: the properties of a memory pool, here those of a
/// graph allocation node's memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemPoolProps {
    /// `CU_MEM_ALLOCATION_TYPE_PINNED`.
    pub alloc_type: c_int,
    /// `CU_MEM_HANDLE_TYPE_NONE` (0) for a graph allocation.
    pub handle_types: c_int,
    /// Where the memory resides.
    pub location: CUmemLocation,
    /// Windows only; null.
    pub win32_security_attributes: *mut c_void,
    /// 0: the system's default.
    pub max_size: usize,
    /// Intended usage bits; 0.
    pub usage: u16,
    /// Must be zero.
    pub reserved: [u8; 54],
}

/// `CU_MEM_ALLOCATION_TYPE_PINNED`: device memory that is not paged out.
pub const CU_MEM_ALLOCATION_TYPE_PINNED: c_int = 1;

/// `CUDA_MEM_ALLOC_NODE_PARAMS`: a graph allocation node's request, and the
/// address the driver answers with (`dptr`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEM_ALLOC_NODE_PARAMS {
    /// The memory's properties (pinned, on a device, no handle types).
    pub pool_props: CUmemPoolProps,
    /// Peer access descriptors (`CUmemAccessDesc`); null for none.
    pub access_descs: *const c_void,
    /// How many `access_descs`.
    pub access_desc_count: usize,
    /// Bytes to allocate.
    pub bytesize: usize,
    /// Out: the allocation's address, fixed for the graph's launches.
    pub dptr: CUdeviceptr,
}

impl CUDA_MEM_ALLOC_NODE_PARAMS {
    /// A request for `bytesize` bytes of pinned memory on device `device`.
    pub fn on_device(device: c_int, bytesize: usize) -> Self {
        CUDA_MEM_ALLOC_NODE_PARAMS {
            pool_props: CUmemPoolProps {
                alloc_type: CU_MEM_ALLOCATION_TYPE_PINNED,
                handle_types: 0,
                location: CUmemLocation { type_: CU_MEM_LOCATION_TYPE_DEVICE, id: device },
                win32_security_attributes: std::ptr::null_mut(),
                max_size: 0,
                usage: 0,
                reserved: [0; 54],
            },
            access_descs: std::ptr::null(),
            access_desc_count: 0,
            bytesize,
            dptr: 0,
        }
    }
}

const _: () = assert!(std::mem::size_of::<CUmemPoolProps>() == 88);
const _: () = assert!(std::mem::size_of::<CUDA_MEM_ALLOC_NODE_PARAMS>() == 120);
const _: () = assert!(std::mem::offset_of!(CUDA_MEM_ALLOC_NODE_PARAMS, dptr) == 112);

/// `CU_MEM_LOCATION_TYPE_DEVICE`: `id` is a device ordinal.
pub const CU_MEM_LOCATION_TYPE_DEVICE: CUmemLocationType = 1;
/// `CU_MEM_LOCATION_TYPE_HOST`: the host (`id` ignored).
pub const CU_MEM_LOCATION_TYPE_HOST: CUmemLocationType = 2;
/// `CU_MEM_ATTACH_GLOBAL`: managed memory any stream of any device may use.
pub const CU_MEM_ATTACH_GLOBAL: c_uint = 1;
/// `CU_MEM_ADVISE_SET_READ_MOSTLY`.
pub const CU_MEM_ADVISE_SET_READ_MOSTLY: CUmem_advise = 1;
/// `CU_MEM_ADVISE_UNSET_READ_MOSTLY`.
pub const CU_MEM_ADVISE_UNSET_READ_MOSTLY: CUmem_advise = 2;
/// `CU_MEM_ADVISE_SET_PREFERRED_LOCATION`.
pub const CU_MEM_ADVISE_SET_PREFERRED_LOCATION: CUmem_advise = 3;
/// `CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION`.
pub const CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: CUmem_advise = 4;
/// `CU_MEM_ADVISE_SET_ACCESSED_BY`.
pub const CU_MEM_ADVISE_SET_ACCESSED_BY: CUmem_advise = 5;
/// `CU_MEM_ADVISE_UNSET_ACCESSED_BY`.
pub const CU_MEM_ADVISE_UNSET_ACCESSED_BY: CUmem_advise = 6;
/// `CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY`: an int, 1 if the range is read-mostly.
pub const CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: c_int = 1;
/// `CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION`: an int, the preferred
/// device ordinal, `CU_DEVICE_CPU` (-1) for the host, -2 for none.
pub const CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: c_int = 2;
/// `CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY`: the device can allocate managed memory.
pub const CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: c_int = 83;
/// `CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`: the host may touch
/// managed memory while kernels run (else only when the device is idle).
pub const CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: c_int = 89;

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
/// `CUDA_ERROR_PEER_ACCESS_UNSUPPORTED`: the two devices cannot reach
/// each other's memory.
pub const CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: CUresult = 217;
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
/// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED`.
pub const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;
/// `CUDA_ERROR_PEER_ACCESS_NOT_ENABLED`.
pub const CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: CUresult = 705;
/// `CUDA_ERROR_CONTEXT_IS_DESTROYED`.
pub const CUDA_ERROR_CONTEXT_IS_DESTROYED: CUresult = 709;
/// `CUDA_ERROR_LAUNCH_FAILED`: a kernel faulted (a trap, a device panic).
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
/// `CUDA_ERROR_NOT_SUPPORTED`.
pub const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`: the operation is not allowed
/// while the stream captures (a synchronisation); it invalidates the capture.
pub const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CUresult = 900;
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: an earlier error broke the capture.
pub const CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: CUresult = 901;
/// `CUDA_ERROR_STREAM_CAPTURE_UNMATCHED`: the capture was not begun on this stream.
pub const CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: CUresult = 903;
/// `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`: a stream forked from the capture
/// was not joined back into the stream that began it.
pub const CUDA_ERROR_STREAM_CAPTURE_UNJOINED: CUresult = 904;
/// `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`: a dependency would cross the
/// capture's boundary (waiting on an event recorded outside it).
pub const CUDA_ERROR_STREAM_CAPTURE_ISOLATION: CUresult = 905;
/// `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE`: `cuGraphExecUpdate` refused the
/// new graph (the result info says why).
pub const CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: CUresult = 910;
/// `CUDA_ERROR_INVALID_CLUSTER_SIZE`: a cluster shape the kernel or the
/// device does not take.
pub const CUDA_ERROR_INVALID_CLUSTER_SIZE: CUresult = 912;

/// `CU_STREAM_CAPTURE_STATUS_NONE`.
pub const CU_STREAM_CAPTURE_STATUS_NONE: CUstreamCaptureStatus = 0;
/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`.
pub const CU_STREAM_CAPTURE_STATUS_ACTIVE: CUstreamCaptureStatus = 1;
/// `CU_STREAM_CAPTURE_STATUS_INVALIDATED`.
pub const CU_STREAM_CAPTURE_STATUS_INVALIDATED: CUstreamCaptureStatus = 2;
/// `CU_STREAM_CAPTURE_MODE_GLOBAL`: unsafe calls from any thread invalidate the capture.
pub const CU_STREAM_CAPTURE_MODE_GLOBAL: CUstreamCaptureMode = 0;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`.
pub const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: CUstreamCaptureMode = 1;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
pub const CU_STREAM_CAPTURE_MODE_RELAXED: CUstreamCaptureMode = 2;
/// `CU_GRAPH_NODE_TYPE_KERNEL`.
pub const CU_GRAPH_NODE_TYPE_KERNEL: CUgraphNodeType = 0;
/// `CU_GRAPH_NODE_TYPE_MEMCPY`.
pub const CU_GRAPH_NODE_TYPE_MEMCPY: CUgraphNodeType = 1;
/// `CU_GRAPH_NODE_TYPE_MEMSET`.
pub const CU_GRAPH_NODE_TYPE_MEMSET: CUgraphNodeType = 2;
/// `CU_GRAPH_NODE_TYPE_HOST`.
pub const CU_GRAPH_NODE_TYPE_HOST: CUgraphNodeType = 3;
/// `CU_GRAPH_NODE_TYPE_GRAPH` (a child graph).
pub const CU_GRAPH_NODE_TYPE_GRAPH: CUgraphNodeType = 4;
/// `CU_GRAPH_NODE_TYPE_EMPTY`.
pub const CU_GRAPH_NODE_TYPE_EMPTY: CUgraphNodeType = 5;
/// `CU_GRAPH_NODE_TYPE_WAIT_EVENT`.
pub const CU_GRAPH_NODE_TYPE_WAIT_EVENT: CUgraphNodeType = 6;
/// `CU_GRAPH_NODE_TYPE_EVENT_RECORD`.
pub const CU_GRAPH_NODE_TYPE_EVENT_RECORD: CUgraphNodeType = 7;
/// `CU_GRAPH_NODE_TYPE_MEM_ALLOC` (what `cuMemAllocAsync` records in a capture).
pub const CU_GRAPH_NODE_TYPE_MEM_ALLOC: CUgraphNodeType = 10;
/// `CU_GRAPH_NODE_TYPE_MEM_FREE` (what `cuMemFreeAsync` records in a capture).
pub const CU_GRAPH_NODE_TYPE_MEM_FREE: CUgraphNodeType = 11;
/// `CU_GRAPH_NODE_TYPE_CONDITIONAL` (an IF, WHILE or SWITCH node).
pub const CU_GRAPH_NODE_TYPE_CONDITIONAL: CUgraphNodeType = 13;
/// `CU_GRAPH_COND_TYPE_IF`: the body runs once if the condition is nonzero.
pub const CU_GRAPH_COND_TYPE_IF: c_uint = 0;
/// `CU_GRAPH_COND_TYPE_WHILE`: the body runs while the condition is nonzero
/// (tested before each run).
pub const CU_GRAPH_COND_TYPE_WHILE: c_uint = 1;
/// `CU_GRAPH_COND_TYPE_SWITCH`: body `n` runs once where `n` is the
/// condition's value; none when it is not below the number of bodies.
pub const CU_GRAPH_COND_TYPE_SWITCH: c_uint = 2;
/// `CU_GRAPH_COND_ASSIGN_DEFAULT`: the handle's default value is assigned at
/// the start of every launch of the graph.
pub const CU_GRAPH_COND_ASSIGN_DEFAULT: c_uint = 1;
/// `CU_MEMORYTYPE_HOST` (`CUDA_MEMCPY3D`'s memory types).
pub const CU_MEMORYTYPE_HOST: c_uint = 1;
/// `CU_MEMORYTYPE_DEVICE`.
pub const CU_MEMORYTYPE_DEVICE: c_uint = 2;
/// `CU_GRAPH_EXEC_UPDATE_SUCCESS`.
pub const CU_GRAPH_EXEC_UPDATE_SUCCESS: c_int = 0;
/// `CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED`.
pub const CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: c_int = 2;
/// `CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED`.
pub const CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: c_int = 3;
/// `CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED`.
pub const CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: c_int = 5;
/// `CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE`.
pub const CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: c_int = 7;

/// `CUresult`s after which a context is unusable: a kernel faulted (illegal
/// address, timeout, assert, hardware stack error, illegal instruction,
/// misaligned address, invalid address space, invalid PC, launch failure).
/// Every later call on that context returns the same error.
pub const STICKY_RESULTS: [CUresult; 9] = [700, 702, 710, 714, 715, 716, 717, 718, 719];

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
pub const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
/// `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE` (bytes).
pub const CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: c_int = 38;
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
/// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: the kernel's static shared memory.
pub const CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
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

/// `CUDA_KERNEL_NODE_PARAMS` (`_v2`, what `cuGraphAddKernelNode_v2` takes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    /// The kernel.
    pub func: CUfunction,
    /// Blocks in the grid.
    pub grid_dim: [c_uint; 3],
    /// Threads per block.
    pub block_dim: [c_uint; 3],
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: c_uint,
    /// One pointer per kernel parameter (the driver copies the bytes).
    pub kernel_params: *mut *mut c_void,
    /// `extra` (oxide passes null).
    pub extra: *mut *mut c_void,
    /// `kern` (a `CUkernel`; oxide passes null and sets `func`).
    pub kern: *mut c_void,
    /// `ctx` (ignored when `func` is set).
    pub ctx: CUcontext,
}

/// `CUDA_MEMCPY3D`: oxide fills the 1-D case (host or device on each side,
/// `width_in_bytes`, height and depth 1).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY3D {
    /// `srcXInBytes`, `srcY`, `srcZ`, `srcLOD`.
    pub src_xyz_lod: [usize; 4],
    /// `srcMemoryType` (`CU_MEMORYTYPE_*`).
    pub src_memory_type: c_uint,
    /// `srcHost`.
    pub src_host: *const c_void,
    /// `srcDevice`.
    pub src_device: CUdeviceptr,
    /// `srcArray`, `reserved0`.
    pub src_array_reserved: [*mut c_void; 2],
    /// `srcPitch`, `srcHeight`.
    pub src_pitch_height: [usize; 2],
    /// `dstXInBytes`, `dstY`, `dstZ`, `dstLOD`.
    pub dst_xyz_lod: [usize; 4],
    /// `dstMemoryType`.
    pub dst_memory_type: c_uint,
    /// `dstHost`.
    pub dst_host: *mut c_void,
    /// `dstDevice`.
    pub dst_device: CUdeviceptr,
    /// `dstArray`, `reserved1`.
    pub dst_array_reserved: [*mut c_void; 2],
    /// `dstPitch`, `dstHeight`.
    pub dst_pitch_height: [usize; 2],
    /// `WidthInBytes`.
    pub width_in_bytes: usize,
    /// `Height`.
    pub height: usize,
    /// `Depth`.
    pub depth: usize,
}

impl CUDA_MEMCPY3D {
    /// A copy of `bytes` bytes between two linear ranges (`src_host` or
    /// `src_device` as `src_memory_type` says; likewise the destination).
    pub fn linear(src_memory_type: c_uint, src: u64, dst_memory_type: c_uint, dst: u64, bytes: usize) -> Self {
        let null = std::ptr::null_mut();
        CUDA_MEMCPY3D {
            src_xyz_lod: [0; 4],
            src_memory_type,
            src_host: if src_memory_type == CU_MEMORYTYPE_HOST { src as *const c_void } else { null },
            src_device: if src_memory_type == CU_MEMORYTYPE_DEVICE { src } else { 0 },
            src_array_reserved: [null; 2],
            src_pitch_height: [0; 2],
            dst_xyz_lod: [0; 4],
            dst_memory_type,
            dst_host: if dst_memory_type == CU_MEMORYTYPE_HOST { dst as *mut c_void } else { null },
            dst_device: if dst_memory_type == CU_MEMORYTYPE_DEVICE { dst } else { 0 },
            dst_array_reserved: [null; 2],
            dst_pitch_height: [0; 2],
            width_in_bytes: bytes,
            height: 1,
            depth: 1,
        }
    }
}

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMSET_NODE_PARAMS {
    /// The destination.
    pub dst: CUdeviceptr,
    /// Bytes between rows (unused when `height` is 1).
    pub pitch: usize,
    /// The value, in its low `element_size` bytes.
    pub value: c_uint,
    /// 1, 2 or 4.
    pub element_size: c_uint,
    /// Elements per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// `CUDA_HOST_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_HOST_NODE_PARAMS {
    /// The function.
    pub func: CUhostFn,
    /// Its argument.
    pub user_data: *mut c_void,
}

/// `CUgraphExecUpdateResultInfo`: why `cuGraphExecUpdate` refused a graph.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUgraphExecUpdateResultInfo {
    /// `CUgraphExecUpdateResult` (`CU_GRAPH_EXEC_UPDATE_*`).
    pub result: c_int,
    /// The node (of the new graph) the failure is about, or null.
    pub error_node: CUgraphNode,
    /// The other end of a changed edge, or null.
    pub error_from_node: CUgraphNode,
}

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_CONDITIONAL_NODE_PARAMS {
    /// The condition (`cuGraphConditionalHandleCreate`, of the same graph).
    pub handle: CUgraphConditionalHandle,
    /// `CU_GRAPH_COND_TYPE_*`.
    pub type_: c_uint,
    /// How many body graphs: 1 for WHILE, 1 or 2 (else branch) for IF.
    pub size: c_uint,
    /// Set by the driver: a driver-owned array of the `size` body graphs,
    /// valid as long as the node (the caller passes null and reads it back).
    pub ph_graph_out: *mut CUgraph,
    /// The context of the handle and of every body node.
    pub ctx: CUcontext,
}

/// `CUgraphNodeParams`, what `cuGraphAddNode` takes, with its union spelled
/// as its conditional member followed by the rest of the union's bytes
/// (oxide adds only conditional nodes this way; the unused bytes must be 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUgraphNodeParams {
    /// `CU_GRAPH_NODE_TYPE_*`.
    pub type_: CUgraphNodeType,
    /// `reserved0`, zero.
    pub reserved0: [c_int; 3],
    /// The union's `conditional` member.
    pub conditional: CUDA_CONDITIONAL_NODE_PARAMS,
    /// The rest of the union (`reserved1[29]`, 232 bytes), zero.
    pub union_rest: [i64; 25],
    /// `reserved2`, zero.
    pub reserved2: i64,
}

impl CUgraphNodeParams {
    /// The parameters of a conditional node: `size` bodies of kind `type_`
    /// (`CU_GRAPH_COND_TYPE_*`) on `handle`, in `ctx`.
    pub fn conditional(handle: CUgraphConditionalHandle, type_: c_uint, size: c_uint, ctx: CUcontext) -> Self {
        CUgraphNodeParams {
            type_: CU_GRAPH_NODE_TYPE_CONDITIONAL,
            reserved0: [0; 3],
            conditional: CUDA_CONDITIONAL_NODE_PARAMS { handle, type_, size, ph_graph_out: std::ptr::null_mut(), ctx },
            union_rest: [0; 25],
            reserved2: 0,
        }
    }
}

const _: () = assert!(std::mem::size_of::<CUDA_CONDITIONAL_NODE_PARAMS>() == 32);
const _: () = assert!(std::mem::size_of::<CUgraphNodeParams>() == 256);
const _: () = assert!(std::mem::offset_of!(CUgraphNodeParams, conditional) == 16);
const _: () = assert!(std::mem::offset_of!(CUgraphNodeParams, reserved2) == 248);
const _: () = assert!(std::mem::offset_of!(CUDA_CONDITIONAL_NODE_PARAMS, ph_graph_out) == 16);
const _: () = assert!(std::mem::size_of::<CUDA_KERNEL_NODE_PARAMS>() == 72);
const _: () = assert!(std::mem::size_of::<CUDA_MEMCPY3D>() == 200);
const _: () = assert!(std::mem::size_of::<CUDA_MEMSET_NODE_PARAMS>() == 40);
const _: () = assert!(std::mem::size_of::<CUlaunchAttribute>() == 72);
const _: () = assert!(std::mem::size_of::<CUlaunchConfig>() == 56);
