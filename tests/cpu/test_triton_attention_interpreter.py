"""The Triton attention kernel (attention_backend TRITON, aotirt.triton_attention) run on the CPU: Triton's
interpreter (TRITON_INTERPRET=1) executes the kernel's Python body on CPU tensors with numpy, so its masking, causal
bounds, GQA, layouts and every launch config are checked here against the float64 reference of torch's SDPA
semantics, before any GPU (tests/gpu/test_triton_attention_gpu.py runs the compiled kernel; bfloat16, long lengths
and the autotuner only there: the interpreter's numpy has no bfloat16).

The interpreter's triton is installed apart from the venv (tools/setup.sh: .venv/triton-interp), so nothing else in
the venv sees a triton; the cases run in subprocesses with it on PYTHONPATH."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TRITON_DIR = os.path.join(sys.prefix, "triton-interp")
WORKERS, CASES_EACH = 2, 100  # 200 cases (two CPUs on CI)


def _env():
    util = os.path.join(HERE, "..", "util")
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join([TRITON_DIR, util] + [p for p in sys.path if p])
    return env


@pytest.fixture(scope="module")
def interpreter():
    if not os.path.isdir(os.path.join(TRITON_DIR, "triton")):
        pytest.skip(f"no Triton for the interpreter at {TRITON_DIR}: run tools/setup.sh")
    return _env()


def test_random_cases_match_sdpa_semantics_under_the_interpreter(interpreter):
    script = os.path.join(HERE, "triton_interpreter_cases.py")
    procs = [subprocess.Popen([sys.executable, script, str(seed), str(CASES_EACH)], env=interpreter,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for seed in range(1, WORKERS + 1)]
    outs = [p.communicate(timeout=800)[0] for p in procs]
    report = "\n".join(o[-4000:] for o in outs)
    for p, out in zip(procs, outs):
        last = re.findall(r"cases (\d+) failed (\d+) configs (\d+)", out)
        assert last, f"a worker ended without its summary (exit {p.returncode}):\n{out[-4000:]}"
        cases, failed, configs = map(int, last[-1])
        assert cases == CASES_EACH and failed == 0 and p.returncode == 0, report
        assert configs >= 4, f"only {configs} launch configs ran"


def test_the_runner_refuses_to_run_without_the_interpreter():
    env = dict(_env(), TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, os.path.join(HERE, "triton_interpreter_cases.py"), "1", "1"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "TRITON_INTERPRET=1" in r.stderr


def test_inductor_sees_only_the_output_written_and_embeds_the_called_functions(interpreter):
    env = {k: v for k, v in interpreter.items() if k != "TRITON_INTERPRET"}  # compiled to TTIR, not interpreted
    r = subprocess.run([sys.executable, os.path.join(HERE, "triton_kernel_analysis.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-3000:] + r.stderr[-3000:]
