"""GEMM shims end to end: models whose generated code calls aoti_torch_cuda_{mm,addmm,bmm}_out run on our runtime
(cuBLASLt underneath) and match eager, both with max_autotune_gemm_backends="ATEN" and with max_autotune off."""
import zipfile

import pytest

from conftest import HAVE_CUDA, TOL, compiled, requires_gpu

if HAVE_CUDA:
    import torch
    import torch.nn as nn

    class Gemms(nn.Module):
        """addmm with a bias row, addmm with a column, a plain mm and a bmm."""

        def __init__(self):
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(64, 128) / 8)
            self.b1 = nn.Parameter(torch.randn(128))
            self.col = nn.Parameter(torch.randn(32, 1))
            self.w2 = nn.Parameter(torch.randn(128, 96) / 11)
            self.w3 = nn.Parameter(torch.randn(96, 48) / 10)

        def forward(self, x, y, z):
            a = torch.addmm(self.b1, x, self.w1)        # bias row -> cuBLASLt bias epilogue
            c = torch.addmm(self.col, a, self.w2)       # column self -> copy + beta accumulate
            d = torch.mm(c, self.w3)
            e = torch.bmm(y, z)
            return d, e

    def make_inputs(dt):
        return (torch.randn(32, 64, device="cuda", dtype=dt), torch.randn(4, 16, 40, device="cuda", dtype=dt),
                torch.randn(4, 40, 24, device="cuda", dtype=dt))


def _wrapper_source(path):
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".wrapper.cpp"))
        return z.read(name).decode()


@requires_gpu
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
@pytest.mark.parametrize("variant", ["aten", "no_autotune"])
def test_gemm_model_calls_shims_and_matches_eager(variant, dtype_name):
    import aotirt
    dt = getattr(torch, dtype_name)
    opts = (aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="ATEN") if variant == "aten"
            else aotirt.CompileOptions(max_autotune=False))
    torch.manual_seed(0)
    model, path = compiled(f"gemms_{variant}_{dtype_name}", lambda: Gemms().to("cuda", dt).eval(),
                           make_inputs(dt), options=opts)
    src = _wrapper_source(path)
    assert src.count("aoti_torch_cuda_addmm_out(") >= 2, "expected two addmm calls (bias row and column)"
    assert "aoti_torch_cuda_mm_out(" in src
    assert "aoti_torch_cuda_bmm_out(" in src
    runner = aotirt.load(path)
    static = make_inputs(dt)
    for i in range(6):
        # Fresh tensors, then new data in the same buffers: repeated GEMM arguments hit the call memo (and, with
        # AOTIRT_GEMM_GRAPHS=1, one-call graphs: shims/gemm/replay.h) and must read the buffers' current data.
        inputs = make_inputs(dt)
        if i >= 2:
            for s_, x in zip(static, inputs):
                s_.copy_(x)
            inputs = static
        with torch.no_grad():
            want = model(*inputs)
        got = runner(*inputs)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, **TOL[dtype_name])


_NO_CUBLASLT_SCRIPT = r"""
import sys, torch, aotirt
from aotirt import errors
triton_pkg, gemm_pkg = sys.argv[1], sys.argv[2]
x = torch.randn(8, 96, device="cuda")
print("triton-only output", tuple(aotirt.load(triton_pkg)(x).shape))
r = aotirt.load(gemm_pkg)
try:
    r(torch.randn(32, 64, device="cuda"), torch.randn(4, 16, 40, device="cuda"), torch.randn(4, 40, 24, device="cuda"))
    print("GEMM RAN")
except errors.Error as e:
    print("GEMM ERROR:", e)
print("still alive", tuple(aotirt.load(triton_pkg)(x).shape))
"""


@requires_gpu
def test_no_cublaslt_triton_package_runs_gemm_package_names_the_library(tmp_path):
    import os
    import subprocess
    import sys

    import aotirt
    from test_runtime_gpu import build
    _, triton_pkg, _, _ = build("mlp", "float32")  # Triton GEMMs only: never needs cuBLASLt
    torch.manual_seed(0)
    _, gemm_pkg = compiled("gemms_aten_float32", lambda: Gemms().to("cuda", torch.float32).eval(),
                           make_inputs(torch.float32),
                           options=aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="ATEN"))
    env = dict(os.environ, AOTIRT_CUBLASLT="/nonexistent/libcublasLt.so.13", AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH="1")
    script = tmp_path / "no_cublaslt.py"
    script.write_text(_NO_CUBLASLT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), triton_pkg, gemm_pkg], env=env, capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "triton-only output (8, 40)" in out
    assert "GEMM ERROR:" in out and "libcublasLt.so.13" in out and "/nonexistent/libcublasLt.so.13" in out, out
    assert "still alive (8, 40)" in out
