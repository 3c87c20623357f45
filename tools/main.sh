#!/usr/bin/env bash
# The main job: setup, build every target; then with a GPU compile the SigLIP-like demo, run it on the aotirt
# runtime (no libtorch), compare with eager and print per-call latency. Without a GPU it says what needs one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Old checkouts: Bazel no longer makes the default-prefix execroot link bazel-<folder> (.bazelrc: --symlink_prefix)
# nor removes it; `//...` walks into it when it points at another output base. bazel-main, -bin, -out and -testlogs
# are listed in .bazelignore and stay.
old_link="bazel-$(basename "$ROOT")"
if [[ -L "$old_link" ]] && ! grep -qxF "$old_link" .bazelignore; then rm -f "$old_link"; fi
bash tools/setup.sh
bazel build //...
BIN="$(bazel info bazel-bin)"  # the output tree itself: the link's name (.bazel/bin) is only a convenience
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && \
   .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  PYTHONPATH="$ROOT/python:$BIN/backends/cuda/python" .venv/bin/python -m aotirt.demo_main
else
  cat <<MSG
Built every target: libaoti_cuda_shims.so, libaotirt_runtime.so, aotirt_run and aotirt._C in .bazel/bin/backends/cuda
(= $BIN/backends/cuda).
No usable GPU here, so the demo did not run. It needs a CUDA GPU and a CUDA build of torch:
  on a GPU machine: bash tools/gpu/bundle.sh (here) then bash tools/gpu/run.sh main (there), or
  python -m aotirt.demo_main with the package installed.
MSG
fi
bazel shutdown >/dev/null 2>&1 || true
