"""The benchmark's models: SigLIP-like (aotirt.demo), Gemma-like and pi0.5-like definitions, full and tiny configs,
deterministic weights and example inputs (see model_bench for the shapes)."""
from __future__ import annotations

import json
import math

import torch
from torch import nn
from torch.nn import functional as F

from aotirt import demo

SIGLIP = dict(num_blocks=4, width=1152, heads=16, mlp=4304, tokens=256)
GEMMA = dict(num_blocks=4, width=1024, heads=8, kv_heads=1, head_dim=256, mlp=4096, tokens=64)
PI05 = dict(vision=dict(SIGLIP), patch_dim=588, expert=dict(num_blocks=4, width=1024, heads=8, kv_heads=1,
                                                             head_dim=256, mlp=4096),
            horizon=50, action_dim=32, state_dim=32, steps=10)
# Issue 13's rows: a GPT-2-like decoder at T=2048 and T=128 (4 layers, width 512, B=2), a ViT-B/16-like encoder
# (12 layers, width 768, 224x224 images, B=8) and a ResNet-50-like CNN (bottlenecks 3-4-6-3, 224x224, B=16).
GPT2 = dict(num_blocks=4, width=512, heads=8, mlp=2048, tokens=2048, batch=2)
GPT2_T128 = dict(GPT2, tokens=128)
VIT_B16 = dict(num_blocks=12, width=768, heads=12, mlp=3072, image=224, patch=16, batch=8)
RESNET50 = dict(layers=[3, 4, 6, 3], base=64, image=224, classes=1000, batch=16)
# Tiny sizes of the same structures: CPU tests and smoke runs.
TINY = {
    "gpt2": dict(num_blocks=2, width=64, heads=4, mlp=96, tokens=16, batch=2),
    "gpt2_t128": dict(num_blocks=2, width=64, heads=4, mlp=96, tokens=8, batch=2),
    "vit_b16": dict(num_blocks=2, width=64, heads=4, mlp=96, image=32, patch=8, batch=2),
    "resnet50": dict(layers=[1, 1], base=8, image=32, classes=10, batch=2),
    "siglip": dict(num_blocks=2, width=64, heads=4, mlp=96, tokens=16),
    "gemma": dict(num_blocks=2, width=64, heads=4, kv_heads=1, head_dim=16, mlp=96, tokens=8),
    "pi05": dict(vision=dict(num_blocks=1, width=48, heads=4, mlp=64, tokens=12), patch_dim=27,
                 expert=dict(num_blocks=2, width=64, heads=4, kv_heads=1, head_dim=16, mlp=96),
                 horizon=5, action_dim=6, state_dim=7, steps=10),
}
FULL = {"siglip": SIGLIP, "gemma": GEMMA, "pi05": PI05, "gpt2": GPT2, "gpt2_t128": GPT2_T128, "vit_b16": VIT_B16,
        "resnet50": RESNET50}
MODELS = tuple(FULL)
DEFAULT_MODELS = ("siglip", "gemma", "pi05")  # --models default (the runs recorded so far); "all" adds issue 13's


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


class Block(nn.Module):
    """Pre-LayerNorm transformer block (GPT-2 / ViT): x + proj(SDPA(qkv(LN(x)))), then x + fc2(gelu(fc1(LN(x))))."""

    def __init__(self, width: int, heads: int, mlp: int, causal: bool):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, w))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x)), approximate="tanh"))


class GPT2Like(nn.Module):
    """Input (batch, tokens, width) embeddings -> (batch, tokens, width); causal, learned positions."""

    def __init__(self, num_blocks: int, width: int, heads: int, mlp: int, tokens: int, batch: int = 1):
        super().__init__()
        self.width, self.tokens, self.batch = width, tokens, batch
        self.pos = nn.Parameter(torch.zeros(tokens, width))
        self.blocks = nn.ModuleList([Block(width, heads, mlp, causal=True) for _ in range(num_blocks)])
        self.ln_f = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.pos
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)


class ViTLike(nn.Module):
    """Images (batch, 3, image, image) -> (batch, 1 + patches, width): conv patch embedding, class token, learned
    positions, bidirectional blocks."""

    def __init__(self, num_blocks: int, width: int, heads: int, mlp: int, image: int, patch: int, batch: int = 1):
        super().__init__()
        self.width, self.image, self.batch = width, image, batch
        self.tokens = 1 + (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.zeros(self.tokens, width))
        self.blocks = nn.ModuleList([Block(width, heads, mlp, causal=False) for _ in range(num_blocks)])
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class Bottleneck(nn.Module):
    """ResNet-50's bottleneck: 1x1 -> 3x3 (stride) -> 1x1 (x4), BatchNorm after each, projection shortcut."""

    def __init__(self, cin: int, mid: int, stride: int):
        super().__init__()
        cout = 4 * mid
        self.conv1, self.bn1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.conv2, self.bn2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid)
        self.conv3, self.bn3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetLike(nn.Module):
    """Images (batch, 3, image, image) -> logits (batch, classes): 7x7/2 stem, max pool, bottleneck stages, mean pool."""

    def __init__(self, layers: list, base: int, image: int, classes: int, batch: int = 1):
        super().__init__()
        self.image, self.batch, self.classes = image, batch, classes
        self.stem = nn.Conv2d(3, base, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(base)
        blocks, cin = [], base
        for i, n in enumerate(layers):
            mid = base * 2 ** i
            for j in range(n):
                blocks.append(Bottleneck(cin, mid, 2 if j == 0 and i > 0 else 1))
                cin = 4 * mid
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, 2, 1)
        return self.fc(self.blocks(x).mean((2, 3)))


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
            elif isinstance(mod, nn.Conv2d):  # He-normal: keeps a ReLU network's activations O(1)
                fan_in = mod.weight[0].numel()
                mod.weight.copy_(rnd(mod.weight, math.sqrt(2.0 / fan_in)))
                if mod.bias is not None:
                    mod.bias.copy_(rnd(mod.bias, 0.02))
            elif isinstance(mod, nn.BatchNorm2d):  # eval-mode statistics that are not the identity
                mod.weight.copy_(1.0 + rnd(mod.weight, 0.1))
                mod.bias.copy_(rnd(mod.bias, 0.1))
                mod.running_mean.copy_(rnd(mod.running_mean, 0.1))
                mod.running_var.copy_(1.0 + rnd(mod.running_var, 0.1).abs())
        for mod in model.modules():
            if isinstance(mod, Bottleneck):  # the residual branch starts small (as zero-init-residual does)
                mod.bn3.weight.mul_(0.2)
            if isinstance(mod, (GPT2Like, ViTLike)):
                mod.pos.copy_(rnd(mod.pos, 0.02))
            if isinstance(mod, ViTLike):
                mod.cls.copy_(rnd(mod.cls, 0.02))
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
    if name in ("gpt2", "gpt2_t128"):
        return _init_(GPT2Like(**cfg), seed)
    if name == "vit_b16":
        return _init_(ViTLike(**cfg), seed)
    if name == "resnet50":
        return _init_(ResNetLike(**cfg), seed)
    return _init_(Pi05Like(**cfg), seed)


def example_inputs(name: str, model: nn.Module, *, dtype: torch.dtype = torch.bfloat16, device: str = "cuda",
                   batch: int | None = None, seed: int = 0) -> tuple:
    """The model's inputs; batch defaults to the model's own (`batch` of its config; 1 where it has none)."""
    gen = torch.Generator().manual_seed(seed + 1)
    batch = batch or getattr(model, "batch", 1)
    if name in ("vit_b16", "resnet50"):
        xs = (torch.randn(batch, 3, model.image, model.image, generator=gen),)
    elif name == "pi05":
        xs = (torch.randn(batch, model.patches, model.patch_dim, generator=gen),
              torch.randn(batch, model.state_dim, generator=gen),
              torch.randn(batch, model.horizon, model.action_dim, generator=gen))
    else:
        xs = (torch.randn(batch, model.tokens, model.width, generator=gen),)
    return tuple(x.to(device=device, dtype=dtype) for x in xs)


def output_shape(name: str, model: nn.Module, batch: int | None = None) -> tuple:
    batch = batch or getattr(model, "batch", 1)
    if name == "resnet50":
        return (batch, model.classes)
    if name == "pi05":
        return (batch, model.horizon, model.action_dim)
    return (batch, model.tokens, model.width)
