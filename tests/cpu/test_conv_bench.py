"""benchmarks/conv.py's CPU-side logic: flags, the row list, the summary and the table (the GPU side runs on the GPU
machine)."""
import pytest

import bench_script

_, conv = bench_script.load("conv")


def test_layers_are_valid_convolutions_of_the_shapes_they_name():
    import torch
    for name, (cin, cout, k, s, p, g, transposed, spatial) in conv.LAYERS.items():
        m = conv._module(torch, name)
        y = m(torch.randn(1, cin, spatial, spatial))
        if name == "convT_up2":
            assert transposed and y.shape[-1] == 2 * spatial
        elif "_s2" in name or name == "r50_stem":
            assert y.shape[-1] == spatial // 2
        else:
            assert y.shape[-1] == spatial
        assert y.shape[1] == cout and m.groups == g and m.bias is not None


def test_cases_skip_what_cannot_run():
    rows = conv.cases(("r50_3x3_56", "convT_up2"), conv.VARIANTS)
    assert ("convT_up2", "ours_triton", False) not in rows  # Triton conv templates take no transposed convolution
    assert ("convT_up2", "ours_aten_triton", True) in rows and ("convT_up2", "ours_cudnn", False) in rows
    assert ("r50_3x3_56", "torch_compile", False) not in rows and ("r50_3x3_56", "torch_compile", True) in rows
    assert len(rows) == (4 * 2 + 1) + (3 * 2 + 1)


def test_flags_parse_and_refuse():
    a = conv.parse_args(["--layers", "r50_stem,dw_3x3_56", "--variants", "ours_cudnn,torch_cudnn", "--batch", "8",
                         "--dtype", "fp32", "--iters", "5", "--profile"])
    assert a.layers == ("r50_stem", "dw_3x3_56") and a.variants == ("ours_cudnn", "torch_cudnn")
    assert (a.batch, a.dtype, a.iters, a.profile) == (8, "fp32", 5, True)
    d = conv.parse_args([])
    assert d.layers == tuple(conv.LAYERS) and d.variants == conv.VARIANTS and (d.batch, d.dtype) == (16, "bf16")
    for bad in (["--layers", "r50_9x9"], ["--variants", "ours_cutlass"], ["--batch", "0"], ["--dtype", "fp16"]):
        with pytest.raises(SystemExit):
            conv.parse_args(bad)


def test_summary_and_table():
    rows = [dict(layer="r50_3x3_56", variant="ours_cudnn", graphs=True, ms=0.10, ms_pipelined=0.06),
            dict(layer="r50_3x3_56", variant="ours_triton", graphs=True, ms=0.12, ms_pipelined=0.05),
            dict(layer="r50_3x3_56", variant="ours_cudnn", graphs=False, ms=0.01),  # without graphs: not compared
            dict(layer="r50_3x3_56", variant="torch_cudnn", graphs=True, ms=0.08, ms_pipelined=0.05),
            dict(layer="r50_3x3_56", variant="torch_compile", graphs=True, ms=None, error="boom")]
    s = conv.summarize(rows)["r50_3x3_56"]
    assert (s["ours_best"], s["peer_best"]) == ("ours_cudnn", "torch_cudnn")
    assert s["ratio"] == pytest.approx(1.25) and s["pipelined_ratio"] == pytest.approx(1.0)
    table = conv.markdown(rows)
    assert "| r50_3x3_56 | ours_cudnn | True | 0.100 | 0.060 | - | - |" in table
    assert "| r50_3x3_56 | torch_compile | True | - (boom) | - | - | - |" in table
