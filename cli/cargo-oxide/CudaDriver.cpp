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

} // namespace

DriverProbe probeCudaDriver() {
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
  return Probe;
}

} // namespace oxide::cli
