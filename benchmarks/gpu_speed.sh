#!/usr/bin/env bash
# The GPU half of issue 29's projection, as one prepared script for a device session (docs/speed.md,
# "Projecting to another machine"): r and c measured on CUDA in bf16 for the demo target's shape and the
# Qwen3-4B/8B shapes (random weights of the real dimensions: nothing is downloaded, no model travels), at
# batch 1 and 16; then the headline's first seed (benchmarks/results/speed/speed.json, the demo target)
# projected onto the demo target's rows at batch 1 and 16. Everything lands in $OUT (default
# benchmarks/results/gpu): costs.json, costs.txt, projection-b1.md, projection-b16.md.
#   benchmarks/gpu_speed.sh                        # on the device machine (python3 with torch + transformers)
#   DEVICE=cpu QUICK=1 benchmarks/gpu_speed.sh     # a smoke run on a CPU: tiny sizes, batch 1 and 2
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/results/gpu}
py=${PYTHON:-python3}
mkdir -p "$out"
if [ -n "${QUICK:-}" ]; then
  batches=(1 2)
  args=(--shapes smollm2-135m --contexts 256 --verify 2,8 --draft-layers 1 --repeats 2 --warmup 1 --dtype float32)
else
  batches=(1 16)
  args=(--shapes smollm2-135m,qwen3-4b,qwen3-8b --contexts 512,2048,4096 --verify 2,3,4,6,8,16,25 --dtype bfloat16)
fi
export PYTHONPATH=. PYTHONUNBUFFERED=1
"$py" benchmarks/bench_draft_cost.py --device "${DEVICE:-cuda}" "${args[@]}" \
  --batches "$(IFS=,; echo "${batches[*]}")" --out "$out/costs.json" | tee "$out/costs.txt"
for b in "${batches[@]}"; do
  "$py" benchmarks/project_speed.py benchmarks/results/speed/speed.json "$out/costs.json" --batch "$b" \
    | tee "$out/projection-b$b.md"
done
