#!/usr/bin/env bash
# cargo oxide in a project of one's own that configures cargo the way cargo
# users do, in .cargo/config.toml: build.target-dir, and rustflags whose
# effect the program checks (`--cfg oxide_user_cfg`: without it the crate does
# not compile, and the kernel writes a different value). Every command must
# honour both: build, run, inspect and pipeline find their output in the
# configured target directory, --target-dir overrides it, the rustflags reach
# rustc beside oxide's own (in build.rustflags, then in
# target.<host>.rustflags), `build -v` shows the device linker's report,
# and `check` reports a device error without
# building the GPU binary, as rustc-style JSON with --message-format=json.
#
#   bash tests/cli/cargo_config.sh            # stable
#   TOOLCHAIN=+nightly bash tests/cli/cargo_config.sh
#
# cargo-oxide and oxide-link come from $OXIDE_BIN (default build/bin). The
# scratch project lives in a temporary directory, removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
toolchain=${TOOLCHAIN:-+stable}
toolchain=+${toolchain#+}
export PATH="${OXIDE_BIN:-$root/build/bin}:$PATH"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR CARGO_BUILD_RUSTFLAGS
work=$(mktemp -d "${TMPDIR:-/tmp}/oxide-cargo-config.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
oxide() { echo "+ cargo $toolchain oxide $*" >&2; cargo "$toolchain" oxide "$@"; }

# The oxide crates, from the registry `oxide` of a cargo home of this test's
# own (scripts/install-crates.sh; no network, nothing of ~/.cargo).
export RUSTUP_HOME=${RUSTUP_HOME:-$(rustup show home)}
export CARGO_HOME="$work/cargo-home"
bash "$root/scripts/install-crates.sh" >/dev/null 2>&1 || fail "scripts/install-crates.sh"
cargo "$toolchain" oxide new cfgproj >/dev/null
cd cfgproj
# The user's settings: a target directory of their own and a cfg the code needs.
sed -i 's/^rustflags = \["-C", "save-temps"\]$/rustflags = ["-C", "save-temps", "--cfg", "oxide_user_cfg"]\ntarget-dir = "out"/' .cargo/config.toml
grep -q 'target-dir = "out"' .cargo/config.toml || fail "the template's [build] table changed; update this test"
printf '\n[lints.rust]\nunexpected_cfgs = { level = "warn", check-cfg = ["cfg(oxide_user_cfg)"] }\n' >> Cargo.toml
# Without the cfg the crate fails to compile; with it the kernel adds 1 more,
# which the template's own check of the result (a + b) turns into a failure.
# So the program succeeds only if the cfg reached the host AND the device code
# (both come from this crate's one rustc invocation) and does so the same way.
cat > src/user_cfg.rs <<'RS'
#[cfg(not(oxide_user_cfg))]
compile_error!("the rustflags of .cargo/config.toml did not reach rustc");
/// What the kernel adds to every element (0: the template's a + b holds).
pub const EXTRA: f32 = if cfg!(oxide_user_cfg) { 0.0 } else { 1.0 };
RS
sed -i '0,/^use /s//mod user_cfg;\nuse /' src/main.rs
sed -i 's/\(\*elem = a\[i\] + b\[i\]\);/\*elem = a[i] + b[i] + user_cfg::EXTRA;/' src/main.rs
grep -q 'user_cfg::EXTRA' src/main.rs || fail "the template's kernel changed; update this test"

oxide build
[ -x out/debug/cfgproj ] || fail "build: no out/debug/cfgproj (build.target-dir ignored)"
[ ! -e target ] || fail "build wrote to ./target although build.target-dir says out"
# --verbose shows the device linker's report, which rustc keeps to itself
# when a link succeeds, without rebuilding what the build before it built
# (no flag of rustc's changes), and leaves no report file behind.
touch src/main.rs
mkdir -p "$work/tmp"
out=$(TMPDIR="$work/tmp" oxide build -v 2>&1) || { echo "$out"; fail "build -v"; }
grep -q '^oxide-link: embedded 1 kernel' <<<"$out" || { echo "$out"; fail "build -v did not show the device linker's report"; }
grep -q 'Compiling cuda-core' <<<"$out" && { echo "$out"; fail "build -v rebuilt the dependencies"; }
[ -z "$(ls -A "$work/tmp")" ] || { ls -A "$work/tmp"; fail "build -v left files in TMPDIR"; }
out=$(oxide run --emulate 2>&1) || { echo "$out"; fail "run --emulate"; }
grep -q "SUCCESS" <<<"$out" || { echo "$out"; fail "run: the program did not succeed"; }

out=$(oxide inspect) || fail "inspect"
grep -q '\.entry' <<<"$out" || fail "inspect printed no kernel entry"
ls out/oxide/cfgproj/*.ptx >/dev/null || fail "inspect: no PTX under out/oxide/cfgproj"
oxide pipeline >/dev/null || fail "pipeline"
ls out/oxide/cfgproj/pipeline/*.mir >/dev/null || fail "pipeline: no MIR under out/oxide/cfgproj/pipeline"
ls out/oxide/cfgproj/pipeline/*.ptx >/dev/null || fail "pipeline: no PTX under out/oxide/cfgproj/pipeline"

# --target-dir wins over the configuration, for every command.
oxide inspect --target-dir other >/dev/null || fail "inspect --target-dir other"
ls other/oxide/cfgproj/*.ptx >/dev/null || fail "inspect --target-dir: no PTX under other/"
rm -rf other

# The same rustflags as target.<host>.rustflags: cargo then ignores
# build.rustflags, so oxide's flags must go there too.
host=$(rustc "$toolchain" -vV | sed -n 's/^host: //p')
sed -i '/^rustflags = /d' .cargo/config.toml
printf '\n[target.%s]\nrustflags = ["-C", "save-temps", "--cfg", "oxide_user_cfg"]\n' "$host" >> .cargo/config.toml
sed -i "0,/^\[target\.$host\]\$/{/^\[target\.$host\]\$/d}" .cargo/config.toml  # one table only
out=$(oxide run --emulate 2>&1) || { echo "$out"; fail "run --emulate with target.$host.rustflags"; }
grep -q "SUCCESS" <<<"$out" || { echo "$out"; fail "run with target rustflags: the program did not succeed"; }

# check: a clean crate passes; a device error is reported, as text and as
# rustc's JSON, without a GPU binary being built.
oxide check || fail "check of a clean crate"
sed -i 's/^\(\s*\)\(\*elem = a\[i\] + b\[i\]\)/\1let boxed = Box::new(a[i]);\n\1\2 + *boxed - a[i]/' src/main.rs
grep -q 'Box::new' src/main.rs || fail "could not put a device error into the kernel"
if out=$(oxide check 2>&1); then echo "$out"; fail "check passed a kernel with Box::new"; fi
grep -q "cannot be called on the GPU: heap allocation" <<<"$out" || { echo "$out"; fail "check: no device diagnostic"; }
json=$(oxide check --message-format=json 2>/dev/null) && fail "check --message-format=json passed a kernel with Box::new"
line=$(grep '"reason":"compiler-message"' <<<"$json" | grep 'heap allocation' | head -1)
[ -n "$line" ] || { echo "$json" | tail -5; fail "check --message-format=json: no compiler-message with the device error"; }
grep -q '"level":"error"' <<<"$line" || fail "JSON diagnostic without level error"
grep -q '"file_name":"src/main.rs"' <<<"$line" || { echo "$line"; fail "JSON diagnostic without a span in src/main.rs"; }
grep -q 'linking with' <<<"$json" && fail "JSON output still has rustc's 'linking with' message"
echo "ok: cargo oxide honours .cargo/config.toml ($toolchain)"
