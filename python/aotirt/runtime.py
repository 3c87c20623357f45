"""Python side of the runtime: aotirt.load(path) -> Runner, a callable that takes DLPack-capable inputs.

Inputs cross into the native module `aotirt._C` as DLPack capsules and outputs come back as capsules owning the
runtime's buffers (no copy). Work is issued on the caller's current stream (torch's when torch has initialized CUDA).

Output structure (one rule, tested):
  * The package's out_spec (Inductor's pytree spec) is used when torch is importable and torch's pytree loads it and
    its leaf count equals the number of outputs: a model returning one tensor gives that tensor, a tuple gives a
    tuple, a dict gives a dict, exactly like the eager model.
  * Otherwise (no torch, empty or unreadable spec, count mismatch) the result is always a list, even for a single
    output, so the type never depends on the output count. `Runner.run_list` always returns the flat list.
  * Leaves are torch tensors (torch.from_dlpack) when torch is importable, else DLPackTensor objects.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
from typing import Any, Sequence

from aotirt.errors import InputError, PackageError, RunError, RuntimeLoadError

log = logging.getLogger("aotirt")

# DLPack device types (dlpack.h DLDeviceType).
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_CUDA_MANAGED = 1, 2, 3, 10, 13
_GPU_DEVICE_TYPES = (KDL_CUDA, KDL_ROCM, KDL_CUDA_MANAGED)

_native_module = None
_cublaslt_dirs_added: list = []


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


def nvidia_wheel_lib_dirs() -> list:
    """Library folders of NVIDIA's pip wheels (nvidia/cu13/lib, nvidia/cublas/lib) that exist, in search order."""
    found = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for base in (list(spec.submodule_search_locations or []) if spec else []):
        for sub in ("cu13/lib", "cublas/lib"):
            d = os.path.join(base, sub)
            if os.path.isdir(d) and d not in found:
                found.append(d)
    return found


def _add_nvidia_wheel_dirs(mod) -> None:
    """Points the GEMM shims' cuBLASLt loader at the NVIDIA wheel folders (it also searches the loader path)."""
    adder = getattr(mod, "add_cublaslt_search_dir", None)
    if adder is None:
        return
    for d in nvidia_wheel_lib_dirs():
        if d not in _cublaslt_dirs_added:
            adder(d)
            _cublaslt_dirs_added.append(d)
            log.debug("cuBLASLt search dir: %s", d)


def gemm_stats() -> dict | None:
    """The GEMM shims' counters since the process started: calls, plan_cache_hits/misses, tuned, graph_captures,
    graph_replays (calls served from a one-call CUDA graph instead of cublasLtMatmul), graph_evictions, ... None where
    the shims have no GEMMs (ROCm). Differences around a model call show how its GEMMs ran."""
    fn = getattr(_native(), "gemm_stats", None)
    return None if fn is None else fn()


def _torch_or_none():
    """torch if importable (imported on first use), else None. Tests monkeypatch this."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _current_stream(device_index: int) -> int:
    """torch's current stream on the device when torch has initialized CUDA, else 0 (the legacy default stream)."""
    torch = sys.modules.get("torch")  # torch not imported yet means torch has no stream for us to follow
    if torch is not None and hasattr(torch, "cuda") and torch.cuda.is_initialized():
        return int(torch.cuda.current_stream(device_index).cuda_stream)
    return 0


class DLPackTensor:
    """An output held as a DLPack capsule (when torch is not importable): hand it to any from_dlpack once.

    The data is ready on the stream the run was issued on; consumers on another stream must synchronize.
    """

    def __init__(self, capsule: Any, device: tuple):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        if self._capsule is None:
            raise RunError("this output's DLPack capsule was already consumed: from_dlpack can take it only once")
        capsule, self._capsule = self._capsule, None
        return capsule

    def __dlpack_device__(self) -> tuple:
        return self._device

    def __repr__(self) -> str:
        state = "consumed" if self._capsule is None else "ready"
        return f"DLPackTensor(device={self._device}, {state})"


def _load_out_spec(torch, spec_json: str, num_outputs: int):
    if torch is None or not spec_json:
        return None
    try:
        from torch.utils import _pytree as pytree
        spec = pytree.treespec_loads(spec_json)
    except Exception as e:  # an unknown node type, or a spec from another torch version
        log.warning("aotirt: cannot load the package's out_spec (%s); outputs come back as a list", e)
        return None
    if spec.num_leaves != num_outputs:
        log.warning("aotirt: out_spec has %d leaves but the model has %d outputs; outputs come back as a list",
                    spec.num_leaves, num_outputs)
        return None
    return spec


class Runner:
    """A loaded model. `runner(*inputs, stream=None)` runs it; see the module docstring for the output structure."""

    def __init__(self, model: Any):
        self._model = model
        self.input_names = list(model.input_names)
        self.output_names = list(model.output_names)
        self.device_index = int(model.device_index)
        self.metadata = dict(model.metadata)
        self.in_spec = model.in_spec
        self.out_spec = model.out_spec
        self.package_path = getattr(model, "package_path", "")
        self._torch = _torch_or_none()
        self._out_treespec = _load_out_spec(self._torch, self.out_spec, len(self.output_names))

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

    def run_list(self, inputs: Sequence[Any], stream: int | None = None) -> list:
        """Runs on flat inputs and returns the flat list of outputs (see the module docstring for their type)."""
        inputs = list(inputs)
        if len(inputs) != len(self.input_names):
            raise InputError(f"the model takes {len(self.input_names)} input(s) {self.input_names}, got "
                             f"{len(inputs)}")
        stream_int = _current_stream(self.device_index) if stream is None else int(stream)
        torch = sys.modules.get("torch")
        guard = None
        if torch is not None and hasattr(torch, "cuda") and torch.cuda.is_initialized():
            # torch's __dlpack__ refuses tensors that are not on the *current* device.
            guard = torch.cuda.device(self.device_index)
            guard.__enter__()
        try:
            capsules = [self._capsule(i, x, stream_int) for i, x in enumerate(inputs)]
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)
        try:
            outputs = self._model.run(capsules, stream_int)
        except RuntimeError as e:  # _C.RuntimeError derives from RuntimeError
            raise RunError(f"running {self.package_path or 'the model'} failed: {e}") from e
        if self._torch is not None:
            return [self._torch.from_dlpack(c) for c in outputs]
        return [DLPackTensor(c, (KDL_CUDA, self.device_index)) for c in outputs]

    def __call__(self, *inputs: Any, stream: int | None = None) -> Any:
        outputs = self.run_list(inputs, stream=stream)
        if self._out_treespec is not None:
            return self._torch.utils._pytree.tree_unflatten(outputs, self._out_treespec)
        return outputs


def load(path: str, device: int = 0, num_instances: int = 1, *, model_name: str = "model") -> Runner:
    """Loads a .pt2 package on GPU `device`; `num_instances` calls may run concurrently. Returns a Runner."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise PackageError(f"package {path!r} does not exist; pass the path that aotirt.compile returned")
    if os.path.isdir(path):
        raise PackageError(f"package {path!r} is a directory; pass the .pt2 file itself")
    if not isinstance(device, int) or device < 0:
        raise InputError(f"device must be a GPU index (int >= 0), got {device!r}")
    if not isinstance(num_instances, int) or num_instances < 1:
        raise InputError(f"num_instances must be an int >= 1, got {num_instances!r}")
    native = _native()
    try:
        model = native.Model(os.path.abspath(path), device, num_instances, model_name)
    except RuntimeError as e:
        raise RuntimeLoadError(f"cannot load package {path!r}: {e}") from e
    return Runner(model)
