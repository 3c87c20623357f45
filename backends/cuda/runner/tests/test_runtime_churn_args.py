"""runtime_churn's command line without a GPU: usage errors exit 2 with the usage line, unreadable tensor files exit 2
naming the file, and an unusable package fails its baseline cycle with exit 1 and the reason."""
import os
import subprocess

import numpy as np

from aotirt import tensorfile

CHURN = os.environ["AOTIRT_RUNTIME_CHURN"]


def run(*args):
    p = subprocess.run([CHURN, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def test_usage_errors_exit_2():
    for args, why in [((), "usage: runtime_churn"), (("--cycles", "0", "a:b:c"), "--cycles needs a positive integer"),
                      (("--threads", "2x", "a:b:c"), "--threads needs a positive integer, got '2x'"),
                      (("--rtol", "-1", "a:b:c"), "--rtol needs a non-negative number"),
                      (("--cycles",), "--cycles needs a value"),
                      (("pkg.pt2",), "expected PKG:INPUTS:EXPECTED, got 'pkg.pt2'")]:
        rc, out = run(*args)
        assert rc == 2, (args, out)
        assert why in out, (args, out)


def test_unreadable_tensor_files_exit_2(tmp_path):
    rc, out = run(f"{tmp_path}/m.pt2:{tmp_path}/missing.safetensors:{tmp_path}/missing.safetensors")
    assert rc == 2 and "missing.safetensors" in out, out


def test_an_unusable_package_fails_its_baseline_cycle(tmp_path):
    ins, outs = str(tmp_path / "in.safetensors"), str(tmp_path / "out.safetensors")
    tensorfile.save(ins, [np.ones((2, 3), np.float32)])
    tensorfile.save(outs, [np.ones((2, 3), np.float32)])
    rc, out = run("--cycles", "1", f"{tmp_path}/nope.pt2:{ins}:{outs}")
    assert rc == 1, out
    assert "baseline cycle of" in out and "cannot open package" in out, out
