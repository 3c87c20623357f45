"""aoti_torch_cuda__weight_int4pack_mm (shims/int4) on torch CUDA tensors, against torch's own
torch._weight_int4pack_mm on weights packed by torch._convert_weight_to_int4pack: every inner_k_tiles (2, 4, 8) and
group size (32..256), m from 1 to 64, random weights, scales and zeros. Exactly: an identity input returns the
dequantized weights themselves (bf16((q - 8) * scale + zero), torch's dequantization), which pins the packed layout
element by element, through both paths (the int4 kernel below 8 rows, dequantize + cuBLASLt from 8 on; 4-row
calls stay on the kernel for any threshold above 4; AOTIRT_INT4_MMA=0), and through the tensor-core kernel (the
default, up to 16 rows: bit for bit torch's kernel); otherwise within bf16 rounding of a float32 reference on the same
dequantized weights and of torch's kernel (given an aligned copy: it faults on odd-offset views). Called through ctypes on the shim library named by $AOTIRT_SHIM_LIB. First passed on the H200 at
ff2943f (tests/gpu/LAST_RUN.md); the manifest kept the shim out of lowering until then (note "unverified")."""
import ctypes
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, requires_shim_lib, torch
from test_attention_shims import Shims

pytestmark = requires_shim_lib

CASES = int(os.environ.get("AOTIRT_INT4_CASES", "120"))
H, I64 = ctypes.c_void_p, ctypes.c_int64


class Int4Shims(Shims):
    def __init__(self, path):
        super().__init__(path)
        self.lib.aoti_torch_cuda__weight_int4pack_mm.argtypes = [H, H, I64, H, ctypes.POINTER(H)]

    def mm(self, x, packed, group, sz):
        hs = [self.wrap(t) for t in (x, packed, sz)]
        out = H()
        try:
            rc = self.lib.aoti_torch_cuda__weight_int4pack_mm(hs[0], hs[1], group, hs[2], ctypes.byref(out))
            if rc != 0:
                return None, self.error()
            y, layout = self.take(out, torch.bfloat16)
            self.lib.aoti_torch_delete_tensor_object(out)
            return (y, layout), ""
        finally:
            for h in hs:
                self.lib.aoti_torch_delete_tensor_object(h)


@pytest.fixture(scope="module")
def shims():
    return Int4Shims(LIB_PATH)


def quantized(n, k, group, inner_k_tiles, seed):
    """(q int32 [n, k] in 0..15, torch's packed weights, scales_and_zeros [k/group, n, 2] bf16, dequantized W bf16)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    w_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
    packed = torch._convert_weight_to_int4pack(w_uint8.cuda(), inner_k_tiles)
    scales = (torch.rand(k // group, n, generator=g) * 0.02 + 0.005).to(torch.bfloat16)
    zeros = (torch.randn(k // group, n, generator=g) * 0.05).to(torch.bfloat16)
    sz = torch.stack([scales, zeros], dim=-1).contiguous().cuda()
    groups = torch.arange(k) // group
    w = ((q - 8).float() * scales.float()[groups].T + zeros.float()[groups].T).to(torch.bfloat16)
    return q, packed, sz, w.cuda()


def _k(rng, inner_k_tiles, group):
    step = max(inner_k_tiles * 16, group)
    return step * rng.choice([1, 1, 2, 3, 4, 8])


# AOTIRT_INT4_MMA (int4_kernel.h; read on every call) set either way: "1" the tensor-core kernel (the default), which
# dequantizes as torch's kernel does (one bfloat16 fma) and runs m up to 32 (shim_int4.cc's kMmaDequantizeMinRows);
# "0" the CUDA-core kernel below 8 rows, dequantize + cuBLASLt from 8 on.
MMA = pytest.mark.parametrize("mma", [False, True], ids=["cuda_cores", "mma"])


@MMA
@pytest.mark.parametrize("inner_k_tiles", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_identity_input_returns_the_dequantized_weights_exactly(shims, inner_k_tiles, group, mma, monkeypatch):
    monkeypatch.setenv("AOTIRT_INT4_MMA", "1" if mma else "0")
    k = max(inner_k_tiles * 16, group)
    n = 24
    _, packed, sz, w = quantized(n, k, group, inner_k_tiles, seed=inner_k_tiles * 1000 + group)
    eye = torch.eye(k, dtype=torch.bfloat16, device="cuda")
    # all k rows at once (k >= 33 rows: the dequantize + cuBLASLt path; k = 32: the tensor-core kernel's), and 4 rows
    # per call (the int4 kernel); the tensor-core kernel also 16 and 32 rows per call (rows 8..15, two row blocks)
    got, err = shims.mm(eye, packed, group, sz)
    assert got is not None, err
    y, (sizes, strides) = got
    assert sizes == [k, n] and strides == [n, 1]
    chunks = {}
    for rows in ((4, 16, 32) if mma else (4,)):
        parts = []
        for r in range(0, k, rows):
            part, err = shims.mm(eye[r:r + rows].contiguous(), packed, group, sz)
            assert part is not None, err
            parts.append(part[0])
        chunks[rows] = torch.cat(parts)
    torch.cuda.synchronize()
    # torch's kernel on the same input: its dequantization, up to one bf16 rounding step (its fma is a bf16 one)
    ref = torch._weight_int4pack_mm(eye, packed, group, sz)
    torch.testing.assert_close(ref, w.T.contiguous(), rtol=8e-3, atol=1e-4)
    if mma and k <= 32:  # k rows at once are the tensor-core kernel's too: torch's dequantization
        assert torch.equal(y, ref), "the tensor-core kernel (all rows at once) differs from torch's"
    else:
        assert torch.equal(y, w.T.contiguous()), "the dequantize + GEMM path reads the packed layout wrong"
    for rows, got_rows in chunks.items():
        if mma:  # the same bfloat16 fma as torch's kernel, on the same values: its dequantized weights bit for bit
            assert torch.equal(got_rows, ref), f"the tensor-core kernel ({rows} rows a call) differs from torch's"
        else:
            assert torch.equal(got_rows, w.T.contiguous()), "the int4 kernel reads the packed layout wrong"


# The tensor-core kernel's 16-warp blocks (int4_kernel.cu's MmaWarps: where n / 8 blocks per 16 rows are at most two
# per SM and k_outer >= 16; on the H100/H200's 132 SMs n <= 2048 at m <= 16), beside 8-warp shapes of the same k.
# (inner_k_tiles, k, n, m): k_outer = k / (16 inner_k_tiles) of 16, 17 (a step left after the whole batches), 32.
WARP_SHAPES = [(2, 512, 24, 1), (2, 544, 24, 4), (4, 1088, 256, 9), (8, 4096, 1024, 1), (8, 4096, 256, 16),
               (4, 2048, 2048, 3), (8, 4096, 4096, 1), (8, 4096, 2048, 32)]


@pytest.mark.parametrize("ikt,k,n,m", WARP_SHAPES, ids=[f"ikt{i}-k{k}-n{n}-m{m}" for i, k, n, m in WARP_SHAPES])
def test_long_k_loops_on_narrow_n(shims, ikt, k, n, m, monkeypatch):
    """Identity rows (16 a call) return torch's dequantized weights bit for bit (each output is one weight: the warps'
    summation order cannot change it); random activations stay within bf16 rounding of the float32 reference."""
    monkeypatch.setenv("AOTIRT_INT4_MMA", "1")
    group = 128 if k % 128 == 0 else 32
    _, packed, sz, w = quantized(n, k, group, ikt, seed=k + n + m)
    eye = torch.eye(k, dtype=torch.bfloat16, device="cuda")
    ref = torch._weight_int4pack_mm(eye, packed, group, sz)
    for r in (0, k // 2, k - 16):  # three 16-row slices of the identity: the first, middle and last k-steps
        part, err = shims.mm(eye[r:r + 16].contiguous(), packed, group, sz)
        assert part is not None, err
        assert torch.equal(part[0], ref[r:r + 16]), f"rows {r}..{r + 15} of the identity differ from torch's kernel"
    x = (torch.randn(m, k, generator=torch.Generator().manual_seed(m * k)) * 0.5).to(torch.bfloat16).cuda()
    got, err = shims.mm(x, packed, group, sz)
    assert got is not None, err
    want = x.float() @ w.float().T
    theirs = torch._weight_int4pack_mm(x, packed, group, sz).float()
    scale = want.abs().max().item() + 1e-6
    assert (got[0].float() - want).abs().max().item() / scale <= 1e-2
    assert (got[0].float() - theirs).abs().max().item() / scale <= 2e-2


@MMA
def test_random_cases_against_torch(shims, mma, monkeypatch):
    monkeypatch.setenv("AOTIRT_INT4_MMA", "1" if mma else "0")
    rng = random.Random(20261204)
    worst = 0.0
    for case in range(CASES):
        ikt, group = rng.choice([2, 4, 8]), rng.choice([32, 64, 128, 256])
        k = _k(rng, ikt, group)
        n = 8 * rng.choice([1, 2, 3, 8, 33, 128])
        m = rng.choice([1, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 24, 31, 32, 33, 64, 300])
        _, packed, sz, w = quantized(n, k, group, ikt, seed=case)
        x = (torch.randn(m, k, generator=torch.Generator().manual_seed(case)) * 0.5).to(torch.bfloat16).cuda()
        odd = case % 5 == 4  # x a view at an odd element offset: the kernel's 2-byte loads instead of 4-byte ones
        if odd:
            x = torch.empty(m * k + 1, dtype=torch.bfloat16, device="cuda")[1:].view(m, k).copy_(x)
        got, err = shims.mm(x, packed, group, sz)
        assert got is not None, f"case {case}: {err}"
        y = got[0]
        ref = x.float() @ w.float().T
        # torch's kernel loads activations in 16-byte vectors and faults (misaligned address) on an odd-offset view,
        # so it gets an aligned copy; ours takes the view as Inductor may pass it
        theirs = torch._weight_int4pack_mm(x.clone(), packed, group, sz).float()
        scale = ref.abs().max().item() + 1e-6
        d_ref = (y.float() - ref).abs().max().item() / scale
        d_torch = (y.float() - theirs).abs().max().item() / scale
        worst = max(worst, d_ref)
        where = f"case {case}: m={m} n={n} k={k} inner_k_tiles={ikt} group={group} odd_offset={odd}"
        assert d_ref <= 1e-2, f"{where}: {d_ref:.3e} of max |out| from the float32 reference"
        assert d_torch <= 2e-2, f"{where}: {d_torch:.3e} of max |out| from torch's kernel"
    print(f"int4 mm: {CASES} cases, worst |ours - float32 reference| / max|out| = {worst:.2e}")


def test_empty_and_refusals(shims):
    _, packed, sz, _ = quantized(16, 64, 64, 4, seed=1)
    got, err = shims.mm(torch.empty(0, 64, dtype=torch.bfloat16, device="cuda"), packed, 64, sz)
    assert got is not None, err
    assert got[1] == ([0, 16], [16, 1])
    got, err = shims.mm(torch.randn(2, 64, device="cuda"), packed, 64, sz)
    assert got is None and "self must be bfloat16, got float32" in err
    got, err = shims.mm(torch.randn(2, 64, device="cuda").to(torch.bfloat16), packed, 48, sz)
    assert got is None and "qGroupSize must be 32, 64, 128 or 256, got 48" in err


def test_an_int4_linear_is_refused_while_unverified_and_lowers_onto_the_shim_after(tmp_path):
    """aten._weight_int4pack_mm in a model: while the manifest marks the shim unverified, lowering refuses it naming
    the shim and the note; once the note is dropped (this file passed), the package calls the shim and matches
    eager."""
    import sys

    import aotirt
    from aotirt import package, platforms
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
    import decode

    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 64, bias=False).to("cuda", torch.bfloat16)
    model = decode.Int4Linear(lin, group_size=64, inner_k_tiles=8).eval()
    x = torch.randn(3, 256, device="cuda", dtype=torch.bfloat16)
    name = "aoti_torch_cuda__weight_int4pack_mm"
    if name in platforms.unverified_shims():
        with pytest.raises(aotirt.UnsupportedShimError, match="not yet allowed"):
            aotirt.compile(model, (x,), str(tmp_path / "int4.pt2"))
        return
    path = aotirt.compile(model, (x,), str(tmp_path / "int4.pt2"))
    assert name in platforms.shims_called(package.wrapper_source(path))
    with torch.no_grad():
        torch.testing.assert_close(aotirt.load(path)(x), model(x), rtol=2e-2, atol=2e-2)
