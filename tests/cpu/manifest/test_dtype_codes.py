"""Our dtype / device-type / layout codes are torch's: each code shim of the built libaoti_cuda_shims.so is called
next to torch's own implementation of the same shim (in torch's libtorch_cpu.so) and the two must agree.

The library path comes from $AOTIRT_SHIM_LIB (set by the Bazel target from its data dependency)."""
from __future__ import annotations

import ctypes
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools", "manifest"))
import manifest  # noqa: E402  (tools/manifest/manifest.py, imported by path)

CODE_PREFIXES = ("aoti_torch_dtype_", "aoti_torch_device_type_", "aoti_torch_layout_")
CODE_NAMES = sorted(e.name for e in manifest.load() if e.name.startswith(CODE_PREFIXES))


def _shim_lib_path() -> str:
    path = os.environ.get("AOTIRT_SHIM_LIB", "")
    if not path:
        pytest.fail("AOTIRT_SHIM_LIB is not set: run through `bazel test //tests/cpu/manifest:test_dtype_codes` "
                    "or set it to a built libaoti_cuda_shims.so")
    if not os.path.isabs(path):
        path = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""), path) \
            if not os.path.exists(path) else os.path.abspath(path)
    assert os.path.exists(path), f"shim library not found at {path}"
    return path


@pytest.fixture(scope="module")
def ours() -> ctypes.CDLL:
    return ctypes.CDLL(_shim_lib_path(), mode=ctypes.RTLD_LOCAL)


@pytest.fixture(scope="module")
def theirs() -> ctypes.CDLL:
    torch = pytest.importorskip("torch")
    return ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
                       mode=ctypes.RTLD_LOCAL)


def _call_code(lib: ctypes.CDLL, name: str) -> int:
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int32
    fn.argtypes = []
    return fn()


def test_manifest_lists_the_codes_generated_code_needs():
    # Inductor emits these for the dtypes the runtime supports; losing one from the manifest would go unnoticed.
    for name in ("aoti_torch_dtype_float32", "aoti_torch_dtype_float16", "aoti_torch_dtype_bfloat16",
                 "aoti_torch_dtype_int8", "aoti_torch_dtype_uint8", "aoti_torch_dtype_int32",
                 "aoti_torch_dtype_int64", "aoti_torch_dtype_bool", "aoti_torch_dtype_complex64",
                 "aoti_torch_dtype_complex128", "aoti_torch_device_type_cpu",
                 "aoti_torch_device_type_cuda", "aoti_torch_layout_strided"):
        assert name in CODE_NAMES


@pytest.mark.parametrize("name", CODE_NAMES)
def test_code_matches_torch(ours, theirs, name):
    assert _call_code(ours, name) == _call_code(theirs, name), name


def test_codes_are_distinct(ours):
    dtypes = {n: _call_code(ours, n) for n in CODE_NAMES if n.startswith("aoti_torch_dtype_")}
    assert len(set(dtypes.values())) == len(dtypes), dtypes


def test_torch_only_dtype_is_refused_by_name(ours, theirs):
    """A dtype torch has and we do not (complex32) fails in empty_strided with a message giving the code."""
    complex32 = _call_code(theirs, "aoti_torch_dtype_complex32")
    sizes = (ctypes.c_int64 * 1)(2)
    strides = (ctypes.c_int64 * 1)(1)
    out = ctypes.c_void_p()
    ours.aoti_torch_empty_strided.restype = ctypes.c_int32
    ours.aotirt_last_error.restype = ctypes.c_char_p
    err = ours.aoti_torch_empty_strided(ctypes.c_int64(1), sizes, strides, ctypes.c_int32(complex32),
                                        ctypes.c_int32(_call_code(ours, "aoti_torch_device_type_cpu")),
                                        ctypes.c_int32(0), ctypes.byref(out))
    assert err == 1
    assert out.value is None
    msg = ours.aotirt_last_error().decode()
    assert msg.startswith("aoti_torch_empty_strided: ") and f"unsupported dtype code {complex32}" in msg, msg


def test_tensor_round_trip_reports_torch_codes(ours, theirs):
    """A tensor made with torch's bfloat16 / cpu codes reports the same codes back through our getters."""
    bf16 = _call_code(theirs, "aoti_torch_dtype_bfloat16")
    cpu = _call_code(theirs, "aoti_torch_device_type_cpu")
    sizes = (ctypes.c_int64 * 2)(2, 3)
    strides = (ctypes.c_int64 * 2)(3, 1)
    h = ctypes.c_void_p()
    for f in ("aoti_torch_empty_strided", "aoti_torch_get_dtype", "aoti_torch_get_device_type",
              "aoti_torch_get_layout", "aoti_torch_delete_tensor_object"):
        getattr(ours, f).restype = ctypes.c_int32
    assert ours.aoti_torch_empty_strided(ctypes.c_int64(2), sizes, strides, ctypes.c_int32(bf16),
                                         ctypes.c_int32(cpu), ctypes.c_int32(0), ctypes.byref(h)) == 0
    try:
        dtype, dev, layout = ctypes.c_int32(-1), ctypes.c_int32(-1), ctypes.c_int32(-1)
        assert ours.aoti_torch_get_dtype(h, ctypes.byref(dtype)) == 0
        assert ours.aoti_torch_get_device_type(h, ctypes.byref(dev)) == 0
        assert ours.aoti_torch_get_layout(h, ctypes.byref(layout)) == 0
        assert (dtype.value, dev.value, layout.value) == (bf16, cpu, _call_code(theirs, "aoti_torch_layout_strided"))
    finally:
        assert ours.aoti_torch_delete_tensor_object(h) == 0
