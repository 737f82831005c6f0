// kernels.cu - the CUDA C++ twins of oxide's benchmark kernels.
//
// Part of oxide's benchmark harness (benches/). Every kernel here is the same
// algorithm as the Rust kernel of the same name in src/kernels.rs: the same
// block shape, the same tiling and the same work per thread, so that the ratio
// the harness prints measures the compilers, not the algorithms. build.rs
// compiles this file with `nvcc -O3 -arch=sm_90 -cubin`; the harness loads the
// cubin through cuda-core and launches the kernels by their unmangled names.

#include <cstddef>
#include <cstdint>

namespace {

constexpr unsigned FullMask = 0xffffffffu;

/// Side of the square tiles of transpose, SGEMM and the bf16 GEMM.
constexpr int Tile = 32;
/// Rows of threads in a tiled block (32 x 8 threads).
constexpr int BlockRows = 8;
constexpr int RowsPerThread = Tile / BlockRows;
/// Threads per block of the reduction and of softmax.
constexpr int ReduceBlock = 256;
constexpr int SoftmaxBlock = 256;

/// The sum over a full warp, in every lane (a butterfly of shfl.xor).
__device__ __forceinline__ float warpSum(float V) {
  for (int Offset = 16; Offset > 0; Offset /= 2)
    V += __shfl_xor_sync(FullMask, V, Offset);
  return V;
}

/// The maximum over a full warp, in every lane.
__device__ __forceinline__ float warpMax(float V) {
  for (int Offset = 16; Offset > 0; Offset /= 2) {
    float Other = __shfl_xor_sync(FullMask, V, Offset);
    V = Other > V ? Other : V;
  }
  return V;
}

/// A bf16 bit pattern widened to the f32 it denotes.
__device__ __forceinline__ float bf16ToFloat(uint16_t Bits) {
  return __uint_as_float(static_cast<uint32_t>(Bits) << 16);
}

} // namespace

/// An empty kernel (launch overhead).
extern "C" __global__ void empty() {}

/// Spins one thread for `Ns` nanoseconds of the GPU's global timer. The
/// harness launches it in front of every timed run, so the run's launches
/// are already queued when the GPU reaches the start event: the events then
/// time the kernels, not how long the host took to submit them (that is the
/// launch benchmark's subject).
extern "C" __global__ void gate(unsigned long long Ns) {
  unsigned long long Start, Now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(Start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(Now));
  } while (Now - Start < Ns);
}

/// C[i] = A[i] + B[i], one thread per element.
extern "C" __global__ void vecadd(const float *A, const float *B, float *C,
                                  size_t N) {
  size_t I = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I < N)
    C[I] = A[I] + B[I];
}

/// Y[i] = Alpha * X[i] + Y[i], one thread per element.
extern "C" __global__ void saxpy(float Alpha, const float *X, float *Y,
                                 size_t N) {
  size_t I = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I < N)
    Y[I] = fmaf(Alpha, X[I], Y[I]);
}

/// Partial[blockIdx.x] = the sum of the block's grid-stride share of In.
/// Launched with ReduceBlock threads per block.
extern "C" __global__ void __launch_bounds__(ReduceBlock, 4)
    block_sum(const float *In, size_t N, float *Partial) {
  __shared__ float WarpSums[ReduceBlock / 32];
  size_t Tid = threadIdx.x;
  size_t Stride = static_cast<size_t>(gridDim.x) * ReduceBlock;
  float Acc = 0.0f;
  for (size_t I = blockIdx.x * ReduceBlock + Tid; I < N; I += Stride)
    Acc += In[I];
  float WarpTotal = warpSum(Acc);
  if (Tid % 32 == 0)
    WarpSums[Tid / 32] = WarpTotal;
  __syncthreads();
  if (Tid < 32) {
    float V = Tid < ReduceBlock / 32 ? WarpSums[Tid] : 0.0f;
    float Total = warpSum(V);
    if (Tid == 0)
      Partial[blockIdx.x] = Total;
  }
}

/// Out (Cols x Rows) = the transpose of In (Rows x Cols), through a 32 x 33
/// shared tile; 32 x 8 threads per block, four elements per thread.
extern "C" __global__ void transpose(const float *In, size_t Rows, size_t Cols,
                                     float *Out) {
  __shared__ float Buf[Tile * (Tile + 1)];
  size_t Tx = threadIdx.x, Ty = threadIdx.y;
  size_t TileRow = static_cast<size_t>(blockIdx.y) * Tile;
  size_t TileCol = static_cast<size_t>(blockIdx.x) * Tile;
  for (int I = 0; I < RowsPerThread; ++I) {
    size_t Row = TileRow + Ty + I * BlockRows, Col = TileCol + Tx;
    if (Row < Rows && Col < Cols)
      Buf[(Ty + I * BlockRows) * (Tile + 1) + Tx] = In[Row * Cols + Col];
  }
  __syncthreads();
  for (int I = 0; I < RowsPerThread; ++I) {
    size_t R = Ty + I * BlockRows;
    size_t OutRow = TileCol + R, OutCol = TileRow + Tx;
    if (OutRow < Cols && OutCol < Rows)
      Out[OutRow * Rows + OutCol] = Buf[Tx * (Tile + 1) + R];
  }
}

/// The block-wide combination of one value per thread with a warp reduction,
/// shared memory and a second warp reduction; every thread gets the result.
template <bool IsMax>
__device__ __forceinline__ float blockReduce(float V, float *Scratch) {
  int Tid = threadIdx.x;
  V = IsMax ? warpMax(V) : warpSum(V);
  if (Tid % 32 == 0)
    Scratch[Tid / 32] = V;
  __syncthreads();
  float W = Tid % 32 < SoftmaxBlock / 32 ? Scratch[Tid % 32]
                                         : (IsMax ? -INFINITY : 0.0f);
  W = IsMax ? warpMax(W) : warpSum(W);
  __syncthreads(); // Scratch is reused by the next reduction.
  return W;
}

/// Out[row] = softmax(In[row]) for a row-major Rows x Cols matrix; one block
/// of SoftmaxBlock threads per row, each thread striding over the columns:
/// the row maximum, the sum of exp(x - max), then exp(x - max) / sum.
extern "C" __global__ void softmax(const float *In, size_t Cols, float *Out) {
  __shared__ float Scratch[SoftmaxBlock / 32];
  size_t Row = blockIdx.x;
  const float *X = In + Row * Cols;
  float *Y = Out + Row * Cols;
  float Max = -INFINITY;
  for (size_t J = threadIdx.x; J < Cols; J += SoftmaxBlock)
    Max = X[J] > Max ? X[J] : Max;
  Max = blockReduce<true>(Max, Scratch);
  float Sum = 0.0f;
  for (size_t J = threadIdx.x; J < Cols; J += SoftmaxBlock)
    Sum += expf(X[J] - Max);
  Sum = blockReduce<false>(Sum, Scratch);
  float Inv = 1.0f / Sum;
  for (size_t J = threadIdx.x; J < Cols; J += SoftmaxBlock)
    Y[J] = expf(X[J] - Max) * Inv;
}

/// C (M x N) = A (M x K) . B (K x N), row-major f32; 32 x 8 threads compute a
/// 32 x 32 tile of C, four rows per thread, stepping along K by 32.
extern "C" __global__ void sgemm(size_t M, size_t N, size_t K, const float *A,
                                 const float *B, float *C) {
  __shared__ float ATile[Tile * Tile];
  __shared__ float BTile[Tile * Tile];
  size_t Tx = threadIdx.x, Ty = threadIdx.y;
  size_t TileRow = static_cast<size_t>(blockIdx.y) * Tile;
  size_t TileCol = static_cast<size_t>(blockIdx.x) * Tile;
  size_t Col = TileCol + Tx;
  float Acc[RowsPerThread] = {};
  for (size_t K0 = 0; K0 < K; K0 += Tile) {
    for (int I = 0; I < RowsPerThread; ++I) {
      size_t R = Ty + I * BlockRows;
      size_t ARow = TileRow + R, ACol = K0 + Tx;
      ATile[R * Tile + Tx] = ARow < M && ACol < K ? A[ARow * K + ACol] : 0.0f;
      size_t BRow = K0 + R;
      BTile[R * Tile + Tx] = BRow < K && Col < N ? B[BRow * N + Col] : 0.0f;
    }
    __syncthreads();
    for (int KK = 0; KK < Tile; ++KK) {
      float BValue = BTile[KK * Tile + Tx];
      for (int I = 0; I < RowsPerThread; ++I)
        Acc[I] = fmaf(ATile[(Ty + I * BlockRows) * Tile + KK], BValue, Acc[I]);
    }
    __syncthreads();
  }
  for (int I = 0; I < RowsPerThread; ++I) {
    size_t Row = TileRow + Ty + I * BlockRows;
    if (Row < M && Col < N)
      C[Row * N + Col] = Acc[I];
  }
}

/// sgemm_fast of examples/sgemm_fast: a 128 x 128 tile of C per block of
/// 256 threads, 8 x 8 accumulators per thread (rows 4*Ty + {0..3} and
/// 64 + 4*Ty + {0..3}, columns likewise with Tx; each warp an 8 x 4 patch of
/// (Tx, Ty)), K steps of 8. Each step's float4 of A and of B are loaded into
/// registers before the previous step's FMAs and stored after them into the
/// other of two shared buffers (A transposed, rows padded by 4); one barrier
/// per step. Blocks whose tile overhangs C (or any block when K % 8, N % 4 or
/// the alignment rule out float4 accesses) run the same loop instantiated
/// with checked scalar accesses.
namespace sgemm_fast_detail {
constexpr int BM = 128, BN = 128, BK = 8;
constexpr int AStride = BM + 4;
constexpr int ATile = BK * AStride, BTile = BK * BN;

struct Staged {
  float4 A, B;
};

template <bool Edge>
__device__ __forceinline__ Staged loadStep(size_t M, size_t N, size_t K,
                                           const float *__restrict__ A,
                                           const float *__restrict__ B,
                                           int Tid, size_t Row0, size_t Col0,
                                           size_t K0) {
  size_t Row = Row0 + Tid / 2, KA = K0 + (Tid % 2) * 4;
  size_t KB = K0 + Tid / 32, Col = Col0 + (Tid % 32) * 4;
  if constexpr (!Edge) {
    return {*reinterpret_cast<const float4 *>(A + Row * K + KA),
            *reinterpret_cast<const float4 *>(B + KB * N + Col)};
  } else {
    float VA[4], VB[4];
    for (int J = 0; J < 4; ++J) {
      VA[J] = Row < M && KA + J < K ? A[Row * K + KA + J] : 0.0f;
      VB[J] = KB < K && Col + J < N ? B[KB * N + Col + J] : 0.0f;
    }
    return {make_float4(VA[0], VA[1], VA[2], VA[3]),
            make_float4(VB[0], VB[1], VB[2], VB[3])};
  }
}

__device__ __forceinline__ void storeStep(float *At, float *Bt, int Tid,
                                          Staged S) {
  int ARow = Tid / 2, AK = (Tid % 2) * 4;
  At[(AK + 0) * AStride + ARow] = S.A.x;
  At[(AK + 1) * AStride + ARow] = S.A.y;
  At[(AK + 2) * AStride + ARow] = S.A.z;
  At[(AK + 3) * AStride + ARow] = S.A.w;
  *reinterpret_cast<float4 *>(Bt + (Tid / 32) * BN + (Tid % 32) * 4) = S.B;
}

__device__ __forceinline__ void multiplyStep(const float *At, const float *Bt,
                                             int Tx, int Ty,
                                             float (&Acc)[8][8]) {
#pragma unroll
  for (int KK = 0; KK < BK; ++KK) {
    float4 A0 = *reinterpret_cast<const float4 *>(At + KK * AStride + 4 * Ty);
    float4 A1 =
        *reinterpret_cast<const float4 *>(At + KK * AStride + 64 + 4 * Ty);
    float4 B0 = *reinterpret_cast<const float4 *>(Bt + KK * BN + 4 * Tx);
    float4 B1 = *reinterpret_cast<const float4 *>(Bt + KK * BN + 64 + 4 * Tx);
    float AV[8] = {A0.x, A0.y, A0.z, A0.w, A1.x, A1.y, A1.z, A1.w};
    float BV[8] = {B0.x, B0.y, B0.z, B0.w, B1.x, B1.y, B1.z, B1.w};
#pragma unroll
    for (int I = 0; I < 8; ++I)
#pragma unroll
      for (int J = 0; J < 8; ++J)
        Acc[I][J] = fmaf(AV[I], BV[J], Acc[I][J]);
  }
}

template <bool Edge>
__device__ __forceinline__ void storeC(size_t M, size_t N, float *C,
                                       const float (&Acc)[8][8], size_t Row0,
                                       size_t Col0, int Tx, int Ty) {
#pragma unroll
  for (int I = 0; I < 8; ++I) {
    size_t Row = Row0 + 4 * Ty + I % 4 + (I / 4) * 64;
#pragma unroll
    for (int Half = 0; Half < 2; ++Half) {
      size_t Col = Col0 + 4 * Tx + Half * 64;
      const float *V = &Acc[I][4 * Half];
      if constexpr (!Edge) {
        *reinterpret_cast<float4 *>(C + Row * N + Col) =
            make_float4(V[0], V[1], V[2], V[3]);
      } else if (Row < M) {
        for (int J = 0; J < 4; ++J)
          if (Col + J < N)
            C[Row * N + Col + J] = V[J];
      }
    }
  }
}

template <bool Edge>
__device__ __forceinline__ void blockProduct(size_t M, size_t N, size_t K,
                                             const float *__restrict__ A,
                                             const float *__restrict__ B,
                                             float *C, int Tid, size_t Row0,
                                             size_t Col0, float *ATiles,
                                             float *BTiles) {
  // Each warp an 8 x 4 patch of (Tx, Ty).
  int Warp = Tid / 32, Lane = Tid % 32;
  int Tx = (Warp % 2) * 8 + Lane % 8, Ty = (Warp / 2) * 4 + Lane / 8;
  float Acc[8][8] = {};
  size_t Steps = (K + BK - 1) / BK;
  if (Steps == 0) {
    storeC<Edge>(M, N, C, Acc, Row0, Col0, Tx, Ty);
    return;
  }
  storeStep(ATiles, BTiles, Tid,
            loadStep<Edge>(M, N, K, A, B, Tid, Row0, Col0, 0));
  __syncthreads();
  for (size_t Step = 0; Step < Steps; ++Step) {
    size_t Cur = Step % 2;
    bool HasNext = Step + 1 < Steps;
    Staged Next = {};
    if (HasNext)
      Next = loadStep<Edge>(M, N, K, A, B, Tid, Row0, Col0, (Step + 1) * BK);
    multiplyStep(ATiles + Cur * ATile, BTiles + Cur * BTile, Tx, Ty, Acc);
    if (HasNext)
      storeStep(ATiles + (1 - Cur) * ATile, BTiles + (1 - Cur) * BTile, Tid,
                Next);
    __syncthreads();
  }
  storeC<Edge>(M, N, C, Acc, Row0, Col0, Tx, Ty);
}
} // namespace sgemm_fast_detail

extern "C" __global__ void __launch_bounds__(256, 2)
    sgemm_fast(size_t M, size_t N, size_t K, const float *__restrict__ A,
               const float *__restrict__ B, float *__restrict__ C) {
  using namespace sgemm_fast_detail;
  __shared__ __align__(16) float ATiles[2 * ATile];
  __shared__ __align__(16) float BTiles[2 * BTile];
  int Tid = threadIdx.x;
  size_t Row0 = static_cast<size_t>(blockIdx.y) * BM;
  size_t Col0 = static_cast<size_t>(blockIdx.x) * BN;
  auto Aligned = [](const void *P) {
    return reinterpret_cast<uintptr_t>(P) % 16 == 0;
  };
  bool Interior = Row0 + BM <= M && Col0 + BN <= N && K % BK == 0 &&
                  N % 4 == 0 && Aligned(A) && Aligned(B) && Aligned(C);
  if (Interior)
    blockProduct<false>(M, N, K, A, B, C, Tid, Row0, Col0, ATiles, BTiles);
  else
    blockProduct<true>(M, N, K, A, B, C, Tid, Row0, Col0, ATiles, BTiles);
}

/// The same tiling as sgemm with bf16 inputs (bit patterns) widened to f32
/// when a tile is loaded, f32 accumulation and an f32 result.
extern "C" __global__ void gemm_bf16(size_t M, size_t N, size_t K,
                                     const uint16_t *A, const uint16_t *B,
                                     float *C) {
  __shared__ float ATile[Tile * Tile];
  __shared__ float BTile[Tile * Tile];
  size_t Tx = threadIdx.x, Ty = threadIdx.y;
  size_t TileRow = static_cast<size_t>(blockIdx.y) * Tile;
  size_t TileCol = static_cast<size_t>(blockIdx.x) * Tile;
  size_t Col = TileCol + Tx;
  float Acc[RowsPerThread] = {};
  for (size_t K0 = 0; K0 < K; K0 += Tile) {
    for (int I = 0; I < RowsPerThread; ++I) {
      size_t R = Ty + I * BlockRows;
      size_t ARow = TileRow + R, ACol = K0 + Tx;
      ATile[R * Tile + Tx] =
          ARow < M && ACol < K ? bf16ToFloat(A[ARow * K + ACol]) : 0.0f;
      size_t BRow = K0 + R;
      BTile[R * Tile + Tx] =
          BRow < K && Col < N ? bf16ToFloat(B[BRow * N + Col]) : 0.0f;
    }
    __syncthreads();
    for (int KK = 0; KK < Tile; ++KK) {
      float BValue = BTile[KK * Tile + Tx];
      for (int I = 0; I < RowsPerThread; ++I)
        Acc[I] = fmaf(ATile[(Ty + I * BlockRows) * Tile + KK], BValue, Acc[I]);
    }
    __syncthreads();
  }
  for (int I = 0; I < RowsPerThread; ++I) {
    size_t Row = TileRow + Ty + I * BlockRows;
    if (Row < M && Col < N)
      C[Row * N + Col] = Acc[I];
  }
}
