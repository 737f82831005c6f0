#!/usr/bin/env bash
# scripts/pack-gpu-suite.sh on a suite of its own making (no build needed):
# a .device-carry of two toolchains' "programs" (incompressible files of
# known sizes), tools (debug/), data (<toolchain>.data/) and a
# run-gpu-suite.sh that lists what it finds. Packed into three parts, each
# part must run alone through its run.sh, which unpacks it elsewhere: every
# part sees every tool and data file, every program is run by exactly one
# part, and the parts' loads are balanced (largest first, to the lightest
# part). A limit the parts exceed must fail with a message naming the part,
# and bad arguments must be refused.
#
#   bash tests/cli/pack_gpu_suite.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/oxide-pack-suite.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
carry=$work/.device-carry
mkdir -p "$carry/debug" "$carry/stable" "$carry/nightly" "$carry/stable.data"
# Programs: sizes in KiB, random so that xz cannot shrink them.
sizes=(900 700 500 400 300 200 100 50)
for tc in stable nightly; do
  for i in "${!sizes[@]}"; do
    head -c $((sizes[i] * 1024)) /dev/urandom > "$carry/$tc/prog_$i"
  done
done
echo tool > "$carry/debug/cargo-oxide"
echo data > "$carry/stable.data/input.bin"
cat > "$carry/run-gpu-suite.sh" <<'RUN'
# Stands in for the real runner: lists what this part holds.
cd "$(dirname "$0")"
for f in debug/cargo-oxide stable.data/input.bin; do [ -f "$f" ] && echo "has $f"; done
for tc in stable nightly; do for p in "$tc"/*; do [ -f "$p" ] && echo "run $p"; done; done
RUN

OXIDE_DEVICE_CARRY=$carry bash "$root/scripts/pack-gpu-suite.sh" "$work/out" 3 > "$work/pack.txt" \
  || fail "packing into 3 parts failed: $(cat "$work/pack.txt")"
: > "$work/runs.txt"
for p in 1 2 3; do
  [ -f "$work/out/part-$p/run.sh" ] || fail "part-$p has no run.sh"
  # Each part alone, from a folder of its own (as on the GPU machine).
  cp -r "$work/out/part-$p" "$work/alone-$p"
  bash "$work/alone-$p/run.sh" > "$work/part-$p.txt" || fail "part-$p's run.sh failed"
  grep -qx "has debug/cargo-oxide" "$work/part-$p.txt" || fail "part-$p lacks the tools"
  grep -qx "has stable.data/input.bin" "$work/part-$p.txt" || fail "part-$p lacks the data"
  grep "^run " "$work/part-$p.txt" >> "$work/runs.txt" || fail "part-$p runs no program"
done
expected=$(for tc in stable nightly; do for i in "${!sizes[@]}"; do echo "run $tc/prog_$i"; done; done | sort)
[ "$(sort "$work/runs.txt")" = "$expected" ] || fail "the parts do not run every program exactly once: $(sort "$work/runs.txt" | uniq -c | tr '\n' ';')"
# Balance: 6,300 KiB in three parts; largest-first to the lightest part
# leaves each within the largest program (900 KiB) of a third.
for p in 1 2 3; do
  kib=$(( $(stat -c %s "$work/out/part-$p/suite.tar.xz") / 1024 ))
  [ "$kib" -ge 1200 ] && [ "$kib" -le 3100 ] || fail "part-$p holds $kib KiB, not near a third of 6,300"
done
grep -q "^part-3: [0-9]* programs" "$work/pack.txt" || fail "no line for part-3: $(cat "$work/pack.txt")"

# Over the limit: the exit status is 1 and the part is named.
if LIMIT_MB=0 OXIDE_DEVICE_CARRY=$carry bash "$root/scripts/pack-gpu-suite.sh" "$work/out0" 2 > /dev/null 2> "$work/over.txt"; then
  fail "parts over LIMIT_MB=0 were accepted"
fi
grep -q "part-1 is over 0 MiB" "$work/over.txt" || fail "the part over the limit is not named: $(cat "$work/over.txt")"
# Bad arguments.
if OXIDE_DEVICE_CARRY=$carry bash "$root/scripts/pack-gpu-suite.sh" "$work/out1" zero 2> "$work/bad.txt"; then
  fail "PARTS=zero was accepted"
fi
grep -q "PARTS must be a positive number" "$work/bad.txt" || fail "PARTS=zero: $(cat "$work/bad.txt")"
if OXIDE_DEVICE_CARRY=$work/none bash "$root/scripts/pack-gpu-suite.sh" "$work/out2" 2> "$work/none.txt"; then
  fail "a missing .device-carry was accepted"
fi
grep -q "build-gpu-suite.sh first" "$work/none.txt" || fail "missing carry: $(cat "$work/none.txt")"
echo "pack-gpu-suite: 3 parts each ran alone, 16 programs once each, tools and data in every part; limit and arguments refused"
