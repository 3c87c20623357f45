#!/usr/bin/env bash
# Installs everything the build and the tests need, idempotently: Debian packages (Bazel 4.2.3, googletest,
# DLPack, minizip, JSON) and the project venv (.venv: torch CPU, pybind11, pytest, NVIDIA CUDA 13.0 wheels).
# Safe to run again: every step checks first. Set AOTIRT_SKIP_APT=1 to skip the Debian part.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AOTIRT_VENV:-$ROOT/.venv}"
PY="${AOTIRT_PYTHON:-python3}"

log() { echo "[setup] $*" >&2; }

APT_PKGS=(bazel-bootstrap bazel-rules-java libgtest-dev libdlpack-dev libminizip-dev zlib1g-dev
          nlohmann-json3-dev binutils zip unzip
          hipcc libamdhip64-dev llvm-14 lld-14 clang-14 patchelf)  # ROCm compile check, Windows .lib + cross-link, wheel RUNPATHs
if [[ "${AOTIRT_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    log "apt: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  log "venv: creating $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
stamp="$VENV/.aotirt-setup-v1"
if [[ ! -f "$stamp" ]]; then
  log "venv: installing Python packages"
  "$VPY" -m pip install -q --upgrade pip >/dev/null
  "$VPY" -m pip install -q -r "$ROOT/tools/requirements.txt"
  # CUDA 13.0 series headers/libraries (cublasLt.h for the dlopen'd GEMM path); --no-deps keeps them small.
  "$VPY" -m pip install -q --no-deps -r "$ROOT/tools/requirements-cuda.txt"
  touch "$stamp"
fi
# CUDA wheels added after v1 venvs were made (cuDNN, cudnn-frontend): installed when a pinned one is missing.
if ! "$VPY" - "$ROOT/tools/requirements-cuda.txt" <<'EOF' 2>/dev/null; then
import importlib.metadata as m, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, _, want = line.partition("==")
        if m.version(name) != want:
            sys.exit(1)
EOF
  log "venv: installing the CUDA wheels of tools/requirements-cuda.txt"
  "$VPY" -m pip install -q --no-deps -r "$ROOT/tools/requirements-cuda.txt"
fi
# ExecuTorch (added after v1 venvs were made): installed on its own when missing, with torch held at the venv's
# version so pip can never replace it.
ET_REQ="$(grep -E '^executorch==' "$ROOT/tools/requirements.txt")"
if ! "$VPY" -c "import importlib.metadata as m, sys; sys.exit(m.version('executorch').split('+')[0] != '${ET_REQ#executorch==}')" 2>/dev/null; then
  log "venv: installing $ET_REQ"
  TORCH_PIN="$("$VPY" -c 'import torch; print("torch==" + torch.__version__.split("+")[0])')"
  echo "$TORCH_PIN" > "$VENV/.aotirt-torch-constraint.txt"
  "$VPY" -m pip install -q -c "$VENV/.aotirt-torch-constraint.txt" "$ET_REQ"
fi
# Triton for its CPU interpreter, apart from the venv's packages (tools/requirements-interp.txt says why).
INTERP="$VENV/triton-interp"
INTERP_REQ="$(grep -E '^triton==' "$ROOT/tools/requirements-interp.txt")"
if [[ "$(cat "$INTERP/.aotirt-req" 2>/dev/null)" != "$INTERP_REQ" ]]; then
  log "venv: installing $INTERP_REQ into $INTERP (Triton's interpreter, for the CPU kernel tests)"
  rm -rf "$INTERP"
  "$VPY" -m pip install -q --no-deps --target "$INTERP" "$INTERP_REQ"
  echo "$INTERP_REQ" > "$INTERP/.aotirt-req"
fi
log "ok: $("$VPY" -c 'import torch, pybind11; print("torch", torch.__version__, "pybind11", pybind11.__version__)'), executorch $("$VPY" -c 'import importlib.metadata as m; print(m.version("executorch"))')"
