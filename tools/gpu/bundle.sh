#!/usr/bin/env bash
# Builds everything the GPU runner needs, here (the GPU machine has no Bazel), into gpu_bundle/ (ignored by git;
# carried to the device with `carry: ["gpu_bundle"]`, < 64 MiB):
#   gpu_bundle/python/aotirt/      the Python package with _C.so built for the runner's Python (cp312) + lib/
#   gpu_bundle/bin/                aotirt_run and the gpu-tagged C++ test binaries
#   gpu_bundle/tools/              benchmark binaries (gemm_host_bench)
#   gpu_bundle/lib/                libaoti_cuda_shims.so, libaotirt_runtime.so, libcudart.so.13
# Uses its own Bazel output base so the cp312 build does not invalidate the main (cp311) one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PY312="${AOTIRT_RUNNER_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3}"
OUT_BASE="${AOTIRT_GPU_OUTPUT_BASE:-$HOME/.cache/aotirt_bazel_gpu}"
BZ=(bazel --output_base="$OUT_BASE")
FLAGS=(--config=gpu_runner --repo_env=PYTHON_BIN_PATH="$PY312")

# GPU test binaries: every cc_test tagged gpu.
mapfile -t GPU_TESTS < <("${BZ[@]}" query 'attr(tags, "\bgpu\b", kind("cc_test", //...))' 2>/dev/null)
TARGETS=(//backends/cuda:libaoti_cuda_shims.so //backends/cuda:libaotirt_runtime.so //backends/cuda:aotirt_run
         //backends/cuda/python:_C.so //tools/wheel //shims/gemm:gemm_host_bench "${GPU_TESTS[@]}")
echo "[bundle] building ${#TARGETS[@]} targets for the GPU runner (${#GPU_TESTS[@]} gpu tests)" >&2
"${BZ[@]}" build "${FLAGS[@]}" "${TARGETS[@]}"
BIN="$("${BZ[@]}" info "${FLAGS[@]}" bazel-bin 2>/dev/null)"

rm -rf gpu_bundle && mkdir -p gpu_bundle/{bin,lib,python,tools}
cp -L "$BIN/backends/cuda/libaoti_cuda_shims.so" "$BIN/backends/cuda/libaotirt_runtime.so" gpu_bundle/lib/
cp -L "$(readlink -f "$BIN/backends/cuda/aotirt_run")" gpu_bundle/bin/aotirt_run
CUDART="$(ls -1 "$BIN"/_solib_k8/*/libcudart.so.13 | head -1)"
cp -L "$CUDART" gpu_bundle/lib/
for t in "${GPU_TESTS[@]}"; do
  p="${t#//}"; p="${p/://}"
  cp -L "$BIN/$p" "gpu_bundle/bin/$(echo "$p" | tr / _)"
done
# Benchmark binaries (not tests: run.sh runs every bin/* as a test).
cp -L "$BIN/shims/gemm/gemm_host_bench" gpu_bundle/tools/
cp -r python/aotirt gpu_bundle/python/
find gpu_bundle/python -name __pycache__ -prune -exec rm -rf {} +
cp -L "$BIN/backends/cuda/python/_C.so" gpu_bundle/python/aotirt/_C.so
mkdir -p gpu_bundle/python/aotirt/lib
cp gpu_bundle/lib/libaoti_cuda_shims.so gpu_bundle/python/aotirt/lib/
cp shims/shim_manifest.tsv gpu_bundle/python/aotirt/
chmod -R u+w gpu_bundle
# Binaries find the libraries through $ORIGIN rpaths or LD_LIBRARY_PATH (run.sh sets it).
# The cp312 wheel users get: run.sh installs it and runs the GPU tests on it.
cp -L "$BIN"/tools/wheel/aotirt-*.whl gpu_bundle/
git rev-parse HEAD > gpu_bundle/COMMIT 2>/dev/null || true
du -sh gpu_bundle >&2
