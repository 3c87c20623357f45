"""aoti_torch_cuda_convolution (cuDNN) on torch CUDA tensors vs torch.nn.functional's convolutions: >= 300 random
cases over 1-D/2-D/3-D, stride, padding, dilation, groups (depthwise too), transposed with output_padding, bias,
channels-last inputs and weights, float16/bfloat16/float32. The output's sizes and strides must equal torch's own
CUDA output's (Inductor bakes them into the code that reads it); values vs torch in float64 on the GPU. Called
through ctypes on the shim library named by $AOTIRT_SHIM_LIB.

First passed on the H200 at 995cda4 (attention) and 54a3493 (convolution): tests/gpu/LAST_RUN.md."""
import ctypes
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, requires_shim_lib, torch
from test_attention_shims import Shims

pytestmark = requires_shim_lib

CASES = int(os.environ.get("AOTIRT_CONV_CASES", "300"))
H, I64 = ctypes.c_void_p, ctypes.c_int64


class ConvShims(Shims):
    def __init__(self, path):
        super().__init__(path)
        I64P = ctypes.POINTER(I64)
        self.lib.aoti_torch_cuda_convolution.argtypes = [H, H, ctypes.POINTER(H), I64P, I64, I64P, I64, I64P, I64,
                                                         ctypes.c_int32, I64P, I64, I64, ctypes.POINTER(H)]

    def conv(self, x, w, b, stride, padding, dilation, transposed, outpad, groups):
        hx, hw = self.wrap(x), self.wrap(w)
        hb = self.wrap(b) if b is not None else H()
        arr = lambda v: (I64 * len(v))(*v)
        out = H()
        try:
            rc = self.lib.aoti_torch_cuda_convolution(
                hx, hw, ctypes.byref(hb), arr(stride), len(stride), arr(padding), len(padding), arr(dilation),
                len(dilation), int(transposed), arr(outpad), len(outpad), groups, ctypes.byref(out))
            if rc != 0:
                return None, self.error()
            got = self.take(out, x.dtype)
            self.lib.aoti_torch_delete_tensor_object(out)
            return got, ""
        finally:
            for h in (hx, hw) + ((hb,) if b is not None else ()):
                self.lib.aoti_torch_delete_tensor_object(h)


@pytest.fixture(scope="module")
def shims():
    return ConvShims(LIB_PATH)


def random_case(rng):
    n = rng.choice([1, 2, 2, 2, 3])
    transposed = rng.random() < 0.25
    groups = rng.choice([1, 1, 1, 2, 4])
    cin = groups * rng.randint(1, 8)
    if not transposed and rng.random() < 0.15:
        groups = cin  # depthwise
    cout = groups * rng.randint(1, 8)
    ks = [rng.choice([1, 3, 3, 5]) for _ in range(n)]
    stride = [rng.choice([1, 1, 2]) for _ in range(n)]
    dilation = [rng.choice([1, 1, 2]) for _ in range(n)]
    padding = [rng.randint(0, 2) for _ in range(n)]
    outpad = [rng.randint(0, max(s, d) - 1) for s, d in zip(stride, dilation)] if transposed else [0] * n
    spatial = [rng.randint(d * (k - 1) + 1, {1: 64, 2: 24, 3: 10}[n]) for k, d in zip(ks, dilation)]
    dtype = rng.choice([torch.float16, torch.bfloat16, torch.float32])
    x = torch.randn(rng.randint(1, 4), cin, *spatial, device="cuda", dtype=dtype)
    w = torch.randn(*([cin, cout // groups] if transposed else [cout, cin // groups]), *ks, device="cuda",
                    dtype=dtype) / (cin * max(ks)) ** 0.5
    cl = {2: torch.channels_last, 3: torch.channels_last_3d}.get(n)
    if cl is not None and rng.random() < 0.4:
        x = x.contiguous(memory_format=cl)
    if cl is not None and rng.random() < 0.3:
        w = w.contiguous(memory_format=cl)
    b = torch.randn(cout, device="cuda", dtype=dtype) if rng.random() < 0.6 else None
    return dict(x=x, w=w, b=b, stride=stride, padding=padding, dilation=dilation, transposed=transposed,
                outpad=outpad, groups=groups)


def test_random_cases_match_torch(shims):
    rng = random.Random(20261203)
    failures = []
    ran = 0
    for i in range(CASES):
        c = random_case(rng)
        args = (c["stride"], c["padding"], c["dilation"], c["transposed"], c["outpad"], c["groups"])
        try:
            want = torch.ops.aten.convolution(c["x"], c["w"], c["b"], *args)
        except RuntimeError:
            continue  # torch refuses it (output too small): not a case
        ran += 1
        desc = (f"case {i}: x{list(c['x'].shape)}/{list(c['x'].stride())} w{list(c['w'].shape)}/"
                f"{list(c['w'].stride())} bias={c['b'] is not None} {c['x'].dtype} stride={c['stride']} "
                f"pad={c['padding']} dil={c['dilation']} transposed={c['transposed']} outpad={c['outpad']} "
                f"groups={c['groups']}")
        got, err = shims.conv(c["x"], c["w"], c["b"], *args)
        if got is None:
            failures.append(f"{desc}: refused: {err}")
            continue
        out, layout = got
        if [list(v) for v in layout] != [list(want.shape), list(want.stride())]:
            failures.append(f"{desc}: layout {layout}, torch's {list(want.shape)}/{list(want.stride())}")
        ref = torch.ops.aten.convolution(c["x"].double(), c["w"].double(),
                                         None if c["b"] is None else c["b"].double(), *args)
        tol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}[c["x"].dtype]
        if not torch.allclose(out.double(), ref, atol=tol, rtol=tol):
            failures.append(f"{desc}: max |diff| {(out.double() - ref).abs().max().item():.4g}")
    assert ran >= CASES * 0.9, f"only {ran} of {CASES} random cases were valid convolutions"
    assert not failures, f"{len(failures)} of {ran} cases failed:\n" + "\n".join(failures[:40])
