"""The repo's tooling, checked cheaply (issue 15): no build, no GPU, no real Bazel.

- .bazelrc puts the convenience links under one fixed prefix that .bazelignore lists (a checkout in a folder not
  named main no longer has `//...` walk into its `bazel-<folder>` execroot link); scripts find outputs through
  `bazel info`, and the GPU bundle's builds make no links at all.
- .ci/run runs the README's two commands, the test suite first, and fails when either fails; the test suite's
  closing line stays the last test-count line.
- tools/gpu/run.sh never passes a suite that tested nothing and ends in FAILED with a non-zero status when anything
  failed (fake bundles: shell scripts that print gtest summaries, a fake compute-sanitizer).
- tools/gpu/bundle.sh refuses to write a bundle without GPU test binaries and records what it built (fake `bazel`).
- tools/count_tests.py counts JUnit XML and fails on nothing to count.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest



def _checkout():
    """The checkout's root: under Bazel, where README.md's runfile link points (the scripts are not exported from
    the root package, so they are read from the checkout itself); run by hand, three folders up from here."""
    for var in ("TEST_SRCDIR", "RUNFILES_DIR"):
        readme = os.path.join(os.environ.get(var, ""), "aotirt", "README.md")
        if os.environ.get(var) and os.path.exists(readme):
            return os.path.dirname(os.path.realpath(readme))
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


ROOT = _checkout()
COUNT_LINE = re.compile(r"^\d+ passed, \d+ failed(, \d+ skipped)?$")


def src(rel):
    return os.path.join(ROOT, rel)


def read(rel):
    with open(src(rel)) as f:
        return f.read()


def write_exe(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text).lstrip())
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def tree_with(tmp_path, *rels):
    """A scratch checkout holding copies of the given files (scripts cd to their own root and write there)."""
    root = tmp_path / "checkout"
    for rel in rels:
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src(rel), dst)
    return root


def bash(args, cwd, env=None, **kw):
    full = dict(os.environ)
    for k in ("GTEST_FILTER", "GTEST_REPEAT", "TSAN_OPTIONS", "BUNDLE_TSAN", "AOTIRT_GPU_TEST_QUERY"):
        full.pop(k, None)
    full.update(env or {})
    return subprocess.run(["bash"] + args, cwd=cwd, env=full, capture_output=True, text=True, timeout=120, **kw)


def rc_lines(path):
    lines = []
    for line in open(src(path)):
        line = line.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


# ------------------------------------------------------------------------------------------- .bazelrc, .bazelignore

def test_symlink_prefix_is_fixed_and_listed_in_bazelignore():
    prefixes = [m.group(1) for line in rc_lines(".bazelrc")
                for m in [re.match(r"^build\s+--symlink_prefix=(\S+)$", line)] if m]
    assert len(prefixes) == 1, f"want exactly one plain `build --symlink_prefix=...` in .bazelrc, got {prefixes}"
    prefix = prefixes[0]
    # A folder prefix: every link (bin, out, testlogs and the execroot link named after the checkout's folder) lands
    # in one folder whose name does not depend on the checkout's.
    assert prefix.endswith("/") and prefix.strip("/") and not prefix.startswith("bazel-"), prefix
    ignored = [l.strip() for l in read(".bazelignore").splitlines() if l.strip()]
    assert prefix.strip("/").split("/")[0] in ignored, (prefix, ignored)
    # Old checkouts keep their default-named links ignored; Bazel 4.2.3 also keeps a top-level bazel-out link.
    for old in ("bazel-main", "bazel-bin", "bazel-out", "bazel-testlogs"):
        assert old in ignored, old
    assert "/" + prefix.strip("/") + "/" in read(".gitignore").splitlines(), "git ignores the links' folder"


def test_tsan_config_instruments_compile_and_link():
    lines = rc_lines(".bazelrc")
    tsan = " ".join(l for l in lines if l.startswith("build:tsan "))
    assert "--copt=-fsanitize=thread" in tsan and "--linkopt=-fsanitize=thread" in tsan, tsan


def test_scripts_find_outputs_through_bazel_info():
    for rel in (".ci/run", "tools/test.sh", "tools/main.sh", "tools/gpu/bundle.sh", "tools/gpu/run.sh"):
        for n, line in enumerate(read(rel).splitlines(), 1):
            code = line.split("#", 1)[0]
            for link in re.findall(r"bazel-(?:bin|testlogs|out|genfiles)\b", code):
                assert re.search(r"\binfo\b", code), f"{rel}:{n} reads the `{link}` link by name: {line.strip()}"
            assert "/bazel-" not in code, f"{rel}:{n}: a path through a bazel-* link: {line.strip()}"


# ------------------------------------------------------------------------------------------------------ .ci/run

def readme_commands():
    text = read("README.md")
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [l.split("#", 1)[0].strip() for l in block.splitlines() if l.split("#", 1)[0].strip()]


def test_readme_commands_are_the_two_ci_runs():
    cmds = readme_commands()
    assert sorted(cmds) == ["bash tools/main.sh", "bash tools/test.sh"], cmds
    ci = "\n".join(rc_lines(".ci/run"))
    assert "exec " not in ci, "an exec would end .ci/run after the first command"
    i, j = ci.find("bash tools/test.sh"), ci.find("bash tools/main.sh")
    assert 0 <= i < j, "the test suite runs first, then the main job"


@pytest.mark.parametrize("test_rc,main_rc", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_ci_runs_both_in_order_and_fails_when_either_fails(tmp_path, test_rc, main_rc):
    root = tree_with(tmp_path, ".ci/run")
    order = tmp_path / "order"
    write_exe(str(root / "tools/test.sh"), f"""
        echo test >> {order}
        echo "12 passed, {test_rc} failed, 3 skipped"
        exit {test_rc}
        """)
    write_exe(str(root / "tools/main.sh"), f"""
        echo main >> {order}
        echo "INFO: Build completed successfully, 7 total actions"
        exit {main_rc}
        """)
    r = bash([str(root / ".ci/run")], cwd=str(tmp_path))
    assert order.read_text().split() == ["test", "main"], r.stdout
    assert (r.returncode == 0) == (test_rc == 0 and main_rc == 0), (r.returncode, r.stdout)
    counts = [l for l in r.stdout.splitlines() if COUNT_LINE.match(l)]
    assert counts == [f"12 passed, {test_rc} failed, 3 skipped"], r.stdout


def test_main_job_prints_no_test_count_line():
    # .ci/run prints the main job after the test suite: its text must not look like the closing line.
    for line in read("tools/main.sh").splitlines():
        assert not re.search(r"\d+ passed, \d+ failed", line), line


# ------------------------------------------------------------------------------------------------ count_tests.py

def test_count_tests_counts_and_refuses_nothing(tmp_path):
    logs = tmp_path / "testlogs"
    logs.mkdir()
    r = subprocess.run([sys.executable, src("tools/count_tests.py"), str(logs), "0"], capture_output=True, text=True)
    assert r.returncode != 0 and r.stdout.splitlines()[-1] == "0 passed, 1 failed, 0 skipped", r.stdout
    (logs / "pkg" / "t").mkdir(parents=True)
    (logs / "pkg" / "t" / "test.xml").write_text(
        '<testsuites><testsuite tests="3"><testcase name="a"/><testcase name="b"/>'
        '<testcase name="c"><skipped message="no GPU"/></testcase></testsuite></testsuites>')
    r = subprocess.run([sys.executable, src("tools/count_tests.py"), str(logs), "0"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "2 passed, 0 failed, 1 skipped", r.stdout
    r = subprocess.run([sys.executable, src("tools/count_tests.py"), str(logs), "3"], capture_output=True, text=True)
    assert r.returncode != 0 and r.stdout.splitlines()[-1] == "2 passed, 1 failed, 1 skipped", r.stdout



def test_count_tests_counts_only_the_listed_targets(tmp_path):
    """A renamed or deleted target's test.xml stays in a reused output base: with the label list (test.sh passes
    `bazel query 'tests(//...)'`) only current targets count, shards included."""
    logs = tmp_path / "testlogs"
    for rel in ["pkg/now/test.xml", "pkg/sharded/shard_1_of_2/test.xml", "pkg/sharded/shard_2_of_2/test.xml",
                "pkg/old_name/test.xml"]:
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        (logs / rel).write_text('<testsuites><testsuite tests="1"><testcase name="a"/></testsuite></testsuites>')
    labels = tmp_path / "labels.txt"
    labels.write_text("//pkg:now\n//pkg:sharded\n")
    r = subprocess.run([sys.executable, src("tools/count_tests.py"), str(logs), "0", str(labels)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "3 passed, 0 failed, 0 skipped", r.stdout
    r = subprocess.run([sys.executable, src("tools/count_tests.py"), str(logs), "0"], capture_output=True, text=True)
    assert r.stdout.splitlines()[-1] == "4 passed, 0 failed, 0 skipped", r.stdout  # without the list: everything


# ------------------------------------------------------------------------------------------------- tools/gpu/run.sh

def gtest_binary(path, ran, passed, skipped=0, rc=0, log_args=None, repeat_aware=False):
    """A fake gtest binary: prints a --gtest_brief=1 summary (once per --gtest_repeat iteration if repeat_aware)."""
    record = f'echo "args: $*" >> {log_args}\necho "env GTEST_FILTER=${{GTEST_FILTER:-}} TSAN_OPTIONS=${{TSAN_OPTIONS:-}}" >> {log_args}\n' \
        if log_args else ""
    loop = 'n=1; for a in "$@"; do case "$a" in --gtest_repeat=*) n="${a#*=}";; esac; done\n' if repeat_aware else "n=1\n"
    write_exe(path, f"""#!/bin/sh
{record}{loop}i=0
while [ $i -lt $n ]; do
  echo "[==========] {ran} tests from 1 test suite ran. (1 ms total)"
  echo "[  PASSED  ] {passed} tests."
  [ {skipped} -gt 0 ] && echo "[  SKIPPED ] {skipped} tests, listed below:"
  i=$((i+1))
done
exit {rc}
""")


def fake_bundle(tmp_path, tests):
    b = tmp_path / "bundle"
    (b / "bin").mkdir(parents=True)
    write_exe(str(b / "bin/aotirt_run"), "#!/bin/sh\nexit 0\n")
    for name, kw in tests.items():
        gtest_binary(str(b / "bin" / name), **kw)
    return b


def run_sh(tmp_path, bundle, *suites, env=None):
    root = tmp_path / "checkout"
    if not (root / "tools/gpu/run.sh").exists():
        tree_with(tmp_path, "tools/gpu/run.sh", "tools/gpu/tsan_reports.py")
    out = tmp_path / "out"
    e = {"AOTIRT_BUNDLE_DIR": str(bundle), "OUT": str(out), "PYTHON": sys.executable}
    e.update(env or {})
    r = bash([str(root / "tools/gpu/run.sh")] + list(suites), cwd=str(root), env=e)
    return r, r.stdout.strip().splitlines()


def test_run_without_a_bundle_says_so_and_runs_nothing(tmp_path):
    r, lines = run_sh(tmp_path, tmp_path / "no_bundle", "py")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no GPU bundle at" in r.stderr and "tools/gpu/bundle.sh" in r.stderr, r.stderr
    assert not (tmp_path / "out/summary.txt").exists(), "nothing ran, so no summary"


def test_run_fails_a_suite_that_ran_zero_tests(tmp_path):
    b = fake_bundle(tmp_path, {"shims_empty_test": dict(ran=0, passed=0)})
    r, lines = run_sh(tmp_path, b, "cc")
    assert r.returncode != 0, r.stdout
    assert lines[-1].startswith("run.sh: FAILED") and "cc" in lines[-1], r.stdout
    assert any(l.startswith("cc: 0 passed") and "FAILED" in l for l in lines), r.stdout


def test_run_fails_when_every_case_skipped(tmp_path):
    b = fake_bundle(tmp_path, {"shims_skip_test": dict(ran=4, passed=0, skipped=4)})
    r, lines = run_sh(tmp_path, b, "cc")
    assert r.returncode != 0 and "ran 0 tests" in r.stdout and lines[-1].startswith("run.sh: FAILED"), r.stdout


def test_run_fails_an_empty_bundle_and_a_crash(tmp_path):
    b = fake_bundle(tmp_path, {})
    r, lines = run_sh(tmp_path, b, "cc")
    assert r.returncode != 0 and lines[-1].startswith("run.sh: FAILED"), r.stdout
    write_exe(str(b / "bin/shims_crash_test"), "#!/bin/sh\necho Segmentation fault\nexit 139\n")
    gtest_binary(str(b / "bin/shims_ok_test"), ran=3, passed=3)
    r, lines = run_sh(tmp_path, b, "cc")
    assert r.returncode != 0 and "FAILED: cc shims_crash_test (exit 139)" in r.stdout, r.stdout
    assert any(l.startswith("cc: 3 passed, 1 failed") for l in lines), r.stdout


def test_run_passes_filter_and_repeat_as_flags_only_to_the_cc_tests(tmp_path):
    args = tmp_path / "args"
    b = fake_bundle(tmp_path, {"shims_a_test": dict(ran=3, passed=2, skipped=1, log_args=args, repeat_aware=True)})
    r, lines = run_sh(tmp_path, b, "cc", env={"GTEST_REPEAT": "4", "GTEST_FILTER": "Gemm*"})
    assert r.returncode == 0, r.stdout
    assert lines[-1].startswith("run.sh: ok"), r.stdout
    assert "cc: 8 passed, 0 failed, 4 skipped (1 binaries)" in r.stdout, r.stdout  # 4 iterations summed
    logged = args.read_text()
    assert "--gtest_filter=Gemm*" in logged and "--gtest_repeat=4" in logged, logged
    assert "env GTEST_FILTER= " in logged, "gtest reads GTEST_FILTER from the environment: run.sh must not pass it on"


def test_run_counts_failed_cases_and_lists_mismatch(tmp_path):
    b = fake_bundle(tmp_path, {"shims_f_test": dict(ran=5, passed=3, rc=1)})
    r, lines = run_sh(tmp_path, b, "cc")
    assert r.returncode != 0 and "cc: 3 passed, 2 failed" in r.stdout, r.stdout
    b2 = tmp_path / "b2"
    shutil.copytree(b, b2)
    gtest_binary(str(b2 / "bin/shims_f_test"), ran=5, passed=5)
    (b2 / "TESTS.txt").write_text("bin/shims_f_test //shims:f_test\nbin/shims_g_test //shims:g_test\n")
    r, lines = run_sh(tmp_path, b2, "cc")
    assert r.returncode != 0 and "TESTS.txt lists 2 binaries in bin/, the bundle has 1" in r.stdout, r.stdout


def test_run_tsan_suite(tmp_path):
    args = tmp_path / "args"
    b = fake_bundle(tmp_path, {"shims_ok_test": dict(ran=1, passed=1)})
    r, lines = run_sh(tmp_path, b, "tsan")
    assert r.returncode != 0 and "BUNDLE_TSAN=1" in r.stdout and lines[-1].startswith("run.sh: FAILED"), r.stdout
    gtest_binary(str(b / "tsan/shims_gemm_test_gemm_threads_gpu"), ran=2, passed=2, log_args=args)
    r, lines = run_sh(tmp_path, b, "tsan", env={"GTEST_REPEAT": "2"})
    assert r.returncode == 0 and "tsan: 2 passed, 0 failed" in r.stdout, r.stdout
    logged = args.read_text()
    assert "--gtest_repeat=2" in logged and "TSAN_OPTIONS=halt_on_error=0" in logged, logged
    # A TSan report makes the binary exit 66 with every case passed: still a failure.
    gtest_binary(str(b / "tsan/shims_gemm_test_gemm_threads_gpu"), ran=2, passed=2, rc=66)
    r, lines = run_sh(tmp_path, b, "tsan")
    assert r.returncode != 0 and "(exit 66)" in r.stdout, r.stdout
    supp = (tmp_path / "out/tsan.supp").read_text().split()
    assert supp == ["called_from_lib:libcuda.so.1", "called_from_lib:libcublasLt.so.13"], supp
    run_sh(tmp_path, b, "tsan", env={"TSAN_IGNORED_LIBS": "libcuda.so.1"})
    assert (tmp_path / "out/tsan.supp").read_text().split() == ["called_from_lib:libcuda.so.1"]


TSAN_LOG = "tests/cpu/tooling/data/tsan_libcublaslt_exit_unlock.log"  # the report of the H200 run at 9bc4bc0


def tsan_reports(tmp_path, text):
    log = tmp_path / "t.log"
    log.write_text(text)
    return subprocess.run([sys.executable, src("tools/gpu/tsan_reports.py"), str(log)], capture_output=True,
                          text=True)


def test_tsan_reports_knows_only_the_exact_libcublaslt_exit_unlock(tmp_path):
    real = open(src(TSAN_LOG)).read()
    r = tsan_reports(tmp_path, real)
    assert r.returncode == 0 and "1 known (libcublasLt-exit-unlock x1), 0 not known" in r.stdout, r.stdout
    # the same unlock from an exit handler of ours (its frame between the two): a report
    ours = real.replace("    #1 cxa_at_exit_wrapper", "    #1 aotirt::Cleanup() shims/x.cc:3 (libaoti_cuda_shims.so+0x10)\n"
                        "    #2 cxa_at_exit_wrapper")
    r = tsan_reports(tmp_path, ours)
    assert r.returncode == 1 and "0 known" in r.stdout, r.stdout
    # a mutex created by our code: a report
    r = tsan_reports(tmp_path, real.replace("#1 <null> <null> (libcublasLt.so.13+0x71c81f1)",
                                            "#1 aotirt::Init() shims/x.cc:9 (libaoti_cuda_shims.so+0x20)"))
    assert r.returncode == 1, r.stdout
    # the known one beside a data race: the race counts
    race = ("==================\nWARNING: ThreadSanitizer: data race (pid=7)\n  Write of size 8 at 0x7b04 by thread T2:\n"
            "    #0 aotirt::gemm::Run shims/gemm/executor.cc:208 (libaoti_cuda_shims.so+0xe95a4)\n\n"
            "SUMMARY: ThreadSanitizer: data race shims/gemm/executor.cc:208 in aotirt::gemm::Run\n==================\n")
    r = tsan_reports(tmp_path, real + race)
    assert r.returncode == 1 and "2 TSan report(s): 1 known" in r.stdout, r.stdout
    # no report at all (exit 66 for another reason): not a pass
    assert tsan_reports(tmp_path, "[  PASSED  ] 2 tests.\n").returncode == 2


def test_run_tsan_counts_a_binary_whose_only_report_is_the_known_one(tmp_path):
    b = fake_bundle(tmp_path, {"shims_ok_test": dict(ran=1, passed=1)})
    log = src(TSAN_LOG)
    write_exe(str(b / "tsan/shims_gemm_test_gemm_threads_gpu"), f"#!/bin/sh\ncat {log}\nexit 66\n")
    r, lines = run_sh(tmp_path, b, "tsan")
    assert r.returncode == 0 and "tsan: 2 passed, 0 failed" in r.stdout, r.stdout
    assert "exit 66 counted as 0: 1 TSan report(s): 1 known" in (tmp_path / "out/summary.txt").read_text()
    # with libcublasLt not ignored, nothing is excused
    r, lines = run_sh(tmp_path, b, "tsan", env={"TSAN_IGNORED_LIBS": "libcuda.so.1"})
    assert r.returncode != 0 and "(exit 66)" in r.stdout, r.stdout


def test_run_sanitizer_suites(tmp_path):
    b = fake_bundle(tmp_path, {"shims_tests_test_shims_cuda_gpu": dict(ran=9, passed=9),
                               "shims_gemm_test_gemm_shims_gpu": dict(ran=3, passed=3)})
    fake = tmp_path / "fakebin"
    calls = tmp_path / "cs_calls"
    write_exe(str(fake / "compute-sanitizer"), f"""#!/bin/sh
echo "$*" >> {calls}
while [ $# -gt 0 ] && [ ! -x "$1" ]; do shift; done
"$@"; rc=$?
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
""")
    env = {"PATH": f"{fake}:/usr/bin:/bin"}
    r, lines = run_sh(tmp_path, b, "racecheck", "memcheck", env=env)
    assert r.returncode == 0, r.stdout
    assert "racecheck: 12 passed, 0 failed" in r.stdout and "memcheck: 12 passed, 0 failed" in r.stdout, r.stdout
    logged = calls.read_text()
    assert "--tool racecheck" in logged and "--tool memcheck" in logged, logged
    assert "--gtest_filter=CudaShims.*" in logged, logged
    # every binary ran nothing (a filter that matches nothing): the suite tested nothing
    gtest_binary(str(b / "bin/shims_tests_test_shims_cuda_gpu"), ran=0, passed=0)
    gtest_binary(str(b / "bin/shims_gemm_test_gemm_shims_gpu"), ran=0, passed=0)
    r, lines = run_sh(tmp_path, b, "racecheck", env=env)
    assert r.returncode != 0 and "racecheck: 0 passed, 0 failed" in r.stdout and "ran 0 tests" in r.stdout, r.stdout


def test_gtest_counts_on_fake_logs(tmp_path):
    log = tmp_path / "log"
    log.write_text(textwrap.dedent("""\
        Running main() from gtest_main.cc
        [  FAILED  ] GemmGpu.EmptyDims (3 ms)
        [==========] 27 tests from 2 test suites ran. (10 ms total)
        [  PASSED  ] 24 tests.
        [  SKIPPED ] 2 tests, listed below:
        Repeating all tests (iteration 2) . . .
        [==========] 27 tests from 2 test suites ran. (10 ms total)
        [  PASSED  ] 27 tests.
        ========= ERROR SUMMARY: 0 errors
        """))
    r = bash(["-c", f'source {src("tools/gpu/run.sh")}; gtest_counts {log}; gtest_counts {tmp_path}/missing'],
             cwd=str(tmp_path))
    assert r.stdout.split("\n")[:2] == ["54 51 2 1", "0 0 0 0"], r.stdout + r.stderr


def test_run_unknown_suite_fails(tmp_path):
    b = fake_bundle(tmp_path, {"shims_ok_test": dict(ran=1, passed=1)})
    r, lines = run_sh(tmp_path, b, "cc", "tset")
    assert r.returncode != 0 and "unknown suite 'tset'" in r.stdout, r.stdout


# ---------------------------------------------------------------------------------------------- tools/gpu/bundle.sh

def fake_bazel(tmp_path, labels, query_rc=0):
    """A `bazel` on PATH that logs its arguments; query prints LABELS; info bazel-bin points at a fake output tree
    holding every file bundle.sh copies."""
    fake = tmp_path / "fakebazel"
    calls = tmp_path / "bazel_calls"
    bin_dir = tmp_path / "outputs" / "bin"
    for rel in ["backends/cuda/libaoti_cuda_shims.so", "backends/cuda/libaotirt_runtime.so",
                "backends/cuda/aotirt_run", "_solib_k8/_U_cuda/libcudart.so.13", "shims/gemm/gemm_host_bench", "backends/cuda/runtime_churn",
                "backends/cuda/python/_C.so", "tools/wheel/aotirt-0.1-cp312-cp312-manylinux_2_34_x86_64.whl"] + \
            [l.lstrip("/").replace(":", "/") for l in labels]:
        p = bin_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x" * 1000)
        p.chmod(0o755)
    label_text = "\\n".join(labels)
    write_exe(str(fake / "bazel"), f"""#!/bin/bash
echo "$*" >> {calls}
for a in "$@"; do
  case "$a" in
    query) [ {query_rc} -eq 0 ] || {{ echo "ERROR: boom in query" >&2; exit {query_rc}; }}
           echo "Loading: 3 packages loaded" >&2; printf '{label_text}'; [ -n "{label_text}" ] && echo; exit 0 ;;
    build) exit 0 ;;
    info) echo "{bin_dir}"; exit 0 ;;
  esac
done
exit 2
""")
    return fake, calls


def bundle_tree(tmp_path):
    root = tree_with(tmp_path, "tools/gpu/bundle.sh")
    (root / "python/aotirt").mkdir(parents=True)
    (root / "python/aotirt/__init__.py").write_text("")
    (root / "shims").mkdir()
    (root / "shims/shim_manifest.tsv").write_text("name\n")
    (root / "gpu_bundle").mkdir()
    (root / "gpu_bundle/old_marker").write_text("the previous bundle")
    return root


def run_bundle(tmp_path, root, fake, env=None):
    e = {"PATH": f"{fake}:/usr/bin:/bin", "AOTIRT_RUNNER_PYTHON": sys.executable,
         "AOTIRT_GPU_OUTPUT_BASE": str(tmp_path / "ob"), "AOTIRT_GPU_TSAN_OUTPUT_BASE": str(tmp_path / "ob_tsan")}
    e.update(env or {})
    return bash([str(root / "tools/gpu/bundle.sh")], cwd=str(root), env=e)


def test_bundle_fails_without_gpu_test_binaries(tmp_path):
    root = bundle_tree(tmp_path)
    fake, calls = fake_bazel(tmp_path, [])
    r = run_bundle(tmp_path, root, fake)
    assert r.returncode != 0, r.stderr
    assert "[bundle] FAILED: no GPU test binaries found" in r.stderr, r.stderr
    assert not any(" build " in f" {c} " for c in calls.read_text().splitlines()), "nothing may be built"
    assert (root / "gpu_bundle/old_marker").exists(), "a failed bundle run leaves the previous bundle alone"


def test_bundle_fails_when_the_query_fails(tmp_path):
    root = bundle_tree(tmp_path)
    fake, calls = fake_bazel(tmp_path, ["//shims/tests:test_shims_cuda_gpu"], query_rc=7)
    r = run_bundle(tmp_path, root, fake)
    assert r.returncode != 0 and "bazel query for the GPU tests failed" in r.stderr and "boom" in r.stderr, r.stderr


def test_bundle_records_commit_and_tests_and_makes_no_links(tmp_path):
    labels = ["//shims/tests:test_shims_cuda_gpu", "//shims/gemm:test_gemm_shims_gpu"]
    root = bundle_tree(tmp_path)
    fake, calls = fake_bazel(tmp_path, labels)
    r = run_bundle(tmp_path, root, fake, env={"BUNDLE_TSAN": "1"})
    assert r.returncode == 0, r.stderr
    b = root / "gpu_bundle"
    assert not (b / "old_marker").exists()
    assert (b / "TESTS.txt").read_text().splitlines() == [
        "bin/shims_tests_test_shims_cuda_gpu //shims/tests:test_shims_cuda_gpu",
        "bin/shims_gemm_test_gemm_shims_gpu //shims/gemm:test_gemm_shims_gpu",
        "tsan/shims_tests_test_shims_cuda_gpu //shims/tests:test_shims_cuda_gpu",
        "tsan/shims_gemm_test_gemm_shims_gpu //shims/gemm:test_gemm_shims_gpu"]
    assert (b / "COMMIT").read_text().strip(), "COMMIT is written (unknown outside git)"
    info = (b / "BUNDLE.txt").read_text()
    assert "gpu test binaries: 2 in bin/, 2 in tsan/" in info, info
    builds = [c for c in calls.read_text().splitlines() if " build " in f" {c} "]
    assert len(builds) == 2 and all("--symlink_prefix=/" in c for c in builds), builds
    assert any("--config=tsan" in c and str(tmp_path / "ob_tsan") in c for c in builds), builds
    assert any("--config=gpu_runner" in c and f"--output_base={tmp_path / 'ob'} " in c for c in builds), builds
    # The carry limit is enforced.
    r = run_bundle(tmp_path, root, fake, env={"BUNDLE_MAX_MIB": "0"})
    assert r.returncode != 0 and "over the 0 MiB carry limit" in r.stderr, r.stderr


# ------------------------------------------------------------------------------------ tools/test.sh, tools/main.sh

def fake_project(tmp_path, test_rc=0):
    """A checkout with the real test.sh, main.sh and count_tests.py, a no-op setup.sh, the venv's Python and a fake
    `bazel`: test exits TEST_RC, info points at a test-log tree with one JUnit file, build succeeds."""
    root = tree_with(tmp_path, "tools/test.sh", "tools/main.sh", "tools/count_tests.py", ".bazelignore")
    write_exe(str(root / "tools/setup.sh"), "#!/bin/sh\nexit 0\n")
    (root / ".venv/bin").mkdir(parents=True)
    os.symlink(sys.executable, root / ".venv/bin/python")
    logs = tmp_path / "testlogs" / "shims" / "t"
    logs.mkdir(parents=True)
    (logs / "test.xml").write_text('<testsuites><testsuite><testcase name="a"/><testcase name="b">'
                                   '<skipped/></testcase></testsuite></testsuites>')
    calls = tmp_path / "bazel_calls"
    write_exe(str(tmp_path / "fakebazel/bazel"), f"""#!/bin/bash
echo "$*" >> {calls}
case "$1" in
  test) echo "INFO: Build completed, 1 test FAILED, 2 total actions" ; exit {test_rc} ;;
  build) exit 0 ;;
  info) case "${{@: -1}}" in bazel-testlogs) echo {tmp_path / "testlogs"} ;; bazel-bin) echo {tmp_path / "bin"} ;; esac ;;
esac
exit 0
""")
    # Links of an old checkout: the execroot link named after the folder goes, the ignored ones stay.
    os.symlink(tmp_path, root / "bazel-checkout")
    os.symlink(tmp_path, root / "bazel-bin")
    return root, {"PATH": f"{tmp_path / 'fakebazel'}:/usr/bin:/bin"}, calls


@pytest.mark.parametrize("test_rc", [0, 3])
def test_test_sh_ends_with_the_count_line(tmp_path, test_rc):
    root, env, calls = fake_project(tmp_path, test_rc)
    r = bash([str(root / "tools/test.sh")], cwd=str(tmp_path), env=env)
    lines = r.stdout.strip().splitlines()
    want = "1 passed, 0 failed, 1 skipped" if test_rc == 0 else "1 passed, 1 failed, 1 skipped"
    assert lines[-1] == want and (r.returncode == 0) == (test_rc == 0), r.stdout + r.stderr
    assert "info bazel-testlogs" in calls.read_text()
    assert not os.path.lexists(root / "bazel-checkout") and os.path.lexists(root / "bazel-bin")


def test_main_sh_reads_bazel_bin_from_bazel_info(tmp_path):
    root, env, calls = fake_project(tmp_path)
    r = bash([str(root / "tools/main.sh")], cwd=str(tmp_path), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"(= {tmp_path / 'bin'}/backends/cuda)" in r.stdout, r.stdout
    assert calls.read_text().splitlines()[:2] == ["build //...", "info bazel-bin"], calls.read_text()
    assert not os.path.lexists(root / "bazel-checkout") and os.path.lexists(root / "bazel-bin")


# ---------------------------------------------------------------------------------------- the manifest as the map

def test_shim_index_is_current_and_every_shim_has_a_test():
    """docs/SHIMS.md (tools/shim_index.py) maps every manifest line to its implementation and tests: it must match the
    tree, and no shim may be without a test that calls it."""
    r = subprocess.run([sys.executable, src("tools/shim_index.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
    text = read("docs/SHIMS.md")
    assert "**none**" not in text, [l for l in text.splitlines() if "**none**" in l]


def test_run_memcheck_py_suite_counts_pytest_and_fails_on_sanitizer_errors(tmp_path):
    """memcheck_py runs pytest under compute-sanitizer: the counts come from pytest's JUnit XML, and a sanitizer
    error (exit 99) fails the suite even when every test passed."""
    b = fake_bundle(tmp_path, {})
    fake = tmp_path / "fakebin"
    calls = tmp_path / "cs_calls"
    xml = ('<testsuites><testsuite tests="3" failures="0" errors="0" skipped="0"></testsuite></testsuites>')
    write_exe(str(fake / "compute-sanitizer"), f"""#!/bin/sh
echo "$* CASES=$AOTIRT_ATTENTION_CASES/$AOTIRT_CONV_CASES/$AOTIRT_INT4_CASES/$AOTIRT_EMBEDDING_BAG_CASES/$AOTIRT_HISTC_CASES/$AOTIRT_FFT_CASES" >> {calls}
for a in "$@"; do case "$a" in --junitxml=*) echo '{xml}' > "${{a#--junitxml=}}";; esac; done
echo "========= ERROR SUMMARY: ${{CS_ERRORS:-0}} errors"
[ "${{CS_ERRORS:-0}}" = 0 ] || exit 99
""")
    env = {"PATH": f"{fake}:/usr/bin:/bin", "MEMCHECK_PY_CASES": "5"}
    r, lines = run_sh(tmp_path, b, "memcheck_py", env=env)
    assert r.returncode == 0, r.stdout
    assert "memcheck_py: 3 passed, 0 failed, 0 skipped (exit 0, ERROR SUMMARY: 0 error" in r.stdout, r.stdout
    logged = calls.read_text()
    assert "--tool memcheck" in logged and "test_attention_shims.py" in logged and "CASES=5/5/5/5/5/5" in logged, logged
    assert all(f"test_{f}_shims.py" in logged for f in ("int4", "embedding_bag", "histc", "fft")), logged
    r, lines = run_sh(tmp_path, b, "memcheck_py", env={**env, "CS_ERRORS": "2"})
    assert r.returncode != 0 and "memcheck_py: 3 passed, 1 failed" in r.stdout and "FAILED" in r.stdout, r.stdout
