//! The per-thread stack a kernel needs, which every launch makes sure the
//! context has (docs/DESIGN.md, "The device stack").
//!
//! The driver sizes a thread's stack from what it sees of a kernel's calls,
//! which leaves out calls through pointers; `core::fmt` makes them through
//! `dyn Write` and `dyn Display`. The device linker bounds each entry's stack
//! over every call (StackBound.cpp) and records it in the kernel table; before
//! a launch cuda-host raises the context's stack limit to it
//! (`CudaContext::ensure_stack_size`). Where the linker found no bound
//! (recursion, or indirect calls without ptxas), the launch asks for a
//! fallback: `OXIDE_DEVICE_STACK` bytes, or 16 KiB without it.
//!
//! ```
//! use cuda_host::StackNeed;
//!
//! assert_eq!(StackNeed::from_record(1312), StackNeed::Bounded(1312));
//! assert_eq!(StackNeed::from_record(u64::MAX), StackNeed::Unknown);
//! assert_eq!(StackNeed::Bounded(1312).bytes_with_fallback(16384), 1312);
//! assert_eq!(StackNeed::Unknown.bytes_with_fallback(16384), 16384);
//! ```

use std::sync::OnceLock;

use crate::abi::{DEVICE_STACK_FALLBACK, DEVICE_STACK_VARIABLE, KERNEL_STACK_UNKNOWN};
use crate::HostError;

/// The per-thread stack bytes a kernel may use, beyond what the driver
/// sizes by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackNeed {
    /// At most this many bytes, through every call the kernel can make
    /// (0: nothing beyond what the driver sees).
    Bounded(u64),
    /// No bound is known: the kernel may recurse, or it calls through
    /// pointers and the device linker had no ptxas to measure frames with.
    Unknown,
}

impl StackNeed {
    /// The need a kernel record's `stack_bytes` field encodes (docs/ABI.md §3).
    pub fn from_record(stack_bytes: u64) -> StackNeed {
        if stack_bytes == KERNEL_STACK_UNKNOWN {
            StackNeed::Unknown
        } else {
            StackNeed::Bounded(stack_bytes)
        }
    }

    /// The bytes to ask for: the bound, or `fallback` without one.
    pub fn bytes_with_fallback(self, fallback: usize) -> usize {
        match self {
            StackNeed::Bounded(bytes) => usize::try_from(bytes).unwrap_or(usize::MAX),
            StackNeed::Unknown => fallback,
        }
    }

    /// The bytes a launch asks the context for: the bound, or the fallback
    /// ([`fallback_stack_bytes`]).
    #[inline]
    pub fn bytes(self) -> Result<usize, HostError> {
        match self {
            // Every launch asks: a bound needs no look at the fallback.
            StackNeed::Bounded(bytes) => Ok(usize::try_from(bytes).unwrap_or(usize::MAX)),
            StackNeed::Unknown => fallback_stack_bytes(),
        }
    }
}

/// The stack a kernel without a bound gets: `OXIDE_DEVICE_STACK` (bytes per
/// thread), read once, or 16 KiB (Abi.def's `DeviceStackFallback`).
pub fn fallback_stack_bytes() -> Result<usize, HostError> {
    static FALLBACK: OnceLock<Result<usize, String>> = OnceLock::new();
    match FALLBACK.get_or_init(|| parse_fallback(std::env::var(DEVICE_STACK_VARIABLE).ok().as_deref())) {
        Ok(bytes) => Ok(*bytes),
        Err(value) => Err(HostError::InvalidDeviceStack { value: value.clone() }),
    }
}

/// `OXIDE_DEVICE_STACK`'s value, or the default when it is unset or empty.
fn parse_fallback(setting: Option<&str>) -> Result<usize, String> {
    match setting.map(str::trim) {
        None | Some("") => Ok(DEVICE_STACK_FALLBACK as usize),
        Some(text) => text.parse::<usize>().ok().filter(|&b| b > 0).ok_or_else(|| text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unknown_marker_is_the_only_unknown() {
        assert_eq!(StackNeed::from_record(KERNEL_STACK_UNKNOWN), StackNeed::Unknown);
        assert_eq!(StackNeed::from_record(0), StackNeed::Bounded(0));
        assert_eq!(StackNeed::from_record(KERNEL_STACK_UNKNOWN - 1), StackNeed::Bounded(KERNEL_STACK_UNKNOWN - 1));
    }

    #[test]
    fn the_fallback_is_the_variable_or_the_default() {
        assert_eq!(parse_fallback(None), Ok(DEVICE_STACK_FALLBACK as usize));
        assert_eq!(parse_fallback(Some(" ")), Ok(DEVICE_STACK_FALLBACK as usize));
        assert_eq!(parse_fallback(Some("65536")), Ok(65536));
        assert_eq!(parse_fallback(Some("16k")), Err("16k".to_string()));
        assert_eq!(parse_fallback(Some("0")), Err("0".to_string()));
    }
}
