#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repo root with gpu_bundle/ carried:
#   bash tools/gpu/run.sh [tests|verify|cc|memcheck|memcheck_py|racecheck|tsan|serving|py|bench|models|zoo|main|all|pack]...
# Writes logs and JSON under $OUT (default ./out) and a summary line per suite. No Bazel there.
#   tests = cc memcheck py;  all = tests main bench;  verify = py beside cc+memcheck;  racecheck and tsan (the
#   bundle's tsan/ binaries: BUNDLE_TSAN=1 bash tools/gpu/bundle.sh) run when named (minutes under the sanitizers)
# Every suite ends in "<suite>: N passed, M failed, K skipped"; a test suite that ran 0 tests (everything skipped,
# no binaries, filter matched nothing, tool missing) fails. The last line is "run.sh: ok (...)" or
# "run.sh: FAILED (<suites>)", and the exit status is non-zero when anything failed.
# Environment:
#   GTEST_FILTER, GTEST_REPEAT   the cc and tsan suites: --gtest_filter / --gtest_repeat (taken out of the
#                                environment so the other suites and child processes do not inherit them)
#   MEMCHECK_FILTER, RACECHECK_FILTER, TSAN_FILTER   per-suite gtest filters (defaults below; TSAN_FILTER defaults
#                                to GTEST_FILTER); MEMCHECK_TIMEOUT, RACECHECK_TIMEOUT, TSAN_TIMEOUT, CC_TIMEOUT (s/binary)
#   TSAN_OPTIONS                 default "halt_on_error=0 report_signal_unsafe=0 second_deadlock_stack=1
#                                suppressions=$OUT/tsan.supp" (called_from_lib for each of TSAN_IGNORED_LIBS,
#                                default "libcuda.so.1 libcublasLt.so.13": both uninstrumented, every report seen
#                                on the H200 had one of them on top; nothing of ours is suppressed)
#   AOTIRT_BUNDLE_DIR            the bundle (default ./gpu_bundle); PYTEST_ARGS, PYTEST_PATHS, MODELS_ARGS, BENCHES...
#   ZOO_ARGS, ZOO_BUDGET_S, ZOO_TIMEOUT   the zoo suite (benchmarks/zoo.py): its flags (e.g. "--quick", "--models
#                                hf_,pat_", "--dtype both"), its own time budget (default 540 s: it writes its JSON
#                                and table before the device's 10-minute limit) and the hard timeout (default 590 s)
set -uo pipefail

# ------------------------------------------------------------------------------------------- result accounting
# (No side effects until main: tests/cpu/tooling sources this file and runs these on fake logs.)
SUITE_FAILURES=()

# gtest_counts LOG: "ran passed skipped failed" summed over the log's summaries (one per --gtest_repeat iteration);
# failed = ran - passed - skipped (gtest's --gtest_brief=1 prints no failed count).
gtest_counts() {
  awk '
    /^\[==========\] [0-9]+ tests? from .* ran\./ { ran += $2 }
    /^\[  PASSED  \] [0-9]+ tests?\./            { passed += $4 }
    /^\[  SKIPPED \] [0-9]+ tests?[.,]/          { skipped += $4 }
    END { printf "%d %d %d %d\n", ran, passed, skipped, ran - passed - skipped }' "$1" 2>/dev/null || echo "0 0 0 0"
}

# record_suite NAME PASSED FAILED SKIPPED [NOTE]: the suite's summary line; a failure when FAILED > 0 or when
# nothing was tested (PASSED + FAILED == 0).
record_suite() {
  local name="$1" p="$2" f="$3" s="$4" note="${5:-}" line
  line="$name: $p passed, $f failed, $s skipped${note:+ ($note)}"
  if ((f > 0)); then
    SUITE_FAILURES+=("$name"); line="$line: FAILED"
  elif ((p + f == 0)); then
    SUITE_FAILURES+=("$name"); line="$line: FAILED (ran 0 tests)"
  fi
  echo "$line" | tee -a "$summary"
}

# record_step NAME RC: a step that is not a test suite (main, bench, models): fails when RC is not 0.
record_step() {
  if (($2 != 0)); then SUITE_FAILURES+=("$1"); echo "$1: FAILED (exit $2)" | tee -a "$summary"; fi
}

# finish: the closing line; returns non-zero when any suite failed.
finish() {
  if ((${#SUITE_FAILURES[@]})); then
    echo "run.sh: FAILED (${SUITE_FAILURES[*]})" | tee -a "$summary"
    return 1
  fi
  echo "run.sh: ok (${SUITES[*]:-})" | tee -a "$summary"
}

# run_gtest_binaries SUITE LOGPREFIX TIMEOUT PREFIX_CMD... -- BINARY... : runs each binary (with the prefix command,
# e.g. compute-sanitizer, and $GT_ARGS), sums its gtest counts and records the suite. A binary that exits non-zero
# counts at least one failure; one that ran nothing is noted (without a filter it is a failure).
run_gtest_binaries() {
  local suite="$1" logp="$2" tmo="$3"; shift 3
  local pre=()
  while (($#)) && [[ "$1" != -- ]]; do pre+=("$1"); shift; done
  shift
  local pass=0 fail=0 skip=0 nbin=0 t name log rc ran p s f empty=()
  for t in "$@"; do
    [[ -x "$t" && -f "$t" ]] || continue
    name="$(basename "$t")"; log="$OUT/${logp}_$name.log"; nbin=$((nbin + 1))
    timeout "$tmo" "${pre[@]}" "$t" --gtest_brief=1 "${GT_ARGS[@]}" > "$log" 2>&1
    rc=$?
    # GT_POSTCHECK (a function: LOG RC -> the exit status to count), e.g. tsan_postcheck
    [[ -n "${GT_POSTCHECK:-}" ]] && rc="$("$GT_POSTCHECK" "$log" "$rc")"
    read -r ran p s f < <(gtest_counts "$log")
    if ((rc != 0 && f == 0)); then f=1; fi  # crash, timeout, sanitizer report: no case-level failure to count
    if ((ran == 0 && rc == 0)); then
      empty+=("$name")
      [[ -n "${GT_FILTERED:-}" ]] || f=1  # without a filter every binary has tests: running none is a failure
    fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    if ((f > 0)); then
      echo "FAILED: $suite $name (exit $rc$( ((rc == 124)) && echo ", timed out after ${tmo}s"))" | tee -a "$summary"
      grep -E "ERROR SUMMARY|WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer" "$log" | sort | uniq -c | head -5 | tee -a "$summary"
      tail -30 "$log"
    fi
    grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$log" | sed "s/^/  $suite $name: /" >> "$summary"
  done
  local note="$nbin binaries"
  ((${#empty[@]})) && note="$note; ran no test: ${empty[*]}"
  record_suite "$suite" "$pass" "$fail" "$skip" "$note"
}

# bundle_test_binaries: the plain C++ GPU test binaries (bin/* except aotirt_run).
bundle_test_binaries() {
  local t
  for t in "$B"/bin/*; do [[ -f "$t" && -x "$t" && "$(basename "$t")" != aotirt_run ]] && echo "$t"; done
  return 0
}

run_cc_tests() {
  local bins; mapfile -t bins < <(bundle_test_binaries)
  # A bundle lists its test binaries (bundle.sh): one missing from bin/ is a failure, not a quieter pass.
  if [[ -f "$B/TESTS.txt" ]]; then
    local want have
    want="$(grep -c '^bin/' "$B/TESTS.txt" || true)"; have="${#bins[@]}"
    if ((want != have)); then
      SUITE_FAILURES+=("cc-list"); echo "cc: FAILED: TESTS.txt lists $want binaries in bin/, the bundle has $have" | tee -a "$summary"
    fi
  fi
  local GT_ARGS=() GT_FILTERED="$CC_FILTER"
  [[ -n "$CC_FILTER" ]] && GT_ARGS+=("--gtest_filter=$CC_FILTER")
  [[ -n "$CC_REPEAT" ]] && GT_ARGS+=("--gtest_repeat=$CC_REPEAT")
  run_gtest_binaries cc cc "${CC_TIMEOUT:-600}" -- "${bins[@]}"
}

find_compute_sanitizer() {
  command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1
}

# The shim test binaries the sanitizers run (the 8/16-thread stress tests are left to the plain and TSan runs).
SANITIZER_BINARIES=(shims_tests_test_shims_cuda_gpu shims_gemm_test_gemm_shims_gpu)

run_memcheck() {
  # compute-sanitizer memcheck over the shim test binaries.
  # GEMM algorithm tuning is off for the bulk (thousands of fresh shapes, each timed 8 ways, are too slow under the
  # sanitizer); the *Tuning* tests switch it on themselves, so the timing path is checked too.
  local cs; cs="$(find_compute_sanitizer)"
  [[ -n "$cs" ]] || { record_suite memcheck 0 0 0 "compute-sanitizer not found"; return; }
  local GT_ARGS=("--gtest_filter=${MEMCHECK_FILTER:--*EightThreads*}") GT_FILTERED=1
  AOTIRT_GEMM_TUNE=0 run_gtest_binaries memcheck memcheck "${MEMCHECK_TIMEOUT:-240}" \
    "$cs" --tool memcheck --error-exitcode 99 --leak-check full -- "${SANITIZER_BINARIES[@]/#/$B/bin/}"
}

# Racecheck (shared-memory hazards in kernels) is slow over cuBLASLt's kernels: by default the shim (copy kernel)
# cases and a few GEMM cases.
RACECHECK_FILTER_DEFAULT='CudaShims.*:GemmGpu.EmptyDims:GemmGpu.LargerShapesWithBias:GemmGpu.EveryAddmmSelfCase'
run_racecheck() {
  local cs; cs="$(find_compute_sanitizer)"
  [[ -n "$cs" ]] || { record_suite racecheck 0 0 0 "compute-sanitizer not found"; return; }
  local GT_ARGS=("--gtest_filter=${RACECHECK_FILTER:-$RACECHECK_FILTER_DEFAULT}") GT_FILTERED=1
  AOTIRT_GEMM_TUNE=0 run_gtest_binaries racecheck racecheck "${RACECHECK_TIMEOUT:-240}" \
    "$cs" --tool racecheck --racecheck-report all --error-exitcode 99 -- "${SANITIZER_BINARIES[@]/#/$B/bin/}"
}

# TSan-built test binaries (BUNDLE_TSAN=1 bash tools/gpu/bundle.sh puts them in gpu_bundle/tsan/).
run_tsan() {
  local bins=() t
  for t in "$B"/tsan/*; do [[ -x "$t" && -f "$t" ]] && bins+=("$t"); done
  ((${#bins[@]})) || { record_suite tsan 0 0 0 "no TSan binaries in $B/tsan: build the bundle with BUNDLE_TSAN=1"; return; }
  local filter="${TSAN_FILTER:-$CC_FILTER}"
  local GT_ARGS=() GT_FILTERED="$filter"
  [[ -n "$filter" ]] && GT_ARGS+=("--gtest_filter=$filter")
  [[ -n "$CC_REPEAT" ]] && GT_ARGS+=("--gtest_repeat=$CC_REPEAT")
  # GCC 12's TSan refuses some kernels' address-space randomization ("unexpected memory mapping"): then run the
  # binaries with ASLR off for them (setarch -R) when that is allowed.
  local pre=()
  if "${bins[0]}" --gtest_list_tests 2>&1 | grep -q "unexpected memory mapping"; then
    if setarch "$(uname -m)" -R true 2>/dev/null; then
      pre=(setarch "$(uname -m)" -R); echo "tsan: ASLR off for the TSan binaries (setarch -R)" | tee -a "$summary"
    else
      echo "tsan: TSan cannot map its shadow memory here and setarch -R is not allowed" | tee -a "$summary"
    fi
  fi
  # TSan cannot see the synchronization inside the (uninstrumented) CUDA driver: the interceptor calls made from
  # TSAN_IGNORED_LIBS (memcpy, pthread_*) are not reported; races in our code, and in our calls into them, still are.
  local supp="$OUT/tsan.supp" lib
  : > "$supp"
  for lib in ${TSAN_IGNORED_LIBS-libcuda.so.1 libcublasLt.so.13}; do echo "called_from_lib:$lib" >> "$supp"; done
  # The one report left on the H200 (54a3493, e5c7643, 9bc4bc0): "unlock of an unlocked mutex" at process exit, stack
  # pthread_mutex_unlock <- cxa_at_exit_wrapper, on a global mutex libcublasLt.so.13 created (and locked, ignored by
  # called_from_lib) in its own initializer. No suppression can name it (tools/gpu/tsan_reports.py says why), so a
  # binary that exits 66 counts as passed only when tsan_reports.py finds that every report is this exact one.
  local GT_POSTCHECK=""
  [[ " ${TSAN_IGNORED_LIBS-libcuda.so.1 libcublasLt.so.13} " == *" libcublasLt.so.13 "* ]] && GT_POSTCHECK=tsan_postcheck
  TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0 report_signal_unsafe=0 second_deadlock_stack=1 suppressions=$supp}" \
    run_gtest_binaries tsan tsan "${TSAN_TIMEOUT:-420}" "${pre[@]}" -- "${bins[@]}"
}

# tsan_postcheck LOG RC: prints the exit status to count: 0 for a TSan exit (66) whose reports are all known vendor
# ones (tools/gpu/tsan_reports.py, its verdict in the summary), else RC.
tsan_postcheck() {
  local log="$1" rc="$2" verdict
  if ((rc == 66)) && verdict="$($PY "$ROOT/tools/gpu/tsan_reports.py" "$log" 2>&1)"; then
    echo "tsan: $(basename "$log" .log): exit 66 counted as 0: $verdict" >> "$summary"
    echo 0
    return
  fi
  [[ -n "${verdict:-}" ]] && echo "tsan: $(basename "$log" .log): $verdict" >> "$summary"
  echo "$rc"
}

# Issue 12's serving checks in one call (about 4 minutes on the H200): the 16-thread GEMM stress test with repeats
# (SERVING_REPEAT, default 20), the 8-thread and thread-exit tests of test_gemm_shims_gpu 12 times, the thread tests
# under TSan (when the bundle has tsan/) and under compute-sanitizer memcheck and racecheck (small counts), then the
# package churn / no-torch tests (tests/gpu/test_serving_gpu.py). SERVING_SANITIZERS=0 leaves out TSan, memcheck and
# racecheck.
run_serving() {
  local GT_ARGS=("--gtest_repeat=${SERVING_REPEAT:-20}") GT_FILTERED=""
  run_gtest_binaries stress stress "${CC_TIMEOUT:-300}" -- "$B/bin/shims_gemm_test_gemm_threads_gpu"
  GT_ARGS=("--gtest_filter=*EightThreads*:*ExitedThreads*" "--gtest_repeat=12"); GT_FILTERED=1
  run_gtest_binaries threads threads "${CC_TIMEOUT:-300}" -- "$B/bin/shims_gemm_test_gemm_shims_gpu"
  [[ "${SERVING_SANITIZERS:-1}" == 0 ]] && { PYTEST_PATHS=tests/gpu/test_serving_gpu.py run_py_tests; return; }
  if compgen -G "$B/tsan/*" > /dev/null; then
    AOTIRT_STRESS_CALLS="${AOTIRT_STRESS_CALLS:-150}" \
      TSAN_FILTER="GemmThreads.*:*EightThreads*:*ExitedThreads*:*CudaGraph*" CC_REPEAT="" run_tsan
  fi
  # The threaded tests under compute-sanitizer too, at counts the sanitizer can carry: memcheck 4 threads x 40 calls;
  # racecheck (which instruments every shared-memory access of cuBLASLt's kernels: 4 x 40 with tuning ran past 300 s
  # on the H200) 4 x 40 with tuning off (4 threads: one of them captures graphs; 2 x 10 at 54a3493 had none, so the
  # 16-thread test failed its own checks that the graph paths ran). The thread-exit test is left out of racecheck:
  # at 9bc4bc0 it passed with 0 hazards, but racecheck counted its own "Internal Sanitizer Error: Detected a failure
  # to track a kernel launch" (threads exiting with work in flight) as an error; it runs under memcheck and TSan.
  # So does the shared-stream workspace test (K=16384 split-K GEMMs: past 150 s under racecheck at f01e84f; the race
  # it hunts is between kernels through global memory, which racecheck, a shared-memory checker, does not see).
  local cs; cs="$(find_compute_sanitizer)"
  if [[ -n "$cs" ]]; then
    GT_ARGS=("--gtest_filter=GemmThreads.*:*ExitedThreads*"); GT_FILTERED=1
    AOTIRT_STRESS_THREADS=4 AOTIRT_STRESS_CALLS=40 run_gtest_binaries serving-memcheck serving_memcheck \
      "${MEMCHECK_TIMEOUT:-300}" "$cs" --tool memcheck --error-exitcode 99 --leak-check full -- \
      "$B/bin/shims_gemm_test_gemm_threads_gpu" "$B/bin/shims_gemm_test_gemm_shims_gpu"
    GT_ARGS=("--gtest_filter=GemmThreads.*:-GemmThreads.ThreadsSharingOneStream*")
    AOTIRT_GEMM_TUNE=0 AOTIRT_STRESS_THREADS=4 AOTIRT_STRESS_CALLS=40 run_gtest_binaries serving-racecheck \
      serving_racecheck "${RACECHECK_TIMEOUT:-240}" "$cs" --tool racecheck --error-exitcode 99 -- \
      "$B/bin/shims_gemm_test_gemm_threads_gpu"
  else
    record_suite serving-sanitizers 0 0 0 "compute-sanitizer not found"
  fi
  # CHURN_REPEAT: the 4-thread native churn this many times (it found one wrong output in 240 cycles at 9bc4bc0)
  AOTIRT_CHURN_REPEAT="${CHURN_REPEAT:-3}" PYTEST_PATHS=tests/gpu/test_serving_gpu.py run_py_tests
}

# pytest_counts XML: "passed failed skipped" from a JUnit XML file (nothing when it is missing or unreadable).
pytest_counts() {
  $PY - "$1" <<'EOF' 2>/dev/null
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
t = sum(int(s.get("tests", 0)) for s in suites); f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
k = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - k, f, k)
EOF
}

run_py_tests() {
  # PYTEST_ARGS: e.g. "-n 4" (pytest-xdist) to compile test models in parallel; PYTEST_PATHS: test files (default
  # all of tests/gpu).
  rm -f "$OUT/pytest_gpu.xml"
  $PY -m pytest -q -rs -p no:cacheprovider ${PYTEST_PATHS:-tests/gpu} ${PYTEST_ARGS:-} "$@" --junitxml="$OUT/pytest_gpu.xml" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
  local rc=${PIPESTATUS[0]} p=0 f=0 s=0 counts
  tail -1 "$OUT/pytest_gpu.log" | sed 's/^/pytest gpu: /' >> "$summary"
  counts="$(pytest_counts "$OUT/pytest_gpu.xml")"
  [[ -n "$counts" ]] && read -r p f s <<< "$counts"
  ((rc != 0 && f == 0)) && f=1  # collection error, crash, no tests collected (rc 5)
  record_suite py "$p" "$f" "$s" "pytest exit $rc"
}

run_memcheck_py() {
  # compute-sanitizer memcheck over the shim tests of the cuDNN attention and convolution and of our own CUDA kernels
  # (int4, embedding bag, histc, the FFTs' normalization and conjugate fill around cuFFT; pytest drives the shims through ctypes; torch's reference kernels run under the
  # sanitizer too), at small random-case counts. No leak check: the caching allocators of torch and of our pool keep
  # memory by design.
  local cs; cs="$(find_compute_sanitizer)"
  [[ -n "$cs" ]] || { record_suite memcheck_py 0 0 0 "compute-sanitizer not found"; return; }
  rm -f "$OUT/memcheck_py.xml"
  local n="${MEMCHECK_PY_CASES:-24}"
  AOTIRT_ATTENTION_CASES="$n" AOTIRT_CONV_CASES="$n" AOTIRT_INT4_CASES="$n" AOTIRT_EMBEDDING_BAG_CASES="$n" \
    AOTIRT_HISTC_CASES="$n" AOTIRT_FFT_CASES="$n" timeout "${MEMCHECK_PY_TIMEOUT:-420}" "$cs" --tool memcheck --error-exitcode 99 \
    $PY -m pytest -q -rs -p no:cacheprovider tests/gpu/test_attention_shims.py tests/gpu/test_convolution_shims.py \
    tests/gpu/test_int4_shims.py tests/gpu/test_embedding_bag_shims.py tests/gpu/test_histc_shims.py \
    tests/gpu/test_fft_shims.py -k "random_cases or clear_errors or identity" --junitxml="$OUT/memcheck_py.xml" > "$OUT/memcheck_py.log" 2>&1
  local rc=$? p=0 f=0 s=0 counts errors
  errors="$(grep -m1 -o 'ERROR SUMMARY: [0-9]* error' "$OUT/memcheck_py.log" || echo "no ERROR SUMMARY")"
  tail -3 "$OUT/memcheck_py.log"
  counts="$(pytest_counts "$OUT/memcheck_py.xml")"
  [[ -n "$counts" ]] && read -r p f s <<< "$counts"
  ((rc != 0 && f == 0)) && f=1  # sanitizer errors (exit 99), a crash or a timeout
  record_suite memcheck_py "$p" "$f" "$s" "exit $rc, $errors"
}

run_models() {
  # benchmarks/models.py with MODELS_ARGS (e.g. "--models pi05 --compile-only"); merges into a copy of the repo's
  # results JSON so rows of this run sit beside the recorded ones (the report names each row's run).
  cp benchmarks/results/models.json "$OUT/models.json" 2>/dev/null || true
  timeout "${MODELS_TIMEOUT:-580}" $PY benchmarks/models.py --out "$OUT/models.json" ${MODELS_ARGS:-} 2>&1 \
    | tee "$OUT/models.log" | grep -vE "^\|" | tail -60
  local rc=${PIPESTATUS[0]}
  echo "models: rc $rc ($(grep -cE '\] (siglip|gemma|pi05) ' "$OUT/models.log") rows/steps logged)" \
    | tee -a "$summary"
  record_step models "$rc"
}

run_zoo() {
  # benchmarks/zoo.py (issue 14): ~60 models through export, aotirt.compile (max_autotune OFF), load + run and CUDA
  # graph timing; writes $OUT/zoo.json and $OUT/zoo.md. Its --budget-s records what did not finish and still writes.
  timeout "${ZOO_TIMEOUT:-590}" $PY benchmarks/zoo.py --out "$OUT/zoo.json" --budget-s "${ZOO_BUDGET_S:-540}" \
    ${ZOO_ARGS:-} 2>&1 | tee "$OUT/zoo.log" | grep -vE "^\|" | tail -60
  local rc=${PIPESTATUS[0]}
  echo "zoo: rc $rc ($(grep -cE '^\| [a-z0-9_]+ \| (torchvision|timm|transformers|pattern) \|' "$OUT/zoo.md" 2>/dev/null || echo 0) table rows in zoo.md)" \
    | tee -a "$summary"
  record_step zoo "$rc"
}

run_main() {
  $PY -m aotirt.demo_main --out "$OUT/main.json" 2>&1 | tail -20 | tee "$OUT/main.log"
  local rc=${PIPESTATUS[0]}
  record_step main "$rc"
}

run_bench() {
  local b rc
  for b in ${BENCHES:-benchmarks/gemm.py benchmarks/runtime.py}; do
    [[ -f "$b" ]] || { echo "bench: $b not found" | tee -a "$summary"; record_step "bench:$(basename "$b")" 1; continue; }
    # The whole log stays under $OUT (profiles are long); the console gets its tail.
    timeout "${BENCH_TIMEOUT:-300}" $PY "$b" --out "$OUT" ${BENCH_ARGS:-} > "$OUT/$(basename "$b" .py).log" 2>&1
    rc=$?
    tail -80 "$OUT/$(basename "$b" .py).log"
    record_step "bench:$(basename "$b" .py)" "$rc"
  done
}

# --------------------------------------------------------------------------------------------------------- main
setup_env() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  cd "$ROOT"
  OUT="${OUT:-$ROOT/out}"
  mkdir -p "$OUT"
  B="${AOTIRT_BUNDLE_DIR:-$ROOT/gpu_bundle}"
  # Filters and repeats are this script's to place: gtest would also read them from the environment.
  CC_FILTER="${GTEST_FILTER:-}"; CC_REPEAT="${GTEST_REPEAT:-}"
  unset GTEST_FILTER GTEST_REPEAT
  export LD_LIBRARY_PATH="$B/lib:${LD_LIBRARY_PATH:-}"
  export PYTHONPATH="$B/python:$ROOT/tests/gpu:${PYTHONPATH:-}"
  export AOTIRT_SHIM_LIB="$B/lib/libaoti_cuda_shims.so"
  export AOTIRT_RUN="$B/bin/aotirt_run"
  export AOTIRT_BUNDLE="$B"
  export AOTIRT_GEMM_HOST_BENCH="$B/tools/gemm_host_bench"
  export AOTIRT_RUNTIME_CHURN="$B/tools/runtime_churn"
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
  # Extra Python packages carried as wheels in .whl/ (ExecuTorch 1.2.0, the release for the machine's torch 2.11,
  # and what it needs: tools/gpu/fetch_wheels.sh), installed per run into their own folder.
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
}

main() {
  setup_env
  if [[ ! -d "$B" ]]; then  # every suite needs the bundle: say so instead of N failures
    echo "run.sh: no GPU bundle at $B (build it with 'bash tools/gpu/bundle.sh' from a clean clone and carry" \
         "gpu_bundle, or set AOTIRT_BUNDLE_DIR)" >&2
    return 2
  fi
  SUITES=("$@"); [[ ${#SUITES[@]} -eq 0 ]] && SUITES=(all)
  summary="$OUT/summary.txt"; : > "$summary"
  [[ -n "${WHEEL_NOTE:-}" ]] && echo "$WHEEL_NOTE" | tee -a "$summary"
  [[ -n "${EXTRA_NOTE:-}" ]] && echo "$EXTRA_NOTE" | tee -a "$summary"
  echo "commit $(cat "$B/COMMIT" 2>/dev/null || echo "unknown (no $B/COMMIT)") on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd';')" | tee -a "$summary"
  [[ -n "$CC_FILTER$CC_REPEAT" ]] && echo "cc/tsan: GTEST_FILTER='$CC_FILTER' GTEST_REPEAT='$CC_REPEAT'" | tee -a "$summary"
  local s rc
  for s in "${SUITES[@]}"; do
    case "$s" in
      verify)  # C++ tests and memcheck beside the pytest suite (different resources: sanitizer CPU vs compiles)
        OUT="$OUT/cc" GTEST_FILTER="$CC_FILTER" GTEST_REPEAT="$CC_REPEAT" bash "$0" cc memcheck > "$OUT/verify_cc.txt" 2>&1 &
        local ccpid=$!
        run_py_tests
        wait $ccpid; rc=$?
        sed 's/^/  /' "$OUT/cc/summary.txt" >> "$summary"
        ((rc == 0)) || { SUITE_FAILURES+=("verify:cc+memcheck"); echo "verify cc+memcheck: FAILED (see verify_cc.txt)" | tee -a "$summary"; } ;;
      models) run_models ;;
      zoo) run_zoo ;;
      pack) PACK=1 ;;
      tests|all)
        run_cc_tests; run_memcheck; run_py_tests ;;&
      memcheck) run_memcheck ;;
      memcheck_py) run_memcheck_py ;;
      racecheck) run_racecheck ;;
      tsan) run_tsan ;;
      serving) run_serving ;;
      cc) run_cc_tests ;;
      py) run_py_tests ;;
      main|all) run_main ;;&
      bench|all) run_bench ;;
      tests|all|main) ;;
      *) echo "unknown suite '$s' (tests|verify|cc|memcheck|memcheck_py|racecheck|tsan|serving|py|bench|models|zoo|main|all|pack)" | tee -a "$summary"
         SUITE_FAILURES+=("$s") ;;
    esac
  done
  echo "---- summary" && cat "$summary"
  finish; rc=$?
  if [[ "${PACK:-0}" == 1 ]]; then  # everything under $OUT as one tarball (the device tool brings back few files)
    tar czf /tmp/aotirt_logs.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/aotirt_logs.tgz "$OUT/logs.tgz"
  fi
  return $rc
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then main "$@"; exit $?; fi
