"""Variant names and the GEMM backends each one compiles with."""
from __future__ import annotations

FIXED = {"aotirt_triton": "TRITON", "aotirt_aten_triton": "ATEN,TRITON", "aotirt_aten": "ATEN"}
TORCH_COMPILE = {"torch_compile": "TRITON", "torch_compile_aten_triton": "ATEN,TRITON",
                 "torch_compile_aten": "ATEN"}
# aotirt_auto times the candidates under CUDA graphs (AUTO's default), aotirt_auto_eager without (auto_timing="eager"):
# each is the AUTO a user would pick for running with or without graphs.
AUTO_VARIANTS = {"aotirt_auto": True, "aotirt_auto_eager": False}  # variant -> times with graphs
VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager",
            "torch_compile",
            "torch_compile_aten_triton", "torch_compile_aten")
DEFAULT_VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "aotirt_auto_eager",
                    "torch_compile")


def gemm_backends(variant: str) -> str | None:
    if variant in AUTO_VARIANTS:
        return "AUTO"
    return FIXED.get(variant) or TORCH_COMPILE.get(variant)
