#!/usr/bin/env bash
# Builds everything the GPU runner needs, here (the GPU machine has no Bazel), into gpu_bundle/ (ignored by git;
# carried to the device with `carry: ["gpu_bundle"]`, which must stay under 64 MiB: checked at the end):
#   gpu_bundle/python/aotirt/      the Python package with _C.so built for the runner's Python (cp312) + lib/
#   gpu_bundle/bin/                aotirt_run and the gpu-tagged C++ test binaries
#   gpu_bundle/tsan/               with BUNDLE_TSAN=1: the same test binaries built with --config=tsan
#   gpu_bundle/tools/              benchmark and driver binaries (gemm_host_bench; runtime_churn, which
#                                  tests/gpu/test_serving_gpu.py runs)
#   gpu_bundle/lib/                libaoti_cuda_shims.so, libaotirt_runtime.so, libcudart.so.13
#   gpu_bundle/COMMIT              the commit built (plus "+ uncommitted changes in N files" when the tree differs)
#   gpu_bundle/TESTS.txt           one line per test binary: "<bundle path> <Bazel label>"; run.sh checks it
#   gpu_bundle/BUNDLE.txt          commit, date, flags, test binary counts, size
# Fails (non-zero, "[bundle] FAILED: ...") when the query for GPU tests fails or finds none, when a binary is missing
# or when the bundle is too big: a bundle that would test nothing is never written.
# Uses its own Bazel output bases (cp312 opt build; the TSan build in another one) so neither invalidates the main
# (cp311) one, and --symlink_prefix=/ so the tree's .bazel/ links keep pointing at the main output base.
# Environment: AOTIRT_RUNNER_PYTHON (cp312 interpreter), AOTIRT_GPU_OUTPUT_BASE, AOTIRT_GPU_TSAN_OUTPUT_BASE,
# BUNDLE_TSAN=1, AOTIRT_GPU_TEST_QUERY (the query for the test binaries), BUNDLE_MAX_MIB (default 64).
set -euo pipefail

GPU_QUERY_DEFAULT='attr(tags, "\bgpu\b", kind("cc_test", //...)) except attr(tags, "\bmanual\b", //...)'

bundle_fail() { echo "[bundle] FAILED: $*" >&2; exit 1; }

# require_gpu_tests LABEL...: the GPU test binaries to ship; none is an error (the old script shipped a bundle with 0).
require_gpu_tests() {
  (($# > 0)) || bundle_fail "no GPU test binaries found (query: ${GPU_QUERY:-$GPU_QUERY_DEFAULT}); not writing a bundle that tests nothing"
  local t
  for t in "$@"; do [[ "$t" == //*:* ]] || bundle_fail "not a Bazel label from the GPU test query: '$t'"; done
}

# bundle_name LABEL: the file name of a test binary in the bundle (//shims/gemm:x -> shims_gemm_x).
bundle_name() { local p="${1#//}"; p="${p/://}"; echo "${p//\//_}"; }

# query_gpu_tests OUTFILE: the labels of the GPU tests, one a line; fails with Bazel's message when the query fails.
query_gpu_tests() {
  local out="$1" err; err="$(mktemp)"
  if ! "${BZ[@]}" query --repo_env=PYTHON_BIN_PATH="$PY312" "$GPU_QUERY" > "$out.raw" 2> "$err"; then
    tail -20 "$err" >&2; rm -f "$err"
    bundle_fail "bazel query for the GPU tests failed (query: $GPU_QUERY)"
  fi
  rm -f "$err"
  grep -E '^//' "$out.raw" > "$out" || true
  rm -f "$out.raw"
}

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  cd "$ROOT"
  PY312="${AOTIRT_RUNNER_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3}"
  OUT_BASE="${AOTIRT_GPU_OUTPUT_BASE:-$HOME/.cache/aotirt_bazel_gpu}"
  TSAN_BASE="${AOTIRT_GPU_TSAN_OUTPUT_BASE:-$HOME/.cache/aotirt_bazel_gpu_tsan}"
  GPU_QUERY="${AOTIRT_GPU_TEST_QUERY:-$GPU_QUERY_DEFAULT}"
  MAX_MIB="${BUNDLE_MAX_MIB:-64}"
  BZ=(bazel --output_base="$OUT_BASE")
  # --symlink_prefix=/: no convenience links (the tree's .bazel/ links belong to the main output base).
  FLAGS=(--config=gpu_runner --repo_env=PYTHON_BIN_PATH="$PY312" --symlink_prefix=/)
  # -g1: line tables only (TSan's stacks keep files and lines; the binaries shrink from ~10 to ~4 MiB for the carry).
  TSAN_FLAGS=(--config=tsan --copt=-g1 --symlink_prefix=/)
  [[ -x "$PY312" ]] || bundle_fail "no runner Python at $PY312 (set AOTIRT_RUNNER_PYTHON)"

  # GPU test binaries: every cc_test tagged gpu (not manual ones: scratch or opt-in targets).
  local list; list="$(mktemp)"
  query_gpu_tests "$list"
  mapfile -t GPU_TESTS < "$list"; rm -f "$list"
  require_gpu_tests "${GPU_TESTS[@]}"

  TARGETS=(//backends/cuda:libaoti_cuda_shims.so //backends/cuda:libaotirt_runtime.so //backends/cuda:aotirt_run
           //backends/cuda/python:_C.so //tools/wheel //shims/gemm:gemm_host_bench //backends/cuda:runtime_churn "${GPU_TESTS[@]}")
  echo "[bundle] building ${#TARGETS[@]} targets for the GPU runner (${#GPU_TESTS[@]} gpu tests: ${GPU_TESTS[*]})" >&2
  "${BZ[@]}" build "${FLAGS[@]}" "${TARGETS[@]}"
  BIN="$("${BZ[@]}" info "${FLAGS[@]}" bazel-bin)"
  if [[ "${BUNDLE_TSAN:-0}" == 1 ]]; then
    echo "[bundle] building the ${#GPU_TESTS[@]} gpu tests with --config=tsan (output base $TSAN_BASE)" >&2
    bazel --output_base="$TSAN_BASE" build "${TSAN_FLAGS[@]}" "${GPU_TESTS[@]}"
    TSAN_BIN="$(bazel --output_base="$TSAN_BASE" info "${TSAN_FLAGS[@]}" bazel-bin)"
  fi

  rm -rf gpu_bundle && mkdir -p gpu_bundle/{bin,lib,python,tools}
  cp -L "$BIN/backends/cuda/libaoti_cuda_shims.so" "$BIN/backends/cuda/libaotirt_runtime.so" gpu_bundle/lib/
  cp -L "$(readlink -f "$BIN/backends/cuda/aotirt_run")" gpu_bundle/bin/aotirt_run
  CUDART="$(ls -1 "$BIN"/_solib_k8/*/libcudart.so.13 2>/dev/null | head -1 || true)"
  [[ -n "$CUDART" ]] || bundle_fail "libcudart.so.13 not found under $BIN/_solib_k8"
  cp -L "$CUDART" gpu_bundle/lib/
  : > gpu_bundle/TESTS.txt
  local t name
  for t in "${GPU_TESTS[@]}"; do
    p="${t#//}"; p="${p/://}"; name="$(bundle_name "$t")"
    [[ -f "$BIN/$p" ]] || bundle_fail "built test binary missing: $BIN/$p ($t)"
    cp -L "$BIN/$p" "gpu_bundle/bin/$name"
    echo "bin/$name $t" >> gpu_bundle/TESTS.txt
  done
  if [[ "${BUNDLE_TSAN:-0}" == 1 ]]; then
    mkdir -p gpu_bundle/tsan
    for t in "${GPU_TESTS[@]}"; do
      p="${t#//}"; p="${p/://}"; name="$(bundle_name "$t")"
      [[ -f "$TSAN_BIN/$p" ]] || bundle_fail "built TSan test binary missing: $TSAN_BIN/$p ($t)"
      cp -L "$TSAN_BIN/$p" "gpu_bundle/tsan/$name"
      echo "tsan/$name $t" >> gpu_bundle/TESTS.txt
    done
  fi
  # Benchmark binaries (not tests: run.sh runs every bin/* as a test).
  cp -L "$BIN/shims/gemm/gemm_host_bench" "$BIN/backends/cuda/runtime_churn" gpu_bundle/tools/
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

  local commit dirty
  commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  dirty="$({ git status --porcelain --untracked-files=no 2>/dev/null || true; } | wc -l)"
  ((dirty == 0)) || commit="$commit + uncommitted changes in $dirty files"
  echo "$commit" > gpu_bundle/COMMIT
  local n_bin n_tsan size_kib
  n_bin="$(grep -c '^bin/' gpu_bundle/TESTS.txt || true)"
  n_tsan="$(grep -c '^tsan/' gpu_bundle/TESTS.txt || true)"
  size_kib="$(du -sk gpu_bundle | cut -f1)"
  {
    echo "commit: $commit"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "flags: ${FLAGS[*]}"
    [[ "${BUNDLE_TSAN:-0}" == 1 ]] && echo "tsan flags: ${TSAN_FLAGS[*]}"
    echo "gpu test binaries: $n_bin in bin/, $n_tsan in tsan/ (list: TESTS.txt)"
    echo "size: $((size_kib / 1024)) MiB"
  } > gpu_bundle/BUNDLE.txt
  cat gpu_bundle/BUNDLE.txt >&2
  du -sh gpu_bundle/* >&2
  ((size_kib <= MAX_MIB * 1024)) || bundle_fail "gpu_bundle is $((size_kib / 1024)) MiB, over the ${MAX_MIB} MiB carry limit"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then main "$@"; fi
