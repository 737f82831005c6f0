//! The random generator: well-defined, total Rust functions over every
//! scalar type, with control flow, loops, arrays, iterators and Options.
//!
//! Each choice is made so the function is defined for every input in
//! both profiles: integer arithmetic is wrapping, checked, saturating or
//! overflowing (a plain `+ - *` only under a `checked_*().is_some()`
//! guard, so debug builds exercise their overflow checks without
//! tripping them); divisors are `| 1`; shift amounts of a plain `<<` are
//! masked to the width; float values whose NaN payload or sign Rust leaves
//! unspecified never reach an integer or a sign test (`canon_f32`), and
//! `min`/`max` see `x + 0.0` (no signalling NaN, no -0.0); half-precision
//! arithmetic (f16, bf16 and their pairs) works on bits held in u16/u32, so
//! NaN payloads and zeros' signs are compared; transcendental
//! functions, whose last bit libdevice and the host's libm may round
//! differently, are not used.

use crate::ast::{Expr, Function, Pipeline, Stmt, VarId};
use crate::rng::Rng;
use crate::ty::Ty;

/// Function `index` of the program with `seed`.
pub fn function(seed: u64, index: u64) -> Function {
    let mut g = Gen { r: Rng::new(seed, index + 1), scope: Vec::new(), next: 0 };
    let params: Vec<(VarId, Ty)> = (0..1 + g.r.below(4)).map(|_| {
        let ty = *g.r.pick(&Ty::ALL[..14]); // no bool parameters: inputs are plain bytes
        g.fresh(ty)
    }).collect();
    let statements = 3 + g.r.below(14);
    let body = (0..statements).map(|_| g.statement()).collect();
    Function { name: format!("f{index}"), params, body }
}

/// A function named `name` whose parameters have the given types, drawn
/// from stream `stream` of `seed` (a phase of a block program, `block.rs`).
pub fn function_over(seed: u64, stream: u64, name: String, types: &[Ty], statements: u64) -> Function {
    let mut g = Gen { r: Rng::new(seed, stream), scope: Vec::new(), next: 0 };
    let params = types.iter().map(|&t| g.fresh(t)).collect();
    let body = (0..statements).map(|_| g.statement()).collect();
    Function { name, params, body }
}

/// Input bits for every parameter of `f`, `runs` times.
pub fn inputs(f: &Function, seed: u64, index: u64, runs: usize) -> Vec<Vec<u128>> {
    let mut r = Rng::new(seed ^ 0x1A9B_55E3, index + 1);
    (0..runs).map(|_| f.params.iter().map(|(_, t)| t.random_bits(&mut r)).collect()).collect()
}

struct Gen {
    r: Rng,
    scope: Vec<(VarId, Ty)>,
    next: VarId,
}

const MAX_DEPTH: u32 = 3;

impl Gen {
    fn fresh(&mut self, ty: Ty) -> (VarId, Ty) {
        let v = (self.next, ty);
        self.next += 1;
        self.scope.push(v);
        v
    }

    fn statement(&mut self) -> Stmt {
        let roll = self.r.below(100);
        let stmt = if roll < 14 {
            self.loop_statement()
        } else if roll < 28 {
            self.array_statement()
        } else {
            let ty = self.some_type();
            let expr = self.expr(ty, MAX_DEPTH);
            let (var, _) = (self.next, ty);
            self.next += 1;
            Stmt::Let { var, expr }
        };
        self.scope.push((stmt.var(), stmt.ty()));
        stmt
    }

    fn some_type(&mut self) -> Ty {
        // Prefer the types already in play, so values flow into each other.
        if !self.scope.is_empty() && self.r.chance(40) {
            return self.r.pick(&self.scope).1;
        }
        *self.r.pick(&Ty::ALL)
    }

    fn loop_statement(&mut self) -> Stmt {
        let ty = if self.r.chance(75) { *self.r.pick(&Ty::INTS) } else { *self.r.pick(&[Ty::F32, Ty::F64]) };
        let init = self.expr(ty, 1);
        let count = self.expr(Ty::U32, 1);
        let acc = self.next;
        let index = self.next + 1;
        self.next += 2;
        self.scope.push((acc, ty));
        self.scope.push((index, Ty::U32));
        let step = self.expr(ty, 2);
        let acc_e = Expr::Var(acc, ty);
        let body = if ty.is_float() {
            let op = *self.r.pick(&["+", "*", "-"]);
            let scaled = Expr::Infix { op: "*", l: Box::new(acc_e), r: Box::new(Expr::Lit(ty, half(ty))), ty };
            Expr::Infix { op, l: Box::new(scaled), r: Box::new(step), ty }
        } else {
            let method = *self.r.pick(&["wrapping_add", "wrapping_mul", "wrapping_sub", "saturating_add", "rotate_left"]);
            let arg = if method == "rotate_left" { Expr::Var(index, Ty::U32) } else { step };
            Expr::Method { recv: Box::new(acc_e), method, args: vec![arg], ty }
        };
        self.scope.retain(|(v, _)| *v != acc && *v != index);
        Stmt::Loop { acc, ty, init, index, count, body }
    }

    fn array_statement(&mut self) -> Stmt {
        let elem = if self.r.chance(75) { *self.r.pick(&Ty::INTS) } else { *self.r.pick(&[Ty::F32, Ty::F64]) };
        let n = 2 + self.r.below(5) as usize;
        let elems = (0..n).map(|_| self.expr(elem, 1)).collect();
        let choice = self.r.below(6);
        let (pipeline, ty) = match choice {
            0 | 1 => {
                let init = self.expr(elem, 1);
                let reversed = self.r.chance(30);
                if elem.is_float() {
                    (Pipeline::Fold { init, step: *self.r.pick(&["+", "*"]), infix: true, reversed }, elem)
                } else if self.r.chance(30) {
                    (Pipeline::Fold { init, step: *self.r.pick(&["^", "|", "&"]), infix: true, reversed }, elem)
                } else {
                    let step = *self.r.pick(&["wrapping_add", "wrapping_mul", "wrapping_sub", "max", "min", "saturating_add"]);
                    (Pipeline::Fold { init, step, infix: false, reversed }, elem)
                }
            }
            2 => (Pipeline::Index(self.expr(Ty::U32, 1)), elem),
            3 => (Pipeline::CountBelow(self.expr(elem, 1)), Ty::Usize),
            4 => (Pipeline::CountPalindromic, Ty::Usize),
            _ if elem.is_float() => (Pipeline::Position(self.expr(elem, 1)), Ty::U32),
            _ => {
                if self.r.chance(50) {
                    (Pipeline::MaxOr(self.expr(elem, 1)), elem)
                } else {
                    (Pipeline::Position(self.expr(elem, 1)), Ty::U32)
                }
            }
        };
        let var = self.next;
        self.next += 1;
        Stmt::Array { var, ty, elem, elems, pipeline }
    }

    fn expr(&mut self, ty: Ty, depth: u32) -> Expr {
        if depth == 0 || self.r.chance(22) {
            return self.leaf(ty);
        }
        match ty {
            Ty::Bool => self.bool_expr(depth),
            t if t.is_float() => self.float_expr(t, depth),
            t => self.int_expr(t, depth),
        }
    }

    fn leaf(&mut self, ty: Ty) -> Expr {
        let same: Vec<(VarId, Ty)> = self.scope.iter().copied().filter(|(_, t)| *t == ty).collect();
        if !same.is_empty() && self.r.chance(70) {
            let (v, t) = *self.r.pick(&same);
            return Expr::Var(v, t);
        }
        let castable: Vec<(VarId, Ty)> =
            self.scope.iter().copied().filter(|(_, t)| *t != Ty::Bool && *t != ty).collect();
        if ty != Ty::Bool && !castable.is_empty() && self.r.chance(50) {
            let (v, t) = *self.r.pick(&castable);
            return self.cast(Expr::Var(v, t), ty);
        }
        Expr::Lit(ty, ty.random_bits(&mut self.r))
    }

    /// `e as ty`; floats reach integers only through saturating casts.
    fn cast(&mut self, e: Expr, ty: Ty) -> Expr {
        if e.ty() == ty {
            return e;
        }
        if ty == Ty::Bool {
            return Expr::Infix { op: "!=", l: Box::new(e.clone()), r: Box::new(Expr::Lit(e.ty(), 0)), ty: Ty::Bool };
        }
        if e.ty() == Ty::Bool && ty.is_float() {
            let as_int = Expr::Cast { e: Box::new(e), ty: Ty::U8 };
            return Expr::Cast { e: Box::new(as_int), ty };
        }
        Expr::Cast { e: Box::new(e), ty }
    }

    fn method(&mut self, recv: Expr, method: &'static str, args: Vec<Expr>, ty: Ty) -> Expr {
        Expr::Method { recv: Box::new(recv), method, args, ty }
    }

    fn shift_amount(&mut self, ty: Ty, depth: u32) -> Expr {
        if self.r.chance(50) {
            Expr::Lit(Ty::U32, self.r.below(ty.bits() as u64 + 3) as u128)
        } else {
            self.expr(Ty::U32, depth - 1)
        }
    }

    fn small_exponent(&mut self, depth: u32) -> Expr {
        if self.r.chance(60) {
            Expr::Lit(Ty::U32, self.r.below(12) as u128)
        } else {
            self.expr(Ty::U32, depth - 1)
        }
    }

    fn int_expr(&mut self, ty: Ty, depth: u32) -> Expr {
        let d = depth - 1;
        let signed = ty.is_signed();
        match self.r.below(20) {
            0 | 1 if ty == Ty::U16 && self.r.chance(40) => self.half_expr(ty, d),
            0 | 1 => {
                let m = *self.r.pick(&["wrapping_add", "wrapping_sub", "wrapping_mul"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                self.method(a, m, vec![b], ty)
            }
            2 => {
                let op = *self.r.pick(&["&", "|", "^"]);
                Expr::Infix { op, l: Box::new(self.expr(ty, d)), r: Box::new(self.expr(ty, d)), ty }
            }
            3 => {
                let m = *self.r.pick(&["wrapping_shl", "wrapping_shr", "rotate_left", "rotate_right"]);
                let (a, s) = (self.expr(ty, d), self.shift_amount(ty, depth));
                self.method(a, m, vec![s], ty)
            }
            4 => {
                let choices: &[&'static str] = if signed {
                    &["wrapping_neg", "wrapping_abs", "signum", "reverse_bits", "swap_bytes", "saturating_neg", "saturating_abs"]
                } else {
                    &["wrapping_neg", "reverse_bits", "swap_bytes"]
                };
                let m = *self.r.pick(choices);
                let a = self.expr(ty, d);
                self.method(a, m, vec![], ty)
            }
            5 => Expr::Prefix { op: "!", e: Box::new(self.expr(ty, d)), ty },
            6 => {
                let m = *self.r.pick(&["saturating_add", "saturating_sub", "saturating_mul", "saturating_pow"]);
                let a = self.expr(ty, d);
                let b = if m == "saturating_pow" { self.small_exponent(depth) } else { self.expr(ty, d) };
                self.method(a, m, vec![b], ty)
            }
            7 | 8 => {
                let mut choices = vec!["checked_add", "checked_sub", "checked_mul", "checked_div", "checked_rem",
                    "checked_div_euclid", "checked_rem_euclid", "checked_shl", "checked_shr", "checked_pow", "checked_neg"];
                if signed { choices.extend(["checked_abs", "checked_isqrt"]); } else { choices.push("checked_next_power_of_two"); }
                let m = *self.r.pick(&choices);
                let a = self.expr(ty, d);
                let args = match m {
                    "checked_shl" | "checked_shr" => vec![self.shift_amount(ty, depth)],
                    "checked_pow" => vec![self.small_exponent(depth)],
                    "checked_neg" | "checked_abs" | "checked_isqrt" | "checked_next_power_of_two" => vec![],
                    _ => vec![self.expr(ty, d)],
                };
                if self.r.chance(30) {
                    let bound = self.next;
                    self.next += 1;
                    self.scope.push((bound, ty));
                    let some = self.expr(ty, d);
                    self.scope.retain(|(v, _)| *v != bound);
                    let none = self.expr(ty, d);
                    Expr::MatchOption { recv: Box::new(a), method: m, args, bound, bound_ty: ty, some: Box::new(some), none: Box::new(none), ty }
                } else {
                    let default = self.leaf(ty);
                    Expr::UnwrapOr { recv: Box::new(a), method: m, args, default: Box::new(default), ty }
                }
            }
            9 => {
                let m = *self.r.pick(&["overflowing_add", "overflowing_sub", "overflowing_mul", "overflowing_neg", "overflowing_shl", "overflowing_pow"]);
                let a = self.expr(ty, d);
                let args = match m {
                    "overflowing_neg" => vec![],
                    "overflowing_shl" => vec![self.shift_amount(ty, depth)],
                    "overflowing_pow" => vec![self.small_exponent(depth)],
                    _ => vec![self.expr(ty, d)],
                };
                Expr::Overflowing { recv: Box::new(a), method: m, args, ty }
            }
            10 => {
                let m = *self.r.pick(&["min", "max"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                self.method(a, m, vec![b], ty)
            }
            11 => {
                let m = *self.r.pick(&["wrapping_div", "wrapping_rem", "wrapping_div_euclid", "wrapping_rem_euclid"]);
                let a = self.expr(ty, d);
                let b = self.expr(ty, d);
                let nonzero = Expr::Infix { op: "|", l: Box::new(b), r: Box::new(Expr::Lit(ty, 1)), ty };
                self.method(a, m, vec![nonzero], ty)
            }
            12 | 13 => {
                let from = *self.r.pick(&Ty::ALL[..14]);
                let e = self.expr(from, d);
                self.cast(e, ty)
            }
            14 => {
                let cond = self.expr(Ty::Bool, d);
                Expr::If { cond: Box::new(cond), then: Box::new(self.expr(ty, d)), els: Box::new(self.expr(ty, d)), ty }
            }
            15 => {
                let scrut_ty = *self.r.pick(&Ty::INTS);
                let scrut = self.expr(scrut_ty, d);
                let arms = (0..1 + self.r.below(3)).map(|i| {
                    let lo = scrut_ty.random_bits(&mut self.r);
                    let pattern = if i == 0 && scrut_ty.is_signed() {
                        format!("{}..=-1", scrut_ty.literal(1u128 << (scrut_ty.bits() - 1)).trim_matches(|c| c == '(' || c == ')'))
                    } else {
                        scrut_ty.literal(lo).trim_matches(|c| c == '(' || c == ')').to_string()
                    };
                    (pattern, self.expr(ty, d))
                }).collect();
                Expr::Match { scrut: Box::new(scrut), arms, default: Box::new(self.expr(ty, d)), ty }
            }
            16 => {
                let (op, checked) = *self.r.pick(&[("+", "checked_add"), ("-", "checked_sub"), ("*", "checked_mul")]);
                Expr::Guarded { op, checked, a: Box::new(self.expr(ty, d)), b: Box::new(self.expr(ty, d)), ty }
            }
            17 => {
                // `x << (s & (BITS - 1))`: the plain operator, in range.
                let op = *self.r.pick(&["<<", ">>"]);
                let s = self.expr(Ty::U32, d);
                let masked = Expr::Infix { op: "&", l: Box::new(s), r: Box::new(Expr::Lit(Ty::U32, (ty.bits() - 1) as u128)), ty: Ty::U32 };
                Expr::Infix { op, l: Box::new(self.expr(ty, d)), r: Box::new(masked), ty }
            }
            18 if !signed => {
                // unsigned_abs / abs_diff of the signed twin, or abs_diff of ty itself.
                let twin = Ty::INTS.iter().copied().find(|t| t.is_signed() && t.unsigned() == ty).unwrap();
                let a = self.expr(twin, d);
                if self.r.chance(50) {
                    self.method(a, "unsigned_abs", vec![], ty)
                } else {
                    let b = self.expr(twin, d);
                    self.method(a, "abs_diff", vec![b], ty)
                }
            }
            19 if ty == Ty::U16 || ty == Ty::U32 && self.r.chance(30) => self.half_expr(ty, d),
            19 if ty == Ty::U32 => {
                let from = *self.r.pick(&Ty::INTS);
                let a = self.expr(from, d);
                let m = *self.r.pick(&["count_ones", "count_zeros", "leading_zeros", "trailing_zeros", "leading_ones", "trailing_ones"]);
                if self.r.chance(25) {
                    let default = Expr::Lit(Ty::U32, 77);
                    Expr::UnwrapOr { recv: Box::new(a), method: "checked_ilog2", args: vec![], default: Box::new(default), ty }
                } else {
                    self.method(a, m, vec![], ty)
                }
            }
            _ => {
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                self.method(a, "wrapping_add", vec![b], ty)
            }
        }
    }

    fn float_expr(&mut self, ty: Ty, depth: u32) -> Expr {
        let d = depth - 1;
        match self.r.below(14) {
            0 | 1 => {
                let op = *self.r.pick(&["+", "-", "*", "/"]);
                Expr::Infix { op, l: Box::new(self.expr(ty, d)), r: Box::new(self.expr(ty, d)), ty }
            }
            2 => {
                // `a * b + c`: two roundings, which must not be fused.
                let prod = Expr::Infix { op: "*", l: Box::new(self.expr(ty, d)), r: Box::new(self.expr(ty, d)), ty };
                Expr::Infix { op: "+", l: Box::new(prod), r: Box::new(self.expr(ty, d)), ty }
            }
            3 => {
                let (a, b, c) = (self.expr(ty, d), self.expr(ty, d), self.expr(ty, d));
                self.method(a, "mul_add", vec![b, c], ty)
            }
            4 => Expr::Infix { op: "%", l: Box::new(self.expr(ty, d)), r: Box::new(self.expr(ty, d)), ty },
            5 | 6 => {
                let m = *self.r.pick(&["abs", "sqrt", "floor", "ceil", "trunc", "round", "round_ties_even", "signum", "recip", "fract"]);
                let a = self.expr(ty, d);
                self.method(a, m, vec![], ty)
            }
            7 => Expr::Prefix { op: "-", e: Box::new(self.expr(ty, d)), ty },
            8 => {
                let m = *self.r.pick(&["min", "max"]);
                let zero = Expr::Lit(ty, 0);
                let a = Expr::Infix { op: "+", l: Box::new(self.expr(ty, d)), r: Box::new(zero.clone()), ty };
                let b = Expr::Infix { op: "+", l: Box::new(self.expr(ty, d)), r: Box::new(zero), ty };
                self.method(a, m, vec![b], ty)
            }
            9 => {
                let a = self.expr(ty, d);
                let b = self.expr(ty, d);
                let canon = Expr::Call { func: if ty == Ty::F32 { "canon_f32" } else { "canon_f64" }, args: vec![b], ty };
                self.method(a, "copysign", vec![canon], ty)
            }
            10 | 11 => {
                let from = *self.r.pick(&Ty::ALL[..14]);
                let e = self.expr(from, d);
                self.cast(e, ty)
            }
            12 if self.r.chance(30) => {
                // A half value widened (exact), from its bits.
                let bf = self.r.chance(50);
                let func = match (ty, bf) {
                    (Ty::F32, false) => "h_to_f32",
                    (Ty::F32, true) => "b_to_f32",
                    (_, false) => "h_to_f64",
                    (_, true) => "b_to_f64",
                };
                Expr::Call { func, args: vec![self.expr(Ty::U16, d)], ty }
            }
            12 => {
                let (func, bits) = if ty == Ty::F32 { ("f32::from_bits", Ty::U32) } else { ("f64::from_bits", Ty::U64) };
                Expr::Call { func, args: vec![self.expr(bits, d)], ty }
            }
            _ => {
                let cond = self.expr(Ty::Bool, d);
                Expr::If { cond: Box::new(cond), then: Box::new(self.expr(ty, d)), els: Box::new(self.expr(ty, d)), ty }
            }
        }
    }

    /// An f16 or bf16 operation on bits: a u16 result (one value) or a u32
    /// (a pair). Inputs are any bits, NaNs and subnormals included.
    fn half_expr(&mut self, ty: Ty, d: u32) -> Expr {
        let f16 = self.r.chance(50);
        if ty == Ty::U32 {
            let (h, b, arity) = *self.r.pick(&[
                ("h2_add", "b2_add", 2), ("h2_sub", "b2_sub", 2), ("h2_mul", "b2_mul", 2), ("h2_fma", "b2_fma", 3),
                ("h2_from_f32s", "b2_from_f32s", 0),
            ]);
            let args = if arity == 0 {
                vec![self.expr(Ty::F32, d), self.expr(Ty::F32, d)]
            } else {
                (0..arity).map(|_| self.expr(Ty::U32, d)).collect()
            };
            return Expr::Call { func: if f16 { h } else { b }, args, ty };
        }
        let (h, b, arity) = *self.r.pick(&[
            ("h_add", "b_add", 2), ("h_sub", "b_sub", 2), ("h_mul", "b_mul", 2), ("h_div", "b_div", 2), ("h_fma", "b_fma", 3),
            ("h_sqrt", "b_sqrt", 1), ("h_neg", "b_neg", 1), ("h_abs", "b_abs", 1), ("h_from_f32", "b_from_f32", 0),
            ("h_from_f64", "b_from_f64", 0),
        ]);
        let args = match h {
            "h_from_f32" => vec![self.expr(Ty::F32, d), Expr::Lit(Ty::U8, self.r.below(4) as u128)],
            "h_from_f64" => vec![self.expr(Ty::F64, d)],
            _ => (0..arity).map(|_| self.expr(Ty::U16, d)).collect(),
        };
        Expr::Call { func: if f16 { h } else { b }, args, ty }
    }

    fn bool_expr(&mut self, depth: u32) -> Expr {
        let d = depth - 1;
        match self.r.below(8) {
            0..=2 => {
                let t = *self.r.pick(&Ty::ALL[..14]);
                let op = *self.r.pick(&["<", "<=", "==", "!=", ">", ">="]);
                Expr::Infix { op, l: Box::new(self.expr(t, d)), r: Box::new(self.expr(t, d)), ty: Ty::Bool }
            }
            3 => {
                let op = *self.r.pick(&["&&", "||", "^"]);
                Expr::Infix { op, l: Box::new(self.expr(Ty::Bool, d)), r: Box::new(self.expr(Ty::Bool, d)), ty: Ty::Bool }
            }
            4 => Expr::Prefix { op: "!", e: Box::new(self.expr(Ty::Bool, d)), ty: Ty::Bool },
            5 if self.r.chance(25) => {
                let f16 = self.r.chance(50);
                let (h, b, arity) = *self.r.pick(&[("h_lt", "b_lt", 2), ("h_eq", "b_eq", 2), ("h_is_nan", "b_is_nan", 1)]);
                let args = (0..arity).map(|_| self.expr(Ty::U16, d)).collect();
                Expr::Call { func: if f16 { h } else { b }, args, ty: Ty::Bool }
            }
            5 => {
                let t = *self.r.pick(&[Ty::F32, Ty::F64]);
                let a = self.expr(t, d);
                if self.r.chance(25) {
                    let canon = Expr::Call { func: if t == Ty::F32 { "canon_f32" } else { "canon_f64" }, args: vec![a], ty: t };
                    self.method(canon, "is_sign_negative", vec![], Ty::Bool)
                } else {
                    let m = *self.r.pick(&["is_nan", "is_finite", "is_infinite", "is_normal", "is_subnormal"]);
                    self.method(a, m, vec![], Ty::Bool)
                }
            }
            6 => {
                let t = *self.r.pick(&Ty::INTS);
                let m = *self.r.pick(&["overflowing_add", "overflowing_sub", "overflowing_mul"]);
                let (a, b) = (self.expr(t, d), self.expr(t, d));
                Expr::Overflowing { recv: Box::new(a), method: m, args: vec![b], ty: Ty::Bool }
            }
            _ => {
                let t = *self.r.pick(&Ty::INTS);
                let a = self.expr(t, d);
                if t.is_signed() {
                    self.method(a, "is_negative", vec![], Ty::Bool)
                } else {
                    self.method(a, "is_power_of_two", vec![], Ty::Bool)
                }
            }
        }
    }
}

/// 0.5 in the type's bits.
fn half(ty: Ty) -> u128 {
    if ty == Ty::F32 { 0x3F00_0000 } else { 0x3FE0_0000_0000_0000 }
}
