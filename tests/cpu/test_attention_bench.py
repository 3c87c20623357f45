"""benchmarks/attention.py's CPU-side logic: flags, the row list, the summary and the table (the GPU side runs on
the GPU machine)."""
import pytest

import bench_script

_, att = bench_script.load("attention")


def test_cases_skip_what_cannot_run():
    rows = att.cases((128, 8192), ("causal", "additive"), att.VARIANTS)
    assert (128, "additive", "torch_flash", False) not in rows  # flash takes no additive mask
    assert (128, "causal", "torch_flash", True) in rows
    assert (8192, "causal", "torch_compile", False) not in rows and (8192, "causal", "torch_compile", True) in rows
    per = {(t, m) for t, m, _, _ in rows}
    assert per == {(128, "causal"), (128, "additive"), (8192, "causal"), (8192, "additive")}
    assert len(rows) == 2 * (2 * 5 + 1) + 2 * (2 * 4 + 1)  # 6 variants, 5 without flash where masks are additive


def test_flags_parse_and_refuse():
    a = att.parse_args(["--seq", "128,2048", "--masks", "causal", "--variants", "ours_cudnn,torch_cudnn",
                        "--iters", "5"])
    assert a.seq == (128, 2048) and a.masks == ("causal",) and a.variants == ("ours_cudnn", "torch_cudnn")
    assert a.iters == 5
    with pytest.raises(SystemExit):
        att.parse_args(["--variants", "ours_flex"])
    with pytest.raises(SystemExit):
        att.parse_args(["--seq", "0"])


def test_summary_compares_with_the_fastest_peer_with_graphs():
    rows = [
        dict(T=8192, mask="causal", variant="ours_cudnn", graphs=True, ms=1.05),
        dict(T=8192, mask="causal", variant="ours_math", graphs=True, ms=4.0),
        dict(T=8192, mask="causal", variant="ours_cudnn", graphs=False, ms=0.5),  # without graphs: not compared
        dict(T=8192, mask="causal", variant="torch_cudnn", graphs=True, ms=1.0),
        dict(T=8192, mask="causal", variant="torch_compile", graphs=True, ms=1.2),
        dict(T=8192, mask="causal", variant="torch_flash", graphs=True, ms=None, error="x"),
    ]
    s = att.summarize(rows)["T=8192,causal"]
    assert s["ours_best"] == "ours_cudnn" and s["peer_best"] == "torch_cudnn"
    assert s["ratio"] == pytest.approx(1.05) and s["cudnn_vs_torch_cudnn"] == pytest.approx(1.05)
    table = att.markdown(rows)
    assert "| 8192 | causal | torch_flash | True | - (x) |" in table


def test_summary_gives_the_back_to_back_ratio_where_rows_have_it():
    rows = [dict(T=1024, mask="causal", variant="ours_cudnn", graphs=True, ms=0.2, ms_pipelined=0.05),
            dict(T=1024, mask="causal", variant="torch_cudnn", graphs=True, ms=0.04, ms_pipelined=0.04)]
    s = att.summarize(rows)["T=1024,causal"]
    assert s["ratio"] == pytest.approx(5.0) and s["pipelined_ratio"] == pytest.approx(1.25)
    assert "| 1024 | causal | ours_cudnn | True | 0.200 | 0.050 |" in att.markdown(rows)
    assert "pipelined_ratio" not in att.summarize([dict(r, ms_pipelined=None) for r in rows])["T=1024,causal"]
