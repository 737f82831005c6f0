//! The programs the generator writes: typed expressions and statements,
//! and their Rust text. Every value is a named local (`v3`), every
//! literal carries its type, and every operation that could panic or be
//! undefined for some input is written in a form Rust defines for all
//! inputs (wrapping, checked, saturating, overflowing), so a generated
//! function is total in both profiles.

use crate::ty::Ty;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A local of the function: parameter, statement result or loop index.
pub type VarId = usize;

/// An expression and, implicitly, its type (`Expr::ty`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Var(VarId, Ty),
    Lit(Ty, u128),
    /// `(recv).method(args…)`.
    Method { recv: Box<Expr>, method: &'static str, args: Vec<Expr>, ty: Ty },
    /// `(l) op (r)`.
    Infix { op: &'static str, l: Box<Expr>, r: Box<Expr>, ty: Ty },
    /// `op(e)`: `!` or `-`.
    Prefix { op: &'static str, e: Box<Expr>, ty: Ty },
    Cast { e: Box<Expr>, ty: Ty },
    /// `(recv).method(args…).unwrap_or(default)`: a checked operation.
    UnwrapOr { recv: Box<Expr>, method: &'static str, args: Vec<Expr>, default: Box<Expr>, ty: Ty },
    /// `match (recv).method(args…) { Some(v) => some, None => none }`.
    MatchOption { recv: Box<Expr>, method: &'static str, args: Vec<Expr>, bound: VarId, bound_ty: Ty, some: Box<Expr>, none: Box<Expr>, ty: Ty },
    /// `{ let (r, o) = (recv).method(args…); if o { !r } else { r } }`, or
    /// the flag alone when `ty` is bool.
    Overflowing { recv: Box<Expr>, method: &'static str, args: Vec<Expr>, ty: Ty },
    /// `if (a).checked_op(b).is_some() { (a) op (b) } else { (a) }`: the plain
    /// operator, which overflow-checks in debug builds, where it cannot overflow.
    Guarded { op: &'static str, checked: &'static str, a: Box<Expr>, b: Box<Expr>, ty: Ty },
    If { cond: Box<Expr>, then: Box<Expr>, els: Box<Expr>, ty: Ty },
    /// `match scrut { p0 => e0, …, _ => default }` with integer patterns.
    Match { scrut: Box<Expr>, arms: Vec<(String, Expr)>, default: Box<Expr>, ty: Ty },
    /// A call of a free function or a path (`f32::from_bits`, `canon_f32`).
    Call { func: &'static str, args: Vec<Expr>, ty: Ty },
}

impl Expr {
    pub fn ty(&self) -> Ty {
        match self {
            Expr::Var(_, t) | Expr::Lit(t, _) => *t,
            Expr::Method { ty, .. }
            | Expr::Infix { ty, .. }
            | Expr::Prefix { ty, .. }
            | Expr::Cast { ty, .. }
            | Expr::UnwrapOr { ty, .. }
            | Expr::MatchOption { ty, .. }
            | Expr::Overflowing { ty, .. }
            | Expr::Guarded { ty, .. }
            | Expr::If { ty, .. }
            | Expr::Match { ty, .. }
            | Expr::Call { ty, .. } => *ty,
        }
    }

    /// The direct subexpressions.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Var(..) | Expr::Lit(..) => vec![],
            Expr::Method { recv, args, .. } | Expr::Overflowing { recv, args, .. } => {
                std::iter::once(&**recv).chain(args).collect()
            }
            Expr::UnwrapOr { recv, args, default, .. } => {
                std::iter::once(&**recv).chain(args).chain(std::iter::once(&**default)).collect()
            }
            Expr::MatchOption { recv, args, some, none, .. } => {
                std::iter::once(&**recv).chain(args).chain([&**some, &**none]).collect()
            }
            Expr::Infix { l, r, .. } => vec![l, r],
            Expr::Guarded { a, b, .. } => vec![a, b],
            Expr::Prefix { e, .. } | Expr::Cast { e, .. } => vec![e],
            Expr::If { cond, then, els, .. } => vec![cond, then, els],
            Expr::Match { scrut, arms, default, .. } => {
                std::iter::once(&**scrut).chain(arms.iter().map(|(_, e)| e)).chain([&**default]).collect()
            }
            Expr::Call { args, .. } => args.iter().collect(),
        }
    }

    /// Every variable the expression reads (bound names of inner matches excluded).
    pub fn reads(&self, out: &mut BTreeSet<VarId>) {
        if let Expr::Var(v, _) = self {
            out.insert(*v);
        }
        for c in self.children() {
            c.reads(out);
        }
        if let Expr::MatchOption { bound, .. } = self {
            out.remove(bound);
        }
    }

    /// How many nodes: the reducer prefers smaller programs.
    pub fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }

    pub fn render(&self, out: &mut String) {
        match self {
            Expr::Var(v, _) => write!(out, "v{v}").unwrap(),
            Expr::Lit(t, bits) => out.push_str(&t.literal(*bits)),
            Expr::Method { recv, method, args, .. } => {
                paren(recv, out);
                write!(out, ".{method}(").unwrap();
                list(args, out);
                out.push(')');
            }
            Expr::Infix { op, l, r, .. } => {
                paren(l, out);
                write!(out, " {op} ").unwrap();
                paren(r, out);
            }
            Expr::Prefix { op, e, .. } => {
                out.push_str(op);
                paren(e, out);
            }
            Expr::Cast { e, ty } => {
                paren(e, out);
                write!(out, " as {}", ty.name()).unwrap();
            }
            Expr::UnwrapOr { recv, method, args, default, .. } => {
                paren(recv, out);
                write!(out, ".{method}(").unwrap();
                list(args, out);
                out.push_str(").unwrap_or(");
                default.render(out);
                out.push(')');
            }
            Expr::MatchOption { recv, method, args, bound, some, none, .. } => {
                out.push_str("match ");
                paren(recv, out);
                write!(out, ".{method}(").unwrap();
                list(args, out);
                write!(out, ") {{ Some(v{bound}) => ").unwrap();
                paren(some, out);
                out.push_str(", None => ");
                paren(none, out);
                out.push_str(" }");
            }
            Expr::Overflowing { recv, method, args, ty } => {
                out.push_str("{ let (r, o) = ");
                paren(recv, out);
                write!(out, ".{method}(").unwrap();
                list(args, out);
                if *ty == Ty::Bool {
                    out.push_str("); let _ = r; o }");
                } else {
                    out.push_str("); if o { !r } else { r } }");
                }
            }
            Expr::Guarded { op, checked, a, b, .. } => {
                out.push_str("if ");
                paren(a, out);
                write!(out, ".{checked}(").unwrap();
                b.render(out);
                out.push_str(").is_some() { ");
                paren(a, out);
                write!(out, " {op} ").unwrap();
                paren(b, out);
                out.push_str(" } else { ");
                a.render(out);
                out.push_str(" }");
            }
            Expr::If { cond, then, els, .. } => {
                out.push_str("if ");
                paren(cond, out);
                out.push_str(" { ");
                then.render(out);
                out.push_str(" } else { ");
                els.render(out);
                out.push_str(" }");
            }
            Expr::Match { scrut, arms, default, .. } => {
                out.push_str("match ");
                paren(scrut, out);
                out.push_str(" { ");
                for (pattern, e) in arms {
                    write!(out, "{pattern} => ").unwrap();
                    paren(e, out);
                    out.push_str(", ");
                }
                out.push_str("_ => ");
                paren(default, out);
                out.push_str(" }");
            }
            Expr::Call { func, args, .. } => {
                write!(out, "{func}(").unwrap();
                list(args, out);
                out.push(')');
            }
        }
    }
}

fn paren(e: &Expr, out: &mut String) {
    match e {
        Expr::Var(..) => e.render(out),
        _ => {
            out.push('(');
            e.render(out);
            out.push(')');
        }
    }
}

fn list(args: &[Expr], out: &mut String) {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        a.render(out);
    }
}

/// What an array statement computes from its elements.
#[derive(Clone, Debug, PartialEq)]
pub enum Pipeline {
    /// `arr.iter().fold(init, |acc, &e| acc.<method>(e))` (or `acc <op> e`
    /// for floats and bit operators).
    Fold { init: Expr, step: &'static str, infix: bool, reversed: bool },
    /// `arr[(index as usize) % N]`.
    Index(Expr),
    /// `arr.iter().filter(|&&e| e < bound).count()` (usize).
    CountBelow(Expr),
    /// `arr.iter().zip(arr.iter().rev()).filter(|(p, q)| p == q).count()` (usize).
    CountPalindromic,
    /// `arr.iter().copied().max().unwrap_or(default)` (integers).
    MaxOr(Expr),
    /// `arr.iter().position(|&e| e == x).map(|p| p as u32).unwrap_or(99)` (u32).
    Position(Expr),
}

/// One statement; each defines one variable, whose value is recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let { var: VarId, expr: Expr },
    /// `let mut acc = init; for index in 0..(count % 8) { acc = body; }`.
    Loop { acc: VarId, ty: Ty, init: Expr, index: VarId, count: Expr, body: Expr },
    /// `let arr: [elem; N] = [elems]; let var = <pipeline>;`
    Array { var: VarId, ty: Ty, elem: Ty, elems: Vec<Expr>, pipeline: Pipeline },
}

impl Stmt {
    pub fn var(&self) -> VarId {
        match self {
            Stmt::Let { var, .. } | Stmt::Array { var, .. } => *var,
            Stmt::Loop { acc, .. } => *acc,
        }
    }

    pub fn ty(&self) -> Ty {
        match self {
            Stmt::Let { expr, .. } => expr.ty(),
            Stmt::Loop { ty, .. } | Stmt::Array { ty, .. } => *ty,
        }
    }

    /// The expressions of the statement.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Stmt::Let { expr, .. } => vec![expr],
            Stmt::Loop { init, count, body, .. } => vec![init, count, body],
            Stmt::Array { elems, pipeline, .. } => {
                let mut v: Vec<&Expr> = elems.iter().collect();
                match pipeline {
                    Pipeline::Fold { init, .. } => v.push(init),
                    Pipeline::Index(e) | Pipeline::CountBelow(e) | Pipeline::MaxOr(e) | Pipeline::Position(e) => v.push(e),
                    Pipeline::CountPalindromic => {}
                }
                v
            }
        }
    }

    /// The variables defined before this statement that it reads.
    pub fn reads(&self) -> BTreeSet<VarId> {
        let mut out = BTreeSet::new();
        for e in self.exprs() {
            e.reads(&mut out);
        }
        match self {
            Stmt::Loop { acc, index, .. } => {
                out.remove(acc);
                out.remove(index);
            }
            _ => {}
        }
        out
    }

    pub fn size(&self) -> usize {
        self.exprs().iter().map(|e| e.size()).sum()
    }

    /// The statement's Rust text (one or more lines), recording its value.
    pub fn render(&self, out: &mut String) {
        match self {
            Stmt::Let { var, expr } => {
                write!(out, "    let v{var}: {} = ", expr.ty().name()).unwrap();
                expr.render(out);
                out.push_str(";\n");
            }
            Stmt::Loop { acc, ty, init, index, count, body } => {
                write!(out, "    let mut v{acc}: {} = ", ty.name()).unwrap();
                init.render(out);
                write!(out, ";\n    for v{index} in 0..((").unwrap();
                count.render(out);
                write!(out, ") % 8) {{\n        v{acc} = ").unwrap();
                body.render(out);
                out.push_str(";\n    }\n");
            }
            Stmt::Array { var, ty, elem, elems, pipeline } => {
                write!(out, "    let a{var}: [{}; {}] = [", elem.name(), elems.len()).unwrap();
                list(elems, out);
                out.push_str("];\n");
                write!(out, "    let v{var}: {} = ", ty.name()).unwrap();
                let n = elems.len();
                match pipeline {
                    Pipeline::Fold { init, step, infix, reversed } => {
                        let rev = if *reversed { ".rev()" } else { "" };
                        write!(out, "a{var}.iter(){rev}.fold(").unwrap();
                        init.render(out);
                        if *infix {
                            write!(out, ", |acc, &e| acc {step} e)").unwrap();
                        } else {
                            write!(out, ", |acc, &e| acc.{step}(e))").unwrap();
                        }
                    }
                    Pipeline::Index(i) => {
                        write!(out, "a{var}[(").unwrap();
                        i.render(out);
                        write!(out, ") as usize % {n}]").unwrap();
                    }
                    Pipeline::CountBelow(b) => {
                        write!(out, "a{var}.iter().filter(|&&e| e < ").unwrap();
                        paren(b, out);
                        out.push_str(").count()");
                    }
                    Pipeline::CountPalindromic => {
                        write!(out, "a{var}.iter().zip(a{var}.iter().rev()).filter(|(p, q)| p == q).count()").unwrap();
                    }
                    Pipeline::MaxOr(d) => {
                        write!(out, "a{var}.iter().copied().max().unwrap_or(").unwrap();
                        d.render(out);
                        out.push(')');
                    }
                    Pipeline::Position(x) => {
                        write!(out, "a{var}.iter().position(|&e| e == ").unwrap();
                        paren(x, out);
                        out.push_str(").map(|p| p as u32).unwrap_or(99)");
                    }
                }
                out.push_str(";\n");
            }
        }
        writeln!(out, "    t.rec(v{});", self.var()).unwrap();
    }
}

/// A generated function: parameters, then statements in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub params: Vec<(VarId, Ty)>,
    pub body: Vec<Stmt>,
}

impl Function {
    /// `#[inline(never)] fn name(v0: T0, …, t: &mut Trace) { … }`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        write!(out, "#[inline(never)]\nfn {}(", self.name).unwrap();
        for (v, t) in &self.params {
            write!(out, "v{v}: {}, ", t.name()).unwrap();
        }
        out.push_str("t: &mut Trace) {\n");
        for s in &self.body {
            s.render(&mut out);
        }
        out.push_str("}\n");
        out
    }

    pub fn size(&self) -> usize {
        self.body.iter().map(|s| s.size()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_typed_rust() {
        let x = Expr::Var(0, Ty::I16);
        let neg = Expr::Method { recv: Box::new(x.clone()), method: "wrapping_neg", args: vec![], ty: Ty::I16 };
        let e = Expr::UnwrapOr {
            recv: Box::new(neg),
            method: "checked_div",
            args: vec![Expr::Lit(Ty::I16, 0xC000)],
            default: Box::new(Expr::Lit(Ty::I16, 99)),
            ty: Ty::I16,
        };
        let mut s = String::new();
        e.render(&mut s);
        assert_eq!(s, "(v0.wrapping_neg()).checked_div((-16384i16)).unwrap_or(99i16)");
        let f = Function { name: "f0".into(), params: vec![(0, Ty::I16)], body: vec![Stmt::Let { var: 1, expr: e }] };
        assert!(f.render().contains("let v1: i16 = (v0.wrapping_neg())"));
        assert_eq!(f.body[0].reads(), BTreeSet::from([0]));
    }
}
