#!/usr/bin/env bash
# The GPU part of issue 36, as one prepared run on a machine with a CUDA GPU (about 10 minutes):
#   1. the gpu-marked tests: Triton lightning forward/backward against the reference, the engine on CUDA
#      (continuous batching, preemption, the same answers as alone and as on CPU), and the vLLM tests;
#   2. Triton lightning kernels against flash-linear-attention's at T = 8K-32K (scripts/gpu_kernels.py);
#   3. vLLM: its MiniMax-Text-01 implementation on a checkpoint saved here, greedy tokens and log-probs
#      against this engine's, and weights pushed after RL updates (tests/model/test_vllm_backend.py,
#      tests/rl/test_vllm_rollouts.py), when vllm imports.
# Results go to $OUT (or ./gpu-results): the pytest log, the kernel table (for flows/bench/GPU_RESULTS.md).
#
# On this workplace's GPU machines nothing can be fetched: the image has torch, triton and transformers
# but neither flash-linear-attention nor vLLM. flash-linear-attention is pure Python and travels as wheels
# (the machine's Python is 3.12); prepare them here once, then name .whl in the run's `carry`:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 -d .whl flash-linear-attention fla-core
# vLLM's wheel is larger than what a run may carry (64 MiB), so step 3 runs only where vllm is installed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu-results}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
"$PY" - <<'EOF' | tee "$OUT/device.txt"
import importlib.util, torch
print("device:", torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA", "| torch", torch.__version__)
for name in ("triton", "fla", "vllm", "transformers"):
    print(f"{name}: {'yes' if importlib.util.find_spec(name) else 'missing'}")
EOF

status=0
timeout 300 "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider --continue-on-collection-errors \
  tests/kernels/test_lightning_triton.py tests/model/test_engine_cuda.py \
  tests/model/test_vllm_backend.py tests/rl/test_vllm_rollouts.py 2>&1 | tee "$OUT/pytest-gpu.log" || status=1
timeout 300 "$PY" scripts/gpu_kernels.py "$OUT/lightning-kernels.md" 2>&1 | tee "$OUT/kernels.log" || status=1
exit $status
