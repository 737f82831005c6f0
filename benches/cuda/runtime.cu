// Host-side references from the CUDA C++ runtime (cudart, linked
// statically), for the benchmarks of oxide's host API. Each takes the
// driver stream oxide-bench made: a cudaStream_t is a CUstream, and the
// runtime works in the device's primary context, the one cuda-core retains,
// so both sides use the same context, stream and memory pool.

#include <cuda_runtime.h>
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
