//! Generates the Rust side of the intrinsic stub table.
//!
//! `compiler/include/oxide/Stubs.def` is the one table of device intrinsics
//! (docs/ABI.md §1). The C++ device linker includes it as an X-macro; this script
//! reads the same lines and writes one `#[no_mangle]` Rust function per stub into
//! `$OUT_DIR/stubs.rs`. On the device the linker replaces every call with the
//! NVVM lowering from the same table. On the host each body asks the emulator
//! (`cuda_device::emulation::Hooks`, also generated here: one optional function
//! per stub) and, where no emulator is installed, refuses to run.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

/// One `OXIDE_STUB(NAME, "SIG", KIND, "INTRINSIC", "IMMEDIATES", MIN_SM)` line.
struct Stub {
    name: String,
    signature: String,
    kind: String,
}

fn parse_stub(line: &str) -> Option<Stub> {
    let inner = line.trim().strip_prefix("OXIDE_STUB(")?.strip_suffix(')')?;
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    for ch in inner.chars() {
        match ch {
            '"' => in_string = !in_string,
            ',' if !in_string => fields.push(std::mem::take(&mut current).trim().to_string()),
            _ => current.push(ch),
        }
    }
    fields.push(current.trim().to_string());
    if fields.len() != 6 {
        panic!("malformed line in Stubs.def (expected 6 fields): {line}");
    }
    Some(Stub { name: fields[0].clone(), signature: fields[1].clone(), kind: fields[2].clone() })
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
        // Emulation bookkeeping: nothing to record outside an emulated launch.
        ("Special", "shared_access") => unused,
        // Outside an emulated launch the address is the host static's own.
        ("Identity", _) => format!("{unused}{}", names[0]),
        _ => format!("{unused}crate::host::not_on_device(\"{}\")", stub.name),
    }
}

fn render(stub: &Stub) -> String {
    let (params, ret) = split_signature(&stub.signature);
    let names = arg_names(&params).join(", ");
    let fallback = host_fallback(stub, &params);
    let body = if stub.kind == "Special" && (stub.name == "param_layout" || stub.name == "launch_bounds") {
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
    writeln!(out, "pub extern \"C\" fn __oxide_stub_{}({}) {} {{ {} }}\n", stub.name, params, ret, body)
        .unwrap();
    out
}

/// The emulator's table: one optional host implementation per stub.
fn render_hooks(stubs: &[Stub]) -> String {
    let mut fields = String::new();
    let mut nones = String::new();
    for stub in stubs {
        if stub.name == "param_layout" || stub.name == "launch_bounds" {
            continue;
        }
        let (params, ret) = split_signature(&stub.signature);
        let types = arg_types(&params).join(", ");
        writeln!(fields, "    /// Host implementation of `__oxide_stub_{}`.", stub.name).unwrap();
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

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let table = manifest.join("../../compiler/include/oxide/Stubs.def");
    println!("cargo:rerun-if-changed={}", table.display());
    let text = fs::read_to_string(&table)
        .unwrap_or_else(|e| panic!("cannot read the stub table {}: {e}", table.display()));
    let stubs: Vec<Stub> = text.lines().filter_map(parse_stub).collect();
    let mut out = String::from("// Generated by build.rs from compiler/include/oxide/Stubs.def.\n\n");
    for stub in &stubs {
        out.push_str(&render(stub));
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out_dir.join("stubs.rs"), out).unwrap();
    let hooks = format!("// Generated by build.rs from compiler/include/oxide/Stubs.def.\n\n{}", render_hooks(&stubs));
    fs::write(out_dir.join("hooks.rs"), hooks).unwrap();
}
