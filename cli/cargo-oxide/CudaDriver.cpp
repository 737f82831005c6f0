//===- CudaDriver.cpp - asking the CUDA driver what is there --------------===//
//
// Part of oxide. See CudaDriver.h. The few declarations we need from cuda.h
// are repeated here so that cargo-oxide builds without the toolkit headers.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <dlfcn.h>

namespace oxide::cli {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUdeviceptr = unsigned long long;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

using CuInitFn = CUresult (*)(unsigned);
using CuDriverGetVersionFn = CUresult (*)(int *);
using CuDeviceGetCountFn = CUresult (*)(int *);
using CuDeviceGetFn = CUresult (*)(CUdevice *, int);
using CuDeviceGetNameFn = CUresult (*)(char *, int, CUdevice);
using CuDeviceGetAttributeFn = CUresult (*)(int *, int, CUdevice);
using CuGetErrorStringFn = CUresult (*)(CUresult, const char **);
using CuPrimaryCtxRetainFn = CUresult (*)(CUcontext *, CUdevice);
using CuPrimaryCtxReleaseFn = CUresult (*)(CUdevice);
using CuCtxSetCurrentFn = CUresult (*)(CUcontext);
using CuCtxSynchronizeFn = CUresult (*)();
using CuModuleLoadDataFn = CUresult (*)(CUmodule *, const void *);
using CuModuleUnloadFn = CUresult (*)(CUmodule);
using CuModuleGetFunctionFn = CUresult (*)(CUfunction *, CUmodule, const char *);
using CuMemAllocFn = CUresult (*)(CUdeviceptr *, size_t);
using CuMemFreeFn = CUresult (*)(CUdeviceptr);
using CuMemcpyDtoHFn = CUresult (*)(void *, CUdeviceptr, size_t);
using CuLaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, unsigned,
                                      void *, void **, void **);

/// What the launch check runs: thread i of one block writes 3·i + 1.
constexpr const char *ProbePtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry oxide_doctor_probe(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mad.lo.u32 %r2, %r1, 3, 1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";
constexpr unsigned ProbeThreads = 256;

/// The entry points the launch check needs beyond the device queries.
struct LaunchApi {
  CuPrimaryCtxRetainFn PrimaryCtxRetain = nullptr;
  CuPrimaryCtxReleaseFn PrimaryCtxRelease = nullptr;
  CuCtxSetCurrentFn CtxSetCurrent = nullptr;
  CuCtxSynchronizeFn CtxSynchronize = nullptr;
  CuModuleLoadDataFn ModuleLoadData = nullptr;
  CuModuleUnloadFn ModuleUnload = nullptr;
  CuModuleGetFunctionFn ModuleGetFunction = nullptr;
  CuMemAllocFn MemAlloc = nullptr;
  CuMemFreeFn MemFree = nullptr;
  CuMemcpyDtoHFn MemcpyDtoH = nullptr;
  CuLaunchKernelFn LaunchKernel = nullptr;
};

struct DriverApi {
  CuInitFn Init = nullptr;
  CuDriverGetVersionFn DriverGetVersion = nullptr;
  CuDeviceGetCountFn DeviceGetCount = nullptr;
  CuDeviceGetFn DeviceGet = nullptr;
  CuDeviceGetNameFn DeviceGetName = nullptr;
  CuDeviceGetAttributeFn DeviceGetAttribute = nullptr;
  CuGetErrorStringFn GetErrorName = nullptr;   // optional
  CuGetErrorStringFn GetErrorString = nullptr; // optional

  std::string describe(const char *Call, CUresult R) const {
    std::string Text = std::string(Call) + ": error " + std::to_string(R);
    const char *Name = nullptr;
    const char *Message = nullptr;
    if (GetErrorName && GetErrorName(R, &Name) == CUDA_SUCCESS && Name)
      Text = std::string(Call) + ": " + Name;
    if (GetErrorString && GetErrorString(R, &Message) == CUDA_SUCCESS &&
        Message)
      Text += std::string(" (") + Message + ")";
    return Text;
  }
};

template <typename Fn> bool bind(void *Lib, const char *Name, Fn &Out) {
  Out = reinterpret_cast<Fn>(dlsym(Lib, Name));
  return Out != nullptr;
}

/// Binds the launch entry points; the name of the first missing one, if any.
const char *bindLaunchApi(void *Lib, LaunchApi &L) {
  if (!bind(Lib, "cuDevicePrimaryCtxRetain", L.PrimaryCtxRetain))
    return "cuDevicePrimaryCtxRetain";
  if (!bind(Lib, "cuDevicePrimaryCtxRelease_v2", L.PrimaryCtxRelease))
    return "cuDevicePrimaryCtxRelease_v2";
  if (!bind(Lib, "cuCtxSetCurrent", L.CtxSetCurrent))
    return "cuCtxSetCurrent";
  if (!bind(Lib, "cuCtxSynchronize", L.CtxSynchronize))
    return "cuCtxSynchronize";
  if (!bind(Lib, "cuModuleLoadData", L.ModuleLoadData))
    return "cuModuleLoadData";
  if (!bind(Lib, "cuModuleUnload", L.ModuleUnload))
    return "cuModuleUnload";
  if (!bind(Lib, "cuModuleGetFunction", L.ModuleGetFunction))
    return "cuModuleGetFunction";
  if (!bind(Lib, "cuMemAlloc_v2", L.MemAlloc))
    return "cuMemAlloc_v2";
  if (!bind(Lib, "cuMemFree_v2", L.MemFree))
    return "cuMemFree_v2";
  if (!bind(Lib, "cuMemcpyDtoH_v2", L.MemcpyDtoH))
    return "cuMemcpyDtoH_v2";
  if (!bind(Lib, "cuLaunchKernel", L.LaunchKernel))
    return "cuLaunchKernel";
  return nullptr;
}

/// Loads ProbePtx on \p Device, runs it and checks every value it wrote.
/// Returns an empty string on success, else what failed.
std::string runProbeKernel(const DriverApi &Api, const LaunchApi &L,
                           CUdevice Device) {
  CUcontext Ctx = nullptr;
  if (CUresult R = L.PrimaryCtxRetain(&Ctx, Device); R != CUDA_SUCCESS)
    return Api.describe("cuDevicePrimaryCtxRetain", R);
  std::string Error;
  CUmodule Module = nullptr;
  CUdeviceptr Out = 0;
  auto Fail = [&](const char *Call, CUresult R) {
    Error = Api.describe(Call, R);
    return false;
  };
  auto Run = [&]() -> bool {
    if (CUresult R = L.CtxSetCurrent(Ctx); R != CUDA_SUCCESS)
      return Fail("cuCtxSetCurrent", R);
    if (CUresult R = L.ModuleLoadData(&Module, ProbePtx); R != CUDA_SUCCESS)
      return Fail("cuModuleLoadData (JIT of a small PTX kernel)", R);
    CUfunction Fn = nullptr;
    if (CUresult R = L.ModuleGetFunction(&Fn, Module, "oxide_doctor_probe");
        R != CUDA_SUCCESS)
      return Fail("cuModuleGetFunction", R);
    if (CUresult R = L.MemAlloc(&Out, ProbeThreads * sizeof(unsigned));
        R != CUDA_SUCCESS)
      return Fail("cuMemAlloc", R);
    void *Params[] = {&Out};
    if (CUresult R = L.LaunchKernel(Fn, 1, 1, 1, ProbeThreads, 1, 1, 0,
                                    nullptr, Params, nullptr);
        R != CUDA_SUCCESS)
      return Fail("cuLaunchKernel", R);
    if (CUresult R = L.CtxSynchronize(); R != CUDA_SUCCESS)
      return Fail("cuCtxSynchronize", R);
    unsigned Values[ProbeThreads] = {};
    if (CUresult R = L.MemcpyDtoH(Values, Out, sizeof(Values));
        R != CUDA_SUCCESS)
      return Fail("cuMemcpyDtoH", R);
    for (unsigned I = 0; I < ProbeThreads; ++I)
      if (Values[I] != 3 * I + 1) {
        Error = "the kernel ran but thread " + std::to_string(I) + " wrote " +
                std::to_string(Values[I]) + " instead of " +
                std::to_string(3 * I + 1);
        return false;
      }
    return true;
  };
  Run();
  if (Out)
    L.MemFree(Out);
  if (Module)
    L.ModuleUnload(Module);
  L.PrimaryCtxRelease(Device);
  return Error;
}

} // namespace

DriverProbe probeCudaDriver(bool RunKernel) {
  DriverProbe Probe;
  // The handle is deliberately never closed: unloading libcuda after cuInit()
  // is not supported by the driver, and the process is short-lived anyway.
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!Lib) {
    const char *Why = dlerror();
    Probe.LoadError = Why ? Why : "libcuda.so.1 could not be loaded";
    return Probe;
  }

  DriverApi Api;
  const char *Missing = nullptr;
  if (!bind(Lib, "cuInit", Api.Init))
    Missing = "cuInit";
  else if (!bind(Lib, "cuDriverGetVersion", Api.DriverGetVersion))
    Missing = "cuDriverGetVersion";
  else if (!bind(Lib, "cuDeviceGetCount", Api.DeviceGetCount))
    Missing = "cuDeviceGetCount";
  else if (!bind(Lib, "cuDeviceGet", Api.DeviceGet))
    Missing = "cuDeviceGet";
  else if (!bind(Lib, "cuDeviceGetName", Api.DeviceGetName))
    Missing = "cuDeviceGetName";
  else if (!bind(Lib, "cuDeviceGetAttribute", Api.DeviceGetAttribute))
    Missing = "cuDeviceGetAttribute";
  if (Missing) {
    Probe.LoadError = std::string("libcuda.so.1 lacks ") + Missing;
    return Probe;
  }
  bind(Lib, "cuGetErrorName", Api.GetErrorName);
  bind(Lib, "cuGetErrorString", Api.GetErrorString);
  Probe.Loaded = true;

  // cuDriverGetVersion works before cuInit and even when cuInit fails.
  int Version = 0;
  if (Api.DriverGetVersion(&Version) == CUDA_SUCCESS)
    Probe.DriverVersion = Version;

  if (CUresult R = Api.Init(0); R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuInit", R);
    return Probe;
  }
  if (CUresult R = Api.DeviceGetCount(&Probe.DeviceCount); R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuDeviceGetCount", R);
    return Probe;
  }
  if (Probe.DeviceCount == 0) {
    Probe.DeviceError = "the driver reports no CUDA devices";
    return Probe;
  }
  CUdevice Device = 0;
  if (CUresult R = Api.DeviceGet(&Device, 0); R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuDeviceGet", R);
    return Probe;
  }
  char Name[256] = {};
  if (CUresult R = Api.DeviceGetName(Name, sizeof(Name) - 1, Device);
      R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuDeviceGetName", R);
    return Probe;
  }
  Probe.DeviceName = Name;
  if (CUresult R = Api.DeviceGetAttribute(
          &Probe.ComputeMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
          Device);
      R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuDeviceGetAttribute", R);
    return Probe;
  }
  if (CUresult R = Api.DeviceGetAttribute(
          &Probe.ComputeMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
          Device);
      R != CUDA_SUCCESS) {
    Probe.DeviceError = Api.describe("cuDeviceGetAttribute", R);
    return Probe;
  }
  Probe.HasDevice = true;
  if (!RunKernel)
    return Probe;

  LaunchApi Launch;
  if (const char *Missing = bindLaunchApi(Lib, Launch)) {
    Probe.KernelError = std::string("libcuda.so.1 lacks ") + Missing;
    return Probe;
  }
  Probe.KernelError = runProbeKernel(Api, Launch, Device);
  Probe.KernelRan = Probe.KernelError.empty();
  return Probe;
}

std::optional<ComputeCapability> detectGpu() {
  DriverProbe Probe = probeCudaDriver(/*RunKernel=*/false);
  if (!Probe.HasDevice)
    return std::nullopt;
  return ComputeCapability{Probe.ComputeMajor, Probe.ComputeMinor};
}

} // namespace oxide::cli
