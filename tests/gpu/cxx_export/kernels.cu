// CUDA C++ kernels that call Rust device functions exported by src/main.rs
// (#[device] #[no_mangle] pub extern "C" fn). build-cubin.sh compiles this
// file as relocatable device code and nvlink links it with oxide's PTX.

extern "C" __device__ float rust_saxpy(float a, float x, float y);
extern "C" __device__ unsigned int rust_collatz_steps(unsigned int n);

extern "C" __global__ void cxx_saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = rust_saxpy(a, x[i], y[i]);
}

extern "C" __global__ void cxx_collatz(const unsigned int *in, unsigned int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = rust_collatz_steps(in[i]);
}
