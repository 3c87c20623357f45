"""The zoo harness (benchmarks/zoo.py, issue 14) without a GPU: the registry (>= 40 models, unique names, a source and
an input factory each), --list, the flags, model selection, the stage bookkeeping and the missing-shim ranking on
fake results, the Markdown table, a builder that raises (recorded as skipped, with the reason), the tolerance check,
the child-process runner against fake children (one hangs, one dies), the clear refusal where there is no GPU, and a
REAL CPU run of the build/export stages on hand-made patterns (and torchvision's squeezenet where torchvision is
installed) with aotirt.compile replaced by a fake that refuses with the real UnsupportedShimError (or succeeds)."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import bench_script


SCRIPT, zoo = bench_script.load("zoo")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.update(extra)
    return env


def _entry(name="pat_fake", source="pattern", build=None, inputs=None, **kw):
    return zoo.Entry(name, source, build or (lambda torch: torch.nn.Identity()),
                     inputs or (lambda torch: (torch.ones(2),)), "x [2]", **kw)


# ------------------------------------------------------------------------------------------------------ registry

def test_registry_has_40_unique_models_each_with_a_source_and_inputs():
    reg = zoo.REGISTRY
    names = [e.name for e in reg]
    assert len(reg) >= 40
    assert len(set(names)) == len(names), [n for n in names if names.count(n) > 1]
    sources = {e.source for e in reg}
    assert sources == {"torchvision", "timm", "transformers", "pattern"}
    for e in reg:
        assert e.name and "@" not in e.name and "," not in e.name
        assert callable(e.build) and callable(e.inputs) and e.shape, e.name
    by = zoo.by_name()
    for must in ("resnet18", "resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny", "vit_b_16",
                 "swin_t", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet0_5", "fcn_resnet50",
                 "timm_vit_tiny", "timm_convnext_atto", "timm_mobilevit_xxs", "hf_bert", "hf_gpt2", "hf_llama",
                 "hf_qwen3", "hf_t5_encoder", "hf_whisper_encoder", "hf_clip_vision", "hf_siglip_vision", "hf_vit",
                 "hf_vit_mae", "hf_distilbert", "hf_roberta", "pat_topk_sampling", "pat_scatter_gather",
                 "pat_embedding_bag", "pat_masked_fill", "pat_sort", "pat_argsort", "pat_cumsum", "pat_index_put"):
        assert must in by, must
    assert len(zoo.QUICK) == 5 and set(zoo.QUICK) <= set(names)
    assert sum(e.source == "timm" for e in reg) >= 5 and sum(e.source == "transformers" for e in reg) >= 10


def test_input_factories_are_seeded_tensors():
    import torch
    for e in zoo.REGISTRY:
        a, b = e.inputs(torch), e.inputs(torch)
        assert isinstance(a, tuple) and a, e.name
        for x, y in zip(a, b):
            assert isinstance(x, torch.Tensor) and torch.equal(x, y), e.name
        assert all(x.shape[0] <= 4 or x.dim() <= 2 for x in a), e.name


def test_importing_and_listing_never_imports_torch():
    code = (f"import importlib.util, sys; s = importlib.util.spec_from_file_location('z', {SCRIPT!r}); "
            f"m = importlib.util.module_from_spec(s); s.loader.exec_module(m); m.parse_args([]); "
            f"m.main(['--list']); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_list_prints_the_zoo_and_exits_0():
    out = subprocess.run([sys.executable, SCRIPT, "--list"], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{len(zoo.REGISTRY)} models")
    for e in zoo.REGISTRY:
        assert f"  {e.name} " in out.stdout
    out = subprocess.run([sys.executable, SCRIPT, "--list", "--models", "pat_sort,timm"], capture_output=True,
                         text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{1 + sum(e.source == 'timm' for e in zoo.REGISTRY)} models")
    assert "pat_sort" in out.stdout and "pat_argsort" not in out.stdout and "hf_bert" not in out.stdout


def test_list_in_process(capsys):
    assert zoo.main(["--list", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("5 models") and all(n in out for n in zoo.QUICK)


# ------------------------------------------------------------------------------------------------------ flags

def test_defaults_and_flags():
    a = zoo.parse_args([])
    assert a.out.endswith(os.path.join("benchmarks", "results", "zoo.json"))
    assert (a.models, a.list, a.workers, a.timeout_s, a.quick, a.dtype, a.replays, a.export_only, a.budget_s) == \
        ((), False, 4, 240.0, False, "fp32", 30, False, 0.0)
    a = zoo.parse_args(["--out", "/tmp/o", "--models", "hf_, resnet18,hf_", "--list", "--workers", "2",
                        "--timeout-s", "60", "--quick", "--dtype", "both", "--replays", "12", "--export-only",
                        "--budget-s", "540", "--work", "/tmp/w"])
    assert (a.out, a.models, a.list, a.workers, a.timeout_s, a.quick, a.dtype, a.replays, a.export_only,
            a.budget_s, a.work) == ("/tmp/o", ("hf_", "resnet18"), True, 2, 60.0, True, "both", 12, True, 540.0,
                                    "/tmp/w")
    assert zoo.parse_args(["--dtype", "bf16"]).dtype == "bf16"
    assert a.attention_backend == "DEFAULT" and zoo.parse_args(["--attention_backend", "CUDNN"]).attention_backend == "CUDNN"
    assert zoo.parse_args(["--attention_backend", "CUDNN,TRITON"]).attention_backend == "CUDNN,TRITON"


@pytest.mark.parametrize("argv, why", [(["--workers", "0"], "must be >= 1"), (["--workers", "x"], "not an integer"),
                                       (["--timeout-s", "0"], "must be > 0"), (["--timeout-s", "x"], "not a number"),
                                       (["--dtype", "fp16"], "invalid choice"), (["--budget-s", "-1"], "must be >= 0"),
                                       (["--replays", "0"], "must be >= 1"), (["--bogus"], ""),
                                       (["--attention_backend", "FLASH"], "invalid choice")])
def test_bad_flags_are_usage_errors(argv, why, capsys):
    with pytest.raises(SystemExit) as e:
        zoo.parse_args(argv)
    assert e.value.code == 2
    assert why in capsys.readouterr().err


def test_help_lists_the_flags_but_not_the_internal_ones(capsys):
    with pytest.raises(SystemExit) as e:
        zoo.parse_args(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--out", "--models", "--[no]list", "--workers", "--timeout-s", "--[no]quick", "--dtype",
                 "--[no]export-only", "--budget-s", "--attention_backend"):
        assert flag in out, flag
    assert "--child" not in out and "--keys" not in out


def test_out_paths():
    assert zoo.out_paths("/r/zoo.json") == {"json": "/r/zoo.json", "md": "/r/zoo.md"}
    assert zoo.out_paths("/out") == {"json": "/out/zoo.json", "md": "/out/zoo.md"}  # run.sh passes $OUT


def test_select_by_name_prefix_and_source_and_quick():
    reg = zoo.REGISTRY
    assert zoo.select(reg, (), False) == reg
    assert [e.name for e in zoo.select(reg, ("resnet18",), False)] == ["resnet18"]
    assert {e.source for e in zoo.select(reg, ("hf_",), False)} == {"transformers"}
    assert [e.name for e in zoo.select(reg, ("timm",), False)] == [e.name for e in reg if e.source == "timm"]
    assert [e.name for e in zoo.select(reg, (), True)] == [e.name for e in reg if e.name in zoo.QUICK]
    assert [e.name for e in zoo.select(reg, ("pat_",), True)] == ["pat_topk_sampling", "pat_scatter_gather"]
    # registry order, whatever the order asked
    assert [e.name for e in zoo.select(reg, ("pat_sort", "resnet18"), False)] == ["resnet18", "pat_sort"]
    with pytest.raises(ValueError, match="no model matches"):
        zoo.select(reg, ("resnet18", "nosuchmodel"), False)


def test_unknown_model_is_a_usage_error():
    out = subprocess.run([sys.executable, SCRIPT, "--models", "nosuchmodel", "--export-only"], capture_output=True,
                         text=True, env=_env(), timeout=120)
    assert out.returncode == 2 and "no model matches ['nosuchmodel']" in out.stderr


def test_row_keys_and_the_bf16_subset():
    a, b = _entry("pat_a"), _entry("pat_b", bf16=False)
    assert [k for k, _, _ in zoo.row_keys([a, b], "fp32")] == ["pat_a", "pat_b"]
    assert [(k, d) for k, _, d in zoo.row_keys([a, b], "bf16")] == [("pat_a@bf16", "bf16")]
    assert [k for k, _, _ in zoo.row_keys([a, b], "both")] == ["pat_a", "pat_a@bf16", "pat_b"]
    assert zoo.parse_key("pat_a@bf16") == ("pat_a", "bf16") and zoo.parse_key("pat_a") == ("pat_a", "fp32")


def test_the_default_spec_rows_come_after_the_quick_ones_for_the_default_spec_subset(monkeypatch):
    assert set(zoo.DEFAULT_SPEC) <= set(zoo.by_name()) and "hf_mixtral" in zoo.DEFAULT_SPEC
    monkeypatch.setattr(zoo, "DEFAULT_SPEC", ("pat_a",))
    a, b, c = _entry("pat_a"), _entry("pat_b"), _entry("pat_c", bf16=False)
    assert [k for k, _, _ in zoo.row_keys([a, b, c], "fp32")] == ["pat_a", "pat_b", "pat_c"]  # quick by default
    assert [(k, d) for k, _, d in zoo.row_keys([a, b, c], "both", "default")] == [("pat_a+default", "fp32"),
                                                                                 ("pat_a@bf16+default", "bf16")]
    assert [k for k, _, _ in zoo.row_keys([a, b, c], "bf16", "both")] == ["pat_a@bf16", "pat_b@bf16",
                                                                         "pat_a@bf16+default"]
    for key, want in (("pat_a+default", ("pat_a", "fp32", "default")), ("pat_a@bf16+default", ("pat_a", "bf16", "default")),
                      ("pat_a@bf16", ("pat_a", "bf16", "quick")), ("pat_a", ("pat_a", "fp32", "quick"))):
        assert (*zoo.parse_key(key), zoo.spec_of(key)) == want
    assert zoo.new_record("pat_a@bf16+default", a, "bf16")["spec"] == "default"
    # quick: max_autotune OFF; default: aotirt's defaults (nothing set); the attention flag applies to both
    assert zoo.compile_options("quick") == {"max_autotune": False}
    assert zoo.compile_options("default") == {}
    assert zoo.compile_options("default", "TRITON") == {"attention_backend": "TRITON"}
    assert zoo.parse_args([]).spec == "quick" and zoo.parse_args(["--spec", "both"]).spec == "both"


def test_a_bf16_only_model_has_only_bf16_rows_and_exports_on_the_cpu():
    e = zoo.by_name()["pat_moe_experts"]
    assert not e.fp32 and e.bf16 and "pat_moe_experts" in zoo.DEFAULT_SPEC
    assert [k for k, _, _ in zoo.row_keys([e], "fp32")] == []
    assert [k for k, _, _ in zoo.row_keys([e], "both", "both")] == ["pat_moe_experts@bf16",
                                                                    "pat_moe_experts@bf16+default"]
    assert "(bf16 only)" in zoo.list_text([e])
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("this torch has no _grouped_mm")
    from aotirt import platforms
    model, inputs = zoo.build_entry(torch, e, "bf16", "cpu")
    assert len(set(inputs[1].float().flatten().tolist())) == inputs[1].numel()  # distinct router logits: no ties
    ep = torch.export.export(model, inputs)
    assert platforms.model_features(ep.graph).grouped_mm == (("bfloat16", False), ("bfloat16", False))
    with torch.no_grad():
        assert torch.equal(ep.module()(*inputs), model(*inputs))


def test_lower_one_passes_the_rows_spec_to_aotirt(monkeypatch, tmp_path):
    import aotirt
    seen = []

    def fake(ep, inputs, package_path, options=None):
        seen.append((os.path.basename(package_path), options.max_autotune))
        with open(package_path, "wb") as f:
            f.write(b"fake package")
        return package_path
    monkeypatch.setattr(aotirt, "compile", fake)
    e = zoo.by_name()["pat_mlp"]
    for key in ("pat_mlp", "pat_mlp+default"):
        rec = zoo.lower_one(key, e, "fp32", str(tmp_path), device="cpu")
        assert rec["lowered"] and rec["spec"] == zoo.spec_of(key), rec
    assert seen == [("pat_mlp.pt2", False), ("pat_mlp_default.pt2", True)]
    table = zoo.markdown({"records": [zoo.new_record("pat_mlp+default", e, "fp32")]})
    assert "| pat_mlp+default | pattern | fp32 |" in table


# ------------------------------------------------------------------------------------------------------ bookkeeping

def _fake_records():
    e = _entry
    ok = zoo.new_record("m_ok", e("m_ok"), "fp32")
    ok.update(stage="done", exported=True, lowered=True, ran=True, correct=True, max_abs_err=1e-5, ms_ours=0.5,
              ours_graph=True, ms_eager_graph=1.0, eager_graph=True)
    wrong = zoo.new_record("m_wrong", e("m_wrong"), "fp32")
    wrong.update(stage="done", exported=True, lowered=True, ran=True, correct=False, max_abs_err=0.5, ms_ours=2.0,
                 ms_eager_graph=1.0, ours_graph=False, eager_graph=True)
    skipped = zoo.new_record("m_skip", e("m_skip", source="timm"), "fp32")
    skipped["skipped"] = "ModuleNotFoundError: No module named 'timm'"
    noexp = zoo.fail(zoo.new_record("m_noexp", e("m_noexp"), "fp32"), "export", "UserError: data-dependent | x")
    refused = []
    for name, shims in (("m_r1", ["aoti_torch_cuda_sort", "aoti_torch_cuda_cumsum"]),
                        ("m_r2", ["aoti_torch_cuda_sort"]), ("m_r3", ["aoti_torch_cuda_sort", "aoti_torch_cuda_zz"]),
                        ("m_r4@bf16", ["aoti_torch_cuda_cumsum"])):
        r = zoo.new_record(name, e(name.split("@")[0]), "bf16" if "@" in name else "fp32")
        r.update(exported=True, refused_missing_shims=sorted(shims))
        zoo.fail(r, "lower", f"refused: missing shims [{', '.join(sorted(shims))}]")
        refused.append(r)
    lowerr = zoo.fail(zoo.new_record("m_lowerr", e("m_lowerr"), "fp32"), "lower", "LoweringError: boom")
    lowerr["exported"] = True
    runerr = zoo.fail(zoo.new_record("m_runerr", e("m_runerr"), "fp32"), "run", "RunError: bad")
    runerr.update(exported=True, lowered=True)
    return [ok, wrong, skipped, noexp, *refused, lowerr, runerr]


def test_summary_counts_each_stage_and_ranks_missing_shims():
    s = zoo.summarize(_fake_records())
    assert s["counts"] == {"models": 10, "skipped": 1, "built": 9, "exported": 8, "export_failed": 1, "lowered": 3,
                           "refused": 4, "lower_failed": 1, "ran": 2, "correct": 1, "wrong": 1, "timed": 2}
    assert [(x["shim"], x["models"]) for x in s["missing_shims"]] == [
        ("aoti_torch_cuda_sort", 3), ("aoti_torch_cuda_cumsum", 2), ("aoti_torch_cuda_zz", 1)]
    assert s["missing_shims"][1]["which"] == ["m_r1", "m_r4@bf16"]
    assert s["geomean_ours_over_eager_graph"] == pytest.approx(0.5)  # the correct ones only
    assert zoo.summarize([])["counts"]["models"] == 0


def test_status_words():
    st = {r["key"]: zoo.status(r) for r in _fake_records()}
    assert st["m_ok"] == "ok" and st["m_wrong"] == "wrong" and st["m_skip"] == "skipped"
    assert st["m_noexp"] == "export failed" and st["m_r1"] == "refused" and st["m_lowerr"] == "lower failed"
    assert st["m_runerr"] == "run failed"


def test_markdown_table():
    recs = _fake_records()
    md = zoo.markdown({"machine": {"gpu": "NVIDIA H200"}, "torch": "2.13", "commit": "abc1234", "replays": 30,
                       "records": recs, "summary": zoo.summarize(recs)})
    lines = md.splitlines()
    assert lines[0].startswith("Zoo (`benchmarks/zoo.py`), NVIDIA H200, torch 2.13") and "`abc1234`" in lines[0]
    assert lines[2].startswith("**10 rows**: 1 skipped, 8 exported, 3 lowered, 4 refused")
    assert "geomean ours / eager CUDA graph over the correct ones: 0.50×" in lines[2]
    header = next(i for i, ln in enumerate(lines) if ln.startswith("| model |"))
    assert lines[header + 1].startswith("|---|")
    rows = lines[header + 2: header + 2 + len(recs)]
    assert all(r.count("|") == lines[header].count("|") for r in rows)  # '|' in an error is escaped
    ok = next(r for r in rows if r.startswith("| m_ok |"))
    assert "| ok | ✓ | ✓ | ✓ | ✓ | 1.00e-05 | 0.500 | 1.000 | 0.50× |" in ok
    assert "skipped: ModuleNotFoundError" in next(r for r in rows if r.startswith("| m_skip |"))
    assert "refused: missing shims [aoti_torch_cuda_cumsum, aoti_torch_cuda_sort]" in \
        next(r for r in rows if r.startswith("| m_r1 |"))
    assert "ours: no CUDA graph" in next(r for r in rows if r.startswith("| m_wrong |"))
    assert "export: UserError: data-dependent / x" in next(r for r in rows if r.startswith("| m_noexp |"))
    assert "| `aoti_torch_cuda_sort` | 3 | m_r1, m_r2, m_r3 |" in md
    md2 = zoo.markdown({"records": recs[:2], "export_only": True})
    assert "--export-only" in md2 and "(none: no model was refused for missing shims)" in md2


def test_compare_at_per_dtype_tolerances():
    import torch
    r = torch.linspace(-1, 1, 100)
    assert zoo.compare(torch, [r + 1e-4], [r], "fp32")[:2] == (True, pytest.approx(1e-4, rel=1e-3))
    ok, err, why = zoo.compare(torch, [r + 1e-2], [r], "fp32")
    assert not ok and "max abs err" in why
    assert zoo.compare(torch, [r + 1e-2], [r], "bf16")[0]
    assert zoo.compare(torch, [r + 1e-2], [r], "fp32", tol=(2e-2, 0.0))[0]
    i = torch.arange(10)
    assert zoo.compare(torch, [i.clone()], [i], "fp32")[0]
    ok, _, why = zoo.compare(torch, [i.flip(0)], [i], "fp32")
    assert not ok and "integer values differ" in why
    ok, _, why = zoo.compare(torch, [r[:10]], [r], "fp32")
    assert not ok and "shape" in why
    assert not zoo.compare(torch, [r], [r, r], "fp32")[0]
    inf = torch.tensor([float("-inf"), 1.0])
    assert zoo.compare(torch, [inf.clone()], [inf], "fp32")[0]
    assert not zoo.compare(torch, [torch.tensor([0.0, 1.0])], [inf], "fp32")[0]


# ------------------------------------------------------------------------------------------------------ stages (CPU)

def test_a_builder_that_raises_is_skipped_with_the_reason(tmp_path):
    def boom(torch):
        raise ImportError("No module named 'timm'")

    def bad_config(torch):
        raise ValueError("this config needs a newer library")

    rec = zoo.lower_one("timm_x", _entry("timm_x", "timm", build=boom), "fp32", str(tmp_path), device="cpu")
    assert rec["skipped"] == "ImportError: No module named 'timm'"
    assert rec["exported"] is False and rec["lowered"] is False and zoo.status(rec) == "skipped"
    rec = zoo.lower_one("hf_x", _entry("hf_x", "transformers", build=bad_config), "fp32", str(tmp_path),
                        device="cpu")
    assert rec["skipped"].startswith("ValueError: this config")
    assert zoo.summarize([rec])["counts"]["skipped"] == 1


def test_an_export_failure_is_recorded(tmp_path):
    def build(torch):
        class DataDependent(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:  # data-dependent control flow: torch.export cannot guard on it
                    return x * 2
                return x
        return DataDependent()
    rec = zoo.lower_one("pat_dd", _entry("pat_dd", build=build, inputs=lambda t: (t.randn(8),)), "fp32",
                        str(tmp_path), device="cpu", compile_fn=lambda *a: pytest.fail("compiled after a failure"))
    assert not rec["exported"] and rec["error_stage"] == "export" and rec["error"] and zoo.status(rec) == "export failed"


def _real_cpu_list():
    names = ["pat_topk_sampling", "pat_scatter_gather", "pat_small_cnn"]
    try:
        import torchvision  # noqa: F401
        names.append("squeezenet1_1")
    except Exception:  # noqa: BLE001 (not installed here: the hand-made patterns still run)
        pass
    return names


def test_real_cpu_export_with_a_fake_compile_refusing_or_succeeding(tmp_path):
    """The real build and export stages on the CPU; compile is a fake that raises the real UnsupportedShimError
    (its .shims: all missing, sorted) for one model and writes a package for the others."""
    from aotirt.errors import UnsupportedShimError
    calls = []

    def fake_compile(ep, inputs, package_path):
        import torch
        assert isinstance(ep, torch.export.ExportedProgram)
        calls.append(os.path.basename(package_path))
        if "topk" in package_path:
            raise UnsupportedShimError("model would call 2 shim(s) the linux_cuda shim library does not export",
                                       ["aoti_torch_cuda_topk", "aoti_torch_cuda_gather"])
        with open(package_path, "wb") as f:
            f.write(b"fake package")
        return package_path

    by = zoo.by_name()
    recs, seen = [], []
    for name in _real_cpu_list():
        recs.append(zoo.lower_one(name, by[name], "fp32", str(tmp_path), device="cpu", compile_fn=fake_compile,
                                  progress=lambda r: seen.append((r["key"], r["stage"]))))
    r = {x["key"]: x for x in recs}
    top = r["pat_topk_sampling"]
    assert top["exported"] and not top["lowered"]
    assert top["refused_missing_shims"] == ["aoti_torch_cuda_gather", "aoti_torch_cuda_topk"]
    assert top["error"] == "refused: missing shims [aoti_torch_cuda_gather, aoti_torch_cuda_topk]"
    assert zoo.status(top) == "refused"
    for name in _real_cpu_list()[1:]:
        assert r[name]["exported"] and r[name]["lowered"] and not r[name]["error"], r[name]
        assert os.path.isfile(r[name]["package"]) and r[name]["export_s"] is not None
    assert calls == [f"{n}.pt2" for n in _real_cpu_list()]
    assert ("pat_small_cnn", "export") in seen and ("pat_small_cnn", "lower") in seen
    s = zoo.summarize(recs)
    assert s["counts"]["refused"] == 1 and s["counts"]["lowered"] == len(recs) - 1
    assert [x["shim"] for x in s["missing_shims"]] == ["aoti_torch_cuda_gather", "aoti_torch_cuda_topk"]
    # a compile failure that is not a refusal is a lowering error
    rec = zoo.lower_one("pat_mlp", by["pat_mlp"], "fp32", str(tmp_path), device="cpu",
                        compile_fn=lambda *a: (_ for _ in ()).throw(RuntimeError("nvcc exploded")))
    assert rec["error_stage"] == "lower" and rec["error"] == "RuntimeError: nvcc exploded"
    assert not rec["refused_missing_shims"] and zoo.status(rec) == "lower failed"


def test_real_cpu_export_in_bf16(tmp_path):
    rec = zoo.lower_one("pat_mlp@bf16", zoo.by_name()["pat_mlp"], "bf16", str(tmp_path), device="cpu",
                        export_only=True)
    assert rec["exported"] and rec["dtype"] == "bf16" and rec["export_matches_eager"] is True


def test_export_only_run_through_child_processes(tmp_path):
    out = tmp_path / "res" / "zoo.json"
    p = subprocess.run([sys.executable, SCRIPT, "--export-only", "--models", "pat_sort,pat_cumsum,pat_masked_fill",
                        "--workers", "2", "--out", str(out)], capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["export_only"] is True and [r["key"] for r in res["records"]] == ["pat_masked_fill", "pat_sort",
                                                                                 "pat_cumsum"]
    for r in res["records"]:
        assert r["exported"] and not r["lowered"] and r["export_matches_eager"] is True, r
    assert res["summary"]["counts"]["exported"] == 3
    md = (tmp_path / "res" / "zoo.md").read_text()
    assert "| pat_sort | pattern | fp32 | exported | ✓ |" in md


def test_no_gpu_exits_1_with_a_clear_message(tmp_path):
    p = subprocess.run([sys.executable, SCRIPT, "--models", "pat_sort", "--out", str(tmp_path / "z.json")],
                       capture_output=True, text=True, env=_env(CUDA_VISIBLE_DEVICES=""), timeout=120)
    assert p.returncode == 1
    assert "zoo: no GPU here" in p.stderr and "--export-only" in p.stderr and "run.sh zoo" in p.stderr
    assert not (tmp_path / "z.json").exists()


# ------------------------------------------------------------------------------------------------------ isolation

FAKE_CHILD = textwrap.dedent("""
    import json, os, sys, time
    keys = sys.argv[1].split(",")
    for k in keys:
        print("start: " + json.dumps(k), flush=True)
        rec = {"key": k, "name": k, "stage": "lower", "exported": True, "lowered": False, "error": ""}
        print("progress: " + json.dumps(rec), flush=True)
        print("some other output", flush=True)
        if k == "hang":
            time.sleep(60)
        if k == "crash":
            print("Fatal Python error: Segmentation fault", file=sys.stderr, flush=True)
            os._exit(3)
        rec.update(stage="lowered", lowered=True)
        print("done: " + json.dumps(rec), flush=True)
""")


def test_a_hang_or_a_crash_ends_only_that_model(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD)
    starts = []

    def cmd(keys):
        starts.append(list(keys))
        return [sys.executable, str(child), ",".join(keys)]

    def base(k):
        return {"key": k, "name": k, "stage": "build", "error": ""}
    t0 = time.monotonic()
    res = zoo.run_children(cmd, ["a", "hang", "b", "crash", "c"], 3.0, base)
    assert time.monotonic() - t0 < 40
    assert list(res) == ["a", "hang", "b", "crash", "c"]
    for k in ("a", "b", "c"):
        assert res[k]["lowered"] and not res[k]["error"]
    assert res["hang"]["error"] == "timed out after 3 s in stage lower" and res["hang"]["error_stage"] == "lower"
    assert res["hang"]["exported"] is True  # the last record the child reported
    assert res["crash"]["error"].startswith("child process died (exit 3) in stage lower: Fatal Python error")
    assert starts == [["a", "hang", "b", "crash", "c"], ["b", "crash", "c"], ["c"]]


def test_a_child_that_dies_before_any_model_fails_them_all(tmp_path):
    res = zoo.run_children(lambda ks: [sys.executable, "-c", "import sys; sys.exit('cannot import torch')"],
                           ["a", "b"], 5.0, lambda k: {"key": k, "stage": "build", "error": ""})
    assert [r["error_stage"] for r in res.values()] == ["harness", "harness"]
    assert "cannot import torch" in res["a"]["error"]


def test_budget_ends_the_rest(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD)
    res = zoo.run_children(lambda ks: [sys.executable, str(child), ",".join(ks)], ["a", "hang", "b"], 30.0,
                           lambda k: {"key": k, "stage": "build", "error": ""}, stop_at=time.monotonic() + 4)
    assert res["a"]["lowered"]
    assert res["hang"]["error"] == "not finished: --budget-s reached in stage lower"
    assert res["b"]["error"] == "not run: --budget-s reached" and res["b"]["error_stage"] == "budget"


def test_merge_of_split_runs(tmp_path, capsys):
    recs = _fake_records()
    a = {"benchmark": "zoo", "records": recs[:4], "elapsed_s": {"total": 100.0}, "export_only": False,
         "commit": "aaaaaaa1111"}
    later_ok = dict(recs[3], error="", error_stage="", exported=True, stage="exported")
    b = {"benchmark": "zoo", "records": [later_ok, *recs[4:]], "elapsed_s": {"total": 50.0}, "export_only": False,
         "commit": "bbbbbbb2222"}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    out = tmp_path / "m" / "zoo.json"
    assert zoo.main(["--merge", f"{tmp_path / 'a.json'},{tmp_path / 'b.json'}", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [r["key"] for r in res["records"]] == sorted(r["key"] for r in recs)  # fake names: by name
    assert next(r for r in res["records"] if r["key"] == "m_noexp")["exported"] is True  # the later file won
    assert res["summary"]["counts"]["models"] == len(recs) and res["elapsed_s"]["total"] == 150.0
    md = (tmp_path / "m" / "zoo.md").read_text()
    assert md.startswith("Zoo (")
    # every row keeps the commit it ran at; the table names it where it is not the header's (the last file's)
    by_key = {r["key"]: r for r in res["records"]}
    assert by_key[recs[0]["key"]]["commit"] == "aaaaaaa1111" and by_key["m_noexp"]["commit"] == "bbbbbbb2222"
    assert md.count("from commit aaaaaaa") == 3 and "from commit bbbbbbb" not in md
    capsys.readouterr()
    assert zoo.main(["--merge", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    assert "zoo: --merge:" in capsys.readouterr().err


def test_run_stage_bookkeeping_on_the_cpu_with_a_fake_runtime(tmp_path):
    """run_one's compare/time bookkeeping with the exported program as the 'package' runner (CPU, host clock)."""
    import torch
    import aotirt
    by = zoo.by_name()
    rec = zoo.lower_one("pat_mlp", by["pat_mlp"], "fp32", str(tmp_path), device="cpu",
                        compile_fn=lambda ep, inputs, pkg: pkg)
    assert rec["lowered"]
    programs = {}

    class FakeRunner:
        def __init__(self, fn):
            self.fn = fn

        def run_list(self, inputs, output=None):
            return zoo.flat_tensors(torch, self.fn(*inputs))

    def load(pkg):
        model, inputs = zoo.build_entry(torch, by["pat_mlp"], "fp32", "cpu")
        programs[pkg] = torch.export.export(model, inputs).module()
        return FakeRunner(programs[pkg])

    def no_capture(runner, *inputs):
        raise aotirt.RunError("capturing failed: fake")

    out = zoo.run_one(dict(rec), by["pat_mlp"], 5, device="cpu", load=load, capture=no_capture)
    assert out["ran"] and out["correct"] is True and out["max_abs_err"] == 0.0 and out["stage"] == "done"
    assert out["ours_graph"] is False and "fake" in out["ours_graph_error"] and out["ms_ours"] > 0
    assert out["eager_graph"] is False and out["ms_eager_graph"] == out["ms_eager"] > 0
    assert out["tol"] == list(zoo.TOL["fp32"]) and not out["error"]

    def wrong_load(pkg):
        return FakeRunner(lambda x: by["pat_mlp"].build(torch)(x) + 1.0)
    out = zoo.run_one(dict(rec), by["pat_mlp"], 3, device="cpu", load=wrong_load,
                      capture=lambda r, *i: FakeRunner(r.fn))
    assert out["ran"] and out["correct"] is False and out["max_abs_err"] == pytest.approx(1.0, rel=1e-4)
    assert out["ours_graph"] is True and zoo.status(out) == "wrong" and "max abs err" in out["mismatch"]

    def broken_load(pkg):
        raise aotirt.RuntimeLoadError("cannot load package: fake")
    out = zoo.run_one(dict(rec), by["pat_mlp"], 3, device="cpu", load=broken_load)
    assert not out["ran"] and out["error_stage"] == "run" and "RuntimeLoadError" in out["error"]
    assert zoo.status(out) == "run failed"


# ------------------------------------------------------------------------------------------------------ run.sh zoo

def test_run_sh_zoo_suite_calls_the_harness_with_out_and_budget(tmp_path):
    """tools/gpu/run.sh zoo (beside benchmarks/ in the checkout) with a fake python: the command line and the step."""
    import shutil
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(SCRIPT))), "tools", "gpu", "run.sh")
    root = tmp_path / "checkout"
    (root / "tools" / "gpu").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    shutil.copy(src, root / "tools" / "gpu" / "run.sh")
    log = tmp_path / "args.txt"
    fake = tmp_path / "python"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$@" >> {log}
        out=""; prev=""
        for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; prev="$a"; done
        printf '| model | source |\\n|---|---|\\n| resnet18 | torchvision | x |\\n| pat_sort | pattern | x |\\n' \\
            > "${{out%.json}}.md"
        echo "| pat_sort | pattern | table row on stdout |"
        echo "[zoo] wrote it"
        exit ${{FAKE_RC:-0}}
        """))
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AOTIRT_", "ZOO_"))}
    (tmp_path / "bundle").mkdir()  # run.sh refuses a missing bundle; the fake python needs none of it
    env.update(OUT=str(out), PYTHON=str(fake), AOTIRT_BUNDLE_DIR=str(tmp_path / "bundle"),
               ZOO_ARGS="--quick --dtype both")
    r = subprocess.run(["bash", str(root / "tools" / "gpu" / "run.sh"), "zoo"], cwd=str(root), env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert log.read_text().split() == ["benchmarks/zoo.py", "--out", f"{out}/zoo.json", "--budget-s", "540",
                                       "--quick", "--dtype", "both"]
    summary = (out / "summary.txt").read_text()
    assert "zoo: rc 0 (2 table rows in zoo.md)" in summary and "run.sh: ok (zoo)" in summary
    assert "table row on stdout" not in r.stdout and "[zoo] wrote it" in r.stdout  # the table is in zoo.md
    env.update(FAKE_RC="1", ZOO_BUDGET_S="100", ZOO_ARGS="")
    r = subprocess.run(["bash", str(root / "tools" / "gpu" / "run.sh"), "zoo"], cwd=str(root), env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "zoo: FAILED (exit 1)" in r.stdout and "run.sh: FAILED (zoo)" in r.stdout
    assert log.read_text().splitlines()[-1].split()[-2:] == ["--budget-s", "100"]
