#!/usr/bin/env bash
# Runs on the GPU machine (no Rust needed): every binary that
# scripts/build-gpu-suite.sh collected in .device-carry/<toolchain>/, under
# compute-sanitizer's memcheck, racecheck and synccheck tools.
#
#   bash scripts/sanitize-gpu-suite.sh [CARRY_DIR]
#
# CARRY_DIR defaults to the folder this script lies in when that folder has a
# stable/ subfolder (the script copied into .device-carry/), otherwise to
# .device-carry/ at the repository root. Environment:
#   TOOLCHAINS  toolchain folders to run       (default: stable)
#   TOOLS       sanitizer tools                (default: memcheck racecheck synccheck)
#   ONLY        program names to run, spaces between (default: all)
#   TIMEOUT     seconds per (program, tool)    (default: 900)
#   LOG_DIR     where every run's full output goes (default: a new temporary folder)
#   VERBOSE     non-empty: print every run's output
#
# A (program, tool) pair passes when the program exits 0 and the sanitizer's
# summary lines report no error ("ERROR SUMMARY: 0 errors", and for racecheck
# "RACECHECK SUMMARY: … (0 errors, …)"). The program's own exit code counts:
# a wrong answer (1) or "no GPU" (2) is a failure too. One line per pair, then
# `sanitize-gpu-suite: N passed, M failed, K skipped`; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 1 ]; then
  carry=$(cd "$1" && pwd) || exit 2
elif [ -d "$here/stable" ]; then
  carry=$here
else
  carry=$(cd "$here/.." && pwd)/.device-carry
fi
toolchains=${TOOLCHAINS:-stable}
tools=${TOOLS:-memcheck racecheck synccheck}
limit=${TIMEOUT:-900}

sanitizer=$(command -v compute-sanitizer || true)
if [ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
fi
if [ -z "$sanitizer" ]; then
  echo "sanitize-gpu-suite: compute-sanitizer is neither in PATH nor at /usr/local/cuda/bin" >&2
  exit 2
fi
if [ ! -d "$carry" ]; then
  echo "sanitize-gpu-suite: no $carry; run scripts/build-gpu-suite.sh first" >&2
  exit 2
fi
logs=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$logs"

# Pairs not to run, as "tool:program", with the reason shown on the skip line.
# device_panics traps on purpose (in child processes): memcheck reports each
# trap as an error, which is the program working, not a bug.
skip_reason() {
  case "$1:$2" in
    memcheck:device_panics) echo "traps on purpose; memcheck would report each trap as an error" ;;
  esac
}

# The number of errors the summary lines of a sanitizer log report, or
# "none" when the log has no summary at all (the sanitizer did not finish).
# Children run under --target-processes all print one summary each: add them.
count_errors() {
  local log=$1 found=no total=0 n
  while read -r n; do
    found=yes; total=$((total + n))
  done < <(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log")
  while read -r n; do
    found=yes; total=$((total + n))
  done < <(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$log")
  if [ $found = yes ]; then echo "$total"; else echo none; fi
}

passed=0; failed=0; skipped=0
for toolchain in $toolchains; do
  if [ ! -d "$carry/$toolchain" ]; then
    echo "FAIL $toolchain: no folder $carry/$toolchain"; failed=$((failed + 1)); continue
  fi
  # What a program needs beside it (build-gpu-suite.sh): cxx_export's cubin.
  export CXX_EXPORT_CUBIN="$carry/$toolchain.data/cxx_export.cubin"
  for bin in "$carry/$toolchain"/*; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    name=$(basename "$bin")
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
    for tool in $tools; do
      what="$toolchain/$name $tool"
      reason=$(skip_reason "$tool" "$name")
      if [ -n "$reason" ]; then
        skipped=$((skipped + 1)); echo "SKIP $what: $reason"; continue
      fi
      # Alone in an empty folder, like run-gpu-suite.sh: the binary must be
      # self-contained.
      work=$(mktemp -d)
      cp "$bin" "$work/"
      log="$logs/$toolchain.$name.$tool.log"
      start=$SECONDS
      (cd "$work" && timeout -k 30 "$limit" "$sanitizer" --tool "$tool" --target-processes all "./$name") >"$log" 2>&1
      rc=$?
      seconds=$((SECONDS - start))
      rm -rf "$work"
      errors=$(count_errors "$log")
      if [ $rc -eq 124 ]; then
        verdict=FAIL; detail="timed out after ${limit}s"
      elif [ "$errors" = none ]; then
        verdict=FAIL; detail="no sanitizer summary (exit $rc)"
      elif [ "$errors" -gt 0 ]; then
        verdict=FAIL; detail="sanitizer errors: $errors (exit $rc)"
      elif [ $rc -ne 0 ]; then
        verdict=FAIL; detail="the program exited with $rc"
      else
        verdict=PASS; detail="0 errors"
      fi
      if [ $verdict = PASS ]; then
        passed=$((passed + 1))
        echo "PASS $what: $detail, ${seconds}s: $(grep -v '^=========' "$log" | grep . | tail -1)"
      else
        failed=$((failed + 1))
        echo "FAIL $what: $detail, ${seconds}s (log: $log)"
        # What went wrong (the sanitizer's reports, the program's failures),
        # then how the run ended.
        grep -E 'FAIL|[Ee]rror|Invalid|[Hh]azard|[Rr]ace|[Bb]arrier|panicked' "$log" \
          | grep -v 'SUMMARY' | head -20 | sed 's/^/    /'
        echo "    ..."
        tail -5 "$log" | sed 's/^/    /'
      fi
      if [ -n "${VERBOSE:-}" ]; then sed 's/^/    | /' "$log"; fi
    done
  done
done
echo "sanitize-gpu-suite: $passed passed, $failed failed, $skipped skipped (logs in $logs)"
[ $failed -eq 0 ]
