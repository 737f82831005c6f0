// A stand-in for the NVIDIA driver (libcuda.so.1) that does no work: every
// entry point oxide's driver table resolves returns at once, with just
// enough state (the current context, handles, a bump allocator of device
// addresses that are never dereferenced) for cuda-core and cuda-host to run
// their GPU code paths. With it on LD_LIBRARY_PATH, the time of an
// allocation or a launch through oxide is oxide's own host work, which is
// what host-cost measures (the driver's share is measured on a GPU, by
// `cargo oxide bench alloc launch`).
//
// Built by run.sh: clang -O2 -shared -fPIC -o libcuda.so.1 stub_libcuda.c

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { SUCCESS = 0, NOT_FOUND = 500 };

// Every entry point that only has to succeed. Declared without a prototype
// (C17): callers pass the driver's arguments, which these ignore.
#define SUCCEED(name) CUresult name() { return SUCCESS; }

SUCCEED(cuInit)
SUCCEED(cuDevicePrimaryCtxRelease_v2)
SUCCEED(cuCtxSynchronize)
SUCCEED(cuStreamDestroy_v2)
SUCCEED(cuStreamSynchronize)
SUCCEED(cuStreamQuery)
SUCCEED(cuStreamWaitEvent)
SUCCEED(cuEventDestroy_v2)
SUCCEED(cuEventRecord)
SUCCEED(cuEventQuery)
SUCCEED(cuEventSynchronize)
SUCCEED(cuMemcpyDtoDAsync_v2)
SUCCEED(cuMemcpyPeerAsync)
SUCCEED(cuMemsetD8Async)
SUCCEED(cuMemsetD16Async)
SUCCEED(cuMemsetD32Async)
SUCCEED(cuMemFree_v2)
SUCCEED(cuMemFreeAsync)
SUCCEED(cuMemcpyHtoDAsync_v2)
SUCCEED(cuMemcpyDtoHAsync_v2)
SUCCEED(cuMemcpyHtoD_v2)
SUCCEED(cuMemPoolSetAttribute)
SUCCEED(cuMemPoolGetAttribute)
SUCCEED(cuMemPoolTrimTo)
SUCCEED(cuMemPrefetchAsync_v2)
SUCCEED(cuMemAdvise_v2)
SUCCEED(cuMemRangeGetAttribute)
SUCCEED(cuCtxEnablePeerAccess)
SUCCEED(cuCtxDisablePeerAccess)
SUCCEED(cuModuleUnload)
SUCCEED(cuFuncSetAttribute)
SUCCEED(cuTensorMapEncodeTiled)
SUCCEED(cuLaunchKernel)
SUCCEED(cuLaunchKernelEx)
SUCCEED(cuLaunchHostFunc)
SUCCEED(cuStreamBeginCapture_v2)
SUCCEED(cuStreamBeginCaptureToGraph)
SUCCEED(cuStreamEndCapture)
SUCCEED(cuStreamIsCapturing)
SUCCEED(cuStreamGetCaptureInfo_v3)
SUCCEED(cuGraphCreate)
SUCCEED(cuGraphAddKernelNode_v2)
SUCCEED(cuGraphKernelNodeGetParams_v2)
SUCCEED(cuGraphAddMemcpyNode)
SUCCEED(cuGraphAddMemsetNode)
SUCCEED(cuGraphAddHostNode)
SUCCEED(cuGraphAddEmptyNode)
SUCCEED(cuGraphAddChildGraphNode)
SUCCEED(cuGraphAddMemFreeNode)
SUCCEED(cuGraphAddEventRecordNode)
SUCCEED(cuGraphAddEventWaitNode)
SUCCEED(cuGraphConditionalHandleCreate)
SUCCEED(cuGraphAddNode)
SUCCEED(cuGraphGetNodes)
SUCCEED(cuGraphNodeGetType)
SUCCEED(cuGraphInstantiateWithFlags)
SUCCEED(cuGraphLaunch)
SUCCEED(cuGraphExecKernelNodeSetParams_v2)
SUCCEED(cuGraphExecUpdate_v2)
SUCCEED(cuGraphExecDestroy)
SUCCEED(cuGraphDestroy)
SUCCEED(cuOccupancyMaxActiveBlocksPerMultiprocessor)
SUCCEED(cuOccupancyMaxPotentialBlockSize)
SUCCEED(cuOccupancyMaxActiveClusters)
SUCCEED(cuEventElapsedTime)
SUCCEED(cuDeviceCanAccessPeer)

static const char *const NAME = "stub";

CUresult cuGetErrorName(CUresult code, const char **out) { (void)code; *out = NAME; return SUCCESS; }
CUresult cuGetErrorString(CUresult code, const char **out) { (void)code; *out = NAME; return SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return SUCCESS; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? SUCCESS : 101; }
CUresult cuDeviceGetName(char *buf, int len, int d) {
  (void)d;
  strncpy(buf, "oxide stub driver", (size_t)len);
  return SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) { (void)d; *bytes = (size_t)80 << 30; return SUCCESS; }

// The device attributes cuda-core asks for, as an sm_90 GPU answers them.
CUresult cuDeviceGetAttribute(int *v, int attribute, int d) {
  (void)d;
  switch (attribute) {
  case 1: *v = 1024; break;                 // max threads per block
  case 2: case 3: *v = 1024; break;         // max block x, y
  case 4: *v = 64; break;                   // max block z
  case 5: *v = 0x7fffffff; break;           // max grid x
  case 6: case 7: *v = 65535; break;        // max grid y, z
  case 8: *v = 48 << 10; break;             // shared memory per block
  case 10: *v = 32; break;                  // warp size
  case 16: *v = 132; break;                 // multiprocessors
  case 75: *v = 9; break;                   // compute capability major
  case 76: *v = 0; break;                   // minor
  case 97: *v = 227 << 10; break;           // shared memory per block, opt-in
  case 115: *v = 1; break;                  // memory pools
  default: *v = 1 << 16; break;
  }
  return SUCCESS;
}

// One context, current per thread.
static char context_object;
static _Thread_local void *current;

CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; *ctx = &context_object; return SUCCESS; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = current; return SUCCESS; }
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return SUCCESS; }

static size_t stack_size = 1024;
CUresult cuCtxGetLimit(size_t *value, int limit) { (void)limit; *value = stack_size; return SUCCESS; }
CUresult cuCtxSetLimit(int limit, size_t value) { (void)limit; stack_size = value; return SUCCESS; }

// Handles: distinct, never dereferenced by the caller.
static uintptr_t next_handle = 0x10000;
static void *handle(void) { return (void *)__atomic_add_fetch(&next_handle, 16, __ATOMIC_RELAXED); }

CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = handle(); return SUCCESS; }
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = handle(); return SUCCESS; }
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *options, void **values) {
  (void)image; (void)n; (void)options; (void)values;
  *m = handle();
  return SUCCESS;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; (void)name; *f = handle(); return SUCCESS; }
CUresult cuModuleGetGlobal_v2(uint64_t *p, size_t *size, void *m, const char *name) {
  (void)p; (void)size; (void)m; (void)name;
  return NOT_FOUND; // no module has a panic record to point anywhere
}
CUresult cuFuncGetAttribute(int *v, int attribute, void *f) {
  (void)f;
  *v = attribute == 0 ? 1024 : attribute == 8 ? 48 << 10 : 0; // max threads, dynamic shared memory
  return SUCCESS;
}

// Device memory: addresses from a bump counter, never backed (nothing reads
// them); the same address every time for a free-then-allocate loop would do
// too, but distinct ones catch a double free in a debugger.
static uint64_t next_address = 0x700000000000;
static uint64_t bump(size_t bytes) {
  return __atomic_fetch_add(&next_address, (bytes + 255) & ~(uint64_t)255, __ATOMIC_RELAXED);
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t bytes) { *p = bump(bytes); return SUCCESS; }
CUresult cuMemAllocAsync(uint64_t *p, size_t bytes, void *s) { (void)s; *p = bump(bytes); return SUCCESS; }
CUresult cuMemAllocManaged(uint64_t *p, size_t bytes, unsigned flags) { (void)flags; *p = bump(bytes); return SUCCESS; }
// A graph allocation node: CUDA_MEM_ALLOC_NODE_PARAMS's byte size is at
// offset 104 and the address it answers with at 112.
CUresult cuGraphAddMemAllocNode(void **node, void *g, const void *deps, size_t n, unsigned char *params) {
  (void)g; (void)deps; (void)n;
  size_t bytes; memcpy(&bytes, params + 104, sizeof bytes);
  uint64_t p = bump(bytes); memcpy(params + 112, &p, sizeof p);
  *node = handle();
  return SUCCESS;
}
CUresult cuDeviceGetDefaultMemPool(void **pool, int d) { (void)d; *pool = handle(); return SUCCESS; }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) { *free_bytes = *total = (size_t)80 << 30; return SUCCESS; }

// Pinned host memory is real host memory (cuda-core zeroes it).
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  *p = calloc(1, bytes);
  return *p ? SUCCESS : 2;
}
CUresult cuMemHostGetDevicePointer_v2(uint64_t *d, void *p, unsigned flags) { (void)flags; *d = (uint64_t)(uintptr_t)p; return SUCCESS; }
CUresult cuMemFreeHost(void *p) { free(p); return SUCCESS; }
