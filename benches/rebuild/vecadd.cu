// The CUDA C++ equivalent of vecadd.rs, for the rebuild benchmark: the
// harness copies it into a scratch folder, flips the operands of the addition
// marked EDIT and times `nvcc -O3 -arch=sm_90 -o vecadd vecadd.cu`.

#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

/// C[i] = A[i] + B[i], one thread per element.
__global__ void vecadd(const float *A, const float *B, float *C, size_t N) {
  size_t I = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I < N)
    C[I] = A[I] + B[I]; // EDIT
}

static bool check(cudaError_t Status, const char *What) {
  if (Status == cudaSuccess)
    return true;
  std::fprintf(stderr, "error: %s: %s\n", What, cudaGetErrorString(Status));
  return false;
}

int main() {
  const size_t N = size_t(1) << 20;
  std::vector<float> A(N), B(N), C(N);
  for (size_t I = 0; I < N; ++I) {
    A[I] = static_cast<float>(I);
    B[I] = static_cast<float>(2 * I);
  }
  float *DA, *DB, *DC;
  size_t Bytes = N * sizeof(float);
  if (!check(cudaMalloc(&DA, Bytes), "cudaMalloc") ||
      !check(cudaMalloc(&DB, Bytes), "cudaMalloc") ||
      !check(cudaMalloc(&DC, Bytes), "cudaMalloc"))
    return 1;
  cudaMemcpy(DA, A.data(), Bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(DB, B.data(), Bytes, cudaMemcpyHostToDevice);
  vecadd<<<(N + 255) / 256, 256>>>(DA, DB, DC, N);
  if (!check(cudaMemcpy(C.data(), DC, Bytes, cudaMemcpyDeviceToHost),
             "vecadd"))
    return 1;
  for (size_t I = 0; I < N; ++I)
    if (C[I] != A[I] + B[I]) {
      std::fprintf(stderr, "element %zu: GPU %f vs CPU %f\n", I, C[I],
                   A[I] + B[I]);
      return 1;
    }
  cudaFree(DA);
  cudaFree(DB);
  cudaFree(DC);
  return 0;
}
