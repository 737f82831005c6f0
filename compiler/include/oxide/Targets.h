//===- Targets.h - GPU targets and the features they imply ------*- C++ -*-===//
//
// Part of oxide. The named GPU targets of Targets.def as values: what the
// device linker's passes ask ("has this target wgmma?") and what cargo-oxide
// validates --arch against. Plain C++17 with no LLVM, so that cargo-oxide
// (which does not link LLVM) reads the same table.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_TARGETS_H
#define OXIDE_TARGETS_H

#include <cstddef>
#include <string>
#include <string_view>

namespace oxide {

/// One bit per OXIDE_TARGET_FEATURE of Targets.def.
enum TargetFeature : unsigned {
#define OXIDE_TARGET_FEATURE(ID, SPELLING, WHAT) ID##Bit,
#include "oxide/Targets.def"
  TargetFeatureCount
};
namespace feature {
#define OXIDE_TARGET_FEATURE(ID, SPELLING, WHAT) inline constexpr unsigned ID = 1u << ID##Bit;
#include "oxide/Targets.def"
} // namespace feature

/// Which GPUs a target's code runs on (Targets.def, KIND).
enum class TargetKind { Portable, Specific, Family };

struct GpuTarget {
  std::string_view Name; ///< sm_90a
  unsigned SM;           ///< compute capability, major * 10 + minor: 90
  unsigned PtxIsa;       ///< PTX ISA emitted, major * 10 + minor: 80
  TargetKind Kind;
  unsigned Features;     ///< feature:: bits

  bool has(unsigned Feature) const { return (Features & Feature) == Feature; }
};

struct TargetFeatureInfo {
  unsigned Bit;            ///< feature:: value
  std::string_view Name;   ///< "wgmma"
  std::string_view What;   ///< what it is, for messages
  std::string_view Id;     ///< "Wgmma": the enumerator, and cuda_device::arch::Feature's variant
};

namespace detail {
using namespace feature;
inline constexpr GpuTarget TargetTable[] = {
#define OXIDE_TARGET(NAME, SM, PTX_ISA, KIND, FEATURES)                                            \
  {#NAME, SM, PTX_ISA, TargetKind::KIND, FEATURES},
#include "oxide/Targets.def"
};
inline constexpr TargetFeatureInfo FeatureTable[] = {
#define OXIDE_TARGET_FEATURE(ID, SPELLING, WHAT) {feature::ID, SPELLING, WHAT, #ID},
#include "oxide/Targets.def"
};
#define OXIDE_DEFAULT_TARGET(NAME) inline constexpr std::string_view DefaultTargetName = #NAME;
#include "oxide/Targets.def"
} // namespace detail

/// Every known target, in the table's order (oldest first).
inline constexpr const GpuTarget (&gpuTargets())[std::size(detail::TargetTable)] {
  return detail::TargetTable;
}

/// Every feature of the table.
inline constexpr const TargetFeatureInfo (&targetFeatures())[std::size(detail::FeatureTable)] {
  return detail::FeatureTable;
}

/// The target built for when nothing names one and no GPU is found.
inline constexpr std::string_view DefaultTargetName = detail::DefaultTargetName;

/// The target called \p Name (exactly as the table spells it), or null.
inline const GpuTarget *findGpuTarget(std::string_view Name) {
  for (const GpuTarget &T : detail::TargetTable)
    if (T.Name == Name)
      return &T;
  return nullptr;
}

/// The feature spelled \p Name ("wgmma"), or null.
inline const TargetFeatureInfo *findTargetFeature(std::string_view Name) {
  for (const TargetFeatureInfo &F : detail::FeatureTable)
    if (F.Name == Name)
      return &F;
  return nullptr;
}

/// The names of the targets that have every bit of \p Features, joined with
/// ", " (all of them for 0): "sm_90a" for wgmma.
inline std::string targetNamesWith(unsigned Features = 0) {
  std::string Out;
  for (const GpuTarget &T : detail::TargetTable)
    if (T.has(Features)) {
      if (!Out.empty())
        Out += ", ";
      Out += T.Name;
    }
  return Out;
}

/// The target to suggest to a user whose kernels need \p Features but who
/// builds for \p Current: the oldest with them that is not older than
/// \p Current (sm_120a for setmaxnreg on sm_120), else the oldest with them.
inline const GpuTarget *suggestTargetWith(unsigned Features, const GpuTarget *Current) {
  const GpuTarget *Oldest = nullptr;
  for (const GpuTarget &T : detail::TargetTable) {
    if (!T.has(Features))
      continue;
    if (!Oldest)
      Oldest = &T;
    if (Current && T.SM >= Current->SM)
      return &T;
  }
  return Oldest;
}

/// The error for a name that is not a target: "unknown GPU architecture
/// `sm_999`; the known ones are sm_75, sm_80, …".
inline std::string unknownTargetMessage(std::string_view Name) {
  return "unknown GPU architecture `" + std::string(Name) + "`; the known ones are " +
         targetNamesWith(0);
}

/// The target of a device with compute capability \p Major.\p Minor
/// (cuDeviceGetAttribute): its portable target (sm_90 for 9.0), or null
/// when the table has none.
inline const GpuTarget *targetForComputeCapability(int Major, int Minor) {
  if (Major < 0 || Minor < 0)
    return nullptr;
  unsigned SM = unsigned(Major) * 10 + unsigned(Minor);
  for (const GpuTarget &T : detail::TargetTable)
    if (T.SM == SM && T.Kind == TargetKind::Portable)
      return &T;
  return nullptr;
}

} // namespace oxide

#endif // OXIDE_TARGETS_H
