#!/bin/bash
# Builds stacksim-probe with nvcc alone (no CMake, no host dependencies of the simulator) and runs
# it, then the PyTorch training-step timer, writing both files to OUTDIR (default .):
#   probe/run_on_gpu.sh [OUTDIR] [--quick]
# Each part has its own time limit, so one failing part still leaves the others' files.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-.}
quick=${2:-}
mkdir -p "$out"
bin=$(mktemp -d)/stacksim-probe
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
echo "building for sm_$cc"
nvcc -O2 -std=c++17 -I"$here" -gencode "arch=compute_$cc,code=sm_$cc" \
  "$here"/probe/{main,common,gpu_bench,gemm_bench,host_bench,multi_gpu_bench}.cpp "$here"/probe/kernels.cu \
  -lcublas -lcublasLt -ldl -lpthread -o "$bin" || exit 1
timeout ${PROBE_TIMEOUT_S:-420} "$bin" $quick -o "$out/probe.yaml"; echo "probe exit $?"
timeout ${STEP_TIMEOUT_S:-240} python3 "$here/probe/torch_step.py" $quick -o "$out/torch-step.yaml"; echo "torch_step exit $?"
