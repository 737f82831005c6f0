//! ptx-vm: a virtual machine that runs PTX (the text oxide's device linker
//! embeds in a program) on the CPU.
//!
//! oxide's host-build emulator runs the Rust source of a kernel; this crate
//! runs what the GPU would run: the PTX after the device linker's passes and
//! LLVM's NVPTX instruction selection. It has no dependencies.
//!
//! ```
//! use ptx_vm::{launch, Environment, LaunchDims, LaunchOptions, Module};
//!
//! // c[i] = a[i] + b[i] for i < n.
//! let ptx = r#"
//! .version 8.0
//! .target sm_80
//! .address_size 64
//! .visible .entry add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
//! {
//!     .reg .pred %p<2>;
//!     .reg .b32 %r<6>;
//!     .reg .b64 %rd<8>;
//!     mov.u32 %r1, %ctaid.x;
//!     mov.u32 %r2, %ntid.x;
//!     mov.u32 %r3, %tid.x;
//!     mad.lo.s32 %r4, %r1, %r2, %r3;
//!     ld.param.u32 %r5, [n];
//!     setp.ge.u32 %p1, %r4, %r5;
//!     @%p1 bra DONE;
//!     mul.wide.u32 %rd1, %r4, 4;
//!     ld.param.u64 %rd2, [a];
//!     ld.param.u64 %rd3, [b];
//!     ld.param.u64 %rd4, [c];
//!     add.s64 %rd5, %rd2, %rd1;
//!     add.s64 %rd6, %rd3, %rd1;
//!     add.s64 %rd7, %rd4, %rd1;
//!     ld.global.u32 %r1, [%rd5];
//!     ld.global.u32 %r2, [%rd6];
//!     add.s32 %r3, %r1, %r2;
//!     st.global.u32 [%rd7], %r3;
//! DONE:
//!     ret;
//! }
//! "#;
//! let module = Module::parse(ptx).expect("valid PTX");
//!
//! // Device memory is host memory: the VM may touch only what the
//! // environment declares valid.
//! struct Buffers(Vec<std::ops::Range<u64>>);
//! impl Environment for Buffers {
//!     fn valid_regions(&self) -> Vec<std::ops::Range<u64>> { self.0.clone() }
//!     fn printf(&self, _format: &[u8], _args: *const u8) {}
//! }
//! let n = 1000u32;
//! let a: Vec<u32> = (0..n).collect();
//! let b: Vec<u32> = (0..n).map(|i| 2 * i).collect();
//! let mut c = vec![0u32; n as usize];
//! let range = |v: &[u32]| v.as_ptr() as u64..v.as_ptr() as u64 + 4 * v.len() as u64;
//! let env = Buffers(vec![range(&a), range(&b), range(&c)]);
//!
//! // Parameters as cuLaunchKernel takes them: a pointer to each one's bytes.
//! let (pa, pb, pc) = (a.as_ptr() as u64, b.as_ptr() as u64, c.as_mut_ptr() as u64);
//! let params = [&pa as *const u64 as *const u8, &pb as *const u64 as *const u8, &pc as *const u64 as *const u8, &n as *const u32 as *const u8];
//! let dims = LaunchDims { grid: (4, 1, 1), block: (256, 1, 1), dynamic_shared_bytes: 0 };
//! let stats = launch(&module, "add", dims, &params, &env, &LaunchOptions::default()).expect("the kernel runs");
//! assert!(c.iter().enumerate().all(|(i, &x)| x == 3 * i as u32));
//! assert_eq!(stats.threads, 1024);
//! ```
//!
//! # Layers
//!
//! - [`lexer`] and [`parser`]: PTX text → syntax tree ([`ast`]).
//! - `decode`: syntax tree → [`program`] (flat instructions over register
//!   slots, branch targets as indices), once per module ([`Module`]).
//! - `exec` (the interpreter) over `int`, `float` and `memory`: one thread
//!   at a time.
//! - `collective`: barriers and warp collectives as rendezvous.
//! - `scheduler`: blocks on host threads, rounds, deadlock and timeout.
//! - [`launch`]: the entry point.
//!
//! # Semantics worth knowing
//!
//! - Integer and floating-point results are exact, including every rounding
//!   modifier (`.rz .rm .rp` by a software float, never by changing the
//!   host's rounding mode), `.ftz`, `.sat` and NaN results (the canonical
//!   NaN). The `.approx` instructions (`rcp sqrt rsqrt ex2 lg2 sin cos tanh`,
//!   `div.approx`, `div.full`) use the host's math, within the errors the PTX
//!   ISA documents for them but not bit for bit what the hardware returns.
//! - Integer division by zero returns the GPU's machine-specific values (an
//!   all-ones quotient, the dividend as remainder).
//! - Global memory is host memory; an access outside the embedder's regions
//!   ([`Environment::valid_regions`]) and the module's variables is a
//!   [`Fault::MemoryViolation`]. Shared and local memory are bounds-checked
//!   per block and per thread. Misaligned accesses fault.
//! - Where the PTX ISA leaves a collective undefined, the launch faults with
//!   the reason: lanes of one warp reaching an `.aligned` barrier from two
//!   instructions, and a lane making a warp collective whose member mask
//!   leaves it out.
//! - Generic addresses of shared and local memory live in windows far above
//!   user-space host addresses; `cvta` maps them.
//! - `cp.async` copies at once; `mbarrier` is modelled (without TMA
//!   transactions); `%clock`/`%clock64` count the thread's instructions.
//! - Not implemented (a launch that can reach them fails with
//!   [`Fault::Unsupported`] before running): `wgmma`, the `cp.async.bulk`
//!   copies and tensor prefetches (TMA), `mma`, texture and surface instructions, and anything else the
//!   decoder does not know.
//!
//! # What runs
//!
//! - Module: `.version .target .address_size`, `.visible .extern .weak`,
//!   `.global .const .shared .local .param .reg` (ranges `%r<N>`, vectors,
//!   arrays, initialisers with `generic(sym)` and `sym + offset`), `.func`
//!   and `.entry` with `.maxntid .reqntid .minnctapersm .maxnreg
//!   .explicitcluster .reqnctapercluster .noreturn`, `.pragma`, nested
//!   scopes, `.branchtargets`, `.callprototype`; `.file`, `.loc` and
//!   `.section` (debug information) are skipped.
//! - Integers (8 to 64 bits, signed and unsigned): `add sub` (`.cc .sat`),
//!   `addc subc`, `mul` (`.lo .hi .wide`), `mad` (`.lo .hi .wide .sat .cc`),
//!   `madc`, `mul24 mad24 sad div rem abs neg min max` (also `.u16x2 .s16x2`
//!   for `min max add sub`, and `.relu` for `min max` on `.s32 .s16x2`), `popc clz brev bfind fns bfe bfi prmt` (every
//!   mode), `shf shl shr and or xor not cnot lop3 bmsk szext dp4a dp2a`,
//!   `setp` and `set` (every comparison, `.and .or .xor`, two results),
//!   `selp slct`.
//! - Floats (`f32 f64`, and `f16 bf16 f16x2 bf16x2`): `add sub mul fma mad
//!   div` with `.rn .rz .rm .rp .ftz .sat`, `div.approx div.full`, `min max`
//!   (`.NaN`), `abs neg copysign testp`, `rcp sqrt` (exact and `.approx`),
//!   `rsqrt ex2 lg2 sin cos tanh` (`.approx`), and `cvt` between every pair
//!   of `u8..u64 s8..s64 f16 bf16 tf32 f32 f64` with `.rn .rz .rm .rp .rna
//!   .rni .rzi .rmi .rpi .ftz .sat .relu .satfinite` (and the two-source
//!   `.f16x2 .bf16x2` forms), and FP8 pairs: `cvt.rn.satfinite.e4m3x2` /
//!   `.e5m2x2` from two f32 or an f16x2, `cvt.rn.f16x2.e4m3x2` / `.e5m2x2`.
//! - Memory: `ld ldu st` in every state space and generic (`.v2 .v4`, `.nc`,
//!   `.volatile .relaxed .acquire .release` with scopes, cache hints),
//!   `atom red` (`add and or xor exch cas inc dec min max` on 32/64-bit
//!   integers, `add` on `f32 f64 f16 bf16 f16x2 bf16x2`, `min max` on `f32`,
//!   `cas exch` on 16 bits; `.sem .scope` accepted), `cvta cvta.to isspacep
//!   mapa getctarank fence membar prefetch cp.async.bulk.prefetch.L2` (the
//!   prefetches as no-ops), `cp.async` (with its groups),
//!   `mbarrier` (`init inval arrive expect_tx complete_tx test_wait try_wait
//!   pending_count`).
//! - Control: `bra brx.idx call` (direct, indirect through a prototype,
//!   recursion), `ret exit trap nanosleep`, `vprintf`.
//! - Collectives: `bar barrier` (`.sync .arrive .red.popc/and/or`, ids and
//!   thread counts, `.aligned` or not), `bar.warp.sync`, `shfl.sync`,
//!   `vote.sync`, `match.sync`, `redux.sync` (integers), `activemask`,
//!   `elect.sync`, `ldmatrix stmatrix` (`m8n8 .b16`), `barrier.cluster`;
//!   `setmaxnreg`, `griddepcontrol`, `createpolicy`, `discard`,
//!   `applypriority` change nothing the VM can observe.
//! - Special registers: `%tid %ntid %ctaid %nctaid %laneid %warpid %nwarpid
//!   %smid %nsmid %gridid %clock %clock_hi %clock64 %globaltimer(_lo/_hi)
//!   %lanemask_* %dynamic_smem_size %total_smem_size`, the `%cluster_*`
//!   family, `%clusterid %nclusterid %is_explicit_cluster`.

// A `Fault` carries the kernel, the thread and the instruction so that its
// message can be acted on; launches fail rarely, so its size on the error
// path does not matter.
#![allow(clippy::result_large_err)]

pub mod ast;
mod collective;
mod decode;
mod exec;
mod fault;
mod float;
mod int;
mod launch;
pub mod lexer;
mod memory;
mod module;
pub mod opcodes;
pub mod parser;
pub mod program;
mod scheduler;
mod shared_usage;
mod vprintf;

pub use fault::{Fault, Location, StuckThread, ThreadRef};
pub use launch::{launch, Environment, LaunchDims, LaunchOptions, LaunchStats};
pub use module::{GlobalSymbol, Module};
pub use program::ParamLayout;
pub use shared_usage::static_shared_per_kernel;

/// A PTX text that does not parse: where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PTX line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}
