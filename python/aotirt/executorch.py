"""The ExecuTorch door: `CudaBackend` / `CudaPartitioner` lowering through aotirt's rules into a .pte (+ .ptd).

    from executorch.exir import to_edge_transform_and_lower
    from aotirt.executorch import CompileSpec, CudaBackend, CudaPartitioner
    et = to_edge_transform_and_lower(torch.export.export(model, inputs), partitioner=[CudaPartitioner([
        CudaBackend.generate_method_name_compile_spec("forward"),
        CompileSpec("max_autotune_gemm_backends", b"ATEN,TRITON"),
        CompileSpec("attention_backend", b"CUDNN"),      # or b"MATH" (the default); CUDNN: linux_cuda only
    ])]).to_executorch()
    open("model.pte", "wb").write(et.buffer); et.write_tensor_data_to_file(".")   # + aotirt_cuda_blob.ptd
    aotirt.executorch.extract_package("model.pte", "model.pt2")                     # -> aotirt.load("model.pt2")

The specs are aotirt.compile's, AUTO included (lower_payload: the candidates lowered through this door, timed on
this GPU with the aotirt runtime, the fastest kept). The delegate's payload is our AOTInductor output: the wrapper .so (named data in the .pte), the weights blob (named
data in the external file aotirt_cuda_blob.ptd) and the package metadata (JSON in the delegate's processed bytes).
`extract_package` writes them back as a .pt2 the aotirt runtime loads.

The backend registers under the id "AotirtCudaBackend" (ExecuTorch finds backends by class name, so reusing its own
"CudaBackend" would make the two collide); its payload is for the aotirt runtime, not ExecuTorch's CUDA runtime.
Importing this module works without executorch: `CompileSpec` is then a stand-in with the same fields, spec
parsing works, and lowering raises ExecuTorchError saying what to install.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from typing import Any, Callable, List, Sequence

from aotirt import lowering, moe, package, platforms, specs
from aotirt.device import parse_device
from aotirt.errors import ExecuTorchError, LoweringError, SpecError
from aotirt.progress import ensure_progress_visible, log
from aotirt.specs import CompileOptions

BACKEND_ID = "AotirtCudaBackend"
PAYLOAD_FORMAT = "aotirt-delegate-v1"
EXTERNAL_DATA_TAG = "aotirt_cuda_blob"  # the .ptd file name (without suffix) holding the weights
EXECUTORCH_REQUIREMENT = "executorch==1.5.1"  # the release built against torch 2.13 (tools/requirements.txt)


def _point_executorch_at_its_flatc() -> None:
    """ExecuTorch before 1.5 (1.2.0, the release for torch 2.11) runs `flatc` from PATH or $FLATC_EXECUTABLE to
    write and read a .pte, although its wheel ships the binary as executorch/data/bin/flatc (on PATH only as the
    console script of an activated venv, not after `pip install --target`). Point $FLATC_EXECUTABLE at the shipped
    binary when it is unset; 1.5 finds that binary itself and reads the variable only as a fallback."""
    if os.environ.get("FLATC_EXECUTABLE"):
        return
    import importlib.util
    spec = importlib.util.find_spec("executorch.data.bin")
    for d in (spec.submodule_search_locations or []) if spec else []:
        flatc = os.path.join(d, "flatc")
        if os.path.isfile(flatc) and os.access(flatc, os.X_OK):
            os.environ["FLATC_EXECUTABLE"] = flatc
            return


try:
    from executorch.exir.backend.compile_spec_schema import CompileSpec  # noqa: F401 (re-exported)
    from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
    HAVE_EXECUTORCH = True
    EXECUTORCH_IMPORT_ERROR = ""
    _point_executorch_at_its_flatc()
except Exception as e:  # ImportError, or an executorch built for another torch failing at import
    HAVE_EXECUTORCH = False
    EXECUTORCH_IMPORT_ERROR = f"{type(e).__name__}: {e}"

    @dataclasses.dataclass
    class CompileSpec:  # type: ignore[no-redef]
        """Stand-in for executorch.exir.backend.compile_spec_schema.CompileSpec (same fields)."""
        key: str
        value: bytes

    BackendDetails = object  # type: ignore[assignment,misc]
    PreprocessResult = None  # type: ignore[assignment,misc]


def _require_executorch(what: str) -> None:
    if not HAVE_EXECUTORCH:
        raise ExecuTorchError(f"{what} needs ExecuTorch, which is not importable ({EXECUTORCH_IMPORT_ERROR}); "
                              f"install `{EXECUTORCH_REQUIREMENT}` next to torch 2.13 (tools/setup.sh does), or "
                              f"`executorch==1.2.0` next to torch 2.11")


def parse_compile_specs(compile_specs: Sequence[Any]) -> tuple:
    """-> (CompileOptions, device index). Unknown keys and bad values are refused (SpecError) with the valid ones;
    platform rules apply as soon as the platform is known (UnsupportedPlatformError)."""
    opts, extra = specs.options_from_compile_specs(compile_specs)
    index = parse_device(extra.get("target_device", "cuda:0"), "target_device")
    return opts, (0 if index is None else index)


# ---- the delegate payload -------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Payload:
    """What one delegate carries: enough to rebuild a .pt2 for the aotirt runtime."""
    method_name: str
    so: bytes
    weights: bytes | None
    metadata: dict  # the AOTInductor package metadata (AOTI_DEVICE_KEY, aotirt_*), str -> str
    # Read back from a .pte (read_payloads): for each delegate input, the position of the method input it receives
    # (None: not a method input, e.g. the output of another partition); for each method output, the delegate output
    # it is (None: not produced by this delegate). A partition's inputs need not be in the method's order.
    input_order: list | None = None
    output_order: list | None = None


def _delegate_io_order(plan: Any, delegate_index: int, n_inputs: int) -> tuple:
    """(input_order, output_order) of plan.delegates[delegate_index] (see Payload) from the plan's DelegateCall
    instruction, whose args are the delegate's input value indices followed by its output value indices."""
    for chain in plan.chains:
        for ins in chain.instructions:
            call = ins.instr_args
            if getattr(call, "delegate_index", None) != delegate_index or not hasattr(call, "args"):
                continue
            args = list(call.args)
            method_inputs, method_outputs = list(plan.inputs), list(plan.outputs)
            ins_order = [method_inputs.index(a) if a in method_inputs else None for a in args[:n_inputs]]
            outs = args[n_inputs:]
            out_order = [outs.index(v) if v in outs else None for v in method_outputs]
            return ins_order, out_order
    raise ExecuTorchError(f"execution plan {getattr(plan, 'name', '?')!r} has no DelegateCall for delegate "
                          f"{delegate_index}")


def _named_key(data: bytes, suffix: str) -> str:
    return hashlib.sha256(data).hexdigest() + suffix  # content keys: several partitions never collide


def build_preprocess_result(payload: Payload):
    """Payload -> ExecuTorch PreprocessResult: .so in the .pte, weights in aotirt_cuda_blob.ptd, JSON header inline."""
    _require_executorch("writing a .pte")
    from executorch.exir._serialize._named_data_store import NamedDataStore
    store = NamedDataStore()
    so_key = _named_key(payload.so, "_aotirt_so")
    store.add_named_data(so_key, payload.so, 1, None)
    weights_key = None
    if payload.weights:
        weights_key = _named_key(payload.weights, "_aotirt_weights")
        store.add_named_data(weights_key, payload.weights, 1, EXTERNAL_DATA_TAG)
    header = {"format": PAYLOAD_FORMAT, "method_name": payload.method_name, "so_key": so_key,
              "weights_key": weights_key, "metadata": payload.metadata}
    return PreprocessResult(processed_bytes=json.dumps(header, sort_keys=True).encode(), debug_handle_map={},
                            data_store_output=store.get_named_data_store_output())


def _lower_to_payload(edge_program: Any, opts: CompileOptions, device_index: int) -> Payload:
    """The GPU part: moves the edge program to the GPU and compiles it with AOTInductor under aotirt's rules."""
    torch = lowering.import_torch()
    target = opts.resolved_target()
    opts = opts.resolved(target)  # the platform's defaults for the fields left None
    configs = specs.inductor_options(opts, target=target)
    key = opts.platform_key(target)
    lowering.check_cuda_available(torch, target)
    from executorch.backends.aoti.passes.replace_view_copy_with_view import ReplaceViewCopyWithViewPass
    from torch.export.passes import move_to_device_pass

    ensure_progress_visible()
    with lowering.lowering_context(torch, opts, device_index):
        ep = move_to_device_pass(edge_program, f"cuda:{device_index}")
        ReplaceViewCopyWithViewPass()(ep.graph_module)
        moe.rewrite_grouped_mm_fallback(torch, ep)
        lowering.preflight(torch, ep, opts, key, target, device_index)
        lowering.rewrite_attention(torch, ep, opts)
        configs[specs.METADATA_KEY] = {**configs[specs.METADATA_KEY],
                                       "aotirt_inputs": lowering.input_specs_json(torch, ep)}
        inputs = tuple(val for _, val in lowering.user_input_values(ep))
        log.info("compiling method %s for %s with AOTInductor (max_autotune=%s, gemm backends %s, attention %s) ...",
                 opts.method_name, key, "ON" if opts.max_autotune else "OFF", opts.max_autotune_gemm_backends,
                 opts.attention_backend)
        files, called = lowering.inductor_build(
            key, f"AOTInductor compilation of method {opts.method_name}",
            lambda: torch._inductor.aot_compile(ep.module(), inputs, options=configs))
    return payload_from_files(files, opts, key, called)


def example_inputs_of(torch: Any, edge_program: Any, device_index: int) -> tuple:
    """Inputs to time AUTO's candidates with: per user input of the program, a tensor of its shape, dtype and strides
    on the lowering GPU (floating point: standard normal; integers and bool: zeros, valid as indices of any table).
    SpecError where a shape is symbolic (AUTO needs the shapes it will time)."""
    out = []
    for name, val in lowering.user_input_values(edge_program):
        if not isinstance(val, torch.Tensor):
            raise SpecError(f"AUTO through ExecuTorch times tensors, but input {name!r} is {type(val).__name__}; "
                            f"choose the backend fields yourself")
        if any(isinstance(d, torch.SymInt) for d in (*val.shape, *val.stride())):
            raise SpecError(f"AUTO through ExecuTorch needs static input shapes; input {name!r} has shape "
                            f"{tuple(val.shape)}: choose the backend fields yourself")
        shape, stride = [int(d) for d in val.shape], [int(d) for d in val.stride()]
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
        base = torch.empty(max(extent, 1), dtype=val.dtype, device=f"cuda:{device_index}")
        if val.dtype.is_floating_point:
            base.normal_()
        else:
            base.zero_()
        out.append(base.as_strided(shape, stride))
    return tuple(out)


def payload_from_pt2(path: str, method_name: str) -> Payload:
    """A .pt2 written by write_package (or AOTInductor) -> Payload: its wrapper .so, weights blob and metadata."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pick = lambda suffix: next((n for n in names if n.endswith(suffix)), None)  # noqa: E731
        so, blob, meta = pick(".wrapper.so"), pick("_weights.blob"), pick("_metadata.json")
        if so is None:
            raise LoweringError(f"{path} has no wrapper library (.wrapper.so)")
        metadata = json.loads(z.read(meta)) if meta else {}
        return Payload(method_name, z.read(so), z.read(blob) if blob else None,
                       {str(k): str(v) for k, v in metadata.items()})


def _auto_payload(edge_program: Any, opts: CompileOptions, device_index: int, *,
                  lower_fn: Callable[..., Payload] | None = None, time_fn: Callable[..., Any] | None = None,
                  inputs: Sequence[Any] | None = None) -> Payload:
    """A backend field AUTO: aotirt.auto decides it as aotirt.compile does (candidates lowered, timed on this GPU with
    the aotirt runtime, the fastest kept; several AUTO fields one stage after another), each candidate lowered through
    this door (lower_fn, default _lower_to_payload) and written as a .pt2 to be timed. Returns the winner's payload,
    its metadata holding every stage's aotirt_*_auto_* entries."""
    from aotirt import auto
    lower_fn = lower_fn or _lower_to_payload
    if inputs is None:
        inputs = example_inputs_of(lowering.import_torch(), edge_program, device_index)

    def compile_fn(model, example_inputs, package_path, *, device, options, inductor_configs, dynamic_shapes):
        return write_package(lower_fn(edge_program, options, device_index), package_path)

    wdir = tempfile.mkdtemp(prefix="aotirt_executorch_auto_")
    try:
        path = auto.compile_auto_fields(edge_program, inputs, os.path.join(wdir, "auto.pt2"),
                                        device=f"cuda:{device_index}", options=opts, compile_fn=compile_fn,
                                        time_fn=time_fn, work_dir=os.path.join(wdir, "work"),
                                        features_fn=lambda *a: platforms.model_features(edge_program.graph))
        return payload_from_pt2(path, opts.method_name)
    finally:
        shutil.rmtree(wdir, ignore_errors=True)


def lower_payload(edge_program: Any, opts: CompileOptions, device_index: int) -> Payload:
    """The delegate's payload for these options: AUTO fields decided by timing (_auto_payload), else one lowering."""
    if specs.auto_fields(opts):
        return _auto_payload(edge_program, opts, device_index)
    return _lower_to_payload(edge_program, opts, device_index)


def payload_from_files(files: Any, opts: CompileOptions, key: str, called: set = frozenset()) -> Payload:
    """AOTInductor's output files (aot_compile with aot_inductor.package=True) -> Payload, after the shim check."""
    paths = [f for f in (files if isinstance(files, list) else [files]) if isinstance(f, str)]
    pick = lambda suffix: next((p for p in paths if p.endswith(suffix)), None)  # noqa: E731
    so, blob, meta, cpp = (pick(".wrapper.so"), pick("_weights.blob"), pick("_metadata.json"), pick(".wrapper.cpp"))
    if so is None:
        raise LoweringError(f"AOTInductor returned no wrapper library (.wrapper.so) among {paths}")
    source = open(cpp, encoding="utf-8", errors="replace").read() if cpp else ""
    platforms.check_shims(set(called) | platforms.shims_called(source), key, what=f"method {opts.method_name}")
    read = lambda p: open(p, "rb").read() if p else None  # noqa: E731
    metadata = json.loads(read(meta)) if meta else {}
    return Payload(opts.method_name, read(so), read(blob), {str(k): str(v) for k, v in metadata.items()})


# ---- backend and partitioner ----------------------------------------------------------------------------------------
class _SpecHelpers:
    @classmethod
    def generate_method_name_compile_spec(cls, method_name: str) -> "CompileSpec":
        """CompileSpec("method_name", b"forward"), as ExecuTorch's AOTI backends spell it."""
        return CompileSpec("method_name", method_name.encode("utf-8"))

    @classmethod
    def method_name_from_compile_specs(cls, compile_specs: List["CompileSpec"]) -> str:
        return parse_compile_specs(compile_specs)[0].method_name


if HAVE_EXECUTORCH:
    class AotirtCudaBackend(_SpecHelpers, BackendDetails):
        """ExecuTorch backend: lowers one partition with AOTInductor under aotirt's specs and platform rules."""

        @classmethod
        def preprocess(cls, edge_program: Any, compile_specs: List["CompileSpec"]):
            opts, device_index = parse_compile_specs(compile_specs)
            return build_preprocess_result(lower_payload(edge_program, opts, device_index))

    from executorch.backends.aoti.aoti_partitioner import AotiPartitioner as _PartitionerBase
else:
    class AotirtCudaBackend(_SpecHelpers):  # type: ignore[no-redef]
        @classmethod
        def preprocess(cls, edge_program: Any, compile_specs: List["CompileSpec"]):
            _require_executorch("CudaBackend.preprocess")

    class _PartitionerBase:  # type: ignore[no-redef]
        def __init__(self, backend_name: str, compile_spec: List["CompileSpec"]):
            self.backend_id, self.compile_spec = backend_name, compile_spec

        def partition(self, exported_program: Any):
            _require_executorch("CudaPartitioner.partition")

CudaBackend = AotirtCudaBackend


class CudaPartitioner(_PartitionerBase):
    """Delegates the whole graph to CudaBackend. The compile specs are parsed and checked here, at construction,
    so a bad spec is refused before export work; a target_device spec ("cuda:0") is added when missing."""

    def __init__(self, compile_spec: List["CompileSpec"]):
        compile_spec = list(compile_spec)
        self.options, self.device_index = parse_compile_specs(compile_spec)
        if not any(getattr(s, "key", None) == "target_device" for s in compile_spec):
            compile_spec.append(CompileSpec("target_device", b"cuda:0"))
        super().__init__(BACKEND_ID, compile_spec)


# ---- .pte (+ .ptd) -> .pt2 ------------------------------------------------------------------------------------------
def read_payloads(pte_path: str, ptd_paths: Sequence[str] | None = None) -> List[Payload]:
    """Every aotirt delegate in a .pte, with its .so and weights resolved from the .pte and the .ptd files (default:
    aotirt_cuda_blob.ptd next to the .pte)."""
    _require_executorch("reading a .pte")
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    with open(pte_path, "rb") as f:
        pte = deserialize_pte_binary(f.read())
    named = {}
    if pte.named_data is not None:
        for k, entry in pte.named_data.pte_data.items():
            named[k] = bytes(pte.named_data.buffers[entry.buffer_index])
    if ptd_paths is None:
        default = os.path.join(os.path.dirname(os.path.abspath(pte_path)), EXTERNAL_DATA_TAG + ".ptd")
        ptd_paths = [default] if os.path.exists(default) else []
    for ptd in ptd_paths:
        with open(ptd, "rb") as f:
            out = FlatTensorSerializer().deserialize_to_named_data_store_output(f.read(), ptd)
        for entries in out.external_data.values():
            for k, entry in entries.items():
                named[k] = bytes(out.buffers[entry.buffer_index])
    program = pte.program
    payloads = []
    for plan in program.execution_plan:
        for delegate_index, delegate in enumerate(plan.delegates):
            if delegate.id != BACKEND_ID:
                continue
            header = json.loads(bytes(program.backend_delegate_data[delegate.processed.index].data))
            if header.get("format") != PAYLOAD_FORMAT:
                raise ExecuTorchError(f"{pte_path}: delegate payload format {header.get('format')!r}; this aotirt "
                                      f"reads {PAYLOAD_FORMAT!r} (lower the model again with this version)")
            missing = [k for k in (header["so_key"], header["weights_key"]) if k and k not in named]
            if missing:
                raise ExecuTorchError(f"{pte_path}: named data {missing} not found; pass the .ptd written by "
                                      f"to_executorch().write_tensor_data_to_file() ({EXTERNAL_DATA_TAG}.ptd)")
            n_inputs = len(json.loads(header["metadata"].get("aotirt_inputs", "[]")))
            input_order, output_order = _delegate_io_order(plan, delegate_index, n_inputs)
            payloads.append(Payload(header["method_name"], named[header["so_key"]],
                                    named.get(header["weights_key"]) if header["weights_key"] else None,
                                    header["metadata"], input_order, output_order))
    if not payloads:
        ids = sorted({d.id for p in program.execution_plan for d in p.delegates})
        raise ExecuTorchError(f"{pte_path} has no {BACKEND_ID} delegate (delegates: {ids or 'none'}); lower with "
                              f"aotirt.executorch.CudaPartitioner")
    return payloads


def write_package(payload: Payload, pt2_path: str, model_name: str = "model") -> str:
    """Payload -> .pt2 laid out as AOTInductor writes it (aotirt.package.write_package)."""
    return package.write_package(pt2_path, payload.method_name, payload.so, payload.weights, payload.metadata,
                                 model_name)


def extract_package(pte_path: str, pt2_path: str, *, ptd_paths: Sequence[str] | None = None,
                    method_name: str | None = None) -> str:
    """Writes the aotirt delegate of `method_name` (or the only one) from a .pte (+ .ptd) as a .pt2 that
    aotirt.load() runs, taking the delegate's inputs in the delegate's order (load_pte takes the method's).
    Returns the .pt2 path."""
    return write_package(_one_payload(pte_path, ptd_paths, method_name), pt2_path)


class PteMethod:
    """A .pte method whose whole graph is one aotirt delegate, run on the aotirt runtime: called with the method's
    inputs in the method's order, it returns the method's outputs in the method's order (the delegate's own order
    may differ: read from the program's DelegateCall)."""

    def __init__(self, payload: Payload, runner: Any):
        self.payload, self.runner = payload, runner
        if payload.input_order is None or any(i is None for i in payload.input_order):
            raise ExecuTorchError(f"method {payload.method_name!r}: the aotirt delegate takes inputs that are not "
                                  f"method inputs ({payload.input_order}); the graph was split into several "
                                  f"partitions, which load_pte cannot run alone")
        if payload.output_order is None or any(i is None for i in payload.output_order):
            raise ExecuTorchError(f"method {payload.method_name!r}: some method outputs do not come from the aotirt "
                                  f"delegate ({payload.output_order}); the graph was split into several partitions")

    def __call__(self, *inputs: Any) -> tuple:
        n = max(self.payload.input_order, default=-1) + 1
        if len(inputs) != n:
            raise ExecuTorchError(f"method {self.payload.method_name!r} takes {n} inputs, got {len(inputs)}")
        outs = self.runner(*[inputs[i] for i in self.payload.input_order])
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        return tuple(outs[j] for j in self.payload.output_order)


def load_pte(pte_path: str, *, ptd_paths: Sequence[str] | None = None, method_name: str | None = None,
             device: int = 0, workdir: str | None = None) -> PteMethod:
    """Loads the aotirt delegate of a .pte (+ .ptd) on the aotirt runtime (no ExecuTorch runtime involved): the
    test door that checks a .pte end to end. The .pt2 is written into `workdir` (default: next to the .pte)."""
    from aotirt.runtime import load
    payload = _one_payload(pte_path, ptd_paths, method_name)
    stem = os.path.splitext(os.path.basename(pte_path))[0]
    pt2 = os.path.join(workdir or os.path.dirname(os.path.abspath(pte_path)), f"{stem}.{payload.method_name}.pt2")
    return PteMethod(payload, load(write_package(payload, pt2), device=device))


def _one_payload(pte_path: str, ptd_paths: Sequence[str] | None, method_name: str | None) -> Payload:
    every = read_payloads(pte_path, ptd_paths)
    payloads = every if method_name is None else [p for p in every if p.method_name == method_name]
    if len(payloads) != 1:
        names = [p.method_name for p in every]
        raise ExecuTorchError(f"{pte_path}: {len(payloads)} aotirt delegates match method_name={method_name!r} "
                              f"(delegates: {names}); pass method_name= one of them (a graph split into several "
                              f"partitions cannot be run as one .pt2)")
    return payloads[0]
