#!/usr/bin/env bash
# Sourced by the scripts that build programs for the GPU machine
# (build-gpu-suite.sh, bench-carry.sh): `fresh_build ROOT` brings ROOT/build/
# (cargo-oxide and oxide-link) up to date with the compiler's sources before
# anything is compiled with it. A build/ left behind its sources, such as a
# pass reverted in git but still linked into build/bin/oxide-link, compiles
# device code that no commit has, and the GPU then measures and tests it
# under main's name. Without a configured build/ it does nothing (the
# scripts then use the cargo-oxide on PATH).
fresh_build() {
  local root=$1 out
  [ -f "$root/build/CMakeCache.txt" ] || return 0
  if ! out=$(cmake --build "$root/build" --target oxide-link cargo-oxide 2>&1); then
    printf '%s\n' "$out" >&2
    echo "error: build/ (oxide-link, cargo-oxide) does not build from the sources; fix that before building for the GPU" >&2
    return 1
  fi
  case $out in
    *"no work to do"*) ;;
    *) echo "build/ was behind the compiler's sources: oxide-link and cargo-oxide rebuilt" >&2 ;;
  esac
}
