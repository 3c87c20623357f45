"""Variant names and the compile options each one uses."""
from __future__ import annotations

# aotirt variants with today's defaults for attention (MATH) and convolutions (TRITON): only the GEMM backends vary.
FIXED = {"aotirt_triton": "TRITON", "aotirt_aten_triton": "ATEN,TRITON", "aotirt_aten": "ATEN"}
# aotirt variants that also choose the attention and convolution lowering (issue 13): variant -> (GEMM backends,
# attention_backend, max_autotune_conv_backends). ATEN GEMMs compile quickly (nothing to autotune but Triton's
# fused pointwise kernels); the vendor-library variant puts every GEMM, attention and convolution on the shims.
LOWERINGS = {
    "aotirt_aten_cudnn": ("ATEN", "CUDNN", "ATEN"),
    "aotirt_aten_tattn": ("ATEN", "TRITON", "ATEN"),
    "aotirt_triton_cudnn": ("TRITON", "CUDNN", "TRITON"),
}
# torch.compile with the same options as the aotirt variant of the same GEMM backends (SDPA as MATH), and the
# fastest torch.compile a user runs: max_autotune with torch's own defaults (ATEN,TRITON GEMMs, flash/cuDNN SDPA,
# cuDNN or Triton convolutions).
TORCH_COMPILE = {"torch_compile": "TRITON", "torch_compile_aten_triton": "ATEN,TRITON",
                 "torch_compile_aten": "ATEN"}
TORCH_COMPILE_DEFAULT = "torch_compile_max_autotune"
# aotirt_auto times the candidates under CUDA graphs (AUTO's default), aotirt_auto_eager without (auto_timing="eager"):
# each is the AUTO a user would pick for running with or without graphs.
AUTO_VARIANTS = {"aotirt_auto": True, "aotirt_auto_eager": False}  # variant -> times with graphs
VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager",
            *LOWERINGS, "torch_compile", "torch_compile_aten_triton", "torch_compile_aten", TORCH_COMPILE_DEFAULT)
DEFAULT_VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager",
                    "torch_compile")
# The variants of the attention/convolution comparison (issue 13): `--variants lowerings`.
LOWERING_VARIANTS = ("eager", "aotirt_aten", *LOWERINGS, TORCH_COMPILE_DEFAULT)
OURS = ("aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager", *LOWERINGS)
TORCH_COMPILES = (*TORCH_COMPILE, TORCH_COMPILE_DEFAULT)


def gemm_backends(variant: str) -> str | None:
    if variant in AUTO_VARIANTS:
        return "AUTO"
    if variant in LOWERINGS:
        return LOWERINGS[variant][0]
    if variant == TORCH_COMPILE_DEFAULT:
        return "ATEN,TRITON"
    return FIXED.get(variant) or TORCH_COMPILE.get(variant)


def lowering(variant: str) -> tuple | None:
    """(GEMM backends, attention_backend, conv backends) of an aotirt variant with one package; None otherwise."""
    if variant in FIXED:
        return (FIXED[variant], "MATH", "TRITON")
    return LOWERINGS.get(variant)
