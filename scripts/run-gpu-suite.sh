#!/usr/bin/env bash
# Runs on the GPU machine: every binary of .device-carry/<toolchain>/, each
# copied alone into an empty folder first (the binaries must be
# self-contained: no .ptx beside them). Prints one line per program and a
# summary line; exits non-zero if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
passed=0; failed=0
for toolchain in stable nightly; do
  for bin in "$here/$toolchain"/*; do
    name=$(basename "$bin")
    work=$(mktemp -d)
    cp "$bin" "$work/"
    out=$(cd "$work" && "./$name" 2>&1); rc=$?
    rm -rf "$work"
    if [ $rc -eq 0 ]; then
      passed=$((passed + 1)); echo "PASS $toolchain/$name: $(echo "$out" | tail -1)"
    else
      failed=$((failed + 1)); echo "FAIL $toolchain/$name (exit $rc):"; echo "$out" | sed 's/^/    /'
    fi
    if [ -n "${VERBOSE:-}" ]; then echo "$out" | sed 's/^/    | /'; fi
  done
done
echo "gpu-suite: $passed passed, $failed failed"
[ $failed -eq 0 ]
