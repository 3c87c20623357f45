"""aotirt.compile, the public entry of lowering: the one place that chooses between one lowering (aotirt.lowering)
and AUTO (aotirt.auto, which is handed lowering.compile and calls it once per candidate). Neither of those two
modules reaches back here, so lowering and auto do not import each other in a circle."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from aotirt import auto, lowering
from aotirt.specs import CompileOptions, auto_fields, effective_options


def compile(model_or_exported_program: Any, example_inputs: Sequence[Any], package_path: str | None = None, *,  # noqa: A001
            device: str = "cuda", options: CompileOptions | None = None,
            inductor_configs: Mapping[str, Any] | None = None, dynamic_shapes: Any = None) -> str:
    """Exports (if given an nn.Module) and compiles a model with AOTInductor into a .pt2 for the aotirt runtime.

    example_inputs: a tuple of positional inputs (a single tensor is accepted too), on the CUDA device.
    package_path: where to write the package (must end in .pt2); None writes it into a new temporary folder.
    options: aotirt.CompileOptions; inductor_configs: extra Inductor options (see specs.inductor_options).
    max_autotune_gemm_backends='AUTO' (in options or inductor_configs) lowers TRITON, ATEN,TRITON and ATEN, times
    them on this GPU and keeps the fastest (aotirt.auto.compile_auto); every candidate keeps the options' other
    fields. max_autotune_conv_backends='AUTO' (TRITON, ATEN,TRITON, ATEN) and attention_backend='AUTO'
    (CUDNN,TRITON, TRITON, MATH) do the same for their field; with several AUTO, aotirt.auto.compile_auto_fields
    decides them one after another (GEMMs, convolutions, attention), skipping a field whose ops the model lacks.
    Returns the absolute path of the written .pt2. Raises SpecError, LoweringError (UnsupportedPlatformError,
    UnsupportedShimError, SmallGpuError) before the slow steps wherever the problem can be known then.
    """
    opts = effective_options(options, inductor_configs)
    if auto_fields(opts):
        return auto.compile_auto_fields(model_or_exported_program, example_inputs, package_path, device=device,
                                        options=opts, inductor_configs=inductor_configs,
                                        dynamic_shapes=dynamic_shapes, compile_fn=lowering.compile)
    return lowering.compile(model_or_exported_program, example_inputs, package_path, device=device,
                            options=options, inductor_configs=inductor_configs, dynamic_shapes=dynamic_shapes)
