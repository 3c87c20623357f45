"""aotirt.executorch: CudaBackend / CudaPartitioner wiring up to the point that needs a GPU, the .pte (+ .ptd) payload
and its extraction into a .pt2. The GPU step (AOTInductor compiling for CUDA) is replaced by a fake payload here;
tests/gpu/test_lowering_gpu.py runs the real one."""
import json
import os
import subprocess
import sys
import zipfile

import pytest

import aotirt
from aotirt import executorch as ax
from aotirt.specs import CompileOptions

needs_et = pytest.mark.skipif(not ax.HAVE_EXECUTORCH, reason=f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
SEED_SPECS = lambda: [ax.CudaBackend.generate_method_name_compile_spec("forward"),  # noqa: E731
                      ax.CompileSpec("max_autotune_gemm_backends", b"ATEN,TRITON")]


def test_compile_spec_is_executorchs_class_when_installed():
    if ax.HAVE_EXECUTORCH:
        from executorch.exir.backend.compile_spec_schema import CompileSpec
        assert ax.CompileSpec is CompileSpec
    spec = ax.CudaBackend.generate_method_name_compile_spec("forward")
    assert (spec.key, spec.value) == ("method_name", b"forward")


def test_seed_call_parses_to_options():
    p = ax.CudaPartitioner(SEED_SPECS())
    assert p.options == CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", method_name="forward")
    assert p.device_index == 0
    assert ax.CudaBackend.method_name_from_compile_specs(SEED_SPECS()) == "forward"


@needs_et
def test_partitioner_delegates_to_our_backend_with_a_target_device():
    p = ax.CudaPartitioner(SEED_SPECS())
    assert p.delegation_spec.backend_id == ax.BACKEND_ID == ax.CudaBackend.__name__
    keys = [(s.key, s.value) for s in p.delegation_spec.compile_specs]
    assert keys == [("method_name", b"forward"), ("max_autotune_gemm_backends", b"ATEN,TRITON"),
                    ("target_device", b"cuda:0")]
    p1 = ax.CudaPartitioner(SEED_SPECS() + [ax.CompileSpec("target_device", b"cuda:1")])
    assert p1.device_index == 1 and len(p1.delegation_spec.compile_specs) == 3


@pytest.mark.parametrize("extra,error,match", [
    ([ax.CompileSpec("max_autotune_gemm_backends", b"CUTLASS")], aotirt.SpecError, "given twice"),
    ([ax.CompileSpec("triton_kernel_mode", b"OFF")], aotirt.SpecError, "unknown compile spec 'triton_kernel_mode'"),
    ([ax.CompileSpec("platform", b"windows")], aotirt.UnsupportedPlatformError, "windows_cuda: max_autotune_gemm"),
    ([ax.CompileSpec("target", b"rocm")], aotirt.UnsupportedPlatformError, "rocm"),
    ([ax.CompileSpec("target_device", b"cpu")], aotirt.SpecError, "target_device='cpu' is not supported"),
])
def test_bad_specs_are_refused_when_the_partitioner_is_made(extra, error, match):
    with pytest.raises(error, match=match):
        ax.CudaPartitioner(SEED_SPECS() + extra)


def test_unknown_backend_value_is_refused_listing_valid_ones():
    with pytest.raises(aotirt.SpecError, match=r"\['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"):
        ax.CudaPartitioner([ax.CompileSpec("max_autotune_gemm_backends", b"CUTLASS")])


# ---- max_autotune_conv_backends through the door ----------------------------------------------------------------
@pytest.mark.parametrize("value,canonical", [(b"ATEN,TRITON", "ATEN,TRITON"), (b"triton, aten", "ATEN,TRITON"),
                                             (b"ATEN", "ATEN"), (b"TRITON", "TRITON")])
def test_conv_backends_spec_parses_like_the_gemm_spec(value, canonical):
    p = ax.CudaPartitioner(SEED_SPECS() + [ax.CompileSpec("max_autotune_conv_backends", value)])
    assert p.options == CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", method_name="forward",
                                       max_autotune_conv_backends=canonical)
    assert aotirt.inductor_options(p.options, target="cuda")["max_autotune_conv_backends"] == canonical
    if ax.HAVE_EXECUTORCH:  # handed on to the backend as given
        assert ("max_autotune_conv_backends", value) in [(s.key, s.value) for s in p.delegation_spec.compile_specs]


@pytest.mark.parametrize("extra,error,match", [
    ([ax.CompileSpec("max_autotune_conv_backends", b"CUTLASS")], aotirt.SpecError,
     r"valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ([ax.CompileSpec("target", b"rocm"), ax.CompileSpec("max_autotune_conv_backends", b"ATEN,TRITON")],
     aotirt.UnsupportedPlatformError, r"rocm: max_autotune_conv_backends='ATEN,TRITON'.*use "
                                      r"max_autotune_conv_backends='TRITON'"),
])
def test_bad_conv_backend_specs_are_refused_when_the_partitioner_is_made(extra, error, match):
    with pytest.raises(error, match=match):
        ax.CudaPartitioner([ax.CudaBackend.generate_method_name_compile_spec("forward")] + extra)


# ---- attention_backend through the door ----------------------------------------------------------------------------
@pytest.mark.parametrize("value,canonical", [(b"CUDNN", "CUDNN"), (b"cudnn ", "CUDNN"), (b"MATH", "MATH")])
def test_attention_backend_spec_parses_like_the_gemm_spec(value, canonical):
    p = ax.CudaPartitioner(SEED_SPECS() + [ax.CompileSpec("attention_backend", value)])
    assert p.options == CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", method_name="forward",
                                       attention_backend=canonical)
    assert ax.parse_compile_specs([ax.CompileSpec("attention_backend", value)])[0].attention_backend == canonical
    if ax.HAVE_EXECUTORCH:  # handed on to the backend as given
        assert ("attention_backend", value) in [(s.key, s.value) for s in p.delegation_spec.compile_specs]


@pytest.mark.parametrize("extra,error,match", [
    ([ax.CompileSpec("attention_backend", b"FLASH")], aotirt.SpecError,
     r"attention_backend='FLASH' is not valid; valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ([ax.CompileSpec("attention_backend", b"CUDNN"), ax.CompileSpec("attention_backend", b"MATH")], aotirt.SpecError,
     "given twice"),
    ([ax.CompileSpec("platform", b"windows"), ax.CompileSpec("attention_backend", b"CUDNN")],
     aotirt.UnsupportedPlatformError, r"windows_cuda: attention_backend='CUDNN'.*use attention_backend='MATH'.*or 'TRITON'"),
    ([ax.CompileSpec("target", b"rocm"), ax.CompileSpec("attention_backend", b"CUDNN")],
     aotirt.UnsupportedPlatformError, r"rocm: attention_backend='CUDNN'.*use attention_backend='MATH'"),
])
def test_bad_attention_specs_are_refused_when_the_partitioner_is_made(extra, error, match):
    with pytest.raises(error, match=match):
        ax.CudaPartitioner([ax.CudaBackend.generate_method_name_compile_spec("forward")] + extra)


@needs_et
@pytest.mark.parametrize("value,enabled", [(b"MATH", {"MATH"}), (b"CUDNN", {"CUDNN", "FLASH", "EFFICIENT"})])
def test_backend_lowers_under_the_attention_backend_context(monkeypatch, value, enabled):
    """CudaBackend.preprocess enters lowering.lowering_context with the parsed options (stopped there: no GPU)."""
    import torch
    from aotirt import lowering
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    seen = []
    real = lowering.lowering_context

    class Stop(Exception):
        pass

    def probe(torch_, opts, device_index):
        with real(torch_, opts, None):
            b = torch.backends.cuda
            seen.append((opts.attention_backend, {k for k, v in {
                "MATH": b.math_sdp_enabled(), "FLASH": b.flash_sdp_enabled(), "EFFICIENT": b.mem_efficient_sdp_enabled(),
                "CUDNN": b.cudnn_sdp_enabled()}.items() if v}))
        raise Stop()

    monkeypatch.setattr(lowering, "lowering_context", probe)
    with pytest.raises(Stop):
        ax.CudaBackend.preprocess(None, [ax.CompileSpec("target", b"cuda"), ax.CompileSpec("attention_backend", value)])
    assert seen == [(value.decode(), enabled)]


# ---- through to_edge_transform_and_lower(...).to_executorch() ----------------------------------------------------------
FAKE_SO = b"\x7fELF fake wrapper library"
FAKE_WEIGHTS = bytes(range(256)) * 4
FAKE_META = {"AOTI_DEVICE_KEY": "cuda", "aotirt_platform": "linux_cuda", "aotirt_max_autotune_gemm_backends": "ATEN,TRITON"}


def _model():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.lin(x).relu()
    return M(), (torch.randn(2, 8),)


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    """The seed's call through ExecuTorch with the GPU step faked: (.pte dir, what the backend received)."""
    if not ax.HAVE_EXECUTORCH:
        pytest.skip(f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
    import torch
    from executorch.exir import to_edge_transform_and_lower
    seen = []

    def fake_lower(edge_program, opts, device_index):
        seen.append((opts, device_index, {str(n.target) for n in edge_program.graph.nodes if n.op == "call_function"}))
        return ax.Payload(opts.method_name, FAKE_SO, FAKE_WEIGHTS, dict(FAKE_META))

    real = ax._lower_to_payload
    ax._lower_to_payload = fake_lower
    try:
        model, inputs = _model()
        ep = torch.export.export(model, inputs)
        et = to_edge_transform_and_lower(ep, partitioner=[ax.CudaPartitioner(SEED_SPECS())]).to_executorch()
    finally:
        ax._lower_to_payload = real
    d = tmp_path_factory.mktemp("pte")
    (d / "model.pte").write_bytes(et.buffer)
    et.write_tensor_data_to_file(str(d))
    return d, seen


def test_backend_received_the_parsed_specs(lowered):
    _, seen = lowered
    assert len(seen) == 1
    opts, device_index, ops = seen[0]
    assert opts == CompileOptions(max_autotune_gemm_backends="ATEN,TRITON") and device_index == 0
    assert any("linear" in o or "addmm" in o for o in ops), ops


def test_pte_and_ptd_are_written(lowered):
    d, _ = lowered
    assert sorted(os.listdir(d)) == ["aotirt_cuda_blob.ptd", "model.pte"]
    assert FAKE_SO in (d / "model.pte").read_bytes()  # the wrapper .so travels in the .pte
    assert FAKE_WEIGHTS in (d / "aotirt_cuda_blob.ptd").read_bytes()  # the weights in the .ptd
    assert FAKE_WEIGHTS not in (d / "model.pte").read_bytes()


def test_payload_reads_back(lowered):
    d, _ = lowered
    (p,) = ax.read_payloads(str(d / "model.pte"))
    assert (p.method_name, p.so, p.weights, p.metadata) == ("forward", FAKE_SO, FAKE_WEIGHTS, FAKE_META)


def test_extract_package_writes_the_layout_the_runtime_reads(lowered, tmp_path):
    d, _ = lowered
    out = ax.extract_package(str(d / "model.pte"), str(tmp_path / "model.pt2"))
    with zipfile.ZipFile(out) as z:
        names = sorted(z.namelist())
        assert names == ["model/archive_format", "model/data/aotinductor/model/forward.wrapper.so",
                         "model/data/aotinductor/model/forward.wrapper_metadata.json",
                         "model/data/aotinductor/model/forward.wrapper_weights.blob"]
        assert z.read("model/data/aotinductor/model/forward.wrapper.so") == FAKE_SO
        assert z.read("model/data/aotinductor/model/forward.wrapper_weights.blob") == FAKE_WEIGHTS
        assert json.loads(z.read("model/data/aotinductor/model/forward.wrapper_metadata.json")) == FAKE_META


def test_extract_errors(lowered, tmp_path):
    d, _ = lowered
    with pytest.raises(aotirt.ExecuTorchError, match=r"named data .* not found; pass the .ptd"):
        ax.extract_package(str(d / "model.pte"), str(tmp_path / "m.pt2"), ptd_paths=[])
    with pytest.raises(aotirt.ExecuTorchError, match="0 aotirt delegates match method_name='encode'"):
        ax.extract_package(str(d / "model.pte"), str(tmp_path / "m.pt2"), method_name="encode")


@needs_et
def test_a_pte_without_our_delegate_is_refused(tmp_path):
    import torch
    from executorch.exir import to_edge
    model, inputs = _model()
    et = to_edge(torch.export.export(model, inputs)).to_executorch()
    (tmp_path / "plain.pte").write_bytes(et.buffer)
    with pytest.raises(aotirt.ExecuTorchError, match="has no AotirtCudaBackend delegate .*CudaPartitioner"):
        ax.extract_package(str(tmp_path / "plain.pte"), str(tmp_path / "m.pt2"))


@needs_et
def test_the_real_backend_stops_where_a_gpu_is_needed():
    import torch
    from executorch.exir import to_edge_transform_and_lower
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/gpu/test_lowering_gpu.py runs the real lowering")
    model, inputs = _model()
    with pytest.raises(Exception) as info:
        to_edge_transform_and_lower(torch.export.export(model, inputs),
                                    partitioner=[ax.CudaPartitioner(SEED_SPECS())]).to_executorch()
    chain, e = [], info.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    refusal = next((x for x in chain if isinstance(x, aotirt.LoweringError)), None)
    assert refusal is not None and "cannot lower for CUDA" in str(refusal), chain


def test_payload_from_files_checks_the_shims(tmp_path):
    base = tmp_path / "abc"
    (tmp_path / "abc.wrapper.so").write_bytes(FAKE_SO)
    (tmp_path / "abc.wrapper_weights.blob").write_bytes(FAKE_WEIGHTS)
    (tmp_path / "abc.wrapper_metadata.json").write_text(json.dumps({"AOTI_DEVICE_KEY": "cuda"}))
    (tmp_path / "abc.wrapper.cpp").write_text("AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_bmm_out(a, b, c));")
    files = [f"{base}.wrapper.cpp", f"{base}.wrapper.so", f"{base}.wrapper_weights.blob",
             f"{base}.wrapper_metadata.json"]
    p = ax.payload_from_files(files, CompileOptions(), "linux_cuda")
    assert (p.so, p.weights, p.metadata) == (FAKE_SO, FAKE_WEIGHTS, {"AOTI_DEVICE_KEY": "cuda"})
    with pytest.raises(aotirt.UnsupportedShimError, match="method forward would call 1 shim.*aoti_torch_cuda_bmm_out"):
        ax.payload_from_files(files, CompileOptions(), "rocm")
    with pytest.raises(aotirt.LoweringError, match="no wrapper library"):
        ax.payload_from_files(files[:1], CompileOptions(), "linux_cuda")


def test_without_executorch_the_module_imports_and_specs_still_parse():
    code = r"""
import sys
sys.modules['executorch'] = None  # as if not installed
import aotirt.executorch as ax
assert not ax.HAVE_EXECUTORCH and ax.EXECUTORCH_IMPORT_ERROR
p = ax.CudaPartitioner([ax.CudaBackend.generate_method_name_compile_spec('forward'),
                        ax.CompileSpec('max_autotune_gemm_backends', b'triton, aten')])
assert p.options.max_autotune_gemm_backends == 'ATEN,TRITON'
try:
    p.partition(None)
except ax.ExecuTorchError as e:
    assert 'executorch==' in str(e), e
    print('ok')
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr


# ---- a partition's input/output order vs the method's (read from the program's DelegateCall) -----------------------
def _plan(inputs, outputs, delegate_args, delegate_index=0):
    from types import SimpleNamespace as NS
    call = NS(delegate_index=delegate_index, args=delegate_args)
    other = NS(op_index=0, args=[0, 1])  # a KernelCall: no delegate_index
    return NS(name="forward", inputs=inputs, outputs=outputs,
              chains=[NS(instructions=[NS(instr_args=other), NS(instr_args=call)])])


def test_delegate_io_order_maps_method_positions():
    from aotirt import executorch as ax
    # method inputs are values 0, 1, 2; the delegate takes (1, 2, 0) and returns values (9, 8); method outputs (8, 9)
    ins, outs = ax._delegate_io_order(_plan([0, 1, 2], [8, 9], [1, 2, 0, 9, 8]), 0, 3)
    assert ins == [1, 2, 0]
    assert outs == [1, 0]


def test_delegate_io_order_marks_values_from_elsewhere_and_missing_calls():
    from aotirt import executorch as ax
    ins, outs = ax._delegate_io_order(_plan([0, 1], [7], [5, 1, 6]), 0, 2)
    assert ins == [None, 1] and outs == [None]
    with pytest.raises(ax.ExecuTorchError, match="no DelegateCall for delegate 3"):
        ax._delegate_io_order(_plan([0], [1], [0, 1]), 3, 1)


def test_pte_method_reorders_and_refuses_split_graphs():
    from aotirt import executorch as ax
    seen = []

    def runner(*xs):
        seen.append(xs)
        return ("d0", "d1")

    p = ax.Payload("forward", b"", None, {}, input_order=[1, 2, 0], output_order=[1, 0])
    m = ax.PteMethod(p, runner)
    assert m("x", "y", "z") == ("d1", "d0")
    assert seen == [("y", "z", "x")]
    with pytest.raises(ax.ExecuTorchError, match="takes 3 inputs, got 2"):
        m("x", "y")
    with pytest.raises(ax.ExecuTorchError, match="not method inputs"):
        ax.PteMethod(ax.Payload("forward", b"", None, {}, input_order=[None, 0], output_order=[0]), runner)
    with pytest.raises(ax.ExecuTorchError, match="do not come from the aotirt delegate"):
        ax.PteMethod(ax.Payload("forward", b"", None, {}, input_order=[0], output_order=[None]), runner)


# ---- AUTO through the ExecuTorch door (the GPU steps faked: lowering, inputs, timing) ---------------------------------
class _WrapperTimer:
    """CudaGraphTimer stand-in: ms per candidate, read from the wrapper bytes the fake lowering wrote."""

    def __init__(self, ms, use_graphs=True):
        self.ms, self.order = ms, []

    def __call__(self, path, example_inputs, device_index):
        from aotirt import auto
        with zipfile.ZipFile(path) as z:
            so = z.read(next(n for n in z.namelist() if n.endswith(".wrapper.so"))).decode()
        key = so.split("wrapper for ")[1]
        self.order.append(key)
        return auto.Measurement(ms=self.ms[key], method=auto.METHOD_GRAPH, device="Fake GPU")

    def close(self):
        pass


def _auto_lowering(monkeypatch, ms, fields):
    """Fakes the GPU steps of an AUTO lowering; returns (lowered: list of the candidates' field values, timer)."""
    from aotirt import auto
    lowered_with = []

    def fake_lower(edge_program, opts, device_index):
        key = "|".join(str(getattr(opts, f)) for f in fields)
        lowered_with.append(key)
        meta = dict(FAKE_META, **{f"aotirt_{f}": str(getattr(opts, f)) for f in fields})
        return ax.Payload(opts.method_name, b"\x7fELF wrapper for " + key.encode(), FAKE_WEIGHTS, meta)

    timer = _WrapperTimer(ms)
    monkeypatch.setattr(auto, "CudaGraphTimer", lambda use_graphs=True: timer)
    monkeypatch.setattr(ax, "_lower_to_payload", fake_lower)
    monkeypatch.setattr(ax, "example_inputs_of", lambda torch, ep, device_index: (torch.randn(2, 8),))
    return lowered_with, timer


def _lower_pte(tmp_path, specs_):
    import torch
    from executorch.exir import to_edge_transform_and_lower
    model, inputs = _model()
    et = to_edge_transform_and_lower(torch.export.export(model, inputs),
                                     partitioner=[ax.CudaPartitioner(specs_)]).to_executorch()
    (tmp_path / "model.pte").write_bytes(et.buffer)
    et.write_tensor_data_to_file(str(tmp_path))
    return ax.read_payloads(str(tmp_path / "model.pte"))


def test_gemm_auto_through_executorch_times_the_candidates_and_keeps_the_fastest(tmp_path, monkeypatch):
    if not ax.HAVE_EXECUTORCH:
        pytest.skip(f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
    from aotirt import auto
    lowered_with, timer = _auto_lowering(monkeypatch, {"TRITON": 0.5, "ATEN,TRITON": 0.3, "ATEN": 0.4},
                                         ("max_autotune_gemm_backends",))
    (payload,) = _lower_pte(tmp_path, [ax.CudaBackend.generate_method_name_compile_spec("forward"),
                                       ax.CompileSpec("max_autotune_gemm_backends", b"AUTO")])
    assert lowered_with == ["TRITON", "ATEN,TRITON", "ATEN"]  # each candidate lowered through this door, once
    assert payload.so == b"\x7fELF wrapper for ATEN,TRITON" and payload.weights == FAKE_WEIGHTS
    md = payload.metadata
    assert md[auto.META_CHOICE] == "ATEN,TRITON" and md["aotirt_max_autotune_gemm_backends"] == "ATEN,TRITON"
    assert json.loads(md[auto.META_TIMINGS]) == {"TRITON": 0.5, "ATEN,TRITON": 0.3, "ATEN": 0.4}
    assert len(timer.order) == 9  # 3 rounds of 3 candidates


def test_several_auto_fields_through_executorch_are_decided_in_stages(tmp_path, monkeypatch):
    if not ax.HAVE_EXECUTORCH:
        pytest.skip(f"executorch not importable: {ax.EXECUTORCH_IMPORT_ERROR}")
    fields = ("max_autotune_gemm_backends", "attention_backend")
    lowered_with, _ = _auto_lowering(monkeypatch, {
        "TRITON|CUDNN,TRITON": 0.5, "ATEN,TRITON|CUDNN,TRITON": 0.4, "ATEN|CUDNN,TRITON": 0.45}, fields)
    (payload,) = _lower_pte(tmp_path, [ax.CompileSpec("max_autotune_gemm_backends", b"auto"),
                                       ax.CompileSpec("attention_backend", b"AUTO")])
    # the model has no SDPA: the attention stage is skipped with the reason, keeping linux_cuda's default
    assert lowered_with == ["TRITON|CUDNN,TRITON", "ATEN,TRITON|CUDNN,TRITON", "ATEN|CUDNN,TRITON"]
    md = payload.metadata
    assert payload.so.endswith(b"ATEN,TRITON|CUDNN,TRITON")
    assert md["aotirt_attention_backend_auto_choice"] == "CUDNN,TRITON"
    assert "no scaled_dot_product_attention" in md["aotirt_attention_backend_auto_skipped"]


def test_auto_through_executorch_needs_static_shapes():
    import torch
    from torch.export import Dim
    model, inputs = _model()
    ep = torch.export.export(model, inputs, dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    with pytest.raises(aotirt.SpecError, match="AUTO through ExecuTorch needs static input shapes; input 'x'"):
        ax.example_inputs_of(torch, ep, 0)
