//! The cases, by category. Each module's `run` declares its cases, one call
//! of [`Suite::case`] each: a name (`category/what`), a comparison, and the
//! closure both sides run.
//!
//! Every closure must be total for all inputs: a device panic would abort the
//! CUDA context and end the run (panics are tested by tests/gpu/panic_oob).
//! The unit test below runs every case on the CPU to check that.

mod aggregates;
mod closures;
mod control;
mod enums;
mod float;
mod generics;
mod int;
mod iterators;
pub mod known_failures;
mod library;
mod regressions;

use crate::harness::Suite;

/// Runs every case, category by category.
pub fn run_all(s: &mut Suite) {
    int::run(s);
    float::run(s);
    aggregates::run(s);
    enums::run(s);
    control::run(s);
    iterators::run(s);
    generics::run(s);
    closures::run(s);
    library::run(s);
    regressions::run(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In the dev profile an overflow or a bad index panics, so this proves
    /// every case total over the whole input set (on the CPU; the GPU runs
    /// the same code).
    #[test]
    fn every_case_runs_on_the_cpu_without_panicking() {
        let mut suite = Suite::cpu_only();
        run_all(&mut suite);
        assert!(
            suite.cpu_only_cases() >= 80,
            "only {} cases",
            suite.cpu_only_cases()
        );
    }
}
