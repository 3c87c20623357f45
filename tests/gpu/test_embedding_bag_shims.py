"""aoti_torch_cuda__embedding_bag and ..._forward_only (shims/embedding_bag) on torch CUDA tensors, against torch's own
aten._embedding_bag on the same operands: 300 random cases over modes (sum, mean, max), weight dtypes (float32,
float16, bfloat16, float64) and strides (a transposed weight view), int32/int64 indices and offsets (strided views
too), empty bags, include_last_offset, padding_idx, per_sample_weights. Every output is compared: the bags' values
(float32 and float64 bit for bit: the same per-bag loop order; half types within one rounding), offset2bag and the
first `bags` entries of bag_size exactly, max_indices exactly; sizes, strides and dtypes as torch's. Called through
ctypes on the shim library named by $AOTIRT_SHIM_LIB. Until these passed on the H200 (bb75b2c) the manifest kept the
shims out of lowering (note "unverified")."""
import ctypes
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, requires_shim_lib, torch
from test_attention_shims import Shims

pytestmark = requires_shim_lib

CASES = int(os.environ.get("AOTIRT_EMBEDDING_BAG_CASES", "300"))
H, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64] if torch is not None else []


class BagShims(Shims):
    def __init__(self, path):
        super().__init__(path)
        HP = ctypes.POINTER(H)
        for name in ("aoti_torch_cuda__embedding_bag", "aoti_torch_cuda__embedding_bag_forward_only"):
            getattr(self.lib, name).argtypes = [H, H, H, I32, I64, I32, HP, I32, I64, HP, HP, HP, HP]

    def bag(self, weight, indices, offsets, mode, psw, include_last, padding_idx, forward_only=False):
        hs = [self.wrap(t) for t in (weight, indices, offsets)]
        ph = self.wrap(psw) if psw is not None else None
        rets = [H() for _ in range(4)]
        name = "aoti_torch_cuda__embedding_bag" + ("_forward_only" if forward_only else "")
        try:
            rc = getattr(self.lib, name)(hs[0], hs[1], hs[2], 0, mode, 0, ctypes.byref(ph) if ph else None,
                                         int(include_last), padding_idx, *[ctypes.byref(r) for r in rets])
            if rc != 0:
                return None, self.error()
            dtypes = [weight.dtype, indices.dtype, indices.dtype, indices.dtype]
            outs = [self.take(r, d) for r, d in zip(rets, dtypes)]
            for r in rets:
                self.lib.aoti_torch_delete_tensor_object(r)
            return outs, ""
        finally:
            for h in hs + ([ph] if ph else []):
                self.lib.aoti_torch_delete_tensor_object(h)


@pytest.fixture(scope="module")
def shims():
    return BagShims(LIB_PATH)


def random_case(rng, i):
    dtype = DTYPES[i % len(DTYPES)]
    mode = rng.choice([0, 1, 2])
    rows, dim = rng.choice([1, 5, 64, 1000]), rng.choice([1, 3, 16, 64, 130, 513])
    bags = rng.choice([0, 1, 2, 7, 64, 300]) if i % 10 else 0
    lengths = [rng.choice([0, 0, 1, 2, 5, 17]) for _ in range(bags)]
    n = sum(lengths)
    g = torch.Generator().manual_seed(i)
    weight = torch.randn(rows, dim, generator=g).to(dtype).cuda()
    if rng.random() < 0.2:  # a transposed view: strides (1, rows)
        weight = torch.randn(dim, rows, generator=g).to(dtype).cuda().t()
    itype = rng.choice([torch.int64, torch.int32])
    indices = torch.randint(0, rows, (n,), generator=g).to(itype).cuda()
    starts = [sum(lengths[:b]) for b in range(bags)]
    include_last = bags > 0 and rng.random() < 0.3
    offsets = torch.tensor(starts + ([n] if include_last else []), dtype=itype).cuda()
    if rng.random() < 0.15 and n:  # strided 1-D views
        indices = torch.stack([indices, indices], 1)[:, 0]
        offsets = torch.stack([offsets, offsets], 1)[:, 0]
    padding_idx = rng.choice([-1, -1, 0, rows - 1])
    psw = (torch.rand(n, generator=g).to(dtype).cuda() if mode == 0 and rng.random() < 0.4 else None)
    return dict(weight=weight, indices=indices, offsets=offsets, mode=mode, psw=psw, include_last=include_last,
                padding_idx=padding_idx, bags=bags)


def test_random_cases_match_torch(shims):
    rng = random.Random(20261205)
    failures = []
    for i in range(CASES):
        c = random_case(rng, i)
        forward_only = i % 3 == 0
        op = torch.ops.aten._embedding_bag_forward_only if forward_only else torch.ops.aten._embedding_bag
        # torch gets contiguous copies (the values define the result; its kernel's stride handling is not ours to
        # test), the shim the views themselves
        want = op(c["weight"].contiguous(), c["indices"].contiguous(), c["offsets"].contiguous(), False, c["mode"],
                  False, c["psw"], c["include_last"], c["padding_idx"])
        got, err = shims.bag(c["weight"], c["indices"], c["offsets"], c["mode"], c["psw"], c["include_last"],
                             c["padding_idx"], forward_only)
        desc = (f"case {i}: mode {c['mode']} weight {list(c['weight'].shape)}/{list(c['weight'].stride())} "
                f"{c['weight'].dtype} indices {c['indices'].numel()} {c['indices'].dtype} offsets "
                f"{c['offsets'].tolist()[:8]} include_last={c['include_last']} padding_idx={c['padding_idx']} "
                f"psw={c['psw'] is not None} forward_only={forward_only}")
        if got is None:
            failures.append(f"{desc}: refused: {err}")
            continue
        torch.cuda.synchronize()
        names = ("output", "offset2bag", "bag_size", "max_indices")
        for k, ((mine, (sizes, strides)), theirs) in enumerate(zip(got, want)):
            if sizes != list(theirs.shape):
                failures.append(f"{desc}: {names[k]} sizes {sizes}, torch's {list(theirs.shape)}")
                continue
            if mine.dtype != theirs.dtype:
                failures.append(f"{desc}: {names[k]} dtype {mine.dtype}, torch's {theirs.dtype}")
                continue
            if k == 0:
                exact = c["weight"].dtype in (torch.float32, torch.float64)
                ok = torch.equal(mine, theirs) if exact else torch.allclose(mine.float(), theirs.float(),
                                                                            atol=1e-2, rtol=1e-2)
            elif k == 2:
                ok = torch.equal(mine[:c["bags"]], theirs[:c["bags"]])  # the tail (include_last_offset) is unset
            elif k == 3 and c["mode"] != 2:
                ok = True  # [0]: sizes compared above
            else:
                ok = torch.equal(mine, theirs)
            if not ok:
                failures.append(f"{desc}: {names[k]} differs")
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:30])


def test_refusals_on_the_gpu_name_the_reason(shims):
    w = torch.randn(4, 3, device="cuda")
    i = torch.tensor([0, 1], device="cuda")
    off = torch.tensor([0], device="cuda")
    got, err = shims.bag(w, i, off, 1, torch.rand(2, device="cuda"), False, -1)
    assert got is None and "per_sample_weights only supported with mode='sum'" in err
    got, err = shims.bag(w, i.int(), off, 0, None, False, -1)
    assert got is None and "indices and offsets must have the same dtype, got int32 and int64" in err


def test_an_embedding_bag_model_is_refused_while_unverified_and_lowers_onto_the_shim_after(tmp_path):
    """nn.EmbeddingBag in a model: while the manifest marks the shims unverified, lowering refuses it naming the
    shim and the note; once the notes are dropped (this file passed), the package calls the shim and matches eager."""
    import aotirt
    from aotirt import package, platforms

    class Bags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = torch.nn.EmbeddingBag(1000, 64, mode="sum")

        def forward(self, ids, offsets):
            return self.bag(ids, offsets) * 2.0

    torch.manual_seed(0)
    model = Bags().cuda().eval()
    ids = torch.randint(0, 1000, (40,), device="cuda")
    offsets = torch.tensor([0, 3, 3, 17, 30], device="cuda")
    names = {"aoti_torch_cuda__embedding_bag", "aoti_torch_cuda__embedding_bag_forward_only"}
    if names & platforms.unverified_shims():
        with pytest.raises(aotirt.UnsupportedShimError, match="not yet allowed"):
            aotirt.compile(model, (ids, offsets), str(tmp_path / "bags.pt2"))
        return
    path = aotirt.compile(model, (ids, offsets), str(tmp_path / "bags.pt2"))
    assert names & platforms.shims_called(package.wrapper_source(path))
    with torch.no_grad():
        torch.testing.assert_close(aotirt.load(path)(ids, offsets), model(ids, offsets), rtol=1e-5, atol=1e-5)
