"""The FFT planner (via _fft_testing) against torch on CPU.

1. Layouts: for random shapes, layouts (contiguous, permuted, sliced, expanded, size-1 and empty batch dims), dim
   lists (any order, 1 to 5 dims, so both of torch's r2c paths and staged c2c) and modes, the returned tensor's sizes
   and strides equal those of torch's meta functions for CUDA (what Inductor's generated code assumes), and so does
   every cuFFT step (torch's _exec_fft calls, recorded).
2. Values: a NumPy model of the executor (shim_fft.cc) runs the plan's steps over flat buffers exactly as the shim
   does (pack the permuted input when it is not packed, transform [batch, signal...], write the contiguous result,
   normalize the one-sided slice, expand, fill the conjugate half by the kernel's mirror rule) and must equal
   torch.fft on CPU: the buffer choreography is tested here; cuFFT itself is tested on the GPU
   (tests/gpu/test_fft_shims.py).
3. Refusals where torch refuses, and the dtypes this shim leaves out."""

import numpy as np
import pytest
import testing_module
import torch
import torch._meta_registrations as meta_reg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ft = testing_module.load("_fft_testing", "shims/fft")
CODES = {torch.float32: 6, torch.float64: 7, torch.float16: 5, torch.bfloat16: 15, torch.complex64: 9,
         torch.complex128: 10, torch.int64: 4}
SETTINGS = dict(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@st.composite
def layouts(draw, min_dims=1, max_dims=5, max_size=6):
    """(sizes, strides) of a random strided view (the storage itself is irrelevant to the planner)."""
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = [draw(st.integers(1, max_size)) for _ in range(ndim)]
    how = draw(st.sampled_from(["contiguous", "permuted", "sliced", "expanded", "permuted"]))
    x = torch.empty(sizes, device="meta")
    if how == "permuted" and ndim > 1:
        perm = draw(st.permutations(list(range(ndim))))
        x = torch.empty([sizes[p] for p in perm], device="meta").permute([perm.index(i) for i in range(ndim)])
    elif how == "sliced":
        d = draw(st.integers(0, ndim - 1))
        big = list(sizes)
        big[d] = sizes[d] * 2 + 1
        x = torch.empty(big, device="meta")[(slice(None),) * d + (slice(1, None, 2),)]
    elif how == "expanded":
        d = draw(st.integers(0, ndim - 1))
        one = list(sizes)
        one[d] = 1
        x = torch.empty(one, device="meta").expand(sizes)
    assert list(x.shape) == sizes
    return list(x.shape), list(x.stride())


@st.composite
def dim_lists(draw, ndim, batch_zero_ok=True):
    k = draw(st.integers(1, ndim))
    return draw(st.permutations(list(range(ndim))))[:k]


class Recorder:
    """Records torch's meta _exec_fft calls while active: (dims, out_sizes, the input's strides, the result's
    strides)."""

    def __enter__(self):
        self.calls = []
        self.orig = meta_reg._exec_fft

        def rec(out, self_, out_sizes, dim, *, forward):
            in_strides = list(self_.stride())
            r = self.orig(out, self_, out_sizes, dim, forward=forward)
            self.calls.append((list(dim), list(out_sizes), in_strides, list(r.stride())))
            return r

        meta_reg._exec_fft = rec
        return self

    def __exit__(self, *exc):
        meta_reg._exec_fft = self.orig


def check_steps(plan, calls):
    assert len(plan["steps"]) == len(calls), (plan["steps"], calls)
    for s, (dims, out_sizes, in_strides, res_strides) in zip(plan["steps"], calls):
        assert s["dims"] == dims
        assert s["result"]["sizes"] == out_sizes and s["result"]["strides"] == res_strides, (s, res_strides)
        assert s["input"]["strides"] == in_strides


# ---------------------------------------------------------------------------------------------- 1. layouts
@given(lay=layouts(), data=st.data())
@settings(**SETTINGS)
def test_r2c_layouts_match_torch_meta(lay, data):
    sizes, strides = lay
    dims = data.draw(dim_lists(len(sizes)))
    onesided = data.draw(st.booleans())
    norm = data.draw(st.integers(0, 2))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64]))
    x = torch.empty_strided(sizes, strides, dtype=dtype, device="meta")
    with Recorder() as rec:
        out = torch.ops.aten._fft_r2c.default(x, dims, norm, onesided)
    p = ft.plan_r2c(sizes, strides, CODES[dtype], dims, norm, onesided)
    assert p["out_sizes"] == list(out.shape) and p["out_strides"] == list(out.stride()), (sizes, strides, dims, p)
    assert p["out_dtype"] == CODES[out.dtype]
    check_steps(p, rec.calls)


@given(lay=layouts(), data=st.data())
@settings(**SETTINGS)
def test_c2c_layouts_match_torch_meta(lay, data):
    sizes, strides = lay
    dims = data.draw(dim_lists(len(sizes)))
    forward = data.draw(st.booleans())
    norm = data.draw(st.integers(0, 2))
    dtype = data.draw(st.sampled_from([torch.complex64, torch.complex128]))
    x = torch.empty_strided(sizes, strides, dtype=dtype, device="meta")
    with Recorder() as rec:
        out = torch.ops.aten._fft_c2c.default(x, dims, norm, forward)
    p = ft.plan_c2c(sizes, strides, CODES[dtype], dims, norm, forward)
    assert p["out_sizes"] == list(out.shape) and p["out_strides"] == list(out.stride()), (sizes, strides, dims, p)
    check_steps(p, rec.calls)


def test_empty_batch_and_no_dims():
    p = ft.plan_r2c([0, 8], [8, 1], 6, [1], 0, True)
    out = torch.ops.aten._fft_r2c.default(torch.empty(0, 8, device="meta"), [1], 0, True)
    assert p["empty"] and p["out_sizes"] == list(out.shape) == [0, 5] and p["out_strides"] == list(out.stride())
    # c2c over no dims is self.clone() (preserve_format)
    x = torch.empty(4, 6, dtype=torch.complex64).t()
    p = ft.plan_c2c([6, 4], list(x.stride()), 9, [], 0, True)
    assert p["clone_only"] and p["out_strides"] == list(torch.ops.aten._fft_c2c.default(x, [], 0, True).stride())


# ---------------------------------------------------------------------------------------------- 2. values
def _np_view(flat, view, itemsize_elems=1):
    return np.lib.stride_tricks.as_strided(flat, shape=view["sizes"],
                                           strides=[s * flat.itemsize for s in view["strides"]], writeable=True)


def run_plan(p, x: np.ndarray, forward=True):
    """The executor's data movement (shim_fft.cc), with NumPy's FFT in place of cuFFT."""
    cdtype = np.complex64 if x.dtype == np.float32 or x.dtype == np.complex64 else np.complex128
    bufs = {1: np.full(max(p["buf_elements"], 1), np.nan, dtype=cdtype),
            2: np.full(max(p["buf_elements"], 1), np.nan, dtype=cdtype)}
    if p["clone_only"]:
        out = _np_view(bufs[1], {"sizes": p["out_sizes"], "strides": p["out_strides"]})
        out[...] = x
        return out
    for s in p["steps"]:
        src = x if s["in"] == 0 else _np_view(bufs[s["in"]], s["input"])
        packed = np.ascontiguousarray(np.transpose(src, s["permute"]))  # the scratch copy (or the input itself)
        nb = len(s["permute"]) - len(s["dims"])
        sig = packed.reshape([s["batch"]] + s["in_extent"])
        axes = list(range(1, 1 + len(s["dims"])))
        if s["real_input"]:
            res = np.fft.rfftn(sig, s=s["n"], axes=axes)  # one-sided along the last signal dim
        else:
            res = np.fft.fftn(sig, axes=axes) if forward else np.fft.ifftn(sig, axes=axes) * np.prod(s["n"])
        # contiguous [batch, out_extent...]: a two-sided r2c output leaves the second half to the fill
        outb = np.full([s["batch"]] + s["out_extent"], np.nan, dtype=cdtype)
        outb[tuple(slice(0, e) for e in res.shape)] = res
        bufs[s["out"]][:outb.size] = outb.reshape(-1)
        assert nb >= 0
    if p["scale"] != 1.0:
        v = _np_view(bufs[p["scale_buf"]], p["scale_view"])
        v *= p["scale"]
    if p["expand"]:
        dst = _np_view(bufs[3 - p["expand_from"]], p["expand_dst"])
        dst[...] = _np_view(bufs[p["expand_from"]], p["expand_src"])
    out = _np_view(bufs[p["out_buf"]], {"sizes": p["out_sizes"], "strides": p["out_strides"]})
    if p["fill_conjugate"]:
        # The kernel's rule: each element past n/2 along the last dim is the conjugate of the element mirrored
        # ((size - i) % size) along every transformed dim.
        sizes, ld, dims = p["out_sizes"], p["last_dim"], p["dims"]
        half = sizes[ld] // 2 + 1
        for idx in np.ndindex(*sizes):
            if idx[ld] < half:
                continue
            src = list(idx)
            for d in dims:
                src[d] = (sizes[d] - idx[d]) % sizes[d]
            out[idx] = np.conj(out[tuple(src)])
    return out


def _strided_input(sizes, strides, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))
    storage = torch.randn(extent, generator=g, dtype=torch.float64)
    if dtype.is_complex:
        storage = torch.complex(storage, torch.randn(extent, generator=g, dtype=torch.float64))
    return torch.as_strided(storage.to(dtype), sizes, strides)


@given(lay=layouts(max_dims=4, max_size=5), data=st.data())
@settings(**dict(SETTINGS, max_examples=150))
def test_r2c_executor_model_matches_torch_fft(lay, data):
    sizes, strides = lay
    dims = data.draw(dim_lists(len(sizes)))
    onesided = data.draw(st.booleans())
    norm = data.draw(st.integers(0, 2))
    x = _strided_input(sizes, strides, torch.float64, data.draw(st.integers(0, 1 << 20)))
    want = torch.ops.aten._fft_r2c.default(x, dims, norm, onesided)
    p = ft.plan_r2c(sizes, strides, 7, dims, norm, onesided)
    got = run_plan(p, x.numpy())
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)


@given(lay=layouts(max_dims=5, max_size=4), data=st.data())
@settings(**dict(SETTINGS, max_examples=150))
def test_c2c_executor_model_matches_torch_fft(lay, data):
    sizes, strides = lay
    dims = data.draw(dim_lists(len(sizes)))
    forward = data.draw(st.booleans())
    norm = data.draw(st.integers(0, 2))
    x = _strided_input(sizes, strides, torch.complex128, data.draw(st.integers(0, 1 << 20)))
    want = torch.ops.aten._fft_c2c.default(x, dims, norm, forward)
    p = ft.plan_c2c(sizes, strides, 10, dims, norm, forward)
    got = run_plan(p, x.numpy(), forward=forward)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)


def test_executor_model_on_the_zoo_and_fnet_shapes():
    """pat_rfft (rfft over the last dim of [4, 1024]) and FNet's fft2 over (seq, hidden) of [2, 64, 128]."""
    x = _strided_input([4, 1024], [1024, 1], torch.float64, 1)
    p = ft.plan_r2c([4, 1024], [1024, 1], 7, [1], 0, True)
    assert len(p["steps"]) == 1 and p["steps"][0]["input_packed"] and p["out_strides"] == [513, 1]
    np.testing.assert_allclose(run_plan(p, x.numpy()), torch.fft.rfft(x).numpy(), rtol=1e-10, atol=1e-9)
    z = _strided_input([2, 64, 128], [8192, 128, 1], torch.complex128, 2)
    p = ft.plan_c2c([2, 64, 128], [8192, 128, 1], 10, [1, 2], 0, True)
    assert len(p["steps"]) == 1 and p["steps"][0]["n"] == [64, 128] and p["out_strides"] == [8192, 128, 1]
    np.testing.assert_allclose(run_plan(p, z.numpy()), torch.fft.fft2(z).numpy(), rtol=1e-10, atol=1e-9)


# ---------------------------------------------------------------------------------------------- 3. refusals
def test_refusals():
    with pytest.raises(ValueError, match=r"ShimError: plan_r2c: Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        ft.plan_r2c([3, 4], [4, 1], 6, [2], 0, True)
    with pytest.raises(ValueError, match="ShimError: plan_r2c: dim 1 appears multiple times"):
        ft.plan_r2c([3, 4], [4, 1], 6, [1, -1], 0, True)
    with pytest.raises(ValueError, match="ShimError: plan_r2c: dim is empty"):
        ft.plan_r2c([3, 4], [4, 1], 6, [], 0, True)
    with pytest.raises(ValueError, match=r"ShimError: plan_r2c: Invalid number of data points \(0\) specified"):
        ft.plan_r2c([3, 0], [1, 1], 6, [1], 0, True)
    with pytest.raises(ValueError, match="ShimError: plan_c2c: normalization is 3"):
        ft.plan_c2c([3, 4], [4, 1], 9, [1], 3, True)
    with pytest.raises(ValueError, match="ShimError: plan_r2c: a real-to-complex FFT takes a floating-point tensor, "
                                         "got int64"):
        ft.plan_r2c([4], [1], 4, [0], 0, True)
    with pytest.raises(ValueError, match="ShimError: plan_c2c: a complex-to-complex FFT takes a complex tensor, got "
                                         "float32"):
        ft.plan_c2c([4], [1], 6, [0], 0, True)
    for code, name in ((5, "float16"), (15, "bfloat16")):
        with pytest.raises(ValueError, match=f"NotSupported: plan_r2c: self is {name}; this shim's FFTs take float32"):
            ft.plan_r2c([8], [1], code, [0], 0, True)
    with pytest.raises(ValueError, match="NotSupported: plan_c2c: self has 13 dims"):
        ft.plan_c2c([1] * 13, [1] * 13, 9, [0], 0, True)
    # torch refuses the same dims and sizes
    with pytest.raises(IndexError):
        torch.fft.rfft(torch.zeros(3, 4), dim=2)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        torch.fft.rfft(torch.zeros(3, 0), dim=1)
