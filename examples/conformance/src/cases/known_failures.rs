//! Cases the device linker cannot build yet.
//!
//! Each of them stays in its category's module behind
//! `#[cfg(feature = "known-failures")]`, so the suite builds without them;
//! `cargo oxide build conformance -F known-failures` builds them too, to check
//! a fix. When the device linker handles one, remove its `cfg` and its entry
//! here. Without the feature the program prints one `skip` line per case.

/// Cases that share one problem of the device linker.
pub struct KnownFailure {
    pub cases: &'static [&'static str],
    /// What the build says, in short.
    pub problem: &'static str,
}

/// Everything the device linker currently rejects or crashes on: nothing at
/// the moment. Add an entry (and gate the case) when a case cannot build.
pub const KNOWN_LINKER_FAILURES: &[KnownFailure] = &[];

/// Prints a `skip` line for each case left out of this build.
pub fn report_skipped() {
    if cfg!(feature = "known-failures") {
        return;
    }
    for failure in KNOWN_LINKER_FAILURES {
        for case in failure.cases {
            println!("skip  {case}: {}", failure.problem);
        }
    }
}
