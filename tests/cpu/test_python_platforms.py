"""aotirt.platforms: per-platform shim sets from the manifest, the refusals, small-GPU detection, the shim scan."""
import dataclasses
import os
import re
import sys
import types

import pytest

import aotirt
from aotirt import platforms

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "manifest"))
import manifest as manifest_tool  # noqa: E402  (the build's own reader: the two must agree)

GEMM_SHIMS = {"aoti_torch_cuda_mm_out", "aoti_torch_cuda_addmm_out", "aoti_torch_cuda_bmm_out",
              "aoti_torch_cuda_baddbmm_out", "aoti_torch_cuda__int_mm_out"}
# Typed here on purpose (not read from platforms.SDPA_SHIMS): the names Inductor's SDPA fallbacks call.
SDPA_SHIMS = {"aoti_torch_cuda__scaled_dot_product_flash_attention",
              "aoti_torch_cuda__scaled_dot_product_efficient_attention",
              "aoti_torch_cuda__scaled_dot_product_cudnn_attention"}
# Typed here on purpose too: the name Inductor's ATen convolution fallback calls.
CONV_SHIM = "aoti_torch_cuda_convolution"


@pytest.fixture(scope="module")
def man():
    return platforms.load_manifest()


@pytest.mark.parametrize("key", platforms.PLATFORM_KEYS)
def test_fallback_lists_per_platform_come_from_the_manifest(man, key):
    entries = manifest_tool.load(platforms.manifest_path())
    # what lowering may call: what the build exports for the platform, less the shims marked unverified
    assert sorted(platforms.supported_shims(key, man)) == \
        sorted(set(manifest_tool.names_for(entries, key)) - platforms.unverified_shims(man))
    assert sorted(man.names(key)) == manifest_tool.names_for(entries, key)


def test_gemm_shims_are_linux_cuda_only(man):
    assert GEMM_SHIMS <= platforms.supported_shims("linux_cuda", man)
    for key in ("windows_cuda", "rocm"):
        assert not GEMM_SHIMS & platforms.supported_shims(key, man)
    assert CONV_SHIM in platforms.supported_shims("linux_cuda", man)  # the cuDNN convolution: linux_cuda only
    for key in ("windows_cuda", "rocm"):
        assert CONV_SHIM not in platforms.supported_shims(key, man)
        assert platforms.conv_shims_missing(key, man) == [CONV_SHIM]
    assert platforms.conv_shims_missing("linux_cuda", man) == []
    assert "aoti_torch_empty_strided" in platforms.supported_shims("rocm", man)


def test_the_wheel_and_the_bazel_tool_share_one_parser():
    """platforms.parse_manifest and tools/manifest/manifest.py both parse with python/aotirt/manifest.py."""
    from aotirt import manifest as shared
    assert os.path.samefile(manifest_tool.parse.__code__.co_filename, shared.__file__)
    assert manifest_tool.PLATFORMS == shared.PLATFORMS == platforms.PLATFORM_KEYS


def _with_gemms_on(tmp_path, monkeypatch, keys):
    """A copy of the real manifest whose GEMM shims are exported by `keys` instead, made the one aotirt reads."""
    lines = []
    for raw in open(platforms.manifest_path()).read().splitlines():
        parts = raw.split("\t")
        if len(parts) >= 2 and parts[0] in GEMM_SHIMS:
            parts[1] = ",".join(keys)
        lines.append("\t".join(parts))
    p = tmp_path / "m.tsv"
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(platforms.MANIFEST_ENV, str(p))
    return platforms.load_manifest()


def test_gemm_refusals_are_derived_from_the_manifest(tmp_path, monkeypatch):
    """No platform is typed as 'without GEMMs': give Windows the GEMM shims in the manifest and ATEN, max_autotune
    OFF and AUTO are accepted there; take them from Linux and they are refused there."""
    from aotirt import auto
    man = _with_gemms_on(tmp_path, monkeypatch, ["linux_cuda", "windows_cuda"])
    assert platforms.gemm_shims_missing("windows_cuda") == []
    opts = aotirt.CompileOptions(platform="windows", max_autotune=False, max_autotune_gemm_backends="ATEN")
    assert platforms.check_options(opts, "cuda") == "windows_cuda"
    auto.check_supported("windows", "cuda", host_platform="linux")
    assert "windows_cuda  " in platforms.support_table(man) and "TRITON, ATEN,TRITON, ATEN" in \
        platforms.support_table(man).splitlines()[2]
    _with_gemms_on(tmp_path, monkeypatch, ["rocm"])
    assert platforms.gemm_shims_missing("linux_cuda") == sorted(GEMM_SHIMS)
    with pytest.raises(aotirt.UnsupportedPlatformError, match="cannot lower for linux_cuda: .*Linux CUDA build"):
        aotirt.CompileOptions(target="cuda", max_autotune_gemm_backends="ATEN")
    with pytest.raises(aotirt.UnsupportedPlatformError, match="not available for platform='linux'"):
        auto.check_supported("linux", "cuda", host_platform="linux")
    auto.check_supported("linux", "rocm", host_platform="linux")  # the manifest now gives ROCm the GEMMs


# ---- attention_backend: the SDPA shims ------------------------------------------------------------------------------
REAL_MANIFEST = platforms.manifest_path()


def _with_sdpa_on(tmp_path, monkeypatch, keys, names=frozenset(SDPA_SHIMS)):
    """A copy of the real manifest whose SDPA shims `names` are exported by `keys` instead (no keys: the lines are
    left out, as in a manifest without those shims), made the one aotirt reads."""
    lines = []
    for raw in open(REAL_MANIFEST).read().splitlines():
        parts = raw.split("\t")
        if len(parts) >= 2 and parts[0] in names:
            if not keys:
                continue
            parts[1] = ",".join(keys)
        lines.append("\t".join(parts))
    p = tmp_path / f"sdpa{len(list(tmp_path.iterdir()))}.tsv"  # a new file each time: the parse is cached by path
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(platforms.MANIFEST_ENV, str(p))
    return platforms.load_manifest()


def _with_conv_on(tmp_path, monkeypatch, keys):
    """A copy of the real manifest whose convolution shim is exported by `keys` (none: the line is left out)."""
    return _with_sdpa_on(tmp_path, monkeypatch, keys, {CONV_SHIM})


def test_sdpa_shims_are_linux_cuda_only(man):
    assert set(platforms.SDPA_SHIMS) == SDPA_SHIMS
    assert SDPA_SHIMS <= platforms.supported_shims("linux_cuda", man)
    for key in ("windows_cuda", "rocm"):
        assert not SDPA_SHIMS & platforms.supported_shims(key, man)
    assert platforms.attention_shims_missing("linux_cuda", man) == []
    assert platforms.attention_shims_missing("rocm", man) == sorted(SDPA_SHIMS)


@pytest.mark.parametrize("platform,target,key", [("windows", "cuda", "windows_cuda"), ("linux", "rocm", "rocm")])
def test_attention_cudnn_is_refused_where_the_manifest_lacks_the_sdpa_shims(man, platform, target, key):
    opts = aotirt.CompileOptions(platform=platform, target=target, shim_library_path="/x")  # MATH: fine
    assert platforms.check_options(opts, target, man) == key
    # CompileOptions(platform=..., attention_backend="CUDNN") would refuse in its constructor (specs tests): the
    # rule itself, on the same fields
    cudnn = types.SimpleNamespace(**{f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)})
    cudnn.attention_backend = "CUDNN"
    with pytest.raises(aotirt.UnsupportedPlatformError) as info:
        platforms.check_options(cudnn, target, man)
    msg = str(info.value)
    assert msg.startswith(f"cannot lower for {key}: attention_backend='CUDNN'")
    assert "use attention_backend='MATH'" in msg and ", ".join(sorted(SDPA_SHIMS)) in msg
    assert "cuBLAS" not in msg  # no GEMM problem here, so no GEMM note


def test_attention_cudnn_is_accepted_on_linux_cuda(man):
    opts = aotirt.CompileOptions(target="cuda", attention_backend="CUDNN")
    assert platforms.check_options(opts, "cuda", man) == "linux_cuda"


def test_attention_refusals_are_derived_from_the_manifest(tmp_path, monkeypatch):
    """No platform is typed as 'without SDPA shims': give Windows and ROCm the SDPA shims in the manifest and CUDNN
    is accepted there; leave them out of the manifest and Linux CUDA refuses CUDNN too; one missing is enough."""
    _with_sdpa_on(tmp_path, monkeypatch, ["linux_cuda", "windows_cuda", "rocm"])
    assert aotirt.CompileOptions(platform="windows", attention_backend="CUDNN").attention_backend == "CUDNN"
    assert aotirt.CompileOptions(target="rocm", attention_backend="CUDNN").platform_key() == "rocm"
    assert "MATH, CUDNN, TRITON" in platforms.support_table().splitlines()[3]  # the rocm row

    _with_sdpa_on(tmp_path, monkeypatch, [])
    assert platforms.attention_shims_missing("linux_cuda") == sorted(SDPA_SHIMS)
    with pytest.raises(aotirt.UnsupportedPlatformError,
                       match=r"cannot lower for linux_cuda: attention_backend='CUDNN' .*Linux CUDA build lacks: use "
                             r"attention_backend='MATH'.* or 'TRITON'"):
        aotirt.CompileOptions(target="cuda", attention_backend="CUDNN")
    aotirt.CompileOptions(target="cuda", attention_backend="MATH")  # MATH needs none of them

    _with_sdpa_on(tmp_path, monkeypatch, ["rocm"], {"aoti_torch_cuda__scaled_dot_product_cudnn_attention"})
    assert platforms.attention_shims_missing("linux_cuda") == ["aoti_torch_cuda__scaled_dot_product_cudnn_attention"]
    with pytest.raises(aotirt.UnsupportedPlatformError,
                       match=r"\(aoti_torch_cuda__scaled_dot_product_cudnn_attention are not in its set"):
        aotirt.CompileOptions(target="cuda", attention_backend="CUDNN")


def test_support_table_lists_the_attention_and_conv_backends(man):
    rows = [re.split(r"\s{2,}", r.strip()) for r in platforms.support_table(man).splitlines()[:4]]
    assert rows[0][4:] == ["attention backends", "conv backends", "defaults (GEMM / conv / attention)"]
    by_key = {r[0]: r[4:] for r in rows[1:]}
    assert by_key["linux_cuda"] == ["MATH, CUDNN, TRITON, CUDNN,TRITON", "TRITON, ATEN,TRITON, ATEN",
                                    "ATEN / ATEN / CUDNN,TRITON"]
    assert by_key["windows_cuda"] == ["MATH, TRITON", "TRITON", "TRITON / TRITON / TRITON"]
    assert by_key["rocm"] == ["MATH, TRITON", "TRITON", "TRITON / TRITON / MATH"]


@pytest.mark.parametrize("key", ["windows_cuda", "rocm"])
def test_missing_sdpa_shims_suggest_attention_math(man, key):
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        platforms.check_shims({"aoti_torch_cuda__scaled_dot_product_flash_attention", "aoti_torch_empty_strided"},
                              key, man)
    assert info.value.shims == ["aoti_torch_cuda__scaled_dot_product_flash_attention"]
    assert f"exist only for linux_cuda: for {key} lower with attention_backend='MATH'" in str(info.value)
    with pytest.raises(aotirt.UnsupportedShimError, match="max_autotune_gemm_backends='TRITON' and "
                                                          "attention_backend='MATH'"):
        platforms.check_shims({"aoti_torch_cuda__scaled_dot_product_flash_attention", "aoti_torch_cuda_mm_out"},
                              key, man)


def test_sort_shims_run_on_cuda_and_are_refused_on_rocm_without_a_spec_to_suggest(man):
    called = {"aoti_torch_cuda_topk", "aoti_torch_cuda_sort_stable", "aoti_torch_empty_strided"}
    for key in ("linux_cuda", "windows_cuda"):
        platforms.check_shims(called, key, man)
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        platforms.check_shims(called | {"aoti_torch_cuda_mm_out"}, "rocm", man)
    assert info.value.shims == ["aoti_torch_cuda_mm_out", "aoti_torch_cuda_sort_stable", "aoti_torch_cuda_topk"]
    msg = str(info.value)
    assert ("aoti_torch_cuda_sort_stable, aoti_torch_cuda_topk exist only for linux_cuda, windows_cuda (sort/top-k on "
            "CUB;" in msg and "run this model on linux_cuda or windows_cuda" in msg), msg
    # the GEMM still gets its spec, and the sort shims are not among what that spec would fix
    assert "aoti_torch_cuda_mm_out exist only for linux_cuda: for rocm lower with max_autotune=ON" in msg, msg
    # the CUDA-only families (Linux and Windows), and cuFFT's (Linux), are exactly the ones no compile spec can avoid
    assert set().union(*platforms.NO_SPEC_FAMILIES) == \
        {n for n, p in man.platforms_of.items() if p == {"linux_cuda", "windows_cuda"}} | \
        {"aoti_torch_cuda__fft_r2c", "aoti_torch_cuda__fft_c2c"}


@pytest.mark.parametrize("shim,built_on,avoid", [
    ("aoti_torch_cuda__weight_int4pack_mm", "int4 GEMM over torch's CUDA packed layout", "aten._weight_int4pack_mm"),
    ("aoti_torch_cuda__embedding_bag", "embedding bags, a CUDA kernel", "nn.EmbeddingBag / F.embedding_bag"),
    ("aoti_torch_cuda_histc", "histograms, a CUDA kernel", "torch.histc (e.g. transformers' MoE expert counts)"),
])
def test_cuda_only_kernels_are_refused_on_rocm_saying_no_spec_helps(man, shim, built_on, avoid):
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        platforms.check_shims({shim, "aoti_torch_cuda_sort"}, "rocm", man)
    msg = str(info.value)
    assert info.value.shims == sorted([shim, "aoti_torch_cuda_sort"])
    assert f"{shim} exists only for linux_cuda, windows_cuda ({built_on}; Inductor has no Triton lowering for it" in msg
    assert f"or change it to avoid {avoid}" in msg and "sort/top-k on CUB" in msg
    assert "max_autotune_gemm_backends" not in msg, msg  # no spec is suggested for these


def test_manifest_path_override_and_parse_errors(tmp_path, monkeypatch):
    p = tmp_path / "m.tsv"
    p.write_text("# c\naoti_torch_a\tlinux_cuda,rocm\naoti_torch_b\twindows_cuda\tnote\n")
    monkeypatch.setenv(platforms.MANIFEST_ENV, str(p))
    assert platforms.supported_shims("rocm") == {"aoti_torch_a"}
    assert platforms.load_manifest().notes["aoti_torch_b"] == "note"
    with pytest.raises(aotirt.UnsupportedPlatformError, match="unknown platform"):
        platforms.parse_manifest("x\tmacos\n")
    with pytest.raises(aotirt.UnsupportedPlatformError, match="listed twice"):
        platforms.parse_manifest("x\trocm\nx\trocm\n")
    with pytest.raises(aotirt.SpecError, match="unknown platform 'linux'"):
        platforms.supported_shims("linux")


@pytest.mark.parametrize("platform,target,key", [("linux", "cuda", "linux_cuda"), ("windows", "cuda", "windows_cuda"),
                                                 ("linux", "rocm", "rocm")])
def test_platform_keys(platform, target, key):
    assert platforms.platform_key(platform, target) == key


# ---- shims the generated code calls ---------------------------------------------------------------------------------
WRAPPER = """
// aoti_torch_cuda_convolution( in a comment is not a call
AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_addmm_out(buf1, b, x, w, 1, 1));
AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out (buf2, buf1, w2));
AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, sizes, strides, dt, dev, 0, &h));
const char* name = "aoti_torch_cuda_sort_stable(";  /* aoti_torch_fake( */
AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_bmm_out(buf3, y, z));
"""


def test_shims_called_finds_calls_not_comments_or_strings():
    assert platforms.shims_called(WRAPPER) == {"aoti_torch_cuda_addmm_out", "aoti_torch_cuda_mm_out",
                                               "aoti_torch_empty_strided", "aoti_torch_cuda_bmm_out"}


def test_linux_accepts_the_gemm_shims(man):
    platforms.check_shims(platforms.shims_called(WRAPPER), "linux_cuda", man)


@pytest.mark.parametrize("key", ["windows_cuda", "rocm"])
def test_every_missing_shim_is_listed_sorted_once(man, key):
    called = platforms.shims_called(WRAPPER) | {"aoti_torch_cuda_convolution"}
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        platforms.check_shims(called, key, man)
    want = ["aoti_torch_cuda_addmm_out", "aoti_torch_cuda_bmm_out", "aoti_torch_cuda_convolution",
            "aoti_torch_cuda_mm_out"]
    assert info.value.shims == want
    msg = str(info.value)
    assert f"4 shim(s) that the {key} shim library does not export: " + ", ".join(want) in msg
    assert (f"{', '.join(want)} exist only for linux_cuda: for {key} lower with max_autotune=ON and "
            f"max_autotune_gemm_backends='TRITON' and max_autotune_conv_backends='TRITON'") in msg
    assert "exist on no aotirt platform" not in msg


def test_linux_accepts_the_convolution_fallback_unless_the_manifest_lacks_it(man, tmp_path, monkeypatch):
    platforms.check_shims({CONV_SHIM, "aoti_torch_empty_strided"}, "linux_cuda", man)
    without = _with_conv_on(tmp_path, monkeypatch, [])
    with pytest.raises(aotirt.UnsupportedShimError, match="linux_cuda shim library does not export: "
                                                          "aoti_torch_cuda_convolution"):
        platforms.check_shims({CONV_SHIM, "aoti_torch_empty_strided"}, "linux_cuda", without)


# ---- model rules ----------------------------------------------------------------------------------------------------
def _graph(*op_names):
    """A tiny fx-like graph whose call_function targets have the given names."""
    class Op:
        def __init__(self, n):
            self._name = f"aten::{n}"

    class Node:
        def __init__(self, op, target):
            self.op, self.target = op, target

    class G:
        nodes = [Node("placeholder", None)] + [Node("call_function", Op(n)) for n in op_names]
    return G()


def test_model_features():
    f = platforms.model_features(_graph("addmm", "relu", "convolution", "bmm"))
    assert f.gemms == ("addmm", "bmm") and f.convolutions == ("convolution",)


def test_model_features_of_a_real_export():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.lin(self.conv(x).mean((2, 3)))

    ep = torch.export.export(M(), (torch.randn(1, 3, 8, 8),))
    f = platforms.model_features(ep.graph)
    assert f.convolutions == ("conv2d",) and f.gemms == ("linear",)


CONV = platforms.ModelFeatures(gemms=(), convolutions=("conv2d",))


def test_convolution_with_aten_only_is_refused_up_front():
    with pytest.raises(aotirt.UnsupportedShimError, match=r"convolutions \(conv2d\).*NoValidChoicesError.*"
                                                          r"use max_autotune_gemm_backends='ATEN,TRITON' or "
                                                          r"max_autotune_conv_backends='ATEN,TRITON'"):
        platforms.check_model(aotirt.CompileOptions(max_autotune_gemm_backends="ATEN",
                                                    max_autotune_conv_backends="TRITON"), CONV, "linux_cuda")


def test_convolution_with_the_default_backends_is_fine_on_linux_cuda():
    """linux_cuda's defaults: ATEN GEMMs and the cuDNN convolution shim."""
    platforms.check_model(aotirt.CompileOptions(), CONV, "linux_cuda")


@pytest.mark.parametrize("conv", ["ATEN", "ATEN,TRITON"])
def test_convolution_with_aten_gemms_and_aten_convs_is_fine_on_linux_cuda(conv):
    """ATEN among the conv backends gives Inductor the cuDNN fallback, whatever the GEMM backends."""
    opts = aotirt.CompileOptions(max_autotune_gemm_backends="ATEN", max_autotune_conv_backends=conv)
    platforms.check_model(opts, CONV, "linux_cuda")


def test_convolution_with_max_autotune_off_is_fine_on_linux_cuda():
    platforms.check_model(aotirt.CompileOptions(max_autotune=False), CONV, "linux_cuda")


@pytest.mark.parametrize("key", ["windows_cuda", "rocm"])
@pytest.mark.parametrize("field,value,how", [("max_autotune", False, "max_autotune=OFF"),
                                             ("max_autotune_conv_backends", "ATEN,TRITON",
                                              "max_autotune_conv_backends='ATEN,TRITON'")])
def test_convolution_fallback_is_refused_naming_the_shim_where_the_manifest_lacks_it(man, key, field, value, how):
    # CompileOptions(platform=...) with these fields refuses in its constructor (check_options): the model rule
    # itself, on the same fields
    opts = types.SimpleNamespace(**{**dataclasses.asdict(aotirt.CompileOptions()), field: value})
    with pytest.raises(aotirt.UnsupportedShimError, match=f"{re.escape(how)} Inductor .* aoti_torch_cuda_convolution, "
                                                          f"which the {key} shim library does not have.*use "
                                                          f"max_autotune=ON with max_autotune_conv_backends='TRITON'"
                       ) as i:
        platforms.check_model(opts, CONV, key, man)
    assert i.value.shims == [CONV_SHIM]


def test_convolution_fallback_refusal_is_derived_from_the_manifest(tmp_path, monkeypatch):
    """No platform is typed as 'without the convolution shim': take it from linux_cuda in the manifest and
    max_autotune OFF / ATEN conv backends are refused there; give it to ROCm and they are accepted there."""
    without = _with_conv_on(tmp_path, monkeypatch, [])
    assert platforms.conv_shims_missing("linux_cuda") == [CONV_SHIM]
    with pytest.raises(aotirt.UnsupportedShimError, match="aoti_torch_cuda_convolution, which the linux_cuda") as i:
        platforms.check_model(aotirt.CompileOptions(max_autotune=False), CONV, "linux_cuda", without)
    assert i.value.shims == [CONV_SHIM]
    with pytest.raises(aotirt.UnsupportedPlatformError,
                       match=r"cannot lower for linux_cuda: max_autotune_conv_backends='ATEN' .*Linux CUDA build "
                             r"lacks: use max_autotune_conv_backends='TRITON'"):
        aotirt.CompileOptions(target="cuda", max_autotune_conv_backends="ATEN")
    with pytest.raises(aotirt.UnsupportedShimError, match="NoValidChoicesError") as i:
        platforms.check_model(aotirt.CompileOptions(max_autotune_gemm_backends="ATEN", max_autotune_conv_backends="TRITON"),
                              CONV, "linux_cuda")
    assert str(i.value).endswith("use max_autotune_gemm_backends='ATEN,TRITON'")  # no cuDNN hint without the shim
    with_rocm = _with_conv_on(tmp_path, monkeypatch, ["linux_cuda", "rocm"])
    assert platforms.conv_shims_missing("rocm") == []
    opts = aotirt.CompileOptions(target="rocm", max_autotune_conv_backends="aten")
    assert platforms.check_options(opts, "rocm") == "rocm"
    platforms.check_model(opts, CONV, "rocm", with_rocm)
    assert re.split(r"\s{2,}", platforms.support_table(with_rocm).splitlines()[3].strip())[5] == \
        "TRITON, ATEN,TRITON, ATEN"  # the rocm row's conv backends


@pytest.mark.parametrize("backends", ["TRITON", "ATEN,TRITON"])
def test_convolution_with_triton_gemm_backends_is_fine(backends):
    platforms.check_model(aotirt.CompileOptions(max_autotune_gemm_backends=backends), CONV, "linux_cuda")
    platforms.check_model(aotirt.CompileOptions(max_autotune=False), platforms.ModelFeatures(("mm",)), "linux_cuda")


# ---- small GPUs -----------------------------------------------------------------------------------------------------
H200 = platforms.GpuProperties("NVIDIA H200", 132, 9, 0)
ORIN = platforms.GpuProperties("Orin", 16, 8, 7)
RTX3060 = platforms.GpuProperties("NVIDIA GeForce RTX 3060", 28, 8, 6)
EDGE = platforms.GpuProperties("edge", 67, 8, 9)
GEMM = platforms.ModelFeatures(gemms=("addmm",))


@pytest.mark.parametrize("gpu,big", [(H200, True), (ORIN, False), (RTX3060, False), (EDGE, False),
                                     (platforms.GpuProperties("x", 68), True)])
def test_small_gpu_detection_mirrors_is_big_gpu(gpu, big):
    assert platforms.triton_templates_available(gpu, "cuda") is big


@pytest.mark.parametrize("gpu", [ORIN, RTX3060, EDGE])
def test_small_gpu_with_triton_only_is_refused_suggesting_aten_triton(gpu):
    with pytest.raises(aotirt.SmallGpuError) as info:
        platforms.check_gpu(aotirt.CompileOptions(max_autotune_gemm_backends="TRITON"), gpu, "cuda", GEMM)
    msg = str(info.value)
    assert f"has {gpu.sm_count} SMs, fewer than the 68" in msg and "max_autotune_gemm_backends='ATEN,TRITON'" in msg


@pytest.mark.parametrize("opts", [aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON"),
                                  aotirt.CompileOptions(max_autotune_gemm_backends="ATEN"),
                                  aotirt.CompileOptions(max_autotune=False)])
def test_small_gpu_with_aten_or_without_autotune_is_fine(opts):
    platforms.check_gpu(opts, ORIN, "cuda", GEMM)


def test_small_gpu_with_the_default_backends_is_fine_on_linux_cuda():
    platforms.check_gpu(aotirt.CompileOptions(), ORIN, "cuda", platforms.ModelFeatures(("addmm",), ("conv2d",)))


def test_small_gpu_without_gemms_is_fine_and_big_gpu_always():
    platforms.check_gpu(aotirt.CompileOptions(), ORIN, "cuda", platforms.ModelFeatures())
    platforms.check_gpu(aotirt.CompileOptions(), H200, "cuda", GEMM)


@pytest.mark.parametrize("gemm", ["TRITON", "ATEN,TRITON"])
def test_small_gpu_with_triton_convolutions_is_refused_suggesting_aten_convs(gemm):
    with pytest.raises(aotirt.SmallGpuError, match=r"with max_autotune_conv_backends='TRITON' the convolutions in "
                                                   r"this model \(conv2d\) have no kernel choice: use "
                                                   r"max_autotune_conv_backends='ATEN,TRITON' .*or max_autotune=OFF"):
        platforms.check_gpu(aotirt.CompileOptions(max_autotune_gemm_backends=gemm, max_autotune_conv_backends="TRITON"),
                            ORIN, "cuda", CONV)


@pytest.mark.parametrize("opts", [
    aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", max_autotune_conv_backends="ATEN,TRITON"),
    aotirt.CompileOptions(max_autotune_gemm_backends="ATEN", max_autotune_conv_backends="ATEN"),
    aotirt.CompileOptions(max_autotune=False)])
def test_small_gpu_with_convolutions_and_the_cudnn_fallback_is_fine_on_linux_cuda(opts):
    platforms.check_gpu(opts, ORIN, "cuda", CONV)
    platforms.check_gpu(opts, ORIN, "cuda", platforms.ModelFeatures(gemms=("addmm",), convolutions=("conv2d",)))


def test_small_gpu_with_aten_convs_but_triton_gemms_is_refused_for_the_1x1_convolution_gemms():
    opts = aotirt.CompileOptions(max_autotune_conv_backends="ATEN", max_autotune_gemm_backends="TRITON")
    with pytest.raises(aotirt.SmallGpuError, match="the GEMMs Inductor makes of this model's 1x1 convolutions have "
                                                   "no kernel choice.*max_autotune_gemm_backends='ATEN,TRITON'"):
        platforms.check_gpu(opts, ORIN, "cuda", CONV)


def test_small_gpu_with_convolutions_is_refused_whatever_the_backends_where_the_manifest_lacks_the_shim(
        tmp_path, monkeypatch):
    without = _with_conv_on(tmp_path, monkeypatch, [])
    for opts in (aotirt.CompileOptions(max_autotune=False),
                 types.SimpleNamespace(**{**dataclasses.asdict(aotirt.CompileOptions()),
                                          "max_autotune_conv_backends": "ATEN,TRITON"})):
        with pytest.raises(aotirt.SmallGpuError, match="convolutions.*aoti_torch_cuda_convolution is not in the "
                                                       "linux_cuda shim library.*at least 68 SMs"):
            platforms.check_gpu(opts, ORIN, "cuda", CONV, without)
    mi100 = platforms.GpuProperties("MI100", 120, 8, 0)  # ROCm: the real manifest has no conv shim there
    with pytest.raises(aotirt.SmallGpuError, match="aoti_torch_cuda_convolution is not in the rocm shim library.*"
                                                   "MI200/MI300-class GPU"):
        platforms.check_gpu(aotirt.CompileOptions(target="rocm"), mi100, "rocm", CONV)


def test_rocm_small_arch_is_refused_without_suggesting_aten():
    mi100 = platforms.GpuProperties("MI100", 120, 9 - 1, 0)
    with pytest.raises(aotirt.SmallGpuError, match="ROCm builds have no ATen/cuBLAS GEMM shims") as info:
        platforms.check_gpu(aotirt.CompileOptions(target="rocm"), mi100, "rocm", GEMM)
    assert "ATEN,TRITON" not in str(info.value)
    platforms.check_gpu(aotirt.CompileOptions(target="rocm"), platforms.GpuProperties("MI300X", 304, 9, 4), "rocm",
                        GEMM)


def test_support_table_lists_each_platform_and_the_linux_only_shims(man):
    table = platforms.support_table(man)
    for key in platforms.PLATFORM_KEYS:
        assert key in table
    assert "aoti_torch_cuda_mm_out: linux_cuda (cuBLASLt)" in table
    assert "no (refused)" in table


def test_unverified_shims_are_exported_but_never_allowed_at_lowering(man):
    text = ("aoti_torch_empty_strided\tlinux_cuda,windows_cuda,rocm\n"
            "aoti_torch_cuda_new_op\tlinux_cuda\tUnverified: its GPU tests have not run yet\n"
            "aoti_torch_cuda_other\tlinux_cuda\tunverifiable data layouts (not the word: allowed)\n"
            "aoti_torch_cuda_fine\tlinux_cuda\tverified on the H200\n")
    m = platforms.parse_manifest(text)
    assert platforms.unverified_shims(m) == {"aoti_torch_cuda_new_op"}
    assert "aoti_torch_cuda_new_op" in m.names("linux_cuda")  # the library exports it (version script, .def)
    assert platforms.supported_shims("linux_cuda", m) == {"aoti_torch_empty_strided", "aoti_torch_cuda_fine",
                                                          "aoti_torch_cuda_other"}
    platforms.check_shims({"aoti_torch_cuda_fine", "aoti_torch_empty_strided"}, "linux_cuda", m)
    with pytest.raises(aotirt.UnsupportedShimError) as info:
        platforms.check_shims({"aoti_torch_cuda_new_op", "aoti_torch_empty_strided"}, "linux_cuda", m)
    assert info.value.shims == ["aoti_torch_cuda_new_op"]
    msg = str(info.value)
    assert ("aoti_torch_cuda_new_op is in the shim library but not yet allowed: aoti_torch_cuda_new_op: Unverified: "
            "its GPU tests have not run yet (shims/shim_manifest.tsv)") in msg, msg
    assert "exist only for" not in msg and "exist on no aotirt platform" not in msg


def test_the_int4_shim_is_linux_cuda_and_allowed_since_its_gpu_tests_passed(man):
    name = "aoti_torch_cuda__weight_int4pack_mm"
    assert man.platforms_of[name] == {"linux_cuda", "windows_cuda"}
    # tests/gpu/test_int4_shims.py passed on the H200 at ff2943f (tests/gpu/LAST_RUN.md): the note is no longer
    # "unverified", so lowering may call the shim on the platforms that export it.
    assert name not in platforms.unverified_shims(man) and name in platforms.supported_shims("linux_cuda", man)
    assert name in platforms.supported_shims("windows_cuda", man) and name not in platforms.supported_shims("rocm", man)


# Shims that passed their GPU files on the H200 (tests/gpu/LAST_RUN.md): embedding bag at bb75b2c
# (test_embedding_bag_shims.py), histc and complex at 3360d2f (test_histc_shims.py, test_complex_shims.py). Their notes
# are no longer "unverified", so lowering may call them where the build exports them (Linux and Windows CUDA), and
# nowhere else.
@pytest.mark.parametrize("names", [
    ("aoti_torch_cuda__embedding_bag", "aoti_torch_cuda__embedding_bag_forward_only"),
    ("aoti_torch_cuda_histc", "aoti_torch_cuda_mul_Tensor", "aoti_torch_cuda_polar", "aoti_torch_cuda_abs"),
], ids=["embedding_bag", "histc_and_complex"])
def test_cuda_shims_verified_on_the_gpu_are_allowed_on_cuda_only(man, names):
    names = set(names)
    for name in names:
        assert man.platforms_of[name] == {"linux_cuda", "windows_cuda"}, name
    assert not names & platforms.unverified_shims(man)
    assert names <= platforms.supported_shims("linux_cuda", man) and names <= platforms.supported_shims("windows_cuda", man)
    assert not names & platforms.supported_shims("rocm", man)
    platforms.check_shims(names, "linux_cuda", man)
    first = sorted(names)[0]
    with pytest.raises(aotirt.UnsupportedShimError, match=first):
        platforms.check_shims({first}, "rocm", man)


def test_the_fft_shims_are_linux_cuda_and_allowed_and_their_views_everywhere(man):
    fft = ("aoti_torch_cuda__fft_r2c", "aoti_torch_cuda__fft_c2c")
    for name in fft + ("aotirt_cufft_add_search_dir",):
        assert man.platforms_of[name] == {"linux_cuda"}, name
    for name in ("aoti_torch_cuda_view_as_real", "aoti_torch_cuda_view_as_complex", "aoti_torch_dtype_complex64",
                 "aoti_torch_dtype_complex128"):
        assert man.platforms_of[name] == set(platforms.PLATFORM_KEYS), name
        assert name in platforms.supported_shims("rocm", man) and name in platforms.supported_shims("linux_cuda", man)
    # tests/gpu/test_fft_shims.py passed on the H200 at 3360d2f (tests/gpu/LAST_RUN.md): the notes are no longer
    # "unverified", so lowering may call the shims on linux_cuda.
    for name in fft:
        assert name not in platforms.unverified_shims(man) and name in platforms.supported_shims("linux_cuda", man)
    platforms.check_shims({"aoti_torch_cuda__fft_r2c", "aoti_torch_cuda_view_as_real"}, "linux_cuda", man)
    for key in ("rocm", "windows_cuda"):
        with pytest.raises(aotirt.UnsupportedShimError) as info:
            platforms.check_shims({"aoti_torch_cuda__fft_r2c", "aoti_torch_cuda_view_as_real"}, key, man)
        msg = str(info.value)
        assert info.value.shims == ["aoti_torch_cuda__fft_r2c"], msg
        assert ("aoti_torch_cuda__fft_r2c exists only for linux_cuda (FFTs on cuFFT (Linux CUDA); Inductor has no "
                "Triton lowering for it") in msg and "run this model on linux_cuda, or change it to avoid torch.fft" \
            in msg, msg


# ---- grouped GEMMs (aten._grouped_mm: transformers' MoE experts) ----------------------------------------------------
MOE = platforms.ModelFeatures(gemms=("linear",), grouped_mm=(("bfloat16", False), ("bfloat16", False)))


def test_grouped_mm_calls_are_found_in_an_exported_graph():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("this torch has no _grouped_mm")

    class Experts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 32, 16).bfloat16())

        def forward(self, x, offs):
            return torch._grouped_mm(x, self.w, offs=offs)

    ep = torch.export.export(Experts(), (torch.randn(24, 32).bfloat16(), torch.tensor([5, 10, 20, 24]).int()))
    assert platforms.model_features(ep.graph).grouped_mm == (("bfloat16", False),)


def test_grouped_mm_lowers_only_where_the_triton_template_can_take_it(man):
    assert platforms.GROUPED_MM_SHIM not in man.platforms_of  # no build has the ATen fallback's shim
    for backends in (None, "ATEN", "TRITON", "ATEN,TRITON"):  # max_autotune ON: the template, whatever the backends
        platforms.check_model(aotirt.CompileOptions(max_autotune_gemm_backends=backends), MOE, "linux_cuda", man)
    cases = [
        (aotirt.CompileOptions(max_autotune=False), "linux_cuda", "with max_autotune=OFF Inductor lowers them to the "
                                                                  "ATen fallback"),
        (aotirt.CompileOptions(), "rocm", "Inductor offers that template on CUDA only"),
    ]
    for opts, key, reason in cases:
        with pytest.raises(aotirt.UnsupportedShimError) as info:
            platforms.check_model(opts, MOE, key, man)
        msg = str(info.value)
        assert "the model has 2 grouped GEMMs (aten._grouped_mm" in msg and reason in msg, msg
        assert info.value.shims == [platforms.GROUPED_MM_SHIM]
    with pytest.raises(aotirt.UnsupportedShimError, match="one with a bias, which Inductor's Triton grouped-GEMM "
                       "template does not take"):
        platforms.check_model(aotirt.CompileOptions(), dataclasses.replace(MOE, grouped_mm=(("bfloat16", True),)),
                              "linux_cuda", man)
    # a manifest with the shim lets everything through
    with_shim = platforms.parse_manifest(f"{platforms.GROUPED_MM_SHIM}\tlinux_cuda,rocm\n")
    platforms.check_model(aotirt.CompileOptions(max_autotune=False), MOE, "rocm", with_shim)


def test_grouped_mm_needs_compute_capability_9_and_a_big_gpu(man):
    platforms.check_gpu(aotirt.CompileOptions(), H200, "cuda", MOE, man)
    a100 = platforms.GpuProperties("NVIDIA A100", 108, 8, 0)
    with pytest.raises(aotirt.SmallGpuError, match="compute capability 8.0; the model's grouped GEMMs"):
        platforms.check_gpu(aotirt.CompileOptions(), a100, "cuda", MOE, man)
    platforms.check_gpu(aotirt.CompileOptions(), a100, "cuda", GEMM, man)  # plain GEMMs are fine there
    small_hopper = platforms.GpuProperties("a small sm90", 60, 9, 0)
    experts_only = platforms.ModelFeatures(grouped_mm=(("bfloat16", False),))  # no other GEMM in the model
    for features in (MOE, experts_only):
        with pytest.raises(aotirt.SmallGpuError, match="fewer than the 68.*grouped GEMMs"):
            platforms.check_gpu(aotirt.CompileOptions(), small_hopper, "cuda", features, man)
    platforms.check_gpu(aotirt.CompileOptions(), small_hopper, "cuda", platforms.ModelFeatures(), man)
