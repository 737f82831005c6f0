//! primitives: every device-wide primitive of `cuda-prims` against the same
//! computation on the CPU, for several element types and sizes (small sizes
//! under the CPU emulator), and the block- and warp-level building blocks
//! called from this program's own kernels.
//!
//! Each group of checks lives in its own module and returns how many checks
//! it ran or the first failure; the program prints PASS/FAIL per group and
//! exits non-zero on any failure.

mod async_graph;
mod building_blocks;
mod inputs;
mod reduce;
mod scan;
mod select;
mod histogram;
mod rle;
mod segmented;
mod sort;

use cuda_core::CudaContext;
use cuda_host::{load_kernel_module, KernelModule};
use std::process::ExitCode;
use std::sync::Arc;

/// One group of checks: its name and the function that runs it.
type Group = (&'static str, fn(&Arc<CudaContext>, &KernelModule, Sizes) -> Result<usize, String>);

/// The sizes a run checks: large ones on a GPU, small ones emulated.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Whether the run is on the CPU emulator.
    pub emulated: bool,
}

/// Every group, in the order they run. Groups are added by the primitives.
const GROUPS: &[Group] = &[
    ("building blocks (warp, block)", building_blocks::run),
    ("reduce", reduce::run),
    ("scan", scan::run),
    ("select, partition", select::run),
    ("radix sort", sort::run),
    ("histogram", histogram::run),
    ("segmented reduce", segmented::run),
    ("run-length encode", rle::run),
    ("in cuda-async operations; captured into a graph and replayed", async_graph::run),
];

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => return cuda_host::report_failure(&e),
    };
    let module = match load_kernel_module(&ctx, "primitives") {
        Ok(module) => module,
        Err(e) => return cuda_host::report_failure(&e),
    };
    let sizes = Sizes { emulated: ctx.backend().is_emulated() };
    let mut failed = 0;
    for (name, run) in GROUPS {
        match run(&ctx, &module, sizes) {
            Ok(checks) => println!("PASS {name}: {checks} checks"),
            Err(why) => {
                println!("FAIL {name}: {why}");
                failed += 1;
            }
        }
    }
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
