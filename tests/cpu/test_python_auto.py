"""aotirt.auto (max_autotune_gemm_backends=AUTO) without a GPU: the selection over deterministic timings, the metadata
recorded in the chosen package (read back with zipfile and by the real native loader), candidate failures, the
work-folder cleanup, and the refusals (ROCm, Windows, non-Linux host, max_autotune off, contradictions) before any
compile. The compile and timing steps are the injectable `compile_fn`/`time_fn` of the real code: they write real
.pt2-shaped zips and return fixed timings."""
import dataclasses
import json
import os
import sys
import zipfile

import pytest
import torch

import aotirt
from aotirt import auto, package, runtime
from aotirt.errors import UnsupportedPlatformError

# ----------------------------------------------------------------------------------------------------- helpers

WRAPPER = "pkg/data/aotinductor/model/abc123.wrapper.so"
META = "pkg/data/aotinductor/model/abc123.wrapper_metadata.json"
BLOB = "pkg/data/aotinductor/model/abc123_weights.blob"


def write_package(path, backends, metadata=None):
    """A .pt2-shaped zip: wrapper bytes naming the backends, a metadata JSON, a stored weights blob, extra files."""
    md = {"AOTI_DEVICE_KEY": "cuda", "aotirt_version": "test"} if metadata is None else metadata
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pkg/archive_format", "pt2", compress_type=zipfile.ZIP_STORED)
        z.writestr(WRAPPER, f"wrapper for {backends}".encode() * 50, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr(META, json.dumps(md), compress_type=zipfile.ZIP_STORED)
        z.writestr(BLOB, bytes(range(256)) * 64, compress_type=zipfile.ZIP_STORED)
        z.writestr("pkg/data/aotinductor/model/abc123.cpp", "// source", compress_type=zipfile.ZIP_DEFLATED)
    return str(path)


class Compiler:
    """compile_fn: writes a package per candidate at the requested path and records what it was asked."""

    def __init__(self, fail=None, out_dir=None):
        self.calls, self.fail, self.out_dir = [], dict(fail or {}), out_dir

    def __call__(self, model, example_inputs, package_path, *, device, options, inductor_configs, dynamic_shapes):
        b = options.max_autotune_gemm_backends
        self.calls.append({"model": model, "inputs": example_inputs, "path": package_path, "device": device,
                           "options": options, "configs": inductor_configs, "dynamic_shapes": dynamic_shapes})
        if b in self.fail:
            raise self.fail[b]
        if self.out_dir is not None:  # a cache elsewhere: the returned path is not the requested one
            package_path = os.path.join(self.out_dir, b.replace(",", "_") + ".pt2")
        return write_package(package_path, b)


class Timer:
    """time_fn: fixed ms per backends (a list is consumed one value per call), read from the wrapper bytes."""

    def __init__(self, ms, methods=None, fail=()):
        self.ms = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in ms.items()}
        self.methods, self.fail, self.order = dict(methods or {}), set(fail), []

    def __call__(self, path, example_inputs, device_index):
        with zipfile.ZipFile(path) as z:
            b = z.read(WRAPPER).decode().split("wrapper for ")[1]
        self.order.append(b)
        if b in self.fail:
            raise aotirt.RunError(f"cannot load {b}")
        v = self.ms[b]
        ms = v.pop(0) if isinstance(v, list) else v
        return auto.Measurement(ms=ms, method=self.methods.get(b, auto.METHOD_GRAPH), device="Fake GPU")


def chosen_backends(path):
    with zipfile.ZipFile(path) as z:
        return z.read(WRAPPER).decode().split("wrapper for ")[1]


def run_auto(tmp_path, ms, *, compiler=None, timer=None, **kwargs):
    compiler = compiler or Compiler()
    timer = timer or Timer(ms)
    res = []
    path = auto.compile_auto("MODEL", ("X",), kwargs.pop("package_path", str(tmp_path / "out.pt2")),
                             options=kwargs.pop("options", aotirt.CompileOptions(max_autotune=True)),
                             compile_fn=compiler, time_fn=timer, result=res, target=kwargs.pop("target", "cuda"),
                             **kwargs)
    return path, res[0], compiler, timer


# ---------------------------------------------------------------------------------------------------- selection

def test_picks_the_fastest_and_records_choice_and_timings(tmp_path):
    path, res, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45})
    assert path == str(tmp_path / "out.pt2") and os.path.isfile(path)
    assert res.choice == "ATEN,TRITON" and chosen_backends(path) == "ATEN,TRITON"
    md = package.read_metadata(path)
    assert md[auto.META_CHOICE] == "ATEN,TRITON"
    assert json.loads(md[auto.META_TIMINGS]) == {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}
    assert json.loads(md[auto.META_METHODS]) == {c: "cuda_graph" for c in auto.CANDIDATES}
    assert md[auto.META_DEVICE] == "Fake GPU" and auto.META_ERRORS not in md
    assert md["AOTI_DEVICE_KEY"] == "cuda" and md["aotirt_version"] == "test"  # the rest of the metadata is kept
    assert [c["options"].max_autotune_gemm_backends for c in compiler.calls] == list(auto.CANDIDATES)
    assert all(c["model"] == "MODEL" and c["inputs"] == ("X",) for c in compiler.calls)


@pytest.mark.parametrize("ms,want", [
    ({"TRITON": 0.30, "ATEN,TRITON": 0.31, "ATEN": 0.32}, "TRITON"),
    ({"TRITON": 0.30, "ATEN,TRITON": 0.31, "ATEN": 0.29}, "ATEN"),
    ({"TRITON": 0.30, "ATEN,TRITON": 0.30, "ATEN": 0.30}, "TRITON"),  # tie: candidate order
    ({"TRITON": 0.31, "ATEN,TRITON": 0.30, "ATEN": 0.30}, "ATEN,TRITON"),
])
def test_selection_is_the_minimum_with_candidate_order_tie_break(tmp_path, ms, want):
    _, res, _, _ = run_auto(tmp_path, ms)
    assert res.choice == want


def test_rounds_are_interleaved_and_the_median_decides(tmp_path):
    # TRITON has one lucky sample (0.1) but a median of 0.9; ATEN is steadily 0.5.
    ms = {"TRITON": [0.1, 0.9, 0.9], "ATEN,TRITON": [0.7, 0.7, 0.7], "ATEN": [0.5, 0.5, 0.5]}
    _, res, _, timer = run_auto(tmp_path, ms, rounds=3)
    assert res.choice == "ATEN"
    assert res.timings_ms == {"TRITON": 0.9, "ATEN,TRITON": 0.7, "ATEN": 0.5}
    assert res.rounds_ms["TRITON"] == [0.1, 0.9, 0.9]
    # Order rotates each round, so no candidate always goes first.
    assert timer.order == ["TRITON", "ATEN,TRITON", "ATEN", "ATEN,TRITON", "ATEN", "TRITON",
                           "ATEN", "TRITON", "ATEN,TRITON"]


def test_a_candidate_that_fails_to_lower_is_recorded_and_skipped(tmp_path):
    compiler = Compiler(fail={"ATEN,TRITON": aotirt.LoweringError("no valid choices")})
    path, res, _, timer = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.1, "ATEN": 0.6}, compiler=compiler)
    assert res.choice == "TRITON" and "ATEN,TRITON" not in timer.order
    md = package.read_metadata(path)
    assert json.loads(md[auto.META_TIMINGS]) == {"TRITON": 0.5, "ATEN,TRITON": None, "ATEN": 0.6}
    assert json.loads(md[auto.META_ERRORS]) == {"ATEN,TRITON": "LoweringError: no valid choices"}
    assert "ATEN,TRITON" not in json.loads(md[auto.META_METHODS])


def test_a_candidate_that_cannot_be_timed_is_recorded_and_skipped(tmp_path):
    timer = Timer({"TRITON": 0.2, "ATEN,TRITON": 0.3, "ATEN": 0.4}, fail={"TRITON"})
    path, res, _, _ = run_auto(tmp_path, None, timer=timer)
    assert res.choice == "ATEN,TRITON"
    errors = json.loads(package.read_metadata(path)[auto.META_ERRORS])
    assert errors == {"TRITON": "RunError: cannot load TRITON"}
    assert timer.order.count("TRITON") == 1  # dropped after its failure, not retried every round


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_nonsense_timings_are_errors(tmp_path, bad):
    _, res, _, _ = run_auto(tmp_path, {"TRITON": bad, "ATEN,TRITON": 0.3, "ATEN": 0.4})
    assert res.choice == "ATEN,TRITON" and "TRITON" in res.errors


def test_capture_fallback_is_said_in_the_metadata(tmp_path):
    why = "events (CUDA graph capture failed: operation not permitted when stream is capturing)"
    timer = Timer({"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, methods={"ATEN": why})
    path, _, _, _ = run_auto(tmp_path, None, timer=timer)
    methods = json.loads(package.read_metadata(path)[auto.META_METHODS])
    assert methods == {"TRITON": "cuda_graph", "ATEN,TRITON": "cuda_graph", "ATEN": why}


def test_nothing_works_is_a_lowering_error_naming_each_candidate(tmp_path):
    compiler = Compiler(fail={"TRITON": aotirt.LoweringError("t failed"), "ATEN": aotirt.LoweringError("a failed")})
    timer = Timer({"ATEN,TRITON": 0.1}, fail={"ATEN,TRITON"})
    with pytest.raises(aotirt.LoweringError) as info:
        run_auto(tmp_path, None, compiler=compiler, timer=timer)
    msg = str(info.value)
    assert "t failed" in msg and "a failed" in msg and "cannot load ATEN,TRITON" in msg
    assert not os.path.exists(tmp_path / "out.pt2")


def test_the_same_spec_error_for_every_candidate_is_raised_as_is(tmp_path):
    err = aotirt.SpecError("inductor_configs['foo'] is wrong")
    compiler = Compiler(fail={c: err for c in auto.CANDIDATES})
    with pytest.raises(aotirt.SpecError, match="foo"):
        run_auto(tmp_path, {}, compiler=compiler)


def test_the_same_failure_for_every_candidate_is_raised_as_is(tmp_path):
    err = aotirt.LoweringError("cannot lower for CUDA: torch sees no GPU")
    compiler = Compiler(fail={c: err for c in auto.CANDIDATES})
    with pytest.raises(aotirt.LoweringError) as info:
        run_auto(tmp_path, {}, compiler=compiler)
    assert info.value is err and len(compiler.calls) == 3


def test_candidates_subset_and_normalization(tmp_path):
    _, res, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN": 0.4}, candidates=("aten", " triton ", "ATEN"))
    assert [c["options"].max_autotune_gemm_backends for c in compiler.calls] == ["ATEN", "TRITON"]
    assert res.choice == "ATEN" and set(res.timings_ms) == {"ATEN", "TRITON"}
    _, res, _, _ = run_auto(tmp_path, {"ATEN,TRITON": 0.4}, candidates=("triton,aten",))
    assert res.choice == "ATEN,TRITON"


# ------------------------------------------------------------------------------------------- options + configs

def test_candidate_options_keep_the_other_fields_and_configs_pass_through(tmp_path):
    opts = aotirt.CompileOptions(max_autotune=True, float32_matmul_precision="high")
    configs = {"max_autotune_gemm_backends": " auto ", "aot_inductor.metadata": {"user_key": "v"},
               "coordinate_descent_tuning": True}
    run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, options=opts, inductor_configs=configs,
             device="cuda:0", dynamic_shapes={"x": None})
    _, _, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, options=opts,
                                 inductor_configs=configs, device="cuda:0", dynamic_shapes={"x": None})
    for call in compiler.calls:
        assert call["options"].float32_matmul_precision == "high" and call["options"].max_autotune is True
        assert call["configs"] == {"aot_inductor.metadata": {"user_key": "v"}, "coordinate_descent_tuning": True}
        assert call["device"] == "cuda:0" and call["dynamic_shapes"] == {"x": None}
    assert configs["max_autotune_gemm_backends"] == " auto "  # the caller's dict is not modified


@dataclasses.dataclass(frozen=True)
class FutureOptions:
    """Stands for the CompileOptions being rewritten (with platform/target fields and AUTO accepted)."""

    max_autotune: bool = True
    max_autotune_gemm_backends: str = "AUTO"
    platform: str = "linux"
    target: str = "cuda"


def test_options_with_platform_and_target_fields_are_honoured(tmp_path):
    _, res, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45},
                                   options=FutureOptions(), target=None)
    assert res.choice == "ATEN,TRITON"
    assert [type(c["options"]) for c in compiler.calls] == [FutureOptions] * 3
    assert [c["options"].max_autotune_gemm_backends for c in compiler.calls] == list(auto.CANDIDATES)
    for opts, match in [(FutureOptions(platform="windows"), "platform='windows'"),
                        (FutureOptions(target="rocm"), "ROCm")]:
        compiler = Compiler()
        with pytest.raises(UnsupportedPlatformError, match=match):
            auto.compile_auto("M", ("X",), str(tmp_path / "o.pt2"), options=opts, compile_fn=compiler,
                              time_fn=Timer({}))
        assert compiler.calls == []


def test_requested():
    assert auto.requested(FutureOptions())
    assert auto.requested(aotirt.CompileOptions(), {"max_autotune_gemm_backends": " Auto"})
    assert not auto.requested(aotirt.CompileOptions(), {"max_autotune_gemm_backends": "ATEN"})
    assert not auto.requested(aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON"))
    assert auto.requested(aotirt.CompileOptions(attention_backend="auto"))  # any field, unless one is named
    assert not auto.requested(aotirt.CompileOptions(attention_backend="auto"), field="max_autotune_gemm_backends")
    assert auto.requested(None, {"max_autotune_conv_backends": "AUTO"}, field="max_autotune_conv_backends")
    assert not auto.requested(None, None)
    assert auto.is_auto("auto") and not auto.is_auto("AUTO,TRITON") and not auto.is_auto(None)


# ------------------------------------------------------------------------------------------------------ refusals

@pytest.mark.parametrize("kwargs,match", [
    ({"target": "rocm"}, r"not available for ROCm.*use max_autotune_gemm_backends='TRITON'"),
    ({"target": " ROCM "}, r"not available for ROCm"),
    ({"platform": "windows"}, r"not available for platform='windows'.*Windows build does not export"),
])
def test_rocm_and_windows_are_refused_like_aten(tmp_path, kwargs, match):
    compiler = Compiler()
    kwargs.setdefault("target", "cuda")
    with pytest.raises(UnsupportedPlatformError, match=match) as info:
        auto.compile_auto("M", ("X",), str(tmp_path / "o.pt2"), compile_fn=compiler, time_fn=Timer({}), **kwargs)
    assert isinstance(info.value, aotirt.LoweringError)
    assert compiler.calls == []


@pytest.mark.parametrize("kwargs,match", [
    ({"platform": "macos"}, r"platform='macos' is not valid"),
    ({"target": "xpu"}, r"target='xpu' is not valid"),
    ({"options": aotirt.CompileOptions(max_autotune=False)}, r"needs max_autotune=True"),
    ({"candidates": ("TRITON", "CUTLASS")}, r"candidate 'CUTLASS' is not valid"),
    ({"candidates": ()}, r"at least one candidate"),
    ({"inductor_configs": {"max_autotune_gemm_backends": "ATEN"}}, r"contradicts AUTO"),
    ({"inductor_configs": {"aot_inductor.metadata": {auto.META_CHOICE: "x"}}}, r"written by AUTO"),
    ({"package_path": "model.zip"}, r"must end with .pt2"),
    ({"device": "cpu"}, r"device='cpu' is not supported"),
    ({"rounds": 0}, r"rounds must be >= 1"),
])
def test_refusals_come_before_any_compile(tmp_path, kwargs, match):
    compiler = Compiler()
    kwargs.setdefault("target", "cuda")
    with pytest.raises(aotirt.SpecError, match=match):
        auto.compile_auto("M", ("X",), kwargs.pop("package_path", str(tmp_path / "o.pt2")), compile_fn=compiler,
                          time_fn=Timer({}), **kwargs)
    assert compiler.calls == []


def test_rocm_torch_is_detected_and_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    compiler = Compiler()
    with pytest.raises(UnsupportedPlatformError, match="ROCm"):
        auto.compile_auto("M", ("X",), str(tmp_path / "o.pt2"), compile_fn=compiler, time_fn=Timer({}))
    assert compiler.calls == []


@pytest.mark.parametrize("host", ["win32", "darwin", "cygwin"])
def test_non_linux_hosts_are_refused(host):
    with pytest.raises(UnsupportedPlatformError, match=f"this host is '{host}'"):
        auto.check_supported("linux", "cuda", host_platform=host)
    auto.check_supported("linux", "cuda", host_platform="linux")
    auto.check_supported(None, None, host_platform="linux")  # defaults


def test_non_linux_host_refused_through_compile_auto(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    compiler = Compiler()
    with pytest.raises(UnsupportedPlatformError, match="this host is 'win32'"):
        auto.compile_auto("M", ("X",), str(tmp_path / "o.pt2"), compile_fn=compiler, time_fn=Timer({}),
                          target="cuda")
    assert compiler.calls == []


# ------------------------------------------------------------------------------------------------ work folder

def test_own_work_folder_is_removed_when_a_package_path_is_given(tmp_path, monkeypatch):
    made = []
    real = auto.tempfile.mkdtemp
    monkeypatch.setattr(auto.tempfile, "mkdtemp", lambda **kw: made.append(real(dir=tmp_path, **kw)) or made[-1])
    path, _, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45})
    assert len(made) == 1 and not os.path.exists(made[0])
    assert all(os.path.dirname(c["path"]) == made[0] for c in compiler.calls)
    assert os.path.isfile(path)


def test_without_a_package_path_only_the_result_stays(tmp_path, monkeypatch):
    made = []
    real = auto.tempfile.mkdtemp
    monkeypatch.setattr(auto.tempfile, "mkdtemp", lambda **kw: made.append(real(dir=tmp_path, **kw)) or made[-1])
    path, res, _, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, package_path=None)
    assert os.path.dirname(path) == made[0] and os.listdir(made[0]) == ["auto.pt2"]
    assert chosen_backends(path) == res.choice == "ATEN,TRITON"


def test_candidates_compiled_elsewhere_are_never_deleted_or_modified(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    compiler = Compiler(out_dir=str(cache))
    path, _, _, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, compiler=compiler)
    assert sorted(os.listdir(cache)) == ["ATEN.pt2", "ATEN_TRITON.pt2", "TRITON.pt2"]
    assert auto.META_CHOICE not in package.read_metadata(str(cache / "ATEN_TRITON.pt2"))
    assert package.read_metadata(path)[auto.META_CHOICE] == "ATEN,TRITON"


def test_given_work_dir_keeps_the_candidates(tmp_path):
    wd = tmp_path / "wd"
    path, _, _, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, work_dir=str(wd))
    assert sorted(os.listdir(wd)) == ["auto_aten.pt2", "auto_aten_triton.pt2", "auto_triton.pt2"]


# -------------------------------------------------------------------------------------------- metadata rewrite

def test_write_metadata_keeps_every_other_entry_byte_for_byte(tmp_path):
    p = write_package(tmp_path / "p.pt2", "TRITON", {"AOTI_DEVICE_KEY": "cuda", "k": "old"})
    with zipfile.ZipFile(p) as z:
        before = {i.filename: (z.read(i), i.compress_type, i.date_time) for i in z.infolist()}
        order = z.namelist()
    package.write_metadata(p, {"k": "new", "added": json.dumps({"a": 1})})
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None and z.namelist() == order
        for i in z.infolist():
            data, ctype, dt = before[i.filename]
            assert (i.compress_type, i.date_time) == (ctype, dt)
            if i.filename != META:
                assert z.read(i) == data
    assert package.read_metadata(p) == {"AOTI_DEVICE_KEY": "cuda", "k": "new", "added": '{"a": 1}'}
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def test_write_metadata_errors(tmp_path):
    with pytest.raises(aotirt.SpecError, match="str to str"):
        package.write_metadata(write_package(tmp_path / "a.pt2", "T"), {"k": 1})
    bad = tmp_path / "b.pt2"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(WRAPPER, b"x")
    with pytest.raises(aotirt.PackageError, match="no metadata entry"):
        package.write_metadata(str(bad), {"k": "v"})
    two = tmp_path / "c.pt2"
    with zipfile.ZipFile(two, "w") as z:
        z.writestr(WRAPPER, b"x")
        z.writestr(WRAPPER.replace("abc123", "def456"), b"y")
    with pytest.raises(aotirt.PackageError, match="expected one wrapper library"):
        package.read_metadata(str(two))
    notzip = tmp_path / "d.pt2"
    notzip.write_bytes(b"nope" * 100)
    with pytest.raises(aotirt.PackageError, match="d.pt2"):
        package.write_metadata(str(notzip), {"k": "v"})
    listy = write_package(tmp_path / "e.pt2", "T", metadata=[1, 2])
    with pytest.raises(aotirt.PackageError, match="not a JSON object"):
        package.write_metadata(listy, {"k": "v"})


def test_auto_result_metadata_strings():
    res = auto.AutoResult(choice="ATEN", timings_ms={"TRITON": 0.123456789, "ATEN": 0.1}, methods={"ATEN": "g"},
                          errors={}, device="")
    md = res.metadata()
    assert set(md) == {auto.META_CHOICE, auto.META_TIMINGS, auto.META_METHODS}
    assert all(isinstance(v, str) for v in md.values())
    assert json.loads(md[auto.META_TIMINGS]) == {"TRITON": 0.123457, "ATEN": 0.1}


# ---------------------------------------------------------------------------------- the real native loader


def _native():
    """The Bazel-built aotirt._C (a data dependency of this test): not importable is a failure, never a skip."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in [os.path.join(os.environ[v], "aotirt", "backends", "cuda", "python")
              for v in ("TEST_SRCDIR", "RUNFILES_DIR") if os.environ.get(v)] + \
            [os.path.join(here, "..", "..", link, "backends", "cuda", "python") for link in (".bazel/bin", "bazel-bin")]:
        if os.path.exists(os.path.join(d, "_C.so")) and d not in sys.path:
            sys.path.insert(0, d)
            break
    return runtime.native()


def test_the_native_loader_reads_the_rewritten_metadata(tmp_path):
    """The C++ loader (minizip + nlohmann) opens the rewritten zip and parses its metadata: with AOTI_DEVICE_KEY
    'cpu' it stops at the device check (before any GPU work), which it can only reach by reading that JSON."""
    _native()
    p = write_package(tmp_path / "p.pt2", "TRITON", {"AOTI_DEVICE_KEY": "cpu"})
    package.write_metadata(p, auto.AutoResult("TRITON", {"TRITON": 0.1}, {"TRITON": "cuda_graph"}, {}).metadata())
    with pytest.raises(aotirt.RuntimeLoadError, match="was compiled for device 'cpu'"):
        aotirt.load(p)
    # Control: a metadata entry that is not a JSON object is refused by the same loader.
    bad = write_package(tmp_path / "bad.pt2", "TRITON", metadata=[1])
    with pytest.raises(aotirt.RuntimeLoadError, match="is not a JSON object"):
        aotirt.load(bad)


# ------------------------------------------------------------------------------------------ the spec value "AUTO"

def _wired():
    from aotirt import specs
    assert "AUTO" in specs.VALID_GEMM_BACKEND_VALUES  # a failure, never a skip, if the spec value went missing
    return specs


def test_wired_auto_is_a_spec_value_refused_where_aten_is():
    specs = _wired()
    assert aotirt.CompileOptions(max_autotune_gemm_backends=" auto ").max_autotune_gemm_backends == "AUTO"
    with pytest.raises(aotirt.SpecError, match="AUTO"):
        aotirt.CompileOptions(max_autotune_gemm_backends="AUTO,TRITON")
    with pytest.raises(UnsupportedPlatformError, match="AUTO"):
        aotirt.CompileOptions(max_autotune_gemm_backends="AUTO", platform="windows", shim_library_path="/x")
    with pytest.raises(UnsupportedPlatformError, match="AUTO"):
        aotirt.CompileOptions(max_autotune_gemm_backends="AUTO", target="rocm")
    with pytest.raises(aotirt.SpecError, match="aotirt.compile resolves it"):
        specs.inductor_options(aotirt.CompileOptions(max_autotune_gemm_backends="AUTO"))


@pytest.mark.parametrize("how", ["options", "inductor_configs"])
def test_wired_compile_dispatches_auto_before_anything_else(tmp_path, monkeypatch, how):
    _wired()
    seen = []
    monkeypatch.setattr(auto, "compile_auto", lambda *a, **k: seen.append((a, k)) or "/chosen.pt2")
    opts = aotirt.CompileOptions(max_autotune_gemm_backends="AUTO", float32_matmul_precision="high") \
        if how == "options" else aotirt.CompileOptions(float32_matmul_precision="high")
    configs = None if how == "options" else {"max_autotune_gemm_backends": "auto"}
    out = aotirt.compile("MODEL", ("X",), str(tmp_path / "m.pt2"), options=opts, inductor_configs=configs,
                         device="cuda:0")
    assert out == "/chosen.pt2" and len(seen) == 1
    args, kwargs = seen[0]
    assert args == ("MODEL", ("X",), str(tmp_path / "m.pt2"))
    assert kwargs["options"].max_autotune_gemm_backends == "AUTO"
    assert kwargs["options"].float32_matmul_precision == "high" and kwargs["device"] == "cuda:0"
    assert kwargs["inductor_configs"] == configs


def test_candidates_keep_the_attention_backend_and_auto_adds_no_attention_candidates(tmp_path):
    """GEMM AUTO alone: every candidate is lowered with the caller's attention_backend, no attention candidates."""
    opts = aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="AUTO", attention_backend="cudnn")
    path, res, compiler, _ = run_auto(tmp_path, {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}, options=opts)
    assert [c["options"].max_autotune_gemm_backends for c in compiler.calls] == list(auto.CANDIDATES)
    assert {c["options"].attention_backend for c in compiler.calls} == {"CUDNN"}
    assert res.choice == "ATEN,TRITON"


# ---------------------------------------------------------------------------------------------- auto_timing

@pytest.mark.parametrize("timing,graphs", [("graphs", True), ("eager", False), (" EAGER ", False)])
def test_auto_timing_chooses_how_the_default_timer_times(tmp_path, monkeypatch, timing, graphs):
    made = []

    class FakeCudaGraphTimer(Timer):
        def __init__(self, use_graphs=True):
            made.append(use_graphs)
            super().__init__({"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45},
                             methods={} if use_graphs else {b: "events (graphs off)" for b in auto.CANDIDATES})

        def close(self):
            pass

    monkeypatch.setattr(auto, "CudaGraphTimer", FakeCudaGraphTimer)
    compiler, res = Compiler(), []
    opts = aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="AUTO", auto_timing=timing)
    path = auto.compile_auto("MODEL", ("X",), str(tmp_path / "out.pt2"), options=opts, compile_fn=compiler,
                             result=res, target="cuda")
    assert made == [graphs]
    assert chosen_backends(path) == "ATEN,TRITON"
    # each candidate is a plain lowering: auto_timing is AUTO's, not theirs
    assert {c["options"].auto_timing for c in compiler.calls} == {"graphs"}
    methods = json.loads(package.read_metadata(path)[auto.META_METHODS])
    assert set(methods.values()) == ({auto.METHOD_GRAPH} if graphs else {"events (graphs off)"})


# ------------------------------------------------------------------------ AUTO convolutions / attention (issue 13)

def _key(options):
    return "|".join(str(getattr(options, f)) for f in auto.FIELDS)


class FieldCompiler(Compiler):
    """compile_fn naming each package by all three backend fields: 'GEMM|CONV|ATTENTION'."""

    def __call__(self, model, example_inputs, package_path, *, device, options, inductor_configs, dynamic_shapes):
        k = _key(options)
        self.calls.append({"key": k, "path": package_path, "options": options, "configs": inductor_configs})
        if k in self.fail:
            raise self.fail[k]
        return write_package(package_path, k)


def features(conv=True, attention=True):
    from aotirt import platforms
    return lambda *a: platforms.ModelFeatures(gemms=("linear",), convolutions=("conv2d",) if conv else (),
                                             attention=(("scaled_dot_product_attention", "bfloat16", 64, 64, 0.0),)
                                             if attention else ())


def run_fields(tmp_path, ms, opts, *, feats=None, **kwargs):
    compiler, timer, res = FieldCompiler(), Timer(ms), []
    path = auto.compile_auto_fields("MODEL", ("X",), str(tmp_path / "out.pt2"), options=opts, compile_fn=compiler,
                                    time_fn=timer, result=res, features_fn=feats or features(), **kwargs)
    return path, res, compiler, timer


def test_attention_auto_times_its_three_candidates_with_the_other_fields_fixed(tmp_path):
    opts = aotirt.CompileOptions(target="cuda", attention_backend="AUTO")
    ms = {"ATEN|ATEN|CUDNN,TRITON": 0.30, "ATEN|ATEN|TRITON": 0.25, "ATEN|ATEN|MATH": 0.40}
    path, res, compiler, _ = run_fields(tmp_path, ms, opts)
    assert [c["key"] for c in compiler.calls] == list(ms)  # linux_cuda's GEMM/conv defaults for every candidate
    assert chosen_backends(path) == "ATEN|ATEN|TRITON" and res[0].field == "attention_backend"
    md = package.read_metadata(path)
    assert md["aotirt_attention_backend_auto_choice"] == "TRITON"
    assert json.loads(md["aotirt_attention_backend_auto_timings_ms"]) == {"CUDNN,TRITON": 0.3, "TRITON": 0.25,
                                                                          "MATH": 0.4}
    assert auto.META_CHOICE not in md  # no GEMM stage ran
    assert {c["options"].auto_timing for c in compiler.calls} == {"graphs"}


def test_stages_run_in_order_and_reuse_the_previous_winner(tmp_path):
    opts = aotirt.CompileOptions(target="cuda", max_autotune_gemm_backends="AUTO", attention_backend="auto")
    ms = {"TRITON|ATEN|CUDNN,TRITON": 0.5, "ATEN,TRITON|ATEN|CUDNN,TRITON": 0.4, "ATEN|ATEN|CUDNN,TRITON": 0.45,
          "ATEN,TRITON|ATEN|TRITON": 0.35, "ATEN,TRITON|ATEN|MATH": 0.6}
    path, res, compiler, timer = run_fields(tmp_path, ms, opts)
    # GEMMs first (attention at its default), then attention with the chosen GEMMs; the stage-2 candidate equal to
    # the stage-1 winner is timed again, not lowered again
    assert [c["key"] for c in compiler.calls] == [
        "TRITON|ATEN|CUDNN,TRITON", "ATEN,TRITON|ATEN|CUDNN,TRITON", "ATEN|ATEN|CUDNN,TRITON",
        "ATEN,TRITON|ATEN|TRITON", "ATEN,TRITON|ATEN|MATH"]
    assert timer.order.count("ATEN,TRITON|ATEN|CUDNN,TRITON") == 6  # 3 rounds in each stage
    assert [r.field for r in res] == ["max_autotune_gemm_backends", "attention_backend"]
    assert chosen_backends(path) == "ATEN,TRITON|ATEN|TRITON"
    md = package.read_metadata(path)
    assert md[auto.META_CHOICE] == "ATEN,TRITON" and md["aotirt_attention_backend_auto_choice"] == "TRITON"
    assert json.loads(md[auto.META_TIMINGS]) == {"TRITON": 0.5, "ATEN,TRITON": 0.4, "ATEN": 0.45}
    assert os.listdir(tmp_path) == ["out.pt2"]  # the stages' work folder is gone


def test_a_stage_whose_op_the_model_lacks_is_skipped_and_said(tmp_path):
    opts = aotirt.CompileOptions(target="cuda", max_autotune_conv_backends="AUTO", attention_backend="AUTO")
    ms = {"ATEN|ATEN|CUDNN,TRITON": 0.3, "ATEN|ATEN|TRITON": 0.2, "ATEN|ATEN|MATH": 0.4}
    path, res, compiler, _ = run_fields(tmp_path, ms, opts, feats=features(conv=False))
    assert [c["key"] for c in compiler.calls] == list(ms)  # no convolution candidate lowered
    md = package.read_metadata(path)
    assert md["aotirt_conv_backends_auto_choice"] == "ATEN"
    assert md["aotirt_conv_backends_auto_skipped"] == "the model has no convolution"
    assert md["aotirt_attention_backend_auto_choice"] == "TRITON"


def test_every_stage_skipped_is_one_plain_lowering_with_the_defaults(tmp_path):
    opts = aotirt.CompileOptions(target="cuda", attention_backend="AUTO", auto_timing="eager")
    path, res, compiler, timer = run_fields(tmp_path, {}, opts, feats=features(attention=False))
    assert [c["key"] for c in compiler.calls] == ["ATEN|ATEN|CUDNN,TRITON"] and res == [] and timer.order == []
    assert compiler.calls[0]["options"].auto_timing == "graphs"  # a plain lowering's options
    md = package.read_metadata(path)
    assert md["aotirt_attention_backend_auto_skipped"] == "the model has no scaled_dot_product_attention call"


def test_unknown_features_skip_nothing(tmp_path):
    opts = aotirt.CompileOptions(target="cuda", max_autotune_conv_backends="AUTO")
    ms = {"ATEN|TRITON|CUDNN,TRITON": 0.3, "ATEN|ATEN,TRITON|CUDNN,TRITON": 0.2, "ATEN|ATEN|CUDNN,TRITON": 0.25}
    path, _, compiler, _ = run_fields(tmp_path, ms, opts, feats=lambda *a: None)
    assert [c["key"] for c in compiler.calls] == list(ms)
    assert package.read_metadata(path)["aotirt_conv_backends_auto_choice"] == "ATEN,TRITON"


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(attention_backend="AUTO", target="rocm"), UnsupportedPlatformError,
     r"attention_backend='AUTO'.*'TRITON'"),
    (dict(max_autotune_conv_backends="AUTO", target="rocm"), UnsupportedPlatformError,
     r"max_autotune_conv_backends='AUTO' lets Inductor call the ATen/cuDNN convolution shim"),
    (dict(max_autotune_conv_backends="AUTO", max_autotune=False), aotirt.SpecError,
     r"max_autotune_conv_backends='AUTO' needs max_autotune=True"),
])
def test_field_auto_refusals_come_before_any_compile(tmp_path, kwargs, exc, match):
    compiler = FieldCompiler()
    with pytest.raises(exc, match=match):
        opts = aotirt.CompileOptions(**kwargs)
        auto.compile_auto_fields("MODEL", ("X",), str(tmp_path / "o.pt2"), options=opts, compile_fn=compiler,
                                 time_fn=Timer({}), features_fn=features())
    assert compiler.calls == []


def test_field_auto_is_refused_off_linux_hosts():
    with pytest.raises(UnsupportedPlatformError, match=r"this host is 'win32'"):
        auto.check_supported("linux", "cuda", host_platform="win32", field="attention_backend")
    auto.check_supported("linux", "cuda", host_platform="linux", field="attention_backend")
    with pytest.raises(UnsupportedPlatformError, match=r"not available for ROCm.*use attention_backend='TRITON'"):
        auto.check_supported("linux", "rocm", host_platform="linux", field="attention_backend")
    with pytest.raises(UnsupportedPlatformError, match=r"platform='windows'.*use max_autotune_conv_backends='TRITON'"):
        auto.check_supported("windows", "cuda", host_platform="linux", field="max_autotune_conv_backends")
    with pytest.raises(aotirt.SpecError, match="AUTO decides one of"):
        auto.check_supported("linux", "cuda", field="float32_matmul_precision")


def test_auto_values_reach_neither_inductor_nor_the_candidates():
    from aotirt import specs
    for f in ("max_autotune_conv_backends", "attention_backend"):
        opts = aotirt.CompileOptions(**{f: " auto "})
        assert getattr(opts, f) == "AUTO" and specs.auto_fields(opts) == (f,)
        with pytest.raises(aotirt.SpecError, match="aotirt.compile resolves it"):
            specs.inductor_options(opts, target="cuda")
    with pytest.raises(aotirt.SpecError, match="not valid"):
        aotirt.CompileOptions(attention_backend="AUTO,MATH")


@pytest.mark.parametrize("opts", [dict(attention_backend="AUTO"), dict(max_autotune_conv_backends="AUTO"),
                                  dict(max_autotune_gemm_backends="AUTO", max_autotune_conv_backends="AUTO")])
def test_compile_dispatches_field_auto(tmp_path, monkeypatch, opts):
    seen = []
    monkeypatch.setattr(auto, "compile_auto_fields", lambda *a, **k: seen.append(k) or "/chosen.pt2")
    monkeypatch.setattr(auto, "compile_auto", lambda *a, **k: pytest.fail("stages go through compile_auto_fields"))
    assert aotirt.compile("MODEL", ("X",), str(tmp_path / "m.pt2"), options=aotirt.CompileOptions(**opts)) \
        == "/chosen.pt2"
    assert len(seen) == 1 and all(getattr(seen[0]["options"], f) == "AUTO" for f in opts)


def test_fields_without_auto_and_bad_attention_candidates_are_spec_errors(tmp_path):
    with pytest.raises(aotirt.SpecError, match="needs one of"):
        auto.compile_auto_fields("MODEL", ("X",), str(tmp_path / "o.pt2"), options=aotirt.CompileOptions(),
                                 compile_fn=FieldCompiler(), time_fn=Timer({}))
    with pytest.raises(aotirt.SpecError, match="AUTO candidate 'FLASH' is not valid for attention_backend"):
        auto.compile_auto("MODEL", ("X",), str(tmp_path / "o.pt2"), field="attention_backend", candidates=["FLASH"],
                          options=aotirt.CompileOptions(attention_backend="AUTO"), compile_fn=FieldCompiler(),
                          time_fn=Timer({}), target="cuda")


def test_model_features_of_a_model_that_cannot_be_exported_is_none():
    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("not exportable")

    assert auto.model_features(Broken(), (torch.randn(2),)) is None


def test_attention_auto_in_inductor_configs_is_the_options_auto(tmp_path):
    opts = aotirt.CompileOptions(target="cuda")
    ms = {"ATEN|ATEN|CUDNN,TRITON": 0.3, "ATEN|ATEN|TRITON": 0.25, "ATEN|ATEN|MATH": 0.4}
    path, _, compiler, _ = run_fields(tmp_path, ms, opts, inductor_configs={"attention_backend": "auto",
                                                                            "max_autotune_pointwise": False})
    assert [c["key"] for c in compiler.calls] == list(ms)
    assert all(c["configs"] == {"max_autotune_pointwise": False} for c in compiler.calls)


def test_model_features_of_a_real_export():
    class M(torch.nn.Module):
        def forward(self, q):
            return torch.nn.functional.scaled_dot_product_attention(q, q, q)

    f = auto.model_features(M(), (torch.randn(1, 2, 4, 8),))
    assert f is not None and f.attention and not f.convolutions
    c = auto.model_features(torch.nn.Conv2d(3, 4, 3), (torch.randn(1, 3, 8, 8),))
    assert c.convolutions and not c.attention
    assert auto.model_features("not a model", ()) is None
