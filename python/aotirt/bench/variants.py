"""Variant names and the GEMM backends each one compiles with."""
from __future__ import annotations

FIXED = {"aotirt_triton": "TRITON", "aotirt_aten_triton": "ATEN,TRITON", "aotirt_aten": "ATEN"}
TORCH_COMPILE = {"torch_compile": "TRITON", "torch_compile_aten_triton": "ATEN,TRITON",
                 "torch_compile_aten": "ATEN"}
VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "torch_compile",
            "torch_compile_aten_triton", "torch_compile_aten")
DEFAULT_VARIANTS = ("eager", "aotirt_triton", "aotirt_aten_triton", "aotirt_aten", "aotirt_auto", "torch_compile")


def gemm_backends(variant: str) -> str | None:
    if variant == "aotirt_auto":
        return "AUTO"
    return FIXED.get(variant) or TORCH_COMPILE.get(variant)
