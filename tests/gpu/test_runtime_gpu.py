"""End-to-end runtime tests on a GPU: packages compiled by AOTInductor (link_libtorch=False) run on our runtime
(aotirt.load -> aotirt._C -> libaoti_cuda_shims) and must match eager PyTorch."""
import os
import re
import subprocess
import threading

import pytest

from conftest import HAVE_CUDA, TOL, compiled, requires_gpu

if HAVE_CUDA:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2, self.l3 = nn.Linear(96, 256), nn.Linear(256, 256), nn.Linear(256, 40)

        def forward(self, x):
            return self.l3(F.silu(self.l2(F.gelu(self.l1(x)))))

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.c1(x))
            x = F.relu(self.c2(x))
            return self.fc(x.mean(dim=(2, 3)))

    class Attention(nn.Module):
        def __init__(self, dim=128, heads=4):
            super().__init__()
            self.heads = heads
            self.norm = nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return x + self.proj(y.transpose(1, 2).reshape(b, t, c))

    class MultiOut(nn.Module):
        """Several outputs, some of them non-contiguous views, one integer."""

        def forward(self, x, y):
            z = x * 2 + y
            return z, z.t(), (x + 1)[:, ::2], z.sum(0), (z > 0).sum(dim=1)

    MODELS = {
        "mlp": (MLP, lambda dt: (torch.randn(8, 96, device="cuda", dtype=dt),)),
        "conv": (ConvNet, lambda dt: (torch.randn(2, 3, 32, 32, device="cuda", dtype=dt),)),
        "attn": (Attention, lambda dt: (torch.randn(2, 64, 128, device="cuda", dtype=dt),)),
        "multi": (MultiOut, lambda dt: (torch.randn(12, 10, device="cuda", dtype=dt),
                                       torch.randn(12, 10, device="cuda", dtype=dt))),
    }

    def options_for(name, dtype_name):
        """float32 models (but attention) use Triton GEMMs and convolutions (autotuned); the others let Inductor call
        the cuBLASLt GEMM shims (ATEN), which also keeps this suite's compile time down. Convolutions are Triton
        templates in both (the cuDNN convolution shim has tests of its own)."""
        import aotirt
        # Inductor's Triton conv templates are only offered when TRITON is among the GEMM backends.
        if (dtype_name == "float32" and name != "attn") or name == "conv":
            return aotirt.CompileOptions(max_autotune_gemm_backends="TRITON", max_autotune_conv_backends="TRITON")
        return aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="ATEN")

    def build(name, dtype_name):
        cls, make_inputs = MODELS[name]
        dt = getattr(torch, dtype_name)
        torch.manual_seed(0)
        factory = lambda: cls().to("cuda", dt).eval()  # noqa: E731
        example = make_inputs(dt)
        model, path = compiled(f"{name}_{dtype_name}", factory, example, options=options_for(name, dtype_name))
        return model, path, make_inputs, dt


def _flat(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _assert_close(got, want, dtype_name):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.device == w.device, (g.shape, w.shape, g.dtype, w.dtype)
        if w.is_floating_point():
            torch.testing.assert_close(g, w, **TOL[dtype_name])
        else:
            assert torch.equal(g, w)


@requires_gpu
@pytest.mark.parametrize("dtype_name", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["mlp", "conv", "attn", "multi"])
def test_model_matches_eager(name, dtype_name):
    import aotirt
    model, path, make_inputs, dt = build(name, dtype_name)
    runner = aotirt.load(path)
    for _ in range(3):  # fresh inputs each time: nothing is baked in
        inputs = make_inputs(dt)
        with torch.no_grad():
            want = model(*inputs)
        got = runner(*inputs)
        torch.cuda.synchronize()
        _assert_close(got, want, dtype_name)


@requires_gpu
def test_outputs_are_not_copied_and_are_released():
    import aotirt
    from aotirt import _C
    _, path, make_inputs, dt = build("multi", "float32")
    runner = aotirt.load(path)
    base = _C.live_tensor_count()
    outs = _flat(runner(*make_inputs(dt)))
    # The torch tensors hold the runtime's own tensor objects (DLPack hand-off), so they are alive...
    assert _C.live_tensor_count() > base
    ptrs = {o.data_ptr() for o in outs}
    assert len(ptrs) >= 3
    del outs
    torch.cuda.synchronize()
    # ...and released when torch drops them.
    assert _C.live_tensor_count() == base


@requires_gpu
def test_two_packages_in_one_process():
    import aotirt
    m1, p1, mk1, dt1 = build("mlp", "float32")
    m2, p2, mk2, dt2 = build("attn", "bfloat16")
    r1, r2 = aotirt.load(p1), aotirt.load(p2)
    r1b = aotirt.load(p1)  # a second instance of the same package
    for _ in range(2):
        a, b = mk1(dt1), mk2(dt2)
        with torch.no_grad():
            wa, wb = m1(*a), m2(*b)
        _assert_close(r1(*a), wa, "float32")
        _assert_close(r2(*b), wb, "bfloat16")
        _assert_close(r1b(*a), wa, "float32")


@requires_gpu
def test_four_threads_each_on_its_own_stream():
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    runner = aotirt.load(path, num_instances=4)
    errors = []

    def work(seed):
        try:
            stream = torch.cuda.Stream()
            g = torch.Generator(device="cuda").manual_seed(seed)
            with torch.cuda.stream(stream):
                for _ in range(25):
                    x = torch.randn(8, 96, device="cuda", generator=g)
                    with torch.no_grad():
                        want = model(x)
                    got = runner(x)  # runs on torch's current stream: `stream`
                    stream.synchronize()
                    torch.testing.assert_close(got, want, **TOL["float32"])
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


@requires_gpu
def test_missing_shim_is_refused_at_lowering_and_named_at_load(tmp_path):
    import aotirt
    from aotirt import errors as aerrors
    from aotirt import specs

    class Inverse(nn.Module):
        def forward(self, x):
            return torch.linalg.inv(x) * 2

    x = torch.randn(4, 8, 8, device="cuda") + 4 * torch.eye(8, device="cuda")
    model = Inverse().cuda().eval()
    # Inductor has no lowering for a matrix inverse: the wrapper would call ATen fallback shims nobody provides.
    # aotirt's lowering refuses it, naming them ...
    with pytest.raises(aerrors.UnsupportedShimError, match=r"aoti_torch_\w+") as refused:
        aotirt.compile(model, (x,), str(tmp_path / "refused.pt2"))
    assert "does not export" in str(refused.value)
    # ... and a package built without aotirt's rules (plain AOTInductor, same options) fails at load with the name.
    opts = {k: v for k, v in specs.inductor_options(specs.CompileOptions()).items()}
    ep = torch.export.export(model, (x,))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "plain.pt2"),
                                                    inductor_configs=opts)
    with pytest.raises(aerrors.Error) as info:
        aotirt.load(path)
    msg = str(info.value)
    assert re.search(r"needs shim 'aoti_torch_\w+'", msg), msg


@requires_gpu
def test_cpp_runner_matches_eager_and_has_no_libtorch(tmp_path):
    from aotirt import tensorfile
    runner_bin = os.environ.get("AOTIRT_RUN")
    if not runner_bin:
        pytest.skip("AOTIRT_RUN (path to aotirt_run) not set")
    model, path, make_inputs, dt = build("attn", "bfloat16")
    inputs = make_inputs(dt)
    with torch.no_grad():
        want = model(*inputs)
    tensorfile.save(str(tmp_path / "in.safetensors"), [t.cpu() for t in inputs])
    proc = subprocess.run([runner_bin, "--package", path, "--inputs", str(tmp_path / "in.safetensors"),
                           "--outputs", str(tmp_path / "out.safetensors"), "--warmup", "2", "--iters", "10",
                           "--check-no-libtorch"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "latency over 10 runs" in proc.stdout
    assert "libtorch mapped: no" in proc.stdout, proc.stdout
    got = tensorfile.load(str(tmp_path / "out.safetensors"), framework="torch")
    _assert_close(got["0"].cuda(), want, "bfloat16")
    # The same through a whole-model CUDA graph.
    proc = subprocess.run([runner_bin, "--package", path, "--inputs", str(tmp_path / "in.safetensors"),
                           "--outputs", str(tmp_path / "out_graph.safetensors"), "--iters", "10", "--graph"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "captured into a CUDA graph" in proc.stdout
    got = tensorfile.load(str(tmp_path / "out_graph.safetensors"), framework="torch")
    _assert_close(got["0"].cuda(), want, "bfloat16")


@requires_gpu
def test_wrong_inputs_are_errors_not_crashes():
    import aotirt
    from aotirt import errors as aerrors
    _, path, make_inputs, dt = build("mlp", "float32")
    runner = aotirt.load(path)
    with pytest.raises(aerrors.Error):
        runner()  # no inputs
    with pytest.raises(Exception) as info:
        runner(torch.randn(8, 96))  # CPU tensor
    assert "cpu" in str(info.value).lower()
    with pytest.raises(aerrors.Error) as info:
        runner(torch.randn(8, 96, device="cuda", dtype=torch.float16))  # wrong dtype
    assert "dtype" in str(info.value)
    with pytest.raises(aerrors.Error) as info:
        runner(torch.randn(9, 96, device="cuda"))  # wrong shape
    assert "[9, 96]" in str(info.value)
    # A layout the code was not compiled for is copied into the compiled one, not misread.
    x = make_inputs(dt)[0]
    xt = x.t().contiguous().t()
    with torch.no_grad():
        torch.testing.assert_close(runner(xt), runner(x))
    # Still usable afterwards.
    x = make_inputs(dt)[0]
    assert runner(x).shape == (8, 40)


@requires_gpu
def test_native_run_checks_what_python_checks_first():
    """The C++ Model::Run refuses bad inputs itself (for the C++ runner and other callers of _C): wrong count,
    a dtype DLPack cannot map, a wrong dtype; each capsule is released, and the model keeps running."""
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    runner = aotirt.load(path)
    native, stream = runner._model, torch.cuda.current_stream().cuda_stream
    with pytest.raises(RuntimeError, match=r"takes 1 inputs, got 0"):
        native.run([], stream)
    with pytest.raises(RuntimeError, match=r"unsupported DLPack dtype \(code 1, bits 16\)"):
        native.run([torch.zeros(8, 96, dtype=torch.uint16, device="cuda").__dlpack__()], stream)
    with pytest.raises(RuntimeError, match=r"dtype code 5, the model was compiled for"):
        native.run([torch.zeros(8, 96, dtype=torch.float16, device="cuda").__dlpack__()], stream)
    with pytest.raises(RuntimeError, match=r"not an unconsumed DLPack capsule"):
        native.run([object()], stream)
    before = torch.cuda.memory_allocated()
    for _ in range(50):  # refused capsules are freed by their own deleters (no leak of the producer's memory)
        with pytest.raises(RuntimeError):
            native.run([torch.empty(1 << 20, dtype=torch.uint16, device="cuda").__dlpack__()], stream)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before
    x = make_inputs(dt)
    with torch.no_grad():
        _assert_close(runner(*x), model(*x), "float32")
