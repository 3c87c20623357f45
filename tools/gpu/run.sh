#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repo root with gpu_bundle/ carried:
#   bash tools/gpu/run.sh [tests|verify|cc|memcheck|py|bench|models|main|all|pack]...
# Writes logs and JSON under $OUT (default ./out) and a summary line per suite. No Bazel there.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/out}"
mkdir -p "$OUT"
B="$ROOT/gpu_bundle"
export LD_LIBRARY_PATH="$B/lib:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$B/python:$ROOT/tests/gpu:${PYTHONPATH:-}"
export AOTIRT_SHIM_LIB="$B/lib/libaoti_cuda_shims.so"
export AOTIRT_RUN="$B/bin/aotirt_run"
export AOTIRT_BUNDLE="$B"
export AOTIRT_GEMM_HOST_BENCH="$B/tools/gemm_host_bench"
# Compile caches in the repo's ignored .gpucache/: a warm device machine keeps them between calls, so a benchmark
# can compile in one call (benchmarks/models.py --compile-only) and time everything side by side in the next.
GPUCACHE="$ROOT/.gpucache"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$GPUCACHE/inductor}"
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-$GPUCACHE/triton}"
export AOTIRT_BENCH_CACHE="${AOTIRT_BENCH_CACHE:-$GPUCACHE/packages}"
PY="${PYTHON:-python3}"
# Test the wheel users get: pip-install the bundled cp312 wheel into a folder and import aotirt from there
# (AOTIRT_USE_BUNDLE_PY=1 uses the unpacked bundle instead).
WHEEL="$(ls "$B"/aotirt-*.whl 2>/dev/null | head -1)"
if [[ -n "$WHEEL" && "${AOTIRT_USE_BUNDLE_PY:-0}" != 1 ]]; then
  SITE="${AOTIRT_WHEEL_SITE:-/tmp/aotirt_wheel_site.$$}"  # per run: several run.sh may run side by side
  rm -rf "$SITE"
  if $PY -m pip install -q --no-deps --no-index --target "$SITE" "$WHEEL" > "$SITE.log" 2>&1; then
    export PYTHONPATH="$SITE:$ROOT/tests/gpu:${PYTHONPATH#"$B/python:"}"
    export AOTIRT_SHIM_LIB="$SITE/aotirt/lib/libaoti_cuda_shims.so"
    [[ -x "$SITE/aotirt/bin/aotirt_run" ]] && export AOTIRT_RUN="$SITE/aotirt/bin/aotirt_run"
    WHEEL_NOTE="python package: pip-installed $(basename "$WHEEL")"
  else
    WHEEL_NOTE="python package: wheel install FAILED ($(tail -1 "$SITE.log")); using the bundle"
  fi
fi
# Extra Python packages carried as wheels in .whl/ (ExecuTorch 1.2.0, the release for the machine's torch 2.11, and
# what it needs: tools/gpu/fetch_wheels.sh), installed per run into their own folder.
if compgen -G "$ROOT/.whl/*.whl" > /dev/null; then
  EXTRA="/tmp/aotirt_extra_site.$$"
  if $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$EXTRA" "$ROOT"/.whl/*.whl \
      > "$EXTRA.log" 2>&1; then
    export PYTHONPATH="${PYTHONPATH}:$EXTRA"
    EXTRA_NOTE="extra wheels: $(ls "$ROOT"/.whl/*.whl | wc -l) installed from .whl/"
  else
    EXTRA_NOTE="extra wheels: install FAILED ($(tail -1 "$EXTRA.log"))"
  fi
fi
SUITES=("$@"); [[ ${#SUITES[@]} -eq 0 ]] && SUITES=(all)
summary="$OUT/summary.txt"; : > "$summary"
[[ -n "${WHEEL_NOTE:-}" ]] && echo "$WHEEL_NOTE" | tee -a "$summary"
[[ -n "${EXTRA_NOTE:-}" ]] && echo "$EXTRA_NOTE" | tee -a "$summary"
echo "commit $(cat "$B/COMMIT" 2>/dev/null) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)" | tee -a "$summary"

run_cc_tests() {
  local pass=0 fail=0
  for t in "$B"/bin/*; do
    [[ -x "$t" && "$(basename "$t")" != aotirt_run ]] || continue
    local name; name="$(basename "$t")"
    if "$t" --gtest_brief=1 > "$OUT/cc_$name.log" 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $name" | tee -a "$summary"; tail -30 "$OUT/cc_$name.log"; fi
    grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$OUT/cc_$name.log" | sed "s/^/  $name: /" >> "$summary"
  done
  echo "cc gpu tests: $pass passed, $fail failed" | tee -a "$summary"
}

run_memcheck() {
  # compute-sanitizer memcheck over the shim test binaries (the 8-thread stress test is left to the plain run).
  # GEMM algorithm tuning is off for the bulk (thousands of fresh shapes, each timed 8 ways, are too slow under the
  # sanitizer); the *Tuning* tests switch it on themselves, so the timing path is checked too.
  local cs; cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
  [[ -n "$cs" ]] || { echo "memcheck: compute-sanitizer not found" | tee -a "$summary"; return; }
  for t in "$B"/bin/shims_tests_test_shims_cuda_gpu "$B"/bin/shims_gemm_gemm_shim_gpu_test; do
    [[ -x "$t" ]] || continue
    local name; name="$(basename "$t")"
    if AOTIRT_GEMM_TUNE=0 timeout 240 "$cs" --tool memcheck --error-exitcode 99 --leak-check full "$t" --gtest_brief=1 \
        --gtest_filter='-*EightThreads*' > "$OUT/memcheck_$name.log" 2>&1; then
      echo "memcheck $name: clean ($(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$name.log" | tail -1))" | tee -a "$summary"
    else
      echo "memcheck $name: FAILED ($(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$name.log" | tail -1))" | tee -a "$summary"
      tail -40 "$OUT/memcheck_$name.log"
    fi
  done
}

run_py_tests() {
  # PYTEST_ARGS: e.g. "-n 4" (pytest-xdist) to compile test models in parallel; PYTEST_PATHS: test files (default
  # all of tests/gpu).
  $PY -m pytest -q -rs -p no:cacheprovider ${PYTEST_PATHS:-tests/gpu} ${PYTEST_ARGS:-} "$@" --junitxml="$OUT/pytest_gpu.xml" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
  tail -1 "$OUT/pytest_gpu.log" | sed 's/^/pytest gpu: /' >> "$summary"
}

run_models() {
  # benchmarks/models.py with MODELS_ARGS (e.g. "--models pi05 --compile-only"); merges into a copy of the repo's
  # results JSON so rows of this run sit beside the recorded ones (the report names each row's run).
  cp benchmarks/results/models.json "$OUT/models.json" 2>/dev/null || true
  timeout "${MODELS_TIMEOUT:-580}" $PY benchmarks/models.py --out "$OUT/models.json" ${MODELS_ARGS:-} 2>&1 \
    | tee "$OUT/models.log" | grep -vE "^\|" | tail -60
  echo "models: rc ${PIPESTATUS[0]} ($(grep -cE '\] (siglip|gemma|pi05) ' "$OUT/models.log") rows/steps logged)" \
    | tee -a "$summary"
}

for s in "${SUITES[@]}"; do
  case "$s" in
    verify)  # C++ tests and memcheck beside the pytest suite (different resources: sanitizer CPU vs compiles)
      OUT="$OUT/cc" bash "$0" cc memcheck > "$OUT/verify_cc.txt" 2>&1 &
      ccpid=$!
      run_py_tests
      wait $ccpid
      sed 's/^/  /' "$OUT/cc/summary.txt" >> "$summary" ;;
    models) run_models ;;
    pack) PACK=1 ;;
    tests|all) run_cc_tests; run_memcheck; run_py_tests ;;&
    memcheck) run_memcheck ;;
    cc) run_cc_tests ;;
    py) run_py_tests ;;
    main|all) $PY -m aotirt.demo_main --out "$OUT/main.json" 2>&1 | tail -20 | tee "$OUT/main.log" ;;&
    bench|all)
      for b in ${BENCHES:-benchmarks/gemm.py benchmarks/runtime.py}; do
        [[ -f "$b" ]] && timeout "${BENCH_TIMEOUT:-300}" $PY "$b" --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tail -80 | tee "$OUT/$(basename "$b" .py).log"
      done ;;
  esac
done
cat "$summary"
if [[ "${PACK:-0}" == 1 ]]; then  # everything under $OUT as one tarball (the device tool brings back few files)
  tar czf /tmp/aotirt_logs.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/aotirt_logs.tgz "$OUT/logs.tgz"
fi
