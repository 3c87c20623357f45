"""The complex elementwise planner (via _complex_testing) against torch on CPU: for random broadcast shapes and
layouts (contiguous, permuted, sliced, expanded, channels-last, size-1 and 0-d operands), the result's dtype, sizes
and strides equal those torch gives the same op three ways: its meta function, a fake tensor (what Inductor's
generated code assumes) and eager on CPU (TensorIterator, as on CUDA); torch.result_type over every dtype pair,
dimensioned, zero-dim or a wrapped number; and the refusals. A 0-d CPU operand (cpu_scalar: what scalar_to_tensor of
a Python number makes) is a wrapped number, so torch is asked with the Python scalar in its place. The values are
checked on the GPU (tests/gpu/test_complex_shims.py)."""

import random

import pytest
import testing_module
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

ct = testing_module.load("_complex_testing", "shims/complex")
CODES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4, torch.float16: 5,
         torch.float32: 6, torch.float64: 7, torch.complex64: 9, torch.complex128: 10, torch.bool: 11,
         torch.bfloat16: 15}
DTYPES = {v: k for k, v in CODES.items()}


def _operand(rng, shape, dtype):
    """A tensor broadcastable to `shape` (some dims 1, leading dims dropped) in a random layout."""
    sizes = list(shape)
    if sizes and rng.random() < 0.3:
        sizes = sizes[rng.randint(1, len(sizes)):]
    sizes = [1 if (s != 1 and rng.random() < 0.25) else s for s in sizes]
    ndim = len(sizes)
    make = lambda s: torch.zeros(s, dtype=dtype)  # noqa: E731
    kind = rng.choice(["contiguous", "permuted", "sliced", "expanded", "channels_last", "permuted"])
    if kind == "permuted" and ndim > 1:
        perm = list(range(ndim))
        rng.shuffle(perm)
        x = make([sizes[p] for p in perm]).permute([perm.index(i) for i in range(ndim)])
    elif kind == "sliced" and ndim:
        d = rng.randrange(ndim)
        big = list(sizes)
        big[d] = 2 * sizes[d] + 1
        x = make(big)[(slice(None),) * d + (slice(1, None, 2),)]
    elif kind == "expanded" and ndim:
        d = rng.randrange(ndim)
        one = list(sizes)
        one[d] = 1
        x = make(one).expand(sizes)
    elif kind == "channels_last" and ndim == 4:
        x = make(sizes).contiguous(memory_format=torch.channels_last)
    else:
        x = make(sizes)
    assert list(x.shape) == sizes
    return x


def _shape(rng):
    return [rng.choice([1, 1, 2, 3, 4, 5]) if rng.random() > 0.05 else 0 for _ in range(rng.randint(0, 5))]


def _spec(x, cpu_scalar=False):
    return (list(x.shape), list(x.stride()), CODES[x.dtype], cpu_scalar)


def _python_scalar(dtype):
    """A Python number of dtype's category: what Inductor's generated code wraps with scalar_to_tensor."""
    if dtype.is_complex:
        return 1.5 - 0.5j
    if dtype.is_floating_point:
        return 2.5
    return True if dtype == torch.bool else 3


def _three_ways(op, *xs):
    """(dtype, sizes, strides) torch gives op on meta tensors, on fake tensors and eagerly on CPU; all must agree.
    A Python number among xs is passed as it is (torch wraps it)."""
    t = lambda x: isinstance(x, torch.Tensor)  # noqa: E731
    metas = [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta") if t(x) else x for x in xs]
    got = [op(*metas)]
    with FakeTensorMode() as mode:
        fakes = [mode.from_tensor(x) if t(x) else x for x in xs]
        got.append(op(*fakes))
    got.append(op(*xs))
    out = [(t.dtype, list(t.shape), list(t.stride())) for t in got]
    return out


EXACT = {"n": 0, "exact": 0}


def _assert_plan(p, ways, what):
    """The fake tensor's dtype and sizes, and its strides on every dim of size > 1 (what Inductor's generated code
    indexes the result with; the strides of size-1 dims index nothing: their index is always 0, and torch's own
    paths disagree on them), and the meta function's; eager's dtype and sizes (eager CPU converts mixed-dtype
    operands first, so its strides may follow other layouts)."""
    (mdt, msz, mst), (fdt, fsz, fst), (edt, esz, _) = ways
    assert (DTYPES[p["out_dtype"]], p["out_sizes"]) == (fdt, fsz) == (mdt, msz) == (edt, esz), (what, p, ways)
    if 0 in fsz:
        return
    EXACT["n"] += 1
    EXACT["exact"] += p["out_strides"] == fst
    for name, st in (("fake", fst), ("meta", mst)):
        assert all(a == b for a, b, n in zip(p["out_strides"], st, fsz) if n != 1), (what, name, p["out_strides"],
                                                                                     ways)


def test_mul_layouts_and_dtypes_match_torch():
    rng = random.Random(11)
    complex_t = [torch.complex64, torch.complex128]
    others = complex_t + [torch.float32, torch.float64, torch.int64, torch.bool, torch.int32]
    checked = 0
    for i in range(600):
        shape = _shape(rng)
        da, db = rng.choice(complex_t), rng.choice(others)
        if rng.random() < 0.5:
            da, db = db, da
        a, b = _operand(rng, shape, da), _operand(rng, shape, db)
        wrapped = False
        if rng.random() < 0.2:
            b = torch.zeros((), dtype=db)  # a 0-d operand: a CUDA tensor, or a CPU scalar (scalar_to_tensor)
            wrapped = rng.random() < 0.5
        # A CPU scalar is a wrapped number: torch is asked with the Python number it came from.
        ways = _three_ways(torch.mul, a, _python_scalar(db) if wrapped else b)
        p = ct.plan_mul(_spec(a), _spec(b, cpu_scalar=wrapped))
        _assert_plan(p, ways, f"case {i}: {a.dtype}{list(a.shape)}{a.stride()} * {b.dtype}{list(b.shape)}{b.stride()}")
        n, out = len(p["out_sizes"]), p["out_sizes"]
        for x, st in zip((a, b), p["operand_strides"]):
            off = n - x.dim()
            want = [0 if j < off or (x.shape[j - off] == 1 and out[j] != 1) else x.stride()[j - off] for j in range(n)]
            assert st == want, (st, want)
        checked += 1
    assert checked == 600


@pytest.mark.parametrize("sizes", [[3, 17, 1, 5], [2, 3, 4, 5], [2, 3, 4, 5, 6], [3, 4, 1, 2, 5]])
def test_channels_last_operands_give_a_channels_last_result(sizes):
    """Both operands channels-last (4-D) or channels-last-3d (5-D) and not contiguous: the prims rule's short cut. The
    H100 run of 8fc3dee found the planner's order wrong here (stride 0 on dim 0 of a [3, 17, 1, 5] product, so the
    kernel wrote every batch onto the first); the random layouts above rarely make two such operands."""
    fmt = torch.channels_last if len(sizes) == 4 else torch.channels_last_3d
    for da, db in ((torch.complex64, torch.float64), (torch.complex128, torch.complex64), (torch.float32,
                                                                                           torch.complex64)):
        a = torch.zeros(sizes, dtype=da).contiguous(memory_format=fmt)
        b = torch.zeros(sizes, dtype=db).contiguous(memory_format=fmt)
        p = ct.plan_mul(_spec(a), _spec(b))
        ways = _three_ways(torch.mul, a, b)
        _assert_plan(p, ways, f"{da}*{db} {sizes} {a.stride()}")
        assert p["out_strides"] == list(a.stride()), (p["out_strides"], a.stride())
    z = torch.zeros(sizes, dtype=torch.complex64).contiguous(memory_format=fmt)
    _assert_plan(ct.plan_polar(_spec(z.real.contiguous(memory_format=fmt)), _spec(z.imag.contiguous(memory_format=fmt))),
                 _three_ways(torch.polar, z.real.contiguous(memory_format=fmt), z.imag.contiguous(memory_format=fmt)),
                 f"polar {sizes}")


def test_polar_and_abs_layouts_match_torch():
    rng = random.Random(12)
    for i in range(300):
        shape = _shape(rng)
        dt = rng.choice([torch.float32, torch.float64])
        a, b = _operand(rng, shape, dt), _operand(rng, shape, dt)
        _assert_plan(ct.plan_polar(_spec(a), _spec(b)), _three_ways(torch.polar, a, b), f"polar case {i}")
        z = _operand(rng, shape, rng.choice([torch.complex64, torch.complex128]))
        _assert_plan(ct.plan_abs(_spec(z)), _three_ways(torch.abs, z), f"abs case {i}: {z.shape} {z.stride()}")


def test_most_layouts_match_the_fake_tensor_exactly_size_one_dims_included():
    """Not needed for correctness (above), but the rules are torch's: all but a few percent match exactly."""
    if EXACT["n"] < 100:
        pytest.skip("runs after the layout tests")
    assert EXACT["exact"] >= 0.95 * EXACT["n"], EXACT


@pytest.mark.parametrize("a_dim", [True, False])
@pytest.mark.parametrize("b_dim", [True, False])
def test_result_type_matches_torch_over_every_pair(a_dim, b_dim):
    for a in CODES:
        for b in CODES:
            x = torch.zeros([1] if a_dim else [], dtype=a)
            y = torch.zeros([1] if b_dim else [], dtype=b)
            want = torch.result_type(x, y)
            got = ct.result_type(CODES[a], a_dim, CODES[b], b_dim)
            if want in CODES:
                assert DTYPES.get(got) == want, (a, a_dim, b, b_dim, want, got)
            else:  # complex32: not stored (the planner refuses it)
                assert got == CODES[torch.bool], (a, b, want, got)


# Python numbers for the wrapped dtypes torch can be asked about (torch wraps bool, int, float and complex; a wrapped
# float or complex counts as the default float32 / complex64 whatever its width, so float32 and complex64 scalars
# are asked as Python floats and complexes too). A wrapped int8/int16/int32/uint8 (scalar_to_tensor of those; never
# from a Python number) keeps its dtype: it is checked where that equals a zero-dim tensor (a dimensioned partner).
PY_SCALARS = {torch.bool: True, torch.int64: 3, torch.float64: 2.5, torch.float32: 2.5, torch.float16: 2.5,
              torch.bfloat16: 2.5, torch.complex128: 1.5 - 0.5j, torch.complex64: 1.5 - 0.5j}


@pytest.mark.parametrize("a_dim", [True, False])
def test_result_type_of_a_wrapped_number_matches_torch_over_every_pair(a_dim):
    checked = 0
    for a in CODES:
        x = torch.zeros([1] if a_dim else [], dtype=a)
        for b in CODES:
            if b in PY_SCALARS:
                want = torch.result_type(x, PY_SCALARS[b])
            elif a_dim:
                want = torch.result_type(x, torch.zeros((), dtype=b))
            else:
                continue
            got = ct.result_type(CODES[a], a_dim, CODES[b], False, b_wrapped=True)
            got_swapped = ct.result_type(CODES[b], False, CODES[a], a_dim, a_wrapped=True)
            assert got == got_swapped, (a, b)
            if want in CODES:
                assert DTYPES.get(got) == want, (a, a_dim, b, want, DTYPES.get(got))
            else:  # complex32
                assert got == CODES[torch.bool], (a, b, want, got)
            checked += 1
    assert checked >= (144 if a_dim else 96), checked


def test_a_wrapped_number_does_not_widen_a_complex_result():
    """The review's case: s = z.sum() (0-d CUDA complex64) * 2.0 is complex64 in Inductor (a wrapped number), not
    complex128 (which a 0-d float64 tensor would give); a wrapped complex counts by category only."""
    z0 = ([], [], CODES[torch.complex64], False)
    for scalar_dtype in (torch.float64, torch.float32, torch.int64, torch.bool, torch.complex128):
        p = ct.plan_mul(z0, ([], [], CODES[scalar_dtype], True))
        assert DTYPES[p["out_dtype"]] == torch.complex64 == torch.result_type(torch.zeros((), dtype=torch.complex64),
                                                                              PY_SCALARS[scalar_dtype]), scalar_dtype
        assert p["out_sizes"] == [] and p["operand_strides"] == [[], []]
    # a 0-d CUDA float64 tensor is a tensor: complex128, as torch
    p = ct.plan_mul(z0, ([], [], CODES[torch.float64], False))
    assert DTYPES[p["out_dtype"]] == torch.complex128 == torch.result_type(torch.zeros((), dtype=torch.complex64),
                                                                           torch.zeros((), dtype=torch.float64))
    c128 = ([], [], CODES[torch.complex128], True)  # Inductor's scalar_to_tensor_complex128 of a Python complex
    for dt, want in ((torch.int64, torch.complex64), (torch.int32, torch.complex64), (torch.bool, torch.complex64),
                     (torch.float32, torch.complex64), (torch.float64, torch.complex128),
                     (torch.complex64, torch.complex64), (torch.complex128, torch.complex128)):
        x = torch.zeros(2, 3, dtype=dt)
        assert torch.result_type(x, 1.5 - 0.5j) == want
        p = ct.plan_mul(_spec(x), c128)
        assert DTYPES[p["out_dtype"]] == want, (dt, DTYPES[p["out_dtype"]])
        assert p["out_strides"] == [3, 1] and p["operand_strides"][1] == [0, 0]
    with pytest.raises(ValueError, match="NotSupported: plan_mul: the product of float16 \\(2-d\\) and complex128 "
                                         "\\(0-d\\) is complex32"):
        ct.plan_mul(([2, 3], [3, 1], 5, False), c128)


def test_refusals():
    c = ([2, 3], [3, 1], 9, False)
    f = ([2, 3], [3, 1], 6, False)
    with pytest.raises(ValueError, match="ShimError: plan_mul: The size of tensor a \\(3\\) must match the size of "
                                         "tensor b \\(4\\) at non-singleton dimension 1"):
        ct.plan_mul(c, ([2, 4], [4, 1], 9, False))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(4\\) at "
                                           "non-singleton dimension 1"):
        torch.zeros(2, 3) * torch.zeros(2, 4)
    with pytest.raises(ValueError, match="NotSupported: plan_mul: the product of float32 and float32 is not complex"):
        ct.plan_mul(f, f)
    with pytest.raises(ValueError, match="NotSupported: plan_mul: the product of float16 \\(2-d\\) and complex64 "
                                         "\\(0-d\\) is complex32"):
        ct.plan_mul(([2, 3], [3, 1], 5, False), ([], [], 9, True))
    with pytest.raises(ValueError, match="ShimError: plan_mul: other is on the cpu and not a 0-d tensor"):
        ct.plan_mul(c, ([2, 3], [3, 1], 9, True))
    with pytest.raises(ValueError, match="ShimError: plan_polar: Expected object of scalar type float32 but got "
                                         "scalar type float64 for second argument"):
        ct.plan_polar(f, ([2, 3], [3, 1], 7, False))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double for "
                                           "second argument"):
        torch.polar(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="ShimError: plan_polar: Expected both inputs to be Half, Float or Double "
                                         "tensors but got int64 and int64"):
        ct.plan_polar(([2], [1], 4, False), ([2], [1], 4, False))
    with pytest.raises(ValueError, match="NotSupported: plan_abs: self is float32; Inductor generates Triton"):
        ct.plan_abs(f)
    with pytest.raises(ValueError, match="NotSupported: plan_mul: the result has 13 dims"):
        ct.plan_mul(([1] * 13, [1] * 13, 9, False), c)
