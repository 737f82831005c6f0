//! conformance: a differential test of oxide against the CPU.
//!
//! Each case is a closure `Fn(u64, u64) -> u128` holding ordinary Rust: integer
//! and float arithmetic, aggregates, enums, control flow, iterators, generics,
//! trait objects, closures, calls into a library's `#[device]` functions. The
//! GPU runs it through the library kernel `conformance_device::run_case` (one
//! PTX entry per case) over every pair of a list of interesting inputs; the CPU
//! runs the very same closure; the results must agree element by element,
//! exactly or within a stated number of ulps.
//!
//! Prints one line per case (`ok    int/u8_wrapping_add`, or `FAIL  …` with
//! the first differing input), a `skip` line for each case the device linker
//! cannot build yet (`cases::known_failures`), then `N passed, M failed`.
//! Exits 0 when nothing failed, 1 otherwise, and 2 (through
//! `cuda_host::report_failure`) on a machine without a GPU.

mod cases;
mod compare;
mod encode;
mod harness;
mod inputs;
mod saxpy;

use harness::Suite;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut suite = match Suite::new() {
        Ok(suite) => suite,
        Err(e) => return cuda_host::report_failure(&*e),
    };
    cases::run_all(&mut suite);
    saxpy::check(&mut suite);
    cases::known_failures::report_skipped();
    let (passed, failed) = suite.tally();
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
