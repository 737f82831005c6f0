//! Shrinks a function that gives a different answer on the GPU to a few
//! lines that still do.
//!
//! Each round builds one program holding every candidate simplification of
//! the current function as its own kernel, runs it once, and keeps the
//! smallest candidate that still mismatches. Candidates: cut everything the
//! differing value does not depend on (a backward slice); replace a
//! statement by the literal the CPU computed for it (the values before the
//! first difference agreed, so the kernel still sees the same inputs);
//! replace an expression by one of its operands of the same type; turn a
//! parameter into a literal. It stops when no candidate mismatches.

use crate::ast::{Expr, Function, Pipeline, Stmt, VarId};
use crate::program::Case;
use crate::runner::Mismatch;
use std::collections::BTreeSet;

/// The statements up to `last` that it depends on, and `last`.
pub fn slice(f: &Function, last: usize) -> Function {
    let last = last.min(f.body.len().saturating_sub(1));
    let mut needed: BTreeSet<VarId> = BTreeSet::new();
    let mut keep = vec![false; f.body.len()];
    for i in (0..=last).rev() {
        if i == last || needed.contains(&f.body[i].var()) {
            keep[i] = true;
            needed.extend(f.body[i].reads());
        }
    }
    let body: Vec<Stmt> = f.body.iter().zip(&keep).filter(|(_, k)| **k).map(|(s, _)| s.clone()).collect();
    let params = f.params.iter().copied().filter(|(v, _)| needed.contains(v)).collect();
    Function { name: f.name.clone(), params, body }
}

/// The smaller variants of `f` to try; `cpu` is f's trace on `input`.
pub fn candidates(f: &Function, input: &[u128], cpu: &[u128]) -> Vec<Case> {
    let mut out: Vec<(Function, Vec<u128>)> = Vec::new();
    let last = f.body.len() - 1;
    let param_input = |g: &Function| -> Vec<u128> {
        g.params.iter().map(|(v, _)| input[f.params.iter().position(|(p, _)| p == v).unwrap()]).collect()
    };
    // A statement before the last → the literal it computed.
    for i in 0..last {
        let Some(&bits) = cpu.get(i) else { break };
        let s = &f.body[i];
        if matches!(s, Stmt::Let { expr: Expr::Lit(..), .. }) {
            continue;
        }
        let mut g = f.clone();
        g.body[i] = Stmt::Let { var: s.var(), expr: Expr::Lit(s.ty(), bits) };
        let g = slice(&g, last);
        let inputs = param_input(&g);
        out.push((g, inputs));
    }
    // A loop or array statement → a plain let of one of its parts.
    for i in 0..=last {
        let replacement = match &f.body[i] {
            Stmt::Loop { acc, init, .. } => Some(Stmt::Let { var: *acc, expr: init.clone() }),
            Stmt::Array { var, ty, elem, elems, .. } if ty == elem => Some(Stmt::Let { var: *var, expr: elems[0].clone() }),
            Stmt::Array { var, ty, elems, pipeline: Pipeline::Index(_), .. } if *ty == elems[0].ty() => {
                Some(Stmt::Let { var: *var, expr: elems[0].clone() })
            }
            _ => None,
        };
        if let Some(r) = replacement {
            let mut g = f.clone();
            g.body[i] = r;
            let g = slice(&g, last);
            let inputs = param_input(&g);
            out.push((g, inputs));
        }
    }
    // An expression → one of its operands of the same type.
    for i in 0..=last {
        if let Stmt::Let { var, expr } = &f.body[i] {
            for simpler in simplifications(expr) {
                let mut g = f.clone();
                g.body[i] = Stmt::Let { var: *var, expr: simpler };
                let g = slice(&g, last);
                let inputs = param_input(&g);
                out.push((g, inputs));
            }
        }
    }
    // A parameter → a literal with its input's value.
    for (k, (v, t)) in f.params.iter().enumerate() {
        let mut g = f.clone();
        g.params.remove(k);
        g.body.insert(0, Stmt::Let { var: *v, expr: Expr::Lit(*t, input[k]) });
        let inputs = param_input(&g);
        out.push((g, inputs));
    }
    out.into_iter()
        .enumerate()
        .map(|(i, (mut g, inputs))| {
            g.name = format!("c{i}");
            Case { func: g, inputs: vec![inputs] }
        })
        .collect()
}

/// `e` with one node replaced by a child of the same type, each way.
fn simplifications(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    for c in e.children() {
        if c.ty() == e.ty() && !matches!(e, Expr::MatchOption { .. }) {
            out.push(c.clone());
        }
    }
    // Deeper: the same inside each child (rebuilt through `map_children`).
    let children: Vec<Expr> = e.children().into_iter().cloned().collect();
    for (k, c) in children.iter().enumerate() {
        for s in simplifications(c) {
            if let Some(rebuilt) = replace_child(e, k, s) {
                out.push(rebuilt);
            }
        }
    }
    out
}

/// `e` with its k-th child (in `children()` order) replaced.
fn replace_child(e: &Expr, k: usize, new: Expr) -> Option<Expr> {
    let mut e = e.clone();
    let slot: &mut Expr = match &mut e {
        Expr::Var(..) | Expr::Lit(..) => return None,
        Expr::Method { recv, args, .. } | Expr::Overflowing { recv, args, .. } => {
            if k == 0 { recv } else { args.get_mut(k - 1)? }
        }
        Expr::UnwrapOr { recv, args, default, .. } => {
            if k == 0 { recv } else if k <= args.len() { &mut args[k - 1] } else { default }
        }
        Expr::MatchOption { recv, args, some, none, .. } => {
            if k == 0 { recv } else if k <= args.len() { &mut args[k - 1] } else if k == args.len() + 1 { some } else { none }
        }
        Expr::Infix { l, r, .. } => if k == 0 { l } else { r },
        Expr::Guarded { a, b, .. } => if k == 0 { a } else { b },
        Expr::Prefix { e: inner, .. } | Expr::Cast { e: inner, .. } => inner,
        Expr::If { cond, then, els, .. } => [cond, then, els].into_iter().nth(k)?,
        Expr::Match { scrut, arms, default, .. } => {
            if k == 0 { scrut } else if k <= arms.len() { &mut arms[k - 1].1 } else { default }
        }
        Expr::Call { args, .. } => args.get_mut(k)?,
    };
    *slot = new;
    Some(e)
}

/// Runs the reduction. `oracle` builds and runs a program of cases and
/// returns, per case, its mismatch (None when it matched or did not run).
pub fn reduce(
    f: &Function,
    input: &[u128],
    first: &Mismatch,
    oracle: &mut dyn FnMut(&[Case]) -> Vec<Option<Mismatch>>,
    log: &mut dyn FnMut(&str),
) -> (Function, Vec<u128>) {
    let mut cur = slice(f, first.record);
    let mut cur_input: Vec<u128> =
        cur.params.iter().map(|(v, _)| input[f.params.iter().position(|(p, _)| p == v).unwrap()]).collect();
    // The slice's trace: the original records of the statements kept.
    let kept: Vec<usize> = cur.body.iter().map(|s| f.body.iter().position(|t| t.var() == s.var()).unwrap()).collect();
    let mut cpu: Vec<u128> = kept.iter().map(|&i| first.cpu.get(i).copied().unwrap_or(0)).collect();
    log(&format!("slice: {} statements, size {}", cur.body.len(), cur.size()));
    loop {
        let cases = candidates(&cur, &cur_input, &cpu);
        if cases.is_empty() {
            break;
        }
        let results = oracle(&cases);
        let best = cases
            .iter()
            .zip(&results)
            .filter_map(|(c, r)| r.as_ref().map(|m| (c, m)))
            .min_by_key(|(c, _)| (c.func.size(), c.func.body.len(), c.func.params.len()));
        let Some((case, m)) = best else { break };
        if case.func.size() >= cur.size() && case.func.body.len() >= cur.body.len() && case.func.params.len() >= cur.params.len() {
            break;
        }
        log(&format!(
            "{} of {} candidates still differ; kept one of {} statements, size {}",
            results.iter().filter(|r| r.is_some()).count(),
            cases.len(),
            case.func.body.len(),
            case.func.size()
        ));
        cur = case.func.clone();
        cur_input = case.inputs[0].clone();
        cpu = m.cpu.clone();
    }
    cur.name = f.name.clone();
    (cur, cur_input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ty::Ty;

    fn let_(var: VarId, expr: Expr) -> Stmt {
        Stmt::Let { var, expr }
    }

    fn f() -> Function {
        let x = Expr::Var(0, Ty::I16);
        let neg = Expr::Method { recv: Box::new(x.clone()), method: "wrapping_neg", args: vec![], ty: Ty::I16 };
        let unrelated = Expr::Method { recv: Box::new(x), method: "wrapping_add", args: vec![Expr::Lit(Ty::I16, 1)], ty: Ty::I16 };
        let sat = Expr::Method { recv: Box::new(Expr::Var(2, Ty::I16)), method: "saturating_sub", args: vec![Expr::Var(1, Ty::I16)], ty: Ty::I16 };
        Function { name: "f".into(), params: vec![(0, Ty::I16), (1, Ty::I16)], body: vec![let_(3, unrelated), let_(2, neg), let_(4, sat)] }
    }

    #[test]
    fn slicing_keeps_what_the_value_depends_on() {
        let s = slice(&f(), 2);
        assert_eq!(s.body.iter().map(|s| s.var()).collect::<Vec<_>>(), vec![2, 4]);
        let s = slice(&f(), 0);
        assert_eq!(s.body.iter().map(|s| s.var()).collect::<Vec<_>>(), vec![3]);
        assert_eq!(s.params, vec![(0, Ty::I16)]);
    }

    #[test]
    fn the_reducer_keeps_the_smallest_candidate_that_still_differs() {
        let f = f();
        let first = Mismatch { function: "f".into(), input: 0, record: 2, gpu: vec![0, 0, 1], cpu: vec![0, 0x8000, 2] };
        // A pretend GPU that gets `wrapping_neg` wrong whenever it is in the function.
        let mut oracle = |cases: &[Case]| -> Vec<Option<Mismatch>> {
            cases
                .iter()
                .map(|c| {
                    let text = c.func.render();
                    text.contains("wrapping_neg").then(|| Mismatch { function: c.func.name.clone(), input: 0, record: 0, gpu: vec![], cpu: vec![7, 7] })
                })
                .collect()
        };
        let (r, input) = reduce(&f, &[0x8000, 0], &first, &mut oracle, &mut |_| {});
        let text = r.render();
        assert!(text.contains("wrapping_neg"), "{text}");
        assert!(!text.contains("wrapping_add"), "{text}");
        assert!(r.size() < f.size());
        assert_eq!(input.len(), r.params.len());
    }
}
