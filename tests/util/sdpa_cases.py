"""Random scaled_dot_product_attention cases and a float64 reference of torch's SDPA semantics, shared by the Triton
attention kernel's tests: on the GPU (tests/gpu/test_triton_attention_gpu.py) and on the CPU under Triton's
interpreter (tests/cpu/test_triton_attention_interpreter.py, smaller lengths)."""
import math

import torch


def reference(q, k, v, mask, causal, scale, gqa):
    """float64 SDPA with torch's semantics; rows with no key to attend are 0."""
    q, k, v = q.double(), k.double(), v.double()
    H, Hkv, Lq, Lk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    if Hkv != H:
        k, v = k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1)
    s = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    allowed = torch.ones(Lq, Lk, dtype=torch.bool, device=q.device)
    if causal:
        allowed = torch.tril(allowed)
    allowed = allowed.expand_as(s)
    if mask is not None and mask.dtype == torch.bool:
        allowed = allowed & mask.expand_as(s)
    elif mask is not None:
        s = s + mask.double()
    s = s.masked_fill(~allowed, float("-inf"))
    empty = torch.isneginf(s).all(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
    return p @ v.double()


def layout(x, kind):
    """x [B, H, T, D] in the layouts Inductor passes: contiguous, [B, T, H, D] in memory, a slice of a wider row."""
    B, H, T, D = x.shape
    if kind == "contiguous":
        return x.contiguous()
    if kind == "bthd":
        return x.transpose(1, 2).contiguous().transpose(1, 2)
    wide = torch.empty(B, T, H, 3 * D, dtype=x.dtype, device=x.device)  # a fused projection's slice
    wide[..., D:2 * D] = x.transpose(1, 2)
    return wide[..., D:2 * D].transpose(1, 2)


def random_case(rng, i, small=False):
    """One case (a dict). small: lengths to 200, head dims to 80, float32/float16 (the interpreter's numpy has no
    bfloat16), and sparser masks too (rows with nothing to attend)."""
    if small:
        dtype = [torch.float32, torch.float16][i % 2]
        d = rng.choice([16, 32, 64, 80])
        dv = d if rng.random() < 0.8 else rng.choice([16, 48])
    else:
        dtype = [torch.bfloat16, torch.float16, torch.float32][i % 3]
        d = rng.choice([16, 64, 64, 80, 96, 128, 128, 256])
        dv = d if rng.random() < 0.85 else rng.choice([32, 64, 128])
    hkv = rng.choice([1, 1, 2, 4])
    h = hkv * rng.choice([1, 2, 4])
    b = rng.choice([1, 2, 3])
    if small:
        lq = rng.choice([1, 7, 33, 64, 130])
        lk = lq if rng.random() < 0.6 else rng.choice([1, 5, 64, 97, 200])
    else:
        big = rng.random() < 0.06
        lq = rng.choice([1, 1, 7, 64, 128, 200, 513]) if not big else rng.choice([2048, 8192])
        lk = lq if rng.random() < 0.6 else rng.choice([1, 5, 64, 129, 700, 1024])
        if big:
            b, h, hkv = 1, 2, rng.choice([1, 2])
    causal = rng.random() < 0.4
    mask_kind = rng.choice(["none", "none", "bool", "additive"])
    shape = rng.choice([(lq, lk), (b, 1, 1, lk), (b, h, lq, lk), (1, h, 1, lk), (lk,)])
    scale = None if rng.random() < 0.7 else rng.uniform(0.05, 0.5)
    lay = rng.choice(["contiguous", "bthd", "slice"])
    c = dict(dtype=dtype, b=b, h=h, hkv=hkv, lq=lq, lk=lk, d=d, dv=dv, causal=causal, mask=mask_kind,
             mask_shape=shape, scale=scale, layout=lay)
    if small:
        c["keep"] = 0.75 if rng.random() < 0.7 else 0.05  # the share of keys a mask keeps
    return c


def tensors(c, seed, device="cuda"):
    """(q, k, v, mask) of case c in its layout, drawn from a generator seeded with `seed`."""
    g = torch.Generator(device=device).manual_seed(seed)
    dt = c["dtype"]
    q = torch.randn(c["b"], c["h"], c["lq"], c["d"], device=device, dtype=dt, generator=g)
    k = torch.randn(c["b"], c["hkv"], c["lk"], c["d"], device=device, dtype=dt, generator=g)
    v = torch.randn(c["b"], c["hkv"], c["lk"], c["dv"], device=device, dtype=dt, generator=g)
    q, k, v = (layout(x, c["layout"]) for x in (q, k, v))
    mask = None
    keep = c.get("keep", 0.75)
    if c["mask"] == "bool":
        mask = torch.rand(c["mask_shape"], device=device, generator=g) < keep
    elif c["mask"] == "additive":
        m = torch.randn(c["mask_shape"], device=device, generator=g).to(dt)
        mask = m.masked_fill(torch.rand(c["mask_shape"], device=device, generator=g) < 1 - keep, float("-inf"))
    return q, k, v, mask
