#!/usr/bin/env bash
# The device link of a crate with many kernels (benches/rebuild/many_kernels.rs,
# 200 kernels sharing a helper and a `#[constant]` table) compiled in parts
# (Link/SplitByKernel.cpp) is the same program as compiled whole
# (OXIDE_SPLIT=0): the same kernel entries and device functions, each defined
# once, and ptxas accepts both; the split build runs on the CPU emulator and
# every kernel matches the CPU. Then one kernel is edited: the relink compiles
# that kernel's bucket of parts again (planPtxasBuckets: a few dozen kernels
# each) and takes every other bucket from the cache. Then host code alone is
# edited: the relink takes O3's result and, by its part index, every bucket
# from the cache without cutting it again, and the program still passes on
# the emulator; with one bucket pruned from the cache, it cuts the module and
# compiles that bucket alone.
#
#   bash tests/cli/split_link.sh            # stable
#   TOOLCHAIN=+nightly bash tests/cli/split_link.sh
#
# cargo-oxide and oxide-link come from $OXIDE_BIN (default build/bin). The
# scratch crate lives in a temporary directory, removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
toolchain=${TOOLCHAIN:-+stable}
toolchain=+${toolchain#+}
export PATH="${OXIDE_BIN:-$root/build/bin}:$PATH"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_TARGET_DIR CARGO_BUILD_RUSTFLAGS OXIDE_SPLIT OXIDE_CACHE OXIDE_CACHE_DIR
work=$(mktemp -d "${TMPDIR:-/tmp}/oxide-split-link.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ptxas=${OXIDE_CUDA_PATH:-/usr/local/cuda}/bin/ptxas
arch=sm_90

rustc "$toolchain" -O -o "$work/gen" "$root/benches/rebuild/gen_many_kernels.rs"
mkdir -p "$work/many/src"
cat > "$work/many/Cargo.toml" <<TOML
[package]
name = "many_kernels"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
cuda-device = { path = "$root/crates/cuda-device" }
cuda-core = { path = "$root/crates/cuda-core" }
cuda-host = { path = "$root/crates/cuda-host" }

[workspace]
TOML
"$work/gen" 200 "$work/many/src/main.rs"
cd "$work/many"
export CARGO_TARGET_DIR="${SPLIT_LINK_TARGET:-$work/target}"
pipeline_ptx() { find "$CARGO_TARGET_DIR/oxide" -path '*pipeline*' -name '*many_kernels.ptx' | head -1; }
# The functions a PTX module defines (entries and functions with a body),
# and its module-level variables, one a line, sorted.
functions() {
  perl -0777 -ne '
    while (/^(?:\.visible |\.weak )?(?:\.entry|\.func)\s*(?:\([^)]*\))?\s*([\w\$]+)[^;{]*([;{])/mg) {
      print "$1\n" if $2 eq "{";
    }' "$1" | sort
}
variables() {
  perl -0777 -ne '
    while (/^(?:\.visible |\.weak )?(?:\.global|\.const|\.shared)\s[^;=\n]*?([\w\$]+)\s*(?:\[[^\]]*\])?\s*(?:=|;)/mg) {
      print "$1\n";
    }' "$1" | sort
}

echo "+ cargo $toolchain oxide pipeline --release (whole, OXIDE_SPLIT=0)" >&2
OXIDE_SPLIT=0 cargo "$toolchain" oxide pipeline --release --arch $arch >/dev/null 2>"$work/whole.log" ||
  { cat "$work/whole.log"; fail "the whole-module build failed"; }
cp "$(pipeline_ptx)" "$work/whole.ptx"
echo "+ cargo $toolchain oxide pipeline --release (in parts)" >&2
cargo "$toolchain" oxide pipeline --release --arch $arch >/dev/null 2>"$work/split.log" ||
  { cat "$work/split.log"; fail "the split build failed"; }
cp "$(pipeline_ptx)" "$work/split.ptx"

# `mix`, which every kernel calls, is in the common part, external so that
# the kernels' parts could declare it; compiled whole it stays internal: this
# tells that each build went the way it was asked to.
grep -q '^\.visible \.func .*mix' "$work/split.ptx" || fail "the default build was not compiled in parts"
grep -q '^\.visible \.func .*mix' "$work/whole.ptx" && fail "the OXIDE_SPLIT=0 build was compiled in parts"
entries_whole=$(grep -c '^\.visible \.entry' "$work/whole.ptx")
entries_split=$(grep -c '^\.visible \.entry' "$work/split.ptx")
[ "$entries_whole" -ge 200 ] || fail "the whole module has $entries_whole entries, not 200 or more"
[ "$entries_whole" = "$entries_split" ] || fail "$entries_whole entries whole, $entries_split in parts"
diff <(grep '^\.visible \.entry' "$work/whole.ptx" | sort) <(grep '^\.visible \.entry' "$work/split.ptx" | sort) >/dev/null ||
  fail "the kernel entries differ between the whole and the split module"
# Every function and variable once; the same functions; as many variables
# (the split names the unnamed ones, which NVPTX numbers per module, after
# their contents).
for f in functions variables; do
  $f "$work/split.ptx" | uniq -d | grep -q . && fail "a symbol is defined twice in the joined PTX ($f)"
done
diff <(functions "$work/whole.ptx") <(functions "$work/split.ptx") ||
  fail "the functions differ between the whole and the split module"
[ "$(variables "$work/whole.ptx" | wc -l)" = "$(variables "$work/split.ptx" | wc -l)" ] ||
  fail "the whole and the split module have different numbers of variables"
if [ -x "$ptxas" ]; then
  "$ptxas" -arch=$arch -o "$work/whole.cubin" "$work/whole.ptx" || fail "ptxas refused the whole module"
  "$ptxas" -arch=$arch -o "$work/split.cubin" "$work/split.ptx" || fail "ptxas refused the joined module"
fi

echo "+ cargo $toolchain oxide run --release --emulate (every kernel against the CPU)" >&2
cargo "$toolchain" oxide run --release --arch $arch --emulate=ptx 2>"$work/run.log" | tee "$work/run.out" ||
  { cat "$work/run.log"; fail "the split build does not run on the emulator"; }
grep -q '^PASS: 200 kernels' "$work/run.out" || fail "the program did not say PASS"

# A cache filled by this source alone (a target directory reused from an
# earlier run may hold the edited kernel's part already).
cache="$CARGO_TARGET_DIR/release/oxide-cache"
rm -rf "$cache"
touch src/main.rs
cargo "$toolchain" oxide build --release --arch $arch 2>"$work/fill.log" ||
  { cat "$work/fill.log"; fail "the build filling the cache failed"; }
[ -d "$cache" ] || fail "no $cache after the release build"
before=$(find "$cache" -name '*.ptx' | wc -l)
# The PTX is cached per bucket: 200 kernels make several, so that an edit
# does not redo most of them.
[ "$before" -ge 4 ] || fail "the cache holds $before buckets after a link of 200 kernels (want several)"
# The device linker's report (OXIDE_VERBOSE) is caught by a wrapper, since
# cargo shows a linker's output only on failure.
cat > "$work/link-wrap.sh" <<WRAP
#!/usr/bin/env bash
OXIDE_VERBOSE=1 "$(command -v oxide-link)" "\$@" 2>>"\$FRAMES_LOG"
WRAP
chmod +x "$work/link-wrap.sh"
"$work/gen" 200 src/main.rs 100
echo "+ cargo $toolchain oxide build --release (kernel 100 edited)" >&2
: > "$work/edit-report.log"
FRAMES_LOG="$work/edit-report.log" OXIDE_LINK="$work/link-wrap.sh" \
  cargo "$toolchain" oxide build --release --arch $arch 2>"$work/edit.log" ||
  { cat "$work/edit.log" "$work/edit-report.log"; fail "the build after the edit failed"; }
after=$(find "$cache" -name '*.ptx' | wc -l)
new=$((after - before))
[ "$new" -ge 1 ] && [ "$new" -le 2 ] ||
  fail "editing one kernel compiled $new buckets again (expected the kernel's bucket, at most also the common part's)"
grep -q 'optimised module from the cache' "$work/edit-report.log" &&
  fail "the kernel edit took the optimised module of the unedited crate from the cache"
# Appends a host function NAME to main.rs and relinks, the device linker's
# report in $work/NAME-report.log.
host_edit() {
  printf '\n#[allow(dead_code)]\nfn %s() -> u32 {\n    7\n}\n' "$1" >> src/main.rs
  echo "+ cargo $toolchain oxide build --release (host code edited: $1)" >&2
  : > "$work/$1-report.log"
  FRAMES_LOG="$work/$1-report.log" OXIDE_LINK="$work/link-wrap.sh" \
    cargo "$toolchain" oxide build --release --arch $arch 2>"$work/$1.log" ||
    { cat "$work/$1.log" "$work/$1-report.log"; fail "the build after the host edit $1 failed"; }
}
# An edit of host code alone gives O3 the same device module: the link
# takes O3's result from the cache (OptimizedModuleCache.cpp), and with it
# the index of the buckets the link before cut it into, every bucket's PTX
# cached: it does not cut the module again.
host_edit host_only_edit
report=$work/host_only_edit-report.log
grep -q 'optimised module from the cache' "$report" ||
  { cat "$report"; fail "a host-only edit ran O3 again"; }
grep -Eq 'PTX of [0-9]+ buckets from the cache, by the module.s part index' "$report" ||
  { cat "$report"; fail "after a host-only edit, the buckets of the cached module were not taken by its part index"; }
grep -q 'split into' "$report" &&
  { cat "$report"; fail "after a host-only edit, the cached module was cut again"; }
# A bucket pruned from the cache: the index is no use, the module is cut
# again, and the parts are those of before (every other bucket cached).
index=$(ls -t $(find "$cache" -name '*.parts') | head -1)
key=$(tail -1 "$index")
[ -f "$cache/${key:0:2}/$key.ptx" ] || fail "the part index $index names no cached bucket ($key)"
rm -f "$cache/${key:0:2}/$key.ptx"
host_edit edit_with_a_bucket_pruned
report=$work/edit_with_a_bucket_pruned-report.log
grep -Eq 'PTX of 1 buckets \([0-9]+ cached\)' "$report" ||
  { cat "$report"; fail "with one bucket pruned, the relink did not compile that bucket alone"; }
echo "+ cargo $toolchain oxide run --release --emulate (after the host edit)" >&2
cargo "$toolchain" oxide run --release --arch $arch --emulate=ptx 2>"$work/run2.log" | tee "$work/run2.out" ||
  { cat "$work/run2.log"; fail "the build from the cached module does not run on the emulator"; }
grep -q '^PASS: 200 kernels' "$work/run2.out" || fail "the build from the cached module did not say PASS"
# The stack frames of a split link come from each cubin's `.nv.info`
# records; where a cubin lacks them, from ptxas -v's report
# (OXIDE_FRAMES=ptxas-log takes that path on purpose). Both must bound every
# kernel's stack the same.
if [ -x "$ptxas" ]; then
  bounds() {
    rm -rf "$cache"; touch src/main.rs; : > "$work/frames-$1.log"
    FRAMES_LOG="$work/frames-$1.log" OXIDE_LINK="$work/link-wrap.sh" OXIDE_FRAMES=$2 OXIDE_SPLIT=${3:-1} \
      cargo "$toolchain" oxide build --release --arch $arch 2>"$work/frames-build-$1.log" ||
      { cat "$work/frames-build-$1.log" "$work/frames-$1.log"; fail "the build with OXIDE_FRAMES=$2 failed"; }
    grep 'stack bound of' "$work/frames-$1.log" | sort > "$work/bounds-$1.txt"
  }
  echo "+ cargo $toolchain oxide build --release, frames from the cubins, then from ptxas -v" >&2
  bounds cubin ""
  [ "$(find "$cache" -name '*.log' | wc -l)" = 0 ] || fail "ptxas -v ran although the cubins hold the frames"
  bounds log ptxas-log
  [ "$(find "$cache" -name '*.log' | wc -l)" -ge 4 ] || fail "OXIDE_FRAMES=ptxas-log did not take the frames from ptxas -v"
  kernels=$(wc -l < "$work/bounds-cubin.txt")
  [ "$kernels" -ge 200 ] || fail "$kernels stack bounds reported (want one per kernel, 200 or more)"
  grep -qv ': 0 bytes' "$work/bounds-cubin.txt" || fail "every stack bound is 0: the frames were not read"
  diff "$work/bounds-cubin.txt" "$work/bounds-log.txt" >&2 ||
    fail "the stack bounds from the cubins differ from those of ptxas -v"
  # The module compiled whole reads its frames the same way.
  echo "+ the same compiled whole (OXIDE_SPLIT=0)" >&2
  bounds whole-cubin "" 0
  grep -q 'ptxas -c of' "$work/frames-whole-cubin.log" && fail "OXIDE_SPLIT=0 was compiled in parts"
  bounds whole-log ptxas-log 0
  [ "$(wc -l < "$work/bounds-whole-cubin.txt")" = "$kernels" ] || fail "compiled whole, not every kernel has a stack bound"
  diff "$work/bounds-whole-cubin.txt" "$work/bounds-whole-log.txt" >&2 ||
    fail "compiled whole, the stack bounds from the cubin differ from those of ptxas -v"
  frames="; $kernels stack bounds the same from the cubins and from ptxas -v, in parts and whole"
fi
echo "PASS: split link: $entries_split entries as compiled whole, ptxas accepts both, emulated run passes, an edit recompiled $new of $before buckets, a host-only edit took O3's result and every bucket from the cache (one pruned bucket alone compiled again)${frames:-}"
