"""aotirt.compile refusals that need no GPU, and the demo model (CPU forward + torch.export)."""
import os

import pytest
import torch

import aotirt
from aotirt import demo, lowering


class ExportSpy(torch.nn.Module):
    """Counts forward calls: a refusal must come before torch.export traces the model."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_refuses_torch_without_cuda_before_exporting(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError) as info:
        aotirt.compile(spy, (torch.randn(2, 4),))
    msg = str(info.value)
    assert "built without CUDA" in msg and torch.__version__ in msg and "GPU" in msg
    assert spy.calls == 0


def test_refuses_when_no_gpu_is_visible(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError, match=r"sees no GPU.*CUDA_VISIBLE_DEVICES"):
        aotirt.compile(spy, (torch.randn(2, 4),))
    assert spy.calls == 0


def test_this_machine_refuses_with_the_real_torch():
    if torch.cuda.is_available():
        pytest.skip("this machine can lower for CUDA (the refusal is tested with monkeypatched torch above)")
    with pytest.raises(aotirt.LoweringError, match="cannot lower for CUDA"):
        aotirt.compile(ExportSpy(), (torch.randn(2, 4),))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"device": "cpu"}, aotirt.SpecError, r"device='cpu' is not supported; valid: 'cuda' or 'cuda:N'"),
    ({"device": "cuda:x"}, aotirt.SpecError, "not supported"),
    ({"package_path": "model.zip"}, aotirt.SpecError, "must end with .pt2"),
    ({"options": aotirt.CompileOptions(), "inductor_configs": {"aot_inductor.link_libtorch": True}},
     aotirt.SpecError, "link_libtorch"),
])
def test_bad_arguments_are_refused_first(kwargs, error, match):
    spy = ExportSpy()
    with pytest.raises(error, match=match):
        aotirt.compile(spy, (torch.randn(2, 4),), **kwargs)
    assert spy.calls == 0


def test_cpu_example_inputs_are_refused(monkeypatch):
    # Past the CUDA check (pretend), a CPU example input would silently compile a CPU package: refuse it.
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    spy = ExportSpy()
    with pytest.raises(aotirt.LoweringError, match=r"example input 0 \(shape \(2, 4\), torch.float32\) is on cpu"):
        aotirt.compile(spy, (torch.randn(2, 4),))
    assert spy.calls == 0


def test_not_a_model_is_refused(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    with pytest.raises(aotirt.LoweringError, match="takes a torch.nn.Module or torch.export.ExportedProgram, got str"):
        aotirt.compile("model.py", ())


def test_export_failure_is_a_lowering_error(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)

    class Bad(torch.nn.Module):
        def forward(self):
            raise KeyError("no such weight")

    with pytest.raises(aotirt.LoweringError, match="torch.export failed for Bad: KeyError"):
        aotirt.compile(Bad(), ())


def test_lowering_context_restores_precision_and_forces_math_sdpa():
    opts = aotirt.CompileOptions(float32_matmul_precision="high", attention_backend="MATH")
    before = torch.get_float32_matmul_precision()
    with lowering.lowering_context(torch, opts, None):
        assert torch.get_float32_matmul_precision() == "high"
        assert not torch.is_grad_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
        assert not torch.backends.cuda.flash_sdp_enabled()
        assert not torch.backends.cuda.mem_efficient_sdp_enabled()
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    assert torch.get_float32_matmul_precision() == before


# ---- attention_backend: the sdpa_kernel context the lowering enters -----------------------------------------------
def _sdp_flags():
    b = torch.backends.cuda
    return {"MATH": b.math_sdp_enabled(), "FLASH": b.flash_sdp_enabled(), "EFFICIENT": b.mem_efficient_sdp_enabled(),
            "CUDNN": b.cudnn_sdp_enabled()}


def test_every_attention_backend_value_has_an_sdpa_context():
    from aotirt import specs
    assert tuple(lowering.SDPA_BACKENDS) == specs.VALID_ATTENTION_BACKENDS


@pytest.mark.parametrize("backend,enabled", [
    ("MATH", {"MATH"}),
    ("CUDNN", {"CUDNN", "FLASH", "EFFICIENT"}),  # never MATH: SDPA stays one op, a call to an SDPA shim
])
def test_sdpa_context_enables_the_backends_of_attention_backend(backend, enabled):
    from torch.nn.attention import SDPBackend
    opts = aotirt.CompileOptions(attention_backend=backend.lower())
    want = {"MATH": [SDPBackend.MATH],
            "CUDNN": [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]}
    assert lowering.sdpa_backends(torch, opts) == want[backend]
    before = _sdp_flags()
    with lowering.sdpa_context(torch, opts):
        assert {k for k, v in _sdp_flags().items() if v} == enabled
    assert _sdp_flags() == before
    with lowering.lowering_context(torch, opts, None):  # what aotirt.compile and the ExecuTorch door enter
        assert {k for k, v in _sdp_flags().items() if v} == enabled
        assert not torch.is_grad_enabled()
    assert _sdp_flags() == before


def test_export_runs_under_the_attention_backend_context(monkeypatch):
    """aotirt.compile exports (and compiles) inside the context: the model sees CUDNN's backends, not MATH."""
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    seen = []

    class Probe(torch.nn.Module):
        def forward(self):
            seen.append(_sdp_flags())
            raise KeyError("stop after the probe")

    for backend in ("MATH", "CUDNN"):
        with pytest.raises(aotirt.LoweringError, match="torch.export failed"):
            aotirt.compile(Probe(), (), options=aotirt.CompileOptions(target="cuda", attention_backend=backend))
    assert [{k for k, v in f.items() if v} for f in seen] == [{"MATH"}, {"CUDNN", "FLASH", "EFFICIENT"}]


def test_no_fused_kernel_under_cudnn_says_to_use_math(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)

    class NoKernel(torch.nn.Module):
        def forward(self):
            raise RuntimeError("No available kernel. Aborting execution.")

    with pytest.raises(aotirt.LoweringError, match=r"No available kernel.*attention_backend='CUDNN'.*use "
                                                   r"attention_backend='MATH'"):
        aotirt.compile(NoKernel(), (), options=aotirt.CompileOptions(target="cuda", attention_backend="CUDNN"))
    with pytest.raises(aotirt.LoweringError, match=r"No available kernel.*attention_backend='CUDNN,TRITON'.*use "
                                                   r"attention_backend='MATH'"):  # linux_cuda's default
        aotirt.compile(NoKernel(), (), options=aotirt.CompileOptions(target="cuda"))
    with pytest.raises(aotirt.LoweringError) as info:
        aotirt.compile(NoKernel(), (), options=aotirt.CompileOptions(target="cuda", attention_backend="MATH"))
    assert "attention_backend" not in str(info.value)


def test_no_fused_kernel_in_inductor_says_to_use_math():
    err = lowering.compile_failure(RuntimeError("No available kernel. Aborting execution."), "AOTInductor compilation")
    assert "use attention_backend='MATH'" in str(err) and "No available kernel" in str(err)
    assert "attention_backend" not in str(lowering.compile_failure(RuntimeError("other"), "AOTInductor compilation"))


def test_no_valid_choice_for_a_grouped_gemm_says_what_its_template_takes():
    err = str(lowering.compile_failure(RuntimeError("NoValidChoicesError: No choices to select, please consider "
                                                    "adding ATEN into max_autotune_gemm_backends config. target: "
                                                    "grouped_mm"), "AOTInductor compilation"))
    assert "no kernel choice for a grouped GEMM (aten._grouped_mm" in err and "static shapes" in err, err
    err = str(lowering.compile_failure(RuntimeError("NoValidChoicesError: mm"), "AOTInductor compilation"))
    assert "grouped" not in err and "for a GEMM or convolution" in err


def test_cudnn_is_refused_for_rocm_before_exporting(monkeypatch):
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    spy = ExportSpy()
    with pytest.raises(aotirt.UnsupportedPlatformError, match="rocm: attention_backend='CUDNN'.*'MATH'"):
        aotirt.compile(spy, (torch.randn(2, 4),), options=aotirt.CompileOptions(attention_backend="CUDNN"))
    assert spy.calls == 0


def test_demo_model_runs_and_exports():
    model = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8)
    (x,) = model.example_inputs(dtype=torch.float32, device="cpu", batch=2)
    assert x.shape == (2, 8, 64) and x.dtype == torch.float32
    with torch.no_grad():
        y = model(x)
    assert y.shape == x.shape and torch.isfinite(y).all()
    assert 0.5 < y.std().item() < 2.0  # post-LN output: O(1), not collapsed
    # deterministic weights from the seed; different seeds differ
    again = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8)
    assert torch.equal(model.blocks[1].fc1.weight, again.blocks[1].fc1.weight)
    other = demo.siglip_like(num_blocks=2, width=64, heads=4, mlp=96, tokens=8, seed=1)
    assert not torch.equal(model.blocks[1].fc1.weight, other.blocks[1].fc1.weight)
    # biases everywhere, GELU tanh + SDPA in the graph
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "aten.scaled_dot_product_attention.default" in targets
    assert all(m.bias is not None for m in model.modules() if isinstance(m, torch.nn.Linear))
    torch.testing.assert_close(ep.module()(x), y)


def test_demo_defaults_are_siglip_so400m_sizes():
    (x,) = demo.example_inputs(dtype=torch.bfloat16, device="cpu")
    assert x.shape == (1, 256, 1152) and x.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="divisible by heads"):
        demo.siglip_like(width=100, heads=16, num_blocks=1)


# ---- platform, model and GPU refusals (before Inductor), and the shim check inside Inductor -------------------------
from aotirt import platforms  # noqa: E402


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(self.conv(x).mean((2, 3)))


class Gemms(torch.nn.Module):
    """mm, addmm (bias row) and bmm: on CPU Inductor calls aoti_torch_cpu_{mm,addmm,bmm}_out for them."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8))
        self.b = torch.nn.Parameter(torch.randn(8))

    def forward(self, x, y, z):
        return torch.addmm(self.b, x, self.w), torch.mm(x, self.w), torch.bmm(y, z)


def _gemm_inputs():
    return torch.randn(4, 16), torch.randn(2, 3, 5), torch.randn(2, 5, 6)


@pytest.fixture
def past_the_gpu_checks(monkeypatch):
    """Pretends this CPU machine can lower: no CUDA check, CPU example inputs allowed, an H200's properties."""
    monkeypatch.setattr(lowering, "check_cuda_available", lambda torch, target="cuda": None)
    monkeypatch.setattr(lowering, "_check_example_inputs", lambda torch, inputs, index: None)
    monkeypatch.setattr(platforms, "gpu_properties", lambda index=None: platforms.GpuProperties("NVIDIA H200", 132, 9))


@pytest.fixture
def no_inductor(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("Inductor must not run: the refusal comes first")
    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", fail)


def test_conv_with_aten_only_is_refused_before_inductor(past_the_gpu_checks, no_inductor, tmp_path):
    opts = aotirt.CompileOptions(max_autotune_gemm_backends="aten", max_autotune_conv_backends="triton")
    with pytest.raises(aotirt.UnsupportedShimError, match=r"convolutions \(conv2d\).*'ATEN,TRITON'"):
        aotirt.compile(ConvNet(), (torch.randn(1, 3, 8, 8),), str(tmp_path / "m.pt2"), options=opts)
    assert not (tmp_path / "m.pt2").exists()


def test_conv_without_autotune_is_refused_naming_the_convolution_shim_where_the_manifest_lacks_it(
        past_the_gpu_checks, no_inductor, tmp_path, monkeypatch):
    text = open(platforms.manifest_path()).read()
    assert "\naoti_torch_cuda_convolution\t" in text
    without = tmp_path / "no_conv.tsv"
    without.write_text("".join(line for line in text.splitlines(True)
                               if not line.startswith("aoti_torch_cuda_convolution\t")))
    monkeypatch.setenv(platforms.MANIFEST_ENV, str(without))
    with pytest.raises(aotirt.UnsupportedShimError, match="aoti_torch_cuda_convolution, which the linux_cuda"):
        aotirt.compile(ConvNet(), (torch.randn(1, 3, 8, 8),),
                       options=aotirt.CompileOptions(max_autotune=False, max_autotune_conv_backends="TRITON"))
    # the default conv backends (ATEN on linux_cuda) are refused up front there, naming the shim
    with pytest.raises(aotirt.UnsupportedPlatformError, match="max_autotune_conv_backends='ATEN'.*"
                                                               "aoti_torch_cuda_convolution is not in its set"):
        aotirt.compile(ConvNet(), (torch.randn(1, 3, 8, 8),))


class _ReachedInductor(Exception):
    pass


@pytest.mark.parametrize("opts", [aotirt.CompileOptions(max_autotune=False),
                                  aotirt.CompileOptions(max_autotune_gemm_backends="ATEN",
                                                        max_autotune_conv_backends="ATEN,TRITON")])
def test_conv_reaches_inductor_with_the_cudnn_fallback_on_linux_cuda(past_the_gpu_checks, monkeypatch, opts):
    """The manifest gives linux_cuda aoti_torch_cuda_convolution: no refusal, Inductor gets the conv backends."""
    seen = {}

    def fake(ep, package_path=None, inductor_configs=None):
        seen.update(inductor_configs)
        raise _ReachedInductor()
    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", fake)
    with pytest.raises(aotirt.LoweringError, match="AOTInductor compilation failed: _ReachedInductor") as info:
        aotirt.compile(ConvNet(), (torch.randn(1, 3, 8, 8),), options=opts)
    assert isinstance(info.value.__cause__, _ReachedInductor)
    # max_autotune OFF: ATEN, or Inductor's conv lowering has no choice (NoValidChoicesError on the H200)
    assert seen["max_autotune_conv_backends"] == (opts.max_autotune_conv_backends if opts.max_autotune else "ATEN")
    assert seen["max_autotune"] is opts.max_autotune


def test_small_gpu_is_refused_suggesting_aten_triton(past_the_gpu_checks, no_inductor, monkeypatch):
    monkeypatch.setattr(platforms, "gpu_properties", lambda index=None: platforms.GpuProperties("Jetson Orin", 16, 8, 7))
    with pytest.raises(aotirt.SmallGpuError, match=r"Jetson Orin has 16 SMs.*'ATEN,TRITON'"):
        aotirt.compile(ExportSpy(), (torch.randn(2, 4),),
                       options=aotirt.CompileOptions(max_autotune_gemm_backends="TRITON"))


def test_rocm_refusals_come_before_export(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    for opts in (aotirt.CompileOptions(max_autotune=False), aotirt.CompileOptions(max_autotune_gemm_backends="ATEN")):
        spy = ExportSpy()
        with pytest.raises(aotirt.UnsupportedPlatformError, match="cannot lower for rocm"):
            aotirt.compile(spy, (torch.randn(2, 4),), options=opts)
        assert spy.calls == 0


def test_windows_needs_the_import_library_folder():
    spy = ExportSpy()
    with pytest.raises(aotirt.SpecError, match=r"aoti_cuda_shims.lib.*shim_library_path="):
        aotirt.compile(spy, (torch.randn(2, 4),), options=aotirt.CompileOptions(platform="windows"))
    assert spy.calls == 0


def test_collector_lists_every_fallback_shim_from_real_inductor_codegen():
    # Real Inductor (CPU device): the hooks see the extern GEMM calls and refuse before the C++ build, with all of
    # them, sorted. On a GPU the same hooks see aoti_torch_cuda_* names.
    ep = torch.export.export(Gemms(), _gemm_inputs())
    with pytest.raises(Exception) as info:
        with lowering.collect_shim_calls("linux_cuda"):
            torch._inductor.aoti_compile_and_package(ep, inductor_configs={"aot_inductor.link_libtorch": False})
    refusal = lowering.shim_error_in(info.value)
    assert refusal is not None, info.value
    assert refusal.shims == ["aoti_torch_cpu_addmm_out", "aoti_torch_cpu_bmm_out", "aoti_torch_cpu_mm_out"]
    assert "3 shim(s) that the linux_cuda shim library does not export" in str(refusal)


def test_collector_restores_inductor():
    from torch._inductor.codecache import AotCodeCompiler
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    before = (AotCodeCompiler.__dict__["compile"], CppWrapperCpu.generate_c_shim_extern_kernel_call)
    with lowering.collect_shim_calls("linux_cuda"):
        assert CppWrapperCpu.generate_c_shim_extern_kernel_call is not before[1]
    assert (AotCodeCompiler.__dict__["compile"], CppWrapperCpu.generate_c_shim_extern_kernel_call) == before


def test_collector_offers_grouped_mm_only_its_triton_template_where_no_shim_has_the_fallback(monkeypatch):
    from torch._inductor import config as inductor_config
    from torch._inductor.kernel import mm_grouped
    from aotirt import platforms
    seen = []
    monkeypatch.setattr(mm_grouped, "use_triton_template",
                        lambda layout, **kw: seen.append(inductor_config.max_autotune_gemm_backends) or True)
    before = (mm_grouped.use_aten_gemm_kernels, mm_grouped.use_triton_template)
    with inductor_config.patch(max_autotune_gemm_backends="ATEN"):
        with lowering.collect_shim_calls("linux_cuda"):
            assert mm_grouped.use_aten_gemm_kernels() is False  # never the ATen fallback
            assert mm_grouped.use_triton_template("layout") is True
        assert inductor_config.max_autotune_gemm_backends == "ATEN"
    assert seen == ["ATEN,TRITON"]  # the template asked for as if TRITON were a backend, for grouped GEMMs only
    assert (mm_grouped.use_aten_gemm_kernels, mm_grouped.use_triton_template) == before
    # a build that had the shim would keep Inductor's own choices
    man = platforms.parse_manifest(f"{platforms.GROUPED_MM_SHIM}\tlinux_cuda\n")
    with lowering.collect_shim_calls("linux_cuda", man):
        assert (mm_grouped.use_aten_gemm_kernels, mm_grouped.use_triton_template) == before


def test_triton_scratch_is_sized_for_every_cta_of_the_grid():
    """torch 2.11's wrapper gave a TMA kernel's global scratch one CTA's bytes (the H100 run of 8fc3dee: the small
    bf16 Mixtral's grouped GEMM, USE_TMA_LOAD, faulted with an illegal address); the hook sizes it by the grid as
    torch 2.13 does, and leaves 2.13's lines alone."""
    old = ["int64_t global_scratch_scratch_3_size[] = {128};", "int64_t global_scratch_scratch_3_stride[] = {1};",
           "AtenTensorHandle global_scratch_scratch_3_handle;"]
    fixed = lowering.scratch_for_the_grid(old)
    assert fixed[0] == ("int64_t global_scratch_scratch_3_size[] = "
                        "{static_cast<int64_t>(128) * grid_0 * grid_1 * grid_2};"), fixed
    assert fixed[1:] == old[1:]
    new = ["int64_t s_size[] = {static_cast<int64_t>(64) * grid_0 * grid_1 * grid_2};", "x"]
    assert lowering.scratch_for_the_grid(new) == new
    assert lowering.scratch_for_the_grid([]) == []
    # a kernel that needs no scratch: torch's one line for it (every AOTI compile on the GPU has such kernels)
    assert lowering.scratch_for_the_grid(["CUdeviceptr global_scratch_scratch_9 = 0;"]) == [
        "CUdeviceptr global_scratch_scratch_9 = 0;"]
    assert lowering.scratch_for_the_grid(["CUdeviceptr profile_scratch_scratch_5 = 0;"]) == [
        "CUdeviceptr profile_scratch_scratch_5 = 0;"]
    with pytest.raises(aotirt.LoweringError, match="unexpected wrapper line"):
        lowering.scratch_for_the_grid(["CUdeviceptr s = 0;", "more();"])  # not the one-line form
    sym = lowering.scratch_for_the_grid(["int64_t s_size[] = {16L*s0};"])  # an expression is wrapped whole
    assert sym == ["int64_t s_size[] = {static_cast<int64_t>(16L*s0) * grid_0 * grid_1 * grid_2};"], sym
    with pytest.raises(aotirt.LoweringError, match="cannot size this torch's Triton scratch"):
        lowering.scratch_for_the_grid(["auto s = alloc(128);"])  # a form it does not know: an error, not a no-op
    # inside the collector, Inductor's own cpp_scratch (this torch's) comes out sized by the grid, and is restored
    from torch._inductor.codegen.cuda.device_op_overrides import CUDADeviceOpOverrides
    from torch._inductor.codegen.common import TritonScratchWorkspace
    before = CUDADeviceOpOverrides.__dict__["cpp_scratch"]
    ws = TritonScratchWorkspace(size=256, generate_dtype_str=lambda: "cached_torch_dtype_uint8")
    with lowering.collect_shim_calls("linux_cuda"):
        lines, var = CUDADeviceOpOverrides().cpp_scratch(7, workspace=ws, prefix="global_scratch")
        assert "256" in lines[0] and "grid_0 * grid_1 * grid_2" in lines[0], lines
        assert var == "global_scratch_scratch_7"
        # a kernel that needs no scratch (most of them): this torch's null-pointer line passes unchanged
        none = TritonScratchWorkspace(size=0, generate_dtype_str=lambda: "cached_torch_dtype_uint8")
        lines, _ = CUDADeviceOpOverrides().cpp_scratch(8, workspace=none, prefix="global_scratch")
        assert lines == ["CUdeviceptr global_scratch_scratch_8 = 0;"], lines
    assert CUDADeviceOpOverrides.__dict__["cpp_scratch"] is before


def test_compile_surfaces_the_shim_refusal_and_writes_nothing(past_the_gpu_checks, tmp_path):
    target = tmp_path / "out" / "m.pt2"
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        aotirt.compile(Gemms(), _gemm_inputs(), str(target), options=aotirt.CompileOptions(max_autotune=False))
    assert info.value.shims == ["aoti_torch_cpu_addmm_out", "aoti_torch_cpu_bmm_out", "aoti_torch_cpu_mm_out"]
    assert not target.exists() and os.listdir(tmp_path / "out") == []  # the staging folder is gone too


def test_package_scan_refuses_what_the_hooks_missed(tmp_path):
    import zipfile
    pkg = tmp_path / "m.pt2"
    with zipfile.ZipFile(pkg, "w") as z:
        z.writestr("m/data/aotinductor/model/x.wrapper.cpp",
                   "AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(a, b, c));\naoti_torch_empty_strided(1);")
    assert "aoti_torch_cuda_mm_out" in lowering.check_package_shims(str(pkg), "linux_cuda")
    with pytest.raises(aotirt.UnsupportedShimError, match="package m.pt2 would call 1 shim.*aoti_torch_cuda_mm_out"):
        lowering.check_package_shims(str(pkg), "windows_cuda")


def test_no_valid_choices_gets_a_hint(past_the_gpu_checks):
    # On CPU there are no Triton GEMM templates: with TRITON only Inductor finds no GEMM choice, as on a small GPU.
    with pytest.raises(aotirt.LoweringError, match=r"no kernel choice .*NoValidChoicesError.*use max_autotune_gemm_backends='ATEN,TRITON'"):
        aotirt.compile(Gemms(), _gemm_inputs(), options=aotirt.CompileOptions(max_autotune_gemm_backends="TRITON"))


def test_collector_names_op_fallbacks_by_their_shim():
    # Inductor hands generate_c_shim_extern_kernel_call an op's C++ name (at::_ops::<op>::call) for ATen fallbacks
    # such as SDPA; the refusal must name the shim the wrapper calls (aoti_torch_<device>_<op>), which is what the
    # manifest lists (on the H200 the CUDNN attention backend was refused as "at::_ops::..._cudnn_attention::call").
    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    q = torch.randn(1, 2, 8, 16)
    ep = torch.export.export(Attention(), (q, q.clone(), q.clone()))
    with pytest.raises(Exception) as info:
        with lowering.collect_shim_calls("linux_cuda"):
            torch._inductor.aoti_compile_and_package(ep, inductor_configs={"aot_inductor.link_libtorch": False})
    refusal = lowering.shim_error_in(info.value)
    assert refusal is not None, info.value
    assert refusal.shims == ["aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu"], refusal.shims


class _Attention(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout, is_causal=True)


def _attention_features(dtype, d, dv=None, dropout=0.0):
    q = torch.randn(1, 2, 8, d, dtype=dtype)
    v = torch.randn(1, 2, 8, dv or d, dtype=dtype)
    return platforms.model_features(torch.export.export(_Attention(dropout), (q, q.clone(), v)).graph)


def test_cudnn_attention_refuses_what_the_shims_cannot_run_before_inductor():
    """attention_backend CUDNN on float32 lowered (torch takes its memory-efficient kernel, whose shim runs on cuDNN)
    and failed on every call; now refused at lowering with every reason, and MATH named."""
    cudnn, math = aotirt.CompileOptions(attention_backend="CUDNN"), aotirt.CompileOptions(attention_backend="MATH")
    fine = _attention_features(torch.bfloat16, 64)
    assert fine.attention == (("scaled_dot_product_attention", "bfloat16", 64, 64, 0.0),)
    platforms.check_attention(cudnn, fine)
    platforms.check_attention(cudnn, _attention_features(torch.float16, 256, 128))
    for feats, why in ((_attention_features(torch.float32, 64), "dtype float32"),
                       (_attention_features(torch.bfloat16, 12), "query/key head dim 12"),
                       (_attention_features(torch.bfloat16, 64, 264), "value head dim 264"),
                       (_attention_features(torch.float16, 64, dropout=0.1), "dropout_p=0.1")):
        with pytest.raises(aotirt.UnsupportedShimError, match=rf"cannot run 1 SDPA call.*{why}.*attention_backend='MATH'"):
            platforms.check_attention(cudnn, feats)
        platforms.check_attention(math, feats)  # MATH decomposes SDPA: anything goes


def test_return_types_get_serialization_names_so_a_sort_output_spec_round_trips():
    """torch registers torch.return_types without pytree serialization names: AOTInductor's treespec_dumps of a model
    returning torch.sort(x) failed ("No registered serialization name"). After name_return_types it dumps, loads back
    to the same structseq, and a second call names nothing."""
    import torch
    from torch.utils import _pytree as pytree

    from aotirt.return_types import name_return_types
    name_return_types(torch)
    assert name_return_types(torch) == 0
    x = torch.randn(3, 4)
    for out in (torch.sort(x), torch.topk(x, 2), torch.max(x, 1)):
        leaves, spec = pytree.tree_flatten(out)
        back = pytree.treespec_loads(pytree.treespec_dumps(spec))
        assert back == spec and type(pytree.tree_unflatten(leaves, back)) is type(out)
    assert '"torch.return_types.sort"' in pytree.treespec_dumps(pytree.tree_structure(torch.sort(x)))


def _exported_attention_with_a_layout_dependent_view():
    import torch
    import torch.nn.functional as F

    class M(torch.nn.Module):
        def forward(self, x):
            b, t, _ = x.shape
            q = x.view(b, t, 4, 16).transpose(1, 2)  # [B, H, T, D] laid out [B, T, H, D]: SDPA's output follows it
            y = F.scaled_dot_product_attention(q, q, q)
            return y.transpose(1, 2).view(b, t, 64) * 2  # a view only that layout allows

    x = torch.randn(2, 10, 64)
    with torch.no_grad():
        return M(), x, torch.export.export(M(), (x,))


def test_sdpa_outputs_keep_their_exported_layout_under_math():
    """An ExportedProgram traced with a fused SDPA (its output in the query's layout) and a view that relies on it:
    re-traced with SDPA as MATH (what attention_backend MATH lowers) the view fails; after align_sdpa_layouts it
    traces, and computes the same."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from aotirt.lowering import align_sdpa_layouts
    model, x, ep = _exported_attention_with_a_layout_dependent_view()
    with sdpa_kernel([SDPBackend.MATH]), pytest.raises(Exception, match="Cannot view a tensor"):
        ep.run_decompositions({})
    assert align_sdpa_layouts(torch, ep) == 1
    assert align_sdpa_layouts(torch, ep) == 0  # the SDPA's users now read the realigned copy
    with sdpa_kernel([SDPBackend.MATH]):
        ep2 = ep.run_decompositions({})
    torch.testing.assert_close(ep2.module()(x), model(x))
    torch.testing.assert_close(ep.module()(x), model(x))


def test_a_refusal_for_the_proxy_executor_names_the_ops_without_a_c_shim():
    """An op with no C shim (here a custom op) goes through aoti_torch_proxy_executor_call_function, which no aotirt
    build exports: the refusal says which op it is (the zoo's hf_mixtral was refused without naming it)."""
    lib = torch.library.Library("aotirt_test_proxy", "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice", lambda x: torch.empty_like(x), "Meta")

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.ops.aotirt_test_proxy.twice(x) + 1

    ep = torch.export.export(M(), (torch.randn(4),))
    with pytest.raises(Exception) as info:
        with lowering.collect_shim_calls("linux_cuda"):
            torch._inductor.aoti_compile_and_package(ep, inductor_configs={"aot_inductor.link_libtorch": False})
    refusal = lowering.shim_error_in(info.value)
    assert refusal is not None, info.value
    assert "aoti_torch_proxy_executor_call_function" in refusal.shims, refusal.shims
    assert "this model's: aotirt_test_proxy::twice" in str(refusal), str(refusal)
