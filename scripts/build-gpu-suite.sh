#!/usr/bin/env bash
# Builds every example and GPU test with the stable and the nightly toolchain,
# through the oxide device linker, and collects the binaries in
# .device-carry/<toolchain>/ together with scripts/run-gpu-suite.sh. That folder
# is what travels to the GPU machine (which has no Rust): there,
# `bash .device-carry/run-gpu-suite.sh` runs the whole suite in one call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/build/bin:$PATH"   # cargo-oxide and oxide-link, built by scripts/test.sh or setup.sh
arch="${OXIDE_ARCH:-sm_90}"
carry="$root/.device-carry"
rm -rf "$carry"
mkdir -p "$carry"
cp scripts/run-gpu-suite.sh scripts/sanitize-gpu-suite.sh "$carry/"

programs=$(ls -d examples/*/ tests/gpu/*/ | sed 's:/$::')
for toolchain in stable nightly; do
  mkdir -p "$carry/$toolchain"
  for dir in $programs; do
    pkg=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -1)
    # The barrier test is about release builds (MIR JumpThreading runs there).
    profile=debug; flag=
    case "$pkg" in barrier_jump_threading) profile=release; flag=--release;; esac
    echo "== $toolchain: $pkg ($profile, $arch)"
    CARGO_TARGET_DIR="$root/target/$toolchain" \
      cargo "+$toolchain" oxide build "$(basename "$dir")" $flag --arch "$arch"
    cp "$root/target/$toolchain/$profile/$pkg" "$carry/$toolchain/"
    strip --strip-debug "$carry/$toolchain/$pkg"  # smaller to carry; the kernel table needs no debug info
  done
done
# cuda-core's own GPU tests (hand-written PTX, no device linker needed).
for toolchain in stable nightly; do
  echo "== $toolchain: cuda-core GPU tests"
  bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-core --test gpu \
          --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
  cp "$bin" "$carry/$toolchain/cuda_core_gpu_tests"
  strip --strip-debug "$carry/$toolchain/cuda_core_gpu_tests"
done
# cuda-async's GPU tests (hand-written PTX too): the shared ones, and the
# kernel-fault one, a program of its own (a fault ruins its process's context).
for toolchain in stable nightly; do
  echo "== $toolchain: cuda-async GPU tests"
  for test in gpu gpu_fault; do
    bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-async --test "$test" \
            --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
    cp "$bin" "$carry/$toolchain/cuda_async_${test}_tests"
    strip --strip-debug "$carry/$toolchain/cuda_async_${test}_tests"
  done
done
du -sh "$carry"
