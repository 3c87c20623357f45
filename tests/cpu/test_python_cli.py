"""`python -m aotirt`: usage and flag errors, error exit codes, doctor."""
import os
import subprocess
import sys

import numpy as np
import pytest

import aotirt
from aotirt import tensorfile

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(aotirt.__file__)))


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR] + [p for p in sys.path if p]))
    res = subprocess.run([sys.executable, "-m", "aotirt", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    return res.returncode, res.stdout + res.stderr


@pytest.mark.parametrize("args,match", [
    ((), "missing command"),
    (("bogus",), "unknown command 'bogus'; valid: \\['run', 'doctor'\\]"),
    (("run",), "run needs --package and --inputs"),
    (("run", "--package=m.pt2"), "run needs --inputs"),
    (("doctor", "extra"), "unexpected arguments \\['extra'\\]"),
    (("run", "--iters=0"), "flag --iters=0: 0 is not a positive integer"),
    (("run", "--warmup=-1"), "flag --warmup=-1"),
    (("run", "--no_such_flag=1"), "Unknown command line flag 'no_such_flag'"),
])
def test_usage_errors_exit_1(args, match):
    import re
    rc, out = _cli(*args)
    assert rc == 1, out
    assert re.search(match, out), out


def test_run_missing_package_exits_2(tmp_path):
    rc, out = _cli("run", f"--package={tmp_path}/nope.pt2", f"--inputs={tmp_path}/in.safetensors")
    assert rc == 2, out
    assert "aotirt run: error: --package" in out and "nope.pt2" in out and "no such file" in out


def test_run_corrupt_inputs_exit_2(tmp_path):
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"PK")
    bad = tmp_path / "in.safetensors"
    bad.write_bytes(b"\x01\x02")
    rc, out = _cli("run", f"--package={pkg}", f"--inputs={bad}")
    assert rc == 2 and "too short for a safetensors file" in out, out


def test_run_inputs_must_be_a_list(tmp_path):
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"PK")
    named = tmp_path / "in.safetensors"
    tensorfile.save(str(named), {"x": np.zeros(2, np.float32)})
    rc, out = _cli("run", f"--package={pkg}", f"--inputs={named}")
    assert rc == 2 and "expected tensors named ['0']" in out, out


def test_doctor_reports_and_exit_code_matches_problems():
    rc, out = _cli("doctor")
    for line in ("python: ", "aotirt: " + aotirt.__version__, "torch: ", "CUDA driver: ", "aotirt._C: ",
                 "cuBLASLt search: "):
        assert line in out, out
    assert ("doctor: 0 problem(s)" in out) == (rc == 0), out
    assert rc in (0, 1)
