#!/usr/bin/env bash
# Is this machine ready for the GPU profiles? On a CUDA machine: the tests that touch CUDA, a few
# hundred steps of the default arm in fp32 and bf16 autocast, and the cifar10 profile's loading and
# first steps on a generated file in CIFAR-10's python layout (tools/gpu_check.py). Without a CUDA
# device: one line, exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec timeout 290 python -m tools.gpu_check "$@"
