//! The GPU the kernels are being built for, as a constant of the device code.
//!
//! oxide compiles each kernel once, from the Rust the host build sees, for
//! the target `cargo oxide` picks (`--arch`, `[package.metadata.oxide]
//! arch`, `OXIDE_ARCH`, the GPU it finds, or sm_80). [`compute_capability`]
//! is that target's compute capability, folded by the device linker into a
//! constant, so a branch the target fails is deleted before the kernel is
//! compiled: as in CUDA C++ behind `#if __CUDA_ARCH__ >= 900`, code there may
//! use instructions the target lacks (an instruction of newer GPUs outside
//! such a branch is a compile error at its call).
//!
//! ```
//! use cuda_device::{arch, cache};
//!
//! /// Asks L2 for a tile: one bulk request on Hopper and newer, one request
//! /// per 128-byte line before.
//! fn ask_for(tile: &[u32]) {
//!     if arch::compute_capability() >= 90 {
//!         cache::prefetch_l2_bulk(tile);
//!     } else {
//!         for line in tile.chunks(32) {
//!             cache::prefetch_l2(line.as_ptr());
//!         }
//!     }
//! }
//! # let _ = ask_for;
//! ```
//!
//! [`has`] asks for a [`Feature`] that only some targets have, as CUDA
//! C++'s `__CUDA_ARCH_FEAT_SM90_ALL` does for sm_90a: a kernel may use
//! wgmma where `has(Feature::Wgmma)` and another path elsewhere, and build
//! for every target.
//!
//! In an emulated launch (`cargo oxide run --emulate`) the device-code
//! emulator runs the PTX built for the target, so the branch is the
//! target's; the host-code emulator (`OXIDE_EMULATE=host`) answers for
//! the GPU it models, sm_90 (compute capability 9.0, the features of the
//! portable `sm_90` target).

use crate::stubs;

/// The compute capability of the target the kernels are built for, major ·
/// 10 + minor: 80 for sm_80, 90 for sm_90 and sm_90a, 100 for sm_100a (CUDA
/// C++'s `__CUDA_ARCH__` is ten times this). A constant once the device
/// linker has built the kernel; a test of it costs nothing at run time.
///
/// # Panics
/// On the host outside an emulated launch: device code only.
#[inline(always)]
pub fn compute_capability() -> u32 {
    stubs::__oxide_stub_target_sm()
}

/// Whether the target the kernels are built for has `feature`: for
/// [`Feature::Wgmma`] only sm_90a, for [`Feature::Setmaxnreg`] the
/// architecture- and family-specific targets (sm_90a, sm_100f, …), for
/// [`Feature::Clusters`] and [`Feature::Tma`] every target from sm_90 on
/// (Targets.def).
/// A constant once the device linker has built the kernel, like
/// [`compute_capability`]; code behind a `false` answer may use the
/// feature's instructions.
///
/// ```
/// use cuda_device::arch::{self, Feature};
///
/// fn tensor_cores() -> &'static str {
///     if arch::has(Feature::Wgmma) { "wgmma" } else { "mma.sync" }
/// }
/// # let _ = tensor_cores;
/// ```
///
/// # Panics
/// On the host outside an emulated launch: device code only.
#[inline(always)]
pub fn has(feature: Feature) -> bool {
    stubs::__oxide_stub_target_features() & feature.bit() != 0
}

include!(concat!(env!("OUT_DIR"), "/arch.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_follow_targets_def() {
        let has = |target: &str, f: Feature| features_of_target(target).unwrap() & f.bit() != 0;
        assert_eq!(features_of_target("sm_80"), Some(0));
        assert!(has("sm_90", Feature::Clusters) && has("sm_90", Feature::Tma));
        assert!(!has("sm_90", Feature::Wgmma) && !has("sm_90", Feature::Setmaxnreg));
        assert!(has("sm_90a", Feature::Wgmma) && has("sm_90a", Feature::Setmaxnreg));
        assert!(has("sm_100a", Feature::Tcgen05) && !has("sm_100a", Feature::Wgmma));
        assert_eq!(features_of_target("sm_42"), None);
        // One bit per feature.
        let all = [Feature::Clusters, Feature::Tma, Feature::Setmaxnreg, Feature::Wgmma, Feature::Tcgen05];
        let bits = all.iter().fold(0u32, |acc, f| {
            assert_eq!(acc & f.bit(), 0, "{f:?} shares a bit");
            acc | f.bit()
        });
        assert_eq!(bits.count_ones() as usize, all.len());
    }
}
