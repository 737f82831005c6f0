//! oxide-fuzz: a differential tester for oxide. It writes random,
//! well-defined Rust functions over every scalar type (wrapping, checked,
//! saturating and overflowing arithmetic, shifts, rotates, bit operations,
//! casts between every pair of types, float arithmetic with and without
//! `mul_add`, f16 and bf16 arithmetic and conversions on their bits, control
//! flow, loops, arrays and iterators, Options), runs
//! each as a kernel and on the CPU in one program, and compares every
//! intermediate value. A mismatch shrinks to a few lines with `reduce`.
//!
//! With `--block` it writes block programs instead (`block.rs`): threads
//! that exchange values through shared memory, barriers, shuffles, votes and
//! shared atomics, under branches uniform over the block, the warp or
//! nothing, launched with many block shapes; every thread's values are
//! compared with a CPU model of the block.
//!
//! ```text
//! oxide-fuzz run --seeds 1..4 --emulate          # CI: kernels on the CPU emulator
//! oxide-fuzz run --block --seeds 1..4 --emulate  # threads that talk to each other
//! oxide-fuzz run --seed 7 --release              # on the GPU of this machine
//! oxide-fuzz campaign --seeds 1..40 --functions 250 --out DIR   # build for a GPU machine
//! oxide-fuzz reduce --seed 7 --function 12 --emulate
//! oxide-fuzz show --seed 7 --function 12
//! ```
//!
//! A seed is a complete bug report: the same seed writes the same program
//! on every machine.

mod ast;
mod block;
mod gen;
mod program;
mod reduce;
mod rng;
mod runner;
mod ty;

use program::{BlockCase, Case};
use runner::{Mismatch, Options};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage:
  oxide-fuzz run (--seed S | --seeds A..B) [--block] [--functions N] [--runs R] [--release] [--arch sm_XX] [--emulate[=MODE]] [--work DIR]
  oxide-fuzz campaign --seeds A..B --out DIR [--block] [--functions N] [--runs R] [--arch sm_XX] [--work DIR]
  oxide-fuzz reduce --seed S --function K [--input I] [--runs R] [--release] [--arch sm_XX] [--emulate[=MODE]] [--work DIR]
  oxide-fuzz show --seed S --function K [--block]
  oxide-fuzz gen --seed S --out DIR [--block] [--functions N] [--runs R]
With --block, R is the number of blocks each program launches (at most 8).";

/// The command line, parsed.
struct Args {
    command: String,
    seeds: std::ops::Range<u64>,
    functions: u64,
    runs: usize,
    function: Option<u64>,
    input: Option<usize>,
    out: Option<PathBuf>,
    /// Block programs instead of scalar functions.
    block: bool,
    opts: Options,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let command = it.next().ok_or(USAGE)?;
    let mut a = Args {
        command,
        seeds: 1..2,
        functions: 40,
        runs: 32,
        function: None,
        input: None,
        out: None,
        block: false,
        opts: Options {
            release: false,
            arch: "sm_90".into(),
            emulate: None,
            work: std::env::temp_dir().join("oxide-fuzz"),
            verbose: false,
        },
    };
    let num = |v: Option<String>, what: &str| -> Result<u64, String> {
        v.ok_or(format!("{what} needs a value"))?.parse().map_err(|_| format!("{what} needs a number"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seed" => {
                let s = num(it.next(), "--seed")?;
                a.seeds = s..s + 1;
            }
            "--seeds" => {
                let v = it.next().ok_or("--seeds needs A..B")?;
                let (lo, hi) = v.split_once("..").ok_or("--seeds needs A..B")?;
                let lo: u64 = lo.parse().map_err(|_| "--seeds needs numbers")?;
                let hi: u64 = hi.parse().map_err(|_| "--seeds needs numbers")?;
                if hi <= lo {
                    return Err(format!("--seeds {v} is empty"));
                }
                a.seeds = lo..hi;
            }
            "--functions" => a.functions = num(it.next(), "--functions")?,
            "--runs" => a.runs = num(it.next(), "--runs")? as usize,
            "--function" => a.function = Some(num(it.next(), "--function")?),
            "--input" => a.input = Some(num(it.next(), "--input")? as usize),
            "--out" => a.out = Some(it.next().ok_or("--out needs a directory")?.into()),
            "--work" => a.opts.work = it.next().ok_or("--work needs a directory")?.into(),
            "--arch" => a.opts.arch = it.next().ok_or("--arch needs sm_XX")?,
            "--release" => a.opts.release = true,
            "--block" => a.block = true,
            "--verbose" | "-v" => a.opts.verbose = true,
            "--emulate" => a.opts.emulate = Some("1".into()),
            s if s.starts_with("--emulate=") => a.opts.emulate = Some(s["--emulate=".len()..].to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if a.functions == 0 || a.runs == 0 {
        return Err("--functions and --runs must be at least 1".into());
    }
    Ok(a)
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates").canonicalize().unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates")
    })
}

/// Blocks a block program launches, at most.
const MAX_BLOCKS: usize = 8;

/// The source of the program of `seed` (scalar or block functions).
fn source(a: &Args, seed: u64) -> String {
    let name = package(a, seed);
    if a.block {
        let cases: Vec<BlockCase> = (0..a.functions)
            .map(|k| {
                let program = block::program(seed, k);
                let inputs = block::inputs(&program, seed, k, a.runs.min(MAX_BLOCKS));
                BlockCase { program, inputs }
            })
            .collect();
        program::block_source(&name, &cases)
    } else {
        program::source(&name, &cases(seed, a.functions, a.runs))
    }
}

/// The program of `seed`: its functions, each with its inputs.
fn cases(seed: u64, functions: u64, runs: usize) -> Vec<Case> {
    (0..functions)
        .map(|k| {
            let func = gen::function(seed, k);
            let inputs = gen::inputs(&func, seed, k, runs);
            Case { func, inputs }
        })
        .collect()
}

fn package(a: &Args, seed: u64) -> String {
    if a.block { format!("fuzz_block_s{seed}") } else { format!("fuzz_s{seed}") }
}

fn write_program(dir: &Path, name: &str, source: &str) -> Result<(), String> {
    program::write(dir, name, source, &crates_dir()).map_err(|e| format!("cannot write {}: {e}", dir.display()))
}

fn build_and_run(name: &str, source: &str, opts: &Options) -> Result<runner::Outcome, String> {
    let dir = opts.work.join(name);
    write_program(&dir, name, source)?;
    let binary = runner::build(&dir, name, opts)?;
    runner::run(&binary, opts)
}

fn cmd_run(a: &Args) -> Result<bool, String> {
    let mut all_clean = true;
    let profile = if a.opts.release { "release" } else { "debug" };
    for seed in a.seeds.clone() {
        let outcome = build_and_run(&package(a, seed), &source(a, seed), &a.opts)?;
        if outcome.clean() {
            println!("ok    seed {seed} ({profile}): {}", outcome.summary.as_deref().unwrap_or(""));
            continue;
        }
        all_clean = false;
        println!("FAIL  seed {seed} ({profile}): {}", outcome.summary.as_deref().unwrap_or("(no summary)"));
        for m in &outcome.mismatches {
            println!("      {} input {} differs at record {}: GPU {:#x} CPU {:#x}", m.function, m.input, m.record,
                m.gpu.get(m.record).copied().unwrap_or(0), m.cpu.get(m.record).copied().unwrap_or(0));
        }
        for (f, why) in &outcome.errors {
            println!("      {f}: {why}");
        }
        if outcome.summary.is_none() && outcome.errors.is_empty() {
            println!("      the program stopped early (exit {:?}):\n{}", outcome.exit_code, outcome.output);
        }
        if let (Some(m), true) = (outcome.mismatches.first(), a.block) {
            println!("      see it: oxide-fuzz show --block --seed {seed} --function {}", m.function.trim_start_matches('b'));
        } else if let Some(m) = outcome.mismatches.first() {
            let k: u64 = m.function.trim_start_matches('f').parse().unwrap_or(0);
            println!("      shrink it: oxide-fuzz reduce --seed {seed} --function {k} --input {}{}", m.input,
                if a.opts.release { " --release" } else { "" });
        }
    }
    Ok(all_clean)
}

/// The script that runs a campaign folder's programs on the GPU machine:
/// each `.xz` under debug/ and release/ is unpacked, run (several at once)
/// and deleted; it prints every program's summary and mismatches, then the
/// total.
const CAMPAIGN_SCRIPT: &str = r#"#!/usr/bin/env bash
# Runs every campaign program of this folder (written by `oxide-fuzz campaign`).
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export work
run_one() {
  f=$1; profile=$(basename "$(dirname "$f")"); name=$(basename "$f" .xz)
  mkdir -p "$work/$profile"; bin="$work/$profile/$name"
  xz -dc "$f" > "$bin" && chmod +x "$bin"
  out=$(cd "$work" && timeout -k 5 "${OXIDE_FUZZ_TIMEOUT:-300}" "$bin" 2>&1); rc=$?
  line=$(echo "$out" | grep '^fuzz: ')
  echo "$profile/$name rc=$rc ${line:-no summary: $(echo "$out" | tail -2 | tr '
' ' ')}"
  echo "$out" | grep -E '^(MISMATCH|ERROR)' | head -10 | sed 's/^/    /'
  rm -f "$bin"
}
export -f run_one
ls "$here"/debug/*.xz "$here"/release/*.xz 2>/dev/null | xargs -P "${JOBS:-8}" -I{} bash -c 'run_one {}' > "$work/all.txt"
cat "$work/all.txt"
awk '$3 == "fuzz:" { f += $4; r += $6; m += $8 } $2 != "rc=0" && $1 !~ /^MISMATCH|^ERROR/ && NF > 1 && $1 ~ /\// { failed++ }
     END { printf "campaign: %d functions, %d runs, %d mismatches, %d programs failed\n", f, r, m, failed }' "$work/all.txt"
! grep -q -v ' rc=0 ' <(grep -E '^(debug|release)/' "$work/all.txt")
"#;

fn cmd_campaign(a: &Args) -> Result<bool, String> {
    let out = a.out.clone().ok_or("campaign needs --out DIR")?;
    for profile in ["debug", "release"] {
        std::fs::create_dir_all(out.join(profile)).map_err(|e| e.to_string())?;
    }
    std::fs::write(out.join("run.sh"), CAMPAIGN_SCRIPT).map_err(|e| e.to_string())?;
    for seed in a.seeds.clone() {
        let name = package(a, seed);
        let done = |profile: &str| out.join(profile).join(format!("{name}.xz")).exists();
        if done("debug") && done("release") {
            println!("have {name} (debug and release)");
            continue;
        }
        let dir = a.opts.work.join(&name);
        write_program(&dir, &name, &source(a, seed))?;
        for (profile, release) in [("debug", false), ("release", true)] {
            if done(profile) {
                continue;
            }
            let opts = Options { release, ..a.opts.clone() };
            let binary = runner::build(&dir, &name, &opts)?;
            let stripped = out.join(profile).join(&name);
            let status = std::process::Command::new("strip").arg("-o").arg(&stripped).arg(&binary).status();
            if !status.is_ok_and(|s| s.success()) {
                std::fs::copy(&binary, &stripped).map_err(|e| e.to_string())?;
            }
            // xz: the GPU machine has it, and it halves what travels.
            let packed = std::process::Command::new("xz").args(["-9", "-T2", "-f"]).arg(&stripped).status();
            if !packed.is_ok_and(|s| s.success()) {
                return Err(format!("cannot compress {} with xz", stripped.display()));
            }
            println!("built {}.xz ({profile})", stripped.display());
        }
    }
    println!("wrote {}: run `bash {}/run.sh` where the GPU is", out.display(), out.display());
    Ok(true)
}

fn cmd_reduce(a: &Args) -> Result<bool, String> {
    if a.block {
        return Err("reduce shrinks scalar functions; see a block program with `show --block`".into());
    }
    let seed = a.seeds.start;
    let k = a.function.ok_or("reduce needs --function K")?;
    let func = gen::function(seed, k);
    let all_inputs = gen::inputs(&func, seed, k, a.runs);
    // Find the failing input: run the function alone on all of them.
    let name = format!("fuzz_reduce_s{seed}_f{k}");
    let first = build_and_run(&name, &program::source(&name, &[Case { func: func.clone(), inputs: all_inputs.clone() }]), &a.opts)?;
    let m: Mismatch = match a.input {
        Some(i) => first.mismatches.iter().find(|m| m.input == i).cloned(),
        None => first.mismatches.first().cloned(),
    }
    .ok_or_else(|| format!("seed {seed} function {k} does not mismatch here ({}); nothing to reduce", first.summary.as_deref().unwrap_or("no summary")))?;
    let input = all_inputs[m.input].clone();
    let opts = a.opts.clone();
    let mut round = 0;
    let mut oracle = |cases: &[Case]| -> Vec<Option<Mismatch>> {
        round += 1;
        let name = format!("fuzz_reduce_s{seed}_f{k}_round");
        match build_and_run(&name, &program::source(&name, cases), &opts) {
            Ok(o) => cases.iter().map(|c| o.mismatches.iter().find(|m| m.function == c.func.name).cloned()).collect(),
            Err(e) => {
                eprintln!("oxide-fuzz: round {round}: {e}");
                vec![None; cases.len()]
            }
        }
    };
    let (reduced, reduced_input) = reduce::reduce(&func, &input, &m, &mut oracle, &mut |s| eprintln!("oxide-fuzz: {s}"));
    println!("// seed {seed}, function {k}, input {}: reduced from {} to {} statements", m.input, func.body.len(), reduced.body.len());
    print!("{}", reduced.render());
    let args: Vec<String> = reduced.params.iter().zip(&reduced_input).map(|((_, t), b)| t.literal(*b)).collect();
    println!("// differs on the GPU for ({})", args.join(", "));
    Ok(true)
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("oxide-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match a.command.as_str() {
        "run" => cmd_run(&a),
        "campaign" => cmd_campaign(&a),
        "reduce" => cmd_reduce(&a),
        "show" => {
            let k = a.function.unwrap_or(0);
            if a.block {
                print!("{}", block::program(a.seeds.start, k).render());
            } else {
                print!("{}", gen::function(a.seeds.start, k).render());
            }
            Ok(true)
        }
        "gen" => match &a.out {
            Some(out) => write_program(out, &package(&a, a.seeds.start), &source(&a, a.seeds.start)).map(|_| true),
            None => Err("gen needs --out DIR".into()),
        },
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("oxide-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}
