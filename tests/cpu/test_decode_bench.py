"""benchmarks/decode.py on CPU (issue 14's decode benchmark): the static-cache wrapper decodes exactly what a full
recompute gives, its export mutates the caches in place (what the aotirt packages rely on), the comparison and
report logic, the flags. The timed variants need a GPU (tools/gpu/run.sh bench)."""
import pytest
import torch

import bench_script

_, decode = bench_script.load("decode")
TINY = decode.CONFIGS["tiny"]


@pytest.fixture(scope="module")
def tiny():
    model, _ = decode.build(TINY, seed=0)
    return model


def _prompt(n=6, seed=3):
    return torch.randint(0, TINY["vocab"], (1, n), generator=torch.Generator().manual_seed(seed))


def test_cached_decoding_equals_full_recompute(tiny):
    prompt, new = _prompt(), 7
    bufs = decode.make_bufs(TINY, prompt, new, torch.float32)
    with torch.no_grad():
        out = decode.generate(decode.eager_decoder(tiny, bufs), new, keep_logits=True)
        seq = torch.cat([prompt, out["tokens"]], dim=1)
        full = tiny.all_logits(seq)  # no cache: every position from scratch
    p = prompt.shape[1]
    # token i was chosen from the logits at position p - 1 + i
    torch.testing.assert_close(out["logits"][:, 0], full[0, p - 1:p - 1 + new], rtol=1e-4, atol=1e-4)
    assert torch.equal(out["tokens"][0], full[0, p - 1:p - 1 + new].argmax(-1))
    # the caches hold exactly the prompt and the fed-back tokens' keys, zeros after them
    k0 = bufs["caches"][0]
    assert k0[:, :, :p + new - 1].abs().sum() > 0 and k0[:, :, p + new - 1:].abs().sum() == 0


def test_teacher_forcing_feeds_the_given_tokens(tiny):
    prompt, new = _prompt(), 5
    forced = torch.randint(0, TINY["vocab"], (1, new), generator=torch.Generator().manual_seed(9))
    bufs = decode.make_bufs(TINY, prompt, new, torch.float32)
    with torch.no_grad():
        out = decode.generate(decode.eager_decoder(tiny, bufs), new, forced=forced, keep_logits=True)
        full = tiny.all_logits(torch.cat([prompt, forced[:, :-1]], dim=1))
    p = prompt.shape[1]
    torch.testing.assert_close(out["logits"][:, 0], full[0, p - 1:], rtol=1e-4, atol=1e-4)


def test_export_mutates_every_cache_in_place(tiny):
    prompt = _prompt(4)
    bufs = decode.make_bufs(TINY, prompt, 3, torch.float32)
    ep = torch.export.export(tiny, (bufs["ids_p"], bufs["pos_p"], *bufs["caches"])).run_decompositions()
    mutated = set(ep.graph_signature.user_inputs_to_mutate.values())
    names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    assert len(names) == 2 + 2 * TINY["layers"]
    assert mutated == set(names[2:]), (mutated, names)  # the caches, not ids/pos


def test_wrapper_parameter_names_are_transformers_llama():
    names = {n for n, _ in decode.StaticCacheLlama(TINY).named_parameters()}
    for n in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
              "model.layers.1.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
              "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"):
        assert n in names
    assert decode.param_count(decode.StaticCacheLlama(decode.CONFIGS["llama_05b"])) == pytest.approx(0.43e9, rel=0.05)


def test_compare_counts_and_margins():
    ref_tokens = torch.tensor([[1, 2, 3, 4]])
    logits = torch.zeros(4, 1, 8)
    for i, t in enumerate([1, 2, 3, 4]):
        logits[i, 0, t] = 1.0 + i  # margins 1, 2, 3, 4
    ref = {"tokens": ref_tokens, "logits": logits}
    free = {"tokens": torch.tensor([[1, 2, 5, 6]])}
    forced = {"tokens": torch.tensor([[1, 7, 3, 4]]), "logits": logits + 0.25}
    c = decode.compare(ref, free, forced)
    assert c["identical_tokens"] == 2 and c["tokens"] == 4 and c["first_mismatch"] == 2
    assert c["forced_agree"] == 3 and c["forced_mismatch_margins"] == [2.0]
    assert c["forced_max_abs_logit_diff"] == pytest.approx(0.25)
    same = decode.compare(ref, {"tokens": ref_tokens}, {"tokens": ref_tokens, "logits": logits})
    assert same["first_mismatch"] is None and same["forced_mismatch_margins"] == []


def test_markdown_rows_and_errors():
    row = {"variant": "aotirt", "ttft_ms": 1.5, "decode_ms_per_token": 0.5, "decode_tokens_per_s": 2000.0,
           "host_ms_per_token": 0.125, "profile": {"step": {"gpu_busy_ms_per_call": 0.4, "kernels_per_call": 81.0}},
           "compile_s": 30, "device_mb": 900, "notes": "n",
           "compare": {"identical_tokens": 10, "tokens": 12, "first_mismatch": 10, "forced_agree": 11,
                       "forced_mismatch_margins": [0.01], "forced_max_abs_logit_diff": 0.2}}
    tc = {"variant": "torch_compile", "ttft_ms": 2.0, "decode_ms_per_token": 0.625, "decode_tokens_per_s": 1600.0}
    res = {"machine": "m", "torch": "t", "commit": "c", "prompt": 8, "new": 12, "dtype": "bf16", "repeats": 3,
           "model": {"description": "d", "hf_check": {"tokens": 64, "max_abs_diff": 1e-6}},
           "rows": [{"variant": "eager", "ttft_ms": 3, "decode_ms_per_token": 1, "decode_tokens_per_s": 1000},
                    tc, row, {"variant": "eager_graph", "error": "RuntimeError: boom"}]}
    md = decode.markdown(res)
    assert ("| aotirt | 1.500 | 0.500 | 0.125 | 0.400, 81 | 2000 | 1.25x | 10/12 (first diff at 10) | 11/12 (eager's "
            "margins there: 0.01)") in md
    row["profile"]["step"]["host_api"] = [{"name": "cudaGraphLaunch", "per_call": 1.0, "ms_per_call": 0.0625},
                                          {"name": "cudaEventRecord", "per_call": 1.0, "ms_per_call": 0.001}]
    assert "| 0.125 | 0.400, 81; host in cudaGraphLaunch 0.062 | 2000 |" in decode.markdown(res)
    row["profile"]["host_ms_per_step_call"] = 0.05
    assert "| 0.400, 81; host in cudaGraphLaunch 0.062; host per step call 0.050 | 2000 |" in decode.markdown(res)
    assert "| eager | 3.000 | 1.000 | - | - | 1000 | 0.62x | reference |" in md
    assert "| eager_graph | - |" in md and "RuntimeError: boom" in md
    assert "1.00e-06" in md


def test_decode_step_feeds_the_token_in_and_moves_the_position():
    seen = []
    bufs = {"ids_d": torch.zeros(2, 1, dtype=torch.int64), "pos_d": torch.tensor([5])}

    def step():
        seen.append(bufs["ids_d"].clone())
        return torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 1.0]])
    dec = decode.Decoder(lambda: None, step, bufs)
    tok = decode.decode_step(dec, torch.tensor([7, 9]))
    assert seen[0].tolist() == [[7], [9]] and tok.tolist() == [1, 0] and bufs["pos_d"].tolist() == [6]


def test_flags():
    a = decode.parse_args(["--variants", "aotirt", "--config", "tiny", "--new", "4"])
    assert a.variants == ("eager", "aotirt") and a.config == "tiny" and a.new == 4
    assert decode.parse_args([]).variants == decode.VARIANTS and decode.parse_args([]).layers == 0
    assert decode.parse_args(["--layers", "4", "--profile"]).layers == 4
    with pytest.raises(SystemExit):
        decode.parse_args(["--variants", "eager,vllm"])
    with pytest.raises(SystemExit):
        decode.parse_args(["--layers", "-1"])
    assert decode.out_paths("/x/r.json") == ("/x/r.json", "/x/r.md")
    assert decode.out_paths("/x") == ("/x/decode.json", "/x/decode.md")


def test_no_gpu_exits_1(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert decode.main(["--config", "tiny"]) == 1
    assert "no CUDA GPU" in capsys.readouterr().err


def test_aotirt_variants_are_valid_compile_options():
    import aotirt
    for name, fields in decode.AOTIRT_OPTIONS.items():
        assert name in decode.VARIANTS
        opts = aotirt.CompileOptions(**fields)  # validated on construction (SpecError on a bad value)
        for k, v in fields.items():
            assert getattr(opts, k) == v


def test_one_export_with_a_dynamic_token_count_takes_prefill_and_decode(tiny):
    prompt, new = _prompt(6), 4
    bufs = decode.make_bufs(TINY, prompt, new, torch.float32)
    ep = torch.export.export(tiny, (bufs["ids_p"], bufs["pos_p"], *bufs["caches"]),
                             dynamic_shapes=decode.dynamic_shapes(bufs))
    assert len(ep.run_decompositions().graph_signature.user_inputs_to_mutate) == 2 * TINY["layers"]
    exported = ep.module()
    ref = decode.make_bufs(TINY, prompt, new, torch.float32)
    with torch.no_grad():
        want = decode.generate(decode.eager_decoder(tiny, ref), new, keep_logits=True)
        got = decode.generate(decode.Decoder(lambda: exported(bufs["ids_p"], bufs["pos_p"], *bufs["caches"]),
                                             lambda: exported(bufs["ids_d"], bufs["pos_d"], *bufs["caches"]), bufs),
                              new, keep_logits=True)
    assert torch.equal(got["tokens"], want["tokens"])
    torch.testing.assert_close(got["logits"], want["logits"], rtol=1e-5, atol=1e-5)


def test_wrapper_calls_counts_shim_and_triton_call_sites(tmp_path):
    from aotirt import package
    src = """// aoti_torch_cuda_mm_out( in a comment is no call
    static inline void call_triton_poi_fused_add_0(void* a, cudaStream_t stream) {
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf0, a, b));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf1, a, b));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__scaled_dot_product_cudnn_attention(q, k, v));
    call_triton_poi_fused_add_0(buf0, stream);
    call_triton_red_fused_rms_1(buf1, stream);
    call_sdpa_fwd_0(q, k, v, stream);
"""
    p = package.write_package(str(tmp_path / "m.pt2"), "w", b"so", None, {"aotirt_version": "t"})
    import zipfile
    with zipfile.ZipFile(p, "a") as z:
        z.writestr("m/data/aotinductor/model/w.wrapper.cpp", src)
    calls = decode.wrapper_calls(p)
    assert calls["shims"] == {"aoti_torch_cuda_mm_out": 2, "aoti_torch_cuda__scaled_dot_product_cudnn_attention": 1}
    assert calls["triton_launches"] == 3 and calls["triton_attention_launches"] == 1


def test_group_quantize_int4_is_torchs_asymmetric_scheme():
    w = torch.randn(16, 256, generator=torch.Generator().manual_seed(2)) * 0.05
    q, sz = decode.group_quantize_int4(w, 64)
    assert q.dtype == torch.int32 and q.shape == (16, 256) and int(q.min()) >= 0 and int(q.max()) <= 15
    assert sz.dtype == torch.bfloat16 and sz.shape == (4, 16, 2)
    wd = decode.dequantize_int4(q, sz, 64).float()
    # within half a quantization step (+ the bf16 rounding of scale/zero) of the original, per group
    step = sz[..., 0].float().T.repeat_interleave(64, dim=1)
    assert ((wd - w).abs() <= 0.5 * step * 1.05 + 2e-3).all()
    # every group uses both ends of the range
    qg = q.reshape(16, 4, 64)
    assert (qg.amin(-1) == 0).all() and (qg.amax(-1) == 15).all()
    with pytest.raises(ValueError, match="not a multiple of the group size"):
        decode.group_quantize_int4(torch.zeros(8, 100), 64)


def test_int4_variants_come_with_their_reference():
    a = decode.parse_args(["--variants", "aotirt_int4,torch_compile"])
    assert a.variants == ("eager", "eager_int4", "aotirt_int4", "torch_compile") and a.int4_group == "128"
    assert decode.parse_args(["--variants", "aotirt"]).variants == ("eager", "aotirt")


def test_markdown_compares_int4_rows_with_int4_torch_compile():
    rows = [{"variant": "eager", "ttft_ms": 3, "decode_ms_per_token": 1, "decode_tokens_per_s": 1000},
            {"variant": "torch_compile", "ttft_ms": 2, "decode_ms_per_token": 0.5, "decode_tokens_per_s": 2000},
            {"variant": "eager_int4", "ttft_ms": 3, "decode_ms_per_token": 1, "decode_tokens_per_s": 1000},
            {"variant": "torch_compile_int4", "ttft_ms": 2, "decode_ms_per_token": 0.25, "decode_tokens_per_s": 4000},
            {"variant": "aotirt_int4", "ttft_ms": 1, "decode_ms_per_token": 0.2, "decode_tokens_per_s": 5000,
             "compare": {"identical_tokens": 4, "tokens": 4, "first_mismatch": None, "forced_agree": 4,
                         "forced_mismatch_margins": [], "forced_max_abs_logit_diff": 0.0}}]
    res = {"machine": "m", "torch": "t", "commit": "c", "prompt": 8, "new": 4, "dtype": "bf16", "repeats": 1,
           "model": {"description": "d"}, "rows": rows}
    md = decode.markdown(res)
    assert "| aotirt_int4 | 1.000 | 0.200 | - | - | 5000 | 1.25x | 4/4 |" in md
    assert "| eager_int4 | 3.000 | 1.000 | - | - | 1000 | 0.25x | reference |" in md


def test_package_key_follows_what_the_lowering_is_given():
    import aotirt
    c = decode.CONFIGS["tiny"]
    base = decode.package_key(c, torch.bfloat16, aotirt.CompileOptions())
    assert base.startswith("eps1e-05_head_dim16_heads4") and "_bfloat16_" in base
    assert base == decode.package_key(c, torch.bfloat16, aotirt.CompileOptions())
    others = {decode.package_key(c, torch.bfloat16, aotirt.CompileOptions(**o))
              for o in decode.AOTIRT_OPTIONS.values() if o}
    assert base not in others and len(others) == len([o for o in decode.AOTIRT_OPTIONS.values() if o])
    # an option left at its default and the same value given explicitly lower alike: one package
    assert decode.package_key(c, torch.bfloat16, aotirt.CompileOptions(coordinate_descent_tuning=True)) == base
    assert decode.package_key(c, torch.float32, aotirt.CompileOptions()) != base
    assert decode.package_key(dict(c, layers=3), torch.bfloat16, aotirt.CompileOptions()) != base


def test_graph_note_counts_the_decode_graphs_memory_nodes():
    row = {"decode_graph": {"kernels": 317, "mem_allocs": 130, "mem_frees": 130, "memsets": 0, "pooled": False}}
    assert decode._graph_note(row) == "decode graph: 317 kernels, 260 memory nodes, 0 memsets; "
    assert decode._graph_note({}) == ""
    assert "aotirt_nopool" in decode.VARIANTS and decode.AOTIRT_OPTIONS["aotirt_nopool"] == {}


def test_kernel_configs_find_a_profiled_kernels_sources_and_chosen_launch_config(tmp_path):
    import json
    import os
    import time

    d = tmp_path / "inductor" / "ab"
    d.mkdir(parents=True)
    old = d / "cold.py"
    old.write_text("def triton_red_fused_mm_mul_silu_3(in_ptr0, out_ptr0):\n    pass\n")
    os.utime(old, (time.time() - 100, time.time() - 100))
    fresh = d / "cnew.py"
    fresh.write_text("@triton.jit\ndef triton_red_fused_mm_mul_silu_3(in_ptr0):\n    pass\n"
                     "def triton_poi_fused_add_1(x):\n    pass\n")
    (d / "cnew.best_config").write_text(json.dumps({"XBLOCK": 1, "R0_BLOCK": 2048, "num_warps": 16,
                                                    "num_stages": 1, "configs_hash": "x", "found_by_coordesc": True}))
    (d / "other.py").write_text("def triton_per_fused_unrelated_0(x):\n    pass\n")
    got = decode.kernel_configs(["triton_red_fused_mm_mul_silu_3", "triton_poi_fused_add_1", "void at::sdpa",
                                 "triton_missing_9"], str(tmp_path / "inductor"), time.time() - 10,
                                copy_to=str(tmp_path / "copy"))
    assert set(got) == {"triton_red_fused_mm_mul_silu_3", "triton_poi_fused_add_1"}
    by_file = {e["file"]: e for e in got["triton_red_fused_mm_mul_silu_3"]}
    assert by_file["cnew.py"] == {"file": "cnew.py", "new": True,
                                  "best_config": {"XBLOCK": 1, "R0_BLOCK": 2048, "num_warps": 16, "num_stages": 1}}
    assert by_file["cold.py"] == {"file": "cold.py", "new": False, "best_config": None}
    assert sorted(os.listdir(tmp_path / "copy")) == ["cnew.py", "cold.py"]
    assert decode.kernel_configs(["triton_x"], None, 0.0) == {}
