//! [`PrimsError`]: what a device-wide primitive reports.

use cuda_core::DriverError;
use cuda_host::HostError;
use std::fmt;

/// Why a device-wide primitive did not run.
#[derive(Debug)]
pub enum PrimsError {
    /// Launching one of the library's kernels failed (the kernel is not in
    /// the module passed, the module is not this program's, a launch was
    /// refused).
    Host(HostError),
    /// The driver failed an allocation, memset or copy the call queued.
    Driver(DriverError),
    /// An output buffer has the wrong length for the input.
    LengthMismatch {
        /// The call and the buffer ("inclusive_scan: output").
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// `sort_pairs` was given values wider than the 8 bytes it moves.
    ValueTooWide {
        /// Their size in bytes.
        size: usize,
    },
    /// An argument outside its domain (histogram bins, levels, segment
    /// offsets); the message says which and what to pass.
    Invalid(String),
    /// The input has more elements than the primitive handles in one call.
    TooLarge {
        /// The call.
        what: &'static str,
        /// The input's length.
        len: usize,
        /// The largest length the call handles.
        max: usize,
    },
}

impl fmt::Display for PrimsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrimsError::Host(e) => write!(
                f,
                "{e}\nhint: pass the `KernelModule` of the program that links cuda-prims \
                 (`load_kernel_module(&ctx, \"<your crate>\")`), built with `cargo oxide`"
            ),
            PrimsError::Driver(e) => write!(f, "{e}"),
            PrimsError::LengthMismatch { what, expected, found } => write!(
                f,
                "{what} has {found} elements but must have {expected}: allocate it with \
                 `DeviceBuffer::zeroed(&stream, {expected})`"
            ),
            PrimsError::ValueTooWide { size } => write!(
                f,
                "sort_pairs moves values of at most 8 bytes, this one has {size}: sort indices (u32) \
                 as the values and gather the wide values with them"
            ),
            PrimsError::Invalid(why) => write!(f, "{why}"),
            PrimsError::TooLarge { what, len, max } => write!(
                f,
                "{what}: {len} elements is more than the {max} one call handles; split the input \
                 into parts and combine their results"
            ),
        }
    }
}

impl std::error::Error for PrimsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrimsError::Host(e) => Some(e),
            PrimsError::Driver(e) => Some(e),
            _ => None,
        }
    }
}

impl From<HostError> for PrimsError {
    fn from(e: HostError) -> Self {
        PrimsError::Host(e)
    }
}

impl From<DriverError> for PrimsError {
    fn from(e: DriverError) -> Self {
        PrimsError::Driver(e)
    }
}

/// Checks that `buffer_len` is `expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, buffer_len: usize) -> Result<(), PrimsError> {
    if expected == buffer_len {
        Ok(())
    } else {
        Err(PrimsError::LengthMismatch { what, expected, found: buffer_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_mismatch_says_what_to_allocate() {
        let e = check_len("inclusive_scan: output", 10, 9).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("inclusive_scan: output has 9 elements but must have 10"), "{text}");
        assert!(text.contains("DeviceBuffer::zeroed(&stream, 10)"), "{text}");
        assert!(check_len("x", 3, 3).is_ok());
    }

    #[test]
    fn too_large_says_to_split() {
        let e = PrimsError::TooLarge { what: "inclusive_scan", len: 5, max: 4 };
        assert!(e.to_string().contains("split the input"));
    }
}
