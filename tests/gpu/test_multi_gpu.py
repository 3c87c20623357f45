"""Two GPUs (issue 7; marks gpu and multi_gpu): per-device handles, workspaces and packages on cuda:0 and cuda:1 at
once. Skips with the reason on machines with fewer than two GPUs."""
import ctypes
import os
import threading

import pytest

from conftest import HAVE_CUDA, TOL, compiled

NGPU = 0
if HAVE_CUDA:
    import torch
    NGPU = torch.cuda.device_count()

pytestmark = [
    pytest.mark.multi_gpu,
    pytest.mark.skipif(NGPU < 2, reason=f"multi_gpu test skipped: needs 2 GPUs, this machine has {NGPU}"),
]


def _shims():
    from test_gemm_shims import Shims  # the ctypes wrapper of the GEMM shim tests
    path = os.environ.get("AOTIRT_SHIM_LIB")
    if not path:
        pytest.skip("AOTIRT_SHIM_LIB unset")
    return Shims(path)


def test_gemm_on_cuda1_while_current_is_cuda0_is_correct_and_keeps_the_device():
    s = _shims()
    torch.cuda.set_device(0)
    a = torch.randn(64, 96, device="cuda:1")
    b = torch.randn(96, 80, device="cuda:1")
    out = torch.empty(64, 80, device="cuda:1")
    ha, hb, ho = s.wrap(a), s.wrap(b), s.wrap(out)
    try:
        # The shim runs on the tensors' device (its handle and workspace), on that device's current stream.
        rc = s.lib.aoti_torch_cuda_mm_out(ho, ha, hb)
        assert rc == 0, s.error()
        torch.cuda.synchronize(1)
        torch.testing.assert_close(out, a @ b, **TOL["float32"])
        assert torch.cuda.current_device() == 0
    finally:
        for h in (ha, hb, ho):
            s.lib.aoti_torch_delete_tensor_object(h)


def test_tensor_on_the_wrong_device_names_both_devices():
    s = _shims()
    a = torch.randn(8, 8, device="cuda:0")
    b = torch.randn(8, 8, device="cuda:1")
    out = torch.empty(8, 8, device="cuda:0")
    ha, hb, ho = s.wrap(a), s.wrap(b), s.wrap(out)
    try:
        assert s.lib.aoti_torch_cuda_mm_out(ho, ha, hb) != 0
        msg = s.error()
        assert "cuda:1" in msg and "cuda:0" in msg, msg
    finally:
        for h in (ha, hb, ho):
            s.lib.aoti_torch_delete_tensor_object(h)


def test_packages_on_two_devices_from_two_threads():
    import aotirt
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(64, 128), nn.Linear(128, 32)

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x)))

    runners, models = [], []
    for dev in (0, 1):
        torch.manual_seed(dev)
        model, path = compiled(f"two_gpu_{dev}", lambda d=dev: M().to(f"cuda:{d}").eval(),
                               (torch.randn(16, 64, device=f"cuda:{dev}"),), device=f"cuda:{dev}",
                               options=aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="ATEN"))
        runners.append(aotirt.load(path, device=dev))
        models.append(model)
    errors = []

    def work(dev):
        try:
            with torch.cuda.device(dev):
                for _ in range(50):
                    x = torch.randn(16, 64, device=f"cuda:{dev}")
                    with torch.no_grad():
                        want = models[dev](x)
                    got = runners[dev](x)
                    torch.cuda.synchronize(dev)
                    torch.testing.assert_close(got, want, **TOL["float32"])
        except Exception as e:  # noqa: BLE001
            errors.append(f"cuda:{dev}: {e!r}")

    threads = [threading.Thread(target=work, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
