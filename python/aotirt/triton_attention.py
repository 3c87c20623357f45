"""attention_backend TRITON: scaled_dot_product_attention as a Triton flash-attention kernel compiled into the package.

Every platform can run it (ROCm, Windows, Linux CUDA): no shim, no vendor library. The kernel is registered as the
user-defined Triton op `aotirt::sdpa_triton` (torch.library.triton_op), and `replace_sdpa` rewrites each
aten.scaled_dot_product_attention node of an ExportedProgram into it before AOTInductor runs; Inductor traces through
the op, autotunes the kernel's configs at compile time and embeds the chosen cubin in the wrapper, like its own
kernels (ExecuTorch's CUDA backend replaces SDPA with its Triton kernel the same way).

Semantics are torch's SDPA for inference: q [B, H, Lq, D], k/v [B, Hkv, Lk, D/Dv]; is_causal is
torch's top-left causal mask (query i sees keys j <= i, also when Lq != Lk); attn_mask boolean (True = attend) or
additive, broadcastable to [B, H, Lq, Lk]; scale (default 1/sqrt(D)); GQA (enable_gqa, query head h uses key head
h // (H / Hkv)); an SDPA of another rank is left to MATH; float16, bfloat16, float32 (fp32 products in IEEE fp32 when float32_matmul_precision is 'highest',
TF32 otherwise). A query row that no key may attend gives 0, as torch's math SDPA (_safe_softmax) does.
dropout_p must be 0 (checked before Inductor by platforms.check_attention).

torch is imported by the caller (lowering); triton only when the op runs or is traced, so CPU-only machines can
still register the op and rewrite graphs.
"""
import functools
import math

OP_NAME = "aotirt::sdpa_triton"
SCHEMA = ("(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, bool is_causal=False, float? scale=None, "
          "bool enable_gqa=False) -> Tensor")
MAX_HEAD_DIM = 256
DTYPES = ("float16", "bfloat16", "float32")
# (BLOCK_M, BLOCK_N, num_warps, num_stages) candidates; config_candidates drops those that would spill the fp32
# accumulator or overflow shared memory for the head dims and dtype at hand.
CANDIDATE_CONFIGS = ((128, 128, 8, 2), (128, 64, 8, 3), (128, 32, 8, 2), (64, 64, 4, 3), (64, 32, 4, 2),
                     (32, 64, 4, 2), (32, 32, 4, 2), (16, 32, 4, 2))
SMEM_BUDGET_BYTES = 160 * 1024  # below the 227 KiB of sm_90 and the 160 KiB of sm_80 / MI300 per block
MASK_NONE, MASK_BOOL, MASK_ADD = 0, 1, 2


def _next_pow2(n: int) -> int:
    return 1 << max(4, (int(n) - 1).bit_length())  # tl.dot needs >= 16


def config_candidates(block_d: int, block_dv: int, elem_bytes: int) -> list:
    """The CANDIDATE_CONFIGS that fit: acc[BLOCK_M, BLOCK_DV] fp32 within 64 registers a thread, and the staged
    K/V tiles plus the Q tile within SMEM_BUDGET_BYTES. Never empty (the smallest tile always fits)."""
    kept = []
    for bm, bn, warps, stages in CANDIDATE_CONFIGS:
        if bm * block_dv > 64 * 32 * warps:
            continue
        if stages * bn * (block_d + block_dv) * elem_bytes + bm * block_d * elem_bytes > SMEM_BUDGET_BYTES:
            stages = 1
            if bn * (block_d + block_dv) * elem_bytes + bm * block_d * elem_bytes > SMEM_BUDGET_BYTES:
                continue
        kept.append((bm, bn, warps, stages))
    return kept or [(16, 32, 4, 1)]


@functools.lru_cache(maxsize=None)
def _kernels():
    """(triton, the jitted kernel): triton imported here, on first use (aotirt.triton_attention_kernels)."""
    import triton

    from aotirt import triton_attention_kernels
    return triton, triton_attention_kernels.sdpa_fwd


@functools.lru_cache(maxsize=None)
def _autotuned(block_d: int, block_dv: int, elem_bytes: int):
    """sdpa_fwd autotuned over the configs that fit these head dims and dtype (one kernel object per class)."""
    triton, jit = _kernels()
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
               for bm, bn, w, s in config_candidates(block_d, block_dv, elem_bytes)]
    return triton.autotune(configs=configs, key=["Lq", "Lk", "H", "G"])(jit)


def _shapes(query, key, value, enable_gqa: bool):
    """(B, H, Hkv, G, Lq, Lk, D, Dv) of 4-D q/k/v; a RuntimeError naming the problem otherwise."""
    if not (query.dim() == key.dim() == value.dim() == 4):
        raise RuntimeError(f"sdpa_triton takes 4-D query/key/value, got {query.dim()}/{key.dim()}/{value.dim()}-D")
    B, H, Lq, D = query.shape
    Bk, Hkv, Lk, Dk = key.shape
    Bv, Hv, Lv, Dv = value.shape
    if not (query.dtype == key.dtype == value.dtype) or str(query.dtype).replace("torch.", "") not in DTYPES:
        raise RuntimeError(f"sdpa_triton runs query/key/value of one dtype among {DTYPES}, got {query.dtype}, "
                           f"{key.dtype}, {value.dtype}")
    if Dk != D or Lv != Lk or Hv != Hkv or Bv != Bk or Bk not in (1, B):
        raise RuntimeError(f"sdpa_triton: incompatible shapes q {tuple(query.shape)}, k {tuple(key.shape)}, "
                           f"v {tuple(value.shape)}")
    if D > MAX_HEAD_DIM or Dv > MAX_HEAD_DIM:
        raise RuntimeError(f"sdpa_triton runs head dims up to {MAX_HEAD_DIM}, got {D}/{Dv}")
    if Hkv == H:
        G = 1
    elif Hkv == 1 or (enable_gqa and H % Hkv == 0):
        G = H // Hkv
    else:
        raise RuntimeError(f"sdpa_triton: {H} query heads and {Hkv} key/value heads need enable_gqa=True and "
                           f"{H} divisible by {Hkv}")
    return B, H, Hkv, G, Lq, Lk, D, Dv


def _launch(torch, query, key, value, attn_mask, is_causal, scale, enable_gqa, out, config=None):
    """Runs the kernel into `out` ([B, H, Lq, Dv]). config=(BLOCK_M, BLOCK_N, warps, stages) runs that config
    instead of the autotuned choice (tests run every candidate)."""
    from torch.library import wrap_triton

    B, H, Hkv, G, Lq, Lk, D, Dv = _shapes(query, key, value, enable_gqa)
    if key.shape[0] != B:
        key, value = key.expand(B, -1, -1, -1), value.expand(B, -1, -1, -1)
    if attn_mask is None:
        mask_kind, mask, mstrides = MASK_NONE, query, (0, 0, 0, 0)
    else:
        mask_kind = MASK_BOOL if attn_mask.dtype == torch.bool else MASK_ADD
        mask = attn_mask.expand(B, H, Lq, Lk)
        mstrides = tuple(mask.stride())
    if B * H == 0 or Lq == 0 or Dv == 0:
        return out
    scale = (1.0 / math.sqrt(D)) if scale is None else float(scale)
    elem = query.element_size()
    block_d, block_dv = _next_pow2(D), _next_pow2(Dv)
    ieee = query.dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest"
    triton, jit = _kernels()
    args = (query, key, value, out, mask, *query.stride(), *key.stride(), *value.stride(), *out.stride(), *mstrides)
    consts = dict(D=D, DV=Dv, BLOCK_D=block_d, BLOCK_DV=block_dv, MASK_KIND=mask_kind, CAUSAL=bool(is_causal),
                  IEEE=bool(ieee))
    if config is not None:
        bm, bn, warps, stages = config
        num_m = triton.cdiv(Lq, bm)
        wrap_triton(jit)[(B * H * num_m,)](*args, H, G, Lq, Lk, scale * 1.4426950408889634, **consts,
                                             BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)
        return out
    kernel = _autotuned(block_d, block_dv, elem)
    # the grid follows each config's BLOCK_M; the kernel splits its program id with the same cdiv(Lq, BLOCK_M)
    wrap_triton(kernel)[lambda meta: (B * H * triton.cdiv(Lq, meta["BLOCK_M"]),)](
        *args, H, G, Lq, Lk, scale * 1.4426950408889634, **consts)
    return out


def register(torch=None):
    """Registers aotirt::sdpa_triton once per process; returns its OpOverload."""
    return _register()


@functools.lru_cache(maxsize=None)
def _register():
    from typing import Optional

    import torch
    from torch.library import triton_op

    # annotations evaluated here (no `from __future__ import annotations` in this module): triton_op infers the
    # schema (SCHEMA) from them
    @triton_op(OP_NAME, mutates_args=())
    def sdpa_triton(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                    attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False,
                    scale: Optional[float] = None, enable_gqa: bool = False) -> torch.Tensor:
        B, H, _, _, Lq, _, _, Dv = _shapes(query, key, value, enable_gqa)
        out = torch.empty((B, H, Lq, Dv), dtype=query.dtype, device=query.device)
        return _launch(torch, query, key, value, attn_mask, is_causal, scale, enable_gqa, out)

    @sdpa_triton.register_fake
    def _(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        B, H, _, _, Lq, _, _, Dv = _shapes(query, key, value, enable_gqa)
        return query.new_empty((B, H, Lq, Dv))

    return torch.ops.aotirt.sdpa_triton.default


def run(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False, config=None):
    """The kernel eagerly (tests, benchmarks): the op, or one fixed config when config is given."""
    import torch

    if config is None:
        return register()(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    B, H, _, _, Lq, _, _, Dv = _shapes(query, key, value, enable_gqa)
    out = torch.empty((B, H, Lq, Dv), dtype=query.dtype, device=query.device)
    return _launch(torch, query, key, value, attn_mask, is_causal, scale, enable_gqa, out, config=config)


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")


def _bound(node) -> dict:
    """aten.scaled_dot_product_attention's arguments of `node` by name, with the schema's defaults."""
    got = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}
    got.update(zip(_SDPA_ARGS, node.args))
    got.update(node.kwargs)
    return got


def replace_sdpa(torch, ep, nodes=None) -> tuple:
    """Rewrites, in place, each aten.scaled_dot_product_attention node of `ep` whose q/k/v are 4-D with static
    dropout_p 0 into aotirt::sdpa_triton (same name, so the graph signature still holds; its output is contiguous
    [B, H, Lq, Dv]: run lowering.align_sdpa_layouts first, so users that relied on another recorded layout get it).
    `nodes`: only those SDPA nodes (None: all). Returns (replaced, left): SDPA calls left (other ranks) are lowered
    by the lowering's context then (MATH decomposes them)."""
    op = register(torch)
    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    only = None if nodes is None else set(nodes)
    replaced, left = 0, 0
    for node in list(ep.graph_module.graph.nodes):
        if node.op != "call_function" or (node not in only if only is not None else node.target != sdpa):
            continue  # nodes given: the caller chose them (ExecuTorch's edge programs hold edge SDPA ops)
        a = _bound(node)
        vals = [getattr(a[n], "meta", {}).get("val") for n in ("query", "key", "value")]
        if any(v is None or v.dim() != 4 for v in vals) or a["dropout_p"] != 0:
            left += 1
            continue
        node.target = op
        node.args = (a["query"], a["key"], a["value"], a["attn_mask"], bool(a["is_causal"]), a["scale"],
                     bool(a["enable_gqa"]))
        node.kwargs = {}
        q = vals[0]
        with q.fake_mode:
            B, H, Lq = q.shape[0], q.shape[1], q.shape[2]
            node.meta["val"] = q.new_empty((B, H, Lq, vals[2].shape[3]))
        replaced += 1
    if replaced:
        ep.graph_module.recompile()
    return replaced, left
