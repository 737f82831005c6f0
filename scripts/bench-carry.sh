#!/usr/bin/env bash
# Collects oxide's benchmark program into a folder that runs on a GPU machine
# without Rust: the oxide-bench binary (oxide's PTX and nvcc's cubin are
# embedded in it), the torch reference scripts (benches/torch/) and go.sh,
# which finds cuBLAS and runs them. When attention_fwd or attention_bwd is among
# the names (or no name is given), go.sh first times torch's scaled_dot_product_attention
# with torch/attention.py (python: $OXIDE_TORCH_PYTHON, default
# /opt/torch/.venv/bin/python) and hands its results to oxide-bench
# ($OXIDE_TORCH_ATTENTION), whose rows then compare with torch's fastest backend.
#
#   bash scripts/bench-carry.sh [DEST]     (default: .carry-bench/)
#   # on the GPU machine:
#   bash DEST/go.sh [NAME...]              (all benchmarks without NAME)
#   bash DEST/profile/profile.sh ...       (ncu of a row's two kernels; see there)
#   bash DEST/profile/knobs.sh ...         (a row under several knob settings)
#   bash DEST/profile/ptx-ab.sh ...        (a row under several PTX builds)
#
# The rebuild benchmark needs Rust and is skipped there; run it here with
# `cargo oxide bench rebuild`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$root/.carry-bench}
source "$root/scripts/fresh-build.sh"
fresh_build "$root"
cargo_oxide=$(command -v cargo-oxide || true)
[ -x "$root/build/bin/cargo-oxide" ] && cargo_oxide=$root/build/bin/cargo-oxide
if [ -z "$cargo_oxide" ]; then
  echo "error: cargo-oxide not found; build it first (see README.md)" >&2
  exit 1
fi

# Builds the benchmarks (release, for the arch benches/Cargo.toml names:
# sm_90a) and checks that the program starts.
(cd "$root" && "$cargo_oxide" bench --list >/dev/null)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$dest"
cp "$target/release/oxide-bench" "$dest/oxide-bench"
mkdir -p "$dest/torch" "$dest/profile"
cp "$root"/benches/torch/*.py "$dest/torch/"
cp "$root"/benches/profile/profile.sh "$root"/benches/profile/summary.py \
   "$root"/benches/profile/knobs.sh "$root"/benches/profile/ptx-ab.sh "$dest/profile/"

cat > "$dest/go.sh" <<'GO'
#!/usr/bin/env bash
# Runs oxide's benchmarks (no Rust needed): bash go.sh [NAME...]
# cuBLAS: $OXIDE_CUBLAS, else the nvidia-cublas Python package, else the
# CUDA toolkit; without it the cuBLAS rows are skipped.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${OXIDE_CUBLAS:-}" ]; then
  for py in python3 python; do
    dir=$("$py" -c 'import nvidia.cublas as m, os; print(list(m.__path__)[0])' 2>/dev/null) || continue
    lib=$(ls "$dir"/lib/libcublas.so.* 2>/dev/null | grep -v Lt | head -n 1)
    [ -n "$lib" ] && { export OXIDE_CUBLAS=$lib; break; }
  done
fi
if [ -z "${OXIDE_CUBLAS:-}" ]; then
  lib=$(find /usr/local/lib /usr/lib /opt /usr/local/cuda*/lib64 -name 'libcublas.so.1[0-9]*' \
          -not -name '*Lt*' 2>/dev/null | head -n 1)
  [ -n "$lib" ] && export OXIDE_CUBLAS=$lib
fi
echo "OXIDE_CUBLAS=${OXIDE_CUBLAS:-<not found>}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader 2>/dev/null || true
# torch's attention reference, in the same device call, when its row runs.
if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -qx 'attention_fwd\|attention_bwd'; then
  py=${OXIDE_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$py" ]; then
    export OXIDE_TORCH_ATTENTION=$here/torch-attention.txt
    "$py" "$here/torch/attention.py" --out "$OXIDE_TORCH_ATTENTION" || unset OXIDE_TORCH_ATTENTION
  else
    echo "note: no torch python at $py (set OXIDE_TORCH_PYTHON): the attention rows run without torch's times"
  fi
fi
exec "$here/oxide-bench" "$@"
GO
chmod +x "$dest/go.sh" "$dest/oxide-bench"
echo "ready: $dest (oxide-bench $(du -h "$dest/oxide-bench" | cut -f1), go.sh)"
