//! The measurement knobs (`OXIDE_PRIMS_SCAN`, `OXIDE_PRIMS_SELECT`,
//! `OXIDE_PRIMS_SORT`, `OXIDE_PRIMS_REDUCE`) and which kernel instances a
//! build compiles for them.
//!
//! A knob that changes a tile's shape, a ranking or a store picks another
//! instance of a generic kernel, and every instance a launch site can pick
//! is compiled into the program that links this crate, whether it runs or
//! not. With every alternative compiled, each `select_if` or scan of an
//! element type brought several kernels of which the defaults run one: most
//! of a program's device link (ptxas above all) and of its image went to
//! kernels only a benchmark asks for. So the alternatives are compiled
//! only with the crate's `tuning` feature, which the benchmarks and
//! examples/primitives (which checks every alternative against the CPU)
//! turn on; without it the launch sites compile the instance each default
//! runs, the variables are not read (a warning says so once if one is set),
//! and the test hooks that take a tuning (`scan_with_tuning`,
//! `select_if_into_with_tuning`) do not exist. A default build and a
//! `tuning` build run the same kernel under the defaults.

use crate::PrimsError;

/// Whether this build compiles every instance the knobs can pick (the
/// `tuning` feature) or only those the defaults launch.
pub(crate) const EVERY_INSTANCE: bool = cfg!(feature = "tuning");

/// The knob variable `var`'s value; empty when unset, and in a build
/// without the `tuning` feature, where a set variable gets a warning on
/// stderr once (a knob must not fail a run, and must not seem to work
/// when it does nothing).
pub(crate) fn spec(var: &str) -> String {
    let value = std::env::var(var).unwrap_or_default();
    if EVERY_INSTANCE || value.trim().is_empty() {
        return value;
    }
    eprintln!(
        "{var}: ignored; cuda-prims compiles the kernels its knobs pick only with its `tuning` feature \
         (cuda-prims = {{ …, features = [\"tuning\"] }})"
    );
    String::new()
}

/// The error of a launch site asked for an instance this build did not
/// compile. Unreachable through the public calls: without the `tuning`
/// feature every tuning they take is the default.
pub(crate) fn not_compiled(what: &'static str) -> PrimsError {
    PrimsError::Invalid(format!(
        "{what}: the tuning asks for a kernel instance compiled only with cuda-prims' `tuning` feature"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_variable_is_read_only_with_the_feature() {
        // A name no other test reads: the environment is the process's.
        let var = "OXIDE_PRIMS_KNOBS_UNIT_TEST";
        std::env::set_var(var, "vectors=4");
        let read = spec(var);
        std::env::remove_var(var);
        assert_eq!(read, if cfg!(feature = "tuning") { "vectors=4" } else { "" });
        assert_eq!(spec(var), "");
    }
}
