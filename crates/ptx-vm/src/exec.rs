//! The interpreter: runs one thread until it blocks, exits, faults or uses
//! up its quantum.
//!
//! It owns a thread's state ([`Thread`]: its stack of register frames,
//! parameter areas and local memory, its program counter and carry flag),
//! the dispatch of every [`Op`] except the collectives (which the scheduler
//! performs once all participants arrive), memory accesses in every space,
//! calls and returns (including `vprintf`, handed to the embedder), and
//! special registers.

use crate::float::{self, NumTy};
use crate::int;
use crate::launch::Ctx;
use crate::memory::{
    self, buf_load, buf_store, classify, GenericKind, LOCAL_WINDOW, SHARED_RANK_SHIFT,
    SHARED_WINDOW,
};
use crate::program::*;

/// Frames deeper than this fault (runaway recursion). With the two limits
/// below, a thread's stack stays under a megabyte, so a kernel recursing
/// without end fails instead of exhausting the host's memory.
const MAX_CALL_DEPTH: usize = 1024;
/// A thread's local memory (its stack of `__local_depot` frames) may not grow
/// beyond this (the GPU's own per-thread stack limit is far smaller).
const MAX_LOCAL_BYTES: usize = 512 << 10;
/// Nor may its stack of register frames, in slots.
const MAX_REGISTER_SLOTS: usize = 32 << 10;

/// A caller's state, saved by `call`.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    func: u32,
    ret_pc: u32,
    base: u32,
    pbase: u32,
    lbase: u32,
    ltop: u32,
    site: u32,
}

/// What a thread is doing, as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadState {
    Runnable,
    /// Waiting at the collective its `pc` points at.
    Blocked,
    Exited,
}

/// One GPU thread.
#[derive(Debug)]
pub(crate) struct Thread {
    pub tid: [u32; 3],
    /// Linear index in the block.
    pub linear: u32,
    pub func: u32,
    pub pc: u32,
    base: u32,
    pbase: u32,
    lbase: u32,
    ltop: u32,
    pub regs: Vec<u64>,
    params: Vec<u8>,
    pub local: Vec<u8>,
    frames: Vec<Frame>,
    carry: bool,
    pub state: ThreadState,
    /// Instructions executed (also `%clock`).
    pub executed: u64,
    /// `barrier.cluster.arrive`: the cluster phase this thread arrived in,
    /// plus one (0: not arrived).
    pub cluster_arrival: u64,
}

impl Thread {
    /// A fresh thread at the start of `kernel`.
    pub(crate) fn new(ctx: &Ctx, tid: [u32; 3], linear: u32) -> Thread {
        let f = &ctx.module.functions[ctx.kernel as usize];
        let local = vec![0; f.local_size as usize];
        Thread {
            tid,
            linear,
            func: ctx.kernel,
            pc: 0,
            base: 0,
            pbase: 0,
            lbase: 0,
            ltop: f.local_size,
            regs: f.consts.clone(),
            params: vec![0; f.param_size as usize],
            local,
            frames: Vec::new(),
            carry: false,
            state: ThreadState::Runnable,
            executed: 0,
            cluster_arrival: 0,
        }
    }

    /// Reuses this thread's allocations for a fresh thread.
    pub(crate) fn reset(&mut self, ctx: &Ctx, tid: [u32; 3], linear: u32) {
        let f = &ctx.module.functions[ctx.kernel as usize];
        self.tid = tid;
        self.linear = linear;
        self.func = ctx.kernel;
        self.pc = 0;
        self.base = 0;
        self.pbase = 0;
        self.lbase = 0;
        self.ltop = f.local_size;
        self.regs.clear();
        self.regs.extend_from_slice(&f.consts);
        self.params.clear();
        self.params.resize(f.param_size as usize, 0);
        self.local.clear();
        self.local.resize(f.local_size as usize, 0);
        self.frames.clear();
        self.carry = false;
        self.state = ThreadState::Runnable;
        self.executed = 0;
        self.cluster_arrival = 0;
    }

    /// The value of slot `s` of the current frame.
    #[inline]
    pub(crate) fn reg(&self, s: Slot) -> u64 {
        self.regs[self.base as usize + s as usize]
    }

    /// Writes slot `s` of the current frame.
    #[inline]
    pub(crate) fn set_reg(&mut self, s: Slot, v: u64) {
        let b = self.base as usize;
        self.regs[b + s as usize] = v;
    }

    /// The call depth (0 in the kernel itself).
    pub(crate) fn depth(&self) -> usize {
        self.frames.len()
    }

    pub(crate) fn local_top(&self) -> u32 {
        self.ltop
    }
}

/// The block a thread belongs to, as the interpreter needs it.
pub(crate) struct BlockInfo {
    pub ctaid: [u32; 3],
    /// Rank in the cluster, and the cluster's coordinates.
    pub rank: u32,
    pub cluster_ctaid: [u32; 3],
    pub clusterid: [u32; 3],
    pub smid: u32,
}

/// Why `run` returned.
#[derive(Debug)]
pub(crate) enum Stop {
    Quantum,
    Yield,
    Exited,
    /// At `Op::Collective { index }` (the pc still points at it).
    Collective(u32),
    Error(ExecError),
}

/// An execution error; the thread's pc points at the instruction.
#[derive(Debug)]
pub(crate) enum ExecError {
    Mem {
        addr: u64,
        size: u32,
        space: MemSpace,
        write: bool,
    },
    Misaligned {
        addr: u64,
        size: u32,
        space: MemSpace,
    },
    Trap,
    Unsupported(u32),
    Other(String),
}

type R<T> = Result<T, ExecError>;

/// The memory a thread can reach besides global memory.
pub(crate) struct MemView<'a> {
    pub shared: &'a mut [Vec<u8>],
    pub rank: usize,
}

fn shared_target(view: &MemView, sa: u64) -> Option<(usize, u64)> {
    let tag = sa >> SHARED_RANK_SHIFT;
    if tag == 0 {
        Some((view.rank, sa))
    } else {
        let r = usize::try_from(tag - 1).ok()?;
        (r < view.shared.len()).then_some((r, sa & memory::mask_rank()))
    }
}

#[inline]
fn check_align(addr: u64, size: u32, space: MemSpace) -> R<()> {
    if addr & (size as u64 - 1) != 0 {
        Err(ExecError::Misaligned { addr, size, space })
    } else {
        Ok(())
    }
}

/// Loads `size` bytes (aligned already checked by the caller).
#[inline]
#[allow(clippy::too_many_arguments)] // the access's operands
pub(crate) fn load(
    ctx: &Ctx,
    view: &MemView,
    local: &[u8],
    ltop: u32,
    space: MemSpace,
    addr: u64,
    size: u8,
    order: Order,
) -> R<u64> {
    let err = || ExecError::Mem {
        addr,
        size: size as u32,
        space,
        write: false,
    };
    match space {
        MemSpace::Global | MemSpace::Const | MemSpace::KernelParam => {
            if !ctx.regions.readable(addr, size as u64) {
                return Err(err());
            }
            // SAFETY: inside a region valid for the launch, and aligned.
            Ok(unsafe { memory::host_load(addr, size, order) })
        }
        MemSpace::Shared | MemSpace::SharedCluster => {
            let (r, off) = shared_target(view, addr).ok_or_else(err)?;
            buf_load(&view.shared[r], off, size).ok_or_else(err)
        }
        MemSpace::Local => {
            if addr + size as u64 > ltop as u64 {
                return Err(err());
            }
            buf_load(local, addr, size).ok_or_else(err)
        }
        MemSpace::Generic => match classify(addr) {
            GenericKind::Global => {
                load(ctx, view, local, ltop, MemSpace::Global, addr, size, order).map_err(|_| err())
            }
            GenericKind::Shared(sa) => {
                load(ctx, view, local, ltop, MemSpace::Shared, sa, size, order).map_err(|_| err())
            }
            GenericKind::Local(la) => {
                load(ctx, view, local, ltop, MemSpace::Local, la, size, order).map_err(|_| err())
            }
        },
    }
}

/// Stores `size` bytes (alignment already checked by the caller).
#[inline]
#[allow(clippy::too_many_arguments)] // the access's operands
pub(crate) fn store(
    ctx: &Ctx,
    view: &mut MemView,
    local: &mut [u8],
    ltop: u32,
    space: MemSpace,
    addr: u64,
    size: u8,
    value: u64,
    order: Order,
) -> R<()> {
    let err = || ExecError::Mem {
        addr,
        size: size as u32,
        space,
        write: true,
    };
    match space {
        MemSpace::Global => {
            if !ctx.regions.writable(addr, size as u64) {
                return Err(err());
            }
            // SAFETY: inside a writable region valid for the launch, and aligned.
            unsafe { memory::host_store(addr, size, value, order) };
            Ok(())
        }
        MemSpace::Const | MemSpace::KernelParam => Err(err()),
        MemSpace::Shared | MemSpace::SharedCluster => {
            let (r, off) = shared_target(view, addr).ok_or_else(err)?;
            buf_store(&mut view.shared[r], off, size, value)
                .then_some(())
                .ok_or_else(err)
        }
        MemSpace::Local => {
            if addr + size as u64 > ltop as u64 {
                return Err(err());
            }
            buf_store(local, addr, size, value)
                .then_some(())
                .ok_or_else(err)
        }
        MemSpace::Generic => match classify(addr) {
            GenericKind::Global => store(
                ctx,
                view,
                local,
                ltop,
                MemSpace::Global,
                addr,
                size,
                value,
                order,
            )
            .map_err(|_| err()),
            GenericKind::Shared(sa) => store(
                ctx,
                view,
                local,
                ltop,
                MemSpace::Shared,
                sa,
                size,
                value,
                order,
            )
            .map_err(|_| err()),
            GenericKind::Local(la) => store(
                ctx,
                view,
                local,
                ltop,
                MemSpace::Local,
                la,
                size,
                value,
                order,
            )
            .map_err(|_| err()),
        },
    }
}

/// The new value of an atomic, or `None` to leave memory as it is.
fn atom_apply(op: AtomOp, size: u8, old: u64, b: u64, c: u64) -> Option<u64> {
    let bits = size as u32 * 8;
    let m = mask(bits);
    let f32_of = |x: u64| f32::from_bits(x as u32);
    let ftz32 = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    Some(match op {
        AtomOp::Add => old.wrapping_add(b) & m,
        AtomOp::And => old & b,
        AtomOp::Or => old | b,
        AtomOp::Xor => old ^ b,
        AtomOp::Exch => b & m,
        AtomOp::Cas => {
            if old & m == b & m {
                c & m
            } else {
                return None;
            }
        }
        AtomOp::MinU => old.min(b & m),
        AtomOp::MaxU => old.max(b & m),
        AtomOp::MinS => int::sext(old, bits).min(int::sext(b, bits)) as u64 & m,
        AtomOp::MaxS => int::sext(old, bits).max(int::sext(b, bits)) as u64 & m,
        AtomOp::Inc => {
            if old >= b & m {
                0
            } else {
                old + 1
            }
        }
        AtomOp::Dec => {
            if old == 0 || old > b & m {
                b & m
            } else {
                old - 1
            }
        }
        // atom.add.f32 rounds to nearest even and flushes subnormal inputs
        // and results to zero.
        AtomOp::AddF32 => {
            let r = ftz32(ftz32(f32_of(old)) + ftz32(f32_of(b)));
            if r.is_nan() {
                float::F32.nan()
            } else {
                r.to_bits() as u64
            }
        }
        AtomOp::AddF64 => {
            let r = f64::from_bits(old) + f64::from_bits(b);
            if r.is_nan() {
                float::F64.nan()
            } else {
                r.to_bits()
            }
        }
        AtomOp::MinF32 => {
            float::float_op(FOp::Min, FTy::F32, Rnd::Default, false, false, old, b, 0)
        }
        AtomOp::MaxF32 => {
            float::float_op(FOp::Max, FTy::F32, Rnd::Default, false, false, old, b, 0)
        }
        AtomOp::AddF16 => float::float_op(FOp::Add, FTy::F16, Rnd::Rn, false, false, old, b, 0),
        AtomOp::AddBF16 => float::float_op(FOp::Add, FTy::BF16, Rnd::Rn, false, false, old, b, 0),
        AtomOp::AddF16x2 => float::float_op(FOp::Add, FTy::F16x2, Rnd::Rn, false, false, old, b, 0),
        AtomOp::AddBF16x2 => {
            float::float_op(FOp::Add, FTy::BF16x2, Rnd::Rn, false, false, old, b, 0)
        }
    })
}

#[allow(clippy::too_many_arguments)] // the instruction's operands
fn atomic(
    ctx: &Ctx,
    view: &mut MemView,
    local: &mut [u8],
    ltop: u32,
    space: MemSpace,
    op: AtomOp,
    order: Order,
    size: u8,
    addr: u64,
    b: u64,
    c: u64,
) -> R<u64> {
    check_align(addr, size as u32, space)?;
    let (space, a) = match space {
        MemSpace::Generic => match classify(addr) {
            GenericKind::Global => (MemSpace::Global, addr),
            GenericKind::Shared(sa) => (MemSpace::Shared, sa),
            GenericKind::Local(la) => (MemSpace::Local, la),
        },
        s => (s, addr),
    };
    match space {
        MemSpace::Global => {
            if !ctx.regions.writable(a, size as u64) {
                return Err(ExecError::Mem {
                    addr,
                    size: size as u32,
                    space,
                    write: true,
                });
            }
            if order == Order::SeqCst {
                std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            }
            // SAFETY: inside a writable region valid for the launch, and aligned.
            Ok(unsafe { memory::host_rmw(a, size, order, |old| atom_apply(op, size, old, b, c)) })
        }
        _ => {
            // Shared and local memory belong to threads this host thread
            // runs one at a time: a plain read-modify-write is atomic.
            let old = load(ctx, view, local, ltop, space, a, size, order)?;
            if let Some(new) = atom_apply(op, size, old, b, c) {
                store(ctx, view, local, ltop, space, a, size, new, order)?;
            }
            Ok(old)
        }
    }
}

fn num_ty(t: CvtTy) -> NumTy {
    match t {
        CvtTy::U(b) => NumTy::Int {
            bits: b,
            signed: false,
        },
        CvtTy::S(b) => NumTy::Int {
            bits: b,
            signed: true,
        },
        CvtTy::F16 => NumTy::Float(float::F16),
        CvtTy::BF16 => NumTy::Float(float::BF16),
        CvtTy::TF32 => NumTy::Tf32,
        CvtTy::F32 | CvtTy::F16x2 | CvtTy::BF16x2 => NumTy::Float(float::F32),
        CvtTy::F64 => NumTy::Float(float::F64),
        // Handled by the FP8 arms of `cvt`, which never ask.
        CvtTy::E4M3x2 | CvtTy::E5M2x2 => NumTy::Int {
            bits: 16,
            signed: false,
        },
    }
}

/// The FP8 format of a `cvt` type.
fn fp8(t: CvtTy) -> float::Fp8 {
    if t == CvtTy::E4M3x2 {
        float::Fp8::E4M3
    } else {
        float::Fp8::E5M2
    }
}

/// A special register; `clock` is the thread's instruction count.
fn special(ctx: &Ctx, blk: &BlockInfo, th: &Thread, reg: SpecialReg, clock: u64) -> u64 {
    let lane = (th.linear % 32) as u64;
    let c = |v: [u32; 3], i: u8| v[i as usize] as u64;
    match reg {
        SpecialReg::Tid(i) => c(th.tid, i),
        SpecialReg::Ntid(i) => c(ctx.block, i),
        SpecialReg::Ctaid(i) => c(blk.ctaid, i),
        SpecialReg::Nctaid(i) => c(ctx.grid, i),
        SpecialReg::Laneid => lane,
        SpecialReg::Warpid => (th.linear / 32) as u64,
        SpecialReg::Nwarpid => 64,
        SpecialReg::Smid => blk.smid as u64,
        SpecialReg::Nsmid => ctx.workers as u64,
        SpecialReg::Gridid => 1,
        SpecialReg::Clock => clock & 0xffff_ffff,
        SpecialReg::ClockHi => clock >> 32,
        SpecialReg::Clock64 => clock,
        SpecialReg::Globaltimer => ctx.env.globaltimer(),
        SpecialReg::GlobaltimerLo => ctx.env.globaltimer() & 0xffff_ffff,
        SpecialReg::GlobaltimerHi => ctx.env.globaltimer() >> 32,
        SpecialReg::LanemaskEq => 1 << lane,
        SpecialReg::LanemaskLt => (1 << lane) - 1,
        SpecialReg::LanemaskLe => (2u64 << lane) - 1,
        SpecialReg::LanemaskGt => !((2u64 << lane) - 1) & 0xffff_ffff,
        SpecialReg::LanemaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
        SpecialReg::DynamicSmemSize => ctx.dynamic_shared as u64,
        SpecialReg::TotalSmemSize => ctx.shared_bytes as u64,
        SpecialReg::ClusterCtaid(i) => c(blk.cluster_ctaid, i),
        SpecialReg::ClusterNctaid(i) => c(ctx.cluster, i),
        SpecialReg::ClusterCtarank => blk.rank as u64,
        SpecialReg::ClusterNctarank => (ctx.cluster[0] * ctx.cluster[1] * ctx.cluster[2]) as u64,
        SpecialReg::Clusterid(i) => c(blk.clusterid, i),
        SpecialReg::Nclusterid(i) => c(ctx.grid, i) / c(ctx.cluster, i).max(1),
        SpecialReg::IsExplicitCluster => ctx.explicit_cluster as u64,
    }
}

/// Reads a NUL-terminated string at a generic address (at most 64 KiB).
fn read_cstr(ctx: &Ctx, view: &MemView, local: &[u8], ltop: u32, addr: u64) -> R<Vec<u8>> {
    let mut out = Vec::new();
    let mut a = addr;
    loop {
        let b = load(
            ctx,
            view,
            local,
            ltop,
            MemSpace::Generic,
            a,
            1,
            Order::Relaxed,
        )? as u8;
        if b == 0 || out.len() >= 1 << 16 {
            return Ok(out);
        }
        out.push(b);
        a += 1;
    }
}

/// The host pointer behind a generic address (valid while the VM does not
/// touch the thread or its block), or null.
fn host_pointer(view: &MemView, local: &[u8], addr: u64) -> u64 {
    if addr == 0 {
        return 0;
    }
    let p = match classify(addr) {
        GenericKind::Global => return addr,
        GenericKind::Local(la) => local.get(la as usize..).map(|s| s.as_ptr()),
        GenericKind::Shared(sa) => shared_target(view, sa)
            .and_then(|(r, off)| view.shared[r].get(off as usize..))
            .map(|s| s.as_ptr()),
    };
    p.map_or(0, |p| p as u64)
}

/// A copy of `vprintf`'s argument buffer for the embedder, with every `%s`
/// as a host pointer (see `vprintf.rs`).
fn printf_arguments(
    ctx: &Ctx,
    view: &MemView,
    local: &[u8],
    ltop: u32,
    format: &[u8],
    addr: u64,
) -> R<Vec<u64>> {
    let args = crate::vprintf::arguments(format);
    let (offsets, len) = crate::vprintf::layout(&args);
    let mut buf = vec![0u64; len.div_ceil(8).max(1)];
    for (a, &off) in args.iter().zip(&offsets) {
        check_align(addr + off as u64, a.size as u32, MemSpace::Generic)?;
        let mut v = load(
            ctx,
            view,
            local,
            ltop,
            MemSpace::Generic,
            addr + off as u64,
            a.size,
            Order::Relaxed,
        )?;
        if a.string {
            v = host_pointer(view, local, v);
        }
        let word = &mut buf[off / 8];
        let shift = 8 * (off % 8);
        *word |= (v & mask(8 * a.size as u32)) << shift;
    }
    Ok(buf)
}

#[allow(clippy::too_many_arguments)] // the instruction's operands
fn mbarrier(
    ctx: &Ctx,
    view: &mut MemView,
    th: &mut Thread,
    op: MbarOp,
    d: Slot,
    addr: Slot,
    off: i64,
    b: Slot,
    space: MemSpace,
) -> R<()> {
    // The 64-bit object: bits 0..20 pending arrivals, 20..40 expected
    // arrivals, 40..61 pending transaction bytes (signed), bit 63 the phase.
    const M20: u64 = (1 << 20) - 1;
    const M21: u64 = (1 << 21) - 1;
    let pack = |pending: u64, expected: u64, tx: i64, phase: u64| {
        (pending & M20) | (expected & M20) << 20 | ((tx as u64) & M21) << 40 | phase << 63
    };
    let unpack = |v: u64| {
        (
            v & M20,
            (v >> 20) & M20,
            int::sext((v >> 40) & M21, 21),
            v >> 63,
        )
    };
    if op == MbarOp::PendingCount {
        let state = th.reg(b);
        th.set_reg(d, state & M20);
        return Ok(());
    }
    let a = th.reg(addr).wrapping_add(off as u64);
    check_align(a, 8, space)?;
    let ltop = th.ltop;
    let arg = th.reg(b);
    let cur = load(ctx, view, &th.local, ltop, space, a, 8, Order::Relaxed)?;
    let (mut pending, expected, mut tx, mut phase) = unpack(cur);
    let complete = |pending: &mut u64, tx: &mut i64, phase: &mut u64| {
        if *pending == 0 && *tx == 0 {
            *phase ^= 1;
            *pending = expected;
        }
    };
    match op {
        MbarOp::Init => {
            let count = arg & M20;
            store(
                ctx,
                view,
                &mut th.local,
                ltop,
                space,
                a,
                8,
                pack(count, count, 0, 0),
                Order::Relaxed,
            )?;
        }
        MbarOp::Inval => store(
            ctx,
            view,
            &mut th.local,
            ltop,
            space,
            a,
            8,
            0,
            Order::Relaxed,
        )?,
        MbarOp::Arrive | MbarOp::ArriveNoComplete | MbarOp::ArriveExpectTx => {
            let state = cur;
            let count = if op == MbarOp::ArriveExpectTx {
                tx += arg as u32 as i64;
                1
            } else {
                arg & M20
            };
            pending = pending.saturating_sub(count);
            if op != MbarOp::ArriveNoComplete {
                complete(&mut pending, &mut tx, &mut phase);
            }
            store(
                ctx,
                view,
                &mut th.local,
                ltop,
                space,
                a,
                8,
                pack(pending, expected, tx, phase),
                Order::Relaxed,
            )?;
            // The state token: the phase the arrival belonged to.
            th.set_reg(d, state & (1 << 63));
        }
        MbarOp::ExpectTx | MbarOp::CompleteTx => {
            if op == MbarOp::ExpectTx {
                tx += arg as u32 as i64;
            } else {
                tx -= arg as u32 as i64;
                complete(&mut pending, &mut tx, &mut phase);
            }
            store(
                ctx,
                view,
                &mut th.local,
                ltop,
                space,
                a,
                8,
                pack(pending, expected, tx, phase),
                Order::Relaxed,
            )?;
        }
        MbarOp::TestWait => {
            // Complete once the phase the token came from is over.
            th.set_reg(d, ((arg >> 63) != phase) as u64);
        }
        MbarOp::TestWaitParity => {
            th.set_reg(d, ((arg & 1) != phase) as u64);
        }
        MbarOp::PendingCount => {}
    }
    Ok(())
}

#[inline(always)]
#[allow(clippy::too_many_arguments)] // the instruction's operands
fn float_fast(op: FOp, ty: FTy, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    if !ftz && !sat && matches!(rnd, Rnd::Default | Rnd::Rn) {
        match ty {
            FTy::F32 => {
                let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
                let r = match op {
                    FOp::Add => Some(x + y),
                    FOp::Sub => Some(x - y),
                    FOp::Mul => Some(x * y),
                    FOp::Fma => Some(x.mul_add(y, f32::from_bits(c as u32))),
                    _ => None,
                };
                if let Some(r) = r {
                    return if r.is_nan() {
                        float::F32.nan()
                    } else {
                        r.to_bits() as u64
                    };
                }
            }
            FTy::F64 => {
                let (x, y) = (f64::from_bits(a), f64::from_bits(b));
                let r = match op {
                    FOp::Add => Some(x + y),
                    FOp::Sub => Some(x - y),
                    FOp::Mul => Some(x * y),
                    FOp::Fma => Some(x.mul_add(y, f64::from_bits(c))),
                    _ => None,
                };
                if let Some(r) = r {
                    return if r.is_nan() {
                        float::F64.nan()
                    } else {
                        r.to_bits()
                    };
                }
            }
            _ => {}
        }
    }
    float::float_op(op, ty, rnd, ftz, sat, a, b, c)
}

/// Runs `th` for at most `budget` instructions.
pub(crate) fn run(
    ctx: &Ctx,
    blk: &BlockInfo,
    th: &mut Thread,
    view: &mut MemView,
    budget: u32,
) -> Stop {
    let module = ctx.module;
    let mut left = budget;
    let stop = 'outer: loop {
        let f = &module.functions[th.func as usize];
        let code = &f.code[..];
        let base = th.base as usize;
        let nslots = f.num_slots as usize;
        let mut pc = th.pc as usize;
        // The frame is `th.regs[base .. base + nslots]`: every frame is
        // created with at least that many registers (`Thread::new`,
        // `Thread::reset`, `Op::Call`), and the decoder checked that every
        // slot of every instruction is below `nslots`.
        assert!(th.regs.len() >= base + nslots);
        macro_rules! r {
            ($s:expr) => {{
                let i = base + $s as usize;
                debug_assert!(i < th.regs.len());
                // SAFETY: `$s < nslots` (checked when decoding) and the frame
                // has `nslots` registers (asserted above).
                unsafe { *th.regs.get_unchecked(i) }
            }};
        }
        macro_rules! w {
            ($s:expr, $v:expr) => {{
                let v = $v;
                let i = base + $s as usize;
                debug_assert!(i < th.regs.len());
                // SAFETY: as for `r!`.
                unsafe { *th.regs.get_unchecked_mut(i) = v };
            }};
        }
        macro_rules! fail {
            ($e:expr) => {{
                th.pc = pc as u32;
                break 'outer Stop::Error($e);
            }};
        }
        macro_rules! tryx {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => fail!(e),
                }
            };
        }
        loop {
            if left == 0 {
                th.pc = pc as u32;
                break 'outer Stop::Quantum;
            }
            left -= 1;
            let inst = &code[pc];
            if (r!(inst.guard) != 0) == inst.guard_neg {
                pc += 1;
                continue;
            }
            match inst.op {
                Op::Nop => {}
                Op::Mov { d, a, mask } => w!(d, r!(a) & mask),
                Op::Add { d, a, b, mask } => w!(d, r!(a).wrapping_add(r!(b)) & mask),
                Op::Sub { d, a, b, mask } => w!(d, r!(a).wrapping_sub(r!(b)) & mask),
                Op::MulLo { d, a, b, mask } => w!(d, r!(a).wrapping_mul(r!(b)) & mask),
                Op::And { d, a, b } => w!(d, r!(a) & r!(b)),
                Op::Or { d, a, b } => w!(d, r!(a) | r!(b)),
                Op::Xor { d, a, b } => w!(d, r!(a) ^ r!(b)),
                Op::Not { d, a, mask } => w!(d, !r!(a) & mask),
                Op::Shl { d, a, b, bits } => w!(d, int::shl(r!(a), r!(b), bits as u32)),
                Op::ShrU { d, a, b, bits } => w!(d, int::shr_u(r!(a), r!(b), bits as u32)),
                Op::ShrS { d, a, b, bits } => w!(d, int::shr_s(r!(a), r!(b), bits as u32)),
                Op::Int { op, bits, d, a, b } => w!(d, int::int_op(op, bits as u32, r!(a), r!(b))),
                Op::IntUn { op, bits, d, a } => w!(d, int::int_un(op, bits as u32, r!(a))),
                Op::MulWide {
                    d,
                    a,
                    b,
                    bits,
                    signed,
                } => w!(d, int::mul_wide(r!(a), r!(b), bits as u32, signed)),
                Op::Mad {
                    kind,
                    bits,
                    signed,
                    sat,
                    d,
                    a,
                    b,
                    c,
                } => w!(
                    d,
                    int::mad(kind, bits as u32, signed, sat, r!(a), r!(b), r!(c))
                ),
                Op::Carry {
                    op,
                    bits,
                    signed,
                    cin,
                    cout,
                    d,
                    a,
                    b,
                    c,
                } => {
                    let bits = bits as u32;
                    let m = mask(bits);
                    let cf = (cin && th.carry) as u128;
                    let (x, y) = (r!(a) as u128 & m as u128, r!(b) as u128 & m as u128);
                    let (res, carry) = match op {
                        CarryOp::Add => {
                            let s = x + y + cf;
                            (s as u64 & m, s >> bits != 0)
                        }
                        CarryOp::Sub => {
                            let s = x.wrapping_sub(y).wrapping_sub(cf);
                            (s as u64 & m, x < y + cf)
                        }
                        CarryOp::MadLo | CarryOp::MadHi => {
                            let p = if op == CarryOp::MadLo {
                                (r!(a).wrapping_mul(r!(b)) & m) as u128
                            } else {
                                let hi = if signed { IntOp::MulHiS } else { IntOp::MulHiU };
                                int::int_op(hi, bits, r!(a), r!(b)) as u128
                            };
                            let s = p + (r!(c) as u128 & m as u128) + cf;
                            (s as u64 & m, s >> bits != 0)
                        }
                    };
                    if cout {
                        th.carry = carry;
                    }
                    w!(d, res);
                }
                Op::Bfe {
                    d,
                    a,
                    b,
                    c,
                    bits,
                    signed,
                } => w!(d, int::bfe(r!(a), r!(b), r!(c), bits as u32, signed)),
                Op::Bfi {
                    d,
                    a,
                    b,
                    c,
                    e,
                    bits,
                } => w!(d, int::bfi(r!(a), r!(b), r!(c), r!(e), bits as u32)),
                Op::Prmt { d, a, b, c, mode } => w!(d, int::prmt(r!(a), r!(b), r!(c), mode)),
                Op::Shf {
                    d,
                    a,
                    b,
                    c,
                    left: l,
                    wrap,
                } => w!(d, int::shf(r!(a), r!(b), r!(c), l, wrap)),
                Op::Fns { d, a, b, c } => w!(d, int::fns(r!(a), r!(b), r!(c))),
                Op::Lop3 { d, a, b, c, lut } => w!(d, int::lop3(r!(a), r!(b), r!(c), lut)),
                Op::Sad {
                    d,
                    a,
                    b,
                    c,
                    bits,
                    signed,
                } => w!(d, int::sad(r!(a), r!(b), r!(c), bits as u32, signed)),
                Op::Dp {
                    d,
                    a,
                    b,
                    c,
                    a_signed,
                    b_signed,
                    dp2a_hi,
                } => w!(d, int::dp(r!(a), r!(b), r!(c), a_signed, b_signed, dp2a_hi)),
                Op::Setp {
                    cmp,
                    ty,
                    d,
                    d2,
                    a,
                    b,
                    bop,
                    c,
                    c_neg,
                } => {
                    let t = match ty {
                        CmpTy::U(bits) => int::int_cmp(cmp, false, bits as u32, r!(a), r!(b)),
                        CmpTy::S(bits) => int::int_cmp(cmp, true, bits as u32, r!(a), r!(b)),
                        CmpTy::F32 => float::float_cmp(cmp, FTy::F32, false, r!(a), r!(b)),
                        CmpTy::F32Ftz => float::float_cmp(cmp, FTy::F32, true, r!(a), r!(b)),
                        CmpTy::F64 => float::float_cmp(cmp, FTy::F64, false, r!(a), r!(b)),
                        CmpTy::F16 => float::float_cmp(cmp, FTy::F16, false, r!(a), r!(b)),
                        CmpTy::BF16 => float::float_cmp(cmp, FTy::BF16, false, r!(a), r!(b)),
                    };
                    let cv = (r!(c) != 0) != c_neg;
                    let (p, q) = match bop {
                        BoolOp::None => (t, !t),
                        BoolOp::And => (t && cv, !t && cv),
                        BoolOp::Or => (t || cv, !t || cv),
                        BoolOp::Xor => (t ^ cv, !t ^ cv),
                    };
                    w!(d, p as u64);
                    w!(d2, q as u64);
                }
                Op::Set {
                    cmp,
                    ty,
                    dty,
                    d,
                    a,
                    b,
                    bop,
                    c,
                    c_neg,
                } => {
                    let t = match ty {
                        CmpTy::U(bits) => int::int_cmp(cmp, false, bits as u32, r!(a), r!(b)),
                        CmpTy::S(bits) => int::int_cmp(cmp, true, bits as u32, r!(a), r!(b)),
                        CmpTy::F32 => float::float_cmp(cmp, FTy::F32, false, r!(a), r!(b)),
                        CmpTy::F32Ftz => float::float_cmp(cmp, FTy::F32, true, r!(a), r!(b)),
                        CmpTy::F64 => float::float_cmp(cmp, FTy::F64, false, r!(a), r!(b)),
                        CmpTy::F16 => float::float_cmp(cmp, FTy::F16, false, r!(a), r!(b)),
                        CmpTy::BF16 => float::float_cmp(cmp, FTy::BF16, false, r!(a), r!(b)),
                    };
                    let cv = (r!(c) != 0) != c_neg;
                    let v = match bop {
                        BoolOp::None => t,
                        BoolOp::And => t && cv,
                        BoolOp::Or => t || cv,
                        BoolOp::Xor => t ^ cv,
                    };
                    w!(
                        d,
                        match (dty, v) {
                            (SetTy::Int, true) => 0xffff_ffff,
                            (SetTy::F32, true) => 1.0f32.to_bits() as u64,
                            _ => 0,
                        }
                    );
                }
                Op::Selp { d, a, b, c } => w!(d, if r!(c) != 0 { r!(a) } else { r!(b) }),
                Op::Slct {
                    d,
                    a,
                    b,
                    c,
                    float_c,
                    ftz,
                } => {
                    let neg = if float_c {
                        float::float_is_negative(FTy::F32, ftz, r!(c))
                    } else {
                        int::sext(r!(c), 32) < 0
                    };
                    w!(d, if neg { r!(b) } else { r!(a) });
                }
                Op::Float {
                    op,
                    ty,
                    rnd,
                    ftz,
                    sat,
                    d,
                    a,
                    b,
                    c,
                } => w!(d, float_fast(op, ty, rnd, ftz, sat, r!(a), r!(b), r!(c))),
                Op::Cvt {
                    dst,
                    src,
                    rnd,
                    ftz,
                    sat,
                    relu,
                    satfinite,
                    d,
                    a,
                    b,
                } => {
                    let v = match (dst, src) {
                        (CvtTy::U(db), CvtTy::U(sb)) if !sat => r!(a) & mask(db.min(sb) as u32),
                        (CvtTy::U(db) | CvtTy::S(db), CvtTy::S(sb)) if !sat => {
                            int::sext(r!(a), sb as u32) as u64 & mask(db as u32)
                        }
                        (CvtTy::S(db), CvtTy::U(sb)) if !sat => {
                            r!(a) & mask(sb as u32) & mask(db as u32)
                        }
                        (CvtTy::E4M3x2 | CvtTy::E5M2x2, CvtTy::F16x2) => {
                            let x = r!(a);
                            let lane = |h: u64| float::to_fp8(float::F16, h & 0xffff, fp8(dst));
                            lane(x >> 16) << 8 | lane(x)
                        }
                        (CvtTy::E4M3x2 | CvtTy::E5M2x2, _) => {
                            let lane = |f: u64| float::to_fp8(float::F32, f & 0xffff_ffff, fp8(dst));
                            lane(r!(a)) << 8 | lane(r!(b))
                        }
                        (CvtTy::F16x2, CvtTy::E4M3x2 | CvtTy::E5M2x2) => {
                            let x = r!(a);
                            float::fp8_to_f16(x >> 8, fp8(src)) << 16 | float::fp8_to_f16(x, fp8(src))
                        }
                        (CvtTy::F16x2 | CvtTy::BF16x2, _) => {
                            let to = if dst == CvtTy::F16x2 {
                                NumTy::Float(float::F16)
                            } else {
                                NumTy::Float(float::BF16)
                            };
                            let hi = float::convert(
                                to,
                                num_ty(src),
                                rnd,
                                ftz,
                                sat,
                                relu,
                                satfinite,
                                r!(a),
                            );
                            let lo = float::convert(
                                to,
                                num_ty(src),
                                rnd,
                                ftz,
                                sat,
                                relu,
                                satfinite,
                                r!(b),
                            );
                            (hi & 0xffff) << 16 | (lo & 0xffff)
                        }
                        _ => float::convert(
                            num_ty(dst),
                            num_ty(src),
                            rnd,
                            ftz,
                            sat,
                            relu,
                            satfinite,
                            r!(a),
                        ),
                    };
                    w!(d, v);
                }
                Op::Testp { class, ty, d, a } => w!(d, float::float_test(class, ty, r!(a)) as u64),
                Op::Sext { d, a, from, mask } => w!(d, int::sext(r!(a), from as u32) as u64 & mask),
                Op::Pack { d, s, n, bits } => {
                    let mut v = 0u64;
                    for (k, &sk) in s.iter().enumerate().take(n as usize) {
                        v |= (r!(sk) & mask(bits as u32)) << (k as u32 * bits as u32);
                    }
                    w!(d, v);
                }
                Op::Unpack { d, n, bits, a } => {
                    let v = r!(a);
                    for (k, &dk) in d.iter().enumerate().take(n as usize) {
                        w!(dk, (v >> (k as u32 * bits as u32)) & mask(bits as u32));
                    }
                }
                Op::Sreg { d, reg } => {
                    let clock = th.executed + (budget - left) as u64;
                    let v = special(ctx, blk, th, reg, clock);
                    w!(d, v);
                }
                Op::LocalAddr { d, offset } => w!(d, th.lbase as u64 + offset as u64),
                Op::KernelParamAddr { d, offset } => w!(d, ctx.kparams_addr + offset as u64),
                Op::Ld {
                    space,
                    order,
                    size,
                    n,
                    d,
                    addr,
                    off,
                } => {
                    let a = r!(addr).wrapping_add(off as u64);
                    let total = size as u32 * n as u32;
                    tryx!(check_align(a, total, space));
                    for (k, &dk) in d.iter().enumerate().take(n as usize) {
                        let v = tryx!(load(
                            ctx,
                            view,
                            &th.local,
                            th.ltop,
                            space,
                            a + (k * size as usize) as u64,
                            size,
                            order
                        ));
                        w!(dk, v);
                    }
                }
                Op::St {
                    space,
                    order,
                    size,
                    n,
                    s,
                    addr,
                    off,
                } => {
                    let a = r!(addr).wrapping_add(off as u64);
                    let total = size as u32 * n as u32;
                    tryx!(check_align(a, total, space));
                    for (k, &sk) in s.iter().enumerate().take(n as usize) {
                        let v = r!(sk);
                        tryx!(store(
                            ctx,
                            view,
                            &mut th.local,
                            th.ltop,
                            space,
                            a + (k * size as usize) as u64,
                            size,
                            v,
                            order
                        ));
                    }
                }
                Op::LdParam { size, n, d, off } => {
                    for (k, &dk) in d.iter().enumerate().take(n as usize) {
                        let at = th.pbase as u64 + off as u64 + (k * size as usize) as u64;
                        let v = tryx!(buf_load(&th.params, at, size).ok_or(ExecError::Mem {
                            addr: off as u64,
                            size: size as u32,
                            space: MemSpace::KernelParam,
                            write: false
                        }));
                        w!(dk, v);
                    }
                }
                Op::StParam { size, n, s, off } => {
                    for (k, &sk) in s.iter().enumerate().take(n as usize) {
                        let at = th.pbase as u64 + off as u64 + (k * size as usize) as u64;
                        let v = r!(sk);
                        if !buf_store(&mut th.params, at, size, v) {
                            fail!(ExecError::Mem {
                                addr: off as u64,
                                size: size as u32,
                                space: MemSpace::KernelParam,
                                write: true
                            });
                        }
                    }
                }
                Op::LdKernelParam { size, n, d, off } => {
                    for (k, &dk) in d.iter().enumerate().take(n as usize) {
                        let at = off as u64 + (k * size as usize) as u64;
                        let v = tryx!(buf_load(ctx.kparam_bytes(), at, size).ok_or(
                            ExecError::Mem {
                                addr: ctx.kparams_addr + at,
                                size: size as u32,
                                space: MemSpace::KernelParam,
                                write: false
                            }
                        ));
                        w!(dk, v);
                    }
                }
                Op::Atom {
                    space,
                    op,
                    order,
                    size,
                    d,
                    addr,
                    off,
                    b,
                    c,
                } => {
                    let a = r!(addr).wrapping_add(off as u64);
                    let (bv, cv) = (r!(b), r!(c));
                    let old = tryx!(atomic(
                        ctx,
                        view,
                        &mut th.local,
                        th.ltop,
                        space,
                        op,
                        order,
                        size,
                        a,
                        bv,
                        cv
                    ));
                    w!(d, old);
                }
                Op::Cvta {
                    d,
                    a,
                    space,
                    to,
                    bits,
                } => {
                    let v = r!(a);
                    // Offset 0 is a valid shared or local address (the first
                    // variable), so it maps like any other. A generic address
                    // outside the window has no shared or local address: PTX
                    // leaves the conversion undefined, and on the GPU the
                    // round trip does not give it back (a null pointer moved
                    // into the local window and out again is no longer null,
                    // and reading through it faults), so it is an error here.
                    let outside = |name: &str| {
                        ExecError::Other(format!(
                            "cvta.to.{name} of {v:#x}, which is not a {name} address: PTX leaves the result \
                             undefined, and on the GPU the pointer does not come back as it was"
                        ))
                    };
                    let out = match (space, to) {
                        (MemSpace::Shared | MemSpace::SharedCluster, false) => SHARED_WINDOW.wrapping_add(v),
                        (MemSpace::Local, false) => LOCAL_WINDOW.wrapping_add(v),
                        (MemSpace::Shared | MemSpace::SharedCluster, true) => match classify(v) {
                            GenericKind::Shared(offset) => offset,
                            _ => fail!(outside("shared")),
                        },
                        (MemSpace::Local, true) => match classify(v) {
                            GenericKind::Local(offset) => offset,
                            _ => fail!(outside("local")),
                        },
                        _ => v,
                    };
                    w!(d, out & mask(bits as u32));
                }
                Op::Isspacep { d, a, space } => {
                    let v = r!(a);
                    let k = classify(v);
                    let is = match space {
                        MemSpace::Global | MemSpace::Const | MemSpace::KernelParam => {
                            k == GenericKind::Global && ctx.regions.readable(v, 1)
                        }
                        MemSpace::Shared | MemSpace::SharedCluster => {
                            matches!(k, GenericKind::Shared(_))
                        }
                        MemSpace::Local => matches!(k, GenericKind::Local(_)),
                        MemSpace::Generic => true,
                    };
                    w!(d, is as u64);
                }
                Op::Fence { order } => {
                    let o = if order == Order::SeqCst {
                        std::sync::atomic::Ordering::SeqCst
                    } else {
                        std::sync::atomic::Ordering::AcqRel
                    };
                    std::sync::atomic::fence(o);
                }
                Op::CpAsync {
                    dst,
                    dst_off,
                    src,
                    src_off,
                    size,
                    src_size,
                } => {
                    let da = r!(dst).wrapping_add(dst_off as u64);
                    let sa = r!(src).wrapping_add(src_off as u64);
                    let valid = if src_size == SINK_SLOT {
                        size as u64
                    } else {
                        r!(src_size).min(size as u64)
                    };
                    tryx!(check_align(da, size as u32, MemSpace::Shared));
                    tryx!(check_align(sa, size as u32, MemSpace::Global));
                    // Element by element; bytes past `valid` are zero-filled.
                    for k in 0..size as u64 {
                        let v = if k < valid {
                            tryx!(load(
                                ctx,
                                view,
                                &th.local,
                                th.ltop,
                                MemSpace::Global,
                                sa + k,
                                1,
                                Order::Relaxed
                            ))
                        } else {
                            0
                        };
                        tryx!(store(
                            ctx,
                            view,
                            &mut th.local,
                            th.ltop,
                            MemSpace::Shared,
                            da + k,
                            1,
                            v,
                            Order::Relaxed
                        ));
                    }
                }
                Op::Mapa {
                    d,
                    a,
                    rank,
                    generic,
                } => {
                    let v = r!(a);
                    let rk = r!(rank);
                    let nranks = (ctx.cluster[0] * ctx.cluster[1] * ctx.cluster[2]) as u64;
                    if rk >= nranks {
                        fail!(ExecError::Other(format!(
                            "mapa to cluster rank {rk}, but the cluster has {nranks} blocks"
                        )));
                    }
                    let sa = if generic {
                        match classify(v) {
                            GenericKind::Shared(sa) => sa,
                            _ => fail!(ExecError::Other(format!(
                                "mapa of {v:#x}, which is not a shared-memory address"
                            ))),
                        }
                    } else {
                        v
                    };
                    let mapped = ((rk + 1) << SHARED_RANK_SHIFT) | (sa & memory::mask_rank());
                    w!(
                        d,
                        if generic {
                            SHARED_WINDOW + mapped
                        } else {
                            mapped
                        }
                    );
                }
                Op::Getctarank { d, a, generic } => {
                    let v = r!(a);
                    let sa = if generic {
                        match classify(v) {
                            GenericKind::Shared(sa) => sa,
                            _ => fail!(ExecError::Other(format!(
                                "getctarank of {v:#x}, which is not a shared-memory address"
                            ))),
                        }
                    } else {
                        v
                    };
                    let tag = sa >> SHARED_RANK_SHIFT;
                    w!(d, if tag == 0 { blk.rank as u64 } else { tag - 1 });
                }
                Op::Mbarrier {
                    op,
                    d,
                    addr,
                    off,
                    b,
                    space,
                } => {
                    th.pc = pc as u32;
                    tryx!(mbarrier(ctx, view, th, op, d, addr, off, b, space));
                }
                Op::Bra { target } => {
                    pc = target as usize;
                    continue;
                }
                Op::BrxIdx { index, table } => {
                    let t = &f.jump_tables[table as usize];
                    let i = r!(index) as usize;
                    match t.get(i) {
                        Some(&target) => {
                            pc = target as usize;
                            continue;
                        }
                        None => fail!(ExecError::Other(format!(
                            "brx.idx index {i} is outside its {}-entry target list",
                            t.len()
                        ))),
                    }
                }
                Op::Call { site } => {
                    let cs = &f.calls[site as usize];
                    let callee = match cs.callee {
                        Callee::Direct(i) => i,
                        Callee::Vprintf => {
                            th.pc = pc as u32;
                            let arg = |k: usize, th: &Thread| {
                                cs.args
                                    .get(k)
                                    .and_then(|&(o, _)| {
                                        buf_load(&th.params, th.pbase as u64 + o as u64, 8)
                                    })
                                    .unwrap_or(0)
                            };
                            let (fmt_addr, args_addr) = (arg(0, th), arg(1, th));
                            let text = tryx!(read_cstr(ctx, view, &th.local, th.ltop, fmt_addr));
                            let args = tryx!(printf_arguments(
                                ctx, view, &th.local, th.ltop, &text, args_addr
                            ));
                            ctx.env.printf(&text, args.as_ptr() as *const u8);
                            // vprintf returns the number of arguments it read.
                            let conversions = crate::vprintf::count(&text);
                            if let Some(&(o, size)) = cs.rets.first() {
                                let at = th.pbase as u64 + o as u64;
                                buf_store(&mut th.params, at, size.min(8) as u8, conversions);
                            }
                            pc += 1;
                            continue;
                        }
                        Callee::SetConditional => {
                            th.pc = pc as u32;
                            let arg = |k: usize, size: u8, th: &Thread| {
                                cs.args
                                    .get(k)
                                    .and_then(|&(o, _)| buf_load(&th.params, th.pbase as u64 + o as u64, size))
                                    .unwrap_or(0)
                            };
                            let (handle, value) = (arg(0, 8, th), arg(1, 4, th) as u32);
                            if let Err(reason) = ctx.env.set_conditional(handle, value) {
                                fail!(ExecError::Other(reason));
                            }
                            pc += 1;
                            continue;
                        }
                        Callee::Indirect(s) => {
                            let p = r!(s);
                            match memory::function_index(p)
                                .filter(|&i| (i as usize) < module.functions.len())
                            {
                                Some(i) if !module.functions[i as usize].is_entry => i,
                                _ => fail!(ExecError::Other(format!(
                                    "call through {p:#x}, which is not a function of this module"
                                ))),
                            }
                        }
                    };
                    let g = &module.functions[callee as usize];
                    if g.is_extern {
                        fail!(ExecError::Other(format!(
                            "call of the external function `{}`, which the VM does not provide",
                            g.name
                        )));
                    }
                    if th.frames.len() >= MAX_CALL_DEPTH {
                        fail!(ExecError::Other(format!(
                            "call stack deeper than {MAX_CALL_DEPTH} frames (runaway recursion?)"
                        )));
                    }
                    let new_base = base + nslots;
                    let new_pbase = th.pbase as usize + f.param_size as usize;
                    let align = g.local_align.max(16) as usize;
                    let new_lbase = (th.ltop as usize).div_ceil(align) * align;
                    let new_ltop = new_lbase + g.local_size as usize;
                    if new_base + g.num_slots as usize > MAX_REGISTER_SLOTS {
                        fail!(ExecError::Other(format!("register frames deeper than {MAX_REGISTER_SLOTS} registers (runaway recursion?)")));
                    }
                    if new_ltop > MAX_LOCAL_BYTES {
                        fail!(ExecError::Other(format!(
                            "local memory (the stack) grew beyond {MAX_LOCAL_BYTES} bytes"
                        )));
                    }
                    if th.regs.len() < new_base + g.num_slots as usize {
                        th.regs.resize(new_base + g.num_slots as usize, 0);
                    }
                    th.regs[new_base..new_base + g.num_slots as usize].copy_from_slice(&g.consts);
                    if th.params.len() < new_pbase + g.param_size as usize {
                        th.params.resize(new_pbase + g.param_size as usize, 0);
                    }
                    for (k, &(off, size)) in cs.args.iter().enumerate() {
                        if let Some(&(goff, gsize)) = g.params.get(k) {
                            let n = size.min(gsize) as usize;
                            let from = th.pbase as usize + off as usize;
                            th.params
                                .copy_within(from..from + n, new_pbase + goff as usize);
                        }
                    }
                    if th.local.len() < new_ltop {
                        th.local.resize(new_ltop, 0);
                    }
                    th.frames.push(Frame {
                        func: th.func,
                        ret_pc: pc as u32 + 1,
                        base: th.base,
                        pbase: th.pbase,
                        lbase: th.lbase,
                        ltop: th.ltop,
                        site,
                    });
                    th.func = callee;
                    th.pc = 0;
                    th.base = new_base as u32;
                    th.pbase = new_pbase as u32;
                    th.lbase = new_lbase as u32;
                    th.ltop = new_ltop as u32;
                    continue 'outer;
                }
                Op::Ret => {
                    let Some(fr) = th.frames.pop() else {
                        th.pc = pc as u32;
                        break 'outer Stop::Exited;
                    };
                    let caller = &module.functions[fr.func as usize];
                    let cs = &caller.calls[fr.site as usize];
                    for (k, &(off, size)) in cs.rets.iter().enumerate() {
                        if let Some(&(goff, gsize)) = f.rets.get(k) {
                            let n = size.min(gsize) as usize;
                            let from = th.pbase as usize + goff as usize;
                            th.params
                                .copy_within(from..from + n, fr.pbase as usize + off as usize);
                        }
                    }
                    th.func = fr.func;
                    th.pc = fr.ret_pc;
                    th.base = fr.base;
                    th.pbase = fr.pbase;
                    th.lbase = fr.lbase;
                    th.ltop = fr.ltop;
                    continue 'outer;
                }
                Op::Exit => {
                    th.pc = pc as u32;
                    break 'outer Stop::Exited;
                }
                Op::Trap => fail!(ExecError::Trap),
                Op::Yield => {
                    th.pc = pc as u32 + 1;
                    break 'outer Stop::Yield;
                }
                Op::Collective { index } => {
                    th.pc = pc as u32;
                    break 'outer Stop::Collective(index);
                }
                Op::Unsupported { index } => fail!(ExecError::Unsupported(index)),
            }
            pc += 1;
        }
    };
    th.executed += (budget - left) as u64;
    stop
}
