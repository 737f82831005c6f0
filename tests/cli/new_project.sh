#!/usr/bin/env bash
# A project of one's own, as the README's "Your own project" describes it:
# scripts/install-crates.sh packages every oxide crate (`cargo package`) into
# the registry `oxide` of a cargo home, `cargo oxide new` makes a project that
# takes them from there by version, and the project
#   * holds no absolute path (no path dependency, no home directory: grep);
#   * builds and runs (on the CPU emulator without a GPU) after being moved to
#     another directory, with the crates from their packages alone (the
#     packaged oxide-tables reads its copy of the tables, not this tree's).
#
#   bash tests/cli/new_project.sh            # stable
#   TOOLCHAIN=+nightly bash tests/cli/new_project.sh
#
# cargo-oxide and oxide-link come from $OXIDE_BIN (default build/bin). The
# cargo home is a temporary directory (nothing of ~/.cargo is read or
# written; no network), removed at the end with the project.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# The crates' version, from where it is said once ([workspace.package]).
version=$(sed -n 's/^version = "\([0-9]*\.[0-9]*\.[0-9]*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
requirement=${version%.*}
toolchain=${TOOLCHAIN:-+stable}
toolchain=+${toolchain#+}
export PATH="${OXIDE_BIN:-$root/build/bin}:$PATH"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR CARGO_BUILD_RUSTFLAGS OXIDE_ROOT
export RUSTUP_HOME=${RUSTUP_HOME:-$(rustup show home)}
work=$(mktemp -d "${TMPDIR:-/tmp}/oxide-new-project.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CARGO_HOME="$work/cargo-home"

fail() { echo "FAIL: $*" >&2; exit 1; }

echo "+ scripts/install-crates.sh (CARGO_HOME=$CARGO_HOME)" >&2
out=$(bash "$root/scripts/install-crates.sh" 2>&1) || { echo "$out"; fail "scripts/install-crates.sh"; }
for c in oxide-tables cuda-macros cuda-device cuda-driver-sys ptx-vm cuda-emulator cuda-core cuda-host cuda-async cuda-blas; do
  [ -f "$CARGO_HOME/oxide-registry/$c-$version.crate" ] || fail "no package of $c in the registry"
done
grep -q '^\[registries.oxide\]' "$CARGO_HOME/config.toml" || fail "the registry oxide is not configured"
# Installing again replaces the block, never adds a second one.
bash "$root/scripts/install-crates.sh" >/dev/null 2>&1
[ "$(grep -c '^\[registries.oxide\]' "$CARGO_HOME/config.toml")" = 1 ] || fail "install-crates.sh added the registry twice"

mkdir "$work/a" "$work/b"
out=$(cd "$work/a" && cargo "$toolchain" oxide new mine 2>&1) || { echo "$out"; fail "cargo oxide new"; }
grep -q "warning" <<<"$out" && { echo "$out"; fail "cargo oxide new warned with oxide-link on PATH and the registry installed"; }
# Nothing in the project names a directory: not this tree, not the cargo home.
[ "$(cat "$work/a/mine/.gitignore")" = /target ] || fail "the template's .gitignore changed; update this test"
if grep -rnE --exclude=.gitignore "$root|$work|$HOME|path *=|(^|[\"' =])/[a-z]" "$work/a/mine"; then
  fail "the new project holds an absolute path (above)"
fi
grep -q "cuda-device = { version = \"$requirement\", registry = \"oxide\" }" "$work/a/mine/Cargo.toml" ||
  fail "the new project does not take cuda-device from the registry by version"

mv "$work/a/mine" "$work/b/moved"
rmdir "$work/a"
cd "$work/b/moved"
echo "+ cargo $toolchain oxide run (moved)" >&2
out=$(cargo "$toolchain" oxide run 2>&1) || { echo "$out"; fail "the moved project does not build and run"; }
grep -q "SUCCESS: All 1024 elements correct" <<<"$out" || { echo "$out"; fail "the moved project's program did not succeed"; }
grep -q "registry \`oxide\`" <<<"$(cargo "$toolchain" tree --depth 1 2>&1)" || fail "cuda-device does not come from the registry oxide"
echo "ok: new project moved, built and ran from the registry oxide; no absolute path in it"
