"""Built-in demo model: SigLIP-like vision encoder blocks with random weights (no download). Needs torch.

Each block is pre-LN: x + Attn(LN(x)), then x + MLP(LN(x)), with biases everywhere, GELU (tanh) and
scaled_dot_product_attention; a final LayerNorm follows (SigLIP's post_layernorm). Defaults are SigLIP-so400m's
sizes (width 1152, 16 heads, MLP 4304, 256 tokens for 224x224 / patch 14 ~ 16x16 patches).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} must be divisible by heads {heads}")
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        split = lambda y: y.view(b, t, self.heads, w // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, w))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, mlp: int):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(width, eps=1e-6)
        self.self_attn = Attention(width, heads)
        self.layer_norm2 = nn.LayerNorm(width, eps=1e-6)
        self.fc1 = nn.Linear(width, mlp)
        self.fc2 = nn.Linear(mlp, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.layer_norm2(x)), approximate="tanh"))


class SiglipLike(nn.Module):
    """Input (batch, tokens, width) patch embeddings -> (batch, tokens, width) hidden states."""

    def __init__(self, num_blocks: int, width: int, heads: int, mlp: int, tokens: int):
        super().__init__()
        self.width, self.tokens = width, tokens
        self.blocks = nn.ModuleList([Block(width, heads, mlp) for _ in range(num_blocks)])
        self.post_layernorm = nn.LayerNorm(width, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.post_layernorm(x)

    def example_inputs(self, dtype: torch.dtype = torch.bfloat16, device: str = "cuda", batch: int = 1,
                       seed: int = 0) -> tuple:
        return example_inputs(self, dtype=dtype, device=device, batch=batch, seed=seed)


def siglip_like(num_blocks: int = 2, width: int = 1152, heads: int = 16, mlp: int = 4304, tokens: int = 256, *,
                seed: int = 0) -> SiglipLike:
    """The demo model in float32 on CPU, eval mode, deterministic random weights (move it with .to(device, dtype))."""
    gen = torch.Generator().manual_seed(seed)
    model = SiglipLike(num_blocks, width, heads, mlp, tokens)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name or "layernorm" in name:
                # LayerNorm near identity, slightly perturbed so the weights matter.
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.02 * torch.randn(p.shape, generator=gen))
            else:
                # std 0.02 keeps activations O(1) through the blocks, so bf16 comparisons stay meaningful.
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    return model.eval()


def example_inputs(model: SiglipLike | None = None, *, dtype: torch.dtype = torch.bfloat16, device: str = "cuda",
                   batch: int = 1, seed: int = 0) -> tuple:
    """(x,) with x of shape (batch, tokens, width) ~ N(0, 1) for `model` (default: siglip_like()'s sizes)."""
    tokens, width = (model.tokens, model.width) if model is not None else (256, 1152)
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, tokens, width, generator=gen)
    return (x.to(device=device, dtype=dtype),)
