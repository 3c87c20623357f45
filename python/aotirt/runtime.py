"""Python side of the runtime: aotirt.load(path) -> Runner, a callable that takes DLPack-capable inputs.

Inputs cross into the native module `aotirt._C` as DLPack capsules and outputs come back as capsules owning the
runtime's buffers (no copy). Work is issued on the caller's current stream (torch's when torch has initialized CUDA).

torch (one rule, tested; docs/OUTPUTS.md): loading and running never import torch. Only an already imported torch
(`sys.modules`) is consulted, so a CuPy or JAX process never maps libtorch. `output=` on `load` (the Runner's
default) or per call picks the output type:
  * "auto" (default): torch tensors when torch is already imported and every input is a torch.Tensor (a model
    without inputs: when torch is imported); otherwise DLPackTensor objects, which any from_dlpack takes once
    (cupy.from_dlpack, jax.dlpack.from_dlpack / jnp.from_dlpack, torch.from_dlpack, numpy.from_dlpack for host).
  * "torch": torch tensors (imports torch if needed: the caller asked for it).
  * "dlpack": DLPackTensor objects, even for torch inputs.
  Anything else raises InputError with the valid list.

Output structure:
  * With torch outputs, the package's out_spec (Inductor's pytree spec) is used when torch's pytree loads it and its
    leaf count equals the number of outputs: a model returning one tensor gives that tensor, a tuple gives a tuple, a
    dict gives a dict, exactly like the eager model.
  * Otherwise (DLPack outputs, empty or unreadable spec, count mismatch) the result is always a list, even for a
    single output, so the type never depends on the output count. `Runner.run_list` always returns the flat list.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
from typing import Any, Sequence

from aotirt.errors import InputError, PackageError, RunError, RuntimeLoadError
from aotirt.return_types import name_return_types

log = logging.getLogger("aotirt")

# DLPack device types (dlpack.h DLDeviceType).
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_CUDA_MANAGED = 1, 2, 3, 10, 13
_GPU_DEVICE_TYPES = (KDL_CUDA, KDL_ROCM, KDL_CUDA_MANAGED)

_native_module = None
_vendor_dirs_added: list = []


def _native():
    """The native module: `aotirt._C` in a wheel/bundle, top-level `_C` where Bazel puts it on sys.path."""
    global _native_module
    if _native_module is None:
        errors = []
        try:
            from aotirt import _C as mod  # type: ignore[attr-defined]
        except ImportError as e:
            errors.append(f"aotirt._C: {e}")
            try:
                import _C as mod  # type: ignore[no-redef]
            except ImportError as e2:
                errors.append(f"_C: {e2}")
                raise RuntimeLoadError(
                    "the native module aotirt._C is not importable (" + "; ".join(errors) + "). Build it with "
                    "`bazel build //backends/cuda/python:_C` for this Python (" + sys.version.split()[0] + ") and "
                    "put _C.so into the aotirt package directory or on sys.path") from e2
        _native_module = mod
        _add_nvidia_wheel_dirs(mod)
    return _native_module


def nvidia_wheel_lib_dirs(subdirs=("cu13/lib", "cublas/lib")) -> list:
    """Library folders of NVIDIA's pip wheels (by default nvidia/cu13/lib, nvidia/cublas/lib: cuBLASLt's) that
    exist, in search order."""
    found = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for base in (list(spec.submodule_search_locations or []) if spec else []):
        for sub in subdirs:
            d = os.path.join(base, sub)
            if os.path.isdir(d) and d not in found:
                found.append(d)
    return found


def _add_nvidia_wheel_dirs(mod) -> None:
    """Points the shims' vendor-library loaders (cuBLASLt for GEMMs, cuDNN for attention and convolution, cuFFT for
    FFTs) at the NVIDIA wheel folders (they also search the loader path). Nothing is loaded here: each library is
    opened on first use."""
    for adder_name, subdirs in (("add_cublaslt_search_dir", ("cu13/lib", "cublas/lib")),
                                ("add_cudnn_search_dir", ("cudnn/lib",)),
                                ("add_cufft_search_dir", ("cu13/lib", "cufft/lib"))):
        adder = getattr(mod, adder_name, None)
        if adder is None:
            continue
        for d in nvidia_wheel_lib_dirs(subdirs):
            if (adder_name, d) not in _vendor_dirs_added:
                adder(d)
                _vendor_dirs_added.append((adder_name, d))
                log.debug("%s: %s", adder_name, d)


def gemm_stats() -> dict | None:
    """The GEMM shims' counters since the process started: calls, plan_cache_hits/misses, tuned, graph_captures,
    graph_replays (calls served from a one-call CUDA graph instead of cublasLtMatmul), graph_evictions, ... None where
    the shims have no GEMMs (ROCm). Differences around a model call show how its GEMMs ran."""
    fn = getattr(_native(), "gemm_stats", None)
    return None if fn is None else fn()


def native():
    """The native module aotirt._C (RuntimeLoadError saying how to build it when it is not importable)."""
    return _native()


def torch_or_none():
    """torch if importable (imported on first use), else None. For the CLI's commands that need torch; loading and
    running never call it (see imported_torch)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def imported_torch():
    """torch when the process has already imported it, else None: never imports it. Tests monkeypatch this."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor") or not hasattr(torch, "from_dlpack"):
        return None  # not imported, or still being imported
    return torch


def import_torch_for_output():
    """torch for output="torch" (the caller asked for torch tensors): imported here when it is not yet."""
    torch = imported_torch()
    if torch is not None:
        return torch
    try:
        import torch
    except ImportError as e:
        raise InputError(f"output='torch' needs torch, which is not importable here ({e}); use output='dlpack' "
                         f"(objects any from_dlpack takes) or install torch") from e
    return torch


OUTPUT_CHOICES = ("auto", "torch", "dlpack")


def _check_output(value: Any) -> str:
    """The output= value, validated: one of OUTPUT_CHOICES (exactly, lower case)."""
    if not isinstance(value, str) or value not in OUTPUT_CHOICES:
        raise InputError(f"output={value!r} is not valid; valid: {list(OUTPUT_CHOICES)} ('auto': torch tensors when "
                         f"torch is already imported and the inputs are torch tensors, else DLPack objects)")
    return value


def _output_torch(choice: str, inputs: Sequence[Any]):
    """torch when this call's outputs are torch tensors, None when they are DLPackTensor objects (see the module
    docstring). Imports torch only for choice == "torch"."""
    if choice == "dlpack":
        return None
    if choice == "torch":
        return import_torch_for_output()
    torch = imported_torch()
    if torch is None:
        return None
    return torch if all(isinstance(x, torch.Tensor) for x in inputs) else None


def _torch_stream(torch: Any, device_index: int) -> int:
    """torch's current stream on the device, as a cudaStream_t int. torch's raw getter where it has one (what
    Inductor's generated code calls; a fraction of a microsecond), else the public API (2-4 us of host time a call
    on the H100, benchmarks/RESULTS.md "Host time of one graph call")."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(device_index))
    return int(torch.cuda.current_stream(device_index).cuda_stream)


def _current_stream(device_index: int) -> int:
    """torch's current stream on the device when torch has initialized CUDA, else 0 (the legacy default stream)."""
    torch = sys.modules.get("torch")  # torch not imported yet means torch has no stream for us to follow
    if torch is not None and hasattr(torch, "cuda") and torch.cuda.is_initialized():
        return _torch_stream(torch, device_index)
    return 0


# ------------------------------------------------------------------------------------------------ DLPack outputs

class _NativeStreams:
    """The consumer-waits-for-producer step of a DLPack hand-off, done by the native module (an event recorded on
    the run's stream, waited on by the consumer's stream)."""

    def __init__(self, native: Any):
        self._native = native

    def wait(self, producer: int, consumer: int, device_index: int) -> None:
        """`consumer` waits (on the GPU) for the work queued on `producer` so far."""
        try:
            self._native.stream_wait(int(producer), int(consumer), int(device_index))
        except RuntimeError as e:
            raise RunError(f"handing an output over to stream {consumer:#x} failed: {e}") from e


def _cuda_streams():
    """The stream-wait helper (None where the native module is not loaded: then nothing can have been queued on a
    GPU by this runtime). Tests monkeypatch this."""
    return _NativeStreams(_native_module) if _native_module is not None else None


def _dlpack_stream_handle(stream: Any) -> int:
    """A DLPack `stream` argument (CUDA) as a cudaStream_t value: None and 1 = legacy default (0 for us), 2 = per-thread
    default (cudaStreamPerThread), other ints = the stream itself."""
    if stream is None or int(stream) in (0, 1):
        return 0
    return int(stream)


def _capsule_device(capsule: Any, default: tuple) -> tuple:
    """(device_type, device_id) of one of the native module's output capsules; `default` when it cannot be read."""
    reader = getattr(_native_module, "capsule_device", None) if _native_module is not None else None
    if reader is None:
        return default
    dev = reader(capsule)
    return default if dev is None else (int(dev[0]), int(dev[1]))


class DLPackTensor:
    """An output held as a DLPack capsule: hand it to any from_dlpack once (cupy.from_dlpack, jnp.from_dlpack,
    jax.dlpack.from_dlpack, torch.from_dlpack; numpy.from_dlpack for host outputs).

    The data is ready on the stream the run was issued on (`stream`, 0 = legacy default). A consumer that names its
    stream (DLPack's `__dlpack__(stream=...)`, as CuPy and JAX do) gets that stream made to wait for ours on the GPU;
    stream=-1 skips that. No copy is ever made: `copy=True` or another `dl_device` raise BufferError.
    """

    def __init__(self, capsule: Any, device: tuple | None = None, stream: int = 0):
        self._capsule = capsule
        fallback = tuple(int(v) for v in device) if device is not None else (KDL_CUDA, 0)
        self._device = _capsule_device(capsule, fallback)
        self._stream = int(stream)

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        # max_version: the capsule is the classic (unversioned) DLManagedTensor, which every consumer accepts.
        if self._capsule is None:
            raise RunError("this output's DLPack capsule was already consumed: from_dlpack can take it only once")
        if copy:
            raise BufferError("aotirt outputs are handed over without a copy (copy=True is not supported); copy "
                              "after from_dlpack")
        if dl_device is not None and tuple(int(v) for v in dl_device) != self._device:
            raise BufferError(f"this output is on DLPack device {self._device}, not {tuple(dl_device)}; it is handed "
                              f"over without a copy: move it after from_dlpack")
        self._sync(stream)
        capsule, self._capsule = self._capsule, None
        return capsule

    def _sync(self, stream: Any) -> None:
        """The consumer's stream waits for the run's stream (GPU outputs; host outputs are complete: the shims
        synchronize device-to-host copies)."""
        dev_type, dev_index = self._device
        if dev_type not in _GPU_DEVICE_TYPES or (stream is not None and int(stream) == -1):
            return  # host data, or a consumer that synchronizes itself
        consumer, producer = _dlpack_stream_handle(stream), _dlpack_stream_handle(self._stream)
        if consumer == producer:
            return
        cuda = _cuda_streams()
        if cuda is not None:  # None: no libcudart in the process, so nothing was queued on a GPU
            cuda.wait(producer, consumer, dev_index)

    def __dlpack_device__(self) -> tuple:
        return self._device

    def __repr__(self) -> str:
        state = "consumed" if self._capsule is None else "ready"
        return f"DLPackTensor(device={self._device}, {state})"


def _wrap_outputs(capsules: Sequence[Any], torch: Any, device_index: int, stream: int) -> list:
    """The native outputs as torch tensors (torch given) or DLPackTensor objects."""
    if torch is not None:
        return [torch.from_dlpack(c) for c in capsules]
    return [DLPackTensor(c, (KDL_CUDA, device_index), stream) for c in capsules]


def _load_out_spec(torch, spec_json: str, num_outputs: int):
    if torch is None or not spec_json:
        return None
    try:
        from torch.utils import _pytree as pytree
        name_return_types(torch)  # the names the lowering gave torch.return_types (aotirt/return_types.py)
        spec = pytree.treespec_loads(spec_json)
    except Exception as e:  # an unknown node type, or a spec from another torch version
        log.warning("aotirt: cannot load the package's out_spec (%s); outputs come back as a list", e)
        return None
    if spec.num_leaves != num_outputs:
        log.warning("aotirt: out_spec has %d leaves but the model has %d outputs; outputs come back as a list",
                    spec.num_leaves, num_outputs)
        return None
    return spec


_UNSET = object()


class Runner:
    """A loaded model. `runner(*inputs, stream=None, output=None)` runs it; see the module docstring for the output
    type and structure. `output` (here: the default for every call) is "auto", "torch" or "dlpack"."""

    def __init__(self, model: Any, output: str = "auto"):
        self._output = _check_output(output)
        self._model = model
        self.input_names = list(model.input_names)
        self.output_names = list(model.output_names)
        self.device_index = int(model.device_index)
        self.metadata = dict(model.metadata)
        self.in_spec = model.in_spec
        self.out_spec = model.out_spec
        self.package_path = getattr(model, "package_path", "")
        self._treespec = _UNSET  # loaded with torch's pytree the first time outputs are torch tensors
        if self._output == "torch":
            import_torch_for_output()  # asked for torch: fail at load, not at the first call

    @property
    def output(self) -> str:
        """The default output choice of this runner ("auto", "torch" or "dlpack")."""
        return self._output

    @property
    def _torch(self):
        """torch when the process has imported it, else None (never imports it)."""
        return imported_torch()

    @property
    def _out_treespec(self):
        """The out_spec as a torch pytree spec, or None (no torch imported, empty, unreadable, count mismatch)."""
        if self._treespec is _UNSET:
            torch = imported_torch()
            if torch is None:
                return None  # not cached: torch may be imported later
            self._treespec = _load_out_spec(torch, self.out_spec, len(self.output_names))
        return self._treespec

    def _structure(self, outputs: list, torch: Any) -> Any:
        """Flat outputs -> the eager model's structure (torch outputs with a usable out_spec), else the list."""
        if torch is None:
            return outputs
        spec = self._out_treespec
        if spec is None:
            return outputs
        return torch.utils._pytree.tree_unflatten(outputs, spec)

    def _output_torch(self, output: str | None, inputs: Sequence[Any]):
        return _output_torch(self._output if output is None else _check_output(output), inputs)

    def __repr__(self) -> str:
        return (f"Runner({self.package_path!r}, device={self.device_index}, inputs={self.input_names}, "
                f"outputs={self.output_names})")

    def _capsule(self, i: int, x: Any, stream: int) -> Any:
        name = self.input_names[i]
        if not hasattr(x, "__dlpack__"):
            raise InputError(f"input {i} ({name!r}) is a {type(x).__name__}, which has no __dlpack__; pass a "
                             f"tensor (torch, CuPy, JAX) on cuda:{self.device_index}")
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else None
        if dev is not None:
            dev_type, dev_index = int(dev[0]), int(dev[1])
            if dev_type not in _GPU_DEVICE_TYPES:
                raise InputError(f"input {i} ({name!r}) is on DLPack device type {dev_type} (1 = CPU), but the "
                                 f"model runs on cuda:{self.device_index}; move it there first (x.to('cuda:"
                                 f"{self.device_index}'))")
            if dev_type != KDL_CUDA_MANAGED and dev_index != self.device_index:
                raise InputError(f"input {i} ({name!r}) is on GPU {dev_index}, but the model was loaded on "
                                 f"device {self.device_index}; move it, or load with device={dev_index}")
        # DLPack reserves 0; 1 names the legacy default stream (what our stream 0 means).
        consumer_stream = 1 if stream == 0 else stream
        try:
            return x.__dlpack__(stream=consumer_stream)
        except TypeError:  # producers from before the stream keyword
            return x.__dlpack__()

    def _capsules(self, inputs: Sequence[Any], stream_int: int) -> list:
        torch = sys.modules.get("torch")
        guard = None
        if torch is not None and hasattr(torch, "cuda") and torch.cuda.is_initialized():
            # torch's __dlpack__ refuses tensors that are not on the *current* device.
            guard = torch.cuda.device(self.device_index)
            guard.__enter__()
        try:
            return [self._capsule(i, x, stream_int) for i, x in enumerate(inputs)]
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)

    def run_list(self, inputs: Sequence[Any], stream: int | None = None, output: str | None = None) -> list:
        """Runs on flat inputs and returns the flat list of outputs (see the module docstring for their type)."""
        inputs = list(inputs)
        torch = self._output_torch(output, inputs)  # validates output= before anything runs
        if len(inputs) != len(self.input_names):
            raise InputError(f"the model takes {len(self.input_names)} input(s) {self.input_names}, got "
                             f"{len(inputs)}")
        stream_int = _current_stream(self.device_index) if stream is None else int(stream)
        capsules = self._capsules(inputs, stream_int)
        try:
            outputs = self._model.run(capsules, stream_int)
        except RuntimeError as e:  # _C.RuntimeError derives from RuntimeError
            raise RunError(f"running {self.package_path or 'the model'} failed: {e}") from e
        return _wrap_outputs(outputs, torch, self.device_index, stream_int)

    def __call__(self, *inputs: Any, stream: int | None = None, output: str | None = None) -> Any:
        inputs_list = list(inputs)
        torch = self._output_torch(output, inputs_list)
        outputs = self.run_list(inputs_list, stream=stream, output="torch" if torch is not None else "dlpack")
        return self._structure(outputs, torch)


def load(path: str, device: int = 0, num_instances: int = 1, *, model_name: str = "model",
         output: str = "auto", share_constants_with: "Runner | None" = None) -> Runner:
    """Loads a .pt2 package on GPU `device`; `num_instances` calls may run concurrently. Returns a Runner.

    output: the Runner's default output type, "auto" (torch tensors when torch is already imported and the inputs
    are torch tensors, else DLPackTensor objects), "torch" or "dlpack"; each call may override it. Never imports
    torch unless output="torch".
    share_constants_with: a Runner (loaded on the same device) whose weights this package uses instead of uploading
    its own, e.g. the prefill and decode packages of one model: one copy of the weights on the GPU. Each of this
    package's constants must be one of that runner's (same original name, dtype, size and bytes: compared at load),
    else RuntimeLoadError names the first differences; compare before the other runner changes a buffer it owns.
    That runner's weights then live as long as this one."""
    output = _check_output(output)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise PackageError(f"package {path!r} does not exist; pass the path that aotirt.compile returned")
    if os.path.isdir(path):
        raise PackageError(f"package {path!r} is a directory; pass the .pt2 file itself")
    if not isinstance(device, int) or device < 0:
        raise InputError(f"device must be a GPU index (int >= 0), got {device!r}")
    if not isinstance(num_instances, int) or num_instances < 1:
        raise InputError(f"num_instances must be an int >= 1, got {num_instances!r}")
    if share_constants_with is not None:
        if not isinstance(share_constants_with, Runner):
            raise InputError(f"share_constants_with must be a Runner that aotirt.load returned, got "
                             f"{type(share_constants_with).__name__}")
        if share_constants_with.device_index != device:
            raise InputError(f"share_constants_with was loaded on cuda:{share_constants_with.device_index}; this "
                             f"package loads on cuda:{device}: constants are shared on one device only")
    if output == "torch":
        import_torch_for_output()  # before the (slower) load
    native = _native()
    try:
        owner = share_constants_with._model if share_constants_with is not None else None
        model = (native.Model(os.path.abspath(path), device, num_instances, model_name) if owner is None else
                 native.Model(os.path.abspath(path), device, num_instances, model_name, owner))
    except RuntimeError as e:
        raise RuntimeLoadError(f"cannot load package {path!r}: {e}") from e
    return Runner(model, output=output)
