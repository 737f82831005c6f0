//! Inline PTX from a kernel: [`ptx_asm!`](crate::ptx_asm).
//!
//! For the instructions no function of this crate covers, a kernel can write
//! PTX itself, with typed Rust operands. Kernels are compiled by rustc for
//! the host, so Rust's `asm!` cannot carry PTX; `ptx_asm!` is its
//! counterpart, which the device linker turns into NVPTX inline assembly.
//!
//! ```no_run
//! use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
//!
//! #[kernel]
//! pub fn bytes(a: &[u32], b: &[u32], mut out: DisjointSlice<u32>) {
//!     let idx = thread::index_1d();
//!     let i = idx.get();
//!     let (x, y) = (a[i], b[i]);
//!     let picked: u32;
//!     let lane: u32;
//!     let even: bool;
//!     // SAFETY: the PTX reads its operands and writes its outputs only.
//!     unsafe {
//!         ptx_asm!("prmt.b32 {d}, {a}, {b}, 0x5140;", d = out(u32) picked, a = in(u32) x, b = in(u32) y,
//!                  options(pure, nomem));
//!         ptx_asm!("mov.u32 {0}, %laneid;", out(u32) lane, options(pure, nomem));
//!         ptx_asm!("{{ .reg .b32 t; and.b32 t, {v}, 1; setp.eq.u32 {p}, t, 0; }}",
//!                  p = out(bool) even, v = in(u32) x, options(pure, nomem));
//!     }
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = picked ^ lane ^ even as u32;
//!     }
//! }
//! ```
//!
//! # Syntax
//!
//! `ptx_asm!(TEMPLATE, OPERAND, …, options(OPTION, …))`, in an `unsafe`
//! block (the PTX can do anything: the compiler cannot check it).
//!
//! - `TEMPLATE` is a string literal of PTX. `{name}` names an operand by
//!   name, `{N}` by position (counting every operand from 0); `{{` and `}}`
//!   are the braces of a PTX block (`{{ .reg .pred p; … }}` declares
//!   registers of its own). Each use of the macro is one inline asm block.
//! - An operand is `[name =] DIR(TYPE) EXPR`:
//!   - `in(TYPE) value`: a register holding the value;
//!   - `out(TYPE) place`: a register the PTX writes, then stored to the
//!     place (a variable, `let x: u32;` declared before is fine) or `_`;
//!   - `inout(TYPE) place`: read from the place, written back to it;
//!   - `const VALUE`: an integer constant expression, written into the PTX as
//!     a literal (an immediate operand).
//! - `TYPE` is the register's type, which the value must have:
//!
//!   | Rust | PTX register |
//!   | --- | --- |
//!   | `bool` | `.pred` (a predicate: `setp` writes it, `@p` reads it) |
//!   | `u16`, `i16` | `.b16` |
//!   | `u32`, `i32` | `.b32` |
//!   | `u64`, `i64`, `usize`, `isize` | `.b64` |
//!   | `f32` | `.f32` |
//!   | `f64` | `.f64` |
//!   | `*const T`, `*mut T` | `.b64`, a generic address |
//!
//!   Other types (`u8`, `u128`, structs) are a compile error at the type:
//!   widen a byte to `u16` or `u32`, split 128 bits into two `u64`.
//! - Options, as Rust's `asm!` has them: by default the PTX has side
//!   effects and may read and write any memory, so the compiler neither
//!   moves memory accesses across it nor deletes it. `pure`: the outputs
//!   depend on the inputs (and memory) alone, so an unused or repeated block
//!   may be deleted or merged (needs an output). `nomem`: the PTX reads and
//!   writes no memory. `readonly`: it reads memory but writes none.
//!   Whatever the options, the block is *convergent*: the compiler does not
//!   move it into or out of conditional code, so warp collectives (`shfl`,
//!   `vote`) in it see the threads the Rust code says.
//!
//! # Errors
//!
//! A placeholder naming no operand, an operand the template does not use, an
//! unsupported type or direction are compile errors at the macro. The PTX
//! itself is checked by ptxas when the device linker assembles it: an error
//! there is reported at the Rust line of the `ptx_asm!`
//! (`error: ptxas rejected the inline PTX of this ptx_asm!: …`, `--> src/main.rs:12:9`).
//!
//! # Where it runs
//!
//! On the GPU, and on the PTX VM (`cargo oxide run --emulate`, device-code
//! emulation), which runs the instructions it models. Host-code emulation
//! (`--emulate=host`) runs the kernel's Rust and cannot run PTX: a kernel
//! that reaches a `ptx_asm!` fails its launch, saying so.
