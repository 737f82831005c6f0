// CUDA C++ device code that the Rust kernels of main.rs call, and a CUDA C++
// kernel that calls a Rust device function. Compiled by nvcc as part of the
// device link (build.rs names this file).

#include <affine.h>
#include <cub/block/block_reduce.cuh>

// `extern "C"` gives each function an unmangled name, the one the Rust
// `extern "C"` block declares. Every rounding step is written out
// (__fmaf_rn, __fmul_rn) so that the CPU check in main.rs can compute the same
// bits: nvcc would otherwise contract a * x + b into an FMA.

extern "C" __device__ float cxx_poly(float x, float a, float b) {
    return __fmaf_rn(__fmaf_rn(a, x, b), x, 1.0f);
}

// A 32-bit mixing function (a multiply-xorshift hash).
extern "C" __device__ unsigned int cxx_mix(unsigned int h, unsigned int v) {
    h ^= v;
    h *= 0x9E3779B1u;
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    return h ^ (h >> 13);
}

// CUDA's sinf, compiled by nvcc: for large arguments it reads the table
// __cudart_i2opi_f, which the Rust kernels' libdevice sinf brings too (the
// device linker renames nvcc's copy).
extern "C" __device__ float cxx_sin(float x) {
    return sinf(x);
}

// A struct passed by pointer (here to the Rust kernel's local variable):
// main.rs's #[repr(C)] Affine has its layout (include/affine.h). By value
// it could not cross: rustc lowers struct arguments for the host's C ABI.

extern "C" __device__ float cxx_affine(const Affine *t, float x) {
    return __fmaf_rn(t->scale, x, t->shift);
}

// The reverse direction inside one link: a CUDA C++ kernel calling the Rust
// device function `rust_cube` (exported by main.rs with #[device] #[no_mangle]).
extern "C" __device__ float rust_cube(float x);

extern "C" __global__ void cxx_cubes(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = rust_cube(in[i]);
}

// A vendor device library: CUB's block-wide reduction (a header library of
// the CUDA toolkit, compiled here by nvcc like any device source). Every
// thread of a block of CXX_BLOCK threads calls it together; thread 0 gets
// the block's sum of `v`, the others an unspecified value. Integers, so the
// CPU check is exact whatever order CUB adds in.
#define CXX_BLOCK 256
extern "C" __device__ unsigned int cxx_block_sum(unsigned int v) {
    using Reduce = cub::BlockReduce<unsigned int, CXX_BLOCK>;
    __shared__ typename Reduce::TempStorage temp;
    return Reduce(temp).Sum(v);
}
