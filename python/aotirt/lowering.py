"""Lowering: an nn.Module or ExportedProgram -> a .pt2 package the aotirt runtime loads (torch needed here only)."""
from __future__ import annotations

import contextlib
import logging
import json
import os
import sys
import time
from typing import Any, Mapping, Sequence

from aotirt.errors import LoweringError, SpecError
from aotirt.specs import METADATA_KEY, CompileOptions, inductor_options

log = logging.getLogger("aotirt")


def _ensure_progress_visible() -> None:
    """Compiling takes minutes with max_autotune: show INFO progress on stderr unless logging is configured."""
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("aotirt: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def _import_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise LoweringError("aotirt.compile needs torch (with CUDA) to lower a model; install torch, or run on "
                            "the GPU machine where it is installed") from e
    return torch


def _parse_device(device: str) -> int | None:
    """'cuda' -> None (current device), 'cuda:N' -> N; anything else is a SpecError."""
    if isinstance(device, str):
        if device == "cuda":
            return None
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise SpecError(f"device={device!r} is not supported; valid: 'cuda' or 'cuda:N' (the aotirt runtime runs CUDA "
                    f"packages only)")


def check_cuda_available(torch) -> None:
    """Refuses (LoweringError) before any export when this torch cannot compile for CUDA."""
    if getattr(torch.version, "cuda", None) is None:
        raise LoweringError(
            f"cannot lower for CUDA: this torch ({torch.__version__}) is built without CUDA. Lowering generates and "
            f"autotunes CUDA kernels, so it needs a CUDA build of torch on a machine with an NVIDIA GPU: run "
            f"aotirt.compile there (the resulting .pt2 can then be copied and loaded anywhere the runtime runs)")
    if not torch.cuda.is_available():
        raise LoweringError(
            f"cannot lower for CUDA: torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU "
            f"(torch.cuda.is_available() is False). Run aotirt.compile on a machine with an NVIDIA GPU, and check "
            f"CUDA_VISIBLE_DEVICES and the driver (nvidia-smi)")


def _check_example_inputs(torch, example_inputs: Sequence[Any], device_index: int | None) -> None:
    flat, _ = torch.utils._pytree.tree_flatten(list(example_inputs))
    for i, x in enumerate(flat):
        if isinstance(x, torch.Tensor) and x.device.type != "cuda":
            raise LoweringError(
                f"example input {i} (shape {tuple(x.shape)}, {x.dtype}) is on {x.device}; the package is compiled "
                f"for the device of the example inputs, so pass CUDA tensors (x.cuda()) and keep the model on CUDA "
                f"too (model.cuda())")
        if isinstance(x, torch.Tensor) and device_index is not None and x.device.index != device_index:
            raise LoweringError(f"example input {i} is on {x.device} but device='cuda:{device_index}'; move it "
                                f"there or change device")


@contextlib.contextmanager
def _lowering_context(torch, opts: CompileOptions, device_index: int | None):
    """No grad, SDPA through its math decomposition (no SDPA shim exists), the chosen fp32 matmul precision."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(opts.float32_matmul_precision)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            stack.enter_context(sdpa_kernel([SDPBackend.MATH]))
            if device_index is not None:
                stack.enter_context(torch.cuda.device(device_index))
            yield
    finally:
        torch.set_float32_matmul_precision(previous)


# c10 dtype codes (what the shims and the runtime use).
_C10_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6, "float64": 7,
              "bool": 11, "bfloat16": 15}


def input_specs_json(torch, ep) -> str:
    """JSON list of {dtype, shape, strides} per user input (-1 for symbolic sizes/strides), recorded in the package
    metadata as "aotirt_inputs": the generated code trusts its inputs, so the runtime checks them against this."""
    user_inputs = set(ep.graph_signature.user_inputs)
    specs = []
    for node in ep.graph.nodes:
        if node.op != "placeholder" or node.name not in user_inputs:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            specs.append({"dtype": -1, "shape": [], "strides": []})
            continue
        as_int = lambda v: int(v) if isinstance(v, int) else -1  # noqa: E731 (SymInt -> dynamic)
        specs.append({"dtype": _C10_CODES.get(str(val.dtype).replace("torch.", ""), -1),
                      "shape": [as_int(d) for d in val.shape], "strides": [as_int(d) for d in val.stride()]})
    return json.dumps(specs)


def compile(model_or_exported_program: Any, example_inputs: Sequence[Any], package_path: str | None = None, *,
            device: str = "cuda", options: CompileOptions | None = None,
            inductor_configs: Mapping[str, Any] | None = None, dynamic_shapes: Any = None) -> str:
    """Exports (if given an nn.Module) and compiles a model with AOTInductor into a .pt2 for the aotirt runtime.

    example_inputs: a tuple of positional inputs (a single tensor is accepted too), on the CUDA device.
    package_path: where to write the package (must end in .pt2); None lets Inductor choose a temporary path.
    options: aotirt.CompileOptions; inductor_configs: extra Inductor options (see specs.inductor_options).
    Returns the absolute path of the written .pt2. Raises SpecError, LoweringError.
    """
    opts = CompileOptions() if options is None else options
    device_index = _parse_device(device)
    configs = inductor_options(opts, inductor_configs)  # validate everything before the slow steps
    if package_path is not None:
        package_path = os.fspath(package_path)
        if not package_path.endswith(".pt2"):
            raise SpecError(f"package_path={package_path!r} must end with .pt2 (AOTInductor's package suffix)")
    torch = _import_torch()
    check_cuda_available(torch)

    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    _check_example_inputs(torch, example_inputs, device_index)
    _ensure_progress_visible()

    with _lowering_context(torch, opts, device_index):
        if isinstance(model_or_exported_program, torch.export.ExportedProgram):
            ep = model_or_exported_program
            log.info("using the given ExportedProgram")
        elif isinstance(model_or_exported_program, torch.nn.Module):
            log.info("exporting %s with torch.export ...", type(model_or_exported_program).__name__)
            t0 = time.perf_counter()
            try:
                ep = torch.export.export(model_or_exported_program, example_inputs, dynamic_shapes=dynamic_shapes)
            except Exception as e:  # torch raises many types here; keep the original as the cause
                raise LoweringError(f"torch.export failed for {type(model_or_exported_program).__name__}: "
                                    f"{type(e).__name__}: {e}") from e
            log.info("exported in %.1f s (%d graph nodes)", time.perf_counter() - t0, len(ep.graph.nodes))
        else:
            raise LoweringError(f"aotirt.compile takes a torch.nn.Module or torch.export.ExportedProgram, got "
                                f"{type(model_or_exported_program).__name__}")

        configs = dict(configs)
        configs[METADATA_KEY] = {**configs.get(METADATA_KEY, {}), "aotirt_inputs": input_specs_json(torch, ep)}
        if package_path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(package_path)), exist_ok=True)
        log.info("compiling with AOTInductor (max_autotune=%s, gemm backends %s); this can take minutes ...",
                 opts.max_autotune, opts.max_autotune_gemm_backends)
        t0 = time.perf_counter()
        try:
            path = torch._inductor.aoti_compile_and_package(ep, package_path=package_path,
                                                            inductor_configs=configs)
        except Exception as e:
            raise LoweringError(f"AOTInductor compilation failed: {type(e).__name__}: {e}") from e
    path = os.path.abspath(path)
    size_mb = os.path.getsize(path) / 2**20 if os.path.exists(path) else float("nan")
    log.info("wrote %s (%.1f MiB) in %.1f s", path, size_mb, time.perf_counter() - t0)
    return path
