#!/usr/bin/env bash
# GPU readiness check (benchmarks/gpu_check.py): drafter training, speculative vs plain greedy decoding, and
# the losslessness check, on the agent target. Offline: no package or model is fetched.
#   benchmarks/gpu_check.sh [--cpu --steps N --calls K] [--smollm2-package DIR] [...]
# PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "${PYTHON:-python3}" benchmarks/gpu_check.py "$@"
