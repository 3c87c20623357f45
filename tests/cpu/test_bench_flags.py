"""absl flags of the benchmark scripts (benchmarks/cliflags.py; gemm.py and runtime.py here, models.py and
footprint.py in their own tests): same names and defaults as the argparse flags they replaced, usage errors exit 2
with the message on stderr, --help exits 0. No GPU: only the flag parsing runs."""
import importlib.util
import os

import pytest

from cliflags import Flags


def _load(env, name):
    spec = importlib.util.spec_from_file_location(name, os.path.realpath(os.environ[env]))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gemm():
    pytest.importorskip("torch")  # gemm.py imports torch at the top
    return _load("AOTIRT_GEMM_PY", "bench_gemm")


@pytest.fixture(scope="module")
def graph_launch():
    pytest.importorskip("torch")  # graph_launch.py imports torch at the top
    return _load("AOTIRT_GRAPH_LAUNCH_PY", "bench_graph_launch")


@pytest.fixture(scope="module")
def runtime():
    return _load("AOTIRT_RUNTIME_PY", "bench_runtime")


def test_gemm_defaults_and_flags(gemm, monkeypatch):
    monkeypatch.setenv("AOTIRT_SHIM_LIB", "/b/lib/libaoti_cuda_shims.so")
    a = gemm.parse_args([])
    assert a.out.endswith(os.path.join("benchmarks", "results")) and a.lib == "/b/lib/libaoti_cuda_shims.so"
    assert a.quick is False
    a = gemm.parse_args(["--out", "/o/g.json", "--lib", "/x.so", "--quick"])
    assert (a.out, a.lib, a.quick) == ("/o/g.json", "/x.so", True)
    assert gemm.parse_args(["--out=/o", "--noquick"]).quick is False  # absl spellings work too
    monkeypatch.delenv("AOTIRT_SHIM_LIB")
    assert gemm.parse_args([]).lib == ""  # the environment is read at parse time, as argparse's default was


def test_runtime_defaults_and_flags(runtime, capsys):
    a = runtime.parse_args([])
    assert a.out.endswith(os.path.join("benchmarks", "results")) and a.blocks == 2
    assert runtime.parse_args(["--out", "/o", "--blocks", "4"]).blocks == 4
    for argv, why in ((["--blocks", "x"], "--blocks"), (["--blocks", "0"], "--blocks must be >= 1"),
                      (["--bogus"], "Unknown command line flag 'bogus'"), (["stray"], "unrecognized arguments")):
        with pytest.raises(SystemExit) as e:
            runtime.parse_args(argv)
        assert e.value.code == 2 and why in capsys.readouterr().err, argv


def test_help_exits_0_and_lists_flags_but_not_internal_ones(capsys):
    f = Flags("prog.py", "What prog does.")
    f.string("out", "/r", "where")
    f.boolean("quick", False, "smoke")
    f.string("child", "", "(internal) role")
    with pytest.raises(SystemExit) as e:
        f.parse(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "What prog does." in out and "--out: where" in out and "--[no]quick" in out
    assert "--child" not in out


def test_custom_parser_errors_and_tuple_defaults(capsys):
    def csv(text):
        items = tuple(t.strip() for t in text.split(",") if t.strip())
        if "bad" in items:
            raise ValueError("unknown item ['bad']")
        return items
    f = Flags("prog.py")
    f.define("items", ("a", "b"), "items", csv, "list")
    f.enum("mode", "x", ("x", "y"), "mode")
    assert f.parse([]).items == ("a", "b") and f.parse(["--items", "c, d"]).items == ("c", "d")
    assert f.parse([]).items == ("a", "b")  # each parse starts from the defaults
    for argv, why in ((["--items", "bad"], "unknown item ['bad']"), (["--mode", "z"], "invalid choice"),
                      (["--items"], "Missing value")):
        with pytest.raises(SystemExit) as e:
            f.parse(argv)
        assert e.value.code == 2 and why in capsys.readouterr().err, argv


def test_value_parsers_shared_by_the_benchmarks():
    import cliflags
    assert cliflags.csv(" a, b,,a ") == ("a", "b")
    assert cliflags.positive_int("3") == 3
    assert cliflags.positive_float("0.5") == 0.5
    assert cliflags.nonnegative_float("0") == 0.0
    for parse, bad, msg in [(cliflags.positive_int, "0", "must be >= 1"), (cliflags.positive_int, "x", "not an integer"),
                            (cliflags.positive_float, "0", "must be > 0"), (cliflags.nonnegative_float, "-1", ">= 0"),
                            (cliflags.positive_float, "nan?", "not a number")]:
        with pytest.raises(ValueError, match=msg):
            parse(bad)


def test_graph_launch_flags(graph_launch, capsys):
    a = graph_launch.parse_args([])
    assert (a.kernels, a.allocs, a.memsets, a.memcpys, a.user_objects, a.out) == (365, [0, 48, 130], [0, 48],
                                                                                   [0, 48], [0], "")
    a = graph_launch.parse_args(["--kernels", "10", "--allocs", "0, 5,", "--memsets", "2", "--memcpys", "3",
                                 "--user-objects", "0,1"])
    assert (a.kernels, a.allocs, a.memsets, a.memcpys, a.user_objects) == (10, [0, 5], [2], [3], [0, 1])
    for argv, why in ((["--allocs", "-1"], "counts must be >= 0"), (["--memsets", ","], "at least one count"),
                      (["--allocs", "x"], "--allocs"), (["--kernels", "0"], "--kernels must be >= 1"),
                      (["--kernels", "10", "--memsets", "11"], "may not exceed --kernels"),
                      (["--kernels", "10", "--memcpys", "11"], "may not exceed --kernels"),
                      (["--user-objects", "-2"], "counts must be >= 0")):
        with pytest.raises(SystemExit) as e:
            graph_launch.parse_args(argv)
        assert e.value.code == 2 and why in capsys.readouterr().err, argv
