#!/usr/bin/env bash
# Builds cxx_export.cubin: kernels.cu compiled by nvcc as relocatable device
# code, linked by nvlink with oxide's PTX of this package (the Rust functions
# exported with `#[device] #[no_mangle] pub extern "C" fn`), the way a CUDA
# C++ project links against oxide's output.
#
#   bash tests/gpu/cxx_export/build-cubin.sh [ARCH] [OUT]   # ARCH: sm_90 (default)
#   TOOLCHAIN=nightly bash tests/gpu/cxx_export/build-cubin.sh …  (cargo +nightly)
#
# Needs cargo-oxide and oxide-link on PATH and the CUDA toolkit
# ($OXIDE_CUDA_PATH, else /usr/local/cuda). Writes OUT (default:
# cxx_export.cubin beside the built executable, where the program looks).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
arch=${1:-sm_90}
cuda=${OXIDE_CUDA_PATH:-/usr/local/cuda}
cd "$here"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 1. oxide's PTX of the package: the exported functions as `.visible .func`.
cargo ${TOOLCHAIN:+"+${TOOLCHAIN#+}"} oxide inspect --arch "$arch" > "$work/rust.ptx"
grep -q '\.visible \.func .*rust_saxpy' "$work/rust.ptx" || { echo "error: oxide's PTX exports no rust_saxpy" >&2; exit 1; }
# 2. Both sides as relocatable cubins, 3. linked into one executable cubin.
"$cuda/bin/ptxas" -c -arch="$arch" "$work/rust.ptx" -o "$work/rust.cubin"
"$cuda/bin/nvcc" -cubin -rdc=true -arch="$arch" kernels.cu -o "$work/kernels.cubin"
out=${2:-}
if [ -z "$out" ]; then
  target=$(cargo metadata --no-deps --format-version 1 | sed -E 's/.*"target_directory":"([^"]*)".*/\1/')
  out="$target/debug/cxx_export.cubin"
fi
"$cuda/bin/nvlink" -arch="$arch" "$work/kernels.cubin" "$work/rust.cubin" -o "$out"
echo "wrote $out"
