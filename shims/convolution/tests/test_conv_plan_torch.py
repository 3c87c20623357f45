"""The convolution planner (via _conv_testing) against torch on CPU: output sizes equal torch's meta function's for
random 1-D/2-D/3-D, strided, padded, dilated, grouped (depthwise too) and transposed (with output_padding)
convolutions; the output layout follows torch's cuDNN rule (cudnn_conv_suggest_memory_format: channels-last when
input or weight suggests it, torch._prims_common.suggest_memory_format); invalid arguments are refused as ATen
refuses them (torch's meta function raises too)."""

import pytest
import testing_module
import torch
from torch._prims_common import suggest_memory_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st




ct = testing_module.load("_conv_testing", "shims/convolution")
CODES = {torch.float16: 5, torch.bfloat16: 15, torch.float32: 6, torch.float64: 7}
SETTINGS = dict(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def meta(t):
    return (list(t.shape), list(t.stride()), CODES[t.dtype])


def cl_format(n):
    return {2: torch.channels_last, 3: torch.channels_last_3d}.get(n)


@given(data=st.data())
@settings(**SETTINGS)
def test_output_sizes_and_layout_match_torch(data):
    n = data.draw(st.integers(1, 3))
    transposed = data.draw(st.booleans())
    groups = data.draw(st.sampled_from([1, 1, 2, 4]))
    depthwise = data.draw(st.booleans()) and not transposed
    cin = groups * data.draw(st.integers(1, 3))
    if depthwise:
        groups = cin
    cout = groups * data.draw(st.integers(1, 3))
    ks = [data.draw(st.integers(1, 4)) for _ in range(n)]
    stride = [data.draw(st.integers(1, 3)) for _ in range(n)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(n)]
    padding = [data.draw(st.integers(0, 2)) for _ in range(n)]
    outpad = [data.draw(st.integers(0, max(stride[i], dilation[i]) - 1)) for i in range(n)] if transposed else [0]
    spatial = [data.draw(st.integers(dilation[i] * (ks[i] - 1) + 1, 12)) for i in range(n)]
    batch = data.draw(st.integers(1, 3))
    dtype = data.draw(st.sampled_from([torch.float16, torch.bfloat16, torch.float32]))
    x = torch.empty(batch, cin, *spatial, dtype=dtype, device="meta")
    wshape = [cin, cout // groups, *ks] if transposed else [cout, cin // groups, *ks]
    w = torch.empty(*wshape, dtype=dtype, device="meta")
    if cl_format(n) is not None:
        if data.draw(st.booleans()):
            x = x.contiguous(memory_format=cl_format(n))
        if data.draw(st.booleans()):
            w = w.contiguous(memory_format=cl_format(n))
    bias = torch.empty(cout, dtype=dtype, device="meta") if data.draw(st.booleans()) else None
    args = (meta(x), meta(w), None if bias is None else meta(bias), stride, padding, dilation, transposed, outpad,
            groups)
    try:
        want = torch.ops.aten.convolution(x, w, bias, stride, padding, dilation, transposed, outpad, groups)
    except RuntimeError as e:  # torch refuses it (e.g. a negative output size): so must we
        with pytest.raises(ValueError, match="ShimError"):
            ct.plan(*args)
        return
    p = ct.plan(*args)
    assert p["out_sizes"] == list(want.shape), (p, want.shape)
    # torch on CUDA leaves cuDNN for its slow transposed kernels when output_padding >= stride on some dim
    # (ConvParams::is_output_padding_big; seen on the H200): those return contiguous outputs.
    big_outpad = transposed and any(op >= s for op, s in zip(outpad, stride))
    cl = n in (2, 3) and not big_outpad and cl_format(n) in (suggest_memory_format(x), suggest_memory_format(w))
    # What torch's cuDNN path allocates: at::empty(output_size, memory_format) (strides computed, not relaxed).
    expect = torch.empty(want.shape, device="meta", memory_format=cl_format(n) if cl else torch.contiguous_format)
    assert p["out_strides"] == list(expect.stride()), (cl, p)
    if n == 1:
        assert p["x_dims"] == list(x.shape) + [1] and p["y_dims"] == list(want.shape) + [1]
        assert p["conv_padding"] == padding + [0] and p["conv_stride"] == stride + [1]


@given(data=st.data())
@settings(**SETTINGS)
def test_suggest_memory_format_matches_torch(data):
    nd = data.draw(st.sampled_from([4, 5]))
    sizes = [data.draw(st.integers(1, 4)) for _ in range(nd)]
    perm = data.draw(st.permutations(list(range(nd))))
    t = torch.empty(*[sizes[i] for i in perm], device="meta").permute(*[perm.index(i) for i in range(nd)])
    want = {torch.contiguous_format: 0, torch.channels_last: 1, torch.channels_last_3d: 2}[suggest_memory_format(t)]
    assert ct.suggest_memory_format(list(t.shape), list(t.stride())) == want, (t.shape, t.stride())


def _plan(x, w, stride=(1,), padding=(0,), dilation=(1,), transposed=False, outpad=(0,), groups=1, bias=None):
    return ct.plan(meta(x), meta(w), bias, list(stride), list(padding), list(dilation), transposed, list(outpad),
                   groups)


@pytest.mark.parametrize("kw, message", [
    (dict(groups=3), "expects"),
    (dict(stride=(0,)), "stride must be positive"),
    (dict(padding=(-1,)), "padding must be non-negative"),
    (dict(stride=(1, 1, 1)), "stride has 3 values; expected 1 or 2"),
])
def test_invalid_arguments_are_refused_as_aten_does(kw, message):
    x = torch.empty(1, 4, 8, 8, device="meta")
    w = torch.empty(6, 4, 3, 3, device="meta")
    with pytest.raises(ValueError, match=f"ShimError.*{message}"):
        _plan(x, w, **kw)


def test_unsupported_dtypes_and_a_too_small_input():
    x = torch.empty(1, 4, 8, 8, device="meta", dtype=torch.float64)
    with pytest.raises(ValueError, match="NotSupported.*float16, bfloat16 and float32; got float64"):
        _plan(x, torch.empty(6, 4, 3, 3, device="meta", dtype=torch.float64))
    x = torch.empty(1, 4, 2, 2, device="meta")
    with pytest.raises(ValueError, match="smaller than the kernel's dilated size"):
        _plan(x, torch.empty(6, 4, 3, 3, device="meta"))
    with pytest.raises(Exception):  # torch refuses it too
        torch.ops.aten.convolution(x, torch.empty(6, 4, 3, 3, device="meta"), None, [1], [0], [1], False, [0], 1)


def test_bias_is_a_packed_channel_vector_and_must_be_contiguous():
    x = torch.empty(1, 4, 8, 8, device="meta")
    w = torch.empty(6, 4, 3, 3, device="meta")
    p = _plan(x, w, bias=meta(torch.empty(6, device="meta")))
    assert p["bias_dims"] == [1, 6, 1, 1] and p["bias_strides"] == [6, 1, 1, 1]
    p1 = _plan(torch.empty(1, 4, 8, device="meta"), torch.empty(6, 4, 3, device="meta"),
               bias=meta(torch.empty(6, device="meta")))
    assert p1["bias_dims"] == [1, 6, 1, 1]  # 1-D runs as 2-D
    strided = torch.empty(12, device="meta")[::2]
    with pytest.raises(ValueError, match="NotSupported.*bias must be contiguous"):
        _plan(x, w, bias=meta(strided))


@given(data=st.data())
@settings(**SETTINGS)
def test_transposed_geometry_reproduces_torch(data):
    """What the executor gives cuDNN's dgrad for a transposed convolution (pre/post padding, the written view of y,
    the zero fill) reproduces torch's conv_transpose in float64 on CPU: dx[j] = full[j + pre] on the written view,
    zeros past it, and cuDNN's own size rule holds for those paddings (else it refuses the graph)."""
    n = data.draw(st.integers(1, 3))
    ks = [data.draw(st.integers(1, 4)) for _ in range(n)]
    stride = [data.draw(st.integers(1, 3)) for _ in range(n)]
    dilation = [data.draw(st.integers(1, 3)) for _ in range(n)]
    padding = [data.draw(st.integers(0, 3)) for _ in range(n)]
    outpad = [data.draw(st.integers(0, max(stride[i], dilation[i]) - 1)) for i in range(n)]
    spatial = [data.draw(st.integers(1, 6)) for _ in range(n)]
    x = torch.randn(1, 2, *spatial, dtype=torch.float64)
    w = torch.randn(2, 3, *ks, dtype=torch.float64)
    conv = {1: torch.nn.functional.conv_transpose1d, 2: torch.nn.functional.conv_transpose2d,
            3: torch.nn.functional.conv_transpose3d}[n]
    try:
        want = conv(x, w, stride=stride, padding=padding, output_padding=outpad, dilation=dilation)
    except RuntimeError:
        return  # torch refuses it (output too small)
    as_f32 = lambda t: (list(t.shape), list(t.stride()), CODES[torch.float32])
    p = ct.plan(as_f32(x), as_f32(w), None, stride, padding, dilation, True, outpad, 1)
    assert p["out_sizes"] == list(want.shape)
    full = conv(x, w, stride=stride, dilation=dilation)  # no padding, no output_padding
    got = torch.zeros_like(want)
    if not p["nothing_to_convolve"]:
        region = tuple(slice(0, p["y_write_dims"][2 + i]) for i in range(n))
        src = tuple(slice(p["pre_padding"][i], p["pre_padding"][i] + p["y_write_dims"][2 + i])
                    for i in range(n))
        got[(slice(None), slice(None)) + region] = full[(slice(None), slice(None)) + src]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert p["zero_fill"] == any(op > pad for op, pad in zip(outpad, padding))
    for i in range(n):
        wr, pre, post = p["y_write_dims"][2 + i], p["pre_padding"][i], p["post_padding"][i]
        assert pre >= 0 and post >= 0
        if not p["nothing_to_convolve"]:
            assert (wr + pre + post - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 == spatial[i]
