#!/usr/bin/env bash
# The project's GPU checks as one prepared command for a lent GPU machine (its own python3 with torch and
# transformers; this checkout on PYTHONPATH; nothing downloaded). Writes into OUT (default: $OUT, else ./gpu-out):
#   env.txt         the GPU, driver, Python / torch / transformers versions and each step's exit status
#   gpu_check.json  scripts/gpu_check.py: CUDA rankings against the CPU for tiny Llama / Mistral / Qwen2 / Gemma 3
#   h200.json       benchmarks.gpu: the paper's three architectures with random weights, K by K
#   h200-vllm-*.json benchmarks.vllm_backend: both scorer backends per architecture (only where vLLM imports)
# Each step has its own time limit (GPU_CHECK_S, BENCH_S, VLLM_BENCH_S seconds); GPU_STEPS picks the steps (default
# check,bench,vllm), so each command stays inside one device call:
#   bash scripts/gpu_session.sh                    # the CUDA check and the hf benchmark: about 9 minutes at most
#   GPU_STEPS=vllm bash scripts/gpu_session.sh     # vLLM against hf, three architectures: about 9 minutes at most
# The vllm step needs a Python that imports vLLM (`pip install vllm`, or PYTHON=/path/to/its/python).
set -u
steps=",${GPU_STEPS:-check,bench,vllm},"
out="${1:-${OUT:-gpu-out}}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export INVARIRANK_CACHE="${INVARIRANK_CACHE:-$(mktemp -d)}"
py="${PYTHON:-python3}"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  "$py" -c "import sys, torch, transformers, tokenizers; print(sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__, tokenizers.__version__, torch.cuda.is_available())" 2>&1
  echo "cpus $(nproc)"
} > "$out/env.txt"
if [[ $steps == *,check,* ]]; then
  timeout "${GPU_CHECK_S:-180}" "$py" scripts/gpu_check.py --json "$out/gpu_check.json" > "$out/gpu_check.log" 2>&1
  echo "gpu_check exit $?" >> "$out/env.txt"
fi
if [[ $steps == *,bench,* ]]; then
  timeout "${BENCH_S:-360}" "$py" -m benchmarks.gpu --json "$out/h200.json" --ks "${BENCH_KS:-25,50,15}" \
    --archs llama-3.2-3b-instruct,mistral-7b-instruct-v0.3,qwen2.5-7b-instruct --configs c,b,a \
    --queries "${BENCH_QUERIES:-2}" --time-limit "${BENCH_LIMIT:-300}" > "$out/bench.log" 2>&1
  echo "bench exit $?" >> "$out/env.txt"
  tail -n 30 "$out/bench.log"
fi
# both scorer backends on the same request stream (the four methods' real passes at the paper's prompt shape, random
# weights of each architecture from its configuration, bf16), where this Python has vLLM: the paper-scale page's
# vLLM prices (benchmarks/vllm_backend.py); one engine per architecture, vLLM first (the hf backend's model then loads
# into the memory the stopped engine gave back); each file is rewritten after every row, so a cut keeps what it has
if [[ $steps == *,vllm,* ]]; then
  if "$py" -c "import vllm" > /dev/null 2>&1; then
    "$py" -c "import vllm; print('vllm', vllm.__version__)" >> "$out/env.txt" 2>&1
    for arch in ${VLLM_ARCHS:-llama-3.2-3b-instruct mistral-7b-instruct-v0.3 qwen2.5-7b-instruct}; do
      timeout "${VLLM_BENCH_S:-170}" "$py" -m benchmarks.vllm_backend --arch "$arch" --dtype bfloat16 \
        --k "${VLLM_KS:-25}" --queries "${BENCH_QUERIES:-2}" --m "${VLLM_M:-4}" --scorers span --backends vllm,hf \
        --json "$out/h200-vllm-$arch.json" >> "$out/vllm-bench.log" 2>&1
      echo "vllm bench $arch exit $?" >> "$out/env.txt"
    done
    tail -n 30 "$out/vllm-bench.log"
  else
    echo "vllm bench: skipped, $py cannot import vllm (pip install vllm on the GPU machine)" >> "$out/env.txt"
  fi
fi
cat "$out/env.txt"
