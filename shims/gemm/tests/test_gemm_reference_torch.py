"""Planner + CPU reference executor (via the _gemm_testing module) against torch on the CPU, with hypothesis over
shapes, strides (transposes, slices, size-1 dims with odd strides, zero batch strides, expanded bias, scalar/column
self), dtypes and beta/alpha. Also checks that storage outside `out` is untouched and NaN in an ignored self never
leaks."""

import pytest
import testing_module
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st




gt = testing_module.load("_gemm_testing", "shims/gemm")

CODES = {torch.float32: 6, torch.float16: 5, torch.bfloat16: 15, torch.int8: 1, torch.int32: 3, torch.float64: 7}
SENTINEL = 768.0  # exact in every dtype used here
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
SETTINGS = dict(max_examples=250, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def desc(base, t):
    return (t.data_ptr(), list(t.shape), list(t.stride()), CODES[t.dtype], base.numel() - t.storage_offset())


@st.composite
def strided(draw, sizes, dtype, is_out=False):
    """A view of `sizes` over a fresh storage: random dim order, padding, non-unit inner stride, odd strides on
    size-1 dims, zero batch stride (inputs), random storage offset. Returns (storage, view)."""
    nd = len(sizes)
    order = list(range(nd))
    kind = draw(st.sampled_from(["contig", "transposed", "permuted", "inner2", "padded", "zero_batch"]))
    if kind == "transposed" and nd >= 2:
        order[-1], order[-2] = order[-2], order[-1]
    if kind == "permuted":
        order = draw(st.permutations(order))
    strides = [0] * nd
    stride = 2 if kind == "inner2" else 1
    for d in reversed(order):
        strides[d] = stride
        pad = draw(st.integers(0, 4)) if kind == "padded" else 0
        stride *= max(1, sizes[d]) + pad
    for d in range(nd):
        if sizes[d] == 1 and draw(st.booleans()):
            strides[d] = draw(st.integers(0, 8))
    if kind == "zero_batch" and nd == 3 and not is_out:
        strides[0] = 0
    offset = draw(st.integers(0, 3))
    extent = 0 if 0 in sizes else sum((s - 1) * t for s, t in zip(sizes, strides)) + 1
    n = offset + extent
    if is_out:
        storage = torch.full((max(n, 1),), SENTINEL, dtype=dtype)
    elif dtype == torch.int8:
        storage = torch.randint(-127, 128, (max(n, 1),), dtype=torch.int8)
    else:
        storage = (torch.randint(-16, 17, (max(n, 1),)).to(torch.float64) / 8).to(dtype)
    return storage, storage.as_strided(sizes, strides, offset)


SELF_KINDS = ["scalar", "row", "row2d", "row_expanded", "column", "one", "row_strided", "full"]


@st.composite
def gemm_case(draw, op, dtype):
    batched = op in ("bmm", "baddbmm")
    dim = st.one_of(st.just(1), st.integers(0, 9))
    B = draw(st.integers(0, 4)) if batched else 1
    M, N, K = draw(dim), draw(dim), draw(dim)
    ab, cd = dtype, dtype
    if op == "_int_mm":
        ab, cd = torch.int8, torch.int32
        M, N, K = draw(st.integers(17, 40)), 8 * draw(st.integers(1, 4)), 8 * draw(st.integers(1, 4))
    shp = (lambda r, c: [B, r, c]) if batched else (lambda r, c: [r, c])
    a = draw(strided(shp(M, K), ab))
    b = draw(strided(shp(K, N), ab))
    out = draw(strided(shp(M, N), cd, is_out=True))
    case = dict(op=op, a=a, b=b, out=out, self=None, beta=0.0, alpha=1.0)
    if op in ("addmm", "baddbmm"):
        case["beta"] = draw(st.sampled_from([0.0, 1.0, 1.0, 0.5, -2.0]))
        case["alpha"] = draw(st.sampled_from([1.0, 0.5, -1.5, 2.0]))
        kind = draw(st.sampled_from(SELF_KINDS))
        sizes = {"scalar": [], "row": [N], "row2d": [1, N], "row_expanded": [M, N], "column": [M, 1], "one": [1, 1],
                 "row_strided": [N], "full": [M, N]}[kind]
        if kind == "row_expanded":
            base = (torch.randint(-16, 17, (max(N, 1),)).double() / 8).to(dtype)
            s = (base, base.as_strided([M, N], [0, 1], 0))
        elif kind == "row_strided":
            base = (torch.randint(-16, 17, (max(2 * N, 1),)).double() / 8).to(dtype)
            s = (base, base.as_strided([N], [2], 0))
        else:
            if batched and draw(st.booleans()):
                sizes = [1] * (2 - len(sizes)) + sizes
                sizes = [draw(st.sampled_from([1, B]))] + sizes
            s = draw(strided(sizes, dtype))
        if case["beta"] == 0.0:
            s[0].fill_(float("nan"))  # an ignored self must not leak
        case["self"] = s
    return case


def expected(case):
    op, a, b = case["op"], case["a"][1], case["b"][1]
    if op == "_int_mm":
        return torch._int_mm(a.contiguous(), b.contiguous()).double()
    A, Bm = a.double(), b.double()
    if op == "mm":
        return torch.mm(A, Bm)
    if op == "bmm":
        return torch.bmm(A, Bm)
    S = case["self"][1].double()
    if op == "addmm":
        return torch.addmm(S, A, Bm, beta=case["beta"], alpha=case["alpha"])
    return torch.baddbmm(S, A, Bm, beta=case["beta"], alpha=case["alpha"])


TOL = {torch.float32: (1e-5, 1e-4), torch.float16: (2e-3, 2e-2), torch.bfloat16: (1.6e-2, 5e-2),
       torch.int32: (0, 0)}


def check(case):
    out_base, out = case["out"]
    self_d = None if case["self"] is None else desc(*case["self"])
    plan = gt.run(case["op"], desc(out_base, out), self_d, desc(*case["a"]), desc(*case["b"]), case["beta"],
                  case["alpha"])
    want = expected(case)
    rtol, atol = TOL[out.dtype]
    torch.testing.assert_close(out.double(), want, rtol=rtol, atol=atol, msg=lambda m: f"{m}\nplan: {plan}")
    mask = torch.zeros(out_base.numel(), dtype=torch.bool)
    if out.numel():
        mask.as_strided(out.shape, out.stride(), out.storage_offset()).fill_(True)
    untouched = out_base.double()[~mask]
    assert bool((untouched == SENTINEL).all()), f"storage outside out was written; plan: {plan}"
    return plan


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", ["mm", "addmm", "bmm", "baddbmm"])
def test_float_ops_match_torch(op, dtype):
    seen = {"bias": 0, "precopy": 0, "staged": 0}

    @settings(**SETTINGS)
    @given(gemm_case(op, dtype))
    def run(case):
        plan = check(case)
        seen["bias"] += plan["epilogue_bias"]
        seen["precopy"] += plan["precopy_self"]
        seen["staged"] += plan["stage_out"] or plan["stage_a"] in (1, 2) or plan["stage_b"] in (1, 2)

    run()
    assert seen["staged"] > 0
    if op in ("addmm", "baddbmm"):
        assert seen["precopy"] > 0
    if op == "addmm":
        assert seen["bias"] > 0


def test_int_mm_matches_torch():
    @settings(**SETTINGS)
    @given(gemm_case("_int_mm", None))
    def run(case):
        check(case)

    run()


def test_errors():
    f = torch.zeros(4, 3)
    g = torch.zeros(3, 5)
    o = torch.zeros(4, 5)
    with pytest.raises(ValueError, match=r"mm: expected all operands to have the same dtype"):
        gt.plan("mm", desc(o, o), None, desc(f, f), desc(g.half(), g.half()))
    with pytest.raises(TypeError, match="float64 is not supported"):
        gt.plan("mm", desc(o.double(), o.double()), None, desc(f.double(), f.double()), desc(g.double(), g.double()))
    with pytest.raises(ValueError, match=r"shapes cannot be multiplied \(4x3 and 4x5\)"):
        gt.plan("mm", desc(o, o), None, desc(f, f), desc(o, o))
    x, y, z = torch.zeros(16, 16, dtype=torch.int8), torch.zeros(16, 8, dtype=torch.int8), torch.zeros(16, 8,
                                                                                                         dtype=torch.int32)
    with pytest.raises(TypeError, match="greater than 16"):
        gt.plan("_int_mm", desc(z, z), None, desc(x, x), desc(y, y))


def test_tf32_only_when_allowed():
    f, g, o = torch.zeros(4, 3), torch.zeros(3, 5), torch.zeros(4, 5)
    assert gt.plan("mm", desc(o, o), None, desc(f, f), desc(g, g))["compute"] == 0
    assert gt.plan("mm", desc(o, o), None, desc(f, f), desc(g, g), allow_tf32=True)["compute"] == 1
