//===- CudaDriver.h - asking the CUDA driver what is there ------*- C++ -*-===//
//
// Part of oxide. `cargo oxide doctor` must run on machines without a GPU (CI,
// build hosts), so cargo-oxide never links against libcuda: it dlopen()s
// libcuda.so.1 at run time, as cuda-core does, and reports what it finds.
// Builds ask the same way which GPU is present (detectGpu), to build for it
// when nothing names a target (resolveArch, Cargo.h).
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_CUDADRIVER_H
#define OXIDE_CLI_CUDADRIVER_H

#include <optional>
#include <string>

namespace oxide::cli {

struct DriverProbe {
  /// libcuda.so.1 was loaded and has the entry points we use.
  bool Loaded = false;
  /// dlerror() or the missing symbol when !Loaded.
  std::string LoadError;
  /// cuDriverGetVersion(), e.g. 13000; 0 if it failed.
  int DriverVersion = 0;

  /// cuInit(0) succeeded and cuDeviceGetCount() > 0.
  bool HasDevice = false;
  /// Why not, e.g. "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is
  /// detected)".
  std::string DeviceError;
  int DeviceCount = 0;
  std::string DeviceName; ///< of device 0
  int ComputeMajor = 0;   ///< of device 0
  int ComputeMinor = 0;

  /// A small PTX kernel was loaded, launched on device 0 and wrote what it
  /// should (only tried when HasDevice).
  bool KernelRan = false;
  /// Why not: the failing driver call, or the wrong value read back.
  std::string KernelError;
};

/// Loads the driver, asks it about device 0 and, when \p RunKernel, runs a
/// small kernel there. Never fails: what went wrong is in the result.
DriverProbe probeCudaDriver(bool RunKernel = true);

/// The compute capability of a GPU: 9 and 0 on an H200.
struct ComputeCapability {
  int Major = 0;
  int Minor = 0;
};

/// The compute capability of device 0, when the driver loads and has a
/// device; nullopt otherwise (no kernel is run).
std::optional<ComputeCapability> detectGpu();

} // namespace oxide::cli

#endif // OXIDE_CLI_CUDADRIVER_H
