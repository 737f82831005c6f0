//! `static_shared_per_kernel` against ptxas: random modules of module-scope
//! and function-local `.shared` variables (every alignment PTX code uses,
//! odd sizes), functions that name some of them and call each other
//! (directly, and through addresses stored in memory), and kernels that do
//! the same, with and without a dynamic shared array; each
//! kernel's size must be the "bytes smem" `ptxas -v` reports for it, for
//! sm_80 and sm_90. The same for every kernel of the fixtures (the device
//! linker's own output).
//!
//! Skips, saying so, where no ptxas is found ($OXIDE_CUDA_PATH, $CUDA_PATH,
//! /usr/local/cuda).

mod common;

use common::ptxas;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

/// xorshift64*: the same modules on every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn declaration(&mut self, name: &str) -> String {
        let align = [1, 2, 4, 8, 16, 32, 128][self.below(7) as usize];
        format!(".shared .align {align} .b8 {name}[{}];", 1 + self.below(300))
    }
}

/// A random module for `arch` and the names of its kernels.
fn random_module(random: &mut Random, arch: &str) -> (String, Vec<String>) {
    let mut ptx = format!(".version 8.0\n.target {arch}\n.address_size 64\n");
    let variables = 1 + random.below(6) as usize;
    for v in 0..variables {
        writeln!(ptx, "{}", random.declaration(&format!("m{v}"))).unwrap();
    }
    if random.chance(40) {
        let align = [4, 8, 16, 64, 256][random.below(5) as usize];
        writeln!(ptx, ".extern .shared .align {align} .b8 dynamic[];").unwrap();
    }
    // Where code stores and loads function addresses.
    writeln!(ptx, ".global .align 8 .u64 slot;").unwrap();
    // Functions may call those defined before them (no recursion: ptxas
    // would need a stack for it).
    let body = |random: &mut Random, callable: usize, own: &str| {
        let mut text = String::from("{ .reg .b32 %r<2>; .reg .b64 %rd<2>;\n");
        for d in 0..random.below(3) {
            writeln!(text, "{}", random.declaration(&format!("{own}_l{d}"))).unwrap();
            if random.chance(70) {
                writeln!(text, "st.shared.u32 [{own}_l{d}], %r1;").unwrap();
            }
        }
        for v in 0..variables {
            if random.chance(35) {
                writeln!(text, "st.shared.u32 [m{v}+{}], %r1;", 0).unwrap();
            }
        }
        for f in 0..callable {
            if random.chance(30) {
                writeln!(text, "call f{f}, ();").unwrap();
            }
            if random.chance(10) {
                writeln!(text, "mov.u64 %rd1, f{f}; st.global.u64 [slot], %rd1;").unwrap();
            }
        }
        if callable > 0 && random.chance(15) {
            writeln!(text, "ld.global.u64 %rd1, [slot]; proto: .callprototype _ (); call %rd1, (), proto;").unwrap();
        }
        text.push_str("ret; }\n");
        text
    };
    let functions = random.below(4) as usize;
    for f in 0..functions {
        let text = body(random, f, &format!("f{f}"));
        writeln!(ptx, ".func f{f}() {text}").unwrap();
    }
    let kernels: Vec<String> = (0..1 + random.below(4)).map(|k| format!("k{k}")).collect();
    for k in &kernels {
        let text = body(random, functions, k);
        writeln!(ptx, ".visible .entry {k}() {text}").unwrap();
    }
    (ptx, kernels)
}

/// Each kernel's "bytes smem" in `ptxas -v`'s report (0 where it gives none).
fn reported(log: &str) -> HashMap<String, u32> {
    let mut sizes = HashMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if line.contains(": Used ") {
            let Some(kernel) = current.take() else { continue };
            let smem = line
                .split(", ")
                .find_map(|part| part.strip_suffix(" bytes smem"))
                .map_or(0, |n| n.trim().parse().expect("a byte count"));
            sizes.insert(kernel, smem);
        }
    }
    sizes
}

/// `ptxas -v` of `ptx` for `arch`: each kernel's "bytes smem".
fn ptxas_sizes(ptxas: &std::path::Path, dir: &std::path::Path, ptx: &str, arch: &str) -> HashMap<String, u32> {
    let file = dir.join("module.ptx");
    std::fs::write(&file, ptx).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch", arch, "-v", "-o"])
        .arg(dir.join("module.cubin"))
        .arg(&file)
        .output()
        .expect("ptxas runs");
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ptxas refused the module:\n{log}\n{ptx}");
    reported(&log)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ptx-vm-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn static_shared_per_kernel_matches_ptxas() {
    let Some(ptxas) = ptxas() else {
        eprintln!("SKIPPED static_shared_per_kernel_matches_ptxas: no ptxas in $OXIDE_CUDA_PATH, $CUDA_PATH or /usr/local/cuda");
        return;
    };
    let dir = scratch("random-shared");
    let mut random = Random(0x5eed_5a4e_d000_0001);
    for round in 0..60 {
        let arch = ["sm_80", "sm_90"][round % 2];
        let (ptx, kernels) = random_module(&mut random, arch);
        let want = ptxas_sizes(&ptxas, &dir, &ptx, arch);
        let got = ptx_vm::static_shared_per_kernel(&ptx).unwrap();
        for k in &kernels {
            assert_eq!(got.get(k), want.get(k), "kernel {k} of module {round}:\n{ptx}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_fixtures_kernels_match_ptxas() {
    let Some(ptxas) = ptxas() else {
        eprintln!("SKIPPED the_fixtures_kernels_match_ptxas: no ptxas in $OXIDE_CUDA_PATH, $CUDA_PATH or /usr/local/cuda");
        return;
    };
    let dir = scratch("fixture-shared");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut with_shared = 0;
    for entry in std::fs::read_dir(fixtures).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "ptx") {
            continue;
        }
        let ptx = std::fs::read_to_string(&path).unwrap();
        let arch = ptx.lines().find_map(|l| l.trim().strip_prefix(".target ")).expect("a .target line");
        let arch = arch.split(',').next().unwrap().trim();
        let want = ptxas_sizes(&ptxas, &dir, &ptx, arch);
        let got = ptx_vm::static_shared_per_kernel(&ptx).unwrap();
        assert_eq!(got.len(), want.len(), "{}: kernels", path.display());
        for (kernel, size) in &want {
            assert_eq!(got.get(kernel), Some(size), "{}: kernel {kernel}", path.display());
        }
        with_shared += usize::from(want.values().any(|&s| s > 0));
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(with_shared >= 5, "only {with_shared} fixtures have static shared memory");
}
