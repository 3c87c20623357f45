"""attention_backend TRITON on the CPU (issue 13, item 3): the op's schema and fake shapes, the graph rewrite of an
exported model's SDPA calls (names kept, what it leaves to MATH), the kernel's config pruning, the refusals before
Inductor, and that platforms' copy of the kernel's limits agrees with the kernel module. The kernel itself runs in
tests/gpu/test_triton_attention_gpu.py."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import aotirt
from aotirt import lowering, platforms
from aotirt import triton_attention as ta


class _Two(torch.nn.Module):
    def forward(self, q, k, v, mask):
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return y, F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True)


def _qkv(dv=24):
    return (torch.randn(2, 4, 8, 16), torch.randn(2, 2, 6, 16), torch.randn(2, 2, 6, dv),
            torch.rand(2, 1, 1, 6) > 0.3)


def test_the_op_has_torchs_sdpa_arguments_without_dropout():
    op = ta.register()
    assert op is ta.register()  # registered once per process
    assert str(op._schema) == "aotirt::sdpa_triton" + ta.SCHEMA
    q, k, v, m = _qkv()
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fq, fk, fv, fm = (mode.from_tensor(x) for x in (q, k, v, m))
        out = op(fq, fk, fv, fm, False, None, True)
    assert tuple(out.shape) == (2, 4, 8, 24) and out.dtype == torch.float32
    with FakeTensorMode() as mode:
        fq, fk, fv = (mode.from_tensor(x) for x in (q, k, v))
        with pytest.raises(RuntimeError, match="need enable_gqa=True"):
            op(fq, fk, fv, None, False, None, False)


def test_replace_sdpa_rewrites_every_4d_call_and_keeps_the_names():
    ep = torch.export.export(_Two(), _qkv())
    names = [n.name for n in ep.graph.nodes if n.target == torch.ops.aten.scaled_dot_product_attention.default]
    assert len(names) == 2
    assert ta.replace_sdpa(torch, ep) == (2, 0)
    rewritten = [n for n in ep.graph.nodes if n.target == ta.register()]
    assert [n.name for n in rewritten] == names  # outputs keep the graph signature's names
    assert rewritten[0].args[3] is not None and rewritten[0].args[4:] == (False, None, True)
    assert rewritten[1].args[3:] == (None, True, 0.3, True)
    assert all(tuple(n.meta["val"].shape) == (2, 4, 8, 24) and n.meta["val"].is_contiguous() for n in rewritten)
    assert "sdpa_triton" in ep.graph_module.code
    assert ta.replace_sdpa(torch, ep) == (0, 0)  # nothing left to rewrite


class _Odd(torch.nn.Module):
    def forward(self, q3, q, k, v):
        return (F.scaled_dot_product_attention(q3, q3, q3),  # 3-D: left to MATH
                F.scaled_dot_product_attention(q, k, v, dropout_p=0.2))  # dropout: refused by check_attention


def test_replace_sdpa_leaves_other_ranks_and_dropout_alone():
    q = torch.randn(1, 2, 4, 8)
    ep = torch.export.export(_Odd(), (torch.randn(2, 4, 8), q, q.clone(), q.clone()))
    assert ta.replace_sdpa(torch, ep) == (0, 2)
    feats = platforms.model_features(ep.graph)
    with pytest.raises(aotirt.UnsupportedShimError, match=r"attention_backend='TRITON' cannot run 1 SDPA call.*"
                                                          r"dropout_p=0.2.*attention_backend='MATH'"):
        platforms.check_attention(aotirt.CompileOptions(attention_backend="TRITON"), feats)


def _features(dtype, d, dv=None):
    q = torch.randn(1, 2, 8, d, dtype=dtype)
    v = torch.randn(1, 2, 8, dv or d, dtype=dtype)

    class A(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v)

    return platforms.model_features(torch.export.export(A(), (q, q.clone(), v)).graph)


def test_triton_attention_refusals_and_what_it_takes_that_cudnn_does_not():
    triton, cudnn = aotirt.CompileOptions(attention_backend="TRITON"), aotirt.CompileOptions(attention_backend="CUDNN")
    for feats in (_features(torch.float32, 64), _features(torch.bfloat16, 12), _features(torch.float16, 80, 40)):
        platforms.check_attention(triton, feats)  # float32 and head dims off the multiples of 8 run here
    with pytest.raises(aotirt.UnsupportedShimError, match="attention_backend='MATH' or 'TRITON'"):
        platforms.check_attention(cudnn, _features(torch.float32, 64))
    for feats, why in ((_features(torch.float64, 64), "dtype float64"),
                       (_features(torch.bfloat16, 320), "query/key head dim 320 \\(up to 256\\)"),
                       (_features(torch.bfloat16, 64, 512), "value head dim 512")):
        with pytest.raises(aotirt.UnsupportedShimError, match=rf"'TRITON' cannot run 1 SDPA call.*{why}"):
            platforms.check_attention(triton, feats)


def test_platforms_copy_of_the_kernel_limits_agrees():
    assert platforms.TRITON_ATTENTION_DTYPES == ta.DTYPES
    assert platforms.TRITON_ATTENTION_MAX_HEAD_DIM == ta.MAX_HEAD_DIM
    assert lowering.SDPA_BACKENDS["TRITON"] == ("MATH",)  # whatever the rewrite leaves is decomposed


@pytest.mark.parametrize("d,dv,elem", [(16, 16, 2), (64, 64, 2), (128, 128, 2), (256, 256, 2), (256, 256, 4),
                                       (128, 256, 4)])
def test_configs_fit_registers_and_shared_memory(d, dv, elem):
    kept = ta.config_candidates(d, dv, elem)
    assert kept
    for bm, bn, warps, stages in kept:
        assert bm * dv <= 64 * 32 * warps
        assert stages * bn * (d + dv) * elem + bm * d * elem <= ta.SMEM_BUDGET_BYTES
    if d <= 64:
        assert (128, 64, 8, 3) in kept  # small heads keep the big tile
    if d == 256:
        assert all(bm <= 64 for bm, *_ in kept)


def test_block_sizes_are_powers_of_two_at_least_16():
    assert [ta._next_pow2(n) for n in (1, 16, 17, 64, 80, 96, 128, 200, 256)] == [16, 16, 32, 64, 128, 128, 128,
                                                                                  256, 256]


# ---- attention_backend CUDNN,TRITON (linux_cuda's default): per call, the cuDNN shims where they take it ----------
class _Mixed(torch.nn.Module):
    """Three SDPA calls: bf16 head dim 64 (cuDNN takes it), fp32 (only Triton), bf16 head dim 12 (only Triton)."""

    def forward(self, q, k, v, q32, k32, v32, q12):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True),
                F.scaled_dot_product_attention(q32, k32, v32),
                F.scaled_dot_product_attention(q12, q12, q12))


def _mixed_inputs():
    bf = torch.bfloat16
    q = torch.randn(1, 2, 8, 64, dtype=bf)
    q32 = torch.randn(1, 2, 8, 64)
    return (q, q.clone(), q.clone(), q32, q32.clone(), q32.clone(), torch.randn(1, 2, 8, 12, dtype=bf))


def test_cudnn_triton_sends_to_triton_exactly_the_calls_cudnn_cannot_take():
    ep = torch.export.export(_Mixed(), _mixed_inputs())
    sdpa = [n for n in ep.graph.nodes if n.target == torch.ops.aten.scaled_dot_product_attention.default]
    opts = aotirt.CompileOptions(attention_backend="triton, cudnn")
    assert opts.attention_backend == "CUDNN,TRITON"
    platforms.check_attention(opts, platforms.model_features(ep.graph))  # every call has a kernel
    picked = lowering.sdpa_nodes_for_triton(torch, ep, opts)
    assert picked == sdpa[1:]  # fp32 and head dim 12; the bf16 d=64 call stays for the cuDNN shims
    assert lowering.sdpa_nodes_for_triton(torch, ep, aotirt.CompileOptions(attention_backend="TRITON")) is None
    assert lowering.sdpa_nodes_for_triton(torch, ep, aotirt.CompileOptions(attention_backend="CUDNN")) == []
    lowering.rewrite_attention(torch, ep, opts)
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"
               and n.target in (ta.register(), torch.ops.aten.scaled_dot_product_attention.default)]
    assert targets == [torch.ops.aten.scaled_dot_product_attention.default, ta.register(), ta.register()]
    # CUDNN alone refuses the same model before Inductor, naming both calls
    with pytest.raises(aotirt.UnsupportedShimError, match=r"'CUDNN' cannot run 2 SDPA call"):
        platforms.check_attention(aotirt.CompileOptions(attention_backend="CUDNN"),
                                  platforms.model_features(torch.export.export(_Mixed(), _mixed_inputs()).graph))


def test_cudnn_triton_refuses_calls_neither_takes_with_both_reasons():
    opts = aotirt.CompileOptions(attention_backend="CUDNN,TRITON")
    with pytest.raises(aotirt.UnsupportedShimError,
                       match=r"'CUDNN,TRITON' cannot run 1 SDPA call.*cuDNN: dtype float64.*Triton: dtype float64.*"
                             r"attention_backend='MATH'"):
        platforms.check_attention(opts, _features(torch.float64, 64))
    with pytest.raises(aotirt.UnsupportedShimError, match=r"Triton: query/key head dim 320"):
        platforms.check_attention(opts, _features(torch.bfloat16, 320))
    # an SDPA already exported as a fused op has only the cuDNN shims (the Triton rewrite takes the aten op)
    fused = platforms.ModelFeatures(attention=(("_scaled_dot_product_flash_attention", "float32", 64, 64, 0.0),))
    with pytest.raises(aotirt.UnsupportedShimError, match=r"_scaled_dot_product_flash_attention: dtype float32"):
        platforms.check_attention(opts, fused)
    platforms.check_attention(opts, platforms.ModelFeatures(
        attention=(("_scaled_dot_product_flash_attention", "bfloat16", 64, 64, 0.0),)))


def test_cudnn_triton_context_is_the_fused_kernels_then_math():
    """Under CUDNN,TRITON the lowering enables the fused kernels in torch's order and MATH last, so an SDPA call torch's
    fused kernels refuse (its rules can be stricter than the shims') is decomposed instead of failing the export."""
    b = torch.backends.cuda
    before = list(torch._C._get_sdp_priority_order())
    with lowering.sdpa_context(torch, aotirt.CompileOptions(attention_backend="CUDNN,TRITON")):
        enabled = (b.cudnn_sdp_enabled(), b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled())
        order = list(torch._C._get_sdp_priority_order())
    assert enabled == (True, True, True, True)
    from torch.nn.attention import SDPBackend
    fused = [int(SDPBackend.CUDNN_ATTENTION), int(SDPBackend.FLASH_ATTENTION), int(SDPBackend.EFFICIENT_ATTENTION)]
    assert max(order.index(x) for x in fused) < order.index(int(SDPBackend.MATH))
    with lowering.sdpa_context(torch, aotirt.CompileOptions(attention_backend="CUDNN")):
        assert not b.math_sdp_enabled()  # CUDNN alone: no silent decomposition
    assert list(torch._C._get_sdp_priority_order()) == before  # restored on exit
