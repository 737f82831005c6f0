//! The static shared memory of each kernel, as ptxas allocates it.
//!
//! A GPU gives a block of a kernel only the `.shared` variables that kernel
//! can reach: those declared in its own body, the module-scope ones it or a
//! function it calls names, and those declared in the functions it calls.
//! The driver's limits count that size, not the module's: a block's static
//! and dynamic shared memory together may not pass 48 KiB unless the
//! kernel's limit is raised, and a raise may not pass the device's opt-in
//! maximum less the static part. The VM itself lays out every shared
//! variable of the module once, for all kernels (`module.rs`), which is
//! right for running the code but too large for those limits; an emulator
//! that refuses what a GPU refuses asks this module instead.
//!
//! The layout follows ptxas (compared with `ptxas -v` in
//! `tests/shared_usage.rs`), each variable at its alignment: the kernel's
//! own declarations that its instructions name, in order; the module-scope
//! variables it reaches, in declaration order; those the functions it
//! reaches name, function by function in definition order; then the
//! declarations nothing names, the kernel's and then its callees'. A
//! declaration counts even where nothing names it, and a reference counts
//! even in code that never runs. In a module that declares
//! an unsized `.extern .shared` array (dynamic shared memory), a non-zero
//! total is rounded up to where that array would begin: the largest such
//! alignment, at least 16 bytes.
//!
//! A kernel that reaches a call through a register, or takes a function's
//! address (names one outside a `call`, or names a variable whose
//! initialiser does), reaches every function whose address the module takes
//! anywhere: ptxas cannot tell which of them such a call runs.

use std::collections::{HashMap, HashSet};

use crate::ast::{AstModule, FuncDecl, Inst, Item, Linkage, Operand, Space, Stmt, VarDecl};
use crate::module::{align_up, var_align, var_size};

/// Bytes of static shared memory a block of each kernel (`.entry`) of the
/// PTX text `ptx` gets on a GPU, by kernel name (saturated at `u32::MAX`).
///
/// Only parses the text (no decoding), so PTX the VM cannot run is
/// measured too.
pub fn static_shared_per_kernel(ptx: &str) -> Result<HashMap<String, u32>, crate::ParseError> {
    Ok(of_module(&crate::parser::parse_module(ptx)?))
}

/// [`static_shared_per_kernel`] of a parsed module.
pub(crate) fn of_module(ast: &AstModule) -> HashMap<String, u32> {
    let module = ModuleView::new(ast);
    (0..module.functions.len())
        .filter(|&i| module.functions[i].entry && module.functions[i].body.is_some())
        .map(|kernel| (module.functions[kernel].name.clone(), module.static_shared_of(kernel)))
        .collect()
}

/// The module's functions and variables, by name, and what each function
/// names (read once: a module of hundreds of kernels shares its functions).
struct ModuleView<'a> {
    /// Definitions win over declarations of the same name, in the order of
    /// first appearance.
    functions: Vec<&'a FuncDecl>,
    function_index: HashMap<&'a str, usize>,
    /// Per function (same index).
    facts: Vec<Facts<'a>>,
    /// Sized module-scope `.shared` variables, in declaration order.
    shared: Vec<&'a VarDecl>,
    shared_index: HashMap<&'a str, usize>,
    /// Module-scope variables with initialisers (vtables and the like).
    initialised: HashMap<&'a str, &'a VarDecl>,
    /// Where dynamic shared memory would begin: None without an unsized
    /// `.extern .shared` array.
    dynamic_align: Option<u64>,
    /// Functions whose address the module takes (named by an instruction
    /// other than as a direct call's target, or by an initialiser): what
    /// an indirect call may reach.
    address_taken: Vec<usize>,
}

/// What one function's body names.
#[derive(Default)]
struct Facts<'a> {
    /// Module-scope shared variables (indices), directly or through the
    /// initialisers of variables it names.
    shared: Vec<usize>,
    /// Functions it calls or names (indices), likewise.
    callees: Vec<usize>,
    /// Whether it calls through a register or takes a function's address.
    may_call_indirectly: bool,
    /// Its own sized `.shared` declarations that its instructions name, in
    /// order, then those none names.
    named_declarations: Vec<&'a VarDecl>,
    unnamed_declarations: Vec<&'a VarDecl>,
}

impl<'a> ModuleView<'a> {
    fn new(ast: &'a AstModule) -> ModuleView<'a> {
        let mut view = ModuleView {
            functions: Vec::new(),
            function_index: HashMap::new(),
            facts: Vec::new(),
            shared: Vec::new(),
            shared_index: HashMap::new(),
            initialised: HashMap::new(),
            dynamic_align: None,
            address_taken: Vec::new(),
        };
        for item in &ast.items {
            match item {
                Item::Func(f) => match view.function_index.get(f.name.as_str()) {
                    Some(&i) if f.body.is_some() => view.functions[i] = f,
                    Some(_) => {}
                    None => {
                        view.function_index.insert(&f.name, view.functions.len());
                        view.functions.push(f);
                    }
                },
                Item::Var(v) if v.space == Space::Shared => {
                    if v.linkage == Linkage::Extern || v.dims.iter().any(Option::is_none) {
                        let align = var_align(v).max(16);
                        view.dynamic_align = Some(view.dynamic_align.map_or(align, |a| a.max(align)));
                    } else {
                        view.shared_index.insert(&v.name, view.shared.len());
                        view.shared.push(v);
                    }
                }
                Item::Var(v) if v.init.is_some() => {
                    view.initialised.insert(&v.name, v);
                }
                Item::Var(_) => {}
            }
        }
        let mut taken = HashSet::new();
        for v in view.initialised.values() {
            taken.extend(initialiser_names(v).filter_map(|n| view.function_index.get(n).copied()));
        }
        view.facts = view.functions.iter().map(|f| view.facts_of(f, &mut taken)).collect();
        view.address_taken = taken.into_iter().collect();
        view.address_taken.sort_unstable();
        view
    }

    /// What `f`'s body names; adds the functions whose address it takes to
    /// `taken`.
    fn facts_of(&self, f: &'a FuncDecl, taken: &mut HashSet<usize>) -> Facts<'a> {
        let body = f.body.as_deref().unwrap_or_default();
        let mut facts = Facts::default();
        let (mut named, mut addresses) = (Vec::new(), Vec::new());
        for stmt in body {
            names_in(stmt, Targets::Kept, &mut named);
            names_in(stmt, Targets::Left, &mut addresses);
        }
        // Names reached through initialisers, each variable once.
        let mut seen = HashSet::new();
        let mut through_initialisers = Vec::new();
        for name in named.iter().chain(&addresses) {
            if let Some(v) = self.initialised.get(name) {
                if seen.insert(*name) {
                    through_initialisers.extend(initialiser_names(v));
                }
            }
        }
        let is_function = |n: &&str| self.function_index.contains_key(n);
        facts.may_call_indirectly = body.iter().any(|stmt| self.calls_indirectly(stmt))
            || addresses.iter().chain(&through_initialisers).any(is_function);
        taken.extend(addresses.iter().filter_map(|n| self.function_index.get(n).copied()));
        let mut shared = HashSet::new();
        let mut callees = HashSet::new();
        for name in named.iter().chain(&through_initialisers) {
            if let Some(&i) = self.shared_index.get(name) {
                shared.insert(i);
            } else if let Some(&i) = self.function_index.get(name) {
                callees.insert(i);
            }
        }
        facts.shared = shared.into_iter().collect();
        facts.callees = callees.into_iter().collect();
        let named: HashSet<&str> = named.into_iter().collect();
        for v in declarations(body) {
            if named.contains(v.name.as_str()) {
                facts.named_declarations.push(v);
            } else {
                facts.unnamed_declarations.push(v);
            }
        }
        facts
    }

    fn static_shared_of(&self, kernel: usize) -> u32 {
        let (functions, shared) = self.reached_from(kernel);
        let callees = || functions.iter().filter(|&&i| i != kernel).map(|&i| &self.facts[i]);
        let mut size = 0u64;
        let mut place = |v: &VarDecl| size = align_up(size, var_align(v)).saturating_add(var_size(v));
        self.facts[kernel].named_declarations.iter().for_each(|v| place(v));
        shared.into_iter().for_each(|i| place(self.shared[i]));
        callees().flat_map(|f| &f.named_declarations).for_each(|v| place(v));
        self.facts[kernel].unnamed_declarations.iter().for_each(|v| place(v));
        callees().flat_map(|f| &f.unnamed_declarations).for_each(|v| place(v));
        if let Some(align) = self.dynamic_align.filter(|_| size > 0) {
            size = align_up(size, align);
        }
        size.min(u64::from(u32::MAX)) as u32
    }

    /// The functions `kernel` reaches (itself included) and the module-scope
    /// shared variables they name, each as indices in definition order.
    fn reached_from(&self, kernel: usize) -> (Vec<usize>, Vec<usize>) {
        let mut functions = HashSet::from([kernel]);
        let mut shared = HashSet::new();
        let mut pending = vec![kernel];
        let mut indirect_seen = false;
        while let Some(f) = pending.pop() {
            let facts = &self.facts[f];
            shared.extend(facts.shared.iter().copied());
            let indirect = facts.may_call_indirectly && !indirect_seen;
            indirect_seen |= indirect;
            let reachable = facts.callees.iter().chain(if indirect { &self.address_taken[..] } else { &[] });
            for &callee in reachable {
                if functions.insert(callee) {
                    pending.push(callee);
                }
            }
        }
        let mut functions: Vec<usize> = functions.into_iter().collect();
        let mut shared: Vec<usize> = shared.into_iter().collect();
        functions.sort_unstable();
        shared.sort_unstable();
        (functions, shared)
    }

    /// Whether `stmt` holds a `call` through a register (a target that is
    /// no function of the module).
    fn calls_indirectly(&self, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Inst(inst) => call_target(inst).is_some_and(|t| !self.function_index.contains_key(t)),
            Stmt::Block(inner) => inner.iter().any(|s| self.calls_indirectly(s)),
            _ => false,
        }
    }
}

/// The target operand of a `call` instruction: its first name outside the
/// return and argument lists.
fn call_target(inst: &Inst) -> Option<&str> {
    if inst.opcode != "call" {
        return None;
    }
    inst.operands.iter().find_map(|op| match op {
        Operand::Name(n) => Some(n.as_str()),
        _ => None,
    })
}

/// Whether [`names_in`] keeps the targets of calls.
#[derive(Clone, Copy, PartialEq)]
enum Targets {
    Kept,
    /// Only the names an instruction uses otherwise: addresses taken.
    Left,
}

/// The sized `.shared` variables declared in a function body, in order.
fn declarations(body: &[Stmt]) -> Vec<&VarDecl> {
    fn collect<'s>(stmts: &'s [Stmt], out: &mut Vec<&'s VarDecl>) {
        for stmt in stmts {
            match stmt {
                Stmt::Decl(v) if v.space == Space::Shared && v.dims.iter().all(Option::is_some) => out.push(v),
                Stmt::Block(inner) => collect(inner, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    collect(body, &mut out);
    out
}

/// Every name an instruction of `stmt` mentions (registers too: the caller
/// keeps those that are functions or variables), with or without the
/// targets of calls.
fn names_in<'s>(stmt: &'s Stmt, targets: Targets, out: &mut Vec<&'s str>) {
    fn operand<'s>(op: &'s Operand, out: &mut Vec<&'s str>) {
        match op {
            Operand::Name(n) | Operand::SymbolOffset(n, _) | Operand::Address { base: Some(n), .. } => out.push(n),
            Operand::AddressList(ops) | Operand::Vector(ops) | Operand::List(ops) => {
                ops.iter().for_each(|o| operand(o, out))
            }
            Operand::Not(o) => operand(o, out),
            Operand::Pair(a, b) => {
                operand(a, out);
                operand(b, out);
            }
            Operand::Component(..) | Operand::Int(_) | Operand::F32(_) | Operand::F64(_) | Operand::Address { base: None, .. } => {}
        }
    }
    match stmt {
        Stmt::Inst(inst) => {
            let target = if targets == Targets::Left { call_target(inst) } else { None };
            let mut target_skipped = false;
            for op in &inst.operands {
                if let (Some(t), Operand::Name(n), false) = (target, op, target_skipped) {
                    if t == n {
                        target_skipped = true;
                        continue;
                    }
                }
                operand(op, out);
            }
        }
        Stmt::Block(inner) => inner.iter().for_each(|s| names_in(s, targets, out)),
        Stmt::Decl(v) => out.extend(initialiser_names(v)),
        Stmt::Label { .. } | Stmt::BranchTargets { .. } | Stmt::CallPrototype { .. } => {}
    }
}

/// The symbols a variable's initialiser takes the address of.
fn initialiser_names(v: &VarDecl) -> impl Iterator<Item = &str> {
    v.init.iter().flatten().filter_map(|e| match e {
        crate::ast::InitElem::Symbol { name, .. } => Some(name.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(body: &str) -> HashMap<String, u32> {
        let ptx = format!(".version 8.0\n.target sm_90\n.address_size 64\n{body}");
        static_shared_per_kernel(&ptx).unwrap()
    }

    #[test]
    fn each_kernel_counts_only_what_it_reaches() {
        let got = sizes(
            ".shared .align 4 .b8 a[4];
             .shared .align 16 .b8 b[1000];
             .func f() { .reg .b32 %r<2>; .shared .align 8 .b8 fl[24]; st.shared.u32 [fl], %r1; ret; }
             .visible .entry uses_a() { .reg .b32 %r<2>; st.shared.u32 [a], %r1; ret; }
             .visible .entry uses_b_and_f() { .reg .b32 %r<2>; st.shared.u32 [b+4], %r1; call f, (); ret; }
             .visible .entry none() { ret; }",
        );
        assert_eq!(got["uses_a"], 4);
        assert_eq!(got["uses_b_and_f"], 1024, "b at 0, f's 24 bytes at 1000");
        assert_eq!(got["none"], 0);
    }

    #[test]
    fn own_declarations_come_first_then_module_variables_then_callees() {
        // The three orders give 30 bytes only as ptxas lays them out:
        // kl 0..2, m1 4..8, m2 8..16, fl 16..28, gl 28..30.
        let got = sizes(
            ".shared .align 4 .b8 m1[4];
             .shared .align 8 .b8 m2[8];
             .func f() { .reg .b32 %r<2>; .shared .align 4 .b8 fl[12]; st.shared.u32 [fl], %r1; st.shared.u32 [m2], %r1; ret; }
             .func g() { .reg .b32 %r<2>; .shared .align 2 .b8 gl[2]; st.shared.u32 [gl], %r1; ret; }
             .visible .entry k() { .reg .b32 %r<2>; .shared .align 2 .b8 kl[2]; st.shared.u16 [kl], %r1; call g, (); call f, (); st.shared.u32 [m1], %r1; ret; }",
        );
        assert_eq!(got["k"], 30);
    }

    #[test]
    fn declarations_nothing_names_come_last() {
        // Unnamed, the 128-byte-aligned array goes after the module's byte
        // (129 bytes); named, before it (2 bytes).
        let got = sizes(
            ".shared .align 1 .b8 m[1];
             .visible .entry unnamed() { .reg .b32 %r<2>; .shared .align 128 .b8 w[1]; st.shared.u8 [m], %r1; ret; }
             .visible .entry named() { .reg .b32 %r<2>; .shared .align 128 .b8 w[1]; st.shared.u8 [w], %r1; st.shared.u8 [m], %r1; ret; }",
        );
        assert_eq!(got["unnamed"], 129);
        assert_eq!(got["named"], 2);
    }

    #[test]
    fn dynamic_shared_memory_rounds_the_static_part_up_to_where_it_begins() {
        let with = |align: u32| {
            sizes(&format!(
                ".shared .align 2 .b8 s[6];
                 .extern .shared .align {align} .b8 dyn[];
                 .visible .entry k() {{ .reg .b32 %r<2>; st.shared.u32 [s], %r1; ret; }}
                 .visible .entry only_dynamic() {{ .reg .b64 %rd<2>; mov.u64 %rd1, dyn; ret; }}"
            ))
        };
        assert_eq!(with(4)["k"], 16);
        assert_eq!(with(128)["k"], 128);
        assert_eq!(with(128)["only_dynamic"], 0);
    }

    #[test]
    fn unused_declarations_and_address_taken_functions_count() {
        let got = sizes(
            ".shared .align 4 .b8 seen[8];
             .func target() { .reg .b32 %r<2>; st.shared.u32 [seen], %r1; ret; }
             .global .align 8 .u64 table[1] = {target};
             .visible .entry declared() { .shared .align 4 .b8 idle[400]; ret; }
             .visible .entry through_a_table() { .reg .b64 %rd<2>; mov.u64 %rd1, table; ret; }
             .visible .entry through_a_pointer() { .reg .b64 %rd<2>; mov.u64 %rd1, target; ret; }
             .visible .entry recursive() { call recursive, (); ret; }",
        );
        assert_eq!(got["declared"], 400);
        assert_eq!(got["through_a_table"], 8);
        assert_eq!(got["through_a_pointer"], 8);
        assert_eq!(got["recursive"], 0);
    }

    #[test]
    fn an_indirect_call_reaches_every_function_whose_address_is_taken() {
        let module = |taken: &str| {
            sizes(&format!(
                ".shared .align 4 .b8 x[4000];
                 .shared .align 4 .b8 y[300];
                 .func f() {{ .reg .b32 %r<2>; st.shared.u32 [x], %r1; ret; }}
                 .func g() {{ .reg .b32 %r<2>; st.shared.u32 [y], %r1; ret; }}
                 {taken}
                 .visible .entry indirect(.param .u64 p) {{ .reg .b64 %rd<2>; ld.param.u64 %rd1, [p];
                     proto: .callprototype _ (); call %rd1, (), proto; ret; }}
                 .visible .entry direct() {{ call g, (); ret; }}"
            ))
        };
        // Nothing takes an address: the indirect call reaches nothing.
        assert_eq!(module("")["indirect"], 0);
        assert_eq!(module("")["direct"], 300, "a direct call takes no address");
        // f's address in a table: every indirect call may reach f.
        assert_eq!(module(".global .align 8 .u64 table[1] = {f};")["indirect"], 4000);
        assert_eq!(
            module(".visible .entry takes() { .reg .b64 %rd<2>; mov.u64 %rd1, f; ret; }")["indirect"],
            4000
        );
        // Taking one address opens them all: `takes_g` gets f's array too.
        let taking = module(
            ".visible .entry takes_f() { .reg .b64 %rd<2>; mov.u64 %rd1, f; ret; }
             .visible .entry takes_g() { .reg .b64 %rd<2>; mov.u64 %rd1, g; ret; }",
        );
        assert_eq!((taking["takes_f"], taking["takes_g"], taking["direct"]), (4300, 4300, 300));
    }

    #[test]
    fn sizes_saturate() {
        let got = sizes(".visible .entry huge() { .shared .align 4 .b8 h[8589934592]; ret; }");
        assert_eq!(got["huge"], u32::MAX);
    }
}
