"""Attention shims (cuDNN SDPA: aoti_torch_cuda__scaled_dot_product_{flash,efficient,cudnn}_attention) on torch CUDA
tensors vs torch.nn.functional.scaled_dot_product_attention in float32: >= 300 random cases over batch, query and
key/value heads (GQA), query and key lengths from 1 to 8192, head dims 64/80/96/128/256, causal, custom scale,
additive masks broadcast over batch/heads, and the layouts Inductor passes (contiguous, [B, T, H, D] transposed,
slices of a fused qkv projection). Every output's sizes and strides equal torch's meta function's (Inductor bakes
them into the code that reads the outputs); logsumexp is checked against torch's. Called through ctypes on the shim
library named by $AOTIRT_SHIM_LIB; needs only torch.

First passed on the H200 at 995cda4 (attention) and 54a3493 (convolution): tests/gpu/LAST_RUN.md."""
import ctypes
import math
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, requires_shim_lib, torch

pytestmark = requires_shim_lib

CASES = int(os.environ.get("AOTIRT_ATTENTION_CASES", "300"))
H, I64 = ctypes.c_void_p, ctypes.c_int64
CODES = {5: "float16", 15: "bfloat16", 6: "float32", 4: "int64"}


class Shims:
    def __init__(self, path):
        L = self.lib = ctypes.CDLL(path)
        I64P = ctypes.POINTER(I64)
        L.aoti_torch_create_tensor_from_blob.argtypes = [H, I64, I64P, I64P, I64, ctypes.c_int32, ctypes.c_int32,
                                                         ctypes.c_int32, ctypes.POINTER(H)]
        L.aoti_torch_delete_tensor_object.argtypes = [H]
        L.aotirt_last_error.restype = ctypes.c_char_p
        for name in ("aoti_torch_get_sizes", "aoti_torch_get_strides"):
            getattr(L, name).argtypes = [H, ctypes.POINTER(I64P)]
        L.aoti_torch_get_dim.argtypes = [H, I64P]
        L.aoti_torch_get_dtype.argtypes = [H, ctypes.POINTER(ctypes.c_int32)]
        L.aoti_torch_copy_.argtypes = [H, H, ctypes.c_int32]
        HP, D, DP, I32 = ctypes.POINTER(H), ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.c_int32
        L.aoti_torch_cuda__scaled_dot_product_flash_attention.argtypes = [H, H, H, D, I32, I32, DP] + [HP] * 4 + \
            [I64P, I64P] + [HP] * 3
        L.aoti_torch_cuda__scaled_dot_product_efficient_attention.argtypes = [H, H, H, HP, I32, D, I32, DP] + [HP] * 4
        L.aoti_torch_cuda__scaled_dot_product_cudnn_attention.argtypes = [H, H, H, HP, I32, D, I32, I32, DP] + \
            [HP] * 4 + [I64P, I64P] + [HP] * 3

    def wrap(self, t):
        codes = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4, torch.float16: 5,
                 torch.float32: 6, torch.float64: 7, torch.complex64: 9, torch.complex128: 10, torch.bool: 11,
                 torch.bfloat16: 15}
        n = t.dim()
        sizes, strides = (I64 * max(n, 1))(*t.shape), (I64 * max(n, 1))(*t.stride())
        h = H()
        device_type = 1 if t.is_cuda else 0  # a CPU tensor stays one: the shims must see it and refuse it
        rc = self.lib.aoti_torch_create_tensor_from_blob(t.data_ptr(), n, sizes, strides, 0, codes[t.dtype],
                                                         device_type, t.device.index or 0, ctypes.byref(h))
        assert rc == 0, self.error()
        return h

    def error(self):
        return self.lib.aotirt_last_error().decode()

    def layout(self, h):
        n = I64()
        self.lib.aoti_torch_get_dim(h, ctypes.byref(n))
        sp, tp = ctypes.POINTER(I64)(), ctypes.POINTER(I64)()
        self.lib.aoti_torch_get_sizes(h, ctypes.byref(sp))
        self.lib.aoti_torch_get_strides(h, ctypes.byref(tp))
        return [sp[i] for i in range(n.value)], [tp[i] for i in range(n.value)]

    def take(self, h, dtype):
        """A torch copy of one of our output tensors (same sizes, strides), and its (sizes, strides)."""
        sizes, strides = self.layout(h)
        extent = 0 if 0 in sizes else sum((s - 1) * t for s, t in zip(sizes, strides)) + 1
        dst = torch.empty(max(extent, 1), dtype=dtype, device="cuda").as_strided(sizes, strides)
        dh = self.wrap(dst)
        try:
            assert self.lib.aoti_torch_copy_(dh, h, 0) == 0, self.error()
        finally:
            self.lib.aoti_torch_delete_tensor_object(dh)
        return dst, (sizes, strides)

    def run(self, op, q, k, v, bias, causal, scale, lse, take_all=True):
        """take_all=False passes nullptr for every output but the attention output and logsumexp, as Inductor's
        wrapper does for the outputs a model does not use (the philox seed/offset, cum_seq, max_q/max_k, debug)."""
        hs = [self.wrap(t) for t in (q, k, v)]
        bh = self.wrap(bias) if bias is not None else H()
        rets = [H() for _ in range(9)]
        ints = [I64(), I64()]
        sc = ctypes.c_double(scale) if scale is not None else None
        scp = ctypes.byref(sc) if sc is not None else None
        L = self.lib

        def r(i):
            return ctypes.byref(rets[i]) if take_all or i < 2 else None

        def n(i):
            return ctypes.byref(ints[i]) if take_all else None
        try:
            if op == "flash":
                rc = L.aoti_torch_cuda__scaled_dot_product_flash_attention(
                    *hs, 0.0, int(causal), 0, scp, *[r(i) for i in range(4)], n(0), n(1), *[r(i) for i in (6, 7, 8)])
            elif op == "efficient":
                rc = L.aoti_torch_cuda__scaled_dot_product_efficient_attention(
                    *hs, ctypes.byref(bh), int(lse), 0.0, int(causal), scp, *[r(i) for i in range(4)])
            else:
                rc = L.aoti_torch_cuda__scaled_dot_product_cudnn_attention(
                    *hs, ctypes.byref(bh), int(lse), 0.0, int(causal), 0, scp, *[r(i) for i in range(4)],
                    n(0), n(1), *[r(i) for i in (6, 7, 8)])
            if rc != 0:
                return None, self.error()
            out = self.take(rets[0], q.dtype)
            lse_t = self.take(rets[1], torch.float32)
            return (out, lse_t, [i.value for i in ints], rets), ""
        finally:
            for h in hs + ([bh] if bias is not None else []):
                L.aoti_torch_delete_tensor_object(h)

    def free(self, rets):
        for r in rets:
            if r.value:
                self.lib.aoti_torch_delete_tensor_object(r)


@pytest.fixture(scope="module")
def shims():
    return Shims(LIB_PATH)


def layout(rng, b, h, t, d, dtype):
    kind = rng.choice(["contiguous", "bthd", "fused_qkv", "contiguous"])
    if kind == "contiguous":
        x = torch.randn(b, h, t, d, dtype=dtype, device="cuda")
    elif kind == "bthd":
        x = torch.randn(b, t, h, d, dtype=dtype, device="cuda").transpose(1, 2)
    else:
        x = torch.randn(b, t, 3, h, d, dtype=dtype, device="cuda").permute(2, 0, 3, 1, 4)[rng.randint(0, 2)]
    return x


def random_case(rng, i):
    op = ["flash", "efficient", "cudnn"][i % 3]
    long = i % 25 == 0  # a few long sequences (up to 8192), the rest short enough to check in float32
    b = rng.randint(1, 2) if long else rng.randint(1, 4)
    hkv = rng.randint(1, 4)
    hq = hkv * (rng.choice([1, 2, 4]) if op != "efficient" else 1)
    tq = rng.choice([1, 2048, 8192]) if long else rng.randint(1, 300)
    tkv = rng.choice([1, 4096, 8192]) if long else rng.randint(1, 300)
    d = rng.choice([64, 80, 96, 128, 256])
    dv = d if op == "flash" or rng.random() < 0.7 else rng.choice([64, 128])
    dtype = rng.choice([torch.float16, torch.bfloat16])
    q, k, v = layout(rng, b, hq, tq, d, dtype), layout(rng, b, hkv, tkv, d, dtype), layout(rng, b, hkv, tkv, dv, dtype)
    causal = rng.random() < 0.4
    scale = rng.choice([None, None, 0.05, 1.0 / math.sqrt(d) * 0.5])
    bias = None
    if op != "flash" and rng.random() < 0.5:
        bb, bh = rng.choice([1, b]), rng.choice([1, hq])
        pad = (tkv + 15) // 16 * 16
        bias = (torch.randn(bb, bh, tq, pad, device="cuda") * 2).to(dtype)[..., :tkv].expand(b, hq, tq, tkv)
        if rng.random() < 0.3:  # a key padding mask as the additive bias SDPA makes of a boolean one
            keep = torch.rand(bb, 1, 1, tkv, device="cuda") < 0.8
            keep[..., 0] = True
            bias = torch.zeros(bb, 1, 1, pad, device="cuda", dtype=dtype)[..., :tkv].masked_fill(~keep, float("-inf"))
            bias = bias.expand(b, hq, tq, tkv)
    lse = op == "flash" or rng.random() < 0.7
    return dict(op=op, q=q, k=k, v=v, bias=bias, causal=causal, scale=scale, lse=lse)


def reference(c):
    """float32 SDPA with torch's semantics (top-left causal, GQA by repeating key/value heads), and logsumexp."""
    q, k, v = (c[n].float() for n in ("q", "k", "v"))
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    scale = c["scale"] if c["scale"] is not None else 1 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(-1, -2)) * scale
    if c["bias"] is not None:
        s = s + c["bias"].float()
    if c["causal"]:
        tq, tkv = s.shape[-2:]
        s = s.masked_fill(torch.ones(tq, tkv, dtype=torch.bool, device="cuda").tril().logical_not(), float("-inf"))
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


def meta_layouts(c):
    m = lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    q, k, v = m(c["q"]), m(c["k"]), m(c["v"])
    bias = m(c["bias"]) if c["bias"] is not None else None
    A = torch.ops.aten
    if c["op"] == "flash":
        r = A._scaled_dot_product_flash_attention(q, k, v, 0.0, c["causal"], False, scale=c["scale"])
    elif c["op"] == "efficient":
        r = A._scaled_dot_product_efficient_attention(q, k, v, bias, c["lse"], 0.0, c["causal"], scale=c["scale"])
    else:
        r = A._scaled_dot_product_cudnn_attention(q, k, v, bias, c["lse"], 0.0, c["causal"], False, scale=c["scale"])
    return (list(r[0].shape), list(r[0].stride())), (list(r[1].shape), list(r[1].stride()))


def test_random_cases_match_torch(shims):
    rng = random.Random(20261203)
    failures = []
    for i in range(CASES):
        c = random_case(rng, i)
        take_all = i % 2 == 0  # odd cases: nullptr for the outputs an inference wrapper does not take
        got, err = shims.run(c["op"], c["q"], c["k"], c["v"], c["bias"], c["causal"], c["scale"], c["lse"],
                             take_all=take_all)
        desc = (f"case {i}: {c['op']} q{list(c['q'].shape)}/{list(c['q'].stride())} k{list(c['k'].shape)} "
                f"v{list(c['v'].shape)} {c['q'].dtype} causal={c['causal']} scale={c['scale']} take_all={take_all} "
                f"bias={None if c['bias'] is None else (list(c['bias'].shape), list(c['bias'].stride()))}")
        if got is None:
            failures.append(f"{desc}: refused: {err}")
            continue
        (out, out_layout), (lse, lse_layout), ints, rets = got
        try:
            want_out_layout, want_lse_layout = meta_layouts(c)
            if [list(x) for x in out_layout] != list(want_out_layout):
                failures.append(f"{desc}: out layout {out_layout}, torch's meta {want_out_layout}")
            if [list(x) for x in lse_layout] != list(want_lse_layout):
                failures.append(f"{desc}: logsumexp layout {lse_layout}, torch's meta {want_lse_layout}")
            if c["q"].shape[2] * c["k"].shape[2] > 2048 * 8192:
                continue  # the float32 reference of the longest cases does not fit: layouts only, and finiteness
            want, want_lse = reference(c)
            tol = dict(atol=2e-2, rtol=2e-2) if c["q"].dtype == torch.float16 else dict(atol=4e-2, rtol=4e-2)
            if not torch.allclose(out.float(), want, **tol):
                failures.append(f"{desc}: max |diff| {(out.float() - want).abs().max().item():.4g}")
            if c["lse"]:
                tq = c["q"].shape[2]
                if not torch.allclose(lse[:, :, :tq].reshape(want_lse.shape), want_lse, atol=2e-2, rtol=1e-3):
                    failures.append(f"{desc}: logsumexp differs")
            if take_all and c["op"] != "efficient" and ints != [c["q"].shape[2], c["k"].shape[2]]:
                failures.append(f"{desc}: max_q/max_k {ints}")
            seeds = [rets[j] for j in ((2, 3) if c["op"] == "efficient" else (6, 7))]
            if take_all:  # the philox seed and offset: int64 on query's GPU, values unspecified as ATen's at dropout 0
                for h in seeds:
                    if not h.value:
                        failures.append(f"{desc}: no philox seed/offset tensor")
                        continue
                    code = ctypes.c_int32(-1)
                    shims.lib.aoti_torch_get_dtype(h, ctypes.byref(code))
                    sizes, _ = shims.layout(h)
                    if code.value != 4 or math.prod(sizes) > 2:
                        failures.append(f"{desc}: philox seed/offset of dtype code {code.value}, sizes {sizes}")
                    shims.take(h, torch.int64)  # readable as a CUDA tensor of query's GPU (the copy would fault)
            elif any(h.value for h in seeds):
                failures.append(f"{desc}: made a philox seed/offset nobody takes")
        finally:
            shims.free(rets)
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:40])


def test_dropout_and_fp32_are_clear_errors(shims):
    q = torch.randn(1, 2, 8, 64, device="cuda", dtype=torch.float16)
    got, err = shims.run("cudnn", q, q, q, None, False, None, True)
    assert got is not None, err
    shims.free(got[3])
    q32 = q.float()
    got, err = shims.run("cudnn", q32, q32, q32, None, False, None, True)
    assert got is None and "cuDNN attention runs float16 and bfloat16; got float32" in err


_NO_CUDNN_SCRIPT = r"""
import ctypes, sys, torch
sys.path.insert(0, sys.argv[2])
from test_attention_shims import Shims
s = Shims(sys.argv[1])
q = torch.randn(1, 2, 8, 64, device="cuda", dtype=torch.float16)
got, err = s.run("cudnn", q, q, q, None, False, None, True)
print("ATTENTION", "RAN" if got is not None else "ERROR: " + err)
# A shim that needs no cuDNN still works in the same process.
a = torch.randn(4, 4, device="cuda")
out = torch.empty(4, 4, device="cuda")
s.lib.aoti_torch_cuda_mm_out.argtypes = [ctypes.c_void_p] * 3
hs = [s.wrap(t) for t in (out, a, a)]
rc = s.lib.aoti_torch_cuda_mm_out(*hs)
torch.cuda.synchronize()
print("MM", rc, bool(torch.allclose(out, a @ a, atol=1e-4)))
"""


def test_without_cudnn_attention_names_the_library_and_the_rest_runs(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "no_cudnn.py"
    script.write_text(_NO_CUDNN_SCRIPT)
    env = dict(os.environ, AOTIRT_CUDNN="/nonexistent/libcudnn.so.9", AOTIRT_CUDNN_NO_DEFAULT_SEARCH="1")
    r = subprocess.run([sys.executable, str(script), LIB_PATH, os.path.dirname(os.path.abspath(__file__))],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ATTENTION ERROR: aoti_torch_cuda__scaled_dot_product_cudnn_attention: cuDNN (libcudnn.so.9) could not be " \
           "loaded; tried:\n  /nonexistent/libcudnn.so.9" in r.stdout, r.stdout
    assert "MM 0 True" in r.stdout, r.stdout
