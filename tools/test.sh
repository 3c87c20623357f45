#!/usr/bin/env bash
# The whole test suite: setup (idempotent), `bazel test //...`, then one closing line "N passed, M failed, K skipped"
# counted over every test case (gtest and pytest JUnit XML). GPU-tagged tests skip with a reason without a GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash tools/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
bazel test //... --test_output=errors "$@" 2>&1 | tee /tmp/aotirt_bazel_test.log
rc=${PIPESTATUS[0]}
TESTLOGS="$(bazel info bazel-testlogs 2>/dev/null)"
.venv/bin/python tools/count_tests.py "$TESTLOGS" "$rc"
count_rc=$?
bazel shutdown >/dev/null 2>&1 || true
exit $count_rc
