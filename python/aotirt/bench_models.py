"""Model-level benchmark suite (benchmarks/models.py runs it): definitions, variants, run loop, report. Needs torch.

Models (random weights, no downloads; bf16, batch 1 when benchmarked):
  siglip  4 SigLIP-like pre-LN blocks (width 1152, MLP 4304, 16 heads, biases, T=256) + final LayerNorm
          (aotirt.demo.siglip_like).
  gemma   4 Gemma-like decoder blocks (width 1024, gated-GELU MLP 4096, 8 query heads, 1 KV head, head dim 256,
          RMSNorm, RoPE, no biases, T=64, causal) + final RMSNorm.
  pi05    one pi0.5-like policy step: patch embedding + a SigLIP-like vision tower (4 blocks) -> projector -> prefix
          K/V for each layer of a Gemma-like action expert (4 blocks); then a 10-step flow-matching loop (Euler, t from
          1 to 0) over [state token; 50 action tokens], unrolled inside forward, so one package runs the whole step.

Variants: eager; torch_compile (same Inductor options as aotirt.compile minus aot_inductor.*, SDPA math as in
lowering; GEMM backends TRITON like the project default; torch_compile_aten_triton / torch_compile_aten on request);
aotirt_triton, aotirt_aten_triton, aotirt_aten (aotirt.compile with max_autotune and those GEMM backends) and
aotirt_auto (aotirt.auto.compile_auto over the three, reusing their cached packages). Each with and without CUDA
graphs (ours: aotirt.capture; eager/torch.compile: torch.cuda.graph), input copy into the static buffers included in
the graph timing of both. Timing: CUDA events around back-to-back calls, median of repeats. Accuracy: mean |diff| of
the output vs the same model in float32 (TF32 off).

The run loop takes a backend object (CudaBench here) so that its bookkeeping - errors recorded per row, the time
budget, incremental JSON, merging with an earlier run, targets, tables - is testable on CPU.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

from aotirt import demo

# ------------------------------------------------------------------------------------------------------ models

SIGLIP = dict(num_blocks=4, width=1152, heads=16, mlp=4304, tokens=256)
GEMMA = dict(num_blocks=4, width=1024, heads=8, kv_heads=1, head_dim=256, mlp=4096, tokens=64)
PI05 = dict(vision=dict(SIGLIP), patch_dim=588, expert=dict(num_blocks=4, width=1024, heads=8, kv_heads=1,
                                                             head_dim=256, mlp=4096),
            horizon=50, action_dim=32, state_dim=32, steps=10)
# Tiny sizes of the same structures: CPU tests and smoke runs.
TINY = {
    "siglip": dict(num_blocks=2, width=64, heads=4, mlp=96, tokens=16),
    "gemma": dict(num_blocks=2, width=64, heads=4, kv_heads=1, head_dim=16, mlp=96, tokens=8),
    "pi05": dict(vision=dict(num_blocks=1, width=48, heads=4, mlp=64, tokens=12), patch_dim=27,
                 expert=dict(num_blocks=2, width=64, heads=4, kv_heads=1, head_dim=16, mlp=96),
                 horizon=5, action_dim=6, state_dim=7, steps=10),
}
FULL = {"siglip": SIGLIP, "gemma": GEMMA, "pi05": PI05}
MODELS = tuple(FULL)


class RMSNorm(nn.Module):
    """Gemma's RMSNorm: computed in float32, scale (1 + weight)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.float())).to(x.dtype)


def rope_tables(positions: torch.Tensor, head_dim: int, base: float = 10000.0) -> tuple:
    """(cos, sin), each (len(positions), head_dim // 2), float32."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = positions.double()[:, None] * inv[None]
    return ang.cos().float(), ang.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates halves of the last dim of x (b, h, t, d) by the position angles (t, d/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class GemmaAttention(nn.Module):
    """Multi-query attention (kv_heads K/V heads shared by `heads` query heads), RoPE, no biases."""

    def __init__(self, width: int, heads: int, kv_heads: int, head_dim: int):
        super().__init__()
        if heads % kv_heads:
            raise ValueError(f"heads {heads} must be a multiple of kv_heads {kv_heads}")
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(width, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(width, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(width, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, width, bias=False)

    def kv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple:
        """K (with RoPE) and V of normalized hidden states x (b, t, width): each (b, kv_heads, t, head_dim)."""
        b, t, _ = x.shape
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        return apply_rope(k, cos, sin), v

    def _expand(self, kv: torch.Tensor) -> torch.Tensor:
        b, g, t, d = kv.shape
        rep = self.heads // g
        return kv[:, :, None].expand(b, g, rep, t, d).reshape(b, g * rep, t, d)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool,
                prefix_kv: tuple | None = None) -> torch.Tensor:
        b, t, _ = x.shape
        q = apply_rope(self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2), cos, sin)
        k, v = self.kv(x, cos, sin)
        if prefix_kv is not None:  # keys/values of a prefix computed once (a KV cache): attend to prefix + self
            k, v = torch.cat([prefix_kv[0], k], dim=2), torch.cat([prefix_kv[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, self._expand(k), self._expand(v), is_causal=causal)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class GemmaBlock(nn.Module):
    """x + Attn(RMSNorm(x)), then x + down(gelu_tanh(gate(h)) * up(h)) with h = RMSNorm(x)."""

    def __init__(self, width: int, heads: int, kv_heads: int, head_dim: int, mlp: int):
        super().__init__()
        self.input_layernorm = RMSNorm(width)
        self.self_attn = GemmaAttention(width, heads, kv_heads, head_dim)
        self.post_attention_layernorm = RMSNorm(width)
        self.gate_proj = nn.Linear(width, mlp, bias=False)
        self.up_proj = nn.Linear(width, mlp, bias=False)
        self.down_proj = nn.Linear(mlp, width, bias=False)

    def prefix_kv(self, prefix: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple:
        return self.self_attn.kv(self.input_layernorm(prefix), cos, sin)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool = True,
                prefix_kv: tuple | None = None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, causal, prefix_kv)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h))


class GemmaLike(nn.Module):
    """Input (batch, tokens, width) embeddings -> (batch, tokens, width), causal."""

    def __init__(self, num_blocks: int, width: int, heads: int, kv_heads: int, head_dim: int, mlp: int,
                 tokens: int):
        super().__init__()
        self.width, self.tokens = width, tokens
        self.blocks = nn.ModuleList([GemmaBlock(width, heads, kv_heads, head_dim, mlp) for _ in range(num_blocks)])
        self.norm = RMSNorm(width)
        cos, sin = rope_tables(torch.arange(tokens), head_dim)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, self.rope_cos, self.rope_sin, causal=True)
        return self.norm(x)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding (len(t), dim) of flow-matching times t in [0, 1]."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    ang = t.double()[:, None] * 1000.0 * freqs[None]
    return torch.cat([ang.cos(), ang.sin()], dim=-1).float()


class Pi05Like(nn.Module):
    """One pi0.5-like policy step: (patches, state, noise) -> actions (batch, horizon, action_dim).

    Vision: patch embedding + learned positions, a SigLIP-like tower, a projector to the expert's width; each expert
    layer's K/V of that prefix is computed once. Then `steps` Euler steps of flow matching, unrolled here (a Python
    loop over a constant count, so torch.export traces it out): x <- x + dt * v(x, t), t = 1, 1 - 1/steps, ..., dt =
    -1/steps, from x = noise at t = 1. v: the expert over [state token; action tokens + time embedding] attending to
    the prefix and to itself (no mask), then RMSNorm and a linear head on the action tokens.
    """

    def __init__(self, vision: dict, patch_dim: int, expert: dict, horizon: int, action_dim: int, state_dim: int,
                 steps: int):
        super().__init__()
        self.patches, self.patch_dim = vision["tokens"], patch_dim
        self.horizon, self.action_dim, self.state_dim, self.steps = horizon, action_dim, state_dim, steps
        vw, ew, hd = vision["width"], expert["width"], expert["head_dim"]
        self.patch_embed = nn.Linear(patch_dim, vw)
        self.pos_embed = nn.Parameter(torch.zeros(vision["tokens"], vw))
        self.vision = demo.SiglipLike(vision["num_blocks"], vw, vision["heads"], vision["mlp"], vision["tokens"])
        self.projector = nn.Linear(vw, ew)
        self.state_proj = nn.Linear(state_dim, ew)
        self.action_in = nn.Linear(action_dim, ew)
        self.time_mlp_in = nn.Linear(ew, ew)
        self.time_mlp_out = nn.Linear(ew, ew)
        self.expert = nn.ModuleList([GemmaBlock(ew, expert["heads"], expert["kv_heads"], hd, expert["mlp"])
                                     for _ in range(expert["num_blocks"])])
        self.final_norm = RMSNorm(ew)
        self.action_out = nn.Linear(ew, action_dim)
        p, s = vision["tokens"], 1 + horizon
        cos_p, sin_p = rope_tables(torch.arange(p), hd)
        cos_s, sin_s = rope_tables(torch.arange(p, p + s), hd)
        for name, t in (("rope_cos_p", cos_p), ("rope_sin_p", sin_p), ("rope_cos_s", cos_s), ("rope_sin_s", sin_s)):
            self.register_buffer(name, t, persistent=False)
        self.register_buffer("time_emb", timestep_embedding(self.times(), ew), persistent=False)

    def times(self) -> torch.Tensor:
        return torch.tensor([1.0 - i / self.steps for i in range(self.steps)])

    def prefix(self, patches: torch.Tensor) -> list:
        v = self.vision(self.patch_embed(patches) + self.pos_embed)
        pre = self.projector(v)
        return [blk.prefix_kv(pre, self.rope_cos_p, self.rope_sin_p) for blk in self.expert]

    def velocity(self, x: torch.Tensor, step: int, state_token: torch.Tensor, kv: list) -> torch.Tensor:
        temb = self.time_mlp_out(F.silu(self.time_mlp_in(self.time_emb[step])))
        h = torch.cat([state_token, self.action_in(x) + temb], dim=1)
        for blk, pkv in zip(self.expert, kv):
            h = blk(h, self.rope_cos_s, self.rope_sin_s, causal=False, prefix_kv=pkv)
        return self.action_out(self.final_norm(h[:, 1:]))

    def forward(self, patches: torch.Tensor, state: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        kv = self.prefix(patches)
        state_token = self.state_proj(state)[:, None]
        x, dt = noise, -1.0 / self.steps
        for i in range(self.steps):
            x = x + dt * self.velocity(x, i, state_token, kv)
        return x


def _init_(model: nn.Module, seed: int) -> nn.Module:
    """Deterministic random weights that keep activations O(1): linears N(0, 0.02), norms near identity."""
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda p, std: torch.randn(p.shape, generator=gen) * std  # noqa: E731
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.Linear):
                mod.weight.copy_(rnd(mod.weight, 0.02))
                if mod.bias is not None:
                    mod.bias.copy_(rnd(mod.bias, 0.02))
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1.0 + rnd(mod.weight, 0.02))
                mod.bias.copy_(rnd(mod.bias, 0.02))
            elif isinstance(mod, RMSNorm):
                mod.weight.copy_(rnd(mod.weight, 0.02))
        if isinstance(model, Pi05Like):
            model.pos_embed.copy_(rnd(model.pos_embed, 0.02))
    return model.eval()


def config(name: str, tiny: bool = False, **overrides) -> dict:
    if name not in FULL:
        raise ValueError(f"unknown model {name!r}; valid: {list(MODELS)}")
    cfg = json.loads(json.dumps((TINY if tiny else FULL)[name]))
    cfg.update(overrides)
    return cfg


def build(name: str, tiny: bool = False, seed: int = 0, **overrides) -> nn.Module:
    """The model in float32 on CPU, eval mode, deterministic weights (move it with .to(device, dtype))."""
    cfg = config(name, tiny, **overrides)
    if name == "siglip":
        return demo.siglip_like(cfg["num_blocks"], cfg["width"], cfg["heads"], cfg["mlp"], cfg["tokens"], seed=seed)
    if name == "gemma":
        return _init_(GemmaLike(**cfg), seed)
    return _init_(Pi05Like(**cfg), seed)


def example_inputs(name: str, model: nn.Module, *, dtype: torch.dtype = torch.bfloat16, device: str = "cuda",
                   batch: int = 1, seed: int = 0) -> tuple:
    gen = torch.Generator().manual_seed(seed + 1)
    if name == "pi05":
        xs = (torch.randn(batch, model.patches, model.patch_dim, generator=gen),
              torch.randn(batch, model.state_dim, generator=gen),
              torch.randn(batch, model.horizon, model.action_dim, generator=gen))
    else:
        xs = (torch.randn(batch, model.tokens, model.width, generator=gen),)
    return tuple(x.to(device=device, dtype=dtype) for x in xs)


def output_shape(name: str, model: nn.Module, batch: int = 1) -> tuple:
    if name == "pi05":
        return (batch, model.horizon, model.action_dim)
    return (batch, model.tokens, model.width)


# ---------------------------------------------------------------------------------------------------- variants

FIXED = {"aotirt_triton": "TRITON", "aotirt_aten_triton": "ATEN,TRITON", "aotirt_aten": "ATEN"}
TORCH_COMPILE = {"torch_compile": "TRITON", "torch_compile_aten_triton": "ATEN,TRITON",
                 "torch_compile_aten": "ATEN"}
VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "torch_compile",
            "torch_compile_aten_triton", "torch_compile_aten")
DEFAULT_VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "torch_compile")


def gemm_backends(variant: str) -> str | None:
    if variant == "aotirt_auto":
        return "AUTO"
    return FIXED.get(variant) or TORCH_COMPILE.get(variant)


def _csv(valid: tuple, default: tuple, what: str) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        if text.strip().lower() == "all":
            return tuple(valid)
        if text.strip().lower() == "default":
            return tuple(default)
        items = [t.strip().lower() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in valid]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {what} {bad or text!r}; valid: {','.join(valid)} (or all)")
        return tuple(dict.fromkeys(items))
    return parse


def parse_args(argv: list | None = None, default_out: str | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/models.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out or os.path.join(os.getcwd(), "benchmarks", "results"),
                    help="directory for models.json/.md/.png, or the .json path itself (default: %(default)s)")
    ap.add_argument("--models", type=_csv(MODELS, MODELS, "model"), default=MODELS,
                    help=f"comma-separated subset of {','.join(MODELS)} (default: all)")
    ap.add_argument("--variants", type=_csv(VARIANTS, DEFAULT_VARIANTS, "variant"), default=DEFAULT_VARIANTS,
                    help=f"comma-separated subset of {','.join(VARIANTS)}, 'default' or 'all' "
                         f"(default: {','.join(DEFAULT_VARIANTS)})")
    ap.add_argument("--graphs", choices=("both", "off", "on"), default="both",
                    help="time without CUDA graphs, with them, or both (default)")
    ap.add_argument("--quick", action="store_true", help="fewer timed calls and AUTO rounds (a smoke run)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="total wall-time budget; steps that would not fit are recorded as skipped (default 540, "
                         "to fit a 600 s device call)")
    ap.add_argument("--compile-reserve-s", type=float, default=150.0,
                    help="a step that must compile (not in the cache) starts only with this much budget left")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "aotirt_bench_models_cache"),
                    help="compiled packages, reused between variants and runs (keyed by model, options, versions "
                         "and this file's source)")
    ap.add_argument("--no-merge", dest="merge", action="store_false",
                    help="start a fresh JSON instead of updating the rows of an existing one")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (eager-only smoke runs)")
    ap.add_argument("--tiny", action="store_true", help="tiny model sizes (smoke tests; not for the results)")
    ap.add_argument("--profile", action="store_true",
                    help="also profile each no-graphs row (kernels and GPU busy time per call, top kernels)")
    ap.add_argument("--auto-rounds", type=int, default=None, help="AUTO timing rounds (default 3, 2 with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: rewrite models.md and models.png from the JSON at --out (e.g. where "
                         "matplotlib is installed)")
    a = ap.parse_args(argv)
    if a.budget_s <= 0:
        ap.error("--budget-s must be > 0")
    if a.device not in ("cuda", "cpu") and not a.device.startswith("cuda:"):
        ap.error(f"--device {a.device!r}: valid: cuda, cuda:N, cpu")
    if a.auto_rounds is None:
        a.auto_rounds = 2 if a.quick else 3
    if a.auto_rounds < 1:
        ap.error("--auto-rounds must be >= 1")
    return a


def out_paths(out: str) -> dict:
    base = out[:-5] if out.endswith(".json") else os.path.join(out, "models")
    return {"json": base + ".json", "md": base + ".md", "png": base + ".png"}


# ----------------------------------------------------------------------------------------------------- timing

def _flat_tensors(out: Any) -> list:
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def time_ms(fn: Callable[[], Any], device: str, *, quick: bool = False, iters: int | None = None,
            repeats: int | None = None, warmup: int = 5) -> dict:
    """Per-call ms of fn: CUDA events around `iters` back-to-back calls (host clock on CPU), median of `repeats`.
    iters=None sizes a sample to ~100 ms (30 ms with quick), between 3 and 500 calls."""
    cuda = device.startswith("cuda")
    repeats = repeats or (3 if quick else 7)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def sample(n: int) -> float:
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(n):
                fn()
            e.record()
            e.synchronize()
            return s.elapsed_time(e) / n
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e3 / n

    for _ in range(warmup):
        fn()
    sync()
    if iters is None:
        est = sample(3)
        iters = int(max(3, min(500, (30.0 if quick else 100.0) / max(est, 1e-3))))
    vals = [sample(iters) for _ in range(repeats)]
    return {"ms": statistics.median(vals), "iters": iters, "repeats": repeats, "min_ms": min(vals),
            "max_ms": max(vals)}


def profile_calls(fn: Callable[[], Any], calls: int = 5, top: int = 8) -> dict:
    """GPU kernels per call, GPU busy ms per call and the top kernels by GPU time (torch.profiler, CUPTI)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per: dict = {}
    for ev in prof.events():
        if getattr(ev, "device_type", None) != DeviceType.CUDA:
            continue
        us = ev.time_range.elapsed_us()
        n, tot = per.get(ev.name, (0, 0.0))
        per[ev.name] = (n + 1, tot + us)
    busy = sum(t for _, t in per.values())
    ranked = sorted(per.items(), key=lambda kv: -kv[1][1])[:top]
    return {"kernels_per_call": sum(n for n, _ in per.values()) / calls, "gpu_busy_ms_per_call": busy / calls / 1e3,
            "top_kernels": [{"name": k[:100], "per_call": n / calls, "ms_per_call": t / calls / 1e3}
                            for k, (n, t) in ranked]}


# -------------------------------------------------------------------------------------------- CUDA backend

@dataclasses.dataclass
class ModelCtx:
    name: str
    model: nn.Module        # bf16 (or the run's dtype) on the device
    inputs: tuple
    ref: torch.Tensor        # float32 reference output
    key: str                 # cache key
    cache_dir: str
    info: dict


@dataclasses.dataclass
class Handle:
    variant: str
    call: Callable[..., Any]                 # call(*inputs) -> output
    kind: str                                # "eager" | "torch_compile" | "aotirt"
    context: Callable[[], Any] = contextlib.nullcontext
    info: dict = dataclasses.field(default_factory=dict)
    runner: Any = None


def _source_hash() -> str:
    try:
        with open(__file__, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return "unknown"


def _sdpa_math():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.MATH])


class CudaBench:
    """Builds, compiles (with a package cache), times and checks each variant on one device."""

    def __init__(self, args: argparse.Namespace, say: Callable[[str], None]):
        self.args, self.say = args, say
        self.device = args.device
        self.dtype = torch.bfloat16

    def describe(self) -> dict:
        d = {"torch": torch.__version__, "device": self.device}
        if self.device.startswith("cuda") and torch.cuda.is_available():
            idx = torch.device(self.device).index or 0
            p = torch.cuda.get_device_properties(idx)
            d.update(gpu=torch.cuda.get_device_name(idx), sms=p.multi_processor_count, cuda=torch.version.cuda)
        try:
            import triton
            d["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            pass
        return d

    # -- per model
    def prepare(self, name: str) -> ModelCtx:
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device (use --device cpu for an eager-only smoke run)")
        import aotirt
        base = build(name, tiny=self.args.tiny, seed=self.args.seed)
        inputs32 = example_inputs(name, base, dtype=torch.float32, device=self.device, seed=self.args.seed)
        tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        try:
            with torch.no_grad():
                ref32 = base.to(self.device)
                ref = _flat_tensors(ref32(*inputs32))[0].float().clone()
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        model = base.to(self.device, self.dtype)  # same weights, now bf16 (the float32 copy is gone)
        inputs = tuple(x.to(self.dtype) for x in inputs32)
        cfg = config(name, self.args.tiny)
        key_src = json.dumps({"model": name, "cfg": cfg, "seed": self.args.seed, "dtype": str(self.dtype),
                              "torch": torch.__version__, "aotirt": aotirt.__version__, "src": _source_hash(),
                              "device": self.describe().get("gpu", self.device)}, sort_keys=True)
        key = f"{name}-{hashlib.sha256(key_src.encode()).hexdigest()[:12]}"
        cache_dir = os.path.join(self.args.cache_dir, key)
        os.makedirs(cache_dir, exist_ok=True)
        params = sum(p.numel() for p in model.parameters())
        info = {"config": cfg, "params_m": round(params / 1e6, 2), "inputs": [list(x.shape) for x in inputs],
                "output": list(ref.shape)}
        self.say(f"{name}: {info['params_m']} M params, inputs {info['inputs']} -> {info['output']}")
        return ModelCtx(name, model, inputs, ref, key, cache_dir, info)

    def release(self, ctx: ModelCtx) -> None:
        import gc
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass
        del ctx.model, ctx.inputs, ctx.ref
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- packages
    def _package_path(self, ctx: ModelCtx, backends: str) -> str:
        from aotirt import specs
        opts = specs.inductor_options(specs.CompileOptions(max_autotune=True, max_autotune_gemm_backends=backends))
        h = hashlib.sha256(repr(sorted((k, repr(v)) for k, v in opts.items())).encode()).hexdigest()[:8]
        return os.path.join(ctx.cache_dir, f"{backends.replace(',', '_').lower()}-{h}.pt2")

    def package(self, ctx: ModelCtx, backends: str) -> tuple:
        """(path, compile seconds or 0.0 when reused from the cache)."""
        import aotirt
        path = self._package_path(ctx, backends)
        if os.path.exists(path):
            self.say(f"{ctx.name}: reusing {os.path.basename(path)} from the cache")
            return path, 0.0
        tmp = f"{path[:-4]}.tmp{os.getpid()}.pt2"
        t0 = time.monotonic()
        self.say(f"{ctx.name}: compiling {backends} (max_autotune) ...")
        try:
            aotirt.compile(ctx.model, ctx.inputs, tmp, device=self.device,
                           options=aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends=backends))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        dt = time.monotonic() - t0
        self.say(f"{ctx.name}: compiled {backends} in {dt:.0f} s")
        return path, dt

    def needs_compile(self, ctx: ModelCtx, variant: str) -> bool:
        if variant == "eager":
            return False
        if variant in TORCH_COMPILE:
            return True  # in-process compile (Inductor's own caches may make it quick)
        backends = list(FIXED.values()) if variant == "aotirt_auto" else [FIXED[variant]]
        return any(not os.path.exists(self._package_path(ctx, b)) for b in backends)

    # -- variants
    def setup(self, ctx: ModelCtx, variant: str) -> Handle:
        import aotirt
        if variant == "eager":
            return Handle(variant, ctx.model, "eager")
        if variant in TORCH_COMPILE:
            from aotirt import specs
            opts = specs.inductor_options(specs.CompileOptions(
                max_autotune=True, max_autotune_gemm_backends=TORCH_COMPILE[variant]))
            opts = {k: v for k, v in opts.items() if not k.startswith("aot_inductor.")}
            torch._dynamo.reset()  # a fresh compile per variant (same module object, other options)
            compiled = torch.compile(ctx.model, options=opts, fullgraph=True)
            t0 = time.monotonic()
            self.say(f"{ctx.name}: torch.compile {TORCH_COMPILE[variant]} (max_autotune) ...")
            with torch.no_grad(), _sdpa_math():
                compiled(*ctx.inputs)
            dt = time.monotonic() - t0
            self.say(f"{ctx.name}: torch.compile done in {dt:.0f} s")
            return Handle(variant, compiled, "torch_compile", _sdpa_math, {"compile_s": round(dt, 1)})
        if variant in FIXED:
            path, dt = self.package(ctx, FIXED[variant])
            runner = aotirt.load(path, device=self._index())
            return Handle(variant, runner, "aotirt", info={"compile_s": round(dt, 1), "cached": dt == 0.0,
                                                           "package_mib": round(os.path.getsize(path) / 2**20, 1)},
                          runner=runner)
        if variant == "aotirt_auto":
            from aotirt import auto
            compiled_s = []

            def compile_fn(model, example_inputs, package_path, *, options, **kw):
                path, dt = self.package(ctx, options.max_autotune_gemm_backends)
                compiled_s.append(dt)
                return path

            timer = auto.CudaGraphTimer(repeats=3 if self.args.quick else 5)
            result: list = []
            out = os.path.join(ctx.cache_dir, f"auto.run{os.getpid()}.pt2")
            for name in os.listdir(ctx.cache_dir):  # AUTO packages of earlier runs (never reused: AUTO re-times)
                if name.startswith("auto.run") and name.endswith(".pt2"):
                    os.remove(os.path.join(ctx.cache_dir, name))
            t0 = time.monotonic()
            try:
                auto.compile_auto(ctx.model, ctx.inputs, out, device=self.device,
                                  options=aotirt.CompileOptions(max_autotune=True), compile_fn=compile_fn,
                                  time_fn=timer, rounds=self.args.auto_rounds, result=result)
            finally:
                timer.close()
            select_s = time.monotonic() - t0 - sum(compiled_s)
            runner = aotirt.load(out, device=self._index())
            md = runner.metadata  # read back through the runtime: what a user of the package sees
            info = {"auto_choice": md[auto.META_CHOICE], "auto_timings_ms": json.loads(md[auto.META_TIMINGS]),
                    "auto_methods": json.loads(md[auto.META_METHODS]), "auto_select_s": round(select_s, 1),
                    "compile_s": round(sum(compiled_s), 1)}
            if auto.META_ERRORS in md:
                info["auto_errors"] = json.loads(md[auto.META_ERRORS])
            if result and result[0].choice != info["auto_choice"]:
                raise RuntimeError(f"AUTO recorded {info['auto_choice']} but chose {result[0].choice}")
            self.say(f"{ctx.name}: AUTO chose {info['auto_choice']} {info['auto_timings_ms']}")
            return Handle(variant, runner, "aotirt", info=info, runner=runner)
        raise ValueError(f"unknown variant {variant!r}")

    def _index(self) -> int:
        return torch.device(self.device).index or 0 if self.device.startswith("cuda") else 0

    def _graphed(self, ctx: ModelCtx, h: Handle) -> Callable[[], Any]:
        if not self.device.startswith("cuda"):
            raise RuntimeError("CUDA graphs need a CUDA device")
        if h.kind == "aotirt":
            import aotirt
            graphed = aotirt.capture(h.runner, *ctx.inputs)
            return lambda: graphed(*ctx.inputs)
        static = [x.clone() for x in ctx.inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                h.call(*static)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            out = h.call(*static)
        h.info.setdefault("_graphs", []).append(g)  # keep it alive with the handle

        def replay():
            for s, x in zip(static, ctx.inputs):
                s.copy_(x)
            g.replay()
            return out
        return replay

    def measure(self, ctx: ModelCtx, h: Handle, graphs: bool) -> dict:
        with torch.no_grad(), h.context():
            fn = self._graphed(ctx, h) if graphs else (lambda: h.call(*ctx.inputs))
            out = _flat_tensors(fn())
            if not out:
                raise RuntimeError("the variant returned no tensor")
            got = out[0].float()
            if tuple(got.shape) != tuple(ctx.ref.shape):
                raise RuntimeError(f"output shape {tuple(got.shape)} != reference {tuple(ctx.ref.shape)}")
            diff = (got - ctx.ref).abs()
            row = {"mean_abs_diff": float(diff.mean()), "max_abs_diff": float(diff.max())}
            t = time_ms(fn, self.device, quick=self.args.quick)
            row.update(ms=t["ms"], iters=t["iters"], repeats=t["repeats"], min_ms=t["min_ms"], max_ms=t["max_ms"])
            row["timing"] = ("CUDA graph replay incl. input copy" if graphs else "back-to-back calls") + \
                (", CUDA events" if self.device.startswith("cuda") else ", host clock")
            if self.args.profile and not graphs and self.device.startswith("cuda"):
                try:
                    row["profile"] = profile_calls(fn)
                except Exception as e:  # noqa: BLE001
                    row["profile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        row.update({k: v for k, v in h.info.items() if not k.startswith("_")})
        return row


# -------------------------------------------------------------------------------------------------- run loop

def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:600]}"


def _commit() -> str:
    bundle = os.environ.get("AOTIRT_BUNDLE")
    if bundle:
        try:
            with open(os.path.join(bundle, "COMMIT")) as f:
                return f.read().strip()
        except OSError:
            pass
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def load_existing(path: str) -> dict:
    try:
        with open(path) as f:
            data = json.load(f)
        if isinstance(data, dict) and isinstance(data.get("rows"), list):
            return data
    except (OSError, ValueError):
        pass
    return {"rows": []}


def run_benchmark(args: argparse.Namespace, backend: Any, *, clock: Callable[[], float] = time.monotonic,
                  say: Callable[[str], None] | None = None) -> dict:
    """Runs every (model, variant, graphs) row within the budget; returns the result dict (also written to --out,
    after every row, so a run cut short keeps what it measured). Rows from an earlier JSON at --out are kept unless
    this run measured (or tried) the same row; a row skipped for time never replaces a measured one."""
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    t0 = clock()
    paths = out_paths(args.out)
    os.makedirs(os.path.dirname(os.path.abspath(paths["json"])), exist_ok=True)
    old = load_existing(paths["json"]) if args.merge else {"rows": []}
    rows = {(r.get("model"), r.get("variant"), bool(r.get("graphs"))): r for r in old["rows"]}
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    modes = {"both": (False, True), "off": (False,), "on": (True,)}[args.graphs]
    meta = {"run": run_id, "commit": _commit(), "argv": sys.argv[1:], "budget_s": args.budget_s,
            "quick": args.quick, "tiny": args.tiny, **backend.describe()}
    result = {"meta": meta, "runs": list(old.get("runs", [])) + [meta], "rows": [], "targets": []}

    def left() -> float:
        return args.budget_s - (clock() - t0)

    def put(model: str, variant: str, graphs: bool, data: dict) -> None:
        key = (model, variant, graphs)
        row = {"model": model, "variant": variant, "graphs": graphs, "ms": None, "mean_abs_diff": None,
               "gemm_backends": gemm_backends(variant), "run": run_id, "error": None}
        row.update(data)
        if row.get("skipped") and key in rows and rows[key].get("ms") is not None:
            return  # keep the measured row of an earlier run
        rows[key] = row
        result["rows"] = [rows[k] for k in sorted(rows, key=_row_order)]
        result["targets"] = targets(result["rows"])
        write_json(paths["json"], result)
        with open(paths["md"], "w") as f:  # kept current too, for a run cut short
            f.write(markdown(result))
        ms = "-" if row["ms"] is None else f"{row['ms']:.4f} ms"
        note = f"  [{row['error']}]" if row.get("error") else ""
        say(f"[{clock() - t0:6.1f}s] {model:7s} {variant:26s} graphs={'on ' if graphs else 'off'} {ms}"
            + (f"  |diff| {row['mean_abs_diff']:.3g}" if row.get("mean_abs_diff") is not None else "") + note)

    def skip_all(model: str, variants, why: str) -> None:
        for v in variants:
            for g in modes:
                put(model, v, g, {"error": why, "skipped": True})

    for model in args.models:
        if left() < 10:
            skip_all(model, args.variants, f"skipped: time budget ({left():.0f} s left of {args.budget_s:.0f})")
            continue
        try:
            ctx = backend.prepare(model)
        except Exception as e:  # noqa: BLE001
            say(traceback.format_exc())
            skip_all(model, args.variants, f"model setup failed: {_err(e)}")
            continue
        try:
            for variant in args.variants:
                need = backend.needs_compile(ctx, variant)
                if left() < (args.compile_reserve_s if need else 10):
                    skip_all(model, [variant], f"skipped: time budget ({left():.0f} s left; "
                             + (f"a compile needs ~{args.compile_reserve_s:.0f} s" if need else "timing needs ~10 s")
                             + "); rerun with the same --cache-dir/--out to continue")
                    continue
                try:
                    handle = backend.setup(ctx, variant)
                except Exception as e:  # noqa: BLE001
                    say(traceback.format_exc())
                    for g in modes:
                        put(model, variant, g, {"error": f"setup failed: {_err(e)}"})
                    continue
                for g in modes:
                    try:
                        put(model, variant, g, backend.measure(ctx, handle, g))
                    except Exception as e:  # noqa: BLE001
                        say(traceback.format_exc())
                        put(model, variant, g, {"error": _err(e), **getattr(handle, "info", {})})
                del handle
        finally:
            backend.release(ctx)
    result["rows"] = [rows[k] for k in sorted(rows, key=_row_order)]
    result["targets"] = targets(result["rows"])
    result["elapsed_s"] = round(clock() - t0, 1)
    write_json(paths["json"], result)
    return result


def _row_order(key: tuple) -> tuple:
    model, variant, graphs = key
    mi = MODELS.index(model) if model in MODELS else len(MODELS)
    vi = VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS)
    return (mi, str(model), vi, str(variant), graphs)


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def write_json(path: str, result: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(_clean(result), f, indent=1)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------- targets

def _ms(rows: list, model: str, variant: str, graphs: bool) -> float | None:
    for r in rows:
        if r.get("model") == model and r.get("variant") == variant and bool(r.get("graphs")) == graphs:
            return r.get("ms")
    return None


def targets(rows: list) -> list:
    """The issue's four targets, evaluated on whatever rows exist (None where a needed row is missing)."""
    out = []
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)

    def add(target, model, graphs, value, limit, better, detail):
        met = None if value is None else (value <= limit if better == "le" else value >= limit)
        out.append({"target": target, "model": model, "graphs": graphs, "value": value, "limit": limit,
                    "met": met, "detail": detail})

    for m in models:
        for tc, b in TORCH_COMPILE.items():  # 1: runtime vs torch.compile, same GEMM backends, no graphs
            ours = [v for v, bb in FIXED.items() if bb == b][0]
            a, t = _ms(rows, m, ours, False), _ms(rows, m, tc, False)
            if t is None and tc != "torch_compile":
                continue
            add("aotirt <= 1.02 x torch.compile (no graphs)", m, False,
                None if a is None or t is None else a / t, 1.02, "le", f"{ours} / {tc} ({b})")
    for m in [m for m in models if m == "gemma"]:  # 2: graphs vs no graphs on the Gemma-like model
        for v in list(FIXED) + ["aotirt_auto"]:
            g, n = _ms(rows, m, v, True), _ms(rows, m, v, False)
            if g is None and n is None:
                continue
            add("graphs <= 0.7 x no graphs (gemma)", m, True, None if g is None or n is None else g / n, 0.7,
                "le", f"{v}: graphs / no graphs")
    for m in models:  # 3: AUTO vs the fastest fixed choice
        for graphs in (True, False):
            fixed = {v: _ms(rows, m, v, graphs) for v in FIXED}
            have = {v: x for v, x in fixed.items() if x is not None}
            a = _ms(rows, m, "aotirt_auto", graphs)
            if a is None and not have:
                continue
            best = min(have, key=have.get) if have else None
            choice = next((r.get("auto_choice") for r in rows if r.get("model") == m
                           and r.get("variant") == "aotirt_auto" and r.get("auto_choice")), None)
            add("AUTO <= 1.01 x fastest fixed", m, graphs,
                None if a is None or best is None else a / have[best], 1.01, "le",
                f"fastest fixed: {best} ({FIXED.get(best)}); AUTO chose {choice}"
                + ("" if len(have) == len(FIXED) else f"; only {sorted(have)} measured"))
    for m in [m for m in models if m == "siglip"]:  # 4: ATEN,TRITON vs TRITON on SigLIP
        for graphs in (False, True):
            at, tr = _ms(rows, m, "aotirt_aten_triton", graphs), _ms(rows, m, "aotirt_triton", graphs)
            if at is None and tr is None:
                continue
            add("ATEN,TRITON >= 8% faster than TRITON (siglip)", m, graphs,
                None if at is None or tr is None else 1.0 - at / tr, 0.08, "ge",
                "speedup = 1 - aten_triton / triton")
    return out


# ----------------------------------------------------------------------------------------------------- report

def _f(x: Any, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def markdown(result: dict) -> str:
    rows = result.get("rows", [])
    meta = result.get("meta", {})
    lines = [f"Model benchmark (`benchmarks/models.py`), {meta.get('gpu', meta.get('device', '?'))}, torch "
             f"{meta.get('torch', '?')}, commit {meta.get('commit') or '?'}, run {meta.get('run', '?')}. "
             f"ms per call (median); graphs = whole-model CUDA graph replay incl. input copy; mean |diff| vs the "
             f"float32 model.", ""]
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)
    lines += ["| model | variant | ms (no graphs) | ms (graphs) | graphs / no | vs torch.compile (no graphs) | "
              "mean abs diff | notes |", "|---|---|---|---|---|---|---|---|"]
    for m in models:
        tc = _ms(rows, m, "torch_compile", False)
        variants = sorted({r["variant"] for r in rows if r["model"] == m},
                          key=lambda v: VARIANTS.index(v) if v in VARIANTS else 99)
        for v in variants:
            n, g = _ms(rows, m, v, False), _ms(rows, m, v, True)
            rs = [r for r in rows if r["model"] == m and r["variant"] == v]
            diffs = [r.get("mean_abs_diff") for r in rs if r.get("mean_abs_diff") is not None]
            notes = []
            for r in rs:
                if r.get("error"):
                    notes.append(f"{'graphs' if r['graphs'] else 'no graphs'}: {r['error'][:80]}")
            auto_choice = next((r.get("auto_choice") for r in rs if r.get("auto_choice")), None)
            if auto_choice:
                notes.insert(0, f"chose {auto_choice}")
            lines.append(f"| {m} | {v} | {_f(n)} | {_f(g)} | {_f(None if n is None or g is None else g / n, '{:.2f}')}"
                         f" | {_f(None if n is None or tc is None else n / tc, '{:.2f}x')} | "
                         f"{_f(max(diffs) if diffs else None, '{:.2e}')} | {'; '.join(notes).replace('|', '/')} |")
    lines += ["", "| target | model | graphs | value | limit | met | detail |", "|---|---|---|---|---|---|---|"]
    for t in result.get("targets", []):
        met = {True: "**met**", False: "**missed**", None: "n/a"}[t["met"]]
        lines.append(f"| {t['target']} | {t['model']} | {'on' if t['graphs'] else 'off'} | {_f(t['value'])} | "
                     f"{t['limit']} | {met} | {t['detail']} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: str) -> str:
    """Writes a PNG bar chart (ms per call per variant, no graphs vs graphs, one panel per model); returns a
    message (the reason when matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return f"plot skipped: matplotlib is not importable ({e})"
    rows = [r for r in result.get("rows", []) if r.get("ms") is not None]
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)
    if not models:
        return "plot skipped: no measured rows"
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2), squeeze=False)
    for ax, m in zip(axes[0], models):
        variants = sorted({r["variant"] for r in rows if r["model"] == m},
                          key=lambda v: VARIANTS.index(v) if v in VARIANTS else 99)
        xs = range(len(variants))
        for off, graphs, label in ((-0.2, False, "no graphs"), (0.2, True, "CUDA graphs")):
            ys = [_ms(rows, m, v, graphs) or 0.0 for v in variants]
            ax.bar([x + off for x in xs], ys, width=0.4, label=label)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([v.replace("torch_compile", "tc").replace("aotirt_", "aotirt\n") for v in variants],
                           fontsize=7)
        ax.set_title(m)
        ax.set_ylabel("ms per call")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"wrote {path}"


def main(argv: list | None = None, default_out: str | None = None) -> int:
    args = parse_args(argv, default_out)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.report_only:
        paths = out_paths(args.out)
        result = load_existing(paths["json"])
        if not result["rows"]:
            say(f"--report-only: no rows in {paths['json']}")
            return 1
        result["targets"] = targets(result["rows"])
        with open(paths["md"], "w") as f:
            f.write(markdown(result))
        say(plot(result, paths["png"]))
        print(markdown(result))
        return 0
    say(f"models {','.join(args.models)}; variants {','.join(args.variants)}; graphs {args.graphs}; budget "
        f"{args.budget_s:.0f} s; cache {args.cache_dir}")
    result = run_benchmark(args, CudaBench(args, say), say=say)
    paths = out_paths(args.out)
    with open(paths["md"], "w") as f:
        f.write(markdown(result))
    say(plot(result, paths["png"]))
    print(markdown(result))
    say(f"wrote {paths['json']} and {paths['md']} in {result.get('elapsed_s')} s")
    return 0
