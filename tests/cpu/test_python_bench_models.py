"""The model benchmark (benchmarks/models.py -> benchmarks/model_bench, outside the aotirt package) on CPU: model
definitions at full size (meta tensors) and tiny size (float32), causality, the unrolled flow-matching loop (Euler
integration, export), argument parsing (absl flags), and the run loop's bookkeeping (errors per row, time budget,
merging, targets, report) with a scripted backend and with the real backend on CPU (eager rows, and the GPU-only
variants recording their errors)."""
import argparse
import json
import os

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import model_bench.cli
import model_bench.cuda
import model_bench.models
import model_bench.report
import model_bench.run
import model_bench.variants

# One namespace for the suite's names, as the tests have always used them (bm.demo is aotirt.demo, which
# model_bench.models imports).
bm = argparse.Namespace(**{k: v for m in (model_bench.models, model_bench.variants, model_bench.report,
                                          model_bench.run, model_bench.cuda, model_bench.cli)
                           for k, v in vars(m).items() if not k.startswith("__")})


def meta_model(name):
    cfg = bm.config(name)
    with torch.device("meta"):
        if name == "siglip":
            return bm.demo.SiglipLike(**cfg)
        return bm.GemmaLike(**cfg) if name == "gemma" else bm.Pi05Like(**cfg)


# ------------------------------------------------------------------------------------------------------ models

def test_full_size_configs_match_the_issue():
    assert bm.SIGLIP == dict(num_blocks=4, width=1152, heads=16, mlp=4304, tokens=256)
    assert bm.GEMMA == dict(num_blocks=4, width=1024, heads=8, kv_heads=1, head_dim=256, mlp=4096, tokens=64)
    assert bm.PI05["steps"] == 10 and bm.PI05["vision"] == bm.SIGLIP


def test_full_size_gemma_layers_and_shapes():
    m = meta_model("gemma")
    blk = m.blocks[0]
    assert len(m.blocks) == 4
    assert tuple(blk.self_attn.q_proj.weight.shape) == (8 * 256, 1024)
    assert tuple(blk.self_attn.k_proj.weight.shape) == (256, 1024)  # one KV head
    assert tuple(blk.self_attn.v_proj.weight.shape) == (256, 1024)
    assert tuple(blk.self_attn.o_proj.weight.shape) == (1024, 8 * 256)
    assert tuple(blk.gate_proj.weight.shape) == (4096, 1024) and tuple(blk.down_proj.weight.shape) == (1024, 4096)
    assert all(not isinstance(mod, torch.nn.Linear) or mod.bias is None for mod in m.modules())
    assert not any(isinstance(mod, torch.nn.LayerNorm) for mod in m.modules())
    with torch.device("meta"):
        y = m(torch.empty(1, 64, 1024))
    assert tuple(y.shape) == (1, 64, 1024)


def test_full_size_siglip_and_pi05_shapes():
    s = meta_model("siglip")
    assert len(s.blocks) == 4 and tuple(s.blocks[0].fc1.weight.shape) == (4304, 1152)
    assert s.blocks[0].self_attn.q_proj.bias is not None and s.blocks[0].self_attn.heads == 16
    p = meta_model("pi05")
    assert len(p.vision.blocks) == 4 and len(p.expert) == 4 and p.steps == 10
    with torch.device("meta"):
        assert tuple(s(torch.empty(1, 256, 1152)).shape) == (1, 256, 1152)
        y = p(torch.empty(1, 256, 588), torch.empty(1, 32), torch.empty(1, 50, 32))
    assert tuple(y.shape) == (1, 50, 32) == bm.output_shape("pi05", p)


def test_full_size_issue13_models_match_their_namesakes():
    with torch.device("meta"):
        r = bm.ResNetLike(**bm.config("resnet50"))
        v = bm.ViTLike(**bm.config("vit_b16"))
        g = bm.GPT2Like(**bm.config("gpt2"))
        assert tuple(r(torch.empty(16, 3, 224, 224)).shape) == (16, 1000) == bm.output_shape("resnet50", r)
        assert tuple(v(torch.empty(8, 3, 224, 224)).shape) == (8, 197, 768) == bm.output_shape("vit_b16", v)
        assert tuple(g(torch.empty(2, 2048, 512)).shape) == (2, 2048, 512) == bm.output_shape("gpt2", g)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(r) == 25_557_032  # torchvision's resnet50
    assert count(v) == 86_567_656 - (768 * 1000 + 1000)  # torchvision's vit_b_16 without its classifier head
    assert len(g.blocks) == 4 and g.blocks[0].heads == 8 and bm.config("gpt2_t128")["tokens"] == 128


def test_gpt2_is_causal_and_vit_is_not():
    g = bm.build("gpt2", tiny=True)
    (x,) = bm.example_inputs("gpt2", g, dtype=torch.float32, device="cpu")
    x2 = x.clone()
    x2[:, -1] += 1.0
    v = bm.build("vit_b16", tiny=True)
    (im,) = bm.example_inputs("vit_b16", v, dtype=torch.float32, device="cpu")
    im2 = im.clone()
    im2[..., -8:, -8:] += 1.0  # the last patch only
    with torch.no_grad():
        torch.testing.assert_close(g(x2)[:, :-1], g(x)[:, :-1])
        assert not torch.allclose(v(im2)[:, 0], v(im)[:, 0])  # the class token sees the last patch


@pytest.mark.parametrize("name", bm.MODELS)
def test_tiny_models_run_in_float32_with_the_right_shapes(name):
    m = bm.build(name, tiny=True)
    xs = bm.example_inputs(name, m, dtype=torch.float32, device="cpu")
    with torch.no_grad():
        y = m(*xs)
    assert tuple(y.shape) == bm.output_shape(name, m) and y.dtype == torch.float32
    assert torch.isfinite(y).all()
    # Deterministic weights and inputs.
    m2 = bm.build(name, tiny=True)
    with torch.no_grad():
        torch.testing.assert_close(m2(*bm.example_inputs(name, m2, dtype=torch.float32, device="cpu")), y)


def test_tiny_bf16_is_close_to_float32():
    m = bm.build("gemma", tiny=True)
    xs = bm.example_inputs("gemma", m, dtype=torch.float32, device="cpu")
    with torch.no_grad():
        ref = m(*xs)
        got = m.to(torch.bfloat16)(*(x.to(torch.bfloat16) for x in xs))
    assert got.dtype == torch.bfloat16
    assert (got.float() - ref).abs().mean() < 0.05


def test_gemma_is_causal():
    m = bm.build("gemma", tiny=True)
    (x,) = bm.example_inputs("gemma", m, dtype=torch.float32, device="cpu")
    x2 = x.clone()
    x2[:, -1] += 1.0
    with torch.no_grad():
        a, b = m(x), m(x2)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])
    assert not torch.allclose(a[:, -1], b[:, -1])


def test_rmsnorm_and_rope():
    n = bm.RMSNorm(8)
    with torch.no_grad():
        n.weight.fill_(0.5)
    x = torch.randn(2, 8)
    want = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * 1.5
    torch.testing.assert_close(n(x), want)
    cos, sin = bm.rope_tables(torch.arange(5), 4)
    q = torch.randn(1, 2, 5, 4)
    r = bm.apply_rope(q, cos, sin)
    torch.testing.assert_close(r[:, :, 0], q[:, :, 0])  # position 0: no rotation
    torch.testing.assert_close(r.norm(dim=-1), q.norm(dim=-1))  # rotations keep the norm


# ----------------------------------------------------------------------------------------------- flow matching

def tiny_pi05(**kw):
    m = bm.build("pi05", tiny=True, **kw)
    return m, bm.example_inputs("pi05", m, dtype=torch.float32, device="cpu")


def test_zero_velocity_leaves_the_noise_unchanged():
    m, (patches, state, noise) = tiny_pi05()
    with torch.no_grad():
        m.action_out.weight.zero_()
        m.action_out.bias.zero_()
        assert torch.equal(m(patches, state, noise), noise)


def test_constant_velocity_integrates_from_t1_to_t0():
    # v = c everywhere: x(0) = x(1) + sum(dt * c) over 10 steps of dt = -1/10 = noise - c.
    m, (patches, state, noise) = tiny_pi05()
    c = torch.linspace(-1, 1, m.action_dim)
    with torch.no_grad():
        m.action_out.weight.zero_()
        m.action_out.bias.copy_(c)
        torch.testing.assert_close(m(patches, state, noise), noise - c, atol=1e-5, rtol=1e-5)


def test_the_loop_runs_ten_euler_steps_over_descending_times():
    m, (patches, state, noise) = tiny_pi05()
    assert m.steps == 10
    torch.testing.assert_close(m.times(), torch.tensor([1.0 - i / 10 for i in range(10)]))
    seen = []
    real = m.velocity

    def spy(x, step, state_token, kv):
        seen.append(step)
        return real(x, step, state_token, kv)

    m.velocity = spy
    with torch.no_grad():
        out = m(patches, state, noise)
        # The same Euler loop written out by hand.
        kv, st = m.prefix(patches), m.state_proj(state)[:, None]
        x = noise
        for i in range(10):
            x = x + (-0.1) * real(x, i, st, kv)
    assert seen[:10] == list(range(10))
    torch.testing.assert_close(out, x)
    assert not torch.allclose(out, noise)  # the velocity is not trivially zero


def test_steps_change_the_result_and_time_embeddings_differ():
    m3, xs = tiny_pi05(steps=3)
    m1, _ = tiny_pi05(steps=1)
    with torch.no_grad():
        assert not torch.allclose(m3(*xs), m1(*xs))
    assert not torch.allclose(m3.time_emb[0], m3.time_emb[1])


def test_the_policy_step_exports_as_one_unrolled_graph():
    m, xs = tiny_pi05(steps=3)
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
        ep = torch.export.export(m, xs)
    sdpa = [n for n in ep.graph.nodes if n.op == "call_function" and "scaled_dot_product" in str(n.target)]
    # one per vision block + one per expert block per step: the loop is unrolled in the graph
    assert len(sdpa) == len(m.vision.blocks) + 3 * len(m.expert)
    assert len(ep.graph_signature.user_inputs) == 3
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(*xs), m(*xs))


# ------------------------------------------------------------------------------------------------ arguments

def test_defaults():
    a = bm.parse_args([], default_out="/x/results")
    assert a.out == "/x/results" and a.models == bm.DEFAULT_MODELS == ("siglip", "gemma", "pi05")
    assert a.variants == bm.DEFAULT_VARIANTS
    assert a.graphs == "both" and not a.quick and a.budget_s == 540 and a.merge and a.auto_rounds == 3
    assert a.device == "cuda" and not a.tiny and not a.profile
    assert set(bm.DEFAULT_VARIANTS) >= {"eager", "torch_compile", "aotirt_triton", "aotirt_aten_triton",
                                        "aotirt_aten", "aotirt_auto"}


def test_flags():
    a = bm.parse_args(["--models", "gemma, siglip", "--variants", "aotirt_auto,eager,eager", "--quick",
                       "--budget-s", "300", "--cache-dir", "/c", "--no-merge", "--graphs", "on", "--out", "r.json"])
    assert a.models == ("gemma", "siglip") and a.variants == ("aotirt_auto", "eager")
    assert a.quick and a.auto_rounds == 2 and a.budget_s == 300 and a.cache_dir == "/c" and not a.merge
    assert a.graphs == "on"
    assert bm.parse_args(["--variants", "all"]).variants == bm.VARIANTS
    assert bm.parse_args(["--variants", "default"]).variants == bm.DEFAULT_VARIANTS
    assert bm.parse_args(["--models", "ALL"]).models == bm.MODELS
    assert set(bm.MODELS) >= {"gpt2", "gpt2_t128", "vit_b16", "resnet50"}
    assert bm.parse_args(["--variants", "lowerings"]).variants == bm.LOWERING_VARIANTS
    assert {"aotirt_aten_cudnn", "aotirt_aten_tattn", "torch_compile_max_autotune"} <= set(bm.LOWERING_VARIANTS)


@pytest.mark.parametrize("argv,msg", [
    (["--models", "llama"], "unknown model ['llama']; valid: siglip,gemma,pi05,gpt2,gpt2_t128,vit_b16,resnet50"),
    (["--variants", "aotirt_cutlass"], "unknown variant ['aotirt_cutlass']"),
    (["--models", ","], "unknown model"),
    (["--budget-s", "0"], "--budget-s must be > 0"),
    (["--device", "tpu"], "valid: cuda, cuda:N, cpu"),
    (["--graphs", "maybe"], "invalid choice"),
    (["--auto-rounds", "0"], "--auto-rounds must be >= 1"),
])
def test_bad_flags(argv, msg, capsys):
    with pytest.raises(SystemExit) as info:
        bm.parse_args(argv)
    assert info.value.code == 2 and msg in capsys.readouterr().err


def test_out_paths():
    assert bm.out_paths("/r") == {"json": "/r/models.json", "md": "/r/models.md", "png": "/r/models.png"}
    assert bm.out_paths("/r/x.json") == {"json": "/r/x.json", "md": "/r/x.md", "png": "/r/x.png"}


def test_variant_backends():
    assert bm.gemm_backends("aotirt_aten_triton") == "ATEN,TRITON" and bm.gemm_backends("aotirt_auto") == "AUTO"
    assert bm.gemm_backends("torch_compile") == "TRITON" and bm.gemm_backends("eager") is None
    assert bm.gemm_backends("torch_compile_max_autotune") == "ATEN,TRITON"
    assert bm.lowering("aotirt_aten") == ("ATEN", "MATH", "TRITON")
    assert bm.lowering("aotirt_aten_cudnn") == ("ATEN", "CUDNN", "ATEN")
    assert bm.lowering("aotirt_aten_tattn") == ("ATEN", "TRITON", "ATEN")
    assert bm.lowering("aotirt_auto") is None and bm.lowering("eager") is None
    assert set(bm.OURS) == {v for v in bm.VARIANTS if v.startswith("aotirt_")}


def test_every_lowering_is_valid_compile_options_and_gets_its_own_package(tmp_path):
    import aotirt
    args = argparse.Namespace(device="cpu", tiny=True, seed=0, cache_dir=str(tmp_path), quick=True)
    be = bm.CudaBench(args, lambda m: None)
    ctx = argparse.Namespace(cache_dir=str(tmp_path), name="gpt2")
    paths = set()
    for v in bm.VARIANTS:
        low = bm.lowering(v)
        if low is None:
            continue
        opts = be._options(low)
        assert (opts.max_autotune_gemm_backends, opts.attention_backend, opts.max_autotune_conv_backends) == low
        paths.add(be._package_path(ctx, low))
    assert len(paths) == len(bm.FIXED) + len(bm.LOWERINGS)
    # Today's defaults keep the cache names of earlier runs.
    assert os.path.basename(be._package_path(ctx, ("ATEN", "MATH", "TRITON"))).startswith("aten-")
    assert isinstance(be._options(("ATEN", "CUDNN", "ATEN")), aotirt.CompileOptions)


def test_issue13_targets_compare_our_best_graph_row_with_the_faster_peer():
    def row(m, v, ms, **kw):
        return {"model": m, "variant": v, "graphs": True, "ms": ms, "run": "r", **kw}
    rows = [row("gpt2", "eager", 1.2, device_mb=10.0), row("gpt2", "torch_compile_max_autotune", 1.0, device_mb=100.0),
            row("gpt2", "aotirt_aten", 3.0, device_mb_less_weights=400.0),
            row("gpt2", "aotirt_aten_cudnn", 0.9, device_mb_less_weights=50.0)]
    t = {x["target"].split(" (")[0]: x for x in bm.targets(rows) if x["model"] == "gpt2"}
    best = t["best aotirt <= 1.00 x faster of torch.compile(max-autotune) and eager"]
    assert best["value"] == pytest.approx(0.9) and best["met"] is True
    assert "aotirt_aten_cudnn" in best["detail"] and "torch_compile_max_autotune" in best["detail"]
    mem = t["memory of that choice <= 1.05 x torch.compile"]
    assert mem["value"] == pytest.approx(0.5) and mem["met"] is True
    rows[3]["ms"] = 1.1
    best = [x for x in bm.targets(rows) if x["target"].startswith("best aotirt")][0]
    assert best["value"] == pytest.approx(1.1) and best["met"] is False
    md = bm.markdown({"rows": rows, "targets": bm.targets(rows)})
    assert "| device MB |" in md and "| - (50 less weights) |" in md


# ------------------------------------------------------------------------------------- run loop (scripted)

class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Scripted:
    """A backend with scripted timings, failures and costs (seconds advanced on the fake clock)."""

    def __init__(self, clock, ms, fail_setup=(), fail_measure=(), compile_cost=0.0, needs=(), fail_prepare=()):
        self.clock, self.ms, self.compile_cost = clock, ms, compile_cost
        self.fail_setup, self.fail_measure, self.needs, self.fail_prepare = (set(fail_setup), set(fail_measure),
                                                                             set(needs), set(fail_prepare))
        self.released, self.setups = [], []

    def describe(self):
        return {"device": "fake"}

    def prepare(self, name):
        if name in self.fail_prepare:
            raise RuntimeError(f"cannot build {name}")
        return argparse.Namespace(name=name)

    def release(self, ctx):
        self.released.append(ctx.name)

    def needs_compile(self, ctx, variant):
        return variant in self.needs

    def setup(self, ctx, variant):
        self.setups.append((ctx.name, variant))
        if variant in self.needs:
            self.clock.t += self.compile_cost
        if (ctx.name, variant) in self.fail_setup:
            raise RuntimeError("compile exploded")
        return argparse.Namespace(variant=variant, info={"compile_s": 1.0})

    def precompile(self, ctx, variant):
        self.setups.append((ctx.name, variant))
        self.clock.t += self.compile_cost
        if (ctx.name, variant) in self.fail_setup:
            raise RuntimeError("compile exploded")
        self.needs.discard(variant)  # now cached
        return self.compile_cost

    def measure(self, ctx, h, graphs):
        self.clock.t += 1.0
        if (ctx.name, h.variant, graphs) in self.fail_measure:
            raise RuntimeError("capture failed")
        return {"ms": self.ms[(ctx.name, h.variant, graphs)], "mean_abs_diff": 1e-3, **h.info}


def args_for(tmp_path, **kw):
    argv = ["--out", str(tmp_path / "res"), "--cache-dir", str(tmp_path / "cache")]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", str(v)] if v is not True else [f"--{k.replace('_', '-')}"]
    return bm.parse_args(argv)


def all_ms(models, variants, value=1.0):
    return {(m, v, g): value for m in models for v in variants for g in (False, True)}


def test_failures_are_recorded_per_row_and_the_run_continues(tmp_path):
    clock = Clock()
    ms = all_ms(bm.MODELS, bm.DEFAULT_VARIANTS)
    be = Scripted(clock, ms, fail_setup={("siglip", "aotirt_aten")}, fail_measure={("gemma", "eager", True)},
                  fail_prepare={"pi05"})
    res = bm.run_benchmark(args_for(tmp_path), be, clock=clock, say=lambda m: None)
    rows = {(r["model"], r["variant"], r["graphs"]): r for r in res["rows"]}
    assert len(rows) == 3 * len(bm.DEFAULT_VARIANTS) * 2
    assert rows[("siglip", "aotirt_aten", False)]["error"] == "setup failed: RuntimeError: compile exploded"
    assert rows[("siglip", "aotirt_aten", True)]["ms"] is None
    assert rows[("siglip", "aotirt_auto", False)]["ms"] == 1.0  # the next variant still ran
    assert rows[("gemma", "eager", True)]["error"] == "RuntimeError: capture failed"
    assert rows[("gemma", "eager", False)]["ms"] == 1.0
    assert all(r["error"] == "model setup failed: RuntimeError: cannot build pi05" for k, r in rows.items()
               if k[0] == "pi05")
    assert be.released == ["siglip", "gemma"]
    on_disk = json.load(open(tmp_path / "res" / "models.json"))
    assert on_disk["rows"] == json.loads(json.dumps(res["rows"]))
    for r in on_disk["rows"]:
        assert {"model", "variant", "graphs", "ms", "mean_abs_diff", "error", "gemm_backends"} <= set(r)


def test_the_budget_skips_compiles_that_do_not_fit_and_a_rerun_continues(tmp_path):
    clock = Clock()
    ms = all_ms(("siglip",), bm.DEFAULT_VARIANTS, 2.0)
    needs = {"aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager", "torch_compile"}
    be = Scripted(clock, ms, needs=needs, compile_cost=100.0)
    args = args_for(tmp_path, models="siglip", budget_s=300, compile_reserve_s=150)
    res = bm.run_benchmark(args, be, clock=clock, say=lambda m: None)
    rows = {(r["variant"], r["graphs"]): r for r in res["rows"]}
    # eager (no compile), triton (t=2 -> compile to 102), aten_triton (t=104 -> 204) fit; aten at t=206 does not
    assert [v for _, v in be.setups] == ["eager", "aotirt_triton", "aotirt_aten_triton"]
    assert rows[("aotirt_aten", False)]["skipped"] and "time budget" in rows[("aotirt_aten", False)]["error"]
    assert rows[("aotirt_aten_triton", True)]["ms"] == 2.0
    # A rerun (same --out, packages now cached: no compile needed) fills in the rest and keeps the earlier rows.
    clock2 = Clock()
    be2 = Scripted(clock2, all_ms(("siglip",), bm.DEFAULT_VARIANTS, 3.0))
    args2 = args_for(tmp_path, models="siglip", variants="aotirt_aten,aotirt_auto,torch_compile")
    res2 = bm.run_benchmark(args2, be2, clock=clock2, say=lambda m: None)
    rows2 = {(r["variant"], r["graphs"]): r for r in res2["rows"]}
    assert rows2[("aotirt_triton", False)]["ms"] == 2.0 and rows2[("aotirt_aten", False)]["ms"] == 3.0
    assert rows2[("aotirt_aten", False)]["error"] is None
    assert len(res2["runs"]) == 2


def test_a_skip_never_replaces_a_measured_row(tmp_path):
    clock = Clock()
    bm.run_benchmark(args_for(tmp_path, models="gemma", variants="eager"),
                     Scripted(clock, all_ms(("gemma",), ("eager",), 5.0)), clock=clock, say=lambda m: None)
    clock2 = Clock()
    be = Scripted(clock2, {}, needs={"eager"})
    res = bm.run_benchmark(args_for(tmp_path, models="gemma", variants="eager", budget_s=20), be,
                           clock=clock2, say=lambda m: None)
    assert [r["ms"] for r in res["rows"]] == [5.0, 5.0] and be.setups == []
    res3 = bm.run_benchmark(args_for(tmp_path, models="gemma", variants="eager", no_merge=True),
                            Scripted(Clock(), all_ms(("gemma",), ("eager",), 7.0)), clock=Clock(),
                            say=lambda m: None)
    assert [r["ms"] for r in res3["rows"]] == [7.0, 7.0] and len(res3["runs"]) == 1


def test_compile_only_fills_the_cache_within_the_budget_and_writes_no_rows(tmp_path):
    from model_bench.run import precompile
    clock = Clock()
    needs = {"aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "torch_compile"}
    be = Scripted(clock, {}, needs=needs, compile_cost=100.0, fail_setup={("pi05", "aotirt_aten")})
    args = args_for(tmp_path, models="pi05", budget_s=205, compile_only=True,
                    variants="eager,aotirt_triton,aotirt_aten,aotirt_aten_triton,torch_compile")
    res = precompile(args, be, clock=clock, say=lambda m: None)
    by = {d["variant"]: d for d in res["compiled"]}
    assert by["eager"]["cached"] and by["aotirt_triton"]["compile_s"] == 100.0
    assert by["aotirt_aten"]["error"] == "compile failed: RuntimeError: compile exploded"  # recorded, the run goes on
    assert by["aotirt_aten_triton"]["error"] == "skipped: time budget" and not res["complete"]
    assert be.setups == [("pi05", "aotirt_triton"), ("pi05", "aotirt_aten")] and be.released == ["pi05"]
    assert not os.path.exists(tmp_path / "res" / "models.json")  # measures nothing, touches no results
    # A model that cannot be built is recorded and the next one still compiles.
    be2 = Scripted(Clock(), {}, needs={"aotirt_aten"}, fail_prepare={"siglip"})
    res2 = precompile(args_for(tmp_path, models="siglip,gemma", variants="aotirt_aten", compile_only=True), be2,
                      clock=be2.clock, say=lambda m: None)
    assert res2["compiled"][0] == {"model": "siglip", "variant": None,
                                   "error": "model setup failed: RuntimeError: cannot build siglip"}
    assert res2["compiled"][1]["model"] == "gemma" and "compile_s" in res2["compiled"][1] and not res2["complete"]
    # Through main(): a CPU device cannot compile; the run says so and exits 1 without results.
    assert bm.main(["--out", str(tmp_path / "res"), "--device", "cpu", "--tiny", "--models", "gemma",
                    "--variants", "eager,aotirt_aten", "--compile-only", "--cache-dir", str(tmp_path / "c")]) == 1
    assert not os.path.exists(tmp_path / "res" / "models.json")


def test_out_of_time_before_a_model_skips_it(tmp_path):
    clock = Clock()
    clock.t = 0.0
    be = Scripted(clock, all_ms(bm.MODELS, ("eager",)))

    def prepare(name):
        clock.t += 600.0  # the first model eats the budget
        return argparse.Namespace(name=name)
    be.prepare = prepare
    res = bm.run_benchmark(args_for(tmp_path, variants="eager"), be, clock=clock, say=lambda m: None)
    assert [r["model"] for r in res["rows"] if r.get("skipped")] == ["siglip", "siglip", "gemma", "gemma",
                                                                       "pi05", "pi05"]


# -------------------------------------------------------------------------------------------- targets, report

def rows_of(table):
    return [{"model": m, "variant": v, "graphs": g, "ms": ms, **extra} for (m, v, g, ms, *rest) in table
            for extra in [rest[0] if rest else {}]]


def test_targets():
    rows = rows_of([
        ("siglip", "torch_compile", False, 1.0),
        ("siglip", "aotirt_triton", False, 1.01), ("siglip", "aotirt_triton", True, 0.8),
        ("siglip", "aotirt_aten_triton", False, 0.9), ("siglip", "aotirt_aten_triton", True, 0.75),
        ("siglip", "aotirt_aten", False, 0.95), ("siglip", "aotirt_aten", True, 0.76),
        ("siglip", "aotirt_auto", False, 0.905, {"auto_choice": "ATEN,TRITON"}),
        ("siglip", "aotirt_auto", True, 0.76, {"auto_choice": "ATEN,TRITON"}),
        ("gemma", "torch_compile", False, 0.5), ("gemma", "aotirt_triton", False, 0.6),
        ("gemma", "aotirt_triton", True, 0.3),
    ])
    t = {(x["target"].split(" ")[0], x["model"], x["graphs"], x["detail"].split(":")[0]): x for x in bm.targets(rows)}
    rt = t[("aotirt", "siglip", False, "aotirt_triton / torch_compile (TRITON)")]
    assert rt["value"] == pytest.approx(1.01) and rt["met"] is True
    assert t[("aotirt", "gemma", False, "aotirt_triton / torch_compile (TRITON)")]["met"] is False
    g = t[("graphs", "gemma", True, "aotirt_triton")]
    assert g["value"] == pytest.approx(0.5) and g["met"] is True
    a = t[("AUTO", "siglip", True, "fastest fixed")]
    assert a["value"] == pytest.approx(0.76 / 0.75) and a["met"] is False
    assert "aotirt_auto chose ATEN,TRITON (the fastest)" in a["detail"]  # right choice, its own row timed 1.3% slower
    assert "chose ATEN,TRITON (the fastest)" in t[("AUTO", "siglip", False, "fastest fixed")]["detail"]
    assert t[("AUTO", "siglip", False, "fastest fixed")]["value"] == pytest.approx(0.905 / 0.9)
    assert t[("AUTO", "siglip", False, "fastest fixed")]["met"] is True
    s = t[("ATEN,TRITON", "siglip", False, "speedup = 1 - aten_triton / triton")]
    assert s["value"] == pytest.approx(1 - 0.9 / 1.01) and s["met"] is True
    s2 = t[("ATEN,TRITON", "siglip", True, "speedup = 1 - aten_triton / triton")]
    assert s2["value"] == pytest.approx(1 - 0.75 / 0.8) and s2["met"] is False
    # Without graphs, the AUTO that timed without graphs is the one judged when it was measured.
    rows2 = rows + rows_of([("siglip", "aotirt_auto_eager", False, 0.89, {"auto_choice": "ATEN,TRITON"})])
    e = {(x["target"].split(" ")[0], x["model"], x["graphs"]): x for x in bm.targets(rows2)}[("AUTO", "siglip", False)]
    assert e["value"] == pytest.approx(0.89 / 0.9) and e["met"] is True and "aotirt_auto_eager chose" in e["detail"]
    rows3 = rows + rows_of([("gemma", "aotirt_aten", True, 0.2), ("gemma", "aotirt_auto", True, 0.29,
                                                                   {"auto_choice": "TRITON"})])
    w = {(x["target"].split(" ")[0], x["model"], x["graphs"]): x for x in bm.targets(rows3)}[("AUTO", "gemma", True)]
    assert "chose TRITON (not the fastest)" in w["detail"] and w["met"] is False
    # Missing rows give None, never a crash.
    assert all(x["met"] is None for x in bm.targets(rows_of([("pi05", "aotirt_auto", True, None)])))


def test_gemm_delta_counts_one_call():
    from model_bench.cuda import gemm_delta
    before = {"calls": 10, "graph_replays": 4, "graph_captures": 2, "tuned": 1, "graph_evictions": 0, "other": 9}
    after = {"calls": 38, "graph_replays": 30, "graph_captures": 4, "tuned": 1, "graph_evictions": 1, "other": 99}
    assert gemm_delta(before, after) == {"calls": 28, "graph_replays": 26, "graph_captures": 2, "tuned": 0,
                                         "graph_evictions": 1}
    assert gemm_delta(None, after) is None and gemm_delta(before, None) is None  # shims without GEMMs


def test_markdown_and_plot(tmp_path):
    rows = rows_of([("siglip", "torch_compile", False, 1.0), ("siglip", "aotirt_triton", False, 0.5),
                    ("siglip", "aotirt_triton", True, 0.25, {"mean_abs_diff": 2e-3}),
                    ("siglip", "aotirt_auto", False, None, {"error": "setup failed: x|y", "auto_choice": "ATEN"}),
                    ("siglip", "aotirt_aten", False, 0.7, {"gemm_per_call": {"calls": 28, "graph_replays": 20}})])
    res = {"meta": {"gpu": "Fake GPU", "torch": "t", "commit": "abc", "run": "now"}, "rows": rows,
           "targets": bm.targets(rows)}
    md = bm.markdown(res)
    assert "| siglip | aotirt_triton | 0.500 | 0.250 | 0.50 | 0.50x | 2.00e-03 | - |  |" in md
    assert "chose ATEN; no graphs: setup failed: x/y" in md
    assert "| siglip | aotirt_aten | 0.700 | - | - | 0.70x | - | - | GEMM shim calls 28/call, 20 replayed |" in md
    assert "| aotirt <= 1.02 x torch.compile (no graphs) | siglip | off | 0.500 | 1.02 | **met** |" in md
    msg = bm.plot(res, str(tmp_path / "p.png"))
    try:
        import matplotlib  # noqa: F401
        assert os.path.getsize(tmp_path / "p.png") > 0
    except ImportError:
        assert msg.startswith("plot skipped: matplotlib is not importable")


def test_rows_of_different_runs_are_labelled_and_never_meet_a_target_together():
    rows = rows_of([("siglip", "torch_compile", False, 1.0, {"run": "R1"}),
                    ("siglip", "aotirt_triton", False, 0.5, {"run": "R1"}),
                    ("siglip", "aotirt_aten_triton", False, 0.4, {"run": "R2"}),
                    ("siglip", "aotirt_triton", True, 0.3, {"run": "R1"}),
                    ("siglip", "aotirt_aten_triton", True, 0.2, {"run": "R2"})])
    t = {(x["target"].split(" ")[0], x["graphs"]): x for x in bm.targets(rows)}
    assert t[("aotirt", False)]["met"] is True  # both rows from R1
    s = t[("ATEN,TRITON", True)]
    assert s["value"] == pytest.approx(1 - 0.2 / 0.3) and s["met"] is None
    assert "different runs" in s["detail"]
    res = {"meta": {"gpu": "G", "torch": "t", "commit": "c2", "run": "R2"}, "rows": rows, "targets": bm.targets(rows),
           "runs": [{"run": "R1", "commit": "c1"}, {"run": "R2", "commit": "c2"}]}
    md = bm.markdown(res)
    assert "run 1 (R1, commit c1), run 2 (R2, commit c2)" in md
    assert "| siglip | aotirt_aten_triton | 0.400 | 0.200 | 0.50 | 0.40x | - | - | run 2 |" in md


# ------------------------------------------------------------------------------ the real backend, on CPU

def test_real_backend_on_cpu_eager_rows_and_gpu_only_variants_fail_cleanly(tmp_path):
    args = args_for(tmp_path, device="cpu", tiny=True, quick=True, models="gemma,pi05",
                    variants="eager,aotirt_triton,aotirt_auto")
    log = []
    res = bm.run_benchmark(args, bm.CudaBench(args, log.append), say=log.append)
    rows = {(r["model"], r["variant"], r["graphs"]): r for r in res["rows"]}
    for m in ("gemma", "pi05"):
        eager = rows[(m, "eager", False)]
        assert eager["error"] is None and eager["ms"] > 0 and 0 < eager["mean_abs_diff"] < 0.05
        assert eager["timing"] == "back-to-back calls, host clock" and eager["iters"] >= 3
        assert rows[(m, "eager", True)]["error"] == "RuntimeError: CUDA graphs need a CUDA device"
        # aotirt.compile refuses a CPU device; AUTO refuses with the same error for every candidate.
        assert "device='cpu' is not supported" in rows[(m, "aotirt_triton", False)]["error"]
        assert "device='cpu' is not supported" in rows[(m, "aotirt_auto", True)]["error"]
    assert any("gemma:" in line and "params" in line for line in log)
    bm.main(["--out", str(tmp_path / "res"), "--device", "cpu", "--tiny", "--quick", "--models", "siglip",
             "--variants", "eager", "--graphs", "off", "--cache-dir", str(tmp_path / "cache")])
    md = open(tmp_path / "res" / "models.md").read()
    assert "| siglip | eager |" in md and "| gemma | eager |" in md  # merged with the first run's rows
    os.remove(tmp_path / "res" / "models.md")
    assert bm.main(["--out", str(tmp_path / "res"), "--report-only"]) == 0
    assert open(tmp_path / "res" / "models.md").read().count("| eager |") == 3
    assert bm.main(["--out", str(tmp_path / "empty"), "--report-only"]) == 1
