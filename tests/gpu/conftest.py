"""Shared fixtures for GPU tests: skip with a reason where there is no GPU, and compile each test model once."""
import os
import tempfile

import pytest

try:
    import torch
    HAVE_CUDA = torch.cuda.is_available()
    WHY = "" if HAVE_CUDA else "torch sees no CUDA device"
except Exception as e:  # torch missing or broken
    torch = None
    HAVE_CUDA = False
    WHY = f"torch unavailable: {e}"

requires_gpu = pytest.mark.skipif(not HAVE_CUDA, reason=f"gpu test skipped: {WHY}")

# Tests that call the shim library directly through ctypes (test_*_shims.py): it is named by $AOTIRT_SHIM_LIB
# (tools/gpu/run.sh sets it). `pytestmark = requires_shim_lib` in such a file.
SHIM_LIB = os.environ.get("AOTIRT_SHIM_LIB", "")
requires_shim_lib = [
    requires_gpu,
    pytest.mark.skipif(not SHIM_LIB, reason="gpu test skipped: AOTIRT_SHIM_LIB (path to libaoti_cuda_shims.so) unset"),
]

# Under pytest-xdist each worker gets its own Inductor cache: AOTInductor's cubin objects in a shared one race.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = (os.environ.get("TORCHINDUCTOR_CACHE_DIR")
                                             or os.path.join(tempfile.gettempdir(), "aotirt_inductor_cache")) \
        + "_" + os.environ["PYTEST_XDIST_WORKER"]

_CACHE = {}
_DIR = tempfile.mkdtemp(prefix="aotirt_gpu_tests_")


def allow_unverified(monkeypatch, names):
    """Lets lowering call shims the manifest still marks "unverified" (platforms.UNVERIFIED_NOTE), for the test
    that verifies them: as lowering will once their notes are dropped."""
    from aotirt import platforms
    unverified = platforms.unverified_shims
    monkeypatch.setattr(platforms, "unverified_shims", lambda m=None: unverified(m) - set(names))


def compiled(key, factory, example_inputs, **compile_kwargs):
    """Compiles factory() once per key with aotirt.compile and returns (model, package_path)."""
    if key not in _CACHE:
        import aotirt
        model = factory()
        path = os.path.join(_DIR, key.replace("/", "_") + ".pt2")
        aotirt.compile(model, example_inputs, path, **compile_kwargs)
        _CACHE[key] = (model, path)
    return _CACHE[key]


TOL = {  # per-dtype tolerances against eager (same GPU): Inductor fuses and reorders, so bits differ.
    "float32": dict(atol=2e-4, rtol=2e-4),
    "float16": dict(atol=2e-2, rtol=2e-2),
    "bfloat16": dict(atol=6e-2, rtol=6e-2),
}

def pytest_configure(config):
    config.addinivalue_line("markers", "multi_gpu: needs two GPUs of one host")
