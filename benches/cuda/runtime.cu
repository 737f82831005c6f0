// Host-side references from the CUDA C++ runtime (cudart, linked
// statically), for the benchmarks of oxide's host API. Each takes the
// driver stream oxide-bench made: a cudaStream_t is a CUstream, and the
// runtime works in the device's primary context, the one cuda-core retains,
// so both sides use the same context, stream and memory pool.

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <time.h>

static double now_seconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// `pairs` times cudaMallocAsync(bytes) then cudaFreeAsync on `stream`,
// then a stream synchronisation; the wall time of all of it in *seconds.
// Returns the first cudaError_t that is not cudaSuccess.
extern "C" int oxide_ref_malloc_free_async(void *stream, size_t bytes, int pairs, double *seconds) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return e;
  double start = now_seconds();
  for (int i = 0; i < pairs; ++i) {
    void *p = nullptr;
    if ((e = cudaMallocAsync(&p, bytes, s)) != cudaSuccess) return e;
    if ((e = cudaFreeAsync(p, s)) != cudaSuccess) return e;
  }
  if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return e;
  *seconds = now_seconds() - start;
  return cudaSuccess;
}

// The graph benchmark's small kernel, as a CUDA C++ programmer writes it:
// data[i] += 1 (oxide's `bump`).
__global__ void oxide_ref_bump(unsigned *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

// A graph of `kernels` dependent launches of oxide_ref_bump on `data` (`n`
// elements, blocks of `block` threads), captured on `stream` and
// instantiated; then `launches` cudaGraphLaunch back to back and a stream
// synchronisation, timed (wall seconds in *seconds). Capture and
// instantiation are not timed. Returns the first cudaError_t that is not
// cudaSuccess.
extern "C" int oxide_ref_graph_launches(void *stream, unsigned *data, int n, int block, int kernels, int launches,
                                        double *seconds) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return e;
  cudaGraph_t graph = nullptr;
  if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)) != cudaSuccess) return e;
  int blocks = (n + block - 1) / block;
  for (int k = 0; k < kernels; ++k) oxide_ref_bump<<<blocks, block, 0, s>>>(data, n);
  if ((e = cudaStreamEndCapture(s, &graph)) != cudaSuccess) return e;
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) return e;
  double start = now_seconds();
  for (int i = 0; i < launches && e == cudaSuccess; ++i) e = cudaGraphLaunch(exec, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  *seconds = now_seconds() - start;
  cudaGraphExecDestroy(exec);
  return e;
}

// The all-reduce benchmark's reference: NCCL called directly, as a CUDA C++
// program does. NCCL is opened with dlopen (as oxide's cuda-nccl does), so
// that oxide-bench runs where NCCL is missing and only this row says so.
// A program keeps its communicators for its whole run, and so does the
// reference: oxide_ref_nccl_open makes them once (`ndev` ranks, rank r on
// `devices[r]`, ncclCommInitAll), oxide_ref_nccl_all_reduce times calls on
// them, oxide_ref_nccl_close destroys them. (Opening them afresh for every
// timed round, as the reference once did, compared NCCL's first calls on a
// new communicator with cuda-nccl's calls on a long-lived one.)
struct OxideRefNccl {
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclCommDestroy) destroy;
  int ndev;
  int devices[64];
  ncclComm_t comms[64];
};

// Makes the communicators; *out receives the handle for the two calls
// below. Returns 0, or a message in `why` (at most `why_len` bytes) and
// nonzero.
extern "C" int oxide_ref_nccl_open(int ndev, const int *devices, OxideRefNccl **out, char *why, size_t why_len) {
  *out = nullptr;
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, why_len, "dlopen(libnccl.so.2): %s", dlerror());
    return 1;
  }
  auto init_all = reinterpret_cast<decltype(&ncclCommInitAll)>(dlsym(lib, "ncclCommInitAll"));
  OxideRefNccl ref{};
  ref.all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(dlsym(lib, "ncclAllReduce"));
  ref.group_start = reinterpret_cast<decltype(&ncclGroupStart)>(dlsym(lib, "ncclGroupStart"));
  ref.group_end = reinterpret_cast<decltype(&ncclGroupEnd)>(dlsym(lib, "ncclGroupEnd"));
  ref.destroy = reinterpret_cast<decltype(&ncclCommDestroy)>(dlsym(lib, "ncclCommDestroy"));
  if (!init_all || !ref.all_reduce || !ref.group_start || !ref.group_end || !ref.destroy) {
    snprintf(why, why_len, "libnccl.so.2 lacks a collective's symbol");
    return 1;
  }
  const int max_dev = sizeof(ref.devices) / sizeof(ref.devices[0]);
  if (ndev < 1 || ndev > max_dev) {
    snprintf(why, why_len, "%d ranks (1..%d)", ndev, max_dev);
    return 1;
  }
  ref.ndev = ndev;
  for (int d = 0; d < ndev; ++d) ref.devices[d] = devices[d];
  ncclResult_t r = init_all(ref.comms, ndev, devices);
  if (r != ncclSuccess) {
    snprintf(why, why_len, "ncclCommInitAll: error %d", (int)r);
    return 1;
  }
  *out = new OxideRefNccl(ref);
  return 0;
}

// On `ref`'s communicators, rank r summing the f32 `send[r]` into `recv[r]`
// (`count` elements) on `streams[r]` (driver streams of the devices'
// primary contexts): `warmup` unmeasured group calls, then `iters` timed
// ones and a synchronisation of every stream: the wall time in *seconds
// (and in *submit_seconds, until the last call returned: the host's
// share). Returns 0, or a message in `why` and nonzero.
extern "C" int oxide_ref_nccl_all_reduce(OxideRefNccl *ref, void *const *send, void *const *recv, size_t count,
                                         void *const *streams, int warmup, int iters, double *seconds,
                                         double *submit_seconds, char *why, size_t why_len) {
  int status = 0;
  double start = 0;
  for (int i = 0; i < warmup + iters && status == 0; ++i) {
    if (i == warmup) {
      for (int d = 0; d < ref->ndev && status == 0; ++d)
        if (cudaSetDevice(ref->devices[d]) != cudaSuccess ||
            cudaStreamSynchronize(static_cast<cudaStream_t>(streams[d])) != cudaSuccess)
          status = 2;
      start = now_seconds();
    }
    ref->group_start();
    for (int d = 0; d < ref->ndev; ++d)
      if (ref->all_reduce(send[d], recv[d], count, ncclFloat32, ncclSum, ref->comms[d],
                          static_cast<cudaStream_t>(streams[d])) != ncclSuccess)
        status = 3;
    if (ref->group_end() != ncclSuccess) status = 3;
  }
  *submit_seconds = now_seconds() - start;
  for (int d = 0; d < ref->ndev && status == 0; ++d)
    if (cudaSetDevice(ref->devices[d]) != cudaSuccess ||
        cudaStreamSynchronize(static_cast<cudaStream_t>(streams[d])) != cudaSuccess)
      status = 2;
  *seconds = now_seconds() - start;
  if (status) snprintf(why, why_len, status == 2 ? "a CUDA call failed" : "ncclAllReduce or ncclGroupEnd failed");
  return status;
}

// Destroys the communicators of oxide_ref_nccl_open (null: nothing).
extern "C" void oxide_ref_nccl_close(OxideRefNccl *ref) {
  if (!ref) return;
  for (int d = 0; d < ref->ndev; ++d) ref->destroy(ref->comms[d]);
  delete ref;
}
