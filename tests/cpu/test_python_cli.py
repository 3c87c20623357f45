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
    (("bogus",), "unknown command 'bogus'; valid: \\['lower', 'run', 'bench', 'doctor'\\]"),
    (("run",), "run needs --package and --inputs"),
    (("run", "--package=m.pt2"), "run needs --inputs"),
    (("doctor", "extra"), "unexpected arguments \\['extra'\\]"),
    (("run", "--iters=0"), "flag --iters=0: 0 is not a positive integer"),
    (("run", "--warmup=-1"), "flag --warmup=-1"),
    (("run", "--no_such_flag=1"), "Unknown command line flag 'no_such_flag'"),
    (("lower",), "lower needs --model and --package"),
    (("lower", "--model=aotirt.demo:siglip_like"), "lower needs --package"),
    (("lower", "--model=m:f", "--package=out.zip"), "--package='out.zip' must end with .pt2"),
    (("lower", "--device=-1"), "flag --device=-1"),
    (("bench",), "bench needs --package"),
    (("bench", "--iters=0"), "flag --iters=0"),
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


@pytest.mark.parametrize("flag,match", [
    ("--max_autotune_gemm_backends=CUTLASS", r"\['CUTLASS'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ("--max_autotune=maybe", r"--max_autotune='maybe' is not valid; valid: \['ON', 'OFF'\]"),
    ("--float32_matmul_precision=medium", r"valid: \['highest', 'high'\]"),
    ("--platform=macos", r"valid: \['linux', 'windows'\]"),
    ("--attention_backend=FLASH", r"attention_backend='FLASH' is not valid; valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ("--coordinate_descent_tuning=yes", r"--coordinate_descent_tuning='yes' is not valid; valid: \['ON', 'OFF'\]"),
])
def test_lower_spec_flag_errors_exit_2(tmp_path, flag, match):
    import re
    rc, out = _cli("lower", "--model=aotirt.demo:siglip_like", f"--package={tmp_path}/m.pt2", flag)
    assert rc == 2 and re.search(match, out), out


@pytest.mark.parametrize("argv,attention,conv,cdt", [
    ([], None, None, None), (["--attention_backend=cudnn"], "CUDNN", None, None),
    (["--attention_backend= Math"], "MATH", None, None),
    (["--attention_backend=triton,cudnn", "--max_autotune_conv_backends=aten"], "CUDNN,TRITON", "ATEN", None),
    (["--coordinate_descent_tuning=off"], None, None, False), (["--coordinate_descent_tuning=ON"], None, None, True)])
def test_lower_spec_flags_become_compile_options(argv, attention, conv, cdt):
    from aotirt import cli
    try:
        cli.FLAGS(["aotirt", "--max_autotune_gemm_backends=triton,aten", "--target=cuda", *argv])
        opts = cli.compile_options_from_flags()
    finally:
        cli.FLAGS.unparse_flags()
    # a flag not given stays None: the platform's default (specs.PLATFORM_DEFAULTS)
    assert opts == aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", target="cuda",
                                         attention_backend=attention, max_autotune_conv_backends=conv,
                                         coordinate_descent_tuning=cdt)


@pytest.mark.parametrize("flags,match", [
    (("--platform=windows", "--max_autotune_gemm_backends=aten"), "cannot lower for windows_cuda"),
    (("--platform=windows", "--max_autotune=OFF"), "max_autotune=OFF makes Inductor call cuBLAS"),
    (("--target=rocm", "--max_autotune_gemm_backends=triton,aten"), "cannot lower for rocm"),
    (("--platform=windows", "--attention_backend=cudnn"), "windows_cuda: attention_backend='CUDNN'"),
    (("--target=rocm", "--attention_backend=CUDNN"), "use attention_backend='MATH'"),
])
def test_lower_platform_refusals_exit_2(tmp_path, flags, match):
    rc, out = _cli("lower", "--model=aotirt.demo:siglip_like", f"--package={tmp_path}/m.pt2", *flags)
    assert rc == 2 and match in out, out


@pytest.mark.parametrize("model,match", [
    ("nosuch_module_xyz:f", "cannot import 'nosuch_module_xyz'"),
    ("aotirt.demo:no_such_factory", "has no attribute 'no_such_factory'"),
    ("aotirt.demo", "must be pkg.module:factory"),
])
def test_lower_bad_model_exit_2(tmp_path, model, match):
    rc, out = _cli("lower", f"--model={model}", f"--package={tmp_path}/m.pt2")
    assert rc == 2 and match in out, out


def test_lower_and_bench_refuse_clearly_without_a_gpu(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc, out = _cli("lower", "--model=aotirt.demo:siglip_like", f"--package={tmp_path}/m.pt2")
    assert rc == 2 and "aotirt lower: error: lower needs a GPU" in out, out
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"PK")
    rc, out = _cli("bench", f"--package={pkg}")
    assert rc == 2 and "aotirt bench: error: bench needs a GPU" in out, out


def test_bench_missing_package_exits_2(tmp_path):
    rc, out = _cli("bench", f"--package={tmp_path}/nope.pt2")
    assert rc == 2 and "no such file" in out, out


def test_doctor_prints_the_platform_support_table_and_cublaslt():
    rc, out = _cli("doctor")
    assert "platform support (shim manifest" in out, out
    for key in ("linux_cuda", "windows_cuda", "rocm"):
        assert key in out
    assert "aoti_torch_cuda_mm_out: linux_cuda" in out
    assert "cuBLASLt would be found: " in out and "executorch: " in out
