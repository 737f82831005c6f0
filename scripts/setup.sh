#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for oxide and runs the main job:
#   1. installs the system packages (LLVM 22, CMake, Ninja, GoogleTest);
#   2. builds the device linker and cargo-oxide;
#   3. installs both next to cargo (~/.cargo/bin, already on PATH with rustup),
#      and oxide's crates as the registry `oxide` in cargo's home
#      (scripts/install-crates.sh), for projects made by `cargo oxide new`;
#   4. runs `cargo oxide run vecadd`.
# Without a GPU step 4 still builds vecadd and validates its PTX with ptxas,
# then runs its kernel on the CPU emulator (saying so) and prints the result;
# `OXIDE_EMULATE=0 bash scripts/setup.sh` refuses instead (exit code 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(llvm-22-dev llvm-22-tools clang-22 lld-22 libzstd-dev zlib1g-dev
          cmake ninja-build libgtest-dev g++ pkg-config python3
          librust-tokio-dev)  # examples/async_mlp: tokio from Debian (.cargo/config.toml)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "note: the nightly toolchain is not installed; oxide works with stable alone"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null
ninja -C build oxide-link cargo-oxide

bindir="${CARGO_HOME:-$HOME/.cargo}/bin"
mkdir -p "$bindir"
install -m 0755 build/bin/oxide-link build/bin/cargo-oxide "$bindir/"
echo "installed cargo-oxide and oxide-link into $bindir"
bash scripts/install-crates.sh
export PATH="$bindir:$PATH"

cargo oxide run vecadd
