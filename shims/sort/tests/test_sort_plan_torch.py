"""The sort/topk planner (via _sort_testing) against torch on CPU: for random shapes and layouts (contiguous,
permuted, sliced, expanded with 0 strides, 0-d and empty tensors) the outputs' sizes and strides equal those of
torch.sort / torch.topk (ATen's meta functions, shared by CPU and CUDA), the row views the executor sorts are self and
the outputs with `dim` moved last, and invalid arguments are refused where torch refuses them."""

import pytest
import testing_module
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

st_ = testing_module.load("_sort_testing", "shims/sort")
CODES = {torch.float32: 6, torch.float16: 5, torch.bfloat16: 15, torch.float64: 7, torch.int64: 4, torch.int32: 3,
         torch.int16: 2, torch.int8: 1, torch.uint8: 0, torch.bool: 11}
SETTINGS = dict(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@st.composite
def tensors(draw):
    ndim = draw(st.integers(0, 4))
    sizes = [draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, 5)) for _ in range(ndim)]
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.int64, torch.bool]))
    x = torch.zeros(sizes, dtype=dtype)
    how = draw(st.sampled_from(["contiguous", "permuted", "sliced", "expanded"]))
    if how == "permuted" and ndim > 1:
        perm = draw(st.permutations(list(range(ndim))))
        x = torch.zeros([sizes[p] for p in perm], dtype=dtype).permute([perm.index(i) for i in range(ndim)])
    elif how == "sliced" and ndim > 0:
        d = draw(st.integers(0, ndim - 1))
        big = list(sizes)
        big[d] = sizes[d] * 2
        x = torch.zeros(big, dtype=dtype).narrow(d, 0, sizes[d]) if sizes[d] else x
        if draw(st.booleans()) and sizes[d] > 0:
            x = torch.zeros(big, dtype=dtype)[(slice(None),) * d + (slice(None, None, 2),)]
    elif how == "expanded" and ndim > 0:
        d = draw(st.integers(0, ndim - 1))
        one = list(sizes)
        one[d] = 1
        x = torch.zeros(one, dtype=dtype).expand(sizes)
    assert list(x.shape) == sizes
    return x


def plan_sort(x, dim, descending=False):
    return st_.plan_sort(list(x.shape), list(x.stride()), CODES[x.dtype], dim, descending)


def check_rows(p, x, out, dim):
    d = dim % max(x.dim(), 1)
    xr = x.reshape(1) if x.dim() == 0 else x.movedim(d, -1)
    orow = out.reshape(1) if out.dim() == 0 else out.movedim(d, -1)
    assert p["row_sizes"] == list(xr.shape) and p["self_row_strides"] == list(xr.stride())
    assert p["out_row_sizes"] == list(orow.shape) and p["out_row_strides"] == list(orow.stride())


@given(x=tensors(), data=st.data())
@settings(**SETTINGS)
def test_sort_layout_matches_torch(x, data):
    n = max(x.dim(), 1)
    dim = data.draw(st.integers(-n, n - 1))
    descending = data.draw(st.booleans())
    values, indices = torch.sort(x, dim=dim, descending=descending, stable=True)
    p = plan_sort(x, dim, descending)
    assert p["out_sizes"] == list(values.shape) and p["out_strides"] == list(values.stride()), (x.stride(), p)
    assert list(indices.stride()) == p["out_strides"]
    assert p["n"] == (x.shape[dim] if x.dim() else 1) and p["k"] == p["n"] and p["descending"] == descending
    assert p["empty"] == (x.numel() == 0)
    assert p["rows"] * p["n"] == x.numel()
    check_rows(p, x, values, dim)


@given(x=tensors(), data=st.data())
@settings(**SETTINGS)
def test_topk_layout_matches_torch(x, data):
    if x.dtype == torch.bool:
        x = x.to(torch.int64)
    n = max(x.dim(), 1)
    dim = data.draw(st.integers(-n, n - 1))
    size = x.shape[dim] if x.dim() else 1
    k = data.draw(st.integers(0, size))
    largest = data.draw(st.booleans())
    values, indices = torch.topk(x, k, dim=dim, largest=largest)
    p = st_.plan_topk(list(x.shape), list(x.stride()), CODES[x.dtype], k, dim, largest)
    assert p["out_sizes"] == list(values.shape) and p["out_strides"] == list(values.stride()), p
    assert list(indices.stride()) == p["out_strides"]
    assert p["k"] == (k if x.dim() else 1) and p["descending"] == largest and p["empty"] == (values.numel() == 0)
    check_rows(p, x, values, dim)


def test_refusals_where_torch_refuses():
    x = torch.zeros(3, 4)
    for dim in (2, -3):
        with pytest.raises(IndexError):
            torch.sort(x, dim=dim)
        with pytest.raises(ValueError, match=r"ShimError: plan_sort: Dimension out of range \(expected to be in range "
                                             r"of \[-2, 1\], but got " + str(dim)):
            plan_sort(x, dim)
    for k in (-1, 5):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            torch.topk(x, k, dim=1)
        with pytest.raises(ValueError, match="ShimError: plan_topk: selected index k out of range"):
            st_.plan_topk([3, 4], [4, 1], 6, k, 1, True)
    # 0-d: dim 0 and -1 only, k 0 or 1
    assert plan_sort(torch.tensor(1.0), -1)["row_sizes"] == [1]
    with pytest.raises(ValueError, match="Dimension out of range"):
        plan_sort(torch.tensor(1.0), 1)
    with pytest.raises(ValueError, match="NotSupported: plan_topk: \"topk_out_cuda\" not implemented for 'Bool'"):
        st_.plan_topk([4], [1], 11, 1, 0, True)
    with pytest.raises(ValueError, match="NotSupported: plan_sort: self .* has more than 2\\^31 - 1 elements"):
        st_.plan_sort([1 << 16, 1 << 16], [1 << 16, 1], 6, 1, False)
    with pytest.raises(ValueError, match="ShimError: plan_sort: self has 2 sizes but 1 strides"):
        st_.plan_sort([2, 2], [1], 6, 0, False)
