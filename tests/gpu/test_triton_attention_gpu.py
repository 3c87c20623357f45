"""attention_backend TRITON's kernel (aotirt.triton_attention, issue 13 item 3) run eagerly on the GPU against a
float64 reference of torch's SDPA semantics: >= 300 random cases over batch, query and key/value heads (GQA and a
single shared key head), query and key lengths from 1 to 8192 (top-left causal also when Lq != Lk), head dims
16..256 including 80/96 and value head dims unlike the query's, boolean and additive masks broadcast over
batch/heads/queries (rows with nothing to attend give 0, as torch's _safe_softmax), custom scales, float16/bfloat16/
float32, and the layouts Inductor passes (contiguous, [B, T, H, D] transposed, slices of a fused qkv projection).
The reference itself is checked against torch.nn.functional.scaled_dot_product_attention on cases without empty
rows; every kernel config the autotuner may pick runs on a few cases. End to end (lowering, graphs) is in
test_e2e_attention_gpu.py."""
import os
import random
import sys

import pytest

from conftest import HAVE_CUDA, requires_gpu

pytestmark = requires_gpu
CASES = int(os.environ.get("AOTIRT_ATTENTION_CASES", "300"))
# against float64: the kernel rounds P to the input dtype before P @ V, as flash attention does
TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2.5e-2, 2.5e-2), "float32": (2e-5, 2e-5)}

if HAVE_CUDA:
    import torch
    import torch.nn.functional as F
    from aotirt import triton_attention as ta

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
    from sdpa_cases import random_case, reference, tensors  # noqa: E402


def check(c, seed, config=None):
    q, k, v, mask = tensors(c, seed)
    gqa = c["h"] != c["hkv"]
    got = ta.run(q, k, v, mask, c["causal"], c["scale"], gqa, config=config)
    want = reference(q, k, v, mask, c["causal"], c["scale"], gqa)
    assert got.shape == want.shape and got.dtype == q.dtype and got.is_contiguous()
    atol, rtol = TOL[str(c["dtype"]).split(".")[-1]]
    torch.testing.assert_close(got.double(), want, atol=atol, rtol=rtol, msg=lambda m: f"{c} config {config}: {m}")
    return q, k, v, mask, got


CHUNKS = 8  # the cases in 8 tests, so pytest-xdist compiles the kernel variants in parallel


def all_cases():
    rng = random.Random(1234)
    return [random_case(rng, i) for i in range(CASES)]


def test_the_random_cases_cover_every_kind():
    kinds = {(c["mask"], c["causal"], c["dtype"]) for c in all_cases()}
    assert len(kinds) == 18 and CASES >= 300  # every mask kind x causal x dtype was drawn


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_cases_match_sdpa_semantics(chunk):
    """Each case runs one fixed config (rotating through those the autotuner may pick for its head dims; autotuning
    every shape would time every config), so the cases cover the configs too."""
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # float32: IEEE products
    try:
        for i, c in enumerate(all_cases()):
            if i % CHUNKS != chunk:
                continue
            elem = torch.tensor([], dtype=c["dtype"]).element_size()
            configs = ta.config_candidates(ta._next_pow2(c["d"]), ta._next_pow2(c["dv"]), elem)
            check(c, i, config=configs[i % len(configs)])
    finally:
        torch.set_float32_matmul_precision(prev)


def test_the_autotuned_op_matches_too():
    rng = random.Random(99)
    for i in range(6):
        check(random_case(rng, i), 100 + i)


def test_reference_agrees_with_torch_sdpa():
    """So the random cases test torch's semantics, not only ours: where no row is empty, the float64 reference and
    torch's own SDPA (math, float32) agree, causal with Lq != Lk included."""
    rng = random.Random(7)
    for i in range(40):
        c = random_case(rng, i)
        # torch refuses a mask together with is_causal; bool masks can leave rows empty
        c.update(dtype=torch.float32, mask="none" if c["mask"] == "bool" or c["causal"] else c["mask"])
        if c["lq"] * c["lk"] > 2 ** 22:
            continue
        q, k, v, mask = tensors(c, i)
        if mask is not None:
            mask = mask.clamp_min(-1e4)  # no -inf: no empty rows
        with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
            want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=c["causal"], scale=c["scale"],
                                                  enable_gqa=c["h"] != c["hkv"])
        torch.testing.assert_close(reference(q, k, v, mask, c["causal"], c["scale"], c["h"] != c["hkv"]).float(),
                                   want, atol=1e-3, rtol=1e-3)  # float32 math vs float64


@pytest.mark.parametrize("d", [64, 128, 256])
def test_every_config_the_autotuner_may_pick_is_right(d):
    rng = random.Random(d)
    for elem, dtype in ((2, torch.bfloat16), (4, torch.float32)):
        for config in ta.config_candidates(ta._next_pow2(d), ta._next_pow2(d), elem):
            for causal, mask in ((True, "none"), (False, "additive"), (False, "bool")):
                lq, lk = rng.choice([77, 300]), rng.choice([77, 190])
                c = dict(dtype=dtype, b=2, h=4, hkv=2, lq=lq, lk=lk, d=d, dv=d, causal=causal, mask=mask,
                         mask_shape=(2, 1, lq, lk), scale=None, layout="bthd")
                check(c, 11, config=config)


def test_rows_with_nothing_to_attend_are_zero_and_bad_inputs_are_refused():
    q = torch.randn(1, 2, 4, 64, device="cuda", dtype=torch.bfloat16)
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool, device="cuda")
    mask[..., 2, :] = False  # query 2 may attend nothing
    out = ta.run(q, q, q, mask)
    assert torch.all(out[:, :, 2] == 0) and torch.isfinite(out).all()
    with pytest.raises(RuntimeError, match="need enable_gqa=True"):
        ta.run(q, q[:, :1].expand(1, 3, 4, 64).contiguous(), q[:, :1].expand(1, 3, 4, 64).contiguous())
    with pytest.raises(RuntimeError, match="head dims up to 256"):
        x = torch.randn(1, 1, 4, 320, device="cuda", dtype=torch.bfloat16)
        ta.run(x, x, x)
    with pytest.raises(RuntimeError, match="one dtype"):
        ta.run(q, q.float(), q)
