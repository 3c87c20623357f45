"""Attention end to end (issue 13): models with scaled_dot_product_attention lowered with attention_backend CUDNN
call the SDPA shims (cuDNN underneath), match eager, replay under a whole-model CUDA graph; lowered with MATH they
call none; lowered with TRITON they run our Triton kernel (aotirt.triton_attention) compiled into the package. A causal decoder block (GQA, bf16, T=1024), a ViT-like encoder block (fp16, no mask) and a block with an
additive padding mask (bf16).

First passed on the H200 at 995cda4 (attention) and 54a3493 (convolution): tests/gpu/LAST_RUN.md."""
import zipfile

import pytest

from conftest import HAVE_CUDA, TOL, compiled, requires_gpu

SDPA_SHIMS = ("aoti_torch_cuda__scaled_dot_product_flash_attention",
              "aoti_torch_cuda__scaled_dot_product_efficient_attention",
              "aoti_torch_cuda__scaled_dot_product_cudnn_attention")

if HAVE_CUDA:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        """Pre-norm attention block: fused qkv projection (q, k, v are slices of it, as Inductor passes them), GQA
        when kv_heads < heads, causal or an additive mask, output projection."""

        def __init__(self, d=512, heads=8, kv_heads=8, causal=False):
            super().__init__()
            self.h, self.kv, self.hd, self.causal = heads, kv_heads, d // heads, causal
            self.norm = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, (heads + 2 * kv_heads) * self.hd)
            self.out = nn.Linear(d, d)

        def forward(self, x, mask=None):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm(x)).split([self.h * self.hd, self.kv * self.hd, self.kv * self.hd], -1)
            q = q.view(b, t, self.h, self.hd).transpose(1, 2)
            k = k.view(b, t, self.kv, self.hd).transpose(1, 2)
            v = v.view(b, t, self.kv, self.hd).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal,
                                               enable_gqa=self.kv != self.h)
            return x + self.out(y.transpose(1, 2).reshape(b, t, -1))

    CASES = {
        "decoder_gqa_causal": (lambda: Block(512, 8, 2, causal=True), torch.bfloat16, (2, 1024), False),
        "vit_encoder": (lambda: Block(384, 6, 6), torch.float16, (16, 197), False),
        "padding_mask": (lambda: Block(256, 4, 4), torch.bfloat16, (4, 128), True),
    }

    def inputs(case, seed):
        _, dt, (b, t), masked = CASES[case]
        g = torch.Generator(device="cuda").manual_seed(seed)
        d = {"decoder_gqa_causal": 512, "vit_encoder": 384, "padding_mask": 256}[case]
        x = torch.randn(b, t, d, device="cuda", dtype=dt, generator=g)
        if not masked:
            return (x,)
        keep = torch.rand(b, 1, 1, t, device="cuda", generator=g) < 0.8
        keep[..., 0] = True
        return (x, torch.zeros(b, 1, 1, t, device="cuda", dtype=dt).masked_fill(~keep, float("-inf")))


def _wrapper_source(path):
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith(".wrapper.cpp"))).decode()


@requires_gpu
@pytest.mark.parametrize("backend", ["CUDNN", "MATH", "TRITON"])
@pytest.mark.parametrize("case", ["decoder_gqa_causal", "vit_encoder", "padding_mask"])
def test_attention_models_match_eager(case, backend):
    import aotirt
    factory, dt, _, _ = CASES[case]
    torch.manual_seed(0)
    opts = aotirt.CompileOptions(max_autotune=False, attention_backend=backend)
    model, path = compiled(f"attn_{case}_{backend}", lambda: factory().to("cuda", dt).eval(), inputs(case, 0),
                           options=opts)
    src = _wrapper_source(path)
    called = [s for s in SDPA_SHIMS if s + "(" in src]
    if backend == "CUDNN":
        assert called, "attention_backend=CUDNN but the generated code calls no SDPA shim"
    else:
        assert not called, f"attention_backend={backend} but the generated code calls {called}"
    # TRITON: our kernel (triton_attention.sdpa_fwd) is among the wrapper's kernels; MATH: it is not
    assert ("sdpa_fwd" in src) == (backend == "TRITON"), f"attention_backend={backend}: sdpa_fwd in wrapper is wrong"
    runner = aotirt.load(path)
    for seed in (1, 2, 3):
        xs = inputs(case, seed)
        with torch.no_grad():
            want = model(*xs)
        before = [x.clone() for x in xs]
        got = runner(*xs)
        for x, b in zip(xs, before):  # nothing writes into the caller's tensors (the mask included)
            assert torch.equal(x, b), f"attention_backend={backend}: the run changed an input"
        got = got[0] if isinstance(got, (list, tuple)) else got
        torch.testing.assert_close(got, want, **TOL[str(dt).split(".")[-1]])


@requires_gpu
@pytest.mark.parametrize("backend", ["CUDNN", "TRITON"])
def test_fused_attention_under_a_whole_model_graph(backend):
    import aotirt
    factory, dt, _, _ = CASES["decoder_gqa_causal"]
    torch.manual_seed(0)
    opts = aotirt.CompileOptions(max_autotune=False, attention_backend=backend)
    model, path = compiled(f"attn_decoder_gqa_causal_{backend}", lambda: factory().to("cuda", dt).eval(),
                           inputs("decoder_gqa_causal", 0), options=opts)
    captured = aotirt.capture(aotirt.load(path), *inputs("decoder_gqa_causal", 0))
    for seed in (4, 5):
        xs = inputs("decoder_gqa_causal", seed)
        with torch.no_grad():
            want = model(*xs)
        got = captured(*xs)
        got = got[0] if isinstance(got, (list, tuple)) else got
        torch.testing.assert_close(got, want, **TOL["bfloat16"])


if HAVE_CUDA:
    class MixedPrecision(nn.Module):
        """A bf16 causal block (cuDNN takes its SDPA) then an fp32 block (cuDNN does not: the Triton kernel runs it)."""

        def __init__(self):
            super().__init__()
            self.low = Block(256, 4, 4, causal=True).to(torch.bfloat16)
            self.high = Block(256, 4, 4)

        def forward(self, x):
            return self.high(self.low(x).float())


@requires_gpu
def test_default_attention_backend_sends_each_call_to_the_kernel_that_takes_it():
    """linux_cuda's default (CUDNN,TRITON, platforms.PLATFORM_DEFAULTS): the bf16 SDPA calls an SDPA shim, the fp32 one
    our Triton kernel, in one package; outputs match eager, also under a whole-model CUDA graph."""
    import aotirt
    torch.manual_seed(0)

    def make_inputs(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return (torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16, generator=g),)

    model, path = compiled("attn_default_mixed", lambda: MixedPrecision().to("cuda").eval(), make_inputs(0),
                           options=aotirt.CompileOptions(max_autotune=False))
    src = _wrapper_source(path)
    assert [s for s in SDPA_SHIMS if s + "(" in src], "the bf16 SDPA calls no SDPA shim"
    assert "sdpa_fwd" in src, "the fp32 SDPA does not run the Triton kernel"
    runner = aotirt.load(path)
    assert runner.metadata["aotirt_attention_backend"] == "CUDNN,TRITON"
    captured = aotirt.capture(aotirt.load(path), *make_inputs(0))
    for seed in (1, 2):
        xs = make_inputs(seed)
        with torch.no_grad():
            want = model(*xs)
        for run in (runner, captured):
            got = run(*xs)
            got = got[0] if isinstance(got, (list, tuple)) else got
            torch.testing.assert_close(got, want, **TOL["bfloat16"])
