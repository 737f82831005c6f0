// CUB's device-wide reduce, scan and select: the references of the
// prims_reduce, prims_scan and prims_select rows (cuda-prims' Rust
// primitives). Host-side calls into CUB (its kernels are instantiated in
// this file), compiled like runtime.cu into oxide-bench's static library,
// with -arch of the GPU so CUB's kernels are tuned and built for it.
//
// Every function takes the driver stream oxide-bench made (a cudaStream_t is
// a CUstream; the runtime works in the primary context cuda-core retains)
// and CUB's usual temporary storage: called with temp == nullptr it only
// writes the bytes needed into *temp_bytes (CUB's size query), so the
// caller allocates once and times the calls with the storage in hand.
// Element types: 0 = unsigned, 1 = float, 2 = unsigned long long.
// Each returns the cudaError_t of the CUB call (0 on success).

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>

namespace {

// The select rows' predicate, as a CUB user writes it: x < threshold.
template <typename T> struct LessThan {
  T threshold;
  __host__ __device__ bool operator()(const T &x) const { return x < threshold; }
};

template <typename T>
int reduce(int op, const void *in, void *out, size_t n, void *temp, size_t *temp_bytes, cudaStream_t s) {
  const T *i = static_cast<const T *>(in);
  T *o = static_cast<T *>(out);
  switch (op) {
  case 0: return cub::DeviceReduce::Sum(temp, *temp_bytes, i, o, n, s);
  case 1: return cub::DeviceReduce::Min(temp, *temp_bytes, i, o, n, s);
  default: return cub::DeviceReduce::Max(temp, *temp_bytes, i, o, n, s);
  }
}

template <typename T>
int scan(int inclusive, const void *in, void *out, size_t n, void *temp, size_t *temp_bytes, cudaStream_t s) {
  const T *i = static_cast<const T *>(in);
  T *o = static_cast<T *>(out);
  if (inclusive) return cub::DeviceScan::InclusiveSum(temp, *temp_bytes, i, o, n, s);
  return cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, i, o, n, s);
}

template <typename T>
int select_if(const void *in, void *out, void *count, size_t n, double threshold, void *temp, size_t *temp_bytes,
              cudaStream_t s) {
  LessThan<T> pred{static_cast<T>(threshold)};
  return cub::DeviceSelect::If(temp, *temp_bytes, static_cast<const T *>(in), static_cast<T *>(out),
                               static_cast<unsigned long long *>(count), static_cast<long long>(n), pred, s);
}

} // namespace

// cub::DeviceReduce::{Sum, Min, Max} (op 0, 1, 2) of n elements into out[0].
extern "C" int oxide_cub_reduce(int type, int op, const void *in, void *out, size_t n, void *temp,
                                size_t *temp_bytes, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (type) {
  case 0: return reduce<unsigned>(op, in, out, n, temp, temp_bytes, s);
  case 1: return reduce<float>(op, in, out, n, temp, temp_bytes, s);
  default: return reduce<unsigned long long>(op, in, out, n, temp, temp_bytes, s);
  }
}

// cub::DeviceScan::InclusiveSum (inclusive != 0) or ExclusiveSum.
extern "C" int oxide_cub_scan(int type, int inclusive, const void *in, void *out, size_t n, void *temp,
                              size_t *temp_bytes, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (type) {
  case 0: return scan<unsigned>(inclusive, in, out, n, temp, temp_bytes, s);
  case 1: return scan<float>(inclusive, in, out, n, temp, temp_bytes, s);
  default: return scan<unsigned long long>(inclusive, in, out, n, temp, temp_bytes, s);
  }
}

// cub::DeviceSelect::If with x < threshold: the selected elements in order
// into out, their number into *count (a device unsigned long long).
extern "C" int oxide_cub_select_if(int type, const void *in, void *out, void *count, size_t n, double threshold,
                                   void *temp, size_t *temp_bytes, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (type) {
  case 0: return select_if<unsigned>(in, out, count, n, threshold, temp, temp_bytes, s);
  case 1: return select_if<float>(in, out, count, n, threshold, temp, temp_bytes, s);
  default: return select_if<unsigned long long>(in, out, count, n, threshold, temp, temp_bytes, s);
  }
}
