"""The SDPA planner (via _attention_testing) against torch's own meta functions on CPU: for random shapes and the
layouts Inductor passes (contiguous, [B, T, H, D] transposed, slices of a fused qkv projection, expanded heads,
size-1 dims with odd strides), every output the plan allocates has the sizes and strides torch's meta function gives
(Inductor bakes those strides into the code that reads the outputs), and the plan refuses what the shim cannot run."""
import math

import pytest
import testing_module
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st




at = testing_module.load("_attention_testing", "shims/attention")
CODES = {torch.float16: 5, torch.bfloat16: 15, torch.float32: 6, torch.bool: 11}
SETTINGS = dict(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
aten = torch.ops.aten


def meta(t):
    return (list(t.shape), list(t.stride()), CODES[t.dtype])


@st.composite
def layouts(draw, b, h, t, d, dtype):
    """A meta tensor [b, h, t, d] in one of the layouts Inductor hands to SDPA."""
    kind = draw(st.sampled_from(["contiguous", "bthd", "fused_qkv", "padded", "permuted"]))
    if kind == "contiguous":
        x = torch.empty(b, h, t, d, dtype=dtype, device="meta")
    elif kind == "bthd":  # x.view(B, T, H, D).transpose(1, 2)
        x = torch.empty(b, t, h, d, dtype=dtype, device="meta").transpose(1, 2)
    elif kind == "fused_qkv":  # qkv.view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)[i]: not dense
        x = torch.empty(b, t, 3, h, d, dtype=dtype, device="meta").permute(2, 0, 3, 1, 4)[draw(st.integers(0, 2))]
    elif kind == "padded":  # head dim padded: rows longer than d
        x = torch.empty(b, h, t, d + 8, dtype=dtype, device="meta")[..., :d]
    else:  # heads outermost
        x = torch.empty(h, b, t, d, dtype=dtype, device="meta").transpose(0, 1)
    return x


DIMS = st.sampled_from([8, 16, 64, 80, 96, 128, 256])


@given(data=st.data())
@settings(**SETTINGS)
def test_flash_outputs_match_torch_meta(data):
    b, hkv = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    hq = hkv * data.draw(st.sampled_from([1, 2, 4]))
    tq, tkv, d = data.draw(st.integers(1, 70)), data.draw(st.integers(1, 70)), data.draw(DIMS)
    dtype = data.draw(st.sampled_from([torch.float16, torch.bfloat16]))
    q = data.draw(layouts(b, hq, tq, d, dtype))
    k = data.draw(layouts(b, hkv, tkv, d, dtype))
    v = data.draw(layouts(b, hkv, tkv, d, dtype))
    causal = data.draw(st.booleans())
    scale = data.draw(st.one_of(st.none(), st.floats(0.01, 2.0)))
    want = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
    p = at.plan("flash", meta(q), meta(k), meta(v), None, 0.0, causal, False, True, scale)
    assert p["out_sizes"] == list(want[0].shape) and p["out_strides"] == list(want[0].stride()), (q.stride(), p)
    assert p["lse_sizes"] == list(want[1].shape) and p["lse_strides"] == list(want[1].stride())
    assert p["seed_sizes"] == list(want[6].shape)
    assert p["dims"] == [b, hq, hkv, tq, tkv, d, d]
    assert p["scale"] == pytest.approx(scale if scale is not None else 1 / math.sqrt(d), rel=1e-6)


@given(data=st.data())
@settings(**SETTINGS)
def test_efficient_and_cudnn_outputs_match_torch_meta(data):
    op = data.draw(st.sampled_from(["efficient", "cudnn"]))
    b, h = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    tq, tkv = data.draw(st.integers(1, 100)), data.draw(st.integers(1, 100))
    d, dv = data.draw(DIMS), data.draw(DIMS)
    dtype = data.draw(st.sampled_from([torch.float16, torch.bfloat16]))
    q = data.draw(layouts(b, h, tq, d, dtype))
    k = data.draw(layouts(b, h, tkv, d, dtype))
    v = data.draw(layouts(b, h, tkv, dv, dtype))
    lse = data.draw(st.booleans())
    bias = None
    if data.draw(st.booleans()):
        # Expanded over batch and/or heads (key padding masks, ALiBi-like per-head biases), rows padded to 16.
        bb, bh = data.draw(st.sampled_from([1, b])), data.draw(st.sampled_from([1, h]))
        pad = (tkv + 15) // 16 * 16
        bias = torch.empty(bb, bh, tq, pad, dtype=dtype, device="meta")[..., :tkv].expand(b, h, tq, tkv)
    if op == "efficient":
        want = aten._scaled_dot_product_efficient_attention(q, k, v, bias, lse, 0.0, False)
    else:
        want = aten._scaled_dot_product_cudnn_attention(q, k, v, bias, lse, 0.0, False, False)
    p = at.plan(op, meta(q), meta(k), meta(v), None if bias is None else meta(bias), 0.0, False, False, lse, None)
    assert p["out_sizes"] == list(want[0].shape) and p["out_strides"] == list(want[0].stride()), (op, q.stride(), p)
    assert p["lse_sizes"] == list(want[1].shape) and p["lse_strides"] == list(want[1].stride()), (op, p)
    if bias is not None:
        assert p["has_bias"] and p["bias_sizes"][2:] == [tq, tkv] and p["bias_strides"][3] == 1
        assert p["bias_sizes"][:2] == [bias.shape[0] if bias.stride(0) else 1, bias.shape[1] if bias.stride(1) else 1]


def _qkv(dtype=torch.float16, b=2, h=4, hkv=4, tq=8, tkv=8, d=64, dv=64):
    q = torch.empty(b, h, tq, d, dtype=dtype, device="meta")
    k = torch.empty(b, hkv, tkv, d, dtype=dtype, device="meta")
    v = torch.empty(b, hkv, tkv, dv, dtype=dtype, device="meta")
    return meta(q), meta(k), meta(v)


@pytest.mark.parametrize("case, kind, message", [
    (dict(dtype=torch.float32), "NotSupported", "cuDNN attention runs float16 and bfloat16; got float32"),
    (dict(d=36, dv=36), "NotSupported", "head dim 36"),
    (dict(d=512, dv=512), "NotSupported", "up to 256"),
    (dict(h=6, hkv=4), "ShimError", "query heads (6) must be a multiple of key/value heads (4)"),
    (dict(tkv=0), "NotSupported", "key and value have 0 tokens"),
])
def test_refusals(case, kind, message):
    q, k, v = _qkv(**case)
    with pytest.raises(ValueError, match=f"^{kind}") as e:
        at.plan("cudnn", q, k, v, None, 0.0, False, False, True, None)
    assert message in str(e.value)


def test_dropout_debug_mask_and_boolean_bias_are_refused():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="NotSupported.*dropout_p=0.1.*only dropout_p=0"):
        at.plan("flash", q, k, v, None, 0.1, False, False, True, None)
    with pytest.raises(ValueError, match="NotSupported.*return_debug_mask"):
        at.plan("flash", q, k, v, None, 0.0, False, True, True, None)
    mask = meta(torch.empty(2, 4, 8, 8, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match="NotSupported.*boolean attn_bias"):
        at.plan("efficient", q, k, v, mask, 0.0, False, False, True, None)
    wrong = meta(torch.empty(2, 4, 8, 8, dtype=torch.bfloat16, device="meta"))
    with pytest.raises(ValueError, match="ShimError.*attn_bias must have the query's dtype float16"):
        at.plan("efficient", q, k, v, wrong, 0.0, False, False, True, None)
    bad = meta(torch.empty(2, 4, 8, 5, dtype=torch.float16, device="meta"))
    with pytest.raises(ValueError, match="does not broadcast to"):
        at.plan("cudnn", q, k, v, bad, 0.0, False, False, True, None)


def test_flash_needs_equal_head_dims_and_takes_no_bias():
    q, k, v = _qkv(dv=128)
    with pytest.raises(ValueError, match="flash attention needs value's head dim"):
        at.plan("flash", q, k, v, None, 0.0, False, False, True, None)


def test_empty_batch_allocates_and_runs_nothing():
    q, k, v = _qkv(b=0)
    p = at.plan("cudnn", q, k, v, None, 0.0, True, False, True, None)
    assert p["empty"] and p["out_sizes"] == [0, 4, 8, 64]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_the_lowering_time_refusal_agrees_with_the_planner(dtype):
    """aotirt.platforms.check_attention (attention_backend=CUDNN, before Inductor) refuses exactly the dtypes, head
    dims and dropout this planner refuses at run time: its constants are a copy of sdpa_plan's, this keeps them one."""
    import aotirt
    from aotirt import platforms
    from aotirt.errors import UnsupportedShimError
    opts = aotirt.CompileOptions(attention_backend="CUDNN")
    name = str(dtype).replace("torch.", "")
    for d, dv in ((8, 8), (12, 12), (64, 64), (80, 80), (128, 64), (256, 256), (264, 264), (64, 12), (64, 264)):
        for dropout in (0.0, 0.1):
            q = torch.empty(1, 2, 16, d, dtype=dtype, device="meta")
            v = torch.empty(1, 2, 16, dv, dtype=dtype, device="meta")
            try:
                at.plan("efficient", meta(q), meta(q), meta(v), None, dropout, False, False, False, None)
                planner_ok = True
            except ValueError as e:
                assert "NotSupported" in str(e), e
                planner_ok = False
            feats = platforms.ModelFeatures(attention=(("scaled_dot_product_attention", name, d, dv, dropout),))
            try:
                platforms.check_attention(opts, feats)
                lowering_ok = True
            except UnsupportedShimError:
                lowering_ok = False
            assert planner_ok == lowering_ok, (name, d, dv, dropout, planner_ok)
