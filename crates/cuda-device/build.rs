//! Generates the Rust side of the device linker's tables.
//!
//! `compiler/include/oxide/Stubs.def` is the one table of device intrinsics
//! (docs/ABI.md §1). The C++ device linker includes it as an X-macro; this script
//! reads the same rows (through `oxide-tables`, a family row expanded into its
//! members as the C++ side expands it) and writes one `#[no_mangle]` Rust
//! function per stub into `$OUT_DIR/stubs.rs`. On the device the linker
//! replaces every call with the NVVM lowering from the same table. On the host
//! each body asks the emulator (`cuda_device::emulation::Hooks`, also generated
//! here: one optional function per stub) and, where no emulator is installed,
//! refuses to run. The wgmma family rows also give `cuda_device::wgmma` its
//! functions (`wgmma_shapes.rs`).
//!
//! Two more tables: `Atomics.def`, the codes of the atomic stubs' operation,
//! scope and ordering (`cuda_device::atomic::code`), and `Abi.def`, the
//! reserved names (`abi.rs`: a constant per name, and the macros that spell
//! the section of `shared!` and the symbol of the dynamic shared memory).

use oxide_tables::{screaming_snake_case, Row, Table};
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

/// One stub: an `OXIDE_STUB(NAME, "SIG", KIND, "INTRINSIC", "IMMEDIATES",
/// MIN_SM)` row, or a member of an `OXIDE_STUB_FAMILY(PREFIX, FIRST, LAST,
/// STEP, SUFFIX, …)` row.
struct Stub {
    name: String,
    /// `__oxide_stub_<name>` (Abi.def's StubPrefix).
    symbol: String,
    signature: String,
    kind: String,
}

/// The stubs of Stubs.def in its order, each family row expanded in place
/// into PREFIX<N>SUFFIX for N = FIRST, FIRST + STEP, … LAST (the C++ side,
/// LowerIntrinsicStubs.cpp, expands it the same way).
fn stubs(table: &Table, prefix: &str) -> Vec<Stub> {
    let mut out = Vec::new();
    let mut push = |name: String, signature: &str, kind: &str| {
        out.push(Stub { symbol: format!("{prefix}{name}"), name, signature: signature.to_string(), kind: kind.to_string() })
    };
    for row in table.all_rows() {
        match row.kind.as_str() {
            "OXIDE_STUB" => {
                expect_fields(row, 6);
                push(row.ident(0).to_string(), row.string(1), row.ident(2));
            }
            "OXIDE_STUB_FAMILY" => {
                expect_fields(row, 10);
                for n in family_members(row) {
                    push(format!("{}{n}{}", row.ident(0), row.ident(4)), row.string(5), row.ident(6));
                }
            }
            other => panic!("{}: Stubs.def has no row kind {other}", row.location),
        }
    }
    out
}

/// FIRST, FIRST + STEP, … LAST of a family row.
fn family_members(row: &Row) -> Vec<u64> {
    let (first, last, step) = (row.integer(1), row.integer(2), row.integer(3));
    if step == 0 || first > last || (last - first) % step != 0 {
        panic!("{}: a family runs from FIRST to LAST in steps of STEP > 0 that end on LAST", row.location);
    }
    (first..=last).step_by(step as usize).collect()
}

fn expect_fields(row: &Row, n: usize) {
    if row.fields.len() != n {
        panic!("{}: {} takes {n} fields, this row has {}", row.location, row.kind, row.fields.len());
    }
}

/// Splits `"(a: u32, b: usize) -> u64"` into the parameter list and return type.
fn split_signature(sig: &str) -> (String, String) {
    let close = sig.find(')').expect("signature must have a parameter list");
    let params = sig[1..close].trim().to_string();
    let ret = sig[close + 1..].trim().to_string();
    (params, ret)
}

/// The parameter names of a parameter list `a: u32, b: usize`.
fn arg_names(params: &str) -> Vec<&str> {
    params.split(',').filter(|p| !p.trim().is_empty()).map(|p| p.split(':').next().unwrap().trim()).collect()
}

/// The parameter types of a parameter list `a: u32, b: usize`.
fn arg_types(params: &str) -> Vec<&str> {
    params.split(',').filter(|p| !p.trim().is_empty()).map(|p| p.split(':').nth(1).unwrap().trim()).collect()
}

/// What a stub does on the host when no emulator hook answers it.
fn host_fallback(stub: &Stub, params: &str) -> String {
    let names = arg_names(params);
    let unused = if names.is_empty() { String::new() } else { format!("let _ = ({},); ", names.join(", ")) };
    match (stub.kind.as_str(), stub.name.as_str()) {
        // Harmless on the host: the entry wrapper that calls them only runs emulated.
        ("Special", "param_layout" | "launch_bounds") => unused,
        // Opaque, so that no optimisation (LTO included) drops them: the
        // entry wrapper's identity (no two wrappers are found the same) and
        // an inline PTX output's place (it counts as written).
        ("Special", "entry_identity" | "ptx_asm_output") => format!("::core::hint::black_box({});", names[0]),
        // Emulation bookkeeping: nothing to record outside an emulated launch.
        ("Special", "shared_access") => unused,
        // A hint for the device linker's loop unroller: nothing to do here.
        ("Special", "unroll") => unused,
        // Cache hints: the host has no L2 to fill, emulated or not.
        ("InlineAsm", "prefetch_l2" | "prefetch_l2_bulk") => unused,
        // Inline PTX has no host code: it runs on a GPU or on the PTX VM.
        ("Special", "ptx_asm") => format!("{unused}crate::host::inline_ptx_on_host()"),
        // Outside an emulated launch the address is the host static's own.
        ("Identity", _) => format!("{unused}{}", names[0]),
        // Markers for the device linker: the index itself, emulated or not.
        ("Marker", _) => format!("{unused}{}", names[0]),
        // Arithmetic: the CPU model of the instruction, emulated or not.
        ("PureAsm", name) => format!("crate::half::model::{name}({})", names.join(", ")),
        _ => format!("{unused}crate::host::not_on_device(\"{}\")", stub.name),
    }
}

/// Whether the stub has no emulator hook: its host body is the same in and
/// out of an emulated launch.
fn without_hook(stub: &Stub) -> bool {
    stub.kind == "Marker"
        || stub.kind == "PureAsm"
        || (stub.kind == "Special"
            && (stub.name == "param_layout" || stub.name == "launch_bounds" || stub.name == "unroll" || stub.name == "entry_identity" || stub.name == "ptx_asm_output"))
        || (stub.kind == "InlineAsm" && (stub.name == "prefetch_l2" || stub.name == "prefetch_l2_bulk"))
}

fn render(stub: &Stub) -> String {
    let (params, ret) = split_signature(&stub.signature);
    let names = arg_names(&params).join(", ");
    let fallback = host_fallback(stub, &params);
    let body = if without_hook(stub) {
        fallback
    } else {
        // Inside an emulated launch, a stub the emulator does not model
        // fails that launch with its name (instead of aborting the process).
        let unmodelled = if fallback.contains("not_on_device") {
            format!("crate::host::unmodelled(h, \"{}\")", stub.name)
        } else {
            format!("{{ {fallback} }}")
        };
        format!(
            "match crate::host::hooks() {{ Some(h) => match h.{name} {{ Some(hook) => hook({names}), None => {unmodelled} }}, None => {{ {fallback} }} }}",
            name = stub.name
        )
    };
    let mut out = String::new();
    writeln!(out, "/// Device intrinsic stub `{}` (lowered by the device linker).", stub.name).unwrap();
    writeln!(out, "#[doc(hidden)]\n#[no_mangle]\n#[inline(never)]").unwrap();
    writeln!(out, "pub extern \"C\" fn {}({}) {} {{ {} }}\n", stub.symbol, params, ret, body).unwrap();
    out
}

/// The emulator's table: one optional host implementation per stub.
fn render_hooks(stubs: &[Stub]) -> String {
    let mut fields = String::new();
    let mut nones = String::new();
    for stub in stubs {
        if without_hook(stub) {
            continue;
        }
        let (params, ret) = split_signature(&stub.signature);
        let types = arg_types(&params).join(", ");
        writeln!(fields, "    /// Host implementation of `{}`.", stub.symbol).unwrap();
        writeln!(fields, "    pub {}: Option<fn({}) {}>,", stub.name, types, ret).unwrap();
        writeln!(nones, "        {}: None,", stub.name).unwrap();
    }
    writeln!(fields, "    /// Called for a stub whose entry is `None` (an instruction the emulator does\n    /// not model): fails the emulated thread, naming the stub.").unwrap();
    writeln!(fields, "    pub unmodelled: Option<fn(&'static str) -> !>,").unwrap();
    writeln!(nones, "        unmodelled: None,").unwrap();
    format!(
        "/// Host implementations of the intrinsic stubs, one optional function per\n\
         /// line of `Stubs.def`, installed by an emulator with [`install`].\n\
         /// A stub whose entry is `None` calls `unmodelled` (or, without it, fails\n\
         /// as it does without an emulator).\n\
         #[derive(Clone, Copy)]\n\
         pub struct Hooks {{\n{fields}}}\n\n\
         impl Hooks {{\n    /// No stub emulated: start from this and fill in what the emulator knows\n    \
         /// (`Hooks {{ thread_idx_x: Some(..), ..Hooks::NONE }}`), so stubs added later stay `None`.\n    \
         pub const NONE: Hooks = Hooks {{\n{nones}    }};\n}}\n"
    )
}

/// `cuda_device::wgmma`'s functions, one per member of the wgmma families:
/// the `mma!` (A from shared memory) and `mma_rs!` (A from registers, the
/// `_rs` rows) invocations wgmma.rs includes (name, stub, N, K, N/2
/// accumulators, input type, B's layout: `k_major` or `mn_major` for the
/// `_trans_b` rows).
fn render_wgmma(table: &Table, prefix: &str) -> String {
    let (mut shared, mut registers) = (String::from("mma! {\n"), String::from("mma_rs! {\n"));
    for row in table.rows("OXIDE_STUB_FAMILY").filter(|r| r.ident(0) == "wgmma_m64n") {
        // The suffix is `k<K>_f32_<type>[_rs][_trans_b]`.
        let suffix = row.ident(4);
        let (types, layout) = match suffix.strip_suffix("_trans_b") {
            Some(types) => (types, "mn_major"),
            None => (suffix, "k_major"),
        };
        let (types, out) = match types.strip_suffix("_rs") {
            Some(types) => (types, &mut registers),
            None => (types, &mut shared),
        };
        let ty = types.rsplit('_').next().unwrap();
        let k: u32 = types.split('_').next().and_then(|k| k.strip_prefix('k')).and_then(|k| k.parse().ok()).unwrap();
        for n in family_members(row) {
            let name = format!("m64n{n}{suffix}");
            writeln!(out, "    {name} {prefix}wgmma_{name} {n} {k} {} {ty:?} {layout};", n / 2).unwrap();
        }
    }
    shared.push_str("}\n");
    registers.push_str("}\n");
    shared + &registers
}

/// `cuda_device::arch`'s `Feature` (one variant per OXIDE_TARGET_FEATURE
/// row of Targets.def, bit K for the K-th, as the device linker's
/// `target_features` folds them) and `features_of_target` (each
/// OXIDE_TARGET row's features, for the host-code emulator's answer).
fn render_arch(table: &Table) -> String {
    let features: Vec<&str> = table.rows("OXIDE_TARGET_FEATURE").map(|r| r.ident(0)).collect();
    let mut variants = String::new();
    let mut bits = String::new();
    for (k, row) in table.rows("OXIDE_TARGET_FEATURE").enumerate() {
        writeln!(variants, "    /// {} (`{}` in Targets.def).\n    {},", row.string(2), row.string(1), row.ident(0)).unwrap();
        writeln!(bits, "            Feature::{} => 1 << {k},", row.ident(0)).unwrap();
    }
    let mut arms = String::new();
    for row in table.rows("OXIDE_TARGET") {
        let named = row.raw(4);
        let mask = if named == "0" {
            named.to_string()
        } else {
            let bit = |f: &str| {
                let k = features.iter().position(|x| *x == f).unwrap_or_else(|| panic!("{}: no feature {f}", row.location));
                format!("1 << {k}")
            };
            named.split('|').map(|f| bit(f.trim())).collect::<Vec<_>>().join(" | ")
        };
        writeln!(arms, "        {:?} => Some({mask}),", row.ident(0)).unwrap();
    }
    format!(
        "/// A feature that only some targets have (Targets.def), asked for with\n\
         /// [`has`].\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n\
         #[non_exhaustive]\n\
         pub enum Feature {{\n{variants}}}\n\n\
         impl Feature {{\n    \
             /// Its bit in the target's features (`target_features`).\n    \
             #[inline(always)]\n    \
             pub(crate) const fn bit(self) -> u32 {{\n        match self {{\n{bits}        }}\n    }}\n\
         }}\n\n\
         /// The feature bits of the target named `name` (`sm_90a`), `None` for a\n\
         /// name Targets.def lacks.\n\
         #[doc(hidden)]\n\
         pub fn features_of_target(name: &str) -> Option<u32> {{\n    match name {{\n{arms}        _ => None,\n    }}\n}}\n"
    )
}

/// `cuda_device::atomic::code`: the numbers the atomic stubs take.
fn render_atomic_codes(table: &Table) -> String {
    let mut out = String::new();
    for (kind, prefix, what) in [
        ("OXIDE_ATOMIC_OP", "OP", "operation"),
        ("OXIDE_ATOMIC_SCOPE", "SCOPE", "scope"),
        ("OXIDE_ATOMIC_ORDERING", "ORDERING", "ordering"),
    ] {
        for row in table.rows(kind) {
            let name = row.ident(0);
            writeln!(
                out,
                "/// The {what} `{name}` (Atomics.def).\npub const {prefix}_{}: u32 = {};",
                screaming_snake_case(name),
                row.integer(1)
            )
            .unwrap();
        }
    }
    out
}

fn main() {
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let generated = |table: &str, text: String| format!("// Generated by build.rs from compiler/include/oxide/{table}.\n\n{text}");

    let abi = Table::read_oxide("Abi.def");
    let stub_prefix = oxide_tables::reserved_name(&abi, "StubPrefix");

    let table = Table::read_oxide("Stubs.def");
    let stubs = stubs(&table, stub_prefix);
    let mut out = String::new();
    for stub in &stubs {
        out.push_str(&render(stub));
    }
    fs::write(out_dir.join("stubs.rs"), generated("Stubs.def", out)).unwrap();
    fs::write(out_dir.join("hooks.rs"), generated("Stubs.def", render_hooks(&stubs))).unwrap();
    fs::write(out_dir.join("wgmma_shapes.rs"), generated("Stubs.def", render_wgmma(&table, stub_prefix))).unwrap();

    let targets = Table::read_oxide("Targets.def");
    fs::write(out_dir.join("arch.rs"), generated("Targets.def", render_arch(&targets))).unwrap();

    let atomics = Table::read_oxide("Atomics.def");
    fs::write(out_dir.join("atomic_codes.rs"), generated("Atomics.def", render_atomic_codes(&atomics))).unwrap();

    let mut names = oxide_tables::abi_rs(&abi);
    names.push_str(&oxide_tables::reserved_name_macro(&abi, "SharedSection", "__oxide_shared_section", true));
    names.push_str(&oxide_tables::reserved_name_macro(&abi, "DynamicSharedGlobal", "dynamic_shared_symbol", false));
    fs::write(out_dir.join("abi.rs"), names).unwrap();
}
