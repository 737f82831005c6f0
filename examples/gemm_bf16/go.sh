#!/bin/bash
# Runs gemm_bf16 on the GPU machine: finds cuBLAS in the nvidia-cublas Python
# package, guards each run with a timeout (a pipeline bug hangs, not fails).
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
NV=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)
if [ -n "$NV" ]; then
  for f in "$NV"/cublas/lib/libcublas.so.13 "$NV"/cublas/lib/libcublas.so.12; do
    [ -e "$f" ] && { export OXIDE_CUBLAS="$f"; break; }
  done
  export LD_LIBRARY_PATH="$(ls -d "$NV"/*/lib 2>/dev/null | tr '\n' ':')${LD_LIBRARY_PATH}"
fi
# Newer wheels put every library in nvidia/cu13/lib; else the toolkit's.
if [ -z "$OXIDE_CUBLAS" ]; then
  for f in "$NV"/cu13/lib/libcublas.so.13 /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13; do
    [ -n "$f" ] && [ -e "$f" ] && { export OXIDE_CUBLAS="$f"; break; }
  done
fi
[ -n "$OXIDE_CUBLAS" ] || echo "note: no libcublas.so.13/12 found (nvidia-cublas Python package, CUDA toolkit); oxide times only"
echo "OXIDE_CUBLAS=$OXIDE_CUBLAS"
chmod +x ./gemm_bf16
for args in "$@"; do
  echo "### ./gemm_bf16 $args"
  timeout ${GEMM_TIMEOUT:-40} ./gemm_bf16 $args; echo "exit $?"
done
