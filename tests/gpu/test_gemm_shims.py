"""GEMM shims on torch CUDA tensors vs torch: >= 500 random cases per op (mm, addmm, bmm, baddbmm, _int_mm) over
transposes, slices, size-1 dims with odd strides, zero batch strides, storage offsets, non-contiguous out, every
addmm self shape, beta/alpha, dtypes. The shims are called through ctypes on the shim library named by
$AOTIRT_SHIM_LIB (libaoti_cuda_shims.so); needs only torch."""
import ctypes
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, requires_shim_lib, torch

pytestmark = requires_shim_lib

CASES_PER_OP = int(os.environ.get("AOTIRT_GEMM_CASES", "500"))
SENTINEL = 768.0


class Shims:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        H, P, I64P = ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
        L = self.lib
        L.aoti_torch_create_tensor_from_blob.argtypes = [P, ctypes.c_int64, I64P, I64P, ctypes.c_int64,
                                                         ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                                         ctypes.POINTER(H)]
        L.aoti_torch_delete_tensor_object.argtypes = [H]
        L.aotirt_last_error.restype = ctypes.c_char_p
        for name in ("aoti_torch_cuda_mm_out", "aoti_torch_cuda_bmm_out", "aoti_torch_cuda__int_mm_out"):
            getattr(L, name).argtypes = [H, H, H]
        for name in ("aoti_torch_cuda_addmm_out", "aoti_torch_cuda_baddbmm_out"):
            getattr(L, name).argtypes = [H, H, H, H, ctypes.c_double, ctypes.c_double]
        L.aoti_torch_create_cuda_stream_guard.argtypes = [P, ctypes.c_int32, ctypes.POINTER(H)]
        L.aoti_torch_delete_cuda_stream_guard.argtypes = [H]

    CODES = None

    def wrap(self, t):
        codes = {torch.float32: 6, torch.float16: 5, torch.bfloat16: 15, torch.int8: 1, torch.int32: 3,
                 torch.float64: 7}
        n = t.dim()
        sizes = (ctypes.c_int64 * max(n, 1))(*t.shape)
        strides = (ctypes.c_int64 * max(n, 1))(*t.stride())
        h = ctypes.c_void_p()
        rc = self.lib.aoti_torch_create_tensor_from_blob(t.data_ptr(), n, sizes, strides, 0, codes[t.dtype],
                                                         1 if t.is_cuda else 0, t.device.index or 0,
                                                         ctypes.byref(h))
        assert rc == 0, self.error()
        return h

    def error(self):
        return self.lib.aotirt_last_error().decode()

    def call(self, op, out, self_t, a, b, beta=1.0, alpha=1.0):
        hs = [self.wrap(t) for t in (out, a, b)] + ([self.wrap(self_t)] if self_t is not None else [])
        try:
            L = self.lib
            if op == "mm":
                rc = L.aoti_torch_cuda_mm_out(hs[0], hs[1], hs[2])
            elif op == "bmm":
                rc = L.aoti_torch_cuda_bmm_out(hs[0], hs[1], hs[2])
            elif op == "_int_mm":
                rc = L.aoti_torch_cuda__int_mm_out(hs[0], hs[1], hs[2])
            elif op == "addmm":
                rc = L.aoti_torch_cuda_addmm_out(hs[0], hs[3], hs[1], hs[2], beta, alpha)
            else:
                rc = L.aoti_torch_cuda_baddbmm_out(hs[0], hs[3], hs[1], hs[2], beta, alpha)
            return rc, (self.error() if rc else "")
        finally:
            for h in hs:
                self.lib.aoti_torch_delete_tensor_object(h)


@pytest.fixture(scope="module")
def shims():
    return Shims(LIB_PATH)


def strided(rng, sizes, dtype, is_out=False):
    nd = len(sizes)
    order = list(range(nd))
    kind = rng.choice(["contig", "transposed", "permuted", "inner2", "padded", "zero_batch", "contig"])
    if kind == "transposed" and nd >= 2:
        order[-1], order[-2] = order[-2], order[-1]
    if kind == "permuted":
        rng.shuffle(order)
    strides, stride = [0] * nd, (2 if kind == "inner2" else 1)
    for d in reversed(order):
        strides[d] = stride
        stride *= max(1, sizes[d]) + (rng.randint(0, 4) if kind == "padded" else 0)
    for d in range(nd):
        if sizes[d] == 1 and rng.random() < 0.5:
            strides[d] = rng.randint(0, 8)
    if kind == "zero_batch" and nd == 3 and not is_out:
        strides[0] = 0
    offset = rng.randint(0, 3)
    extent = 0 if 0 in sizes else sum((s - 1) * t for s, t in zip(sizes, strides)) + 1
    n = max(offset + extent, 1)
    if is_out:
        base = torch.full((n,), SENTINEL, dtype=dtype, device="cuda")
    elif dtype == torch.int8:
        base = torch.randint(-127, 128, (n,), dtype=torch.int8, device="cuda")
    else:
        base = (torch.randint(-16, 17, (n,), device="cuda").double() / 8).to(dtype)
    return base, base.as_strided(sizes, strides, offset)


def random_case(rng, op, dtype, max_dim=48):
    batched = op in ("bmm", "baddbmm")
    dim = lambda: rng.choice([1, 0] if rng.random() < 0.15 else [rng.randint(1, max_dim)])
    B = rng.randint(0, 4) if batched and rng.random() < 0.1 else (rng.randint(1, 5) if batched else 1)
    M, N, K = dim(), dim(), dim()
    ab, cd = dtype, dtype
    if op == "_int_mm":
        ab, cd = torch.int8, torch.int32
        M, N, K = rng.randint(17, 96), 8 * rng.randint(1, 12), 8 * rng.randint(1, 12)
    shp = (lambda r, c: [B, r, c]) if batched else (lambda r, c: [r, c])
    case = dict(op=op, a=strided(rng, shp(M, K), ab), b=strided(rng, shp(K, N), ab),
                out=strided(rng, shp(M, N), cd, is_out=True), self=None, beta=1.0, alpha=1.0)
    if op in ("addmm", "baddbmm"):
        case["beta"] = rng.choice([0.0, 1.0, 1.0, 1.0, 0.5, -2.0])
        case["alpha"] = rng.choice([1.0, 1.0, 0.5, -1.5, 2.0])
        kind = rng.choice(["scalar", "row", "row", "row2d", "row_expanded", "column", "one", "row_strided", "full"])
        sizes = {"scalar": [], "row": [N], "row2d": [1, N], "row_expanded": [M, N], "column": [M, 1], "one": [1, 1],
                 "row_strided": [N], "full": [M, N]}[kind]
        if kind in ("row_expanded", "row_strided"):
            base = (torch.randint(-16, 17, (max(2 * N, 1),), device="cuda").double() / 8).to(dtype)
            off = rng.randint(0, 1)  # also a misaligned bias (PyTorch issue #194497)
            s = base.as_strided([M, N], [0, 1], off) if kind == "row_expanded" else base.as_strided([N], [2], 0)
            case["self"] = (base, s)
        else:
            if batched and rng.random() < 0.5:
                sizes = [rng.choice([1, B])] + [1] * (2 - len(sizes)) + sizes
            case["self"] = strided(rng, sizes, dtype)
        if case["beta"] == 0.0:
            case["self"][0].fill_(float("nan"))
    return case


def reference(case):
    op, a, b = case["op"], case["a"][1], case["b"][1]
    if op == "_int_mm":
        return (a.double() @ b.double())
    A, Bm = a.double(), b.double()
    if op == "mm":
        return A @ Bm
    if op == "bmm":
        return torch.bmm(A, Bm)
    S = case["self"][1].double()
    fn = torch.addmm if op == "addmm" else torch.baddbmm
    return fn(S, A, Bm, beta=case["beta"], alpha=case["alpha"])


TOL = {torch.float32: (1e-5, 1e-4), torch.float16: (2e-3, 2e-2), torch.bfloat16: (1.6e-2, 5e-2),
       torch.int32: (0, 0)}


def run_case(shims, case):
    out_base, out = case["out"]
    s = case["self"][1] if case["self"] is not None else None
    rc, err = shims.call(case["op"], out, s, case["a"][1], case["b"][1], case["beta"], case["alpha"])
    assert rc == 0, err
    torch.cuda.synchronize()
    want = reference(case)
    rtol, atol = TOL[out.dtype]
    torch.testing.assert_close(out.double(), want, rtol=rtol, atol=atol)
    mask = torch.zeros(out_base.numel(), dtype=torch.bool, device="cuda")
    if out.numel():
        mask.as_strided(out.shape, out.stride(), out.storage_offset()).fill_(True)
    assert bool((out_base.double()[~mask] == SENTINEL).all()), "storage outside out was written"


@pytest.mark.parametrize("op", ["mm", "addmm", "bmm", "baddbmm", "_int_mm"])
def test_random_cases_match_torch(shims, op):
    rng = random.Random(1000 + ["mm", "addmm", "bmm", "baddbmm", "_int_mm"].index(op))
    dtypes = [torch.int8] if op == "_int_mm" else [torch.float32, torch.float16, torch.bfloat16]
    for i in range(CASES_PER_OP):
        case = random_case(rng, op, dtypes[i % len(dtypes)])
        try:
            run_case(shims, case)
        except AssertionError as e:
            desc = {k: (tuple(v[1].shape), v[1].stride(), v[1].storage_offset(), v[1].dtype)
                    for k, v in case.items() if isinstance(v, tuple)}
            raise AssertionError(f"case {i}: {op} beta={case['beta']} alpha={case['alpha']} {desc}: {e}") from None


def test_errors_are_reported_not_raised(shims):
    a = torch.zeros(4, 3, device="cuda", dtype=torch.float64)
    b = torch.zeros(3, 5, device="cuda", dtype=torch.float64)
    o = torch.zeros(4, 5, device="cuda", dtype=torch.float64)
    rc, err = shims.call("mm", o, None, a, b)
    assert rc == 1 and err.startswith("aoti_torch_cuda_mm_out: ") and "float64" in err
    rc, err = shims.call("mm", o.float(), None, a.float().cpu(), b.float())
    assert rc == 1 and "self is on cpu" in err and "cuda:0" in err
