//! The decoded program: what the interpreter runs.
//!
//! Each function is decoded once into a flat vector of [`Inst`]. Every
//! operand is a *slot* of the function's register frame: registers,
//! scratch values and immediates alike (immediates and module addresses are
//! constant slots, written when a frame is created), so the interpreter never
//! asks what kind an operand is. Branch targets are instruction indices;
//! call sites, jump tables and warp/block collectives live in side tables so
//! that [`Op`] stays small.
//!
//! Register values are kept *canonical*: a register holds its value
//! zero-extended from the width its defining instruction wrote (1 for a
//! predicate), so readers that need the value as a wider number never see
//! stale upper bits.

/// An index into a frame's slots.
pub type Slot = u32;

/// Slot 0 of every frame holds 1: the guard of unpredicated instructions.
pub const TRUE_SLOT: Slot = 0;
/// Slot 1 is written by results nobody reads (`_`, a missing `|p`).
pub const SINK_SLOT: Slot = 1;

/// The mask of the low `bits` bits.
#[inline(always)]
pub const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Inst {
    pub op: Op,
    /// The guard predicate's slot ([`TRUE_SLOT`] when unguarded).
    pub guard: Slot,
    /// Execute when the guard's value is `!guard_neg` (i.e. `@!%p` sets it).
    pub guard_neg: bool,
}

/// A special register, as `mov.u32 %r, %tid.x` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialReg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    Smid,
    Nsmid,
    Gridid,
    Clock,
    ClockHi,
    Clock64,
    Globaltimer,
    GlobaltimerLo,
    GlobaltimerHi,
    LanemaskEq,
    LanemaskLt,
    LanemaskLe,
    LanemaskGt,
    LanemaskGe,
    DynamicSmemSize,
    TotalSmemSize,
    ClusterCtaid(u8),
    ClusterNctaid(u8),
    ClusterCtarank,
    ClusterNctarank,
    Clusterid(u8),
    Nclusterid(u8),
    IsExplicitCluster,
}

/// Integer binary operations that need their operands' width and sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    MulHiU,
    MulHiS,
    DivU,
    DivS,
    RemU,
    RemS,
    MinU,
    MinS,
    MaxU,
    MaxS,
    /// `add.sat.s32`: clamps instead of wrapping.
    AddSatS,
    SubSatS,
    Mul24LoU,
    Mul24LoS,
    Mul24HiU,
    Mul24HiS,
    /// `min.u16x2`, … : two 16-bit lanes.
    MinU16x2,
    MinS16x2,
    MaxU16x2,
    MaxS16x2,
    AddU16x2,
    SubU16x2,
    /// `bmsk.clamp.b32` / `bmsk.wrap.b32`.
    BmskClamp,
    BmskWrap,
    /// `szext.clamp.s32` etc.: (value, width) → sign or zero extension.
    SzextClampS,
    SzextClampU,
    SzextWrapS,
    SzextWrapU,
}

/// Integer unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntUnOp {
    AbsS,
    NegS,
    Popc,
    Clz,
    Brev,
    BfindU,
    BfindS,
    BfindShiftU,
    BfindShiftS,
    /// `cnot`: 1 if the operand is 0, else 0.
    Cnot,
}

/// How `mad` combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadKind {
    Lo,
    Hi,
    Wide,
}

/// Extended-precision arithmetic with the carry flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryOp {
    Add,
    Sub,
    MadLo,
    MadHi,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// The operand type of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpTy {
    U(u8),
    S(u8),
    F16,
    BF16,
    F32,
    /// `.ftz.f32`: subnormal operands compare as zero.
    F32Ftz,
    F64,
}

/// How `setp`/`set` combine their result with the `c` predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    None,
    And,
    Or,
    Xor,
}

/// What `set` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTy {
    /// 0xFFFFFFFF or 0.
    Int,
    /// 1.0f or 0.0f.
    F32,
}

/// A floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FTy {
    F16,
    BF16,
    F16x2,
    BF16x2,
    F32,
    F64,
}

/// A rounding mode: IEEE ones for float results, the `i` ones for integral
/// results (`cvt.rni`, float to integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rnd {
    /// No modifier: the instruction's default.
    Default,
    Rn,
    Rz,
    Rm,
    Rp,
    /// Round to nearest, ties away from zero (`cvt.rna.tf32.f32`).
    Rna,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// Floating-point operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `div.approx`: `a * (1/b)` with the reciprocal approximated.
    DivApprox,
    /// `div.full`: the approximate division of sm_20 with 2 ulp.
    DivFull,
    Fma,
    Min,
    Max,
    MinNaN,
    MaxNaN,
    Neg,
    Abs,
    Sqrt,
    SqrtApprox,
    Rsqrt,
    Rcp,
    RcpApprox,
    /// `rcp.approx.ftz.f64`: the reciprocal with its mantissa truncated.
    RcpApproxF64,
    /// `rsqrt.approx.ftz.f64`.
    RsqrtApproxF64,
    Sin,
    Cos,
    Lg2,
    Ex2,
    Tanh,
    Copysign,
}

/// A type of `cvt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtTy {
    U(u8),
    S(u8),
    F16,
    BF16,
    TF32,
    F32,
    F64,
    /// Two f32 sources packed into one f16x2 / bf16x2 (a high, b low).
    F16x2,
    BF16x2,
    /// Two FP8 values in 16 bits (a high, b low from two f32; lane by lane
    /// from an f16x2; or the source of an f16x2).
    E4M3x2,
    E5M2x2,
}

/// `testp` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestClass {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

/// A memory state space as an instruction addresses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemSpace {
    Generic,
    Global,
    /// `.shared` / `.shared::cta`: this block's shared memory.
    Shared,
    /// `.shared::cluster`: any block of the cluster.
    SharedCluster,
    Local,
    Const,
    /// `.param` through a register address: the kernel's parameter buffer.
    KernelParam,
}

/// Memory ordering of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Weak (plain) or `.relaxed` or `.volatile`.
    Relaxed,
    Acquire,
    Release,
    AcqRel,
    /// `atom` after `fence.sc`: sequentially consistent.
    SeqCst,
}

/// An atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    And,
    Or,
    Xor,
    Exch,
    Cas,
    MinU,
    MinS,
    MaxU,
    MaxS,
    Inc,
    Dec,
    AddF32,
    AddF64,
    /// `atom.add.noftz.f16` / `.bf16` (one lane) and `.f16x2` / `.bf16x2`.
    AddF16,
    AddBF16,
    AddF16x2,
    AddBF16x2,
    MinF32,
    MaxF32,
}

/// What a `call` calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A function of the module, by index.
    Direct(u32),
    /// A function pointer in a slot.
    Indirect(Slot),
    /// The CUDA runtime's `vprintf(format, args)`.
    Vprintf,
    /// The CUDA runtime's `cudaGraphSetConditional(handle, value)`, handed
    /// to the embedder ([`Environment::set_conditional`](crate::Environment::set_conditional)).
    SetConditional,
}

/// A call site: where the arguments are in the caller's parameter area
/// and where the results go.
#[derive(Clone, Debug)]
pub struct CallSite {
    pub callee: Callee,
    /// (offset in the caller's parameter area, size) of each argument.
    pub args: Vec<(u32, u32)>,
    /// (offset in the caller's parameter area, size) of each result.
    pub rets: Vec<(u32, u32)>,
}

/// `shfl.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync` operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    MinU,
    MinS,
    MaxU,
    MaxS,
    And,
    Or,
    Xor,
}

/// What a block barrier does besides waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarKind {
    Sync,
    Arrive,
    RedPopc,
    RedAnd,
    RedOr,
}

/// An instruction that needs other threads: decoded here, performed by the
/// scheduler (`collective.rs`) once every participant has arrived.
#[derive(Clone, Debug)]
pub enum Collective {
    Barrier {
        kind: BarKind,
        /// `bar.*` and `barrier.*.aligned`: every lane of a warp must
        /// execute this same instruction.
        aligned: bool,
        id: Slot,
        count: Option<Slot>,
        d: Slot,
        pred: Slot,
        pred_neg: bool,
    },
    WarpSync {
        mask: Slot,
    },
    Shfl {
        mode: ShflMode,
        d: Slot,
        p: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        mask: Slot,
    },
    Vote {
        mode: VoteMode,
        d: Slot,
        a: Slot,
        a_neg: bool,
        mask: Slot,
    },
    Match {
        all: bool,
        d: Slot,
        p: Slot,
        a: Slot,
        mask: Slot,
    },
    Redux {
        op: ReduxOp,
        d: Slot,
        a: Slot,
        mask: Slot,
    },
    /// Resolved at the end of a scheduling round: the lanes of the warp that
    /// reached this instruction together.
    Activemask {
        d: Slot,
    },
    Elect {
        d: Slot,
        p: Slot,
        mask: Slot,
    },
    /// `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16`.
    Ldmatrix {
        n: u8,
        trans: bool,
        d: [Slot; 4],
        addr: Slot,
        off: i64,
        space: MemSpace,
    },
    /// `stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16`.
    Stmatrix {
        n: u8,
        trans: bool,
        s: [Slot; 4],
        addr: Slot,
        off: i64,
        space: MemSpace,
    },
    ClusterArrive,
    ClusterWait,
}

impl Collective {
    /// Collectives of one group must agree on this (PTX: "the same
    /// qualifiers"); the scheduler refuses to match different kinds.
    pub fn kind_key(&self) -> u32 {
        match self {
            Collective::Barrier { .. } => 1,
            Collective::WarpSync { .. } => 2,
            Collective::Shfl { mode, .. } => 10 + *mode as u32,
            Collective::Vote { mode, .. } => 20 + *mode as u32,
            Collective::Match { all, .. } => 30 + *all as u32,
            Collective::Redux { op, .. } => 40 + *op as u32,
            Collective::Activemask { .. } => 50,
            Collective::Elect { .. } => 51,
            Collective::Ldmatrix { n, trans, .. } => 60 + *n as u32 * 2 + *trans as u32,
            Collective::Stmatrix { n, trans, .. } => 80 + *n as u32 * 2 + *trans as u32,
            Collective::ClusterArrive => 100,
            Collective::ClusterWait => 101,
        }
    }
}

/// `mbarrier` operations (on a 64-bit object in shared memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbarOp {
    Init,
    Inval,
    /// `arrive` (count in `b`, 1 by default), returning the state.
    Arrive,
    ArriveNoComplete,
    /// `arrive.expect_tx`: add `b` to the transaction count, then arrive.
    ArriveExpectTx,
    ExpectTx,
    CompleteTx,
    /// `test_wait`/`try_wait` on a state token.
    TestWait,
    /// `test_wait.parity`/`try_wait.parity`.
    TestWaitParity,
    PendingCount,
}

/// One decoded operation. Every `Slot` is an operand of the current frame.
#[derive(Clone, Debug)]
pub enum Op {
    Nop,
    /// `d = a & mask`.
    Mov {
        d: Slot,
        a: Slot,
        mask: u64,
    },
    /// `mov.b64 d, {a, b}`: packs `n` parts of `bits` each, part 0 lowest.
    Pack {
        d: Slot,
        s: [Slot; 4],
        n: u8,
        bits: u8,
    },
    /// `mov.b64 {a, b}, s`: the inverse.
    Unpack {
        d: [Slot; 4],
        n: u8,
        bits: u8,
        a: Slot,
    },
    Sreg {
        d: Slot,
        reg: SpecialReg,
    },
    /// The `.local` address of this frame's local variable at `offset`.
    LocalAddr {
        d: Slot,
        offset: u32,
    },
    /// The address of the kernel's parameter buffer plus `offset`.
    KernelParamAddr {
        d: Slot,
        offset: u32,
    },
    /// Sign-extends the low `from` bits of `a` (after a signed load), keeping
    /// `mask` (the destination register's width).
    Sext {
        d: Slot,
        a: Slot,
        from: u8,
        mask: u64,
    },

    Add {
        d: Slot,
        a: Slot,
        b: Slot,
        mask: u64,
    },
    Sub {
        d: Slot,
        a: Slot,
        b: Slot,
        mask: u64,
    },
    MulLo {
        d: Slot,
        a: Slot,
        b: Slot,
        mask: u64,
    },
    And {
        d: Slot,
        a: Slot,
        b: Slot,
    },
    Or {
        d: Slot,
        a: Slot,
        b: Slot,
    },
    Xor {
        d: Slot,
        a: Slot,
        b: Slot,
    },
    Not {
        d: Slot,
        a: Slot,
        mask: u64,
    },
    Shl {
        d: Slot,
        a: Slot,
        b: Slot,
        bits: u8,
    },
    ShrU {
        d: Slot,
        a: Slot,
        b: Slot,
        bits: u8,
    },
    ShrS {
        d: Slot,
        a: Slot,
        b: Slot,
        bits: u8,
    },
    Int {
        op: IntOp,
        bits: u8,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    IntUn {
        op: IntUnOp,
        bits: u8,
        d: Slot,
        a: Slot,
    },
    MulWide {
        d: Slot,
        a: Slot,
        b: Slot,
        bits: u8,
        signed: bool,
    },
    Mad {
        kind: MadKind,
        bits: u8,
        signed: bool,
        sat: bool,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    Carry {
        op: CarryOp,
        bits: u8,
        signed: bool,
        cin: bool,
        cout: bool,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    Bfe {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        bits: u8,
        signed: bool,
    },
    Bfi {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        e: Slot,
        bits: u8,
    },
    /// `prmt.b32{.mode}`; mode 0 is the generic form, 1.. are f4e b4e rc8 ecl ecr rc16.
    Prmt {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        mode: u8,
    },
    Shf {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        left: bool,
        wrap: bool,
    },
    Fns {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    Lop3 {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        lut: u8,
    },
    Sad {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        bits: u8,
        signed: bool,
    },
    /// `dp4a`/`dp2a`: `a_signed`, `b_signed`; `dp2a_hi` is `Some(hi)` for dp2a.
    Dp {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        a_signed: bool,
        b_signed: bool,
        dp2a_hi: Option<bool>,
    },
    Setp {
        cmp: Cmp,
        ty: CmpTy,
        d: Slot,
        d2: Slot,
        a: Slot,
        b: Slot,
        bop: BoolOp,
        c: Slot,
        c_neg: bool,
    },
    Set {
        cmp: Cmp,
        ty: CmpTy,
        dty: SetTy,
        d: Slot,
        a: Slot,
        b: Slot,
        bop: BoolOp,
        c: Slot,
        c_neg: bool,
    },
    Selp {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    /// `slct`: `d = c >= 0 ? a : b` (`c` is s32, or f32 when `float_c`).
    Slct {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        float_c: bool,
        ftz: bool,
    },

    Float {
        op: FOp,
        ty: FTy,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    Cvt {
        dst: CvtTy,
        src: CvtTy,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        relu: bool,
        satfinite: bool,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    Testp {
        class: TestClass,
        ty: FTy,
        d: Slot,
        a: Slot,
    },

    Ld {
        space: MemSpace,
        order: Order,
        size: u8,
        n: u8,
        d: [Slot; 4],
        addr: Slot,
        off: i64,
    },
    St {
        space: MemSpace,
        order: Order,
        size: u8,
        n: u8,
        s: [Slot; 4],
        addr: Slot,
        off: i64,
    },
    /// `ld.param` of this frame's parameter area (a `.func`'s parameters,
    /// results and call arguments).
    LdParam {
        size: u8,
        n: u8,
        d: [Slot; 4],
        off: u32,
    },
    StParam {
        size: u8,
        n: u8,
        s: [Slot; 4],
        off: u32,
    },
    /// `ld.param` of a kernel parameter.
    LdKernelParam {
        size: u8,
        n: u8,
        d: [Slot; 4],
        off: u32,
    },
    Atom {
        space: MemSpace,
        op: AtomOp,
        order: Order,
        size: u8,
        d: Slot,
        addr: Slot,
        off: i64,
        b: Slot,
        c: Slot,
    },
    /// `cvta.space` (to generic) or `cvta.to.space` (`to`).
    Cvta {
        d: Slot,
        a: Slot,
        space: MemSpace,
        to: bool,
        bits: u8,
    },
    Isspacep {
        d: Slot,
        a: Slot,
        space: MemSpace,
    },
    Fence {
        order: Order,
    },
    /// `cp.async`: done at once. `src_size` is the bytes read (the rest is
    /// zeroed), [`SINK_SLOT`] for all of them.
    CpAsync {
        dst: Slot,
        dst_off: i64,
        src: Slot,
        src_off: i64,
        size: u8,
        src_size: Slot,
    },
    /// `mapa`: the address of the same shared variable in block `rank` of
    /// the cluster; `generic` for the generic-address form.
    Mapa {
        d: Slot,
        a: Slot,
        rank: Slot,
        generic: bool,
    },
    /// `getctarank`: the cluster rank owning a shared::cluster address.
    Getctarank {
        d: Slot,
        a: Slot,
        generic: bool,
    },
    Mbarrier {
        op: MbarOp,
        d: Slot,
        addr: Slot,
        off: i64,
        b: Slot,
        space: MemSpace,
    },

    Bra {
        target: u32,
    },
    /// `brx.idx`: table index into the function's jump tables.
    BrxIdx {
        index: Slot,
        table: u32,
    },
    /// Index into the function's call sites.
    Call {
        site: u32,
    },
    Ret,
    Exit,
    Trap,
    /// `nanosleep`: ends the thread's quantum.
    Yield,
    /// Index into the function's collectives.
    Collective {
        index: u32,
    },
    /// Index into the function's unsupported instructions.
    Unsupported {
        index: u32,
    },
}

/// A kernel parameter's size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    /// Bytes.
    pub size: usize,
    /// Bytes (a power of two).
    pub align: usize,
}

/// A decoded function.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub is_entry: bool,
    /// Declared but not defined in this module.
    pub is_extern: bool,
    pub code: Vec<Inst>,
    /// Each instruction's source: byte range and line.
    pub source: Vec<(u32, u32, u32)>,
    pub num_slots: u32,
    /// Width in bits of each slot (0 for scratch and constants).
    pub slot_bits: Vec<u8>,
    /// Constant slots start here; their values follow.
    pub const_base: u32,
    pub consts: Vec<u64>,
    /// Bytes of this frame's parameter area.
    pub param_size: u32,
    /// (offset, size) of each declared parameter, in order.
    pub params: Vec<(u32, u32)>,
    /// (offset, size) of each declared result.
    pub rets: Vec<(u32, u32)>,
    /// Bytes of this frame's `.local` variables.
    pub local_size: u32,
    pub local_align: u32,
    pub jump_tables: Vec<Vec<u32>>,
    pub calls: Vec<CallSite>,
    pub collectives: Vec<Collective>,
    /// Functions whose address this function takes (possible targets of
    /// indirect calls).
    pub referenced: Vec<u32>,
    /// Why each `Op::Unsupported` is unsupported, by index.
    pub unsupported: Vec<String>,
    /// Kernel parameters (entries only).
    pub kernel_params: Vec<ParamLayout>,
    /// Byte offset of each kernel parameter in the parameter buffer.
    pub kernel_param_offsets: Vec<u32>,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    pub reqnctapercluster: Option<[u32; 3]>,
}

impl Op {
    /// Every slot the operation reads or writes (for the decoder's check
    /// that each lies inside its frame).
    pub fn slots(&self) -> Vec<Slot> {
        match *self {
            Op::Nop
            | Op::Fence { .. }
            | Op::Bra { .. }
            | Op::Call { .. }
            | Op::Ret
            | Op::Exit
            | Op::Trap
            | Op::Yield => vec![],
            Op::Collective { .. } | Op::Unsupported { .. } => vec![],
            Op::Mov { d, a, .. }
            | Op::Sext { d, a, .. }
            | Op::Not { d, a, .. }
            | Op::IntUn { d, a, .. } => vec![d, a],
            Op::Pack { d, s, .. } => vec![d, s[0], s[1], s[2], s[3]],
            Op::Unpack { d, a, .. } => vec![d[0], d[1], d[2], d[3], a],
            Op::Sreg { d, .. } | Op::LocalAddr { d, .. } | Op::KernelParamAddr { d, .. } => vec![d],
            Op::Add { d, a, b, .. }
            | Op::Sub { d, a, b, .. }
            | Op::MulLo { d, a, b, .. }
            | Op::And { d, a, b }
            | Op::Or { d, a, b }
            | Op::Xor { d, a, b }
            | Op::Shl { d, a, b, .. }
            | Op::ShrU { d, a, b, .. }
            | Op::ShrS { d, a, b, .. }
            | Op::Int { d, a, b, .. }
            | Op::MulWide { d, a, b, .. } => vec![d, a, b],
            Op::Mad { d, a, b, c, .. }
            | Op::Carry { d, a, b, c, .. }
            | Op::Bfe { d, a, b, c, .. }
            | Op::Prmt { d, a, b, c, .. }
            | Op::Shf { d, a, b, c, .. }
            | Op::Fns { d, a, b, c }
            | Op::Lop3 { d, a, b, c, .. }
            | Op::Sad { d, a, b, c, .. }
            | Op::Dp { d, a, b, c, .. }
            | Op::Selp { d, a, b, c }
            | Op::Slct { d, a, b, c, .. }
            | Op::Float { d, a, b, c, .. } => vec![d, a, b, c],
            Op::Bfi { d, a, b, c, e, .. } => vec![d, a, b, c, e],
            Op::Setp { d, d2, a, b, c, .. } => vec![d, d2, a, b, c],
            Op::Set { d, a, b, c, .. } => vec![d, a, b, c],
            Op::Cvt { d, a, b, .. } => vec![d, a, b],
            Op::Testp { d, a, .. }
            | Op::Cvta { d, a, .. }
            | Op::Isspacep { d, a, .. }
            | Op::Getctarank { d, a, .. } => vec![d, a],
            Op::Ld { d, addr, .. } => vec![d[0], d[1], d[2], d[3], addr],
            Op::St { s, addr, .. } => vec![s[0], s[1], s[2], s[3], addr],
            Op::LdParam { d, .. } | Op::LdKernelParam { d, .. } => d.to_vec(),
            Op::StParam { s, .. } => s.to_vec(),
            Op::Atom { d, addr, b, c, .. } => vec![d, addr, b, c],
            Op::CpAsync {
                dst, src, src_size, ..
            } => vec![dst, src, src_size],
            Op::Mapa { d, a, rank, .. } => vec![d, a, rank],
            Op::Mbarrier { d, addr, b, .. } => vec![d, addr, b],
            Op::BrxIdx { index, .. } => vec![index],
        }
    }
}
