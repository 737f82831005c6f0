//! Builds a generated program through `cargo oxide` and runs it (on the
//! GPU, or on the CPU emulator), reading back what it found.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How programs are built and run.
#[derive(Clone, Debug)]
pub struct Options {
    pub release: bool,
    pub arch: String,
    /// `OXIDE_EMULATE` for the run (`Some("1")`, `Some("host")`…), or none
    /// to run where `cargo oxide run` would (the GPU when there is one).
    pub emulate: Option<String>,
    /// Where generated crates and their shared target directory live.
    pub work: PathBuf,
    pub verbose: bool,
}

/// One differing input of one function.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub function: String,
    pub input: usize,
    pub record: usize,
    pub gpu: Vec<u128>,
    pub cpu: Vec<u128>,
}

/// What a run of a program reported.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub mismatches: Vec<Mismatch>,
    /// `ERROR f3: …` lines: a failed launch (a device panic in a function
    /// that cannot panic on the CPU is a mismatch too).
    pub errors: Vec<(String, String)>,
    /// The `fuzz: …` line; none when the program did not get there.
    pub summary: Option<String>,
    pub exit_code: Option<i32>,
    pub output: String,
}

impl Outcome {
    /// Whether every function matched.
    pub fn clean(&self) -> bool {
        self.mismatches.is_empty() && self.errors.is_empty() && self.summary.is_some() && self.exit_code == Some(0)
    }

}

/// Builds the program in `dir` and returns its executable.
pub fn build(dir: &Path, package: &str, opts: &Options) -> Result<PathBuf, String> {
    let target = opts.work.join("target");
    let mut cmd = Command::new("cargo");
    cmd.current_dir(dir).env("CARGO_TARGET_DIR", &target).args(["oxide", "build", "--arch", &opts.arch]);
    if opts.release {
        cmd.arg("--release");
    }
    if opts.verbose {
        eprintln!("oxide-fuzz: building {} ({})", dir.display(), if opts.release { "release" } else { "debug" });
    }
    let out = cmd.output().map_err(|e| format!("cannot run `cargo oxide build`: {e} (is cargo-oxide installed?)"))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo oxide build` of {} failed:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let binary = target.join(if opts.release { "release" } else { "debug" }).join(package);
    if binary.exists() {
        Ok(binary)
    } else {
        Err(format!("the build of {} left no executable at {}", dir.display(), binary.display()))
    }
}

/// Runs a built program and parses its report.
pub fn run(binary: &Path, opts: &Options) -> Result<Outcome, String> {
    let mut cmd = Command::new(binary);
    match &opts.emulate {
        Some(mode) => cmd.env("OXIDE_EMULATE", mode),
        None => cmd.env_remove("OXIDE_EMULATE"),
    };
    let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let mut outcome = parse(&String::from_utf8_lossy(&out.stdout));
    outcome.exit_code = out.status.code();
    outcome.output.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(outcome)
}

/// Reads a program's output (program.rs documents the lines).
pub fn parse(text: &str) -> Outcome {
    let mut o = Outcome { output: text.to_string(), ..Outcome::default() };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("MISMATCH ") {
            if let Some(m) = parse_mismatch(rest) {
                o.mismatches.push(m);
            }
        } else if let Some(rest) = line.strip_prefix("ERROR ") {
            let (f, why) = rest.split_once(": ").unwrap_or((rest, ""));
            o.errors.push((f.to_string(), why.to_string()));
        } else if line.starts_with("fuzz: ") {
            o.summary = Some(line.to_string());
        }
    }
    o
}

fn parse_mismatch(rest: &str) -> Option<Mismatch> {
    // `f3 input 5 record 2 n=7/7 gpu=0x1,0x2 cpu=0x1,0x3`
    let mut words = rest.split_whitespace();
    let function = words.next()?.to_string();
    words.next()?; // input
    let input = words.next()?.parse().ok()?;
    words.next()?; // record
    let record = words.next()?.parse().ok()?;
    words.next()?; // n=
    let values = |w: Option<&str>, key: &str| -> Option<Vec<u128>> {
        let list = w?.strip_prefix(key)?;
        if list.is_empty() {
            return Some(vec![]);
        }
        list.split(',').map(|v| u128::from_str_radix(v.trim_start_matches("0x"), 16).ok()).collect()
    };
    let gpu = values(words.next(), "gpu=")?;
    let cpu = values(words.next(), "cpu=")?;
    Some(Mismatch { function, input, record, gpu, cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mismatches_errors_and_the_summary() {
        let o = parse("MISMATCH f3 input 5 record 1 n=2/2 gpu=0x1,0xff cpu=0x1,0x10\nERROR f7: kernel panicked\nfuzz: 8 functions, 100 runs, 2 mismatches\n");
        assert_eq!(o.mismatches, vec![Mismatch { function: "f3".into(), input: 5, record: 1, gpu: vec![1, 255], cpu: vec![1, 16] }]);
        assert_eq!(o.errors, vec![("f7".into(), "kernel panicked".into())]);
        assert!(o.summary.is_some());
        assert!(!o.clean());
    }
}
