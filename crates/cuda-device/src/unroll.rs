//! Loop unrolling hints: [`unroll!`](crate::unroll!) and `#[unroll]`.
//!
//! CUDA C++ writes `#pragma unroll 4` above a loop. Stable Rust has no
//! attribute macros on loops, so oxide has two spellings that work on
//! stable, with one meaning:
//!
//! ```no_run
//! use cuda_device::{kernel, thread, unroll, DisjointSlice};
//!
//! #[kernel]
//! pub fn dot8(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_1d();
//!     let base = idx.get() * 8;
//!     let mut acc = 0.0f32;
//!     // Eight iterations, a constant: unrolled completely.
//!     #[unroll]
//!     for k in 0..8 {
//!         acc += a[base + k] * b[base + k];
//!     }
//!     let mut steps = 0u32;
//!     let mut x = idx.get() as u32;
//!     // A trip count known only at run time: unrolled by 4 (with a
//!     // remainder loop for the last iterations).
//!     unroll!(4, while x > 1 {
//!         x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
//!         steps += 1;
//!     });
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = acc + steps as f32;
//!     }
//! }
//! ```
//!
//! - `unroll!(N, LOOP)` (anywhere in device code) and `#[unroll(N)]` on a
//!   loop of a `#[kernel]` or `#[device]` function: unroll by N. `N = 1`
//!   keeps the loop rolled (`.pragma "nounroll"` for ptxas too).
//! - `unroll!(full, LOOP)` and `#[unroll]`: unroll completely. The trip
//!   count must be a constant once the kernel is optimised (`0..8`, or a
//!   `const` generic), and nothing may leave the loop early (`break`,
//!   `return`, `?`, a `continue` of an outer loop; bounds checks the
//!   optimiser removes are fine); where that fails, the device link fails with an error
//!   at the hint, asking for a count instead: a full unroll that silently
//!   did not happen would be a performance bug nobody sees. LLVM's unroller
//!   also gives up on some loop shapes it cannot count (seen: a `continue`
//!   in a debug build's loop whose values are used after it); the same error
//!   says so, and a count (`unroll!(4, …)`) unrolls such a loop.
//! - LOOP is a `for`, `while` or `loop` loop, with or without a label.
//!
//! The hint changes the code, never the results: the unrolled loop runs the
//! same iterations in the same order. On the host (and in host-code
//! emulation) the hint does nothing. The device linker turns the hint into
//! the loop's `llvm.loop.unroll` metadata, which LLVM's unroller honours
//! (`cargo oxide inspect` shows the unrolled PTX).
