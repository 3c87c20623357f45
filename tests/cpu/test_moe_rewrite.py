"""aotirt.moe.rewrite_grouped_mm_fallback on the CPU: transformers' custom op transformers::grouped_mm_fallback
(registered here with transformers' semantics when transformers has not registered it) rewritten into ATen ops in an
ExportedProgram, against the op itself: uneven and empty groups, rows past the last group, int32 and int64 offsets,
a transposed weight view, a dynamic row count; the graph after it holds no call of the op and still lowers with
Inductor; malformed calls are refused with a LoweringError. The GPU side (a float32 Mixtral lowered and run on our
runtime) is tests/gpu/test_moe_gpu.py."""
import pytest

torch = pytest.importorskip("torch")

from aotirt import moe  # noqa: E402
from aotirt.errors import LoweringError  # noqa: E402


def _reference(input, weight, offs):  # transformers' _grouped_mm_fallback
    out = torch.zeros(input.size(0), weight.size(2), device=input.device, dtype=input.dtype)
    start = 0
    for i, end in enumerate(offs.tolist()):
        if start == end:
            continue
        torch.mm(input[start:end], weight[i], out=out[start:end])
        start = end
    return out


def _register():
    try:
        return torch.ops.transformers.grouped_mm_fallback.default
    except (AttributeError, RuntimeError):
        pass

    def fallback(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        return _reference(input, weight, offs)
    torch.library.custom_op("transformers::grouped_mm_fallback", fallback, mutates_args=())

    def fake(input, weight, offs):
        return input.new_empty(input.size(0), weight.size(2))
    torch.library.register_fake("transformers::grouped_mm_fallback", fake)
    return torch.ops.transformers.grouped_mm_fallback.default


OP = _register()


class Routed(torch.nn.Module):
    """transformers' grouped experts path: sort rows by expert, offsets by histc + cumsum, two grouped products
    (the second through a transposed weight view, as transformers passes [E, N, K] weights)."""

    def __init__(self, experts=4, k=16, hidden=24, offs_dtype=torch.int32):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.up = torch.nn.Parameter(torch.randn(experts, k, hidden, generator=g))
        self.down = torch.nn.Parameter(torch.randn(experts, k, hidden, generator=g))  # used as [E, hidden, k]
        self.experts = experts
        self.offs_dtype = offs_dtype

    def forward(self, x, ids):
        perm = torch.argsort(ids, stable=True)
        counts = torch.histc(ids[perm].float(), bins=self.experts, min=0, max=self.experts - 1)
        offs = torch.cumsum(counts, 0).to(self.offs_dtype)
        h = torch.relu(torch.ops.transformers.grouped_mm_fallback(x[perm], self.up, offs))
        return torch.ops.transformers.grouped_mm_fallback(h, self.down.transpose(1, 2), offs=offs)


class WithOffsets(torch.nn.Module):
    def __init__(self, experts=3, k=8, n=5):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(experts, k, n, generator=torch.Generator().manual_seed(1)))

    def forward(self, x, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, self.w, offs)


def _rewritten(model, args, **export_kwargs):
    ep = torch.export.export(model, args, **export_kwargs)
    assert len(moe.fallback_nodes(ep.graph)) > 0
    return ep, moe.rewrite_grouped_mm_fallback(torch, ep)


@pytest.mark.parametrize("offs_dtype", [torch.int32, torch.int64])
def test_routed_experts_match_the_op_over_many_routings(offs_dtype):
    model = Routed(offs_dtype=offs_dtype)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(12, 16, generator=g)
    ep, n = _rewritten(model, (x, torch.randint(0, 4, (12,), generator=g)))
    assert n == 2 and moe.fallback_nodes(ep.graph) == []
    run = ep.module()
    routings = [torch.randint(0, 4, (12,), generator=g) for _ in range(20)]
    routings += [torch.zeros(12, dtype=torch.int64), torch.full((12,), 3), torch.arange(12) % 2 * 3]  # empty groups
    for ids in routings:
        x = torch.randn(12, 16, generator=g)
        torch.testing.assert_close(run(x, ids), model(x, ids), atol=1e-5, rtol=1e-5)


def test_rows_past_the_last_group_are_zero_and_uneven_groups_are_exact():
    model = WithOffsets()
    x = torch.randn(10, 8)
    ep, n = _rewritten(model, (x, torch.tensor([3, 3, 7], dtype=torch.int32)))
    assert n == 1
    run = ep.module()
    for offs in ([3, 3, 7], [0, 0, 10], [10, 10, 10], [0, 0, 0], [1, 5, 9]):
        o = torch.tensor(offs, dtype=torch.int32)
        got = run(x, o)
        torch.testing.assert_close(got, _reference(x, model.w.detach(), o), atol=1e-6, rtol=1e-6)
        assert torch.all(got[offs[-1]:] == 0)


def test_a_dynamic_row_count_is_kept_dynamic():
    model = WithOffsets()
    rows = torch.export.Dim("rows", min=2, max=64)
    ep, n = _rewritten(model, (torch.randn(10, 8), torch.tensor([3, 3, 7], dtype=torch.int32)),
                       dynamic_shapes=({0: rows}, None))
    assert n == 1
    run = ep.module()
    for s in (2, 17, 64):
        x = torch.randn(s, 8)
        o = torch.tensor([s // 3, s // 2, s - 1], dtype=torch.int32)
        torch.testing.assert_close(run(x, o), _reference(x, model.w.detach(), o), atol=1e-6, rtol=1e-6)


def test_the_rewritten_graph_lowers_with_inductor():
    model = Routed()
    g = torch.Generator().manual_seed(3)
    ep, _ = _rewritten(model, (torch.randn(12, 16, generator=g), torch.randint(0, 4, (12,), generator=g)))
    compiled = torch.compile(ep.module())
    for _ in range(2):
        x, ids = torch.randn(12, 16, generator=g), torch.randint(0, 4, (12,), generator=g)
        torch.testing.assert_close(compiled(x, ids), model(x, ids), atol=1e-4, rtol=1e-4)


def test_a_graph_without_the_op_is_left_alone():
    ep = torch.export.export(torch.nn.Linear(4, 3), (torch.randn(2, 4),))
    before = str(ep.graph)
    assert moe.rewrite_grouped_mm_fallback(torch, ep) == 0
    assert str(ep.graph) == before


def test_malformed_calls_are_refused_with_a_lowering_error():
    ep = torch.export.export(WithOffsets(), (torch.randn(10, 8), torch.tensor([3, 3, 7], dtype=torch.int32)))
    node = moe.fallback_nodes(ep.graph)[0]
    offs = node.args[2]
    offs.meta["val"] = offs.meta["val"].to(torch.float32)  # offsets that are not integers
    with pytest.raises(LoweringError, match="integer offs"):
        moe.rewrite_grouped_mm_fallback(torch, ep)
    ep = torch.export.export(WithOffsets(), (torch.randn(10, 8), torch.tensor([3, 3, 7], dtype=torch.int32)))
    node = moe.fallback_nodes(ep.graph)[0]
    node.args = node.args[:2]
    with pytest.raises(LoweringError, match="without offs"):
        moe.rewrite_grouped_mm_fallback(torch, ep)
    ep = torch.export.export(WithOffsets(), (torch.randn(10, 8), torch.tensor([3, 7], dtype=torch.int32)))
    with pytest.raises(LoweringError, match="3 experts, 2 offsets"):
        moe.rewrite_grouped_mm_fallback(torch, ep)
    ep = torch.export.export(WithOffsets(), (torch.randn(10, 8), torch.tensor([3, 3, 7], dtype=torch.int32)))
    del moe.fallback_nodes(ep.graph)[0].args[0].meta["val"]
    with pytest.raises(LoweringError, match="without recorded shapes"):
        moe.rewrite_grouped_mm_fallback(torch, ep)


class WeightAsInput(torch.nn.Module):
    def forward(self, x, w, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, w, offs)


def test_a_symbolic_expert_count_is_refused_with_a_lowering_error():
    experts = torch.export.Dim("experts", min=2, max=16)
    ep = torch.export.export(WeightAsInput(), (torch.randn(10, 8), torch.randn(3, 8, 5),
                                               torch.tensor([3, 3, 7], dtype=torch.int32)),
                             dynamic_shapes=(None, {0: experts}, {0: experts}))
    assert len(moe.fallback_nodes(ep.graph)) == 1
    before = str(ep.graph)
    with pytest.raises(LoweringError, match="symbolic expert count"):
        moe.rewrite_grouped_mm_fallback(torch, ep)
    assert str(ep.graph) == before  # nothing half-rewritten


class TwoCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 8, 5))

    def forward(self, x, offs, bad_offs):
        return torch.ops.transformers.grouped_mm_fallback(x, self.w, offs) + \
            torch.ops.transformers.grouped_mm_fallback(x, self.w, bad_offs)


def test_a_refused_call_leaves_the_calls_before_it_unrewritten():
    ep = torch.export.export(TwoCalls(), (torch.randn(10, 8), torch.tensor([3, 3, 7], dtype=torch.int32),
                                          torch.tensor([3, 7], dtype=torch.int32)))
    assert len(moe.fallback_nodes(ep.graph)) == 2
    before = str(ep.graph)
    with pytest.raises(LoweringError, match="3 experts, 2 offsets"):
        moe.rewrite_grouped_mm_fallback(torch, ep)
    assert str(ep.graph) == before
