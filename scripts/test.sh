#!/usr/bin/env bash
# Runs every test that needs no GPU, in this order:
#   1. builds the C++ parts (CMake + Ninja) and runs ctest: the device
#      linker's lit/FileCheck tests and cargo-oxide's GoogleTest tests;
#   2. cargo test of the Rust crates, with the stable and the nightly toolchain;
#   3. builds every example and GPU test program through the oxide device
#      linker with both toolchains for sm_90; the linker runs ptxas on each PTX,
#      so a build that passes has validated its kernels;
#   4. runs the compile-fail tests (tests/reject/run.sh) with both toolchains:
#      each case's build must fail with the error its `//~` lines expect;
#   5. checks that a cdylib's code finds its own embedded image (tests/cdylib);
#   6. runs vecadd, which must build, then say plainly that no GPU is here
#      (exit code 2), or pass where there is one.
# GPU runs themselves are scripts/build-gpu-suite.sh + the device machine.
# The last line is the summary: "N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
passed=0; failed=0; failures=()
step() { # step NAME COMMAND...
  local name=$1; shift
  echo "::: $name"
  if "$@"; then passed=$((passed + 1)); echo "::: ok: $name"
  else failed=$((failed + 1)); failures+=("$name"); echo "::: FAILED: $name"; fi
}

build_cpp() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null &&
    ninja -C build
}
step "build the device linker and cargo-oxide" build_cpp
step "ctest (lit + gtest)" ctest --test-dir build --output-on-failure
for tc in stable nightly; do
  step "cargo +$tc test" env CARGO_TARGET_DIR="$root/target/test-$tc" cargo "+$tc" test --workspace -q
done

export PATH="$root/build/bin:$PATH"
# A program that needs another architecture says so in its Cargo.toml
# (`[package.metadata.oxide] arch = "sm_90a"`: wgmma).
arch_of() { a=$(sed -n 's/^arch *= *"\(.*\)"/\1/p' "$1/Cargo.toml" | head -1); echo "${a:-sm_90}"; }
for tc in stable nightly; do
  for dir in examples/*/ tests/gpu/*/; do
    name=$(basename "$dir"); arch=$(arch_of "$dir")
    step "cargo +$tc oxide build $name --arch $arch" \
      env CARGO_TARGET_DIR="$root/target/$tc" cargo "+$tc" oxide build "$name" --arch "$arch"
  done
done

for tc in stable nightly; do step "reject tests with $tc (each case's build fails with its message)" env TOOLCHAIN=+$tc bash tests/reject/run.sh; done

cdylib_lookup() {
  cargo oxide build kernlib && cargo oxide build host_app &&
    "$root/target/debug/host_app" "$root/target/debug/libkernlib.so"
}
step "a cdylib and the executable loading it each find their own device image" cdylib_lookup

run_vecadd() {
  cargo oxide run vecadd; local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 2 ]  # 2: built and validated, no GPU to launch on
}
step "cargo oxide run vecadd" run_vecadd

echo
for f in "${failures[@]}"; do echo "failed: $f"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
