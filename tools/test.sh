#!/usr/bin/env bash
# The whole test suite: setup (idempotent), `bazel test //...`, then one closing line "N passed, M failed, K skipped"
# counted over every test case (gtest and pytest JUnit XML). GPU-tagged tests skip with a reason without a GPU.
# Extra arguments go to `bazel test` (flags also to `bazel info`, so the test logs are read from the same config;
# test-only flags, which `bazel info` refuses, fall back to the default config's test logs).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Old checkouts: Bazel no longer makes the default-prefix execroot link bazel-<folder> (.bazelrc: --symlink_prefix)
# nor removes it; `//...` walks into it when it points at another output base. bazel-main, -bin, -out and -testlogs
# are listed in .bazelignore and stay.
old_link="bazel-$(basename "$ROOT")"
if [[ -L "$old_link" ]] && ! grep -qxF "$old_link" .bazelignore; then rm -f "$old_link"; fi
bash tools/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
bazel test //... --test_output=errors "$@" 2>&1 | tee /tmp/aotirt_bazel_test.log
rc=${PIPESTATUS[0]}
FLAGS=()
for a in "$@"; do [[ "$a" == -* ]] && FLAGS+=("$a"); done
# The test logs of this output base and config (not a bazel-testlogs link, whose name depends on the folder).
TESTLOGS="$(bazel info "${FLAGS[@]}" bazel-testlogs 2>/dev/null)" || TESTLOGS="$(bazel info bazel-testlogs 2>/dev/null)" || TESTLOGS=""
# Only the test targets that exist now are counted (a renamed target's old test.xml stays in a reused output base).
LABELS="$(mktemp)"
bazel query 'tests(//...)' --output=label 2>/dev/null > "$LABELS" || : > "$LABELS"
if [[ -s "$LABELS" ]]; then
  .venv/bin/python tools/count_tests.py "$TESTLOGS" "$rc" "$LABELS"
else
  .venv/bin/python tools/count_tests.py "$TESTLOGS" "$rc"
fi
count_rc=$?
rm -f "$LABELS"
bazel shutdown >/dev/null 2>&1 || true
exit $count_rc
