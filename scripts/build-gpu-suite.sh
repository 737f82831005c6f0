#!/usr/bin/env bash
# Builds every example and GPU test with the stable and the nightly toolchain,
# through the oxide device linker, and collects the binaries in
# .device-carry/<toolchain>/ together with scripts/run-gpu-suite.sh. That folder
# is what travels to the GPU machine (which has no Rust): there,
# `bash .device-carry/run-gpu-suite.sh` runs the whole suite in one call.
#
# Environment, to build part of it (a re-run after a fix):
#   ONLY        program names, spaces between (default: every example and
#               tests/gpu program, the crates' GPU tests and debug_tools);
#               the name crate_tests adds cuda-core's, cuda-async's,
#               cuda-blas's and cuda-nccl's GPU tests, the name fuzz the
#               random programs of tests/fuzz
#   TOOLCHAINS  default "stable nightly"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/build/bin:$PATH"   # cargo-oxide and oxide-link, built by scripts/test.sh or setup.sh
source "$root/scripts/fresh-build.sh"
fresh_build "$root"
arch="${OXIDE_ARCH:-sm_90}"
carry="$root/.device-carry"
rm -rf "$carry"
mkdir -p "$carry"
cp scripts/run-gpu-suite.sh scripts/sanitize-gpu-suite.sh "$carry/"

programs=$(ls -d examples/*/ tests/gpu/*/ | sed 's:/$::')
toolchains=${TOOLCHAINS:-stable nightly}
if [ -n "${ONLY:-}" ]; then
  programs=$(for dir in $programs; do
    case " $ONLY " in *" $(basename "$dir") "*) echo "$dir";; esac
  done)
fi
for toolchain in $toolchains; do
  mkdir -p "$carry/$toolchain"
  for dir in $programs; do
    name=$(basename "$dir")
    pkg=$(cargo oxide metadata "$name" --print package)
    # The barrier test is about release builds (MIR JumpThreading runs there).
    profile=debug; flag=
    case "$pkg" in barrier_jump_threading) profile=release; flag=--release;; esac
    # A program may need another architecture (Cargo.toml:
    # `[package.metadata.oxide] arch = "sm_90a"`, for wgmma): the target
    # every cargo oxide command would choose, with $arch as OXIDE_ARCH.
    own=$(OXIDE_ARCH="$arch" cargo oxide metadata "$name" --print arch)
    echo "== $toolchain: $pkg ($profile, $own)"
    CARGO_TARGET_DIR="$root/target/$toolchain" \
      cargo "+$toolchain" oxide build "$name" $flag --arch "$own"
    cp "$root/target/$toolchain/$profile/$pkg" "$carry/$toolchain/"
    strip --strip-debug "$carry/$toolchain/$pkg"  # smaller to carry; the kernel table needs no debug info
    # cxx_export's kernels are CUDA C++ linked by nvlink with the package's
    # PTX: its cubin travels in <toolchain>.data/, which run-gpu-suite.sh
    # hands it through CXX_EXPORT_CUBIN.
    case "$pkg" in cxx_export)
      mkdir -p "$carry/$toolchain.data"
      CARGO_TARGET_DIR="$root/target/$toolchain" TOOLCHAIN=$toolchain \
        bash tests/gpu/cxx_export/build-cubin.sh "$own" "$carry/$toolchain.data/cxx_export.cubin";;
    esac
    # Programs whose kernels run core's arithmetic and formatting, which the
    # two profiles compile differently (overflow checks, debug assertions,
    # generic instances shared between crates), and half_precision and fp8,
    # whose f16/FP8 wrappers rustc inlines and folds differently in release,
    # and distinct_entries, whose kernels only an optimised host build could
    # fold into one address: also a release build.
    case "$pkg" in conformance|int_edges|core_paths|half_precision|fp8|distinct_entries)
      echo "== $toolchain: $pkg (release, $own)"
      CARGO_TARGET_DIR="$root/target/$toolchain" \
        cargo "+$toolchain" oxide build "$name" --release --arch "$own"
      cp "$root/target/$toolchain/release/$pkg" "$carry/$toolchain/${pkg}_release"
      strip --strip-debug "$carry/$toolchain/${pkg}_release";;
    esac
  done
done
# Random programs (tests/fuzz, oxide-fuzz): one block program seed (threads
# exchanging values: barriers, shuffles, votes, atomics) and one scalar seed
# (half precision included), each built debug and release with the stable
# toolchain, so every suite run also checks ptxas and the GPU on code nobody
# wrote by hand. Each prints `fuzz: … 0 mismatches` and exits 0 when every
# value matched the CPU. The name `fuzz` in ONLY builds just these.
case " ${ONLY:- fuzz } " in *" fuzz "*)
  fuzz_out=$(mktemp -d)
  for seeds in "--block --seeds 1..2" "--seeds 400..401 --functions 120"; do
    echo "== stable: oxide-fuzz campaign $seeds"
    # shellcheck disable=SC2086 # the words of $seeds are separate arguments
    CARGO_TARGET_DIR="$root/target/stable" cargo +stable run -q -p oxide-fuzz -- campaign $seeds \
      --out "$fuzz_out" --work "$root/target/fuzz-suite" --arch "$arch"
  done
  mkdir -p "$carry/stable"
  for packed in "$fuzz_out"/debug/*.xz "$fuzz_out"/release/*.xz; do
    name=$(basename "$packed" .xz)_$(basename "$(dirname "$packed")")
    xz -dc "$packed" > "$carry/stable/$name" && chmod +x "$carry/stable/$name"
  done
  rm -rf "$fuzz_out";;
esac
case " ${ONLY:- crate_tests } " in *" crate_tests "*) ;; *) du -sh "$carry"; exit 0;; esac
# cuda-core's own GPU tests (hand-written PTX, no device linker needed): the
# shared ones, and the kernel-fault one, a program of its own (the fault
# poisons every context of the device alive beside it), the event-timing one,
# the managed-memory and peer-access one, the graph ones (conditional and
# allocation nodes included), and the occupancy ones (static shared memory
# against the dynamic limit, clusters resident at once).
for toolchain in $toolchains; do
  echo "== $toolchain: cuda-core GPU tests"
  for test in gpu fault events managed graphs graph_leaks graph_conditional graph_alloc capture_threads \
              shared_limits cluster_occupancy; do
    bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-core --test "$test" \
            --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
    cp "$bin" "$carry/$toolchain/cuda_core_${test}_tests"
    strip --strip-debug "$carry/$toolchain/cuda_core_${test}_tests"
  done
done
# cuda-async's GPU tests (hand-written PTX too): the shared ones, the
# kernel-fault one, a program of its own (a fault ruins its process's
# context), and the graph capture/replay ones.
for toolchain in $toolchains; do
  echo "== $toolchain: cuda-async GPU tests"
  for test in gpu gpu_fault graph; do
    bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-async --test "$test" \
            --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
    cp "$bin" "$carry/$toolchain/cuda_async_${test}_tests"
    strip --strip-debug "$carry/$toolchain/cuda_async_${test}_tests"
  done
done
# cuda-blas's tests (cuBLAS and cuBLASLt against the CPU on a GPU; the
# emulator's CPU reference elsewhere), and its graph-capture tests.
for toolchain in $toolchains; do
  echo "== $toolchain: cuda-blas GPU tests"
  for test in gemm graph; do
    bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-blas --test "$test" \
            --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
    cp "$bin" "$carry/$toolchain/cuda_blas_${test}_tests"
    strip --strip-debug "$carry/$toolchain/cuda_blas_${test}_tests"
  done
done
# cuda-nccl's tests (NCCL's collectives against the CPU with as many ranks
# as GPUs; the emulated communicator elsewhere), and loading NCCL.
for toolchain in $toolchains; do
  echo "== $toolchain: cuda-nccl GPU tests"
  for test in collectives library; do
    bin=$(CARGO_TARGET_DIR="$root/target/$toolchain" cargo "+$toolchain" test -q -p cuda-nccl --test "$test" \
            --no-run --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
    cp "$bin" "$carry/$toolchain/cuda_nccl_${test}_tests"
    strip --strip-debug "$carry/$toolchain/cuda_nccl_${test}_tests"
  done
done
[ -z "${ONLY:-}" ] || { du -sh "$carry"; exit 0; }
# The debugging path: debug_tools built with device line tables (for
# compute-sanitizer) and with full device debug info (for cuda-gdb), the
# lines its planted bugs are on, and cargo-oxide for `doctor --runtime`
# (cargo-oxide needs no LLVM or Rust to run). scripts/debug-tools-gpu.sh
# runs them there.
mkdir -p "$carry/debug"
for level in lines full; do
  echo "== stable: debug_tools (OXIDE_DEVICE_DEBUG=$level)"
  OXIDE_DEVICE_DEBUG=$level CARGO_TARGET_DIR="$root/target/debug-$level" \
    cargo +stable oxide build debug_tools --arch "$arch"
  cp "$root/target/debug-$level/debug/debug_tools" "$carry/debug/debug_tools_$level"
done
src=tests/gpu/debug_tools/src/main.rs
{ echo "oob=$(grep -n '// OOB' $src | cut -d: -f1)"
  echo "race_write=$(grep -n '// RACE (write)' $src | cut -d: -f1)"
  echo "race_read=$(grep -n '// RACE (read)' $src | cut -d: -f1)"; } > "$carry/debug/lines.env"
cp "$root/build/bin/cargo-oxide" "$carry/debug/"
cp scripts/debug-tools-gpu.sh "$carry/"
du -sh "$carry"
