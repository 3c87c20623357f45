"""aotirt.load / Runner: input validation, streams, output structure (fake _C.Model), and load errors (real _C)."""
import os
import sys
import zipfile

import pytest
import torch
from torch.utils import _pytree as pytree

import aotirt
from aotirt import runtime


def _add_native_module_dirs():
    """Puts the directory of the Bazel-built _C.so on sys.path (runfiles under Bazel, bazel-bin when run by hand)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.environ[v], "aotirt", "backends", "cuda", "python")
                  for v in ("TEST_SRCDIR", "RUNFILES_DIR") if os.environ.get(v)]
    candidates.append(os.path.join(here, "..", "..", "bazel-bin", "backends", "cuda", "python"))
    for d in candidates:
        if os.path.exists(os.path.join(d, "_C.so")) and d not in sys.path:
            sys.path.insert(0, d)
            return


_add_native_module_dirs()
try:
    runtime._native()
    NATIVE_ERROR = None
except aotirt.Error as e:
    NATIVE_ERROR = str(e)
needs_native = pytest.mark.skipif(NATIVE_ERROR is not None, reason=f"aotirt._C not importable: {NATIVE_ERROR}")


class FakeInput:
    """A DLPack producer on GPU 0 that records how it was asked for a capsule."""

    def __init__(self, tag, device=(2, 0), stream_kw=True):
        self.tag, self.device, self.stream_kw, self.asked = tag, device, stream_kw, []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        if not self.stream_kw and kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        self.asked.append(kwargs)
        return f"capsule-{self.tag}"


class FakeModel:
    """Stands in for _C.Model: outputs are real DLPack capsules of CPU tensors."""

    def __init__(self, inputs=("x", "y"), outputs=("out0", "out1"), out_spec="", error=None):
        self.input_names, self.output_names = list(inputs), list(outputs)
        self.in_spec, self.out_spec = "", out_spec
        self.device_index, self.metadata, self.package_path = 0, {"AOTI_DEVICE_KEY": "cuda"}, "/tmp/fake.pt2"
        self.error, self.calls = error, []
        self.results = [torch.full((2,), float(i)) for i in range(len(outputs))]

    def run(self, capsules, stream):
        self.calls.append((list(capsules), stream))
        if self.error:
            raise self.error
        return [t.__dlpack__() for t in self.results]


def _spec(obj):
    return pytree.treespec_dumps(pytree.tree_flatten(obj)[1])


def test_input_count_is_validated_with_names():
    model = FakeModel()
    runner = aotirt.Runner(model)
    with pytest.raises(aotirt.InputError, match=r"takes 2 input\(s\) \['x', 'y'\], got 1") as info:
        runner(FakeInput("a"))
    assert isinstance(info.value, aotirt.RunError) and isinstance(info.value, ValueError)
    with pytest.raises(aotirt.InputError, match="got 3"):
        runner.run_list([FakeInput(i) for i in range(3)])
    assert model.calls == []


def test_inputs_cross_as_capsules_on_the_default_stream():
    model = FakeModel()
    a, b = FakeInput("a"), FakeInput("b")
    aotirt.Runner(model).run_list([a, b])
    assert model.calls == [(["capsule-a", "capsule-b"], 0)]
    # our stream 0 (legacy default) is DLPack's stream 1 (0 is reserved by the DLPack spec)
    assert a.asked == [{"stream": 1}] and b.asked == [{"stream": 1}]


def test_explicit_stream_and_old_producers():
    model = FakeModel()
    a, old = FakeInput("a"), FakeInput("old", stream_kw=False)
    aotirt.Runner(model).run_list([a, old], stream=0x7F001234)
    assert model.calls[0] == (["capsule-a", "capsule-old"], 0x7F001234)
    assert a.asked == [{"stream": 0x7F001234}] and old.asked == [{}]


@pytest.mark.parametrize("bad,match", [
    ([1, 2], r"input 0 \('x'\) is a int, which has no __dlpack__"),
    ([FakeInput("a"), FakeInput("cpu", device=(1, 0))], r"input 1 \('y'\) is on DLPack device type 1 \(1 = CPU\)"),
    ([FakeInput("a", device=(2, 1)), FakeInput("b")], r"input 0 \('x'\) is on GPU 1.*load with device=1"),
])
def test_bad_inputs_are_refused_before_running(bad, match):
    model = FakeModel()
    with pytest.raises(aotirt.InputError, match=match):
        aotirt.Runner(model).run_list(bad)
    assert model.calls == []


def test_managed_memory_inputs_are_accepted():
    model = FakeModel()
    aotirt.Runner(model).run_list([FakeInput("a", device=(13, 0)), FakeInput("b")])
    assert len(model.calls) == 1


def test_run_failure_becomes_run_error():
    model = FakeModel(error=RuntimeError("aoti_torch_cuda_mm_out: no cuBLASLt"))
    with pytest.raises(aotirt.RunError, match="/tmp/fake.pt2 failed: aoti_torch_cuda_mm_out: no cuBLASLt"):
        aotirt.Runner(model)(FakeInput("a"), FakeInput("b"))


@pytest.mark.parametrize("out_spec,check", [
    (_spec((0, 0)), lambda r: isinstance(r, tuple) and len(r) == 2),
    (_spec({"logits": 0, "aux": 0}), lambda r: isinstance(r, dict) and set(r) == {"logits", "aux"}),
    ("", lambda r: isinstance(r, list) and len(r) == 2),
    ("not json", lambda r: isinstance(r, list) and len(r) == 2),
    (_spec((0, 0, 0)), lambda r: isinstance(r, list) and len(r) == 2),  # leaf count mismatch
])
def test_output_structure_two_outputs(out_spec, check):
    result = aotirt.Runner(FakeModel(out_spec=out_spec))(FakeInput("a"), FakeInput("b"))
    assert check(result), result
    leaves = pytree.tree_leaves(result)
    assert [t.tolist() for t in leaves] == [[0.0, 0.0], [1.0, 1.0]]
    assert all(isinstance(t, torch.Tensor) for t in leaves)


def test_single_output_follows_the_spec_else_is_a_list():
    with_spec = aotirt.Runner(FakeModel(outputs=["y"], out_spec=_spec(torch.zeros(1))))
    out = with_spec(FakeInput("a"), FakeInput("b"))
    assert isinstance(out, torch.Tensor) and out.tolist() == [0.0, 0.0]
    no_spec = aotirt.Runner(FakeModel(outputs=["y"], out_spec=""))
    out = no_spec(FakeInput("a"), FakeInput("b"))
    assert isinstance(out, list) and len(out) == 1
    # run_list is always flat
    assert isinstance(with_spec.run_list([FakeInput("a"), FakeInput("b")]), list)


def test_outputs_share_memory_with_the_runtime_buffers():
    model = FakeModel()
    out = aotirt.Runner(model).run_list([FakeInput("a"), FakeInput("b")])
    assert out[0].data_ptr() == model.results[0].data_ptr()  # from_dlpack, no copy


def test_without_torch_outputs_are_dlpack_objects(monkeypatch):
    monkeypatch.setattr(runtime, "_torch_or_none", lambda: None)
    model = FakeModel(out_spec=_spec((0, 0)))
    out = aotirt.Runner(model)(FakeInput("a"), FakeInput("b"))
    assert isinstance(out, list) and all(isinstance(o, aotirt.DLPackTensor) for o in out)  # no torch: no spec
    assert out[0].__dlpack_device__() == (2, 0)
    capsule = out[1].__dlpack__(stream=1)
    assert torch.from_dlpack(capsule).tolist() == [1.0, 1.0]
    with pytest.raises(aotirt.RunError, match="already consumed"):
        out[1].__dlpack__()


def test_runner_properties():
    runner = aotirt.Runner(FakeModel(out_spec=_spec((0, 0))))
    assert runner.input_names == ["x", "y"] and runner.output_names == ["out0", "out1"]
    assert runner.metadata == {"AOTI_DEVICE_KEY": "cuda"} and runner.device_index == 0
    assert "fake.pt2" in repr(runner)


class FakeNative:
    def __init__(self, error=None):
        self.error, self.args, self.dirs = error, None, []
        native = self

        class Model(FakeModel):
            def __init__(self, *args):
                native.args = args
                if native.error:
                    raise native.error
                super().__init__()

        self.Model = Model

    def add_cublaslt_search_dir(self, d):
        self.dirs.append(d)


def test_load_passes_arguments_to_the_native_model(tmp_path, monkeypatch):
    native = FakeNative()
    monkeypatch.setattr(runtime, "_native", lambda: native)
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    runner = aotirt.load(str(pkg), device=0, num_instances=3)
    assert native.args == (str(pkg), 0, 3, "model") and runner.input_names == ["x", "y"]


def test_load_wraps_native_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "_native", lambda: FakeNative(RuntimeError("no wrapper .so in the archive")))
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    with pytest.raises(aotirt.RuntimeLoadError, match=r"cannot load package .*m.pt2.*no wrapper .so in the archive"):
        aotirt.load(str(pkg))


@pytest.mark.parametrize("kwargs,match", [({"device": -1}, "device must be"), ({"num_instances": 0}, "num_instances")])
def test_load_argument_errors(tmp_path, monkeypatch, kwargs, match):
    monkeypatch.setattr(runtime, "_native", lambda: FakeNative())
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    with pytest.raises(aotirt.InputError, match=match):
        aotirt.load(str(pkg), **kwargs)


def test_load_missing_file_and_directory(tmp_path):
    with pytest.raises(aotirt.PackageError, match=r"'.*nope.pt2' does not exist; pass the path that aotirt.compile"):
        aotirt.load(str(tmp_path / "nope.pt2"))
    with pytest.raises(aotirt.PackageError, match="is a directory"):
        aotirt.load(str(tmp_path))


def test_missing_native_module_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "_native_module", None)
    monkeypatch.delattr(aotirt, "_C", raising=False)
    monkeypatch.setitem(sys.modules, "aotirt._C", None)  # None in sys.modules makes the import fail
    monkeypatch.setitem(sys.modules, "_C", None)
    with pytest.raises(aotirt.RuntimeLoadError, match=r"aotirt._C is not importable.*bazel build //backends/cuda/python:_C"):
        runtime._native()


def test_nvidia_wheel_dirs_are_given_to_the_cublaslt_loader(tmp_path, monkeypatch):
    lib = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(runtime, "_cublaslt_dirs_added", [])
    assert str(lib) in runtime.nvidia_wheel_lib_dirs()
    native = FakeNative()
    runtime._add_nvidia_wheel_dirs(native)
    runtime._add_nvidia_wheel_dirs(native)  # once per process
    assert native.dirs.count(str(lib)) == 1


# ------------------------------------------------------------------------------------------- with the real _C

@needs_native
def test_real_native_missing_file_message(tmp_path):
    native = runtime._native()
    with pytest.raises(RuntimeError) as info:  # _C.RuntimeError derives from RuntimeError
        native.Model(str(tmp_path / "nope.pt2"))
    assert "nope.pt2" in str(info.value)


@needs_native
def test_real_native_not_a_zip(tmp_path):
    pkg = tmp_path / "corrupt.pt2"
    pkg.write_bytes(b"this is not a zip archive" * 10)
    with pytest.raises(aotirt.Error) as info:
        aotirt.load(str(pkg))
    assert isinstance(info.value, aotirt.RuntimeLoadError) and "corrupt.pt2" in str(info.value)


@needs_native
def test_real_native_zip_without_wrapper(tmp_path):
    pkg = tmp_path / "empty.pt2"
    with zipfile.ZipFile(pkg, "w") as z:
        z.writestr("empty/data/aotinductor/model/readme.txt", "no wrapper here")
    with pytest.raises(aotirt.RuntimeLoadError, match="empty.pt2"):
        aotirt.load(str(pkg))


@needs_native
def test_real_native_module_api():
    native = runtime._native()
    assert isinstance(native.shims_version(), str) and native.shims_version()
    assert isinstance(native.live_tensor_count(), int)
    assert isinstance(native.last_shim_error(), str)
    assert issubclass(native.RuntimeError, RuntimeError)


@needs_native
def test_gemm_stats_through_the_real_native_module():
    import aotirt
    stats = aotirt.gemm_stats()  # the Linux CUDA shims have GEMMs: a dict of every counter, none run here
    assert list(stats)[:3] == ["library_loads", "library_load_failures", "calls"]
    assert {"graph_replays", "graph_captures", "graph_evictions", "tuned", "plan_cache_hits"} <= set(stats)
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())
    assert stats["calls"] == 0 and stats["graph_replays"] == 0
