"""Static-KV-cache decoding on the aotirt runtime (issue 14): packages that mutate their cache inputs in place, run
directly and through aotirt.capture(alias_inputs=True), against eager PyTorch. The model is benchmarks/decode.py's
StaticCacheLlama at its tiny size, float32 (so greedy tokens must match eager exactly)."""
import os
import sys

import pytest

from conftest import requires_gpu, torch

pytestmark = requires_gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import aotirt
    import decode
    c = decode.CONFIGS["tiny"]
    model, _ = decode.build(c, seed=0)
    model = model.cuda()
    prompt = torch.randint(0, c["vocab"], (1, 12), generator=torch.Generator().manual_seed(5)).cuda()
    new = 10
    d = tmp_path_factory.mktemp("decode")
    bufs = decode.make_bufs(c, prompt, new, torch.float32)
    paths = {}
    with torch.no_grad():
        for name, ids, pos in (("prefill", bufs["ids_p"], bufs["pos_p"]), ("decode", bufs["ids_d"], bufs["pos_d"])):
            paths[name] = aotirt.compile(model, (ids, pos, *bufs["caches"]), str(d / f"decode_{name}.pt2"))
    return decode, c, model, prompt, new, paths


def _eager(decode, c, model, prompt, new):
    bufs = decode.make_bufs(c, prompt, new, torch.float32)
    with torch.no_grad():
        out = decode.generate(decode.eager_decoder(model, bufs), new, keep_logits=True)
    return out, bufs


def test_packages_write_the_callers_cache_in_place(setup):
    import aotirt
    decode, c, model, prompt, new, paths = setup
    ref, ref_bufs = _eager(decode, c, model, prompt, new)
    bufs = decode.make_bufs(c, prompt, new, torch.float32)
    caches = bufs["caches"]
    pre, dec = aotirt.load(paths["prefill"]), aotirt.load(paths["decode"])
    p = prompt.shape[1]
    logits = pre.run_list([bufs["ids_p"], bufs["pos_p"], *caches])[0]
    torch.cuda.synchronize()
    for t, r in zip(caches, ref_bufs["caches"]):  # the prompt's keys/values landed in the caller's tensors
        torch.testing.assert_close(t[:, :, :p], r[:, :, :p], atol=2e-4, rtol=2e-4)
        assert t[:, :, p:].abs().sum().item() == 0
    toks = [logits.argmax(-1)]
    for i in range(new - 1):
        bufs["ids_d"].copy_(toks[-1][:, None])
        bufs["pos_d"].fill_(p + i)
        toks.append(dec.run_list([bufs["ids_d"], bufs["pos_d"], *caches])[0].argmax(-1))
    assert torch.equal(torch.stack(toks, 1), ref["tokens"])
    for t, r in zip(caches, ref_bufs["caches"]):
        torch.testing.assert_close(t, r, atol=2e-4, rtol=2e-4)


def test_captured_decoding_with_aliased_caches(setup, tmp_path):
    decode, c, model, prompt, new, paths = setup
    ref, _ = _eager(decode, c, model, prompt, new)
    bufs = decode.make_bufs(c, prompt, new, torch.float32)
    with torch.no_grad():
        dec, info = decode.aotirt_decoder(model, bufs, str(tmp_path))  # its own two packages, as the bench runs
    assert info["decode_spec"]["aotirt_attention_backend"]  # the package records the spec it was lowered with
    gp, gd = dec.graphs
    for _ in range(2):  # a second generation over the same graphs and caches gives the same tokens
        free = decode.generate(dec, new, keep_logits=True)
        assert torch.equal(free["tokens"], ref["tokens"])
        torch.testing.assert_close(free["logits"], ref["logits"], atol=2e-4, rtol=2e-4)
    assert gp.input_copies == 0 and gd.input_copies == 0  # the caches are the graphs' own inputs: nothing copied
    forced = decode.generate(dec, new, forced=ref["tokens"], keep_logits=True)
    cmp_ = decode.compare(ref, free, forced)
    assert cmp_["identical_tokens"] == cmp_["tokens"] == new and cmp_["forced_agree"] == new


def test_one_package_with_a_dynamic_token_count(setup, tmp_path):
    """aotirt_dyn: one package (dynamic T, 1..prompt) serves the prefill and the decode step, each its own graph
    over the same runner; tokens and logits as eager's."""
    decode, c, model, prompt, new, paths = setup
    ref, _ = _eager(decode, c, model, prompt, new)
    bufs = decode.make_bufs(c, prompt, new, torch.float32)
    with torch.no_grad():
        dec, info = decode.aotirt_decoder(model, bufs, str(tmp_path), dynamic=True)
    assert dec.runners["prefill"] is dec.runners["decode"] and "compile_dynamic_s" in info
    free = decode.generate(dec, new, keep_logits=True)
    assert torch.equal(free["tokens"], ref["tokens"])
    torch.testing.assert_close(free["logits"], ref["logits"], atol=2e-4, rtol=2e-4)
    assert all(g.input_copies == 0 for g in dec.graphs)
