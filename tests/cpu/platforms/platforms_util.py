"""Shared helpers for the platform tests: locate Bazel data files (paths come in through env) and the manifest."""
import os
import shutil
import sys

import pytest


def data(env_name: str) -> str:
    path = os.environ.get(env_name, "")
    assert path and os.path.exists(path), f"${env_name} ({path!r}) does not name a built file"
    return os.path.abspath(path)


def manifest():
    """The manifest module (tools/manifest/manifest.py), loaded from the runfiles path in $AOTIRT_MANIFEST_PY."""
    d = os.path.dirname(data("AOTIRT_MANIFEST_PY"))
    if d not in sys.path:
        sys.path.insert(0, d)
    import manifest as m  # noqa: E402
    return m


def entries():
    return manifest().load(data("AOTIRT_MANIFEST_TSV"))


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found on PATH: run tools/setup.sh (Debian llvm-14, lld-14, clang-14)")
    return path


def is_gemm(name: str) -> bool:
    """A GEMM shim: aoti_torch_cuda_*mm*_out (mm, addmm, bmm, baddbmm, _int_mm; not _weight_int4pack_mm, our own
    kernel, no cuBLASLt)."""
    return (name.startswith("aoti_torch_cuda_") and name.endswith("_out")
            and "mm" in name[len("aoti_torch_cuda_"):])
