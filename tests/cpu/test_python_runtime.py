"""aotirt.load / Runner: input validation, streams, output type and structure (fake _C.Model), the torch-free
rule (a subprocess), and load errors (real _C)."""
import json
import os
import subprocess
import sys
import zipfile

import numpy as np

import pytest
import torch
from torch.utils import _pytree as pytree

import aotirt
from aotirt import runtime


def _add_native_module_dirs():
    """Puts the directory of the Bazel-built _C.so on sys.path (runfiles under Bazel, .bazel/bin when run by hand)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.environ[v], "aotirt", "backends", "cuda", "python")
                  for v in ("TEST_SRCDIR", "RUNFILES_DIR") if os.environ.get(v)]
    candidates += [os.path.join(here, "..", "..", link, "backends", "cuda", "python") for link in (".bazel/bin", "bazel-bin")]
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


class TorchInput(torch.Tensor):
    """A torch.Tensor (so the "auto" rule sees torch inputs) that claims to be on GPU 0 and hands out a fake capsule."""

    @staticmethod
    def make(tag):
        t = torch.Tensor._make_subclass(TorchInput, torch.zeros(2))
        t.tag = tag
        return t

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return f"capsule-{self.tag}"


def torch_inputs():
    return TorchInput.make("a"), TorchInput.make("b")


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
    result = aotirt.Runner(FakeModel(out_spec=out_spec))(*torch_inputs())  # torch in: torch out, eager structure
    assert check(result), result
    leaves = pytree.tree_leaves(result)
    assert [t.tolist() for t in leaves] == [[0.0, 0.0], [1.0, 1.0]]
    assert all(isinstance(t, torch.Tensor) for t in leaves)


def test_single_output_follows_the_spec_else_is_a_list():
    with_spec = aotirt.Runner(FakeModel(outputs=["y"], out_spec=_spec(torch.zeros(1))))
    out = with_spec(*torch_inputs())
    assert isinstance(out, torch.Tensor) and out.tolist() == [0.0, 0.0]
    no_spec = aotirt.Runner(FakeModel(outputs=["y"], out_spec=""))
    out = no_spec(*torch_inputs())
    assert isinstance(out, list) and len(out) == 1
    # run_list is always flat
    assert isinstance(with_spec.run_list(torch_inputs()), list)
    # DLPack outputs never follow the spec: a list, even for one output
    out = with_spec(*torch_inputs(), output="dlpack")
    assert isinstance(out, list) and len(out) == 1 and isinstance(out[0], aotirt.DLPackTensor)


def test_outputs_share_memory_with_the_runtime_buffers():
    model = FakeModel()
    out = aotirt.Runner(model).run_list(torch_inputs())
    assert out[0].data_ptr() == model.results[0].data_ptr()  # from_dlpack, no copy


def test_without_torch_imported_outputs_are_dlpack_objects(monkeypatch):
    monkeypatch.setattr(runtime, "imported_torch", lambda: None)  # as in a process that never imported torch
    model = FakeModel(out_spec=_spec((0, 0)))
    out = aotirt.Runner(model)(*torch_inputs())
    assert isinstance(out, list) and all(isinstance(o, aotirt.DLPackTensor) for o in out)  # no torch: no spec
    assert out[0].__dlpack_device__() == (1, 0)  # read from the capsule (these fakes are host tensors)
    capsule = out[1].__dlpack__(stream=None)
    assert torch.from_dlpack(capsule).tolist() == [1.0, 1.0]
    with pytest.raises(aotirt.RunError, match="already consumed"):
        out[1].__dlpack__()
    assert np.from_dlpack(out[0]).tolist() == [0.0, 0.0]  # numpy takes host outputs


# ------------------------------------------------------------------------------------ output= (the output rule)

def _kind(out):
    if isinstance(out, torch.Tensor):
        return "torch"
    assert isinstance(out, aotirt.DLPackTensor), type(out)
    return "dlpack"


@pytest.mark.parametrize("torch_imported,inputs,want", [
    (True, "torch", "torch"),
    (True, "other", "dlpack"),    # CuPy/JAX inputs in a process that also has torch: DLPack out
    (True, "mixed", "dlpack"),    # only all-torch inputs give torch outputs
    (False, "torch", "dlpack"),   # torch not imported: never torch (this fake stands for any producer)
    (False, "other", "dlpack"),
])
def test_auto_output_follows_the_caller(monkeypatch, torch_imported, inputs, want):
    if not torch_imported:
        monkeypatch.setattr(runtime, "imported_torch", lambda: None)
    xs = {"torch": torch_inputs(), "other": (FakeInput("a"), FakeInput("b")),
          "mixed": (TorchInput.make("a"), FakeInput("b"))}[inputs]
    runner = aotirt.Runner(FakeModel(out_spec=_spec((0, 0))))
    assert runner.output == "auto"
    out = runner(*xs)
    if want == "torch":
        assert isinstance(out, tuple) and [_kind(o) for o in out] == ["torch", "torch"]  # spec applied
    else:
        assert isinstance(out, list) and [_kind(o) for o in out] == ["dlpack", "dlpack"]  # no spec: a list
    assert [_kind(o) for o in runner.run_list(xs)] == [want, want]


def test_really_without_torch_in_sys_modules(monkeypatch):
    """The real imported_torch: sys.modules without torch (None there also makes `import torch` fail)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    runner = aotirt.Runner(FakeModel(out_spec="whatever"))
    assert runner._torch is None and runner._out_treespec is None
    out = runner(FakeInput("a"), FakeInput("b"))
    assert [_kind(o) for o in out] == ["dlpack", "dlpack"]
    with pytest.raises(aotirt.InputError, match=r"output='torch' needs torch, which is not importable"):
        runner(FakeInput("a"), FakeInput("b"), output="torch")
    with pytest.raises(aotirt.InputError, match=r"output='torch' needs torch"):
        aotirt.Runner(FakeModel(), output="torch")  # asked at load: refused at load


def test_explicit_output_overrides_the_rule(monkeypatch):
    model = FakeModel(out_spec=_spec((0, 0)))
    as_dlpack = aotirt.Runner(model, output="dlpack")
    out = as_dlpack(*torch_inputs())
    assert isinstance(out, list) and [_kind(o) for o in out] == ["dlpack", "dlpack"]
    out = as_dlpack(*torch_inputs(), output="torch")  # per call beats the runner's default
    assert isinstance(out, tuple) and [_kind(o) for o in out] == ["torch", "torch"]
    as_torch = aotirt.Runner(model, output="torch")
    out = as_torch(FakeInput("a"), FakeInput("b"))  # non-torch inputs, torch asked: torch out, eager structure
    assert isinstance(out, tuple) and [_kind(o) for o in out] == ["torch", "torch"]
    assert [_kind(o) for o in as_torch.run_list([FakeInput("a"), FakeInput("b")], output="dlpack")] == ["dlpack"] * 2
    assert [_kind(o) for o in as_torch.run_list([FakeInput("a"), FakeInput("b")], output="auto")] == ["dlpack"] * 2
    # output="torch" imports torch when it is not imported yet (the caller asked for it)
    imported = []
    monkeypatch.setattr(runtime, "imported_torch", lambda: None)
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__

    def tracking_import(name, *args, **kwargs):
        if name == "torch":
            imported.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", tracking_import)
    out = aotirt.Runner(model)(FakeInput("a"), FakeInput("b"), output="torch")
    assert imported and [_kind(o) for o in out] == ["torch", "torch"]
    imported.clear()
    aotirt.Runner(model)(*torch_inputs())  # auto: never imports
    aotirt.Runner(model)(FakeInput("a"), FakeInput("b"), output="dlpack")
    assert imported == []


def test_load_takes_the_output_choice(tmp_path, monkeypatch):
    native = FakeNative()
    monkeypatch.setattr(runtime, "_native", lambda: native)
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    runner = aotirt.load(str(pkg), output="dlpack")
    assert runner.output == "dlpack"
    assert [_kind(o) for o in runner.run_list(torch_inputs())] == ["dlpack", "dlpack"]
    assert aotirt.load(str(pkg)).output == "auto"


def test_load_shares_constants_with_a_runner_on_the_same_device_only(tmp_path, monkeypatch):
    native = FakeNative()
    monkeypatch.setattr(runtime, "_native", lambda: native)
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    prefill = aotirt.load(str(pkg))
    assert len(native.args) == 4  # no owner: the plain load
    aotirt.load(str(pkg), share_constants_with=prefill)
    assert native.args[:4] == (str(pkg), 0, 1, "model") and native.args[4] is prefill._model
    native.args = None
    with pytest.raises(aotirt.InputError, match="share_constants_with must be a Runner that aotirt.load returned, "
                                                "got str"):
        aotirt.load(str(pkg), share_constants_with="prefill.pt2")
    with pytest.raises(aotirt.InputError, match="share_constants_with was loaded on cuda:0; this package loads on "
                                                "cuda:1"):
        aotirt.load(str(pkg), device=1, share_constants_with=prefill)
    assert native.args is None  # refused before loading anything
    native.error = RuntimeError("package 'm.pt2': cannot share constants with 'p.pt2': 1 of its constants differ")
    with pytest.raises(aotirt.RuntimeLoadError, match="cannot share constants with 'p.pt2'"):
        aotirt.load(str(pkg), share_constants_with=prefill)


@pytest.mark.parametrize("bad", ["numpy", "Torch", "", None, 1, "dlpack "])
def test_invalid_output_values_are_refused_with_the_valid_list(tmp_path, monkeypatch, bad):
    match = r"output=.* is not valid; valid: \['auto', 'torch', 'dlpack'\]"
    native = FakeNative()
    monkeypatch.setattr(runtime, "_native", lambda: native)
    pkg = tmp_path / "m.pt2"
    pkg.write_bytes(b"x")
    with pytest.raises(aotirt.InputError, match=match) as info:
        aotirt.load(str(pkg), output=bad)
    assert isinstance(info.value, aotirt.Error) and isinstance(info.value, ValueError)
    assert native.args is None  # refused before loading anything
    with pytest.raises(aotirt.InputError, match=match):
        aotirt.Runner(FakeModel(), output=bad)
    if bad is None:
        return  # None per call means "the runner's default"
    model = FakeModel()
    runner = aotirt.Runner(model)
    with pytest.raises(aotirt.InputError, match=match):
        runner(*torch_inputs(), output=bad)
    with pytest.raises(aotirt.InputError, match=match):
        runner.run_list(torch_inputs(), output=bad)
    assert model.calls == []  # refused before running
    with pytest.raises(aotirt.InputError, match=match):
        aotirt.capture(runner, *torch_inputs(), stream=0x1234, output=bad)


class FakeGraph:
    """Stands in for _C.CapturedModel."""

    def __init__(self, model, capsules, stream, warmup, alias_inputs):
        self.args = (capsules, stream, warmup)
        self.alias_inputs = alias_inputs
        self.replays = []

    def replay(self, capsules, stream=None, outputs=True):
        self.replays.append((stream, outputs))
        return [torch.full((2,), 7.0).__dlpack__()] if outputs else None


def test_capture_follows_the_output_rule_and_never_imports_torch(monkeypatch):
    class Native:
        CapturedModel = FakeGraph
    monkeypatch.setattr(runtime, "_native", lambda: Native())
    runner = aotirt.Runner(FakeModel(outputs=["y"], out_spec=_spec(torch.zeros(1))))
    graphed = aotirt.capture(runner, *torch_inputs(), stream=0x1234)
    assert graphed._graph.args == (["capsule-a", "capsule-b"], 0x1234, 2) and graphed._graph.alias_inputs is False
    assert aotirt.capture(runner, *torch_inputs(), stream=0x1234, alias_inputs=True)._graph.alias_inputs is True
    assert _kind(graphed(*torch_inputs())) == "torch"  # torch in: torch out, the eager structure (one tensor)
    out = graphed(FakeInput("a"), FakeInput("b"))
    assert isinstance(out, list) and _kind(out[0]) == "dlpack" and out[0]._stream == 0x1234
    assert isinstance(graphed(*torch_inputs(), output="dlpack"), list)
    monkeypatch.setattr(runtime, "imported_torch", lambda: None)
    with pytest.raises(aotirt.InputError, match=r"capturing without stream= needs torch already imported"):
        aotirt.capture(runner, FakeInput("a"), FakeInput("b"))
    graphed = aotirt.capture(runner, FakeInput("a"), FakeInput("b"), stream=0x1234)
    assert _kind(graphed(*torch_inputs())[0]) == "dlpack"  # torch not imported: DLPack, a list
    # A stream the caller gave: every replay on it (None = the capture stream), with outputs (the lean torch path,
    # on torch's current stream, is for captures on a stream torch made, with CUDA tensors: tests/gpu).
    assert set(graphed._graph.replays) == {(None, True)}


# ------------------------------------------------------------------------------- DLPackTensor, the producer side

class StreamRecorder:
    def __init__(self):
        self.waits = []

    def wait(self, producer, consumer, device_index):
        self.waits.append((producer, consumer, device_index))


@pytest.mark.parametrize("run_stream,consumer,want", [
    (0, None, []), (0, 1, []), (0, -1, []),          # same stream (None and 1: legacy default), or no sync asked
    (0, 0x5678, [(0, 0x5678, 0)]),                   # CuPy/JAX on their own stream: it waits for ours
    (0, 2, [(0, 2, 0)]),                             # per-thread default stream
    (0x1234, None, [(0x1234, 0, 0)]), (0x1234, 0x1234, []), (0x1234, -1, []),
])
def test_dlpack_consumer_stream_waits_for_the_run_stream(monkeypatch, run_stream, consumer, want):
    rec = StreamRecorder()
    monkeypatch.setattr(runtime, "_cuda_streams", lambda: rec)
    t = aotirt.DLPackTensor("capsule", (2, 0), run_stream)  # not a capsule: the device given is kept
    assert t.__dlpack_device__() == (2, 0)
    assert t.__dlpack__(stream=consumer, max_version=(1, 0)) == "capsule"
    assert rec.waits == want


def test_dlpack_host_outputs_and_refusals(monkeypatch):
    rec = StreamRecorder()
    monkeypatch.setattr(runtime, "_cuda_streams", lambda: rec)
    host = aotirt.DLPackTensor(torch.arange(3.0).__dlpack__(), (2, 0), 0x1234)
    assert host.__dlpack_device__() == (1, 0)  # the capsule's own device wins over the default
    with pytest.raises(BufferError, match="without a copy"):
        host.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"on DLPack device \(1, 0\), not \(2, 0\)"):
        host.__dlpack__(dl_device=(2, 0))
    assert "ready" in repr(host)  # refusals do not consume it
    assert np.from_dlpack(host).tolist() == [0.0, 1.0, 2.0]  # numpy passes max_version / dl_device / copy
    assert rec.waits == [] and "consumed" in repr(host)
    gpu = aotirt.DLPackTensor("capsule", (2, 0))
    assert gpu.__dlpack__(None, dl_device=(2, 0), copy=False) == "capsule"  # positional stream, same device


def test_capsule_device_is_read_by_the_native_module(monkeypatch):
    _C = runtime._native()
    monkeypatch.setattr(runtime, "_native_module", _C)
    x = np.zeros(3, dtype=np.float32)
    assert runtime._capsule_device(x.__dlpack__(), (9, 9)) == (1, 0)
    # Ours are classic capsules; anything else (a versioned capsule, not a capsule) keeps the default.
    assert runtime._capsule_device(x.__dlpack__(max_version=(1, 0)), (9, 9)) == (9, 9)
    assert runtime._capsule_device("not a capsule", (9, 9)) == (9, 9)


def test_runner_hands_the_run_stream_to_dlpack_outputs():
    out = aotirt.Runner(FakeModel()).run_list([FakeInput("a"), FakeInput("b")], stream=0x7F001234)
    assert [o._stream for o in out] == [0x7F001234] * 2


def test_stream_wait_goes_through_the_native_module(monkeypatch):
    """The real native call: without a GPU the CUDA error becomes a RunError naming the hand-off (with one, the
    legacy default stream waits for the per-thread stream)."""
    monkeypatch.setattr(runtime, "_native_module", runtime._native())
    cuda = runtime._cuda_streams()
    assert cuda is not None
    try:
        cuda.wait(2, 0, 0)
    except aotirt.RunError as e:
        assert "handing an output over to stream 0x0 failed" in str(e), e


# ------------------------------------------------------------------ no torch in a process that does not use it

_NO_TORCH_SCRIPT = r"""
import json, os, sys
import numpy as np
import aotirt
from aotirt import runtime

report = {"errors": {}}
def expect(name, fn, error):
    try:
        fn()
    except error as e:
        report["errors"][name] = f"{type(e).__name__}: {e}"[:300]
    else:
        raise AssertionError(name + ": no error")

tmp = sys.argv[1]
garbage = os.path.join(tmp, "garbage.pt2")
with open(garbage, "wb") as f:
    f.write(b"not a package" * 100)
expect("missing", lambda: aotirt.load(os.path.join(tmp, "nope.pt2")), aotirt.PackageError)
expect("directory", lambda: aotirt.load(tmp), aotirt.PackageError)
expect("garbage", lambda: aotirt.load(garbage), aotirt.RuntimeLoadError)   # through the real _C when present
expect("garbage_dlpack", lambda: aotirt.load(garbage, output="dlpack"), aotirt.RuntimeLoadError)
expect("bad_output", lambda: aotirt.load(garbage, output="cupy"), aotirt.InputError)
try:
    report["native"] = runtime._native().shims_version()
    report["gemm_stats"] = sorted(aotirt.gemm_stats() or {})[:3]
except aotirt.Error as e:
    report["native"] = "unavailable: " + str(e)[:200]

class Model:  # stands in for _C.Model (no GPU here): host outputs from numpy, a real tuple out_spec
    input_names, output_names, in_spec, out_spec = ["x"], ["y", "z"], "", os.environ["AOTIRT_TEST_SPEC"]
    device_index, metadata, package_path = 0, {}, "fake.pt2"
    def run(self, capsules, stream):
        return [np.arange(3.0).__dlpack__(), np.ones(2, dtype=np.float32).__dlpack__()]

class GpuInput:
    def __dlpack_device__(self):
        return (2, 0)
    def __dlpack__(self, stream=None, **kwargs):
        return "capsule"

runner = aotirt.Runner(Model())
out = runner(GpuInput())
assert isinstance(out, list), type(out)  # no torch: no pytree, a list even with a tuple out_spec
report["outputs"] = [np.from_dlpack(o).tolist() for o in out]
report["run_list"] = [type(o).__name__ for o in runner.run_list([GpuInput()], stream=0x1234, output="dlpack")]
expect("capture_no_stream", lambda: aotirt.capture(runner, GpuInput()), aotirt.InputError)
expect("bad_call_output", lambda: runner(GpuInput(), output="jax"), aotirt.InputError)
report["torch_in_sys_modules"] = "torch" in sys.modules
with open("/proc/self/maps") as f:
    report["libtorch_maps"] = sorted({l.split()[-1] for l in f if "libtorch" in l})
print("REPORT " + json.dumps(report))
"""


def test_load_and_run_never_import_torch(tmp_path):
    """A subprocess that uses aotirt as a CuPy/JAX process would: torch is installed here, so this can fail."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), AOTIRT_TEST_SPEC=_spec((0, 0)))
    res = subprocess.run([sys.executable, "-c", _NO_TORCH_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout.split("REPORT ", 1)[1])
    print(json.dumps(report, indent=1))
    assert report["outputs"] == [[0.0, 1.0, 2.0], [1.0, 1.0]]
    assert report["run_list"] == ["DLPackTensor", "DLPackTensor"]
    assert "does not exist" in report["errors"]["missing"]
    assert "valid: ['auto', 'torch', 'dlpack']" in report["errors"]["bad_output"]
    if NATIVE_ERROR is None:  # the real native module (and its libcudart) was loaded in the subprocess too
        assert not report["native"].startswith("unavailable"), report["native"]
        assert "cannot load package" in report["errors"]["garbage"] and "garbage.pt2" in report["errors"]["garbage"]
    assert report["torch_in_sys_modules"] is False
    assert report["libtorch_maps"] == []


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

    def add_cudnn_search_dir(self, d):
        self.dirs.append(("cudnn", d))

    def add_cufft_search_dir(self, d):
        self.dirs.append(("cufft", d))


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


def test_nvidia_wheel_dirs_are_given_to_the_cublaslt_cudnn_and_cufft_loaders(tmp_path, monkeypatch):
    lib = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    cudnn = tmp_path / "site" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    cudnn.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(runtime, "_vendor_dirs_added", [])
    assert str(lib) in runtime.nvidia_wheel_lib_dirs()
    assert str(cudnn) not in runtime.nvidia_wheel_lib_dirs()  # cuBLASLt's folders only by default
    native = FakeNative()
    runtime._add_nvidia_wheel_dirs(native)
    runtime._add_nvidia_wheel_dirs(native)  # once per process
    assert native.dirs.count(str(lib)) == 1
    assert native.dirs.count(("cudnn", str(cudnn))) == 1 and ("cudnn", str(lib)) not in native.dirs
    # cuFFT's wheel (nvidia-cufft for CUDA 13) installs into nvidia/cu13/lib as cuBLAS's does
    assert native.dirs.count(("cufft", str(lib))) == 1 and ("cufft", str(cudnn)) not in native.dirs


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
@pytest.mark.parametrize("root_len", [8, 230, 1000])
def test_real_native_reads_entries_of_a_long_package_name(tmp_path, root_len):
    """torch names a package's entries after its file ('<name>/data/aotinductor/model/<hash>.wrapper_metadata.json'),
    so a long package name makes entry names of 256 bytes or more, which minizip's name lookup refuses: the loader
    must still read the metadata, which it shows by stopping at its device check ('cpu' here, before any GPU work).
    This failed at 230 (a 300-byte metadata entry) before the loader kept each entry's position."""
    root = ("p" * root_len)[:root_len]
    base = f"{root}/data/aotinductor/model/c5yz6l55no5vlxvzf75xkmcydm6vyoolsognk6deh7ctmof6k2fo"
    pkg = tmp_path / "long.pt2"
    with zipfile.ZipFile(pkg, "w") as z:
        z.writestr(f"{root}/archive_format", "pt2")
        z.writestr(f"{base}.wrapper.so", b"not a library" * 20)
        z.writestr(f"{base}.wrapper_metadata.json", json.dumps({"AOTI_DEVICE_KEY": "cpu"}))
    with pytest.raises(aotirt.RuntimeLoadError, match="was compiled for device 'cpu'"):
        aotirt.load(str(pkg))


@needs_native
def test_real_native_refuses_an_entry_name_longer_than_it_reads(tmp_path):
    pkg = tmp_path / "huge.pt2"
    with zipfile.ZipFile(pkg, "w") as z:
        z.writestr("x" * 5000 + "/data/aotinductor/model/c.wrapper.so", b"x")
    with pytest.raises(aotirt.RuntimeLoadError, match="an entry name is 5036 bytes long, more than this loader reads"):
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


def test_torch_stream_takes_torchs_raw_getter_and_falls_back_to_the_public_api():
    """_torch_stream: torch._C._cuda_getCurrentRawStream(device) where torch has it (CUDA builds), else
    torch.cuda.current_stream(device).cuda_stream; the same int either way, for the device asked."""
    import types
    calls = []

    def raw(dev):
        calls.append(("raw", dev))
        return 0x1234 + dev

    def current_stream(dev):
        calls.append(("public", dev))
        return types.SimpleNamespace(cuda_stream=0x1234 + dev)

    cuda = types.SimpleNamespace(current_stream=current_stream)
    with_raw = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=raw), cuda=cuda)
    without = types.SimpleNamespace(_C=types.SimpleNamespace(), cuda=cuda)
    assert runtime._torch_stream(with_raw, 1) == 0x1235 and calls == [("raw", 1)]
    calls.clear()
    assert runtime._torch_stream(without, 2) == 0x1236 and calls == [("public", 2)]
