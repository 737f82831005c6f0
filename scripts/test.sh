#!/usr/bin/env bash
# Runs every test that needs no GPU, in this order:
#   1. builds the C++ parts (CMake + Ninja) and runs ctest: the device
#      linker's lit/FileCheck tests and cargo-oxide's GoogleTest tests;
#   2. cargo test of the Rust crates, with the stable and the nightly toolchain
#      (and cuda-prims' own tests again without its `tuning` feature), and
#      the workspace's rustdoc with its warnings as errors;
#   3. builds every example and GPU test program through the oxide device
#      linker with both toolchains for sm_90 (or the arch a program's Cargo.toml
#      names); the linker runs ptxas on each PTX,
#      so a build that passes has validated its kernels;
#   4. runs the compile-fail tests (tests/reject/run.sh) with both toolchains:
#      each case's build must fail with the error its `//~` lines expect;
#   4b. runs cargo oxide in projects of one's own (tests/cli): cargo's
#      configuration honoured; every crate packaged into a registry in a
#      temporary cargo home, and a project from `cargo oxide new` built and
#      run after being moved, with no absolute path in it; a crate of 200
#      kernels compiled in parts (the split device link) is the program
#      compiled whole, runs emulated, and an edit recompiles one part;
#      scripts/pack-gpu-suite.sh packs a made-up suite into parts that
#      each run alone;
#   5. checks that a cdylib's code finds its own embedded image (tests/cdylib);
#   6. runs every example (the conformance suite included) and GPU test program
#      on the CPU emulator in device-code mode (`cargo oxide run --emulate`,
#      the stable builds of step 3): the device linker's PTX runs on the PTX
#      VM, and each program checks its results against the CPU and must pass.
#      Under [package.metadata.oxide] in its Cargo.toml a program may say
#      `emulate = "no: <why>"` (it uses what no emulator mode models; listed
#      as not emulated) or `emulate = "host: <why>"` (run as host code
#      instead; listed as such). Then the conformance suite and
#      tests/gpu/distinct_entries again, built --release, in device-code
#      mode; then a few programs as host code
#      (`--emulate=host`; `host_code_runs` below says which and why);
#   7. runs `cargo oxide test fault_isolation` (tests/harness): without a GPU
#      it falls back to the CPU emulator, and one test's kernel fault fails no
#      other test (with --include-ignored exactly the test that faults on
#      purpose fails);
#   7b. runs the random differential tester (tests/fuzz, oxide-fuzz) on a
#      fixed set of seeds, debug and release builds, kernels in device-code
#      mode: every intermediate value of each generated function, run as PTX
#      on the VM, must equal the same Rust on the CPU; then block programs
#      (`--block`: threads exchanging values), against a CPU model of the block;
#   8. runs vecadd as the README does: without a GPU `cargo oxide run` runs it
#      on the CPU emulator and it must pass; OXIDE_EMULATE=0 must refuse plainly
#      (exit code 2);
#   9. builds the benchmarks (benches/, with nvcc's references), lists them,
#      runs `cargo oxide bench vecadd` (exit 2 without a GPU) and the rebuild
#      benchmark, which needs no GPU; runs benches/host-cost (oxide's host
#      work per allocation and launch, against a driver stub).
# GPU runs themselves are scripts/build-gpu-suite.sh + the device machine.
# The last line is the summary: "N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
passed=0; failed=0; failures=()
started=$SECONDS
# The builds below (C++, two toolchains, debug and release, every program)
# fill build/ and target/ with several GiB. Running out of disk midway fails
# every later step with "No space left on device", which hides the cause, so
# say it first. disk_needed_gib is the most a full run was seen to hold at
# once, rounded up. To keep it low, each target directory goes once nothing
# later reads it, and rustc keeps no incremental caches (every crate is
# built once here; they only cost disk).
disk_needed_gib=7
export CARGO_INCREMENTAL=0
disk_free_gib=$(df -P -BG "$root" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
if [ -n "$disk_free_gib" ] && [ "$disk_free_gib" -lt "$disk_needed_gib" ]; then
  echo "::: warning: $disk_free_gib GiB free on $root; a full run needs about $disk_needed_gib GiB (build/ and target/)"
fi
# The filesystem's used KiB (what this run adds to it, on a machine that
# runs nothing else), sampled after every step; the peak is reported last.
disk_used_kib() { df -P -k "$root" | awk 'NR == 2 { print $3 }'; }
disk_at_start=$(disk_used_kib); disk_peak=$disk_at_start
step() { # step NAME COMMAND...
  local name=$1; shift
  local t0=$SECONDS
  echo "::: $name"
  if "$@"; then passed=$((passed + 1)); echo "::: ok: $name ($((SECONDS - t0)) s)"
  else failed=$((failed + 1)); failures+=("$name"); echo "::: FAILED: $name ($((SECONDS - t0)) s)"; fi
  local used; used=$(disk_used_kib)
  [ -n "$used" ] && [ "$used" -gt "$disk_peak" ] && disk_peak=$used
  return 0
}

build_cpp() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null &&
    ninja -C build
}
step "build the device linker and cargo-oxide" build_cpp
step "ctest (lit + gtest)" ctest --test-dir build --output-on-failure
# cxx_device is left out: its build script hands the device linker its CUDA
# C++ file (`--oxide-device-source`), which only oxide-link understands, and
# its kernels call functions only that link provides. It is built and run
# through cargo oxide below, like every program.
for tc in stable nightly; do
  step "cargo +$tc test" env CARGO_TARGET_DIR="$root/target/test-$tc" cargo "+$tc" test --workspace --exclude cxx_device -q
  rm -rf "$root/target/test-$tc"
done
# The workspace's members turn cuda-prims' `tuning` feature on for all of
# them; its own tests run once more without it, as a program that depends
# on cuda-prims gets it (its lib only: the doc tests ran above).
step "cargo +stable test -p cuda-prims --lib (without its tuning feature)" \
  env CARGO_TARGET_DIR="$root/target/test-prims" cargo +stable test -p cuda-prims --lib -q
rm -rf "$root/target/test-prims"
# What a user reads with `cargo doc`: a broken or private intra-doc link is
# an error here, not a warning nobody sees.
step "cargo +stable doc --workspace --no-deps (rustdoc's warnings are errors)" \
  env CARGO_TARGET_DIR="$root/target/doc" RUSTDOCFLAGS="-D warnings" cargo +stable doc --workspace --no-deps -q
rm -rf "$root/target/doc"

export PATH="$root/build/bin:$PATH"
# A program that needs another architecture says so in its Cargo.toml
# (`[package.metadata.oxide] arch = "sm_90a"`: wgmma); cargo oxide resolves
# it as every command does, sm_90 standing for the GPU this suite targets.
arch_of() { OXIDE_ARCH=sm_90 cargo oxide metadata "$(basename "$1")" --print arch; }
for tc in stable nightly; do
  for dir in examples/*/ tests/gpu/*/; do
    name=$(basename "$dir"); arch=$(arch_of "$dir")
    step "cargo +$tc oxide build $name --arch $arch" \
      env CARGO_TARGET_DIR="$root/target/$tc" cargo "+$tc" oxide build "$name" --arch "$arch"
  done
done
rm -rf "$root/target/nightly"  # the emulated runs below use the stable builds

for tc in stable nightly; do step "reject tests with $tc (each case's build fails with its message)" env TOOLCHAIN=+$tc bash tests/reject/run.sh; done
for tc in stable nightly; do step "cargo +$tc oxide in a project with .cargo/config.toml (target-dir, rustflags; check and its JSON)" env TOOLCHAIN=+$tc bash tests/cli/cargo_config.sh; done
step "scripts/pack-gpu-suite.sh: a suite packed in parts, each run alone, every program once" bash tests/cli/pack_gpu_suite.sh
step "a project of one's own: every crate packaged into a registry, cargo oxide new, moved, built and run; no absolute path" bash tests/cli/new_project.sh
for tc in stable nightly; do step "cargo +$tc oxide: 200 kernels compiled in parts equal the whole module, run emulated, an edit recompiles one part" env TOOLCHAIN=+$tc bash tests/cli/split_link.sh; done

cdylib_lookup() {
  cargo oxide build kernlib && cargo oxide build host_app &&
    "$root/target/debug/host_app" "$root/target/debug/libkernlib.so"
}
step "a cdylib and the executable loading it each find their own device image" cdylib_lookup

# tests/gpu/cxx_export needs a GPU to run; what can be checked here is the
# link a CUDA C++ build makes against oxide's PTX (nvcc -rdc, ptxas -c, nvlink).
cxx_export_link() {
  local out; out=$(mktemp -d)
  env CARGO_TARGET_DIR="$root/target/stable" TOOLCHAIN=stable \
    bash tests/gpu/cxx_export/build-cubin.sh sm_90 "$out/cxx_export.cubin" &&
    readelf -s "$out/cxx_export.cubin" | grep -q ' rust_saxpy$' &&
    readelf -s "$out/cxx_export.cubin" | grep -q ' cxx_saxpy$'
  local rc=$?; rm -rf "$out"; return $rc
}
step "cxx_export: nvcc's CUDA C++ kernels linked by nvlink against oxide's PTX exports" cxx_export_link

emulated() { # emulated NAME ARCH MODE [ARGS...]: run it on the CPU, reusing the stable build of step 3
  local name=$1 arch=$2 mode=$3; shift 3
  env CARGO_TARGET_DIR="$root/target/stable" cargo +stable oxide run "$name" --arch "$arch" --emulate="$mode" "$@"
}
emulate_says() { # emulate_says DIR KIND: the reason after `emulate = "KIND: ` in its Cargo.toml
  local said; said=$(cargo oxide metadata "$(basename "$1")" --print emulate)
  case "$said" in "$2:"*) said=${said#"$2:"}; echo "${said# }";; "$2") echo "(no reason given)";; esac
}
skipped=(); as_host=()
for dir in examples/*/ tests/gpu/*/; do
  name=$(basename "$dir"); arch=$(arch_of "$dir")
  why=$(emulate_says "$dir" no)
  if [ -n "$why" ]; then
    echo "::: skipped: $name on the CPU emulator ($why)"; skipped+=("$name: $why"); continue
  fi
  why=$(emulate_says "$dir" host)
  if [ -n "$why" ]; then
    as_host+=("$name: $why")
    step "cargo oxide run $name --emulate=host (its Rust code on the CPU: $why)" emulated "$name" "$arch" host
    continue
  fi
  step "cargo oxide run $name --emulate (its PTX on the CPU)" emulated "$name" "$arch" ptx
done
# The NCCL examples ran above with their emulated default of 4 ranks; the
# issue's other world sizes, 1 and 2 ranks (threads of one process).
for ranks in 1 2; do
  step "cargo oxide run allreduce --emulate -- --ranks $ranks" emulated allreduce "$(arch_of examples/allreduce)" ptx -- --ranks "$ranks"
  step "cargo oxide run data_parallel --emulate -- --ranks $ranks" emulated data_parallel "$(arch_of examples/data_parallel)" ptx -- --ranks "$ranks"
done
# The suite's release build: rustc hands the device linker other bitcode
# (no overflow checks, no debug assertions), so other passes fire.
step "cargo oxide run conformance --release --emulate (its PTX on the CPU)" \
  emulated conformance sm_90 ptx --release
# Kernels whose host code is the same launch their own PTX: only an
# optimised host build folds functions (the address a launch is found by).
step "cargo oxide run distinct_entries --release --emulate (kernels with the same host code, each its own PTX)" \
  emulated distinct_entries "$(arch_of tests/gpu/distinct_entries)" ptx --release
# Host-code mode (the kernels' Rust code, what `--emulate=host` debugs with
# gdb) on the programs that exercise its engine: vecadd (the README's path),
# spin_wait (the watchdog: a bare core-atomic spin is reported, not hung),
# device_panics (panics caught and written to the record), warp_shared (warp
# rendezvous, the shared-memory race detector), atomics (host atomics, spin
# points of the fiber scheduler), half_precision (the f16/bf16 instructions
# as their CPU model, which must give ptx-vm's and the GPU's bits), fp8 (the
# same for the FP8 conversions),
# event_timing (the emulated events), device_globals (the host reads and
# writes the host statics the kernels use), many_params (launchers of 32
# arguments handing the kernel's host code its parameters), large_params
# (32 KiB of parameters by value through the same launchers), warp_masks (the
# lane masks, elect_sync and partial-mask shuffles of the warp engine),
# atomic_params (atomic views of device buffers as host atomics),
# cooperative_groups (tiles, and a cooperative grid with one worker per
# block), printf_c_floats (the C float conversions through snprintf),
# inline_ptx (inline PTX cannot run as host code: the launch fails, saying
# so, which the program checks), unroll_hints (the hints do nothing there).
host_code_runs=(examples/vecadd tests/gpu/spin_wait tests/gpu/device_panics tests/gpu/warp_shared tests/gpu/atomics
  tests/gpu/half_precision tests/gpu/fp8 tests/gpu/event_timing tests/gpu/device_globals tests/gpu/many_params tests/gpu/large_params
  tests/gpu/warp_masks tests/gpu/atomic_params tests/gpu/cooperative_groups tests/gpu/printf_c_floats
  tests/gpu/inline_ptx tests/gpu/unroll_hints)
for dir in "${host_code_runs[@]}"; do
  name=$(basename "$dir")
  step "cargo oxide run $name --emulate=host (its Rust code on the CPU)" emulated "$name" "$(arch_of "$dir")" host
done
# Host code cannot run CUDA C++: cxx_device's first launch fails saying so.
cxx_device_on_host() {
  local out
  if out=$(emulated cxx_device sm_90 host 2>&1); then echo "$out"; return 1; fi
  grep -q 'is CUDA C++ device code, which host code cannot run' <<<"$out" || { echo "$out"; return 1; }
}
step "cargo oxide run cxx_device --emulate=host fails: CUDA C++ is not host code" cxx_device_on_host

fault_isolation() {
  local out rc
  out=$(env CARGO_TARGET_DIR="$root/target/stable" cargo +stable oxide test fault_isolation --arch sm_90 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 0 ] && grep -q "test result: ok. 3 passed; 0 failed; 1 ignored" <<<"$out" || return 1
  # The test that faults and fails on purpose fails alone.
  out=$(env CARGO_TARGET_DIR="$root/target/stable" cargo +stable oxide test fault_isolation --arch sm_90 \
          -- --include-ignored 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 101 ] && grep -q "test result: FAILED. 3 passed; 1 failed" <<<"$out" &&
    grep -q "^    tests::a_failing_test_whose_kernel_faults$" <<<"$out"
}
step "cargo oxide test fault_isolation (emulated where there is no GPU): one test's fault fails no other" fault_isolation

# Random programs (tests/fuzz): a fixed set of seeds, each one program of
# generated functions built through `cargo oxide`, its kernels run as PTX on
# the VM and compared value by value with the CPU. A mismatch prints the
# command that shrinks it (oxide-fuzz reduce).
fuzz_first=1; fuzz_last=4; fuzz_functions=50
fuzz() { # fuzz [--release]
  env CARGO_TARGET_DIR="$root/target/stable" cargo +stable run -q -p oxide-fuzz -- run --seeds "$fuzz_first..$((fuzz_last + 1))" \
    --functions "$fuzz_functions" --emulate=ptx --work "$root/target/fuzz" "$@"
}
# The debug builds for sm_80 (the default target, the oldest PTX ISA), the
# release builds for sm_90 (the fuzzer's default).
step "oxide-fuzz: seeds $fuzz_first to $fuzz_last, $fuzz_functions functions each, debug build for sm_80, PTX on the CPU vs the CPU" fuzz --arch sm_80
step "oxide-fuzz: seeds $fuzz_first to $fuzz_last, $fuzz_functions functions each, release build, PTX on the CPU vs the CPU" fuzz --release

# Block programs (oxide-fuzz --block): threads that exchange values through
# shared memory, barriers, shuffles, votes and shared atomics, under branches
# uniform over the block, the warp or nothing, in 1-, 2- and 3-D blocks;
# every thread's values against a CPU model of the block. The VM faults on
# an aligned barrier that one warp reaches from two instructions.
block_first=1; block_last=6; block_programs=40
fuzz_block() { # fuzz_block [--release]
  env CARGO_TARGET_DIR="$root/target/stable" cargo +stable run -q -p oxide-fuzz -- run --block \
    --seeds "$block_first..$((block_last + 1))" --functions "$block_programs" --runs 4 --emulate=ptx --work "$root/target/fuzz" "$@"
}
step "oxide-fuzz --block: seeds $block_first to $block_last, $block_programs block programs each, debug build for sm_80, PTX on the CPU vs a CPU model" fuzz_block --arch sm_80
step "oxide-fuzz --block: seeds $block_first to $block_last, $block_programs block programs each, release build, PTX on the CPU vs a CPU model" fuzz_block --release

run_vecadd() {
  local out rc
  out=$(cargo oxide run vecadd 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 0 ] && grep -q "SUCCESS" <<<"$out" || return 1
  # Refusing the emulator where there is no GPU: built and validated, exit 2.
  if ! grep -q "CPU emulator" <<<"$out"; then return 0; fi  # a GPU is here
  OXIDE_EMULATE=0 cargo oxide run vecadd >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ]
}
step "cargo oxide run vecadd (emulated where there is no GPU)" run_vecadd

bench_without_gpu() {
  # The whole list first: `grep -q` would close the pipe while it is written.
  local list; list=$(cargo oxide bench --list) || return 1
  echo "$list"
  grep -q '^sgemm ' <<<"$list" || return 1
  cargo oxide bench vecadd; local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 2 ]  # 2: built, no GPU to run on
}
step "cargo oxide bench --list, and bench vecadd (exit 2 without a GPU)" bench_without_gpu
step "cargo oxide bench rebuild (kernel edit → cargo oxide build vs nvcc)" cargo oxide bench rebuild
step "benches/host-cost against a driver stub (oxide's host work per allocation and per launch)" bash benches/host-cost/run.sh

echo
for f in "${failures[@]}"; do echo "failed: $f"; done
for s in "${skipped[@]}"; do echo "not emulated: $s"; done
for h in "${as_host[@]}"; do echo "emulated as host code only: $h"; done
echo "disk used by build/ and target/: $(du -sh "$root/build" "$root/target" 2>/dev/null | awk '{ print $1 }' | paste -sd+ -) at the end, at most $(( (disk_peak - disk_at_start) / 1024 / 1024 )) GiB more than at the start"
echo "total: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
