"""LLM decode end to end (issue 14): a Llama-style decoder with a static KV cache, prefill then greedy decoding.

    python benchmarks/decode.py [--out DIR|FILE.json] [--config llama_05b|tiny] [--prompt 512] [--new 128]
                                [--variants eager,eager_graph,torch_compile,aotirt] [--repeats 3] [--dtype bf16]

The model: `transformers.LlamaForCausalLM` built from a LlamaConfig (llama_05b: 24 layers, width 1024, 16 heads,
4 KV heads of 64, MLP 4096, vocab 32000: 0.43B parameters; random weights, seed 0), its weights loaded into
`StaticCacheLlama` below: the same modules and names, with the KV cache as explicit inputs, one K and one V tensor
per layer (B, H_kv, S, D) with S = prompt + new, updated in place at `pos` (`k_cache[:, :, pos] = k`), attention
over the whole cache under an additive mask (position s visible to query t where s <= pos[t]). Before anything is
timed, the wrapper's float32 logits are checked against transformers' own forward on the same weights.
Without transformers (CI), the same wrapper with its own init.

Variants, each: prefill `--prompt` tokens (one call, T = prompt), then `--new - 1` decode steps (T = 1), each step's
token the argmax of the previous logits, fed back on the GPU (no host sync in the loop):
  eager          the wrapper in eager PyTorch (the reference tokens)
  eager_graph    eager, prefill and decode step each captured with torch.cuda.graph
  torch_compile  torch.compile(mode="max-autotune", dynamic=False) (its CUDA graphs on; caches marked static)
  aotirt         two packages from aotirt.compile (prefill T=prompt, decode T=1; the platform's default spec), run on
                 the aotirt runtime, each captured with aotirt.capture(alias_inputs=True) so the cache is the graph's
                 own input memory and a step copies nothing
  aotirt_dyn     one package for both calls, its token count dynamic (1 to the prompt length): the weights once
  aotirt_at      the same lowered with max_autotune_gemm_backends="ATEN,TRITON" (Inductor times cuBLASLt against
                 its Triton GEMM templates per shape; slower compile)
  aotirt_tattn   attention_backend="TRITON" (the Triton attention kernel compiled into the packages)
  aotirt_math    attention_backend="MATH" (SDPA decomposed: at one query per step, a GEMV-sized matmul + softmax)
  eager_int4, torch_compile_int4, aotirt_int4
                 the decoder layers' linears weight-only int4 (groups of --int4-group along k, asymmetric, as gpt-fast
                 and torchao quantize: q = round((w - min) / scale), w = (q - 8) * scale + zero), packed by
                 torch._convert_weight_to_int4pack and run by aten._weight_int4pack_mm (lm_head stays bf16);
                 eager_int4 is the reference of the other two
Recorded per variant: time to first token (prefill + argmax, ms), decode tokens/s (new - 1 steps), tokens identical
to eager's (free-running: count and first mismatch), teacher-forced agreement (eager's tokens fed in, argmax per step
compared, with eager's top-2 logit margin at each mismatch: near-ties are what bf16 rounding flips), max |logit
diff| along that path, compile seconds, device memory. Writes decode.json and decode.md; progress on stderr.
The parts that need no GPU are tested by tests/cpu/test_decode_bench.py.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
try:
    import aotirt  # noqa: F401 (the GPU bundle's copy when tools/gpu/run.sh put it on PYTHONPATH)
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import provenance  # noqa: E402
from cliflags import Flags, csv, positive_int  # noqa: E402
from model_bench.cuda import profile_calls  # noqa: E402
from model_bench.models import apply_rope  # noqa: E402

CONFIGS = {
    "llama_05b": dict(vocab=32000, hidden=1024, layers=24, heads=16, kv_heads=4, head_dim=64, mlp=4096,
                      theta=10000.0, eps=1e-5),
    "tiny": dict(vocab=256, hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, mlp=96, theta=10000.0, eps=1e-5),
}
# The aotirt variants: CompileOptions fields for both packages (None: the platform's default spec)
AOTIRT_OPTIONS = {"aotirt": {}, "aotirt_dyn": {}, "aotirt_at": {"max_autotune_gemm_backends": "ATEN,TRITON"},
                  "aotirt_tattn": {"attention_backend": "TRITON"}, "aotirt_math": {"attention_backend": "MATH"},
                  # without coordinate descent tuning (on by default with max_autotune, as in torch.compile's
                  # max-autotune mode; with it the decode step's one-row matmuls become fused reductions)
                  "aotirt_nocdt": {"coordinate_descent_tuning": False},
                  # the same packages as "aotirt", captured without the capture pool (AOTIRT_CAPTURE_POOL=0; the
                  # pool is on by default): the graphs then hold a memory node for each allocation the shims make
                  # while capturing
                  "aotirt_nopool": {}}
DYNAMIC = ("aotirt_dyn",)  # one package with a dynamic token count instead of two
NOPOOL = ("aotirt_nopool",)
# Weight-only int4 (group-quantized, torch's packed layout, aten._weight_int4pack_mm): eager_int4 is their reference
INT4_VARIANTS = ("eager_int4", "torch_compile_int4", "aotirt_int4")
VARIANTS = ("eager", "eager_graph", "torch_compile") + tuple(AOTIRT_OPTIONS) + INT4_VARIANTS
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def say(msg: str) -> None:
    print(f"[decode {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================================================ the model

class RMSNorm(nn.Module):
    """Llama's RMSNorm (transformers' LlamaRMSNorm): float32 statistics, weight * normalized in the input dtype."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.h, self.hkv, self.d = c["heads"], c["kv_heads"], c["head_dim"]
        self.q_proj = nn.Linear(c["hidden"], self.h * self.d, bias=False)
        self.k_proj = nn.Linear(c["hidden"], self.hkv * self.d, bias=False)
        self.v_proj = nn.Linear(c["hidden"], self.hkv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, c["hidden"], bias=False)

    def forward(self, x, cos, sin, pos, k_cache, v_cache, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.hkv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.hkv, self.d).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k_cache[:, :, pos] = k  # in place on the caller's cache (an input the package mutates)
        v_cache[:, :, pos] = v
        o = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask, enable_gqa=self.h != self.hkv)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden"], c["mlp"], bias=False)
        self.up_proj = nn.Linear(c["hidden"], c["mlp"], bias=False)
        self.down_proj = nn.Linear(c["mlp"], c["hidden"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c["hidden"], c["eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["eps"])

    def forward(self, h, cos, sin, pos, k_cache, v_cache, mask):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, pos, k_cache, v_cache, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Inner(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"], c["eps"])


class StaticCacheLlama(nn.Module):
    """forward(ids (B, T) int64, pos (T,) int64, k_0, v_0, k_1, v_1, ...) -> float32 logits (B, vocab) of the last
    position; writes this call's keys/values into the caches at `pos`. Parameter names are transformers' Llama's."""

    def __init__(self, c: dict):
        super().__init__()
        self.c = dict(c)
        self.model = Inner(c)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        d = c["head_dim"]
        # transformers' default rope: float32 inverse frequencies, angles in float32
        self.register_buffer("inv_freq", 1.0 / (c["theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d)),
                             persistent=False)

    def hidden(self, ids: torch.Tensor, pos: torch.Tensor, caches) -> torch.Tensor:
        h = self.model.embed_tokens(ids)
        ang = pos.float()[:, None] * self.inv_freq[None, :]
        cos, sin = ang.cos(), ang.sin()
        s = caches[0].shape[2]
        visible = torch.arange(s, device=ids.device)[None, :] <= pos[:, None]  # (T, S)
        mask = torch.zeros(visible.shape, dtype=h.dtype, device=ids.device).masked_fill(~visible, float("-inf"))
        mask = mask[None, None]
        for i, layer in enumerate(self.model.layers):
            h = layer(h, cos, sin, pos, caches[2 * i], caches[2 * i + 1], mask)
        return self.model.norm(h)

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, *caches: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.hidden(ids, pos, caches)[:, -1]).float()

    def all_logits(self, ids: torch.Tensor) -> torch.Tensor:
        """Float32 logits (B, T, vocab) at every position, with fresh caches of length T (no state kept)."""
        b, t = ids.shape
        caches = new_caches(self.c, b, t, next(self.parameters()).dtype, ids.device)
        pos = torch.arange(t, device=ids.device)
        return self.lm_head(self.hidden(ids, pos, caches)).float()


def new_caches(c: dict, batch: int, length: int, dtype: torch.dtype, device) -> list:
    """Zeroed K and V caches, one pair per layer: [k_0, v_0, k_1, v_1, ...], each (batch, kv_heads, length, head_dim)."""
    return [torch.zeros(batch, c["kv_heads"], length, c["head_dim"], dtype=dtype, device=device)
            for _ in range(2 * c["layers"])]


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def hf_model(c: dict, seed: int = 0):
    """transformers' LlamaForCausalLM from a LlamaConfig of `c` (random weights, its own init, seed), float32;
    None where transformers is not importable."""
    try:
        import transformers
    except ImportError:
        return None
    cfg = transformers.LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["mlp"],
                                   num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                                   num_key_value_heads=c["kv_heads"], head_dim=c["head_dim"], rms_norm_eps=c["eps"],
                                   max_position_embeddings=4096, tie_word_embeddings=False, attention_bias=False,
                                   mlp_bias=False)
    theta = getattr(cfg, "rope_theta", None) or (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta")
    if theta is not None and float(theta) != c["theta"]:
        raise RuntimeError(f"transformers' LlamaConfig has rope_theta {theta}, the wrapper {c['theta']}")
    torch.manual_seed(seed)
    m = transformers.LlamaForCausalLM(cfg)
    m.config._attn_implementation = "eager"
    return m.eval()


def build(c: dict, seed: int = 0) -> tuple:
    """(StaticCacheLlama in float32 with transformers' weights where importable, the transformers model or None)."""
    wrapper = StaticCacheLlama(c)
    hf = hf_model(c, seed)
    if hf is None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in wrapper.named_parameters():
                if "norm" in name:
                    p.fill_(1.0)
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    else:
        missing, unexpected = wrapper.load_state_dict(hf.state_dict(), strict=False)
        unexpected = [k for k in unexpected if "rotary" not in k]
        if missing or unexpected:
            raise RuntimeError(f"transformers' Llama weights do not map onto the wrapper: missing {missing}, "
                               f"unexpected {unexpected}")
    return wrapper.eval(), hf


def check_against_hf(wrapper: StaticCacheLlama, hf, ids: torch.Tensor) -> dict:
    """Float32 logits of the wrapper vs transformers' forward on the same weights and ids (both float32)."""
    with torch.no_grad():
        ours = wrapper.all_logits(ids)
        ref = hf(input_ids=ids).logits.float()
    diff = (ours - ref).abs().max().item()
    scale = ref.abs().max().item()
    return {"tokens": int(ids.shape[1]), "max_abs_diff": diff, "max_abs_logit": scale,
            "argmax_equal": bool((ours.argmax(-1) == ref.argmax(-1)).all().item())}


# ============================================================================================ decoding

class Decoder:
    """One variant's prefill and decode-step callables over static buffers: `ids_p` (B, prompt), `pos_p`, `ids_d`
    (B, 1), `pos_d` (1,), the caches; prefill() and step() return float32 logits (B, vocab)."""

    def __init__(self, prefill: Callable[[], torch.Tensor], step: Callable[[], torch.Tensor], bufs: dict):
        self.prefill, self.step, self.bufs = prefill, step, bufs


def group_quantize_int4(w: torch.Tensor, group_size: int) -> tuple:
    """w (n, k) -> (q int32 (n, k) in 0..15, scales_and_zeros (k / group_size, n, 2) bfloat16) with
    (q - 8) * scale + zero ~ w: per row and group of group_size along k, scale = (max - min) / 15, zero = min + 8 scale
    (torch's own int4 tests and gpt-fast's quantizer)."""
    n, k = w.shape
    if k % group_size:
        raise ValueError(f"k = {k} is not a multiple of the group size {group_size}")
    wg = w.float().reshape(n, k // group_size, group_size)
    lo, hi = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
    scale = ((hi - lo).clamp(min=1e-6) / 15).to(torch.bfloat16).float()
    zero = (lo + scale * 8).to(torch.bfloat16).float()
    q = ((wg - lo) / scale).round().clamp(0, 15).to(torch.int32).reshape(n, k)
    sz = torch.stack([scale.squeeze(-1), zero.squeeze(-1)], dim=-1).transpose(0, 1).contiguous()
    return q, sz.to(torch.bfloat16)


def dequantize_int4(q: torch.Tensor, scales_and_zeros: torch.Tensor, group_size: int) -> torch.Tensor:
    """The weights aten._weight_int4pack_mm multiplies by: bf16((q - 8) * scale + zero), (n, k)."""
    g = torch.arange(q.shape[1], device=q.device) // group_size
    s, z = scales_and_zeros[..., 0].float()[g].T, scales_and_zeros[..., 1].float()[g].T
    return ((q - 8).float() * s + z).to(torch.bfloat16)


class Int4Linear(nn.Module):
    """A bias-free nn.Linear's weight quantized to int4 (group_quantize_int4), packed by
    torch._convert_weight_to_int4pack on the weight's GPU, applied with aten._weight_int4pack_mm (bfloat16 in/out)."""

    def __init__(self, linear: nn.Linear, group_size: int = 128, inner_k_tiles: int = 8):
        super().__init__()
        if linear.bias is not None:
            raise ValueError("Int4Linear takes bias-free linears")
        q, sz = group_quantize_int4(linear.weight.detach(), group_size)
        dev = linear.weight.device
        w_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8).to(dev)
        self.register_buffer("packed", torch._convert_weight_to_int4pack(w_uint8, inner_k_tiles))
        self.register_buffer("scales_and_zeros", sz.to(dev))
        self.group_size, self.out_features = group_size, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.aten._weight_int4pack_mm(x.reshape(-1, x.shape[-1]), self.packed, self.group_size,
                                               self.scales_and_zeros)
        return y.reshape(*x.shape[:-1], self.out_features)


def quantize_int4(model: "StaticCacheLlama", group_size: int = 128, inner_k_tiles: int = 8) -> "StaticCacheLlama":
    """A copy of `model` (bfloat16, on a GPU) with every linear of its decoder layers an Int4Linear."""
    import copy
    q = copy.deepcopy(model)
    for layer in q.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, Int4Linear(child, group_size, inner_k_tiles))
    q.c = dict(model.c, int4_group=group_size, int4_inner_k_tiles=inner_k_tiles)  # its own aotirt package cache key
    return q


def make_bufs(c: dict, prompt_ids: torch.Tensor, new: int, dtype: torch.dtype) -> dict:
    b, p = prompt_ids.shape
    dev = prompt_ids.device
    return {"ids_p": prompt_ids.clone(), "pos_p": torch.arange(p, device=dev),
            "ids_d": torch.zeros(b, 1, dtype=torch.int64, device=dev), "pos_d": torch.full((1,), p, device=dev),
            "caches": new_caches(c, b, p + new, dtype, dev)}


def generate(dec: Decoder, new: int, forced: torch.Tensor | None = None, keep_logits: bool = False) -> dict:
    """Prefill, then new - 1 steps; each step's input token is the previous argmax (or forced[:, i], eager's
    tokens, for teacher forcing). Everything stays on the GPU until the end. Returns tokens (B, new) and, with
    keep_logits, the logits of every token (new, B, vocab)."""
    bufs = dec.bufs
    b = bufs["ids_p"].shape[0]
    tokens = torch.empty(b, new, dtype=torch.int64, device=bufs["ids_p"].device)
    kept = []
    bufs["pos_d"].fill_(bufs["ids_p"].shape[1])
    logits = dec.prefill()
    for i in range(new):
        if keep_logits:
            kept.append(logits.clone())
        tokens[:, i] = logits.argmax(-1)
        if i == new - 1:
            break
        bufs["ids_d"].copy_((tokens[:, i] if forced is None else forced[:, i])[:, None])
        logits = dec.step()
        bufs["pos_d"].add_(1)
    return {"tokens": tokens, "logits": torch.stack(kept) if keep_logits else None}


def decode_step(dec: Decoder, tok: torch.Tensor) -> torch.Tensor:
    """One timed decode step as the loop runs it: the previous token in, the step, its argmax, the position on."""
    bufs = dec.bufs
    bufs["ids_d"].copy_(tok[:, None])
    tok = dec.step().argmax(-1)
    bufs["pos_d"].add_(1)
    return tok


def time_generate(dec: Decoder, new: int, repeats: int) -> dict:
    """Median over `repeats` generations of: time to first token (prefill + argmax), ms per decode step (GPU clock:
    events around the loop) and the host's ms per step (queueing the loop, before waiting for the GPU). A host time
    near the GPU time means the loop is host-bound (the GPU waits for the launches); well under it, GPU-bound."""
    ttft, step_ms, host_ms = [], [], []
    for _ in range(repeats):
        bufs = dec.bufs
        bufs["pos_d"].fill_(bufs["ids_p"].shape[1])
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        e0.record()
        tok = dec.prefill().argmax(-1)
        e1.record()
        h0 = time.perf_counter()
        for _ in range(new - 1):
            tok = decode_step(dec, tok)
        host_ms.append((time.perf_counter() - h0) * 1e3 / max(1, new - 1))
        e2.record()
        e2.synchronize()
        ttft.append(e0.elapsed_time(e1))
        step_ms.append(e1.elapsed_time(e2) / max(1, new - 1))
    ms = statistics.median(step_ms)
    return {"ttft_ms": statistics.median(ttft), "decode_ms_per_token": ms, "decode_tokens_per_s": 1e3 / ms,
            "host_ms_per_token": statistics.median(host_ms), "ttft_ms_all": ttft, "decode_ms_all": step_ms}


def profile_decode(dec: Decoder, base: str, model: nn.Module) -> dict:
    """The GPU kernels of the timed decode step as the loop runs it (graph replays included: CUPTI reports the
    kernels of a replayed graph), and for eager and the aotirt rows also of a step run without graphs. Each
    {kernels_per_call, gpu_busy_ms_per_call, top_kernels}; gpu_busy below decode_ms_per_token is time the GPU sat
    between kernels (launch gaps, host waits)."""
    bufs = dec.bufs
    tok = torch.zeros(bufs["ids_d"].shape[0], dtype=torch.int64, device=bufs["ids_d"].device)
    bufs["pos_d"].fill_(bufs["ids_p"].shape[1])
    out = {"step": profile_calls(lambda: decode_step(dec, tok), top=12)}
    # The host's ms per call of the step alone (no token copy, argmax or position update around it): 32 calls
    # queued back to back, then one wait; with host_ms_per_token this splits the loop's host time.
    dec.step()
    torch.cuda.synchronize()
    h0 = time.perf_counter()
    for _ in range(32):
        dec.step()
    out["host_ms_per_step_call"] = (time.perf_counter() - h0) * 1e3 / 32
    torch.cuda.synchronize()
    if base != "torch_compile" and base != "eager_graph":
        args = lambda: [bufs["ids_d"], bufs["pos_d"], *bufs["caches"]]  # noqa: E731
        fn = ((lambda: dec.runners["decode"].run_list(args())) if base.startswith("aotirt")
              else (lambda: model(*args())))
        out["no_graphs"] = profile_calls(fn, top=12)
    return out


def kernel_configs(names: list, cache_dir: str | None, since: float, copy_to: str | None = None) -> dict:
    """For the Triton kernels among `names` (a profile's top kernels), the Inductor sources in the cache that define
    them and the launch config autotuning chose (the `.best_config` beside each): {name: [{file, new, best_config}]},
    `new` when written since `since` (this variant's compile; an older one is a source another variant compiled
    first, shared), so two variants' versions of a kernel can be compared. The sources are copied under copy_to
    when given. {} without a cache directory."""
    import glob
    import shutil

    if not cache_dir or not os.path.isdir(cache_dir):
        return {}
    wanted = {n for n in names if n.startswith("triton_")}
    found: dict = {}
    for path in glob.glob(os.path.join(cache_dir, "**", "*.py"), recursive=True):
        try:
            new = os.path.getmtime(path) >= since
            with open(path, errors="replace") as fh:
                src = fh.read()
        except OSError:
            continue
        for name in wanted:
            if f"def {name}(" not in src:
                continue
            best = os.path.splitext(path)[0] + ".best_config"
            cfg = None
            if os.path.exists(best):
                with open(best) as fh:
                    try:
                        cfg = json.load(fh)
                    except ValueError:
                        cfg = None
            if isinstance(cfg, dict):  # the launch parameters, not the bookkeeping (hashes, timings)
                cfg = {k: v for k, v in cfg.items() if k.isupper() or k in ("num_warps", "num_stages")}
            found.setdefault(name, []).append({"file": os.path.basename(path), "new": new, "best_config": cfg})
            if copy_to:
                os.makedirs(copy_to, exist_ok=True)
                shutil.copy(path, os.path.join(copy_to, os.path.basename(path)))
    return found


def compare(ref: dict, free: dict, forced: dict) -> dict:
    """Free-running tokens vs eager's, and the teacher-forced argmax agreement with eager's margins."""
    rt, ft = ref["tokens"], free["tokens"]
    same = (rt == ft)
    first = int((~same[0]).nonzero()[0].item()) if not bool(same[0].all()) else None
    ftok = forced["tokens"]
    agree = (ftok == rt)
    top2 = ref["logits"].topk(2, dim=-1).values  # (new, B, 2)
    margins = (top2[..., 0] - top2[..., 1]).transpose(0, 1)  # (B, new)
    mism = (~agree).nonzero().tolist()
    return {"identical_tokens": int(same.sum().item()), "tokens": int(same.numel()), "first_mismatch": first,
            "forced_agree": int(agree.sum().item()),
            "forced_mismatch_margins": [round(float(margins[bi, ti]), 5) for bi, ti in mism][:20],
            "forced_max_abs_logit_diff": float((forced["logits"] - ref["logits"]).abs().max().item()),
            "eager_median_top2_margin": float(margins.median().item())}


# ============================================================================================ variants

def eager_decoder(model, bufs) -> Decoder:
    c = bufs["caches"]
    return Decoder(lambda: model(bufs["ids_p"], bufs["pos_p"], *c), lambda: model(bufs["ids_d"], bufs["pos_d"], *c),
                   bufs)


def torch_graph(fn: Callable[[], torch.Tensor], warmup: int = 2) -> Callable[[], torch.Tensor]:
    """fn captured with torch.cuda.graph after warm-up on a side stream; the replay returns the static output."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()

    def replay():
        g.replay()
        return out
    return replay


def eager_graph_decoder(model, bufs) -> Decoder:
    e = eager_decoder(model, bufs)
    bufs["pos_d"].fill_(bufs["ids_p"].shape[1])  # warm-up writes land where the timed runs write again
    return Decoder(torch_graph(e.prefill), torch_graph(e.step), bufs)


def torch_compile_decoder(model, bufs) -> Decoder:
    for t in bufs["caches"]:
        torch._dynamo.mark_static_address(t)
    compiled = torch.compile(model, mode="max-autotune", dynamic=False, fullgraph=True)
    c = bufs["caches"]

    def prefill():
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(bufs["ids_p"], bufs["pos_p"], *c)

    def step():
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(bufs["ids_d"], bufs["pos_d"], *c)
    for _ in range(3):  # compile and record both graphs before anything is timed
        prefill()
        step()
    return Decoder(prefill, step, bufs)


def wrapper_calls(package_path: str) -> dict:
    """What one run of a package calls, from its generated wrapper source (straight-line code: call sites = calls
    per run): aoti_torch_* shim call sites by name, the Triton kernel launch sites, and those of them that are the
    Triton attention kernel (aotirt.triton_attention's sdpa kernel). {} where the package has no source."""
    import re

    from aotirt import package, platforms
    src = package.wrapper_source(package_path)
    if not src:
        return {}
    code = re.sub(r"//[^\n]*", "", src)
    called = platforms.shims_called(code)  # the calls, not names in strings
    shims: dict = {}
    for name in re.findall(r"\b(aoti_torch_\w+)\s*\(", code):
        if name in called:
            shims[name] = shims.get(name, 0) + 1
    # launches, not the launchers' definitions (`static inline void call_triton_...(`)
    triton = re.findall(r"(?<!void )\b(?:call_)?(triton_\w+|sdpa_fwd\w*)\s*\(", code)
    return {"shims": dict(sorted(shims.items(), key=lambda kv: -kv[1])),
            "triton_launches": len(triton), "triton_attention_launches": sum("sdpa" in t for t in triton)}


def dynamic_shapes(bufs: dict):
    """torch.export dynamic_shapes for one package that takes both calls: the token count T of ids (B, T) and pos
    (T,) from 1 to the prompt length; the caches static."""
    t = torch.export.Dim("tokens", min=1, max=bufs["ids_p"].shape[1])
    return ({1: t}, {0: t}, tuple(None for _ in bufs["caches"]))


def package_key(cfg: dict, dtype: torch.dtype, opts) -> str:
    """The package cache's key: the model config, the dtype, and a hash of what the lowering will be given (the
    resolved Inductor options for linux CUDA, aotirt's version among their metadata), so a cached package compiled
    under other defaults (e.g. before coordinate_descent_tuning was on) is never reused."""
    import hashlib

    from aotirt import specs
    lowering = specs.inductor_options(opts, target="cuda")
    digest = hashlib.sha256(json.dumps(lowering, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return "_".join(f"{k}{cfg[k]}" for k in sorted(cfg)) + f"_{dtype}".replace("torch.", "") + f"_{digest}"


def aotirt_decoder(model, bufs, work: str, cache_dir: str | None = None, options: dict | None = None,
                   capture_pool: bool = True,
                   dynamic: bool = False) -> tuple:
    """The aotirt runtime's prefill and decode step, lowered with CompileOptions(**options) (empty: the platform's
    default spec): two packages (prefill T=prompt, decode T=1), or with `dynamic` one package whose token count is
    dynamic (dynamic_shapes: the weights once). The decode package takes the prefill package's weights
    (aotirt.load(share_constants_with=...): one copy on the GPU, as torch.compile has), or its own copy where they
    differ (info["decode_shares_prefill_constants"] says which). Each call shape captured with alias_inputs (the
    caches are the graphs' own inputs). Returns (Decoder, info)."""
    import aotirt
    options = dict(options or {})
    opts = aotirt.CompileOptions(**options)
    c = bufs["caches"]
    info = {}
    runners = {}
    key = package_key(model.c, c[0].dtype, opts)
    calls = (("prefill", bufs["ids_p"], bufs["pos_p"]), ("decode", bufs["ids_d"], bufs["pos_d"]))

    def load(name, path):
        if name == "decode" and "prefill" in runners:
            try:
                runner = aotirt.load(path, share_constants_with=runners["prefill"])
                info["decode_shares_prefill_constants"] = True
                return runner
            except aotirt.RuntimeLoadError as e:
                info["decode_shares_prefill_constants"] = f"no: {e}"[:300]
        return aotirt.load(path)
    for name, ids, pos in (calls[:1] if dynamic else calls):
        # cached per model config, dtype and shapes (a stale package for other shapes is compiled again)
        shape = f"b{ids.shape[0]}_t{'1-' if dynamic else ''}{ids.shape[1]}_s{c[0].shape[2]}"
        path = os.path.join(cache_dir or work, f"decode_{'dynamic' if dynamic else name}_{key}_{shape}.pt2")
        t0 = time.perf_counter()
        runner = None
        if cache_dir and os.path.exists(path):
            runner = load(name, path)
            if len(runner.input_names) != 2 + len(c):
                runner = None
        if runner is None:
            aotirt.compile(model, (ids, pos, *c), path, options=opts,
                           dynamic_shapes=dynamic_shapes(bufs) if dynamic else None)
            runner = load(name, path)
        info[f"compile_{'dynamic' if dynamic else name}_s"] = round(time.perf_counter() - t0, 1)
        runners[name] = runner
        info[f"{name}_spec"] = {k: v for k, v in runners[name].metadata.items() if k.startswith("aotirt_")}
        try:  # which GEMM / attention paths the lowering took (read back from the package)
            info[f"{name}_calls"] = wrapper_calls(path)
        except Exception as e:  # noqa: BLE001 (bookkeeping only)
            info[f"{name}_calls"] = {"error": f"{type(e).__name__}: {e}"}
    if dynamic:
        runners["decode"] = runners["prefill"]
        info["decode_spec"] = info["prefill_spec"]
        info["decode_calls"] = info["prefill_calls"]
    for t in c:  # the compiles ran the model on the caches
        t.zero_()
    bufs["pos_d"].fill_(bufs["ids_p"].shape[1])
    old = os.environ.get("AOTIRT_CAPTURE_POOL")
    os.environ["AOTIRT_CAPTURE_POOL"] = "1" if capture_pool else "0"  # read by each capture
    try:
        gp = aotirt.capture(runners["prefill"], bufs["ids_p"], bufs["pos_p"], *c, alias_inputs=True)
        gd = aotirt.capture(runners["decode"], bufs["ids_d"], bufs["pos_d"], *c, alias_inputs=True)
    finally:
        if old is None:
            os.environ.pop("AOTIRT_CAPTURE_POOL", None)
        else:
            os.environ["AOTIRT_CAPTURE_POOL"] = old
    info["prefill_graph"], info["decode_graph"] = gp.graph_stats, gd.graph_stats

    def prefill():
        return gp.run_list([bufs["ids_p"], bufs["pos_p"], *c])[0]

    def step():
        return gd.run_list([bufs["ids_d"], bufs["pos_d"], *c])[0]
    dec = Decoder(prefill, step, bufs)
    dec.graphs = (gp, gd)
    dec.runners = runners
    return dec, info


# ============================================================================================ report

def _graph_note(row: dict) -> str:
    """ "decode graph: 365 kernels, 0 memory nodes; " from the decode graph's stats (empty when absent)."""
    g = row.get("decode_graph") or {}
    if "kernels" not in g:
        return ""
    return (f"decode graph: {g['kernels']} kernels, {g.get('mem_allocs', 0) + g.get('mem_frees', 0)} memory nodes, "
            f"{g.get('memsets', 0)} memsets; ")


def markdown(result: dict) -> str:
    m = result["model"]
    lines = [f"Decode benchmark (`benchmarks/decode.py`), {result['machine']}, torch {result['torch']}, commit "
             f"{result['commit']}. Model: {m['description']}; prompt {result['prompt']} tokens, {result['new']} new "
             f"tokens (greedy), batch 1, {result['dtype']}; median of {result['repeats']} generations. "
             f"Wrapper vs transformers (float32 logits, {m.get('hf_check', {}).get('tokens', '-')} tokens): "
             f"max |diff| {_f(m.get('hf_check', {}).get('max_abs_diff'), '{:.2e}')}.", "",
             "| variant | TTFT ms | decode ms/token | host ms/token | GPU busy ms/token, kernels (--profile) | "
             "tokens/s | vs torch.compile tokens/s (int4 rows: its int4) | tokens "
             "identical to eager (int4 rows: eager_int4) | teacher-forced argmax agreement | max abs logit diff "
             "(forced) | compile s | device MB | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    tcs = {r["variant"]: r for r in result["rows"]
           if r["variant"] in ("torch_compile", "torch_compile_int4") and r.get("decode_tokens_per_s")}
    for r in result["rows"]:
        tc = tcs.get("torch_compile_int4" if r["variant"] in INT4_VARIANTS else "torch_compile")
        if r.get("error"):
            lines.append(f"| {r['variant']} | - | - | - | - | - | - | - | - | - | - | - | {r['error'][:160]} |")
            continue
        cmp_ = r.get("compare") or {}
        rel = (r["decode_tokens_per_s"] / tc["decode_tokens_per_s"]) if tc else None
        ident = (f"{cmp_['identical_tokens']}/{cmp_['tokens']}" + (f" (first diff at {cmp_['first_mismatch']})"
                 if cmp_.get("first_mismatch") is not None else "")) if cmp_ else "reference"
        forced = f"{cmp_['forced_agree']}/{cmp_['tokens']}" if cmp_ else "-"
        if cmp_.get("forced_mismatch_margins"):
            forced += f" (eager's margins there: {', '.join(map(str, cmp_['forced_mismatch_margins'][:4]))})"
        step = (r.get("profile") or {}).get("step")
        busy = f"{step['gpu_busy_ms_per_call']:.3f}, {step['kernels_per_call']:.0f}" if step else "-"
        launch = {a["name"]: a["ms_per_call"] for a in (step or {}).get("host_api", [])}.get("cudaGraphLaunch")
        if launch is not None:  # the host's time in the replay's launch (profile_calls' CUDA API times)
            busy += f"; host in cudaGraphLaunch {launch:.3f}"
        per_call = (r.get("profile") or {}).get("host_ms_per_step_call")
        if per_call is not None:  # the host's time in the step call alone (no copy/argmax around it)
            busy += f"; host per step call {per_call:.3f}"
        lines.append(f"| {r['variant']} | {_f(r['ttft_ms'])} | {_f(r['decode_ms_per_token'])} | "
                     f"{_f(r.get('host_ms_per_token'))} | {busy} | {_f(r['decode_tokens_per_s'], '{:.0f}')} | {_f(rel, '{:.2f}x')} | {ident} | {forced} | "
                     f"{_f(cmp_.get('forced_max_abs_logit_diff'), '{:.3f}')} | {_f(r.get('compile_s'), '{:.0f}')} | "
                     f"{_f(r.get('device_mb'), '{:.0f}')} | {r.get('notes', '')} |")
    return "\n".join(lines) + "\n"


def _f(x: Any, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def out_paths(out: str) -> tuple:
    if out.endswith(".json"):
        return out, out[:-5] + ".md"
    return os.path.join(out, "decode.json"), os.path.join(out, "decode.md")


def parse_args(argv: list | None = None):
    f = Flags("benchmarks/decode.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results"), "decode.json path, or a directory for decode.json/.md")
    f.enum("config", "llama_05b", tuple(CONFIGS), "model size")
    f.define("prompt", 512, "prompt tokens (prefill length)", positive_int, "integer")
    f.define("new", 128, "tokens generated greedily (the first from the prefill)", positive_int, "integer")
    f.define("repeats", 3, "timed generations per variant (median)", positive_int, "integer")
    f.define("variants", VARIANTS, f"comma-separated, of {','.join(VARIANTS)} (eager always runs: the reference)",
             _variants, "list")
    f.enum("dtype", "bf16", tuple(DTYPES), "weights and activations")
    f.string("cache-dir", os.environ.get("AOTIRT_BENCH_CACHE", ""), "keep/reuse the aotirt packages here")
    f.define("layers", 0, "override the config's layer count (0: the config's)", _nonnegative, "integer")
    f.enum("int4-group", "128", ("32", "64", "128", "256"), "the int4 variants' quantization group size")
    f.boolean("profile", False, "per variant, the GPU kernels of 5 timed decode steps, and for eager/aotirt of 5 "
              "steps without graphs (torch.profiler)")
    return f.parse(argv)


def _nonnegative(text: str) -> int:
    v = int(text)
    if v < 0:
        raise ValueError(f"must be >= 0, got {v}")
    return v


def _variants(text: str) -> tuple:
    vals = csv(text)
    bad = [v for v in vals if v not in VARIANTS]
    if bad:
        raise ValueError(f"unknown variants {bad}; choose from {','.join(VARIANTS)}")
    if any(v in INT4_VARIANTS for v in vals):  # the int4 rows' reference first
        vals = ("eager_int4",) + vals
    return tuple(dict.fromkeys(("eager",) + vals))


def description(c: dict, n_params: int, hf: bool) -> str:
    src = "transformers LlamaForCausalLM weights" if hf else "the wrapper's own init (no transformers)"
    return (f"Llama-style decoder, {c['layers']} layers, width {c['hidden']}, {c['heads']} heads / {c['kv_heads']} KV "
            f"heads of {c['head_dim']}, MLP {c['mlp']}, vocab {c['vocab']}, {n_params / 1e9:.2f}B parameters, "
            f"random weights ({src})")


def device_used_mb() -> float:
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


def main(argv: list | None = None) -> int:
    a = parse_args(argv)
    if not torch.cuda.is_available():
        print("decode: no CUDA GPU here; run it on the GPU machine (tools/gpu/run.sh bench)", file=sys.stderr)
        return 1
    c = dict(CONFIGS[a.config], **({"layers": a.layers} if a.layers else {}))
    dtype = DTYPES[a.dtype]
    json_path, md_path = out_paths(a.out)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    wrapper, hf = build(c)
    n_params = param_count(wrapper)
    say(f"model: {description(c, n_params, hf is not None)}")
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, c["vocab"], (1, a.prompt), generator=g).cuda()
    hf_check = None
    if hf is not None:
        wrapper.cuda()
        hf.cuda()
        hf_check = check_against_hf(wrapper, hf, prompt[:, :64])
        say(f"wrapper vs transformers (float32, 64 tokens): {hf_check}")
        del hf
        torch.cuda.empty_cache()
    model = wrapper.to("cuda", dtype)
    result = {"benchmark": "decode", "commit": provenance.commit(), "machine": torch.cuda.get_device_name(),
              "torch": torch.__version__, "command": [sys.executable, *sys.argv], "prompt": a.prompt, "new": a.new,
              "repeats": a.repeats, "dtype": a.dtype, "config": a.config,
              "model": {"config": c, "params": n_params, "description": description(c, n_params, hf_check is not None),
                        "hf_check": hf_check},
              "rows": []}
    refs: dict = {}
    model_int4 = None
    work = tempfile.mkdtemp(prefix="aotirt_decode_")
    with torch.no_grad():
        for v in a.variants:
            say(f"{v}: setting up ...")
            row = {"variant": v}
            torch.cuda.synchronize()
            before = device_used_mb()
            torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            t_start = time.time() - 1.0  # file mtimes: the sources this variant's compile wrote
            try:
                bufs = make_bufs(c, prompt, a.new, dtype)
                int4 = v in INT4_VARIANTS
                base = v[:-len("_int4")] if int4 else v
                if int4 and model_int4 is None:
                    model_int4 = quantize_int4(model, int(a.int4_group))
                m_ = model_int4 if int4 else model
                if base == "eager":
                    dec = eager_decoder(m_, bufs)
                elif base == "eager_graph":
                    dec = eager_graph_decoder(m_, bufs)
                elif base == "torch_compile":
                    dec = torch_compile_decoder(m_, bufs)
                else:
                    # aotirt_nopool captures the packages aotirt compiled (same options) when they are in `work`
                    dec, info = aotirt_decoder(m_, bufs, work, a.cache_dir or (work if base in NOPOOL else None),
                                               AOTIRT_OPTIONS[base], capture_pool=base not in NOPOOL,
                                               dynamic=base in DYNAMIC)
                    row.update(info)
                row["compile_s"] = round(time.perf_counter() - t0, 1)
                free = generate(dec, a.new, keep_logits=True)
                if base == "eager":
                    refs["int4" if int4 else "bf16"] = free
                else:
                    ref = refs.get("int4" if int4 else "bf16")
                    if ref is None:
                        raise RuntimeError(f"no reference tokens: {'eager_int4' if int4 else 'eager'} did not run")
                    forced = generate(dec, a.new, forced=ref["tokens"], keep_logits=True)
                    row["compare"] = compare(ref, free, forced)
                row.update(time_generate(dec, a.new, a.repeats))
                if a.profile:
                    row["profile"] = profile_decode(dec, base, m_)
                    row["kernel_configs"] = kernel_configs(
                        [k["name"] for k in row["profile"]["step"]["top_kernels"]],
                        os.environ.get("TORCHINDUCTOR_CACHE_DIR"), t_start,
                        os.path.join(os.path.dirname(os.path.abspath(json_path)), "decode_kernels", v))
                    say(f"{v}: profile of a decode step: {json.dumps(row['profile'])}")
                torch.cuda.synchronize()
                row["device_mb"] = device_used_mb() - before
                row["torch_peak_alloc_mb"] = torch.cuda.max_memory_allocated() / 2**20
                if base.startswith("aotirt"):
                    row["notes"] = ("int4 weights; " if int4 else "") + (
                        "capture pool off; " if base in NOPOOL else "") + _graph_note(row) + (
                        "one package, dynamic token count; " if base in DYNAMIC else
                        "two packages, one copy of the weights (shared); "
                        if row.get("decode_shares_prefill_constants") is True else
                        "two packages (weights twice); ") + ", ".join(
                        f"{k[7:]}={v_}" for k, v_ in sorted(row["decode_spec"].items())
                        if k in ("aotirt_max_autotune_gemm_backends", "aotirt_attention_backend",
                                 "aotirt_coordinate_descent_tuning"))
                say(f"{v}: TTFT {row['ttft_ms']:.2f} ms, {row['decode_tokens_per_s']:.0f} tokens/s"
                    + (f", {row['compare']}" if "compare" in row else ""))
                del dec
            except Exception as e:  # noqa: BLE001 (a variant failing is a row, the others still run)
                row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
                say(f"{v}: FAILED {row['error'][:600]}")
                if v == "eager":
                    raise
            result["rows"].append(row)
            torch.cuda.empty_cache()
            with open(json_path, "w") as fh:
                json.dump(result, fh, indent=1, default=str)
    with open(md_path, "w") as fh:
        fh.write(markdown(result))
    print(markdown(result))
    return 0 if all("error" not in r for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
