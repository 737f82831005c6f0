#!/bin/bash
# Runs attention on the GPU machine (put the release binary beside this
# script): each argument set is one run, guarded by a timeout (a pipeline
# bug hangs, not fails). Without arguments: the checks, then the bench.
#   bash go.sh                   # = bash go.sh "" "--bench"
#   bash go.sh "--bench 4096"    # one bench seq
# With TORCH=1 it also runs benches/torch/attention.py (if carried beside
# this script as attention.py) with /opt/torch/.venv/bin/python.
# OXIDE_ATTN_FWD picks the forward tiles that --bench times (attention::Tile:
# `all`, or a list such as m128s2,m192s3,m192s3n; the checks run every tile):
#   OXIDE_ATTN_FWD=all bash go.sh "--bench 2048 4096 8192"
# OXIDE_ATTN_BWD picks the backward kernels that --bench times
# (attention::DqSplit: `all`, or a list such as columns,wide,staged,red4,tma; the
# checks run every kernel):
#   OXIDE_ATTN_BWD=all bash go.sh "--bench --bwd 2048 4096 8192"
# OXIDE_ATTN_GROUP picks the head groups that --bench times both passes with
# (attention::Group: `auto`, or numbers of heads; 1 is one head after the
# other; a bad entry is an error):
#   OXIDE_ATTN_GROUP=1,8,16,32,auto bash go.sh "--bench 2048 4096 8192"
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
chmod +x ./attention
[ $# -eq 0 ] && set -- "" "--bench"
status=0
for args in "$@"; do
  echo "### ./attention $args"
  timeout ${ATTN_TIMEOUT:-300} ./attention $args; rc=$?; echo "exit $rc"
  [ $rc -ne 0 ] && status=$rc
done
if [ "${TORCH:-0}" = 1 ] && [ -f attention.py ]; then
  echo "### torch sdpa"
  ${OXIDE_TORCH_PYTHON:-/opt/torch/.venv/bin/python} attention.py --seq 512 1024 2048 4096 8192 16384
fi
exit $status
