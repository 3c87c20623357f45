"""aotirt_run's command line: usage errors exit 2 with the reason; unusable packages exit 1 naming the problem."""
import os
import subprocess

RUN = os.environ["AOTIRT_RUN"]


def run(*args):
    p = subprocess.run([RUN, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def test_missing_flags_and_bad_values_are_usage_errors():
    for args, why in [((), "--package is required"), (("--package", "m.pt2"), "--inputs is required"),
                      (("--package", "m.pt2", "--inputs", "i", "--iters", "abc"), "--iters needs a non-negative"),
                      (("--package", "m.pt2", "--inputs", "i", "--device", "-1"), "--device needs a non-negative"),
                      (("--package", "m.pt2", "--inputs", "i", "--bogus"), "unknown argument '--bogus'"),
                      (("--package",), "--package needs a value")]:
        rc, out = run(*args)
        assert rc == 2, (args, out)
        assert why in out and "usage: aotirt_run" in out, (args, out)


def test_unusable_packages_exit_1_with_the_reason(tmp_path):
    rc, out = run("--package", str(tmp_path / "nope.pt2"), "--inputs", "x")
    assert rc == 1 and "cannot open package" in out, out
    not_zip = tmp_path / "not_a_zip.pt2"
    not_zip.write_text("hello")
    rc, out = run("--package", str(not_zip), "--inputs", "x")
    assert rc == 1 and "not a readable zip archive" in out, out
