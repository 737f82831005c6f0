//! Every inline-PTX stub of Stubs.def (kinds `InlineAsm`, `ConvergentAsm`,
//! `PureAsm`) assembles with ptxas on every target of Targets.def that has
//! it, at the PTX ISA version the table gives that target.
//!
//! A stub's MIN_SM says which targets may call it, and Targets.def says
//! which PTX ISA version oxide writes for each target; an instruction that
//! needs a newer ISA than some such target's version is PTX that ptxas
//! refuses at link time ("this is a bug in oxide"), for valid Rust. This
//! test holds the two tables against each other and against ptxas, one
//! module per target with one function per stub.
//!
//! The stubs that call an LLVM intrinsic (`Intrinsic`, `Convergent`,
//! `ConvergentField1`) are held to the same rule through the device linker:
//! each target's module of calls goes through `oxide-opt --ptx --assemble`,
//! where an instruction LLVM cannot select at that PTX ISA is a crash.
//!
//! It needs ptxas (`$OXIDE_CUDA_PATH`, `$CUDA_PATH` or `/usr/local/cuda`)
//! and, for the intrinsic stubs, oxide-opt (`$OXIDE_OPT`, else the tree's
//! `build/bin/oxide-opt`), and says so where they are missing.

use oxide_tables::Table;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

/// A target of Targets.def.
struct Target {
    name: String,
    sm: u64,
    /// The PTX ISA version times ten (70 is 7.0).
    ptx: u64,
    /// Its features, by the names stubs use (`setmaxnreg`, `tcgen05`…).
    features: Vec<String>,
}

/// An inline-PTX stub of Stubs.def.
struct AsmStub {
    name: String,
    template: String,
    constraints: String,
    /// MIN_SM: a compute capability, or a feature's name.
    min: String,
}

fn ptxas() -> Option<PathBuf> {
    ["OXIDE_CUDA_PATH", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .chain([PathBuf::from("/usr/local/cuda")])
        .map(|dir| dir.join("bin/ptxas"))
        .find(|p| p.is_file())
}

fn targets() -> Vec<Target> {
    let table = Table::read_oxide("Targets.def");
    // `Clusters` (the identifier rows use) → `clusters` (what MIN_SM says).
    let names: Vec<(String, String)> = table
        .rows("OXIDE_TARGET_FEATURE")
        .map(|r| (r.ident(0).to_string(), r.string(1).to_string()))
        .collect();
    table
        .rows("OXIDE_TARGET")
        .map(|r| {
            let features = r
                .raw(4)
                .split('|')
                .map(str::trim)
                .filter(|f| *f != "0")
                .map(|f| {
                    names.iter().find(|(ident, _)| ident == f).map(|(_, name)| name.clone()).unwrap_or_else(|| {
                        panic!("{}: feature {f} is not an OXIDE_TARGET_FEATURE", r.location)
                    })
                })
                .collect();
            Target { name: r.ident(0).to_string(), sm: r.integer(1), ptx: r.integer(2), features }
        })
        .collect()
}

fn asm_stubs() -> Vec<AsmStub> {
    Table::read_oxide("Stubs.def")
        .rows("OXIDE_STUB")
        .filter(|r| matches!(r.ident(2), "InlineAsm" | "ConvergentAsm" | "PureAsm"))
        .map(|r| AsmStub {
            name: r.ident(0).to_string(),
            template: r.string(3).to_string(),
            constraints: r.string(4).to_string(),
            min: r.raw(5).to_string(),
        })
        .collect()
}

/// Whether a stub whose MIN_SM is `min` (a compute capability, or a
/// feature's name) may be called on `t`.
fn admits(min: &str, t: &Target) -> bool {
    match min.parse::<u64>() {
        Ok(sm) => t.sm >= sm,
        Err(_) => t.features.iter().any(|f| f == min),
    }
}

impl AsmStub {
    /// `.func <name>() { … }` around the template, each operand a register
    /// of its constraint's width (inputs set to zero first).
    fn function(&self) -> String {
        let mut regs = String::new();
        let mut init = String::new();
        let mut operands = Vec::new();
        for (i, c) in self.constraints.split(',').filter(|c| !c.starts_with('~')).enumerate() {
            let output = c.starts_with('=');
            let letter = c.trim_start_matches(['=', '&', '+']);
            let (ty, mov) = match letter {
                "h" => (".b16", "mov.b16"),
                "r" => (".b32", "mov.b32"),
                "l" => (".b64", "mov.b64"),
                "f" => (".f32", "mov.f32"),
                "d" => (".f64", "mov.f64"),
                other => panic!("stub {}: constraint `{other}` is new to this test", self.name),
            };
            let reg = format!("%o{i}");
            writeln!(regs, "    .reg {ty} {reg};").unwrap();
            if !output {
                let zero = if letter == "f" { "0f00000000" } else if letter == "d" { "0d0000000000000000" } else { "0" };
                writeln!(init, "    {mov} {reg}, {zero};").unwrap();
            }
            operands.push(reg);
        }
        // $10 before $1: replace the longest numbers first.
        let mut body = self.template.clone();
        for (i, reg) in operands.iter().enumerate().rev() {
            body = body.replace(&format!("${i}"), reg);
        }
        format!(".visible .func stub_{}()\n{{\n{regs}{init}    {body}\n    ret;\n}}\n", self.name)
    }
}

#[test]
fn every_inline_ptx_stub_assembles_on_every_target_that_has_it() {
    let Some(ptxas) = ptxas() else {
        eprintln!("skipped: no ptxas (set OXIDE_CUDA_PATH to a CUDA toolkit)");
        return;
    };
    let stubs = asm_stubs();
    assert!(stubs.len() > 50, "Stubs.def has {} inline-PTX stubs: the reader lost rows", stubs.len());
    let dir = std::env::temp_dir().join(format!("oxide-stubs-assemble-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for target in targets() {
        let mut ptx = format!(".version {}.{}\n.target {}\n.address_size 64\n\n", target.ptx / 10, target.ptx % 10, target.name);
        // Which stub each line of the module belongs to, for ptxas's messages.
        let mut owners: Vec<(usize, &str)> = Vec::new();
        for stub in stubs.iter().filter(|s| admits(&s.min, &target)) {
            owners.push((ptx.lines().count() + 1, &stub.name));
            ptx.push_str(&stub.function());
            checked += 1;
        }
        let file = dir.join(format!("{}.ptx", target.name));
        std::fs::write(&file, &ptx).unwrap();
        let out = Command::new(&ptxas)
            .args([&format!("-arch={}", target.name), "-c", "-o"])
            .arg(dir.join(format!("{}.cubin", target.name)))
            .arg(&file)
            .output()
            .unwrap();
        if out.status.success() {
            continue;
        }
        // `ptxas FILE, line N; error   : …`: name the stub that line is in.
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            let at = line.split(", line ").nth(1).and_then(|rest| rest.split(';').next()).and_then(|n| n.parse::<usize>().ok());
            let stub = at.and_then(|n| owners.iter().rev().find(|(first, _)| *first <= n)).map_or("?", |(_, name)| *name);
            failures.push(format!("{} (PTX ISA {}.{}): stub `{stub}`: {line}", target.name, target.ptx / 10, target.ptx % 10));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        failures.is_empty(),
        "ptxas refuses inline-PTX stubs on targets whose MIN_SM admits them (raise the stub's MIN_SM, or write \
         the instruction so that the target's PTX ISA version has it):\n{}",
        failures.join("\n")
    );
    eprintln!("{checked} stub functions assembled");
}

/// A stub that calls an LLVM intrinsic.
struct IntrinsicStub {
    name: String,
    /// `(a: u32, p: *const u8) -> u64`.
    signature: String,
    min: String,
}

fn intrinsic_stubs() -> Vec<IntrinsicStub> {
    Table::read_oxide("Stubs.def")
        .rows("OXIDE_STUB")
        .filter(|r| matches!(r.ident(2), "Intrinsic" | "Convergent" | "ConvergentField1"))
        .map(|r| IntrinsicStub { name: r.ident(0).to_string(), signature: r.string(1).to_string(), min: r.raw(5).to_string() })
        .collect()
}

/// The LLVM type of a Rust type of a stub signature.
fn llvm_type(rust: &str) -> &'static str {
    match rust.trim() {
        "" | "()" | "!" => "void",
        "bool" => "i1",
        "u8" | "i8" => "i8",
        "u16" | "i16" => "i16",
        "u32" | "i32" => "i32",
        "u64" | "i64" | "usize" | "isize" => "i64",
        "u128" | "i128" => "i128",
        "f32" => "float",
        "f64" => "double",
        t if t.starts_with('*') => "ptr",
        other => panic!("a stub signature type this test does not know: `{other}`"),
    }
}

/// An integer argument the instruction accepts (a constant: some intrinsics
/// take immediates): by the parameter's name, else 1.
fn integer_argument(parameter: &str) -> &'static str {
    match parameter {
        "count" | "threads" => "64",
        "mask" | "membermask" => "-1",
        "registers" | "regs" => "240",
        _ => "1",
    }
}

fn oxide_opt() -> Option<PathBuf> {
    let path = std::env::var_os("OXIDE_OPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/bin/oxide-opt"));
    path.is_file().then_some(path)
}

impl IntrinsicStub {
    /// A kernel calling the stub once: integer arguments constant, pointers
    /// and floats the kernel's parameters, the result stored.
    fn kernel(&self) -> (String, String) {
        let (params, ret) = self.signature.split_once("->").unwrap_or((&self.signature, ""));
        let params = params.trim().trim_start_matches('(').trim_end_matches(')');
        let ret = llvm_type(ret);
        let mut kernel_params = vec!["ptr %out".to_string()];
        let mut types = Vec::new();
        let mut args = Vec::new();
        for (i, p) in params.split(',').map(str::trim).filter(|p| !p.is_empty()).enumerate() {
            let (name, ty) = p.split_once(':').unwrap_or_else(|| panic!("stub {}: parameter `{p}`", self.name));
            let ty = llvm_type(ty);
            let arg = match ty {
                "ptr" | "float" | "double" => {
                    kernel_params.push(format!("{ty} %p{i}"));
                    format!("%p{i}")
                }
                "i1" => "true".into(),
                _ => integer_argument(name.trim()).into(),
            };
            types.push(ty);
            args.push(format!("{ty} {arg}"));
        }
        let symbol = format!("__oxide_stub_{}", self.name);
        let declare = format!("declare {ret} @{symbol}({})\n", types.join(", "));
        let call = format!("call {ret} @{symbol}({})", args.join(", "));
        let body = if ret == "void" {
            format!("  {call}\n")
        } else {
            format!("  %r = {call}\n  store {ret} %r, ptr %out\n")
        };
        (declare, format!("define ptx_kernel void @k_{}({}) {{\n{body}  ret void\n}}\n", self.name, kernel_params.join(", ")))
    }
}

#[test]
fn every_intrinsic_stub_compiles_on_every_target_that_has_it() {
    let (Some(oxide_opt), Some(_)) = (oxide_opt(), ptxas()) else {
        eprintln!("skipped: no oxide-opt (build the tree, or set OXIDE_OPT) or no ptxas");
        return;
    };
    let stubs = intrinsic_stubs();
    assert!(stubs.len() > 50, "Stubs.def has {} intrinsic stubs: the reader lost rows", stubs.len());
    let dir = std::env::temp_dir().join(format!("oxide-stubs-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for target in targets() {
        let mut declares = String::new();
        let mut kernels = String::new();
        for stub in stubs.iter().filter(|s| admits(&s.min, &target)) {
            let (declare, kernel) = stub.kernel();
            declares.push_str(&declare);
            kernels.push_str(&kernel);
            checked += 1;
        }
        let file = dir.join(format!("{}.ll", target.name));
        std::fs::write(&file, format!("target triple = \"nvptx64-nvidia-cuda\"\n\n{declares}\n{kernels}")).unwrap();
        let out = Command::new(&oxide_opt)
            .args(["--ptx", "--assemble", "--arch", &target.name])
            .arg(&file)
            .output()
            .unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let first: Vec<&str> = err.lines().filter(|l| !l.starts_with(' ') && !l.starts_with('#')).take(4).collect();
            failures.push(format!("{} (PTX ISA {}.{}): {}", target.name, target.ptx / 10, target.ptx % 10, first.join(" | ")));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        failures.is_empty(),
        "the device linker cannot compile intrinsic stubs on targets whose MIN_SM admits them (raise the stub's \
         MIN_SM or the target's PTX ISA):\n{}",
        failures.join("\n")
    );
    eprintln!("{checked} stub calls compiled and assembled");
}
