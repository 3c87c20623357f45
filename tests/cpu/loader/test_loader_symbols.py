"""The loader's symbol check without a GPU: a wrapper that calls a shim the library lacks fails to load with an
error naming that shim (RTLD_NOW at load time, never a crash at first call); a wrapper whose shims all exist
loads and then stops at the device check (or the stub container on a GPU machine)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _native():
    d = os.environ.get("AOTIRT_C_DIR")
    if d and d not in sys.path:
        sys.path.insert(0, d)
    import _C
    return _C


def test_missing_shim_is_named_at_load():
    _C = _native()
    with pytest.raises(RuntimeError) as info:
        _C.Model(os.environ["MISSING_PT2"])
    msg = str(info.value)
    assert "needs shim 'aoti_torch_cuda_fake_missing_op'" in msg, msg
    assert "libaoti_cuda_shims does not provide" in msg


def test_wrapper_with_known_shims_loads_until_the_device():
    _C = _native()
    with pytest.raises(RuntimeError) as info:
        _C.Model(os.environ["OK_PT2"])
    msg = str(info.value)
    assert "needs shim" not in msg, msg
    assert "no usable CUDA device" in msg or "creating the model container" in msg, msg
