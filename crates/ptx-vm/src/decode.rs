//! The decoder: a parsed function → a [`Function`] the interpreter runs.
//!
//! It owns the meaning of names and modifiers: scoped register, parameter,
//! local and label declarations (nested `{ }` scopes with their own `.reg`
//! and labels, as inline asm writes them), special registers, module
//! symbols (addresses of `.global`/`.const` variables, shared offsets,
//! function pointers), immediates (masked to the instruction's width; float
//! literals converted to the instruction's format), and the mapping of each
//! opcode with its modifiers to an [`Op`].
//!
//! An instruction the VM does not implement decodes to
//! [`Op::Unsupported`], recording why: the module still loads, and a launch
//! whose kernel can reach it is refused before anything runs. A name that is
//! not a PTX instruction at all ([`crate::opcodes`]) is an error of the
//! module, as the driver's JIT makes it.

use std::collections::HashMap;

use crate::ast::{FuncDecl, Operand, Space, Stmt, VarDecl};
use crate::memory::function_pointer;
use crate::program::*;
use crate::ParseError;

/// What the decoder knows of the module's own symbols.
pub struct ModuleSymbols {
    /// `.global` and `.const` variables: host address and size.
    pub globals: HashMap<String, (u64, u64)>,
    /// Module-level `.shared` variables: offset in a block's shared memory.
    pub shared: HashMap<String, u32>,
    /// Functions by name: index, and the runtime function the VM provides
    /// when it is one (an extern `vprintf` or `cudaGraphSetConditional`).
    pub functions: HashMap<String, (u32, Option<Callee>)>,
}

/// A type as an instruction names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    B,
    U,
    S,
    F,
    Pred,
}

#[derive(Clone, Copy, Debug)]
struct Ty {
    kind: Kind,
    bits: u32,
    /// `f16x2`, `bf16x2`, `u16x2`, `s16x2`.
    packed: bool,
    /// `bf16` / `bf16x2`.
    brain: bool,
}

fn ty(s: &str) -> Option<Ty> {
    let t = |kind, bits| {
        Some(Ty {
            kind,
            bits,
            packed: false,
            brain: false,
        })
    };
    match s {
        "b8" => t(Kind::B, 8),
        "b16" => t(Kind::B, 16),
        "b32" => t(Kind::B, 32),
        "b64" => t(Kind::B, 64),
        "b128" => t(Kind::B, 128),
        "u8" => t(Kind::U, 8),
        "u16" => t(Kind::U, 16),
        "u32" => t(Kind::U, 32),
        "u64" => t(Kind::U, 64),
        "s8" => t(Kind::S, 8),
        "s16" => t(Kind::S, 16),
        "s32" => t(Kind::S, 32),
        "s64" => t(Kind::S, 64),
        "f16" => t(Kind::F, 16),
        "f32" => t(Kind::F, 32),
        "f64" => t(Kind::F, 64),
        "pred" => t(Kind::Pred, 1),
        "bf16" => Some(Ty {
            kind: Kind::F,
            bits: 16,
            packed: false,
            brain: true,
        }),
        "f16x2" => Some(Ty {
            kind: Kind::F,
            bits: 32,
            packed: true,
            brain: false,
        }),
        "bf16x2" => Some(Ty {
            kind: Kind::F,
            bits: 32,
            packed: true,
            brain: true,
        }),
        "u16x2" => Some(Ty {
            kind: Kind::U,
            bits: 32,
            packed: true,
            brain: false,
        }),
        "s16x2" => Some(Ty {
            kind: Kind::S,
            bits: 32,
            packed: true,
            brain: false,
        }),
        _ => None,
    }
}

fn fty(t: Ty) -> Option<FTy> {
    match (t.kind, t.bits, t.packed, t.brain) {
        (Kind::F, 16, false, false) => Some(FTy::F16),
        (Kind::F, 16, false, true) => Some(FTy::BF16),
        (Kind::F, 32, true, false) => Some(FTy::F16x2),
        (Kind::F, 32, true, true) => Some(FTy::BF16x2),
        (Kind::F, 32, false, _) => Some(FTy::F32),
        (Kind::F, 64, false, _) => Some(FTy::F64),
        _ => None,
    }
}

/// The byte size of a declared type (`b8`..`b128`, `f16x2`, `pred`).
pub fn type_size(name: &str) -> Option<u64> {
    let t = ty(name)?;
    Some(match t.kind {
        Kind::Pred => 1,
        _ => (t.bits / 8) as u64,
    })
}

#[derive(Clone, Debug)]
enum Sym {
    Reg { slot: Slot, bits: u8 },
    FrameParam { off: u32, size: u32 },
    KernelParam { off: u32 },
    Local { off: u32 },
    Shared { off: u32 },
    Label(u32),
    Table(u32),
    Prototype,
}

/// Decodes one function.
pub fn decode_function(
    f: &FuncDecl,
    syms: &ModuleSymbols,
    src: &str,
    function_shared: &HashMap<(String, String), u32>,
) -> Result<Function, ParseError> {
    let mut d = Decoder {
        f,
        syms,
        src,
        function_shared,
        scopes: vec![HashMap::new()],
        template: vec![1, 0],
        slot_bits: vec![1, 0],
        consts: HashMap::new(),
        code: Vec::new(),
        source: Vec::new(),
        labels: Vec::new(),
        fixups: Vec::new(),
        table_labels: Vec::new(),
        calls: Vec::new(),
        collectives: Vec::new(),
        unsupported: Vec::new(),
        referenced: Vec::new(),
        param_size: 0,
        local_size: 0,
        local_align: 1,
        params: Vec::new(),
        rets: Vec::new(),
        kernel_params: Vec::new(),
        kernel_param_offsets: Vec::new(),
        cur: None,
    };
    d.declare_signature()?;
    if let Some(body) = &f.body {
        d.block(body)?;
        // Falling off the end of a function returns.
        d.emit(Op::Ret);
    }
    d.finish()
}

struct Decoder<'a> {
    f: &'a FuncDecl,
    syms: &'a ModuleSymbols,
    src: &'a str,
    function_shared: &'a HashMap<(String, String), u32>,
    scopes: Vec<HashMap<String, Sym>>,
    template: Vec<u64>,
    slot_bits: Vec<u8>,
    consts: HashMap<u64, Slot>,
    code: Vec<Inst>,
    source: Vec<(u32, u32, u32)>,
    /// Each label's instruction index, once seen.
    labels: Vec<Option<u32>>,
    /// (instruction, label id) to patch: `Bra` targets.
    fixups: Vec<(usize, u32, u32, u32)>,
    table_labels: Vec<Vec<u32>>,
    calls: Vec<CallSite>,
    collectives: Vec<Collective>,
    unsupported: Vec<String>,
    referenced: Vec<u32>,
    param_size: u32,
    local_size: u32,
    local_align: u32,
    params: Vec<(u32, u32)>,
    rets: Vec<(u32, u32)>,
    kernel_params: Vec<ParamLayout>,
    kernel_param_offsets: Vec<u32>,
    /// The instruction being decoded: guard, source span, line.
    cur: Option<(Slot, bool, (u32, u32, u32))>,
}

/// Why an instruction cannot be decoded into something the VM runs.
struct Unsupported(String);

type DResult<T> = Result<T, Unsupported>;

fn unsupported<T>(why: impl Into<String>) -> DResult<T> {
    Err(Unsupported(why.into()))
}

fn decl_size(v: &VarDecl) -> u64 {
    let elem = type_size(&v.ty).unwrap_or(0) * v.vector as u64;
    v.dims
        .iter()
        .fold(elem, |acc, d| acc.saturating_mul(d.unwrap_or(0)))
}

fn decl_align(v: &VarDecl) -> u32 {
    v.align
        .unwrap_or_else(|| (type_size(&v.ty).unwrap_or(1) * v.vector as u64).max(1) as u32)
}

fn align_up(x: u32, a: u32) -> u32 {
    let a = a.max(1);
    x.div_ceil(a) * a
}

fn special_reg(name: &str, comp: Option<&str>) -> Option<SpecialReg> {
    let c = match comp {
        Some("x") => 0,
        Some("y") => 1,
        Some("z") => 2,
        None => 3,
        Some(_) => return None,
    };
    let with_c = |f: fn(u8) -> SpecialReg| if c < 3 { Some(f(c)) } else { None };
    let plain = |r: SpecialReg| if c == 3 { Some(r) } else { None };
    match name {
        "%tid" => with_c(SpecialReg::Tid),
        "%ntid" => with_c(SpecialReg::Ntid),
        "%ctaid" => with_c(SpecialReg::Ctaid),
        "%nctaid" => with_c(SpecialReg::Nctaid),
        "%cluster_ctaid" => with_c(SpecialReg::ClusterCtaid),
        "%cluster_nctaid" => with_c(SpecialReg::ClusterNctaid),
        "%clusterid" => with_c(SpecialReg::Clusterid),
        "%nclusterid" => with_c(SpecialReg::Nclusterid),
        "%laneid" => plain(SpecialReg::Laneid),
        "%warpid" => plain(SpecialReg::Warpid),
        "%nwarpid" => plain(SpecialReg::Nwarpid),
        "%smid" => plain(SpecialReg::Smid),
        "%nsmid" => plain(SpecialReg::Nsmid),
        "%gridid" => plain(SpecialReg::Gridid),
        "%clock" => plain(SpecialReg::Clock),
        "%clock_hi" => plain(SpecialReg::ClockHi),
        "%clock64" => plain(SpecialReg::Clock64),
        "%globaltimer" => plain(SpecialReg::Globaltimer),
        "%globaltimer_lo" => plain(SpecialReg::GlobaltimerLo),
        "%globaltimer_hi" => plain(SpecialReg::GlobaltimerHi),
        "%lanemask_eq" => plain(SpecialReg::LanemaskEq),
        "%lanemask_lt" => plain(SpecialReg::LanemaskLt),
        "%lanemask_le" => plain(SpecialReg::LanemaskLe),
        "%lanemask_gt" => plain(SpecialReg::LanemaskGt),
        "%lanemask_ge" => plain(SpecialReg::LanemaskGe),
        "%dynamic_smem_size" => plain(SpecialReg::DynamicSmemSize),
        "%total_smem_size" => plain(SpecialReg::TotalSmemSize),
        "%cluster_ctarank" => plain(SpecialReg::ClusterCtarank),
        "%cluster_nctarank" => plain(SpecialReg::ClusterNctarank),
        "%is_explicit_cluster" => plain(SpecialReg::IsExplicitCluster),
        _ => None,
    }
}

fn parse_space(m: &str) -> Option<MemSpace> {
    Some(match m {
        "global" => MemSpace::Global,
        "shared" | "shared::cta" => MemSpace::Shared,
        "shared::cluster" => MemSpace::SharedCluster,
        "local" => MemSpace::Local,
        "const" => MemSpace::Const,
        "param" | "param::entry" | "param::func" => MemSpace::KernelParam,
        _ => return None,
    })
}

fn parse_cmp(m: &str) -> Option<Cmp> {
    Some(match m {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" | "lo" => Cmp::Lt,
        "le" | "ls" => Cmp::Le,
        "gt" | "hi" => Cmp::Gt,
        "ge" | "hs" => Cmp::Ge,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

fn parse_rnd(m: &str) -> Option<Rnd> {
    Some(match m {
        "rn" => Rnd::Rn,
        "rz" => Rnd::Rz,
        "rm" => Rnd::Rm,
        "rp" => Rnd::Rp,
        "rna" => Rnd::Rna,
        "rni" => Rnd::Rni,
        "rzi" => Rnd::Rzi,
        "rmi" => Rnd::Rmi,
        "rpi" => Rnd::Rpi,
        _ => return None,
    })
}

/// Cache and eviction hints, which change nothing the VM can observe.
fn is_cache_hint(m: &str) -> bool {
    matches!(
        m,
        "ca" | "cg" | "cs" | "lu" | "cv" | "wb" | "wt" | "nc" | "uni"
    ) || m.starts_with("L1::")
        || m.starts_with("L2::")
        || m.starts_with("level::")
}

fn is_scope(m: &str) -> bool {
    matches!(m, "cta" | "gpu" | "sys" | "cluster")
}

impl<'a> Decoder<'a> {
    fn new_slot(&mut self, bits: u8) -> Slot {
        self.template.push(0);
        self.slot_bits.push(bits);
        (self.template.len() - 1) as Slot
    }

    fn konst(&mut self, v: u64) -> Slot {
        if let Some(&s) = self.consts.get(&v) {
            return s;
        }
        let s = self.new_slot(0);
        self.template[s as usize] = v;
        self.consts.insert(v, s);
        s
    }

    fn lookup(&self, name: &str) -> Option<&Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn declare(&mut self, name: &str, sym: Sym) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), sym);
        }
    }

    fn error<T>(&self, line: u32, column: u32, message: String) -> Result<T, ParseError> {
        Err(ParseError {
            line,
            column,
            message,
        })
    }

    fn declare_signature(&mut self) -> Result<(), ParseError> {
        let f = self.f;
        if f.entry {
            let mut off = 0u32;
            for p in &f.params {
                if p.space != Space::Param {
                    return self.error(
                        p.line,
                        p.column,
                        format!("kernel parameter `{}` is not in .param", p.name),
                    );
                }
                let size = decl_size(p) as u32;
                let align = decl_align(p);
                off = align_up(off, align);
                self.kernel_params.push(ParamLayout {
                    size: size as usize,
                    align: align as usize,
                });
                self.kernel_param_offsets.push(off);
                self.declare(&p.name, Sym::KernelParam { off });
                off += size;
            }
        } else {
            for (list, is_ret) in [(&f.params, false), (&f.rets, true)] {
                for p in list.iter() {
                    let size = decl_size(p) as u32;
                    let align = decl_align(p).min(16);
                    let off = align_up(self.param_size, align);
                    self.param_size = off + size.max(1);
                    if is_ret {
                        self.rets.push((off, size));
                    } else {
                        self.params.push((off, size));
                    }
                    if p.space == Space::Reg {
                        // Old-style `.reg` parameters: not emitted by LLVM.
                        return self.error(
                            p.line,
                            p.column,
                            format!("`.reg` parameter `{}` is not supported", p.name),
                        );
                    }
                    self.declare(&p.name, Sym::FrameParam { off, size });
                }
            }
        }
        Ok(())
    }

    fn declare_var(&mut self, v: &VarDecl) -> Result<(), ParseError> {
        match v.space {
            Space::Reg => {
                let Some(t) = ty(&v.ty) else {
                    return self.error(
                        v.line,
                        v.column,
                        format!("unknown register type `.{}`", v.ty),
                    );
                };
                let bits = if t.kind == Kind::Pred {
                    1
                } else {
                    (t.bits * v.vector).min(64) as u8
                };
                match v.range {
                    Some(n) => {
                        for i in 0..n {
                            let slot = self.new_slot(bits);
                            self.declare(&format!("{}{}", v.name, i), Sym::Reg { slot, bits });
                        }
                    }
                    None => {
                        let slot = self.new_slot(bits);
                        self.declare(&v.name, Sym::Reg { slot, bits });
                    }
                }
            }
            Space::Param => {
                let size = decl_size(v) as u32;
                let align = decl_align(v).min(16);
                let off = align_up(self.param_size, align);
                self.param_size = off + size.max(1);
                self.declare(&v.name, Sym::FrameParam { off, size });
            }
            Space::Local => {
                let align = decl_align(v);
                let off = align_up(self.local_size, align);
                self.local_size = off + decl_size(v) as u32;
                self.local_align = self.local_align.max(align);
                self.declare(&v.name, Sym::Local { off });
            }
            Space::Shared => {
                let key = (self.f.name.clone(), v.name.clone());
                match self.function_shared.get(&key) {
                    Some(&off) => self.declare(&v.name, Sym::Shared { off }),
                    None => {
                        return self.error(
                            v.line,
                            v.column,
                            format!("shared variable `{}` has no layout", v.name),
                        )
                    }
                }
            }
            Space::Global | Space::Const => {
                return self.error(
                    v.line,
                    v.column,
                    format!(
                        "`{}`: .global/.const variables inside a function are not supported",
                        v.name
                    ),
                )
            }
        }
        Ok(())
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<(), ParseError> {
        self.scopes.push(HashMap::new());
        // Declarations and labels are visible in the whole block.
        for s in stmts {
            match s {
                Stmt::Decl(v) => self.declare_var(v)?,
                Stmt::Label { name, .. } => {
                    let id = self.labels.len() as u32;
                    self.labels.push(None);
                    self.declare(name, Sym::Label(id));
                }
                Stmt::CallPrototype { label, .. } => self.declare(label, Sym::Prototype),
                _ => {}
            }
        }
        for s in stmts {
            if let Stmt::BranchTargets { label, targets } = s {
                let mut ids = Vec::new();
                for t in targets {
                    match self.lookup(t) {
                        Some(Sym::Label(id)) => ids.push(*id),
                        _ => {
                            return self.error(
                                1,
                                1,
                                format!(
                                    "`.branchtargets {label}` names `{t}`, which is not a label"
                                ),
                            )
                        }
                    }
                }
                let tid = self.table_labels.len() as u32;
                self.table_labels.push(ids);
                self.declare(label, Sym::Table(tid));
            }
        }
        for s in stmts {
            match s {
                Stmt::Label { name, line, column } => {
                    let Some(Sym::Label(id)) = self.lookup(name).cloned() else {
                        return self.error(
                            *line,
                            *column,
                            format!("label `{name}` is declared twice"),
                        );
                    };
                    self.labels[id as usize] = Some(self.code.len() as u32);
                }
                Stmt::Inst(i) => self.instruction(i)?,
                Stmt::Block(inner) => self.block(inner)?,
                _ => {}
            }
        }
        self.scopes.pop();
        Ok(())
    }

    fn emit(&mut self, op: Op) {
        let (guard, guard_neg, src) = self.cur.unwrap_or((TRUE_SLOT, false, (0, 0, 0)));
        self.code.push(Inst {
            op,
            guard,
            guard_neg,
        });
        self.source.push(src);
    }

    /// Emits an instruction that must run whatever the guard says
    /// (materialising an operand).
    fn emit_unguarded(&mut self, op: Op) {
        let src = self.cur.map(|c| c.2).unwrap_or((0, 0, 0));
        self.code.push(Inst {
            op,
            guard: TRUE_SLOT,
            guard_neg: false,
        });
        self.source.push(src);
    }

    fn instruction(&mut self, i: &crate::ast::Inst) -> Result<(), ParseError> {
        let (guard, guard_neg) = match &i.guard {
            None => (TRUE_SLOT, false),
            Some((name, neg)) => match self.lookup(name) {
                Some(Sym::Reg { slot, bits: 1 }) => (*slot, *neg),
                _ => {
                    return self.error(
                        i.line,
                        i.column,
                        format!("guard `{name}` is not a predicate register"),
                    )
                }
            },
        };
        self.cur = Some((guard, guard_neg, (i.span.0 as u32, i.span.1 as u32, i.line)));
        // Name errors (undeclared registers, labels) are errors in the PTX;
        // everything else the VM cannot run is recorded as unsupported.
        match self.decode(i) {
            Ok(()) => {}
            Err(Unsupported(why)) => {
                if let Some(msg) = why.strip_prefix("error: ") {
                    return self.error(i.line, i.column, msg.to_string());
                }
                let index = self.unsupported.len() as u32;
                self.unsupported.push(why);
                self.emit(Op::Unsupported { index });
            }
        }
        self.cur = None;
        Ok(())
    }

    fn finish(mut self) -> Result<Function, ParseError> {
        // The interpreter indexes frames without bounds checks: every slot
        // must lie inside the frame (true by construction; checked here).
        let nslots = self.template.len() as Slot;
        for (k, inst) in self.code.iter().enumerate() {
            let bad = inst.guard >= nslots || inst.op.slots().iter().any(|&s| s >= nslots);
            let bad = bad
                || match inst.op {
                    Op::Call { site } => {
                        matches!(self.calls[site as usize].callee, Callee::Indirect(s) if s >= nslots)
                    }
                    _ => false,
                };
            if bad {
                let line = self.source[k].2;
                return self.error(
                    line,
                    1,
                    "internal error: an operand outside its register frame".into(),
                );
            }
        }
        for &(inst, label, line, column) in &self.fixups {
            let Some(target) = self.labels[label as usize] else {
                return self.error(
                    line,
                    column,
                    "branch to a label that marks no instruction".into(),
                );
            };
            if let Op::Bra { target: t } = &mut self.code[inst].op {
                *t = target;
            }
        }
        let mut jump_tables = Vec::new();
        for ids in &self.table_labels {
            let mut t = Vec::new();
            for id in ids {
                match self.labels[*id as usize] {
                    Some(x) => t.push(x),
                    None => {
                        return self.error(
                            1,
                            1,
                            "a jump table names a label that marks no instruction".into(),
                        )
                    }
                }
            }
            jump_tables.push(t);
        }
        let f = self.f;
        Ok(Function {
            name: f.name.clone(),
            is_entry: f.entry,
            is_extern: f.body.is_none(),
            num_slots: self.template.len() as u32,
            slot_bits: self.slot_bits,
            const_base: 0,
            consts: self.template,
            code: self.code,
            source: self.source,
            param_size: align_up(self.param_size, 16),
            params: self.params,
            rets: self.rets,
            // Exact, so that an access past the last variable faults; frames
            // are aligned where they start.
            local_size: self.local_size,
            local_align: self.local_align,
            jump_tables,
            calls: self.calls,
            collectives: self.collectives,
            unsupported: self.unsupported,
            referenced: self.referenced,
            kernel_params: self.kernel_params,
            kernel_param_offsets: self.kernel_param_offsets,
            reqntid: f.reqntid,
            maxntid: f.maxntid,
            reqnctapercluster: f.reqnctapercluster,
        })
    }

    // ---- operands -------------------------------------------------------

    fn name_error<T>(&self, what: &str) -> DResult<T> {
        Err(Unsupported(format!("error: `{what}` is not declared")))
    }

    /// A register operand: slot and width.
    fn reg(&self, name: &str) -> DResult<(Slot, u8)> {
        match self.lookup(name) {
            Some(Sym::Reg { slot, bits }) => Ok((*slot, *bits)),
            Some(_) => unsupported(format!("`{name}` is not a register here")),
            None => self.name_error(name),
        }
    }

    /// A destination operand.
    fn dst(&mut self, op: &Operand) -> DResult<Slot> {
        match op {
            Operand::Name(n) if n == "_" => Ok(SINK_SLOT),
            Operand::Name(n) => Ok(self.reg(n)?.0),
            _ => unsupported(format!("expected a destination register, found {op:?}")),
        }
    }

    /// The width of a destination register (64 for the sink).
    fn dst_bits(&self, slot: Slot) -> u8 {
        match self.slot_bits[slot as usize] {
            0 => 64,
            b => b,
        }
    }

    /// A source operand read as a value of `t`.
    fn src(&mut self, op: &Operand, t: Ty) -> DResult<Slot> {
        let bits = if t.kind == Kind::Pred {
            1
        } else {
            t.bits.min(64)
        };
        match op {
            // Integer literals are bit patterns, masked to the operand's width.
            Operand::Int(v) => Ok(self.konst(v & mask(bits))),
            Operand::F32(b) => {
                let v = match (t.kind, t.bits, t.brain) {
                    (Kind::F, 64, _) => (f32::from_bits(*b) as f64).to_bits(),
                    (Kind::F, 16, false) => {
                        crate::float::f32_to_f16(f32::from_bits(*b), Rnd::Rn) as u64
                    }
                    (Kind::F, 16, true) => {
                        crate::float::f32_to_bf16(f32::from_bits(*b), Rnd::Rn) as u64
                    }
                    _ => *b as u64,
                };
                Ok(self.konst(v))
            }
            Operand::F64(b) => {
                let v = match (t.kind, t.bits, t.brain) {
                    (Kind::F, 32, _) if !t.packed => (f64::from_bits(*b) as f32).to_bits() as u64,
                    (Kind::F, 16, false) => crate::float::f64_to(crate::float::F16, f64::from_bits(*b)),
                    (Kind::F, 16, true) => crate::float::f64_to(crate::float::BF16, f64::from_bits(*b)),
                    (Kind::F, 64, _) => *b,
                    _ => *b & mask(bits),
                };
                Ok(self.konst(v))
            }
            Operand::Component(name, comp) => match special_reg(name, Some(comp)) {
                Some(reg) => {
                    let d = self.new_slot(0);
                    self.emit_unguarded(Op::Sreg { d, reg });
                    Ok(d)
                }
                None => unsupported(format!("unknown special register `{name}.{comp}`")),
            },
            Operand::SymbolOffset(name, off) => {
                let base = self.symbol_value(name)?;
                let b = self.template[base as usize];
                if self.slot_bits[base as usize] != 0 || !self.consts.contains_key(&b) {
                    return unsupported(format!("`{name}+{off}` is not a constant address"));
                }
                Ok(self.konst(b.wrapping_add(*off as u64)))
            }
            Operand::Name(name) => {
                if let Some(Sym::Reg { slot, .. }) = self.lookup(name) {
                    return Ok(*slot);
                }
                if name.starts_with('%') {
                    if let Some(reg) = special_reg(name, None) {
                        let d = self.new_slot(0);
                        self.emit_unguarded(Op::Sreg { d, reg });
                        return Ok(d);
                    }
                }
                self.symbol_value(name)
            }
            _ => unsupported(format!("unexpected operand {op:?}")),
        }
    }

    /// The value of a symbol used as an operand: an address.
    fn symbol_value(&mut self, name: &str) -> DResult<Slot> {
        match self.lookup(name).cloned() {
            Some(Sym::Reg { slot, .. }) => return Ok(slot),
            Some(Sym::Shared { off }) => return Ok(self.konst(off as u64)),
            Some(Sym::Local { off }) => {
                let d = self.new_slot(0);
                self.emit_unguarded(Op::LocalAddr { d, offset: off });
                return Ok(d);
            }
            Some(Sym::KernelParam { off }) => {
                let d = self.new_slot(0);
                self.emit_unguarded(Op::KernelParamAddr { d, offset: off });
                return Ok(d);
            }
            Some(Sym::FrameParam { .. }) => {
                return unsupported(format!(
                    "the address of the function parameter `{name}` is not supported"
                ))
            }
            Some(_) => return unsupported(format!("`{name}` is a label, not a value")),
            None => {}
        }
        if let Some(&(addr, _)) = self.syms.globals.get(name) {
            return Ok(self.konst(addr));
        }
        if let Some(&off) = self.syms.shared.get(name) {
            return Ok(self.konst(off as u64));
        }
        if let Some(&(index, _)) = self.syms.functions.get(name) {
            if !self.referenced.contains(&index) {
                self.referenced.push(index);
            }
            return Ok(self.konst(function_pointer(index)));
        }
        self.name_error(name)
    }

    /// A predicate source, possibly negated (`!%p`).
    fn pred(&mut self, op: &Operand) -> DResult<(Slot, bool)> {
        match op {
            Operand::Not(inner) => Ok((self.pred(inner)?.0, true)),
            Operand::Name(n) => Ok((self.reg(n)?.0, false)),
            Operand::Int(v) => Ok((self.konst((*v != 0) as u64), false)),
            _ => unsupported(format!("expected a predicate, found {op:?}")),
        }
    }

    /// A memory operand `[base+off]`: the slot holding the base and the offset.
    fn address(&mut self, op: &Operand) -> DResult<(Slot, i64)> {
        match op {
            Operand::Address { base: None, offset } => Ok((self.konst(0), *offset)),
            Operand::Address {
                base: Some(name),
                offset,
            } => Ok((self.symbol_value(name)?, *offset)),
            _ => unsupported(format!("expected an address, found {op:?}")),
        }
    }

    fn label(&mut self, op: &Operand) -> DResult<u32> {
        match op {
            Operand::Name(n) => match self.lookup(n) {
                Some(Sym::Label(id)) => Ok(*id),
                Some(_) => unsupported(format!("`{n}` is not a label")),
                None => self.name_error(n),
            },
            _ => unsupported(format!("expected a label, found {op:?}")),
        }
    }

    fn vector_dsts(&mut self, op: &Operand) -> DResult<([Slot; 4], u8)> {
        match op {
            Operand::Vector(items) if !items.is_empty() && items.len() <= 4 => {
                let mut d = [SINK_SLOT; 4];
                for (k, item) in items.iter().enumerate() {
                    d[k] = self.dst(item)?;
                }
                Ok((d, items.len() as u8))
            }
            Operand::Vector(items) => unsupported(format!(
                "vectors of {} elements are not supported",
                items.len()
            )),
            other => Ok(([self.dst(other)?, SINK_SLOT, SINK_SLOT, SINK_SLOT], 1)),
        }
    }

    fn vector_srcs(&mut self, op: &Operand, t: Ty) -> DResult<([Slot; 4], u8)> {
        match op {
            Operand::Vector(items) if !items.is_empty() && items.len() <= 4 => {
                let mut s = [SINK_SLOT; 4];
                for (k, item) in items.iter().enumerate() {
                    s[k] = self.src(item, t)?;
                }
                Ok((s, items.len() as u8))
            }
            Operand::Vector(items) => unsupported(format!(
                "vectors of {} elements are not supported",
                items.len()
            )),
            other => Ok(([self.src(other, t)?, SINK_SLOT, SINK_SLOT, SINK_SLOT], 1)),
        }
    }

    // ---- instructions ---------------------------------------------------

    fn decode(&mut self, i: &crate::ast::Inst) -> DResult<()> {
        let m: Vec<&str> = i.mods.iter().map(|s| s.as_str()).collect();
        let o = &i.operands;
        let text = &self.src[i.span.0..i.span.1];
        let need = |n: usize| -> DResult<()> {
            if o.len() == n {
                Ok(())
            } else {
                unsupported(format!("`{}` expects {n} operands", i.opcode))
            }
        };
        let last_ty = |m: &[&str]| -> DResult<Ty> {
            match m.last().and_then(|s| ty(s)) {
                Some(t) => Ok(t),
                None => unsupported(format!("`{}` without a type", i.opcode)),
            }
        };
        let has = |x: &str| m.contains(&x);
        match i.opcode.as_str() {
            "mov" => {
                need(2)?;
                let t = last_ty(&m)?;
                if let Operand::Vector(_) = &o[0] {
                    let (d, n) = self.vector_dsts(&o[0])?;
                    let bits = (t.bits / n as u32) as u8;
                    let a = self.src(&o[1], t)?;
                    self.emit(Op::Unpack { d, n, bits, a });
                } else if let Operand::Vector(items) = &o[1] {
                    let n = items.len() as u32;
                    let part = Ty {
                        kind: Kind::B,
                        bits: t.bits / n.max(1),
                        packed: false,
                        brain: false,
                    };
                    let (s, n) = self.vector_srcs(&o[1], part)?;
                    let d = self.dst(&o[0])?;
                    self.emit(Op::Pack {
                        d,
                        s,
                        n,
                        bits: part.bits as u8,
                    });
                } else {
                    let d = self.dst(&o[0])?;
                    if let Operand::Component(name, comp) = &o[1] {
                        if let Some(reg) = special_reg(name, Some(comp)) {
                            self.emit(Op::Sreg { d, reg });
                            return Ok(());
                        }
                    }
                    if let Operand::Name(name) = &o[1] {
                        if self.lookup(name).is_none() {
                            if let Some(reg) = special_reg(name, None) {
                                self.emit(Op::Sreg { d, reg });
                                return Ok(());
                            }
                        }
                    }
                    let a = self.src(&o[1], t)?;
                    let bits = if t.kind == Kind::Pred { 1 } else { t.bits };
                    self.emit(Op::Mov {
                        d,
                        a,
                        mask: mask(bits),
                    });
                }
            }
            "add" | "sub" => self.add_sub(i.opcode == "sub", &m, o)?,
            "addc" | "subc" => {
                need(3)?;
                let t = last_ty(&m)?;
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                let op = if i.opcode == "addc" {
                    CarryOp::Add
                } else {
                    CarryOp::Sub
                };
                self.emit(Op::Carry {
                    op,
                    bits: t.bits as u8,
                    signed: t.kind == Kind::S,
                    cin: true,
                    cout: has("cc"),
                    d,
                    a,
                    b,
                    c: SINK_SLOT,
                });
            }
            "mul" => self.mul(&m, o)?,
            "mad" | "madc" | "fma" => self.mad(i.opcode.as_str(), &m, o)?,
            "mul24" | "mad24" => {
                let t = last_ty(&m)?;
                let s = t.kind == Kind::S;
                let op = match (has("hi"), s) {
                    (false, false) => IntOp::Mul24LoU,
                    (false, true) => IntOp::Mul24LoS,
                    (true, false) => IntOp::Mul24HiU,
                    (true, true) => IntOp::Mul24HiS,
                };
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                if i.opcode == "mul24" {
                    need(3)?;
                    self.emit(Op::Int {
                        op,
                        bits: 32,
                        d,
                        a,
                        b,
                    });
                } else {
                    need(4)?;
                    if has("sat") {
                        return unsupported("mad24.sat is not implemented");
                    }
                    let c = self.src(&o[3], t)?;
                    let tmp = self.new_slot(32);
                    self.emit(Op::Int {
                        op,
                        bits: 32,
                        d: tmp,
                        a,
                        b,
                    });
                    self.emit(Op::Add {
                        d,
                        a: tmp,
                        b: c,
                        mask: mask(32),
                    });
                }
            }
            "sad" => {
                need(4)?;
                let t = last_ty(&m)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                self.emit(Op::Sad {
                    d,
                    a,
                    b,
                    c,
                    bits: t.bits as u8,
                    signed: t.kind == Kind::S,
                });
            }
            "div" | "rem" | "min" | "max" => self.div_min_max(i.opcode.as_str(), &m, o)?,
            "abs" | "neg" => {
                need(2)?;
                let t = last_ty(&m)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                if let Some(ft) = fty(t) {
                    let op = if i.opcode == "abs" {
                        FOp::Abs
                    } else {
                        FOp::Neg
                    };
                    self.emit(Op::Float {
                        op,
                        ty: ft,
                        rnd: Rnd::Default,
                        ftz: has("ftz"),
                        sat: false,
                        d,
                        a,
                        b: SINK_SLOT,
                        c: SINK_SLOT,
                    });
                } else if t.kind == Kind::S && !t.packed {
                    let op = if i.opcode == "abs" {
                        IntUnOp::AbsS
                    } else {
                        IntUnOp::NegS
                    };
                    self.emit(Op::IntUn {
                        op,
                        bits: t.bits as u8,
                        d,
                        a,
                    });
                } else {
                    return unsupported(format!("`{text}`: type not supported"));
                }
            }
            "popc" | "clz" | "brev" | "bfind" | "cnot" => {
                need(2)?;
                let t = last_ty(&m)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                let op = match (i.opcode.as_str(), t.kind == Kind::S, has("shiftamt")) {
                    ("popc", ..) => IntUnOp::Popc,
                    ("clz", ..) => IntUnOp::Clz,
                    ("brev", ..) => IntUnOp::Brev,
                    ("cnot", ..) => IntUnOp::Cnot,
                    ("bfind", false, false) => IntUnOp::BfindU,
                    ("bfind", true, false) => IntUnOp::BfindS,
                    ("bfind", false, true) => IntUnOp::BfindShiftU,
                    _ => IntUnOp::BfindShiftS,
                };
                self.emit(Op::IntUn {
                    op,
                    bits: t.bits as u8,
                    d,
                    a,
                });
            }
            "and" | "or" | "xor" | "not" => {
                let t = last_ty(&m)?;
                let d = self.dst(&o[0])?;
                if i.opcode == "not" {
                    need(2)?;
                    let a = self.src(&o[1], t)?;
                    self.emit(Op::Not {
                        d,
                        a,
                        mask: mask(if t.kind == Kind::Pred { 1 } else { t.bits }),
                    });
                } else {
                    need(3)?;
                    let (a, b) = (self.src(&o[1], t)?, self.src(&o[2], t)?);
                    self.emit(match i.opcode.as_str() {
                        "and" => Op::And { d, a, b },
                        "or" => Op::Or { d, a, b },
                        _ => Op::Xor { d, a, b },
                    });
                }
            }
            "lop3" => {
                need(5)?;
                let t = last_ty(&m)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                let Operand::Int(lut) = o[4] else {
                    return unsupported("lop3 needs an immediate table");
                };
                self.emit(Op::Lop3 {
                    d,
                    a,
                    b,
                    c,
                    lut: lut as u8,
                });
            }
            "shl" | "shr" => {
                need(3)?;
                let t = last_ty(&m)?;
                let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
                let (d, a, b) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], u32t)?,
                );
                let bits = t.bits as u8;
                self.emit(match (i.opcode.as_str(), t.kind) {
                    ("shl", _) => Op::Shl { d, a, b, bits },
                    (_, Kind::S) => Op::ShrS { d, a, b, bits },
                    _ => Op::ShrU { d, a, b, bits },
                });
            }
            "shf" => {
                need(4)?;
                let t = ty("b32").ok_or(Unsupported("b32".into()))?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                self.emit(Op::Shf {
                    d,
                    a,
                    b,
                    c,
                    left: has("l"),
                    wrap: has("wrap"),
                });
            }
            "bfe" => {
                need(4)?;
                let t = last_ty(&m)?;
                let u = ty("u32").ok_or(Unsupported("u32".into()))?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], u)?,
                    self.src(&o[3], u)?,
                );
                self.emit(Op::Bfe {
                    d,
                    a,
                    b,
                    c,
                    bits: t.bits as u8,
                    signed: t.kind == Kind::S,
                });
            }
            "bfi" => {
                need(5)?;
                let t = last_ty(&m)?;
                let u = ty("u32").ok_or(Unsupported("u32".into()))?;
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                let (c, e) = (self.src(&o[3], u)?, self.src(&o[4], u)?);
                self.emit(Op::Bfi {
                    d,
                    a,
                    b,
                    c,
                    e,
                    bits: t.bits as u8,
                });
            }
            "prmt" => {
                need(4)?;
                let t = ty("b32").ok_or(Unsupported("b32".into()))?;
                let mode = match m.iter().find(|x| !matches!(**x, "b32")) {
                    None => 0,
                    Some(&"f4e") => 1,
                    Some(&"b4e") => 2,
                    Some(&"rc8") => 3,
                    Some(&"ecl") => 4,
                    Some(&"ecr") => 5,
                    Some(&"rc16") => 6,
                    Some(x) => return unsupported(format!("prmt mode .{x}")),
                };
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                self.emit(Op::Prmt { d, a, b, c, mode });
            }
            "fns" => {
                need(4)?;
                let t = ty("b32").ok_or(Unsupported("b32".into()))?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                self.emit(Op::Fns { d, a, b, c });
            }
            "bmsk" | "szext" => {
                need(3)?;
                let t = last_ty(&m)?;
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                let clamp = has("clamp");
                let op = match (i.opcode.as_str(), clamp, t.kind == Kind::S) {
                    ("bmsk", true, _) => IntOp::BmskClamp,
                    ("bmsk", false, _) => IntOp::BmskWrap,
                    (_, true, true) => IntOp::SzextClampS,
                    (_, true, false) => IntOp::SzextClampU,
                    (_, false, true) => IntOp::SzextWrapS,
                    (_, false, false) => IntOp::SzextWrapU,
                };
                self.emit(Op::Int {
                    op,
                    bits: 32,
                    d,
                    a,
                    b,
                });
            }
            "dp4a" | "dp2a" => {
                need(4)?;
                let tys: Vec<Ty> = m.iter().filter_map(|x| ty(x)).collect();
                if tys.len() != 2 {
                    return unsupported("dp4a/dp2a need two types");
                }
                let t = ty("b32").ok_or(Unsupported("b32".into()))?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], t)?,
                );
                let dp2a_hi = if i.opcode == "dp2a" {
                    Some(has("hi"))
                } else {
                    None
                };
                self.emit(Op::Dp {
                    d,
                    a,
                    b,
                    c,
                    a_signed: tys[0].kind == Kind::S,
                    b_signed: tys[1].kind == Kind::S,
                    dp2a_hi,
                });
            }
            "setp" | "set" => self.setp(i.opcode == "set", &m, o)?,
            "selp" => {
                need(4)?;
                let t = last_ty(&m)?;
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                let (c, neg) = self.pred(&o[3])?;
                if neg {
                    self.emit(Op::Selp { d, a: b, b: a, c });
                } else {
                    self.emit(Op::Selp { d, a, b, c });
                }
            }
            "slct" => {
                need(4)?;
                let t = match m.iter().filter_map(|x| ty(x)).next() {
                    Some(t) => t,
                    None => return unsupported("slct without types"),
                };
                let ct = last_ty(&m)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], t)?,
                    self.src(&o[2], t)?,
                    self.src(&o[3], ct)?,
                );
                self.emit(Op::Slct {
                    d,
                    a,
                    b,
                    c,
                    float_c: ct.kind == Kind::F,
                    ftz: has("ftz"),
                });
            }
            "copysign" => {
                need(3)?;
                let t = last_ty(&m)?;
                let Some(ft) = fty(t) else {
                    return unsupported("copysign type");
                };
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
                self.emit(Op::Float {
                    op: FOp::Copysign,
                    ty: ft,
                    rnd: Rnd::Default,
                    ftz: false,
                    sat: false,
                    d,
                    a,
                    b,
                    c: SINK_SLOT,
                });
            }
            "testp" => {
                need(2)?;
                let t = last_ty(&m)?;
                let Some(ft) = fty(t) else {
                    return unsupported("testp type");
                };
                let class = match m.first() {
                    Some(&"finite") => TestClass::Finite,
                    Some(&"infinite") => TestClass::Infinite,
                    Some(&"number") => TestClass::Number,
                    Some(&"notanumber") => TestClass::NotANumber,
                    Some(&"normal") => TestClass::Normal,
                    Some(&"subnormal") => TestClass::Subnormal,
                    _ => return unsupported("testp class"),
                };
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                self.emit(Op::Testp {
                    class,
                    ty: ft,
                    d,
                    a,
                });
            }
            "rcp" | "sqrt" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" => {
                need(2)?;
                let t = last_ty(&m)?;
                let Some(ft) = fty(t) else {
                    return unsupported(format!("`{text}`: type not supported"));
                };
                let approx = has("approx");
                let rnd = m.iter().find_map(|x| parse_rnd(x)).unwrap_or(Rnd::Default);
                let op = match (i.opcode.as_str(), approx, ft) {
                    ("rcp", true, FTy::F64) => FOp::RcpApproxF64,
                    ("rcp", true, _) => FOp::RcpApprox,
                    ("rcp", false, _) => FOp::Rcp,
                    ("sqrt", true, _) => FOp::SqrtApprox,
                    ("sqrt", false, _) => FOp::Sqrt,
                    ("rsqrt", _, FTy::F64) => FOp::RsqrtApproxF64,
                    ("rsqrt", _, _) => FOp::Rsqrt,
                    ("sin", ..) => FOp::Sin,
                    ("cos", ..) => FOp::Cos,
                    ("lg2", ..) => FOp::Lg2,
                    ("ex2", ..) => FOp::Ex2,
                    _ => FOp::Tanh,
                };
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                self.emit(Op::Float {
                    op,
                    ty: ft,
                    rnd,
                    ftz: has("ftz"),
                    sat: false,
                    d,
                    a,
                    b: SINK_SLOT,
                    c: SINK_SLOT,
                });
            }
            "cvt" => self.cvt(&m, o)?,
            "cvta" => {
                need(2)?;
                let to = has("to");
                let Some(space) = m.iter().find_map(|x| parse_space(x)) else {
                    return unsupported("cvta space");
                };
                let t = last_ty(&m)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                self.emit(Op::Cvta {
                    d,
                    a,
                    space,
                    to,
                    bits: t.bits as u8,
                });
            }
            "isspacep" => {
                need(2)?;
                let Some(space) = m.iter().find_map(|x| parse_space(x)) else {
                    return unsupported("isspacep space");
                };
                let t = ty("u64").ok_or(Unsupported("u64".into()))?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], t)?);
                self.emit(Op::Isspacep { d, a, space });
            }
            "ld" | "ldu" | "st" => self.ld_st(i.opcode == "st", &m, o)?,
            "prefetch" | "prefetchu" | "applypriority" | "discard" | "pmevent"
            | "griddepcontrol" | "setmaxnreg" => {
                if i.opcode == "prefetch" && has("tensormap") {
                    return unsupported("prefetch.tensormap (TMA) is not implemented");
                }
                self.emit(Op::Nop);
            }
            "createpolicy" => {
                let d = self.dst(&o[0])?;
                let z = self.konst(0);
                self.emit(Op::Mov {
                    d,
                    a: z,
                    mask: u64::MAX,
                });
            }
            "atom" | "red" => self.atom(i.opcode == "red", &m, o)?,
            "fence" => {
                if has("proxy") || has("mbarrier_init") || m.iter().any(|x| x.starts_with("proxy"))
                {
                    self.emit(Op::Nop);
                } else if has("sc") {
                    self.emit(Op::Fence {
                        order: Order::SeqCst,
                    });
                } else {
                    self.emit(Op::Fence {
                        order: Order::AcqRel,
                    });
                }
            }
            "membar" => self.emit(Op::Fence {
                order: Order::SeqCst,
            }),
            "bar" | "barrier" => self.barrier(i.opcode == "bar" || m.contains(&"aligned"), &m, o)?,
            "shfl" => {
                if !has("sync") {
                    return unsupported("shfl without .sync (sm_6x) is not supported");
                }
                need(5)?;
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                let mode = if has("up") {
                    ShflMode::Up
                } else if has("down") {
                    ShflMode::Down
                } else if has("bfly") {
                    ShflMode::Bfly
                } else if has("idx") {
                    ShflMode::Idx
                } else {
                    return unsupported("shfl mode");
                };
                let (d, p) = match &o[0] {
                    Operand::Pair(d, p) => (self.dst(d)?, self.dst(p)?),
                    other => (self.dst(other)?, SINK_SLOT),
                };
                let (a, b, c, mask) = (
                    self.src(&o[1], b32)?,
                    self.src(&o[2], b32)?,
                    self.src(&o[3], b32)?,
                    self.src(&o[4], b32)?,
                );
                self.collective(Collective::Shfl {
                    mode,
                    d,
                    p,
                    a,
                    b,
                    c,
                    mask,
                });
            }
            "vote" => {
                if !has("sync") {
                    return unsupported("vote without .sync (sm_6x) is not supported");
                }
                need(3)?;
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                let mode = if has("all") {
                    VoteMode::All
                } else if has("any") {
                    VoteMode::Any
                } else if has("uni") {
                    VoteMode::Uni
                } else if has("ballot") {
                    VoteMode::Ballot
                } else {
                    return unsupported("vote mode");
                };
                let d = self.dst(&o[0])?;
                let (a, a_neg) = self.pred(&o[1])?;
                let mask = self.src(&o[2], b32)?;
                self.collective(Collective::Vote {
                    mode,
                    d,
                    a,
                    a_neg,
                    mask,
                });
            }
            "match" => {
                need(3)?;
                let t = last_ty(&m)?;
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                let (d, p) = match &o[0] {
                    Operand::Pair(d, p) => (self.dst(d)?, self.dst(p)?),
                    other => (self.dst(other)?, SINK_SLOT),
                };
                let (a, mask) = (self.src(&o[1], t)?, self.src(&o[2], b32)?);
                self.collective(Collective::Match {
                    all: has("all"),
                    d,
                    p,
                    a,
                    mask,
                });
            }
            "redux" => {
                need(3)?;
                let t = last_ty(&m)?;
                if t.kind == Kind::F {
                    return unsupported("redux.sync on floats is not implemented");
                }
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                let s = t.kind == Kind::S;
                let op = if has("add") {
                    ReduxOp::Add
                } else if has("min") {
                    if s {
                        ReduxOp::MinS
                    } else {
                        ReduxOp::MinU
                    }
                } else if has("max") {
                    if s {
                        ReduxOp::MaxS
                    } else {
                        ReduxOp::MaxU
                    }
                } else if has("and") {
                    ReduxOp::And
                } else if has("or") {
                    ReduxOp::Or
                } else if has("xor") {
                    ReduxOp::Xor
                } else {
                    return unsupported("redux operation");
                };
                let (d, a, mask) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], b32)?);
                self.collective(Collective::Redux { op, d, a, mask });
            }
            "activemask" => {
                need(1)?;
                let d = self.dst(&o[0])?;
                self.collective(Collective::Activemask { d });
            }
            "elect" => {
                need(2)?;
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                let (d, p) = match &o[0] {
                    Operand::Pair(d, p) => (self.dst(d)?, self.dst(p)?),
                    other => (SINK_SLOT, self.dst(other)?),
                };
                let mask = self.src(&o[1], b32)?;
                self.collective(Collective::Elect { d, p, mask });
            }
            "mapa" | "getctarank" => {
                let t = last_ty(&m)?;
                let generic = !m.iter().any(|x| x.starts_with("shared"));
                let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                if i.opcode == "mapa" {
                    need(3)?;
                    let rank = self.src(&o[2], u32t)?;
                    self.emit(Op::Mapa {
                        d,
                        a,
                        rank,
                        generic,
                    });
                } else {
                    need(2)?;
                    self.emit(Op::Getctarank { d, a, generic });
                }
            }
            "cp" => self.cp(&m, o, text)?,
            "mbarrier" => self.mbarrier(&m, o)?,
            "ldmatrix" | "stmatrix" => {
                need(2)?;
                let n = if has("x1") {
                    1
                } else if has("x2") {
                    2
                } else if has("x4") {
                    4
                } else {
                    return unsupported("ldmatrix/stmatrix count");
                };
                if !has("m8n8") || !has("b16") {
                    return unsupported(format!(
                        "`{text}`: only m8n8 .b16 matrices are implemented"
                    ));
                }
                let space = if m.iter().any(|x| x.starts_with("shared")) {
                    MemSpace::Shared
                } else {
                    MemSpace::Generic
                };
                let trans = has("trans");
                let b32 = ty("b32").ok_or(Unsupported("b32".into()))?;
                if i.opcode == "ldmatrix" {
                    let (d, k) = self.vector_dsts(&o[0])?;
                    let (addr, off) = self.address(&o[1])?;
                    if k != n {
                        return unsupported("ldmatrix register count");
                    }
                    self.collective(Collective::Ldmatrix {
                        n,
                        trans,
                        d,
                        addr,
                        off,
                        space,
                    });
                } else {
                    let (addr, off) = self.address(&o[0])?;
                    let (s, k) = self.vector_srcs(&o[1], b32)?;
                    if k != n {
                        return unsupported("stmatrix register count");
                    }
                    self.collective(Collective::Stmatrix {
                        n,
                        trans,
                        s,
                        addr,
                        off,
                        space,
                    });
                }
            }
            "bra" => {
                need(1)?;
                let id = self.label(&o[0])?;
                self.emit(Op::Bra { target: 0 });
                let (line, column) = (i.line, i.column);
                self.fixups.push((self.code.len() - 1, id, line, column));
            }
            "brx" => {
                need(2)?;
                let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
                let index = self.src(&o[0], u32t)?;
                let table = match &o[1] {
                    Operand::Name(n) => match self.lookup(n) {
                        Some(Sym::Table(t)) => *t,
                        _ => return unsupported(format!("`{n}` is not a .branchtargets list")),
                    },
                    _ => return unsupported("brx.idx needs a .branchtargets list"),
                };
                self.emit(Op::BrxIdx { index, table });
            }
            "call" => self.call(o)?,
            "ret" => self.emit(Op::Ret),
            "exit" => self.emit(Op::Exit),
            "trap" => self.emit(Op::Trap),
            "brkpt" => self.emit(Op::Nop),
            "nanosleep" => self.emit(Op::Yield),
            // The driver's JIT refuses a module holding a name PTX does not
            // have; one it has but the VM does not run refuses only the
            // launches that reach it (crate::opcodes).
            other if !crate::opcodes::is_instruction(other) => {
                return unsupported(format!("error: `{other}` is not the name of a PTX instruction"))
            }
            other => return unsupported(format!("`{other}` is not implemented")),
        }
        Ok(())
    }

    fn collective(&mut self, c: Collective) {
        let index = self.collectives.len() as u32;
        self.collectives.push(c);
        self.emit(Op::Collective { index });
    }

    fn float_rnd(m: &[&str]) -> Rnd {
        m.iter().find_map(|x| parse_rnd(x)).unwrap_or(Rnd::Default)
    }

    fn add_sub(&mut self, sub: bool, m: &[&str], o: &[Operand]) -> DResult<()> {
        if o.len() != 3 {
            return unsupported("add/sub expect 3 operands");
        }
        let t = match m.last().and_then(|s| ty(s)) {
            Some(t) => t,
            None => return unsupported("add/sub without a type"),
        };
        let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
        if let Some(ft) = fty(t) {
            let op = if sub { FOp::Sub } else { FOp::Add };
            self.emit(Op::Float {
                op,
                ty: ft,
                rnd: Self::float_rnd(m),
                ftz: m.contains(&"ftz"),
                sat: m.contains(&"sat"),
                d,
                a,
                b,
                c: SINK_SLOT,
            });
            return Ok(());
        }
        if t.packed {
            if m.contains(&"sat") {
                return unsupported("saturating 16x2 add/sub is not implemented");
            }
            let op = if sub {
                IntOp::SubU16x2
            } else {
                IntOp::AddU16x2
            };
            self.emit(Op::Int {
                op,
                bits: 32,
                d,
                a,
                b,
            });
            return Ok(());
        }
        if m.contains(&"cc") {
            let op = if sub { CarryOp::Sub } else { CarryOp::Add };
            self.emit(Op::Carry {
                op,
                bits: t.bits as u8,
                signed: t.kind == Kind::S,
                cin: false,
                cout: true,
                d,
                a,
                b,
                c: SINK_SLOT,
            });
            return Ok(());
        }
        if m.contains(&"sat") {
            if t.kind != Kind::S || t.bits != 32 {
                return unsupported("add.sat exists only for .s32");
            }
            let op = if sub { IntOp::SubSatS } else { IntOp::AddSatS };
            self.emit(Op::Int {
                op,
                bits: 32,
                d,
                a,
                b,
            });
            return Ok(());
        }
        let mask = mask(t.bits);
        self.emit(if sub {
            Op::Sub { d, a, b, mask }
        } else {
            Op::Add { d, a, b, mask }
        });
        Ok(())
    }

    fn mul(&mut self, m: &[&str], o: &[Operand]) -> DResult<()> {
        if o.len() != 3 {
            return unsupported("mul expects 3 operands");
        }
        let Some(t) = m.last().and_then(|s| ty(s)) else {
            return unsupported("mul without a type");
        };
        let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
        if let Some(ft) = fty(t) {
            self.emit(Op::Float {
                op: FOp::Mul,
                ty: ft,
                rnd: Self::float_rnd(m),
                ftz: m.contains(&"ftz"),
                sat: m.contains(&"sat"),
                d,
                a,
                b,
                c: SINK_SLOT,
            });
            return Ok(());
        }
        let signed = t.kind == Kind::S;
        if m.contains(&"wide") {
            self.emit(Op::MulWide {
                d,
                a,
                b,
                bits: t.bits as u8,
                signed,
            });
        } else if m.contains(&"hi") {
            let op = if signed { IntOp::MulHiS } else { IntOp::MulHiU };
            self.emit(Op::Int {
                op,
                bits: t.bits as u8,
                d,
                a,
                b,
            });
        } else {
            self.emit(Op::MulLo {
                d,
                a,
                b,
                mask: mask(t.bits),
            });
        }
        Ok(())
    }

    fn mad(&mut self, opcode: &str, m: &[&str], o: &[Operand]) -> DResult<()> {
        if o.len() != 4 {
            return unsupported(format!("{opcode} expects 4 operands"));
        }
        let Some(t) = m.last().and_then(|s| ty(s)) else {
            return unsupported("mad without a type");
        };
        if let Some(ft) = fty(t) {
            let (d, a, b, c) = (
                self.dst(&o[0])?,
                self.src(&o[1], t)?,
                self.src(&o[2], t)?,
                self.src(&o[3], t)?,
            );
            self.emit(Op::Float {
                op: FOp::Fma,
                ty: ft,
                rnd: Self::float_rnd(m),
                ftz: m.contains(&"ftz"),
                sat: m.contains(&"sat"),
                d,
                a,
                b,
                c,
            });
            return Ok(());
        }
        let signed = t.kind == Kind::S;
        let kind = if m.contains(&"wide") {
            MadKind::Wide
        } else if m.contains(&"hi") {
            MadKind::Hi
        } else {
            MadKind::Lo
        };
        // The wide form's addend and result are twice as wide.
        let ct = if kind == MadKind::Wide {
            Ty {
                bits: t.bits * 2,
                ..t
            }
        } else {
            t
        };
        let (d, a, b, c) = (
            self.dst(&o[0])?,
            self.src(&o[1], t)?,
            self.src(&o[2], t)?,
            self.src(&o[3], ct)?,
        );
        let cin = opcode == "madc";
        let cout = m.contains(&"cc");
        if cin || cout {
            let op = match kind {
                MadKind::Lo => CarryOp::MadLo,
                MadKind::Hi => CarryOp::MadHi,
                MadKind::Wide => return unsupported("mad.wide with carry is not implemented"),
            };
            self.emit(Op::Carry {
                op,
                bits: t.bits as u8,
                signed,
                cin,
                cout,
                d,
                a,
                b,
                c,
            });
            return Ok(());
        }
        self.emit(Op::Mad {
            kind,
            bits: t.bits as u8,
            signed,
            sat: m.contains(&"sat"),
            d,
            a,
            b,
            c,
        });
        Ok(())
    }

    fn div_min_max(&mut self, opcode: &str, m: &[&str], o: &[Operand]) -> DResult<()> {
        if o.len() != 3 {
            return unsupported(format!("{opcode} expects 3 operands"));
        }
        let Some(t) = m.last().and_then(|s| ty(s)) else {
            return unsupported(format!("{opcode} without a type"));
        };
        let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], t)?, self.src(&o[2], t)?);
        if let Some(ft) = fty(t) {
            let nan = m.contains(&"NaN");
            if m.contains(&"xorsign") {
                return unsupported("min/max .xorsign.abs is not implemented");
            }
            let op = match opcode {
                "div" if m.contains(&"approx") => FOp::DivApprox,
                "div" if m.contains(&"full") => FOp::DivFull,
                "div" => FOp::Div,
                "min" if nan => FOp::MinNaN,
                "min" => FOp::Min,
                "max" if nan => FOp::MaxNaN,
                "max" => FOp::Max,
                _ => return unsupported("rem on floats does not exist"),
            };
            self.emit(Op::Float {
                op,
                ty: ft,
                rnd: Self::float_rnd(m),
                ftz: m.contains(&"ftz"),
                sat: false,
                d,
                a,
                b,
                c: SINK_SLOT,
            });
            return Ok(());
        }
        let s = t.kind == Kind::S;
        let relu = m.contains(&"relu");
        if relu && !(s && matches!(opcode, "min" | "max") && (t.bits == 32 || t.packed)) {
            return unsupported(format!("{opcode}.relu exists for .s32 and .s16x2 only"));
        }
        let op = match (opcode, s, t.packed) {
            ("div", false, false) => IntOp::DivU,
            ("div", true, false) => IntOp::DivS,
            ("rem", false, false) => IntOp::RemU,
            ("rem", true, false) => IntOp::RemS,
            ("min", false, false) => IntOp::MinU,
            ("min", true, false) => IntOp::MinS,
            ("max", false, false) => IntOp::MaxU,
            ("max", true, false) => IntOp::MaxS,
            ("min", false, true) => IntOp::MinU16x2,
            ("min", true, true) => IntOp::MinS16x2,
            ("max", false, true) => IntOp::MaxU16x2,
            ("max", true, true) => IntOp::MaxS16x2,
            _ => return unsupported(format!("{opcode} on packed integers")),
        };
        self.emit(Op::Int {
            op,
            bits: t.bits as u8,
            d,
            a,
            b,
        });
        if relu {
            // `.relu` clamps a negative result (each negative half of a
            // packed one) to 0: the signed maximum with 0, on the result.
            let zero = self.konst(0);
            let op = if t.packed { IntOp::MaxS16x2 } else { IntOp::MaxS };
            self.emit(Op::Int {
                op,
                bits: t.bits as u8,
                d,
                a: d,
                b: zero,
            });
        }
        Ok(())
    }

    fn setp(&mut self, is_set: bool, m: &[&str], o: &[Operand]) -> DResult<()> {
        let Some(cmp) = m.first().and_then(|x| parse_cmp(x)) else {
            return unsupported("setp/set comparison");
        };
        // setp.CmpOp{.ftz}{.BoolOp}.type
        let bop = if m.contains(&"and") {
            BoolOp::And
        } else if m.contains(&"or") {
            BoolOp::Or
        } else if m.contains(&"xor") {
            BoolOp::Xor
        } else {
            BoolOp::None
        };
        let types: Vec<Ty> = m.iter().filter_map(|x| ty(x)).collect();
        let (src_t, dty) = if is_set {
            if types.len() != 2 {
                return unsupported("set needs a destination and a source type");
            }
            let dty = if types[0].kind == Kind::F {
                SetTy::F32
            } else {
                SetTy::Int
            };
            if types[0].bits != 32 || types[0].packed {
                return unsupported("set: only 32-bit destinations are implemented");
            }
            (types[1], dty)
        } else {
            match types.last() {
                Some(t) => (*t, SetTy::Int),
                None => return unsupported("setp without a type"),
            }
        };
        let cty = match (src_t.kind, src_t.packed) {
            (_, true) => return unsupported("comparisons of packed types are not implemented"),
            (Kind::F, _) => match fty(src_t) {
                Some(FTy::F16) => CmpTy::F16,
                Some(FTy::BF16) => CmpTy::BF16,
                Some(FTy::F32) if m.contains(&"ftz") => CmpTy::F32Ftz,
                Some(FTy::F32) => CmpTy::F32,
                Some(FTy::F64) => CmpTy::F64,
                _ => return unsupported("comparison type"),
            },
            (Kind::S, _) => CmpTy::S(src_t.bits as u8),
            (Kind::Pred, _) => CmpTy::U(1),
            _ => CmpTy::U(src_t.bits as u8),
        };
        let expected = if bop == BoolOp::None { 3 } else { 4 };
        if o.len() != expected {
            return unsupported("setp/set operand count");
        }
        let (d, d2) = match &o[0] {
            Operand::Pair(d, p) => (self.dst(d)?, self.dst(p)?),
            other => (self.dst(other)?, SINK_SLOT),
        };
        let (a, b) = (self.src(&o[1], src_t)?, self.src(&o[2], src_t)?);
        let (c, c_neg) = if bop == BoolOp::None {
            (TRUE_SLOT, false)
        } else {
            self.pred(&o[3])?
        };
        if is_set {
            self.emit(Op::Set {
                cmp,
                ty: cty,
                dty,
                d,
                a,
                b,
                bop,
                c,
                c_neg,
            });
        } else {
            self.emit(Op::Setp {
                cmp,
                ty: cty,
                d,
                d2,
                a,
                b,
                bop,
                c,
                c_neg,
            });
        }
        Ok(())
    }

    fn cvt(&mut self, m: &[&str], o: &[Operand]) -> DResult<()> {
        let cvt_ty = |s: &str| -> Option<CvtTy> {
            Some(match s {
                "u8" | "b8" => CvtTy::U(8),
                "u16" | "b16" => CvtTy::U(16),
                "u32" | "b32" => CvtTy::U(32),
                "u64" | "b64" => CvtTy::U(64),
                "s8" => CvtTy::S(8),
                "s16" => CvtTy::S(16),
                "s32" => CvtTy::S(32),
                "s64" => CvtTy::S(64),
                "f16" => CvtTy::F16,
                "bf16" => CvtTy::BF16,
                "tf32" => CvtTy::TF32,
                "f32" => CvtTy::F32,
                "f64" => CvtTy::F64,
                "f16x2" => CvtTy::F16x2,
                "bf16x2" => CvtTy::BF16x2,
                "e4m3x2" => CvtTy::E4M3x2,
                "e5m2x2" => CvtTy::E5M2x2,
                _ => return None,
            })
        };
        let mut types = Vec::new();
        let mut rnd = Rnd::Default;
        let (mut ftz, mut sat, mut relu, mut satfinite) = (false, false, false, false);
        for x in m {
            if let Some(t) = cvt_ty(x) {
                types.push(t);
            } else if let Some(r) = parse_rnd(x) {
                rnd = r;
            } else {
                match *x {
                    "ftz" => ftz = true,
                    "sat" => sat = true,
                    "relu" => relu = true,
                    "satfinite" => satfinite = true,
                    other => return unsupported(format!("cvt modifier .{other}")),
                }
            }
        }
        if types.len() != 2 {
            return unsupported(
                "cvt needs two types (packed 8/6/4-bit float formats are not implemented)",
            );
        }
        let (dst, src) = (types[0], types[1]);
        let src_ty = |t: CvtTy| -> Ty {
            match t {
                CvtTy::U(b) => Ty {
                    kind: Kind::U,
                    bits: b as u32,
                    packed: false,
                    brain: false,
                },
                CvtTy::S(b) => Ty {
                    kind: Kind::S,
                    bits: b as u32,
                    packed: false,
                    brain: false,
                },
                CvtTy::F16 => Ty {
                    kind: Kind::F,
                    bits: 16,
                    packed: false,
                    brain: false,
                },
                CvtTy::BF16 => Ty {
                    kind: Kind::F,
                    bits: 16,
                    packed: false,
                    brain: true,
                },
                CvtTy::F32 | CvtTy::TF32 => Ty {
                    kind: Kind::F,
                    bits: 32,
                    packed: false,
                    brain: false,
                },
                CvtTy::F64 => Ty {
                    kind: Kind::F,
                    bits: 64,
                    packed: false,
                    brain: false,
                },
                CvtTy::F16x2 | CvtTy::BF16x2 => Ty {
                    kind: Kind::B,
                    bits: 32,
                    packed: false,
                    brain: false,
                },
                CvtTy::E4M3x2 | CvtTy::E5M2x2 => Ty {
                    kind: Kind::B,
                    bits: 16,
                    packed: false,
                    brain: false,
                },
            }
        };
        let is_fp8 = |t: CvtTy| matches!(t, CvtTy::E4M3x2 | CvtTy::E5M2x2);
        if is_fp8(dst) || is_fp8(src) {
            // PTX has these forms only: to FP8 from two f32 or an f16x2
            // (`.rn.satfinite`), and from FP8 to f16x2 (`.rn`).
            let to_fp8 = is_fp8(dst);
            let form_ok = if to_fp8 {
                satfinite && matches!(src, CvtTy::F32 | CvtTy::F16x2)
            } else {
                !satfinite && dst == CvtTy::F16x2
            };
            if !form_ok || rnd != Rnd::Rn || relu || ftz || sat {
                return unsupported(
                    "cvt with FP8: only cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2} and cvt.rn.f16x2.{e4m3x2,e5m2x2} are implemented",
                );
            }
            let two = to_fp8 && src == CvtTy::F32;
            if o.len() != if two { 3 } else { 2 } {
                return unsupported("cvt operand count");
            }
            let d = self.dst(&o[0])?;
            let a = self.src(&o[1], src_ty(src))?;
            let b = if two { self.src(&o[2], src_ty(src))? } else { SINK_SLOT };
            self.emit(Op::Cvt {
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
            });
            return Ok(());
        }
        let packed = matches!(dst, CvtTy::F16x2 | CvtTy::BF16x2);
        if packed && src != CvtTy::F32 {
            return unsupported(
                "cvt to f16x2/bf16x2 from other than two f32 values is not implemented",
            );
        }
        if matches!(src, CvtTy::F16x2 | CvtTy::BF16x2) {
            return unsupported("cvt from packed types is not implemented");
        }
        if o.len() != if packed { 3 } else { 2 } {
            return unsupported("cvt operand count");
        }
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], src_ty(src))?;
        let b = if packed {
            self.src(&o[2], src_ty(src))?
        } else {
            SINK_SLOT
        };
        self.emit(Op::Cvt {
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
        });
        // A signed result narrower than its register is sign-extended to it.
        if let CvtTy::S(bits) = dst {
            let t = Ty {
                kind: Kind::S,
                bits: bits as u32,
                packed: false,
                brain: false,
            };
            self.sign_extend(t, &[d]);
        }
        Ok(())
    }

    fn ld_st(&mut self, store: bool, m: &[&str], o: &[Operand]) -> DResult<()> {
        if o.len() != 2 {
            return unsupported("ld/st expect 2 operands");
        }
        let mut space = MemSpace::Generic;
        let mut order = Order::Relaxed;
        let mut n = 1u8;
        let mut t = None;
        for x in m {
            if let Some(s) = parse_space(x) {
                space = s;
            } else if let Some(tt) = ty(x) {
                t = Some(tt);
            } else {
                match *x {
                    "v2" => n = 2,
                    "v4" => n = 4,
                    "volatile" | "relaxed" | "weak" | "mmio" => {}
                    "acquire" => order = Order::Acquire,
                    "release" => order = Order::Release,
                    s if is_scope(s) || is_cache_hint(s) => {}
                    "v8" => return unsupported(".v8 accesses are not implemented"),
                    other => return unsupported(format!("ld/st modifier .{other}")),
                }
            }
        }
        let Some(t) = t else {
            return unsupported("ld/st without a type");
        };
        if t.bits > 64 {
            return unsupported("128-bit ld/st is not implemented");
        }
        let size = (if t.kind == Kind::Pred { 8 } else { t.bits } / 8) as u8;
        let (mem, val) = if store {
            (&o[0], &o[1])
        } else {
            (&o[1], &o[0])
        };
        // Parameters named directly: this frame's or the kernel's.
        if let Operand::Address {
            base: Some(name),
            offset,
        } = mem
        {
            match self.lookup(name).cloned() {
                Some(Sym::FrameParam { off, .. }) => {
                    let off = (off as i64 + offset) as u32;
                    if store {
                        let (s, n) = self.vector_srcs(val, t)?;
                        self.emit(Op::StParam { size, n, s, off });
                    } else {
                        let (d, n) = self.vector_dsts(val)?;
                        self.emit(Op::LdParam { size, n, d, off });
                        self.sign_extend(t, &d[..n as usize]);
                    }
                    return Ok(());
                }
                Some(Sym::KernelParam { off }) => {
                    if store {
                        return unsupported("kernel parameters are read-only");
                    }
                    let (d, n) = self.vector_dsts(val)?;
                    self.emit(Op::LdKernelParam {
                        size,
                        n,
                        d,
                        off: (off as i64 + offset) as u32,
                    });
                    self.sign_extend(t, &d[..n as usize]);
                    return Ok(());
                }
                _ => {}
            }
        }
        if space == MemSpace::KernelParam && !self.f.entry {
            return unsupported("ld.param through an address in a .func is not implemented");
        }
        let (addr, off) = self.address(mem)?;
        if store {
            let (s, n2) = self.vector_srcs(val, t)?;
            if n2 != n {
                return unsupported("vector width and operand count differ");
            }
            self.emit(Op::St {
                space,
                order,
                size,
                n,
                s,
                addr,
                off,
            });
        } else {
            let (d, n2) = self.vector_dsts(val)?;
            if n2 != n {
                return unsupported("vector width and operand count differ");
            }
            self.emit(Op::Ld {
                space,
                order,
                size,
                n,
                d,
                addr,
                off,
            });
            self.sign_extend(t, &d[..n as usize]);
        }
        Ok(())
    }

    /// After a signed load narrower than its registers: the upper bits of a
    /// wider destination hold copies of the sign.
    fn sign_extend(&mut self, t: Ty, dsts: &[Slot]) {
        if t.kind != Kind::S {
            return;
        }
        for &d in dsts {
            let bits = self.dst_bits(d) as u32;
            if d != SINK_SLOT && bits > t.bits {
                self.emit(Op::Sext {
                    d,
                    a: d,
                    from: t.bits as u8,
                    mask: mask(bits),
                });
            }
        }
    }

    fn atom(&mut self, red: bool, m: &[&str], o: &[Operand]) -> DResult<()> {
        let mut space = MemSpace::Generic;
        let mut order = Order::Relaxed;
        let mut op_name = None;
        let mut t = None;
        for x in m {
            if let Some(s) = parse_space(x) {
                space = s;
            } else if let Some(tt) = ty(x) {
                t = Some(tt);
            } else {
                match *x {
                    "relaxed" => order = Order::Relaxed,
                    "acquire" => order = Order::Acquire,
                    "release" => order = Order::Release,
                    "acq_rel" => order = Order::AcqRel,
                    "noftz" => {}
                    s if is_scope(s) || is_cache_hint(s) => {}
                    "and" | "or" | "xor" | "exch" | "cas" | "add" | "inc" | "dec" | "min"
                    | "max" => op_name = Some(*x),
                    "v2" | "v4" | "v8" => return unsupported("vector atomics are not implemented"),
                    other => return unsupported(format!("atom modifier .{other}")),
                }
            }
        }
        let (Some(op_name), Some(t)) = (op_name, t) else {
            return unsupported("atom needs an operation and a type");
        };
        let f = fty(t);
        let op = match (op_name, t.kind, f) {
            ("add", _, Some(FTy::F32)) => AtomOp::AddF32,
            ("add", _, Some(FTy::F64)) => AtomOp::AddF64,
            ("add", _, Some(FTy::F16)) => AtomOp::AddF16,
            ("add", _, Some(FTy::BF16)) => AtomOp::AddBF16,
            ("add", _, Some(FTy::F16x2)) => AtomOp::AddF16x2,
            ("add", _, Some(FTy::BF16x2)) => AtomOp::AddBF16x2,
            ("min", _, Some(FTy::F32)) => AtomOp::MinF32,
            ("max", _, Some(FTy::F32)) => AtomOp::MaxF32,
            (_, _, Some(_)) if op_name != "exch" && op_name != "cas" => {
                return unsupported(format!(
                    "atom.{op_name} on this float type is not implemented"
                ))
            }
            ("add", ..) => AtomOp::Add,
            ("and", ..) => AtomOp::And,
            ("or", ..) => AtomOp::Or,
            ("xor", ..) => AtomOp::Xor,
            ("exch", ..) => AtomOp::Exch,
            ("cas", ..) => AtomOp::Cas,
            ("inc", ..) => AtomOp::Inc,
            ("dec", ..) => AtomOp::Dec,
            ("min", Kind::S, _) => AtomOp::MinS,
            ("max", Kind::S, _) => AtomOp::MaxS,
            ("min", ..) => AtomOp::MinU,
            _ => AtomOp::MaxU,
        };
        if t.bits > 64 || t.bits < 16 {
            return unsupported("atomics of this width are not implemented");
        }
        if t.bits == 16
            && !matches!(
                op,
                AtomOp::AddF16 | AtomOp::AddBF16 | AtomOp::Cas | AtomOp::Exch
            )
        {
            return unsupported(
                "16-bit atomics other than add.f16/bf16 and cas are not implemented",
            );
        }
        let size = (t.bits / 8) as u8;
        let cas = op == AtomOp::Cas;
        let expected = if red { 2 } else { 3 } + cas as usize;
        if o.len() != expected {
            return unsupported("atom/red operand count");
        }
        let mut k = 0;
        let d = if red {
            SINK_SLOT
        } else {
            k = 1;
            self.dst(&o[0])?
        };
        let (addr, off) = self.address(&o[k])?;
        let b = self.src(&o[k + 1], t)?;
        let c = if cas {
            self.src(&o[k + 2], t)?
        } else {
            SINK_SLOT
        };
        self.emit(Op::Atom {
            space,
            op,
            order,
            size,
            d,
            addr,
            off,
            b,
            c,
        });
        Ok(())
    }

    /// `bar`/`barrier` (`bar.sync` is `barrier.sync.aligned`: `aligned`
    /// says which, for the check that a warp's lanes meet at one
    /// instruction), `bar.warp.sync`, `barrier.cluster`.
    fn barrier(&mut self, aligned: bool, m: &[&str], o: &[Operand]) -> DResult<()> {
        let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
        if m.contains(&"warp") {
            if o.len() != 1 {
                return unsupported("bar.warp.sync expects a mask");
            }
            let mask = self.src(&o[0], u32t)?;
            self.collective(Collective::WarpSync { mask });
            return Ok(());
        }
        if m.contains(&"cluster") {
            if m.contains(&"arrive") {
                self.collective(Collective::ClusterArrive);
            } else if m.contains(&"wait") {
                self.collective(Collective::ClusterWait);
            } else {
                return unsupported("barrier.cluster form");
            }
            return Ok(());
        }
        let kind = if m.contains(&"sync") {
            BarKind::Sync
        } else if m.contains(&"arrive") {
            BarKind::Arrive
        } else if m.contains(&"red") {
            if m.contains(&"popc") {
                BarKind::RedPopc
            } else if m.contains(&"and") {
                BarKind::RedAnd
            } else if m.contains(&"or") {
                BarKind::RedOr
            } else {
                return unsupported("bar.red operation");
            }
        } else {
            return unsupported("barrier form");
        };
        let red = matches!(kind, BarKind::RedPopc | BarKind::RedAnd | BarKind::RedOr);
        let (d, rest) = if red {
            (self.dst(&o[0])?, &o[1..])
        } else {
            (SINK_SLOT, o)
        };
        let (pred, pred_neg, rest) = if red {
            let Some(last) = rest.last() else {
                return unsupported("bar.red needs a predicate");
            };
            let (p, neg) = self.pred(last)?;
            (p, neg, &rest[..rest.len() - 1])
        } else {
            (TRUE_SLOT, false, rest)
        };
        if rest.is_empty() || rest.len() > 2 {
            return unsupported("barrier operand count");
        }
        let id = self.src(&rest[0], u32t)?;
        let count = if rest.len() == 2 {
            Some(self.src(&rest[1], u32t)?)
        } else {
            None
        };
        self.collective(Collective::Barrier {
            kind,
            aligned,
            id,
            count,
            d,
            pred,
            pred_neg,
        });
        Ok(())
    }

    fn cp(&mut self, m: &[&str], o: &[Operand], text: &str) -> DResult<()> {
        if m.first() != Some(&"async") {
            return unsupported(format!("`{text}` is not implemented"));
        }
        if m.contains(&"bulk") && m.contains(&"prefetch") && !m.contains(&"tensor") {
            // A hint to L2, which the VM does not model: no value changes.
            self.emit(Op::Nop);
            return Ok(());
        }
        if m.contains(&"bulk") {
            return unsupported("cp.async.bulk (TMA) is not implemented");
        }
        if m.contains(&"commit_group") || m.contains(&"wait_group") || m.contains(&"wait_all") {
            // Copies complete when issued, so every group is complete.
            self.emit(Op::Nop);
            return Ok(());
        }
        if m.contains(&"mbarrier") {
            return unsupported("cp.async.mbarrier.arrive is not implemented");
        }
        if o.len() < 3 {
            return unsupported("cp.async operand count");
        }
        let (dst, dst_off) = self.address(&o[0])?;
        let (src, src_off) = self.address(&o[1])?;
        let size = match o[2] {
            Operand::Int(s @ (4 | 8 | 16)) => s,
            _ => return unsupported("cp.async copies 4, 8 or 16 bytes, given as an immediate"),
        };
        let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
        let src_size = if o.len() >= 4 && !m.contains(&"L2::cache_hint") {
            self.src(&o[3], u32t)?
        } else {
            SINK_SLOT
        };
        self.emit(Op::CpAsync {
            dst,
            dst_off,
            src,
            src_off,
            size: size as u8,
            src_size,
        });
        Ok(())
    }

    fn mbarrier(&mut self, m: &[&str], o: &[Operand]) -> DResult<()> {
        let space = if m.iter().any(|x| x.starts_with("shared")) {
            MemSpace::Shared
        } else {
            MemSpace::Generic
        };
        let b64 = ty("b64").ok_or(Unsupported("b64".into()))?;
        let u32t = ty("u32").ok_or(Unsupported("u32".into()))?;
        let parity = m.contains(&"parity");
        let Some(&first) = m.first() else {
            return unsupported("mbarrier operation");
        };
        let op = match first {
            "init" => MbarOp::Init,
            "inval" => MbarOp::Inval,
            "arrive" if m.contains(&"expect_tx") => MbarOp::ArriveExpectTx,
            "arrive" if m.contains(&"noComplete") => MbarOp::ArriveNoComplete,
            "arrive" => MbarOp::Arrive,
            "expect_tx" => MbarOp::ExpectTx,
            "complete_tx" => MbarOp::CompleteTx,
            "test_wait" | "try_wait" if parity => MbarOp::TestWaitParity,
            "test_wait" | "try_wait" => MbarOp::TestWait,
            "pending_count" => MbarOp::PendingCount,
            other => return unsupported(format!("mbarrier.{other} is not implemented")),
        };
        let (d, rest) = match op {
            MbarOp::Init | MbarOp::Inval | MbarOp::ExpectTx | MbarOp::CompleteTx => (SINK_SLOT, o),
            _ => {
                let Some(first) = o.first() else {
                    return unsupported("mbarrier operands");
                };
                (self.dst(first)?, &o[1..])
            }
        };
        if op == MbarOp::PendingCount {
            let Some(state) = rest.first() else {
                return unsupported("mbarrier operands");
            };
            let b = self.src(state, b64)?;
            self.emit(Op::Mbarrier {
                op,
                d,
                addr: SINK_SLOT,
                off: 0,
                b,
                space,
            });
            return Ok(());
        }
        let Some(addr_op) = rest.first() else {
            return unsupported("mbarrier operands");
        };
        let (addr, off) = self.address(addr_op)?;
        let b = match op {
            MbarOp::TestWait => match rest.get(1) {
                Some(x) => self.src(x, b64)?,
                None => return unsupported("mbarrier wait needs a state"),
            },
            _ => match rest.get(1) {
                Some(x) => self.src(x, u32t)?,
                None if matches!(op, MbarOp::Arrive | MbarOp::ArriveNoComplete) => self.konst(1),
                None => return unsupported("mbarrier operand missing"),
            },
        };
        self.emit(Op::Mbarrier {
            op,
            d,
            addr,
            off,
            b,
            space,
        });
        Ok(())
    }

    fn call(&mut self, o: &[Operand]) -> DResult<()> {
        let mut k = 0;
        let mut rets = Vec::new();
        if o.len() >= 2 {
            if let Operand::List(items) = &o[0] {
                for it in items {
                    rets.push(self.param_ref(it)?);
                }
                k = 1;
            }
        }
        let Some(target) = o.get(k) else {
            return unsupported("call without a target");
        };
        let callee = match target {
            Operand::Name(name) => match self.lookup(name) {
                Some(Sym::Reg { slot, .. }) => Callee::Indirect(*slot),
                Some(_) => return unsupported(format!("`{name}` cannot be called")),
                None => match self.syms.functions.get(name.as_str()) {
                    Some((_, Some(builtin))) => builtin.clone(),
                    Some(&(index, None)) => Callee::Direct(index),
                    None => return self.name_error(name),
                },
            },
            _ => return unsupported("call target"),
        };
        let mut args = Vec::new();
        if let Some(Operand::List(items)) = o.get(k + 1) {
            for it in items {
                args.push(self.param_ref(it)?);
            }
        }
        let site = self.calls.len() as u32;
        self.calls.push(CallSite { callee, args, rets });
        self.emit(Op::Call { site });
        Ok(())
    }

    fn param_ref(&mut self, op: &Operand) -> DResult<(u32, u32)> {
        match op {
            Operand::Name(n) => match self.lookup(n) {
                Some(Sym::FrameParam { off, size }) => Ok((*off, *size)),
                _ => unsupported(format!("call argument `{n}` is not a .param variable")),
            },
            _ => unsupported("call arguments other than .param variables are not implemented"),
        }
    }
}
