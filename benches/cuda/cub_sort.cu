// CUB references of the prims_sort and prims_histogram rows: what a CUDA
// C++ programmer calls (cub::DeviceRadixSort, cub::DeviceHistogram), host
// code compiled by nvcc into oxide-bench's static library like runtime.cu.
//
// Each function follows CUB's two-phase call: with temp == nullptr it only
// writes the temporary storage it needs to *temp_bytes; else it runs on the
// driver stream `stream` (a cudaStream_t is a CUstream). Returns the
// cudaError_t of the call.

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

template <typename K>
static int sort_keys(void *temp, size_t *temp_bytes, const K *in, K *out, size_t n, int descending, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int items = static_cast<int>(n);
  return descending ? cub::DeviceRadixSort::SortKeysDescending(temp, *temp_bytes, in, out, items, 0, sizeof(K) * 8, s)
                    : cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, in, out, items, 0, sizeof(K) * 8, s);
}

extern "C" int oxide_cub_sort_keys_u32(void *temp, size_t *temp_bytes, const unsigned *in, unsigned *out, size_t n,
                                       int descending, void *stream) {
  return sort_keys(temp, temp_bytes, in, out, n, descending, stream);
}

extern "C" int oxide_cub_sort_keys_u64(void *temp, size_t *temp_bytes, const unsigned long long *in,
                                       unsigned long long *out, size_t n, int descending, void *stream) {
  return sort_keys(temp, temp_bytes, in, out, n, descending, stream);
}

extern "C" int oxide_cub_sort_keys_f32(void *temp, size_t *temp_bytes, const float *in, float *out, size_t n,
                                       int descending, void *stream) {
  return sort_keys(temp, temp_bytes, in, out, n, descending, stream);
}

extern "C" int oxide_cub_sort_pairs_u32(void *temp, size_t *temp_bytes, const unsigned *keys_in, unsigned *keys_out,
                                        const unsigned *values_in, unsigned *values_out, size_t n, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys_in, keys_out, values_in, values_out,
                                         static_cast<int>(n), 0, 32, s);
}

// `bins` even bins of u32 samples over [lower, upper).
extern "C" int oxide_cub_histogram_even_u32(void *temp, size_t *temp_bytes, const unsigned *samples, unsigned *hist,
                                            int bins, unsigned lower, unsigned upper, size_t n, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, samples, hist, bins + 1, lower, upper,
                                             static_cast<int>(n), s);
}

// `bins` even bins of f32 samples over [lower, upper).
extern "C" int oxide_cub_histogram_even_f32(void *temp, size_t *temp_bytes, const float *samples, unsigned *hist,
                                            int bins, float lower, float upper, size_t n, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, samples, hist, bins + 1, lower, upper,
                                             static_cast<int>(n), s);
}

// Bins between the `bins + 1` ascending `levels` (device memory), u32 samples.
extern "C" int oxide_cub_histogram_range_u32(void *temp, size_t *temp_bytes, const unsigned *samples, unsigned *hist,
                                             int bins, const unsigned *levels, size_t n, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return cub::DeviceHistogram::HistogramRange(temp, *temp_bytes, samples, hist, bins + 1, levels,
                                              static_cast<int>(n), s);
}
