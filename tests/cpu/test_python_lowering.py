"""aotirt.compile refusals that need no GPU, and the demo model (CPU forward + torch.export)."""
import pytest
import torch

import aotirt
from aotirt import demo, lowering


class ExportSpy(torch.nn.Module):
    """Counts forward calls: a refusal must come before torch.export traces the model."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_refuses_torch_without_cuda_before_exporting(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError) as info:
        aotirt.compile(spy, (torch.randn(2, 4),))
    msg = str(info.value)
    assert "built without CUDA" in msg and torch.__version__ in msg and "GPU" in msg
    assert spy.calls == 0


def test_refuses_when_no_gpu_is_visible(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError, match=r"sees no GPU.*CUDA_VISIBLE_DEVICES"):
        aotirt.compile(spy, (torch.randn(2, 4),))
    assert spy.calls == 0


def test_this_machine_refuses_with_the_real_torch():
    if torch.cuda.is_available():
        pytest.skip("this machine can lower for CUDA (the refusal is tested with monkeypatched torch above)")
    with pytest.raises(aotirt.LoweringError, match="cannot lower for CUDA"):
        aotirt.compile(ExportSpy(), (torch.randn(2, 4),))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"device": "cpu"}, aotirt.SpecError, r"device='cpu' is not supported; valid: 'cuda' or 'cuda:N'"),
    ({"device": "cuda:x"}, aotirt.SpecError, "not supported"),
    ({"package_path": "model.zip"}, aotirt.SpecError, "must end with .pt2"),
    ({"options": aotirt.CompileOptions(), "inductor_configs": {"aot_inductor.link_libtorch": True}},
     aotirt.SpecError, "link_libtorch"),
])
def test_bad_arguments_are_refused_first(kwargs, error, match):
    spy = ExportSpy()
    with pytest.raises(error, match=match):
        aotirt.compile(spy, (torch.randn(2, 4),), **kwargs)
    assert spy.calls == 0


def test_cpu_example_inputs_are_refused(monkeypatch):
    # Past the CUDA check (pretend), a CPU example input would silently compile a CPU package: refuse it.
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch: None)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError, match=r"example input 0 \(shape \(2, 4\), torch.float32\) is on cpu"):
        aotirt.compile(spy, (torch.randn(2, 4),))
    assert spy.calls == 0


def test_not_a_model_is_refused(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch: None)
    with pytest.raises(aotirt.LoweringError, match="takes a torch.nn.Module or torch.export.ExportedProgram, got str"):
        aotirt.compile("model.py", ())


def test_export_failure_is_a_lowering_error(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch: None)

    class Bad(torch.nn.Module):
        def forward(self):
            raise KeyError("no such weight")

    with pytest.raises(aotirt.LoweringError, match="torch.export failed for Bad: KeyError"):
        aotirt.compile(Bad(), ())


def test_lowering_context_restores_precision_and_forces_math_sdpa():
    opts = aotirt.CompileOptions(float32_matmul_precision="high")
    before = torch.get_float32_matmul_precision()
    with lowering._lowering_context(torch, opts, None):
        assert torch.get_float32_matmul_precision() == "high"
        assert not torch.is_grad_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
        assert not torch.backends.cuda.flash_sdp_enabled()
        assert not torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.get_float32_matmul_precision() == before


def test_demo_model_runs_and_exports():
    model = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8)
    (x,) = model.example_inputs(dtype=torch.float32, device="cpu", batch=2)
    assert x.shape == (2, 8, 64) and x.dtype == torch.float32
    with torch.no_grad():
        y = model(x)
    assert y.shape == x.shape and torch.isfinite(y).all()
    assert 0.5 < y.std().item() < 2.0  # post-LN output: O(1), not collapsed
    # deterministic weights from the seed; different seeds differ
    again = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8)
    assert torch.equal(model.blocks[1].fc1.weight, again.blocks[1].fc1.weight)
    other = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8, seed=1)
    assert not torch.equal(model.blocks[1].fc1.weight, other.blocks[1].fc1.weight)
    # biases everywhere, GELU tanh + SDPA in the graph
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "aten.scaled_dot_product_attention.default" in targets
    assert all(m.bias is not None for m in model.modules() if isinstance(m, torch.nn.Linear))
    torch.testing.assert_close(ep.module()(x), y)


def test_demo_defaults_are_siglip_so400m_sizes():
    (x,) = demo.example_inputs(dtype=torch.bfloat16, device="cpu")
    assert x.shape == (1, 256, 1152) and x.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="divisible by heads"):
        demo.siglip_like(width=100, heads=16, num_blocks=1)
