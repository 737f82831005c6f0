//! Device-wide parallel primitives on [`DeviceBuffer`](cuda_core::DeviceBuffer)s,
//! written in Rust with oxide: what a CUDA C++ programmer takes from CUB.
//!
//! The kernels live in this crate; the device linker compiles them into the
//! program that links it, so they are launched from that program's image
//! (its [`KernelModule`](cuda_host::KernelModule)). Temporary storage is the
//! library's business: each call allocates what it needs on the caller's
//! stream and frees it there, except the small status words of the scans'
//! and selections' look-back, which the stream keeps between calls and
//! frees when it is dropped; on a stream that captures a graph that
//! storage becomes the graph's allocation and free nodes, so the calls are
//! captured and replayed like any other work (those that return a value to
//! the host, such as `reduce`, still break the capture: use their `_into`
//! forms).
//!
//! Device-wide primitives (host calls, one stream):
//! reduce, inclusive and exclusive scan, select and partition (stream
//! compaction), histogram, radix sort, segmented reduce, run-length encode.
//!
//! Building blocks for the user's own kernels (device code): warp- and
//! block-level reduce and scan, block loads and stores in blocked and
//! striped arrangements.
//!
//! # Features
//!
//! - `tuning`: the measurement knobs. The variables `OXIDE_PRIMS_SCAN`,
//!   `OXIDE_PRIMS_SELECT`, `OXIDE_PRIMS_SORT` and `OXIDE_PRIMS_REDUCE`
//!   change tile shapes, rankings and stores for benchmarks, and each such
//!   choice is another instance of a generic kernel. Without the feature (the
//!   default) a program compiles the one instance each call's defaults run,
//!   for each element type and operator it uses, and the variables are
//!   ignored with a warning; with it, every instance a knob can pick (several
//!   times the kernels of each call). The defaults run the same kernels either
//!   way.

// Modules are added by the primitives that implement them.
pub mod block;
mod error;
mod knobs;
pub mod op;
pub mod reduce;
pub mod scan;
pub mod select;
mod temp;
mod tile;
pub mod warp;

pub use error::PrimsError;
pub mod sort;
pub mod histogram;
pub mod segmented;
pub mod rle;
