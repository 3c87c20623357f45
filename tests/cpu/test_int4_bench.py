"""benchmarks/int4.py's CPU-side logic: flags, the summary and the table (the GPU side runs on the GPU machine)."""
import pytest

import bench_script

_, int4 = bench_script.load("int4")


def _row(m, shim, torch_us, n=1024, k=1024):
    return {"m": m, "n": n, "k": k, "group": 128, "shim_us": shim, "torch_us": torch_us}


def test_summary_splits_decode_rows_from_larger_m():
    rows = [_row(1, 2.0, 2.5), _row(8, 3.0, 2.0), _row(64, 10.0, 5.0), _row(512, 40.0, 50.0)]
    s = int4.summarize(rows)
    assert s["decode"] == {"rows": 2, "median_ratio": pytest.approx((0.8 + 1.5) / 2, abs=1e-3), "worst_ratio": 1.5}
    assert s["larger_m"]["rows"] == 2 and s["larger_m"]["worst_ratio"] == 2.0
    assert s["by_m"]["512"] == {"rows": 1, "median_ratio": 0.8, "worst_ratio": 0.8}
    assert int4.summarize([_row(64, 1.0, 1.0)])["decode"] == {"rows": 0}


def test_markdown_lists_every_row_and_the_summary():
    rows = [_row(1, 2.0, 2.5), _row(512, 40.0, 50.0)]
    md = int4.markdown(rows, int4.summarize(rows))
    assert "| 1 | 1024 | 1024 | 128 | 2.00 | 2.50 | 0.80 | — | — |" in md
    assert "| decode | 1 | 0.8 | 0.8 |" in md and "| larger_m | 1 | 0.8 | 0.8 |" in md
    assert "| decode_cuda_cores | 0 | - | - |" in md and "| cuda_cores_larger_m | 0 | - | - |" in md


def test_the_rows_without_the_tensor_core_kernel_have_their_own_summary_and_columns():
    rows = [dict(_row(1, 2.0, 2.5), shim_cuda_cores_us=1.25), dict(_row(8, 3.0, 2.0), shim_cuda_cores_us=2.0),
            dict(_row(16, 6.0, 3.0), shim_cuda_cores_us=3.3), _row(512, 4.0, 5.0)]
    s = int4.summarize(rows)
    assert s["decode_cuda_cores"] == {"rows": 2, "median_ratio": pytest.approx((0.5 + 1.0) / 2, abs=1e-3),
                                      "worst_ratio": 1.0}
    assert s["cuda_cores_larger_m"] == {"rows": 1, "median_ratio": 1.1, "worst_ratio": 1.1}
    assert s["decode"]["worst_ratio"] == 1.5  # the default kernel's rows are unchanged
    md = int4.markdown(rows, s)
    assert "| 1 | 1024 | 1024 | 128 | 2.00 | 2.50 | 0.80 | 1.25 | 0.50 |" in md
    assert int4.MMA_ENV == "AOTIRT_INT4_MMA"


def test_the_bench_times_the_other_path_on_exactly_the_rows_the_tensor_core_kernel_takes():
    """MMA_MAX_M is the last m below shim_int4.cc's kMmaDequantizeMinRows, and the shim reads MMA_ENV, default on."""
    import os
    import re
    src = open(os.path.join(os.path.dirname(os.path.abspath(int4.__file__)), "..", "shims", "int4",
                            "shim_int4.cc")).read()
    assert int(re.search(r"kMmaDequantizeMinRows = (\d+);", src).group(1)) == int4.MMA_MAX_M + 1
    assert f'EnvFlag("{int4.MMA_ENV}", true)' in src


def test_shapes_are_valid_for_torchs_packing():
    for n, k in int4.NK:
        assert n % 8 == 0 and k % (8 * 16) == 0 and k % 128 == 0  # inner_k_tiles 8, group 128
    assert int4.M_VALUES[0] == 1 and max(int4.M_VALUES) == 512


def test_flags():
    a = int4.parse_args(["--group", "64", "--quick"])
    assert a.group == "64" and a.quick
    with pytest.raises(SystemExit):
        int4.parse_args(["--group", "48"])
