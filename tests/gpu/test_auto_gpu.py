"""AUTO GEMM backends on a GPU (aotirt.auto.compile_auto): lowers TRITON, ATEN,TRITON and ATEN for a small bf16
model, times them under CUDA graphs on this GPU, keeps the fastest, records the choice and all timings in the
package metadata (read back through the runtime), and the chosen package matches eager."""
import json
import os
import tempfile

import pytest

from conftest import HAVE_CUDA, TOL, requires_gpu

if HAVE_CUDA:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Small(nn.Module):
        """LayerNorm -> Linear -> GELU -> Linear with a residual: two GEMM shapes, both with a bias."""

        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(256)
            self.fc1, self.fc2 = nn.Linear(256, 1024), nn.Linear(1024, 256)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.norm(x)), approximate="tanh"))

_STATE = {}


def _auto_package():
    """Compiles once per session: (model, path, AutoResult)."""
    if "auto" not in _STATE:
        import aotirt
        from aotirt import auto
        torch.manual_seed(0)
        model = Small().to("cuda", torch.bfloat16).eval()
        x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
        path = os.path.join(tempfile.mkdtemp(prefix="aotirt_auto_gpu_"), "auto.pt2")
        res = []
        out = auto.compile_auto(model, (x,), path, options=aotirt.CompileOptions(max_autotune=True), result=res)
        _STATE["auto"] = (model, out, res[0])
    return _STATE["auto"]


@requires_gpu
def test_auto_records_choice_and_timings_and_the_choice_is_the_fastest():
    import aotirt
    from aotirt import auto
    model, path, res = _auto_package()
    md = aotirt.load(path).metadata  # what the runtime reads from <wrapper>_metadata.json
    choice = md[auto.META_CHOICE]
    assert choice in auto.CANDIDATES and choice == res.choice
    timings = json.loads(md[auto.META_TIMINGS])
    errors = json.loads(md.get(auto.META_ERRORS, "{}"))
    assert set(timings) == set(auto.CANDIDATES)
    for c, ms in timings.items():
        assert (ms is None) == (c in errors), (c, ms, errors)
        assert ms is None or 0 < ms < 100
    assert not errors, f"a candidate failed on this GPU: {errors}"
    assert timings[choice] == min(v for v in timings.values() if v is not None)
    methods = json.loads(md[auto.META_METHODS])
    assert methods == {c: auto.METHOD_GRAPH for c in auto.CANDIDATES}, methods  # capture works on the H200
    assert md[auto.META_DEVICE] == torch.cuda.get_device_name()
    # What aotirt.compile recorded is still there (the rewrite only adds keys).
    assert md["AOTI_DEVICE_KEY"] == "cuda" and "aotirt_inputs" in md and "aotirt_version" in md
    assert all(len(v) == 3 for v in res.rounds_ms.values())


@requires_gpu
def test_the_chosen_package_matches_eager_with_and_without_graphs():
    import aotirt
    model, path, _ = _auto_package()
    runner = aotirt.load(path)
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(runner(x), want, **TOL["bfloat16"])
    graphed = aotirt.capture(runner, x)
    x2 = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want2 = model(x2)
    torch.testing.assert_close(graphed(x2), want2, **TOL["bfloat16"])


@requires_gpu
def test_default_timer_with_and_without_graphs():
    from aotirt import auto
    _, path, _ = _auto_package()
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    for use_graphs, method in ((True, auto.METHOD_GRAPH), (False, "events (graphs off)")):
        timer = auto.CudaGraphTimer(repeats=3, use_graphs=use_graphs)
        try:
            m = timer(path, (x,), torch.cuda.current_device())
            m2 = timer(path, (x,), torch.cuda.current_device())  # cached runner/graph
        finally:
            timer.close()
        assert m.method == method and 0 < m.ms < 100 and 0 < m2.ms < 100
        assert m.device == torch.cuda.get_device_name()


@requires_gpu
@pytest.mark.parametrize("kwargs,match", [({"platform": "windows"}, "platform='windows'"),
                                          ({"target": "rocm"}, "ROCm")])
def test_auto_refusals_before_lowering(kwargs, match):
    import aotirt
    from aotirt import auto
    calls = []
    from aotirt.errors import UnsupportedPlatformError
    with pytest.raises(UnsupportedPlatformError, match=match):
        auto.compile_auto(Small().cuda(), (torch.randn(4, 256, device="cuda"),), None,
                          compile_fn=lambda *a, **k: calls.append(a), **kwargs)
    assert calls == []


@requires_gpu
def test_attention_auto_picks_among_its_candidates_and_matches_eager():
    """attention_backend=AUTO (aotirt.compile): CUDNN,TRITON, TRITON and MATH lowered for a small bf16 attention
    block, timed here; the choice and the three timings are in the metadata; the package matches eager."""
    import aotirt
    from aotirt import auto

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.out = nn.Linear(256, 768), nn.Linear(256, 256)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, 4, 64).permute(2, 0, 3, 1, 4)
            return self.out(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, 256))

    torch.manual_seed(0)
    model = Attn().to("cuda", torch.bfloat16).eval()
    x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
    path = aotirt.compile(model, (x,), os.path.join(tempfile.mkdtemp(prefix="aotirt_auto_attn_"), "a.pt2"),
                          options=aotirt.CompileOptions(attention_backend="AUTO"))
    runner = aotirt.load(path)
    md = runner.metadata
    choice_key, timings_key, _, errors_key, _, _ = auto.meta_keys("attention_backend")
    assert md[choice_key] in auto.FIELD_CANDIDATES["attention_backend"]
    assert md["aotirt_attention_backend"] == md[choice_key]  # the package is the chosen lowering
    timings = json.loads(md[timings_key])
    assert set(timings) == set(auto.FIELD_CANDIDATES["attention_backend"])
    assert not json.loads(md.get(errors_key, "{}")) and all(0 < ms < 100 for ms in timings.values())
    assert md[choice_key] == min(timings, key=lambda c: timings[c])
    with torch.no_grad():
        torch.testing.assert_close(runner(x), model(x), **TOL["bfloat16"])
