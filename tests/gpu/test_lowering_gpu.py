"""Lowering rules on the GPU (issue 4): the spec's default and values, its refusals, ATEN,TRITON vs TRITON on a
GEMM-heavy model (timings recorded, not asserted), and the ExecuTorch .pte path end to end on our runtime.

Timings go to stdout and to $AOTIRT_GPU_RESULTS/lowering_gemm_backends.json when that variable is set."""
import json
import os
import time
import zipfile

import pytest

from conftest import HAVE_CUDA, TOL, compiled, requires_gpu

if HAVE_CUDA:
    import torch
    import torch.nn as nn

    class Mlp(nn.Module):
        """GEMM-heavy: three large Linear layers (cuBLAS usually wins against Triton templates here)."""

        def __init__(self, width=2048, hidden=8192):
            super().__init__()
            self.fc1 = nn.Linear(width, hidden)
            self.fc2 = nn.Linear(hidden, hidden // 2)
            self.fc3 = nn.Linear(hidden // 2, width)

        def forward(self, x):
            return self.fc3(torch.nn.functional.gelu(self.fc2(torch.relu(self.fc1(x)))))

    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 96)
            self.w = nn.Parameter(torch.randn(96, 32) / 10)

        def forward(self, x, y, z):
            return torch.mm(self.lin(x), self.w), torch.bmm(y, z)

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.lin = nn.Linear(16, 8)

        def forward(self, x):
            return self.lin(self.conv(x).mean((2, 3)))

    def small_inputs(dt=torch.float32):
        return (torch.randn(32, 64, device="cuda", dtype=dt), torch.randn(4, 16, 40, device="cuda", dtype=dt),
                torch.randn(4, 40, 24, device="cuda", dtype=dt))


def _wrapper_source(path):
    with zipfile.ZipFile(path) as z:
        return "\n".join(z.read(n).decode() for n in z.namelist() if n.endswith(".wrapper.cpp"))


def _metadata(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(next(n for n in z.namelist() if n.endswith("_metadata.json"))))


def _check_matches_eager(model, path, inputs, dtype_name="float32"):
    import aotirt
    runner = aotirt.load(path)
    with torch.no_grad():
        want = model(*inputs)
    got = runner(*inputs)
    torch.cuda.synchronize()
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL[dtype_name])
    return runner


@requires_gpu
def test_default_spec_is_the_platforms_aten_gemms_on_the_gemm_shims():
    """linux_cuda's defaults (specs.PLATFORM_DEFAULTS, from the benchmarks): ATEN GEMMs, i.e. cuBLASLt through our
    GEMM shims, recorded in the metadata."""
    import aotirt
    torch.manual_seed(0)
    model, path = compiled("lowering_small_default", lambda: Small().cuda().eval(), small_inputs())
    meta = _metadata(path)
    assert meta["aotirt_max_autotune_gemm_backends"] == "ATEN" and meta["aotirt_max_autotune"] == "ON"
    assert meta["aotirt_attention_backend"] == "CUDNN,TRITON"
    assert meta["aotirt_platform"] == "linux_cuda"
    src = _wrapper_source(path)
    assert "aoti_torch_cuda_mm_out(" in src or "aoti_torch_cuda_bmm_out(" in src or "aoti_torch_cuda_addmm_out(" in src
    _check_matches_eager(model, path, small_inputs())
    assert aotirt.CompileOptions().max_autotune_gemm_backends is None  # None: the platform's default


@requires_gpu
@pytest.mark.parametrize("backends,max_autotune", [("TRITON", True), ("triton, aten", True), ("ATEN", True),
                                                   ("TRITON", False)])
def test_each_spec_value_lowers_runs_and_matches_eager(backends, max_autotune):
    import aotirt
    from aotirt import platforms
    if backends == "TRITON" and max_autotune and not platforms.triton_templates_available(
            platforms.gpu_properties(0), "cuda"):
        pytest.skip("small GPU: TRITON-only is refused here (tested by test_small_gpu_refusal_matches_inductor)")
    opts = aotirt.CompileOptions(max_autotune=max_autotune, max_autotune_gemm_backends=backends)
    torch.manual_seed(0)
    model, path = compiled(f"lowering_small_{opts.max_autotune_gemm_backends}_{max_autotune}",
                           lambda: Small().cuda().eval(), small_inputs(), options=opts)
    meta = _metadata(path)
    assert meta["aotirt_max_autotune_gemm_backends"] == opts.max_autotune_gemm_backends
    src = _wrapper_source(path)
    if backends == "ATEN" or not max_autotune:
        assert "aoti_torch_cuda_bmm_out(" in src  # every GEMM goes to cuBLAS through our shims
    _check_matches_eager(model, path, small_inputs())


@requires_gpu
@pytest.mark.parametrize("kwargs,error,match", [
    ({"max_autotune_gemm_backends": "CUTLASS"}, "SpecError", r"valid: \['TRITON', 'ATEN,TRITON', 'ATEN'"),
    ({"target": "rocm", "max_autotune_gemm_backends": "ATEN,TRITON"}, "UnsupportedPlatformError", "rocm"),
    ({"platform": "windows", "max_autotune_gemm_backends": "ATEN"}, "UnsupportedPlatformError", "windows_cuda"),
])
def test_three_refusals_on_the_gpu(kwargs, error, match):
    import aotirt
    with pytest.raises(getattr(aotirt, error), match=match):
        aotirt.compile(Small().cuda().eval(), small_inputs(), options=aotirt.CompileOptions(**kwargs))


@requires_gpu
def test_convolution_refusal_comes_before_inductor():
    import aotirt
    x = torch.randn(2, 3, 16, 16, device="cuda")
    t0 = time.perf_counter()
    # GEMMs on ATEN only and convolutions on TRITON only: NoValidChoicesError in Inductor otherwise
    with pytest.raises(aotirt.UnsupportedShimError, match="'ATEN,TRITON'"):
        aotirt.compile(ConvNet().cuda().eval(), (x,),
                       options=aotirt.CompileOptions(max_autotune_gemm_backends="ATEN",
                                                     max_autotune_conv_backends="TRITON"))
    assert time.perf_counter() - t0 < 60, "refused up front, not after autotuning"


@requires_gpu
@pytest.mark.parametrize("kwargs", [{"max_autotune": False},
                                    {"max_autotune_gemm_backends": "ATEN", "max_autotune_conv_backends": "ATEN"}],
                         ids=["max_autotune_off", "aten_conv"])
def test_convolution_on_the_cudnn_shim_lowers_and_matches_eager(kwargs):
    # max_autotune OFF (Inductor's conv lowering then needs ATEN among its conv backends: specs passes it) and ATEN
    # conv backends: the convolution is a call to our cuDNN shim; the reference is eager without TF32 (the shim
    # runs fp32 convolutions in full fp32).
    import aotirt
    x = torch.randn(2, 3, 16, 16, device="cuda")
    torch.manual_seed(0)
    model, path = compiled("lowering_conv_" + "_".join(f"{k}_{v}" for k, v in kwargs.items()),
                           lambda: ConvNet().cuda().eval(), (x,), options=aotirt.CompileOptions(**kwargs))
    assert "aoti_torch_cuda_convolution(" in _wrapper_source(path)
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        for _ in range(2):  # fresh inputs; the second call reuses the cached cuDNN plan
            _check_matches_eager(model, path, (torch.randn(2, 3, 16, 16, device="cuda"),))
    finally:
        torch.backends.cudnn.allow_tf32 = tf32


@requires_gpu
def test_convolution_with_triton_lowers_and_runs():
    import aotirt
    from aotirt import platforms
    if not platforms.triton_templates_available(platforms.gpu_properties(0), "cuda"):
        pytest.skip("small GPU: convolutions are refused here")
    x = torch.randn(2, 3, 16, 16, device="cuda")
    torch.manual_seed(0)
    model, path = compiled("lowering_conv_aten_triton", lambda: ConvNet().cuda().eval(), (x,),
                           options=aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON",
                                                         max_autotune_conv_backends="TRITON"))
    assert "aoti_torch_cuda_convolution(" not in _wrapper_source(path)
    _check_matches_eager(model, path, (x,))


@requires_gpu
def test_small_gpu_refusal_matches_inductor():
    from torch._inductor.utils import is_big_gpu
    from aotirt import platforms
    assert platforms.triton_templates_available(platforms.gpu_properties(0), "cuda") == is_big_gpu(0)


@requires_gpu
def test_aten_triton_vs_triton_on_a_gemm_heavy_model(capsys):
    import aotirt
    from aotirt import platforms
    if not platforms.triton_templates_available(platforms.gpu_properties(0), "cuda"):
        pytest.skip("small GPU: TRITON-only is refused here")
    dt = torch.bfloat16
    x = torch.randn(512, 2048, device="cuda", dtype=dt)
    results = {}
    for backends in ("TRITON", "ATEN,TRITON"):
        torch.manual_seed(0)
        t0 = time.perf_counter()
        model, path = compiled(f"lowering_mlp_{backends}", lambda: Mlp().to("cuda", dt).eval(), (x,),
                               options=aotirt.CompileOptions(max_autotune_gemm_backends=backends))
        compile_s = time.perf_counter() - t0
        runner = _check_matches_eager(model, path, (x,), "bfloat16")
        for _ in range(10):
            runner(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            runner(x)
        end.record()
        torch.cuda.synchronize()
        results[backends] = {"ms_per_call": start.elapsed_time(end) / 50, "compile_s": compile_s,
                             "calls_cublas": "aoti_torch_cuda_addmm_out(" in _wrapper_source(path)}
    record = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "model": "Mlp 2048-8192-4096-2048 "
              "bf16 x[512,2048]", "results": results}
    with capsys.disabled():
        print("\nATEN,TRITON vs TRITON:", json.dumps(record, indent=1))
    out_dir = os.environ.get("AOTIRT_GPU_RESULTS")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "lowering_gemm_backends.json"), "w") as f:
            json.dump(record, f, indent=2)


@requires_gpu
def test_executorch_pte_end_to_end(tmp_path):
    from aotirt import executorch as ax
    if not ax.HAVE_EXECUTORCH:
        pytest.skip(f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
    from executorch.exir import to_edge_transform_and_lower
    torch.manual_seed(0)
    model = Small().cuda().eval()
    inputs = small_inputs()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    et = to_edge_transform_and_lower(ep, partitioner=[ax.CudaPartitioner([
        ax.CudaBackend.generate_method_name_compile_spec("forward"),
        ax.CompileSpec("max_autotune_gemm_backends", b"ATEN,TRITON"),
    ])]).to_executorch()
    _write_pte_and_check_it_matches_eager(ax, et, model, tmp_path)
    pt2 = ax.extract_package(str(tmp_path / "model.pte"), str(tmp_path / "model.pt2"))
    assert _metadata(pt2)["aotirt_max_autotune_gemm_backends"] == "ATEN,TRITON"


def _write_pte_and_check_it_matches_eager(ax, et, model, tmp_path):
    """Writes the .pte (+ .ptd) into tmp_path and runs its method on the aotirt runtime against eager."""
    (tmp_path / "model.pte").write_bytes(et.buffer)
    et.write_tensor_data_to_file(str(tmp_path))
    assert (tmp_path / "aotirt_cuda_blob.ptd").exists()
    # The method's inputs in the method's order: load_pte maps them to the delegate's order (which may differ).
    method = ax.load_pte(str(tmp_path / "model.pte"), workdir=str(tmp_path))
    inputs = small_inputs()
    with torch.no_grad():
        want = model(*inputs)
    got = method(*inputs)
    torch.cuda.synchronize()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL["float32"])


@requires_gpu
def test_executorch_auto_gemm_backends_end_to_end(tmp_path):
    """CompileSpec("max_autotune_gemm_backends", b"AUTO") through the ExecuTorch door: the three candidates lowered
    through it and timed here, the fastest in the .pte, its AUTO metadata recorded, the method matching eager."""
    from aotirt import auto
    from aotirt import executorch as ax
    if not ax.HAVE_EXECUTORCH:
        pytest.skip(f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
    from executorch.exir import to_edge_transform_and_lower
    torch.manual_seed(0)
    model = Small().cuda().eval()
    with torch.no_grad():
        ep = torch.export.export(model, small_inputs())
    et = to_edge_transform_and_lower(ep, partitioner=[ax.CudaPartitioner([
        ax.CompileSpec("max_autotune_gemm_backends", b"AUTO")])]).to_executorch()
    _write_pte_and_check_it_matches_eager(ax, et, model, tmp_path)
    (payload,) = ax.read_payloads(str(tmp_path / "model.pte"))
    md = payload.metadata
    assert md[auto.META_CHOICE] in auto.CANDIDATES and md["aotirt_max_autotune_gemm_backends"] == md[auto.META_CHOICE]
    assert set(json.loads(md[auto.META_TIMINGS])) == set(auto.CANDIDATES)
