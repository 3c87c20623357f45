"""aotirt.specs: every compile option value, its Inductor options, the ExecuTorch compile-spec parsing."""
import dataclasses

import pytest

import aotirt
from aotirt import specs


def _meta(**over):
    base = {"aotirt_version": aotirt.__version__, "aotirt_float32_matmul_precision": "highest",
            "aotirt_platform": "linux_cuda", "aotirt_max_autotune": "ON", "aotirt_max_autotune_gemm_backends": "ATEN",
            "aotirt_attention_backend": "CUDNN,TRITON",
            "aotirt_coordinate_descent_tuning": "ON"}  # linux_cuda's defaults (platforms.PLATFORM_DEFAULTS)
    base.update(over)
    return base


def test_default_options_map_to_the_runtime_contract():
    assert specs.inductor_options(target="cuda") == {
        "aot_inductor.link_libtorch": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.package": True,
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "binary_blob",
        "max_autotune": True,
        "max_autotune_gemm_backends": "ATEN",
        "max_autotune_conv_backends": "ATEN",
        "coordinate_descent_tuning": True,
        "aot_inductor.metadata": _meta(),
    }


def test_default_is_the_platforms_backends_max_autotune_highest_forward_linux():
    opts = aotirt.CompileOptions()
    assert (opts.max_autotune_gemm_backends, opts.max_autotune_conv_backends, opts.attention_backend,
            opts.max_autotune, opts.float32_matmul_precision, opts.method_name, opts.platform, opts.target) == (
        None, None, None, True, "highest", "forward", "linux", None)
    assert opts.resolved("cuda") == dataclasses.replace(
        opts, max_autotune_gemm_backends="ATEN", max_autotune_conv_backends="ATEN", attention_backend="CUDNN,TRITON")
    assert opts.resolved("rocm") == dataclasses.replace(
        opts, max_autotune_gemm_backends="TRITON", max_autotune_conv_backends="TRITON", attention_backend="MATH")
    win = aotirt.CompileOptions(platform="windows", shim_library_path="/x")
    assert win.resolved() == dataclasses.replace(
        win, max_autotune_gemm_backends="TRITON", max_autotune_conv_backends="TRITON", attention_backend="TRITON")
    # a field given keeps its value; the others still take the platform's defaults
    mixed = aotirt.CompileOptions(max_autotune_gemm_backends="TRITON").resolved("cuda")
    assert (mixed.max_autotune_gemm_backends, mixed.max_autotune_conv_backends, mixed.attention_backend) == (
        "TRITON", "ATEN", "CUDNN,TRITON")


@pytest.mark.parametrize("key", ["linux_cuda", "windows_cuda", "rocm"])
def test_platform_defaults_are_accepted_by_their_platform(key):
    """Every platform's defaults pass its own refusals (a default a platform refuses would fail every lowering)."""
    from aotirt import platforms
    defaults = specs.platform_defaults(key)
    kwargs = {"linux_cuda": {}, "windows_cuda": {"platform": "windows", "shim_library_path": "/x"},
              "rocm": {"target": "rocm"}}[key]
    opts = aotirt.CompileOptions(**kwargs, **defaults)
    assert platforms.check_options(opts, "rocm" if key == "rocm" else "cuda") == key
    assert aotirt.CompileOptions(**kwargs).resolved("rocm" if key == "rocm" else "cuda") == opts
    with pytest.raises(aotirt.SpecError, match="no defaults for platform 'macos_metal'"):
        specs.platform_defaults("macos_metal")


@pytest.mark.parametrize("given,canonical", [
    ("TRITON", "TRITON"), ("triton", "TRITON"), (" Triton ", "TRITON"),
    ("ATEN,TRITON", "ATEN,TRITON"), ("triton, aten", "ATEN,TRITON"), ("TRITON,ATEN", "ATEN,TRITON"),
    (" aten, triton,ATEN", "ATEN,TRITON"), ("aten", "ATEN"), ("ATEN,aten", "ATEN"),
])
@pytest.mark.parametrize("max_autotune", [True, False])
@pytest.mark.parametrize("precision", ["highest", "high"])
def test_every_value_maps_to_inductor_options(given, canonical, max_autotune, precision):
    opts = aotirt.CompileOptions(max_autotune=max_autotune, max_autotune_gemm_backends=given,
                                 float32_matmul_precision=precision)
    assert opts.max_autotune_gemm_backends == canonical
    out = aotirt.inductor_options(opts, target="cuda")
    assert out["max_autotune"] is max_autotune
    assert out["max_autotune_gemm_backends"] == canonical
    assert out["max_autotune_conv_backends"] == "ATEN"  # linux_cuda's default; OFF: the ATen fallback anyway
    assert out["coordinate_descent_tuning"] is max_autotune  # None: as max_autotune (torch.compile's mode)
    assert out["aot_inductor.metadata"] == _meta(aotirt_float32_matmul_precision=precision,
                                                 aotirt_max_autotune="ON" if max_autotune else "OFF",
                                                 aotirt_max_autotune_gemm_backends=canonical,
                                                 aotirt_coordinate_descent_tuning="ON" if max_autotune else "OFF")
    assert "aot_inductor.cross_target_platform" not in out


@pytest.mark.parametrize("max_autotune", [True, False])
@pytest.mark.parametrize("cdt", [True, False])
def test_coordinate_descent_tuning_is_its_own_choice_and_recorded(max_autotune, cdt):
    out = aotirt.inductor_options(aotirt.CompileOptions(max_autotune=max_autotune, coordinate_descent_tuning=cdt),
                                  target="cuda")
    assert out["coordinate_descent_tuning"] is cdt and out["max_autotune"] is max_autotune
    assert out["aot_inductor.metadata"]["aotirt_coordinate_descent_tuning"] == ("ON" if cdt else "OFF")


def test_coordinate_descent_tuning_in_inductor_configs_is_validated_and_overrides():
    out = aotirt.inductor_options(aotirt.CompileOptions(), {"coordinate_descent_tuning": False}, target="cuda")
    assert out["coordinate_descent_tuning"] is False
    assert out["aot_inductor.metadata"]["aotirt_coordinate_descent_tuning"] == "OFF"
    with pytest.raises(aotirt.SpecError, match="coordinate_descent_tuning must be True, False or None"):
        aotirt.inductor_options(aotirt.CompileOptions(), {"coordinate_descent_tuning": "yes"}, target="cuda")
    with pytest.raises(aotirt.SpecError, match="coordinate_descent_tuning must be True, False or None"):
        aotirt.CompileOptions(coordinate_descent_tuning=1)


def test_coordinate_descent_tuning_compile_spec_round_trips():
    opts, _ = specs.options_from_compile_specs([Spec("coordinate_descent_tuning", b"off")])
    assert opts.coordinate_descent_tuning is False and opts.cdt() is False
    assert specs.options_to_compile_spec_values(opts) == [("coordinate_descent_tuning", b"OFF")]
    assert specs.options_to_compile_spec_values(aotirt.CompileOptions()) == []
    with pytest.raises(aotirt.SpecError, match=r"coordinate_descent_tuning='maybe' is not valid; valid: \['ON', 'OFF'\]"):
        specs.options_from_compile_specs([Spec("coordinate_descent_tuning", b"maybe")])


def test_windows_maps_to_cross_compilation_against_the_import_library():
    opts = aotirt.CompileOptions(platform="Windows", shim_library_path="/x/lib")
    assert opts.platform == "windows"
    out = aotirt.inductor_options(opts)
    assert out["aot_inductor.cross_target_platform"] == "windows"
    assert out["aot_inductor.aoti_shim_library"] == "aoti_cuda_shims"
    assert out["aot_inductor.aoti_shim_library_path"] == "/x/lib"
    assert out["aot_inductor.precompile_headers"] is False
    assert out["aot_inductor.metadata"]["aotirt_platform"] == "windows_cuda"


def test_rocm_target_maps_to_the_rocm_platform():
    out = aotirt.inductor_options(aotirt.CompileOptions(target="rocm"))
    assert out["aot_inductor.metadata"]["aotirt_platform"] == "rocm"
    assert out["max_autotune_gemm_backends"] == "TRITON"


def test_target_is_detected_from_torch_version_hip(monkeypatch):
    import torch
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    assert aotirt.CompileOptions().resolved_target() == "rocm"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert aotirt.CompileOptions().resolved_target() == "cuda"
    assert aotirt.CompileOptions(target="rocm").resolved_target() == "rocm"  # explicit wins


@pytest.mark.parametrize("kwargs,match", [
    ({"max_autotune_gemm_backends": "CUTLASS"},
     r"unsupported value\(s\) \['CUTLASS'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune_gemm_backends": "TRITON,CK"}, r"\['CK'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune_gemm_backends": "TRITON;ATEN"}, r"\['TRITON;ATEN'\]"),
    ({"max_autotune_gemm_backends": " , "}, "empty value"),
    ({"max_autotune_gemm_backends": ["TRITON"]}, "must be a string, one of"),
    ({"max_autotune_conv_backends": "CUTLASS"}, r"\['CUTLASS'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune_conv_backends": "AUTO,TRITON"}, r"\['AUTO'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune_conv_backends": "TRITON,CK"}, r"\['CK'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune_conv_backends": " , "}, "max_autotune_conv_backends=' , ' has an empty value"),
    ({"max_autotune_conv_backends": 3}, "max_autotune_conv_backends must be a string, one of"),
    ({"float32_matmul_precision": "medium"}, r"'medium' is not valid; valid: \['highest', 'high'\]"),
    ({"max_autotune": "yes"}, "max_autotune must be True or False"),
    ({"max_autotune": 1}, "max_autotune must be True or False"),
    ({"platform": "macos"}, r"platform='macos' is not valid; valid: \['linux', 'windows'\]"),
    ({"target": "metal"}, r"target='metal' is not valid; valid: \['cuda', 'rocm'\]"),
    ({"method_name": "my method"}, "must be a Python identifier"),
    ({"attention_backend": "FLASH"}, r"attention_backend='FLASH' is not valid; valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ({"attention_backend": "MATH,CUDNN"}, r"valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ({"attention_backend": " "}, r"valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ({"attention_backend": 3}, r"attention_backend must be a string, one of \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\], got int"),
    ({"attention_backend": "CUDNN,TRITON,MATH"}, r"valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
])
def test_invalid_values_raise_spec_error_listing_valid_values(kwargs, match):
    with pytest.raises(aotirt.SpecError, match=match) as info:
        aotirt.CompileOptions(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, aotirt.Error)


@pytest.mark.parametrize("kwargs,match", [
    ({"platform": "windows", "max_autotune_gemm_backends": "ATEN"}, r"windows_cuda: max_autotune_gemm_backends='ATEN'"),
    ({"platform": "windows", "max_autotune_gemm_backends": "triton,aten"}, r"'ATEN,TRITON'.*use max_autotune_gemm_backends='TRITON'"),
    ({"target": "rocm", "max_autotune_gemm_backends": "ATEN"}, r"rocm: .*no cuBLAS"),
    ({"target": "rocm", "max_autotune_gemm_backends": "ATEN,TRITON"}, r"rocm: .*'ATEN,TRITON'"),
    ({"platform": "windows", "max_autotune": False}, r"max_autotune=OFF.*Windows build.*use max_autotune=ON"),
    ({"target": "rocm", "max_autotune": False}, r"max_autotune=OFF.*ROCm"),
    ({"platform": "windows", "target": "rocm"}, r"ROCm build exists for Linux only"),
    ({"platform": "windows", "attention_backend": "CUDNN"},
     r"cannot lower for windows_cuda: attention_backend='CUDNN' .*Windows build lacks: use attention_backend='MATH'"),
    ({"target": "rocm", "attention_backend": " cudnn "},
     r"cannot lower for rocm: attention_backend='CUDNN' .*ROCm build lacks: use attention_backend='MATH'"),
])
def test_platform_refusals_say_what_to_change(kwargs, match):
    with pytest.raises(aotirt.UnsupportedPlatformError, match=match) as info:
        aotirt.CompileOptions(**kwargs)
    assert isinstance(info.value, aotirt.LoweringError)


# ---- max_autotune_conv_backends (TRITON conv templates / the cuDNN convolution shim) ----------------------------------
@pytest.mark.parametrize("given,canonical", [
    ("TRITON", "TRITON"), (" triton", "TRITON"), ("ATEN,TRITON", "ATEN,TRITON"), ("triton, aten", "ATEN,TRITON"),
    ("TRITON,ATEN,triton", "ATEN,TRITON"), ("aten", "ATEN"), (" Aten ", "ATEN"),
])
def test_conv_backend_values_are_normalized_and_passed_to_inductor(given, canonical):
    opts = aotirt.CompileOptions(max_autotune_conv_backends=given)
    assert opts.max_autotune_conv_backends == canonical
    out = aotirt.inductor_options(opts, target="cuda")
    assert out["max_autotune_conv_backends"] == canonical
    assert out["max_autotune_gemm_backends"] == "ATEN" and out["aot_inductor.metadata"] == _meta()


def test_conv_backends_default_to_the_platforms():
    assert aotirt.CompileOptions().max_autotune_conv_backends is None
    assert aotirt.inductor_options(target="cuda")["max_autotune_conv_backends"] == "ATEN"
    assert aotirt.inductor_options(aotirt.CompileOptions(target="rocm"))["max_autotune_conv_backends"] == "TRITON"
    assert specs.PLATFORM_DEFAULTS["windows_cuda"]["max_autotune_conv_backends"] == "TRITON"


@pytest.mark.parametrize("kwargs,key", [({"platform": "windows"}, "windows_cuda"), ({"target": "rocm"}, "rocm")])
@pytest.mark.parametrize("conv", ["ATEN", "aten,triton"])
def test_aten_conv_backends_are_refused_without_the_conv_shim_suggesting_triton(kwargs, key, conv):
    norm = "ATEN" if conv == "ATEN" else "ATEN,TRITON"
    with pytest.raises(aotirt.UnsupportedPlatformError,
                       match=rf"cannot lower for {key}: max_autotune_conv_backends='{norm}' lets Inductor call the "
                             rf"ATen/cuDNN convolution shim aoti_torch_cuda_convolution, which the .* build lacks: "
                             rf"use max_autotune_conv_backends='TRITON' \(aoti_torch_cuda_convolution is not in its "
                             rf"set in shims/shim_manifest.tsv\)"):
        aotirt.CompileOptions(max_autotune_conv_backends=conv, **kwargs)
    opts = aotirt.CompileOptions(max_autotune_conv_backends="TRITON", **kwargs)  # TRITON: fine there
    assert aotirt.inductor_options(opts)["max_autotune_conv_backends"] == "TRITON"


@pytest.mark.parametrize("conv", ["ATEN", "ATEN,TRITON"])
def test_aten_conv_backends_are_accepted_on_linux_cuda(conv):
    opts = aotirt.CompileOptions(target="cuda", max_autotune_conv_backends=conv)
    assert opts.platform_key() == "linux_cuda"
    assert aotirt.inductor_options(opts)["max_autotune_conv_backends"] == conv


def test_conv_backends_in_inductor_configs_are_validated_override_and_obey_platform_rules():
    out = aotirt.inductor_options(aotirt.CompileOptions(), {"max_autotune_conv_backends": "triton,aten"},
                                  target="cuda")
    assert out["max_autotune_conv_backends"] == "ATEN,TRITON"
    with pytest.raises(aotirt.SpecError, match=r"valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"):
        aotirt.inductor_options(aotirt.CompileOptions(), {"max_autotune_conv_backends": "CUTLASS"}, target="cuda")
    with pytest.raises(aotirt.UnsupportedPlatformError, match="use max_autotune_conv_backends='TRITON'"):
        aotirt.inductor_options(aotirt.CompileOptions(target="rocm"), {"max_autotune_conv_backends": "ATEN"})


def test_gemm_and_conv_platform_problems_are_listed_at_once():
    with pytest.raises(aotirt.UnsupportedPlatformError) as info:
        aotirt.CompileOptions(platform="windows", max_autotune_gemm_backends="ATEN", max_autotune_conv_backends="ATEN")
    msg = str(info.value)
    assert "use max_autotune_gemm_backends='TRITON'" in msg and "use max_autotune_conv_backends='TRITON'" in msg


def test_both_platform_problems_are_listed_at_once():
    with pytest.raises(aotirt.UnsupportedPlatformError) as info:
        aotirt.CompileOptions(platform="windows", max_autotune=False, max_autotune_gemm_backends="ATEN")
    assert "max_autotune_gemm_backends='ATEN'" in str(info.value) and "max_autotune=OFF" in str(info.value)


# ---- attention_backend (how SDPA is lowered) --------------------------------------------------------------------------
@pytest.mark.parametrize("given,canonical", [("MATH", "MATH"), ("math", "MATH"), (" Math ", "MATH"),
                                             ("CUDNN", "CUDNN"), ("cudnn", "CUDNN"), (" CuDNN", "CUDNN")])
def test_attention_backend_values_are_accepted_on_linux_cuda_and_recorded(given, canonical):
    opts = aotirt.CompileOptions(target="cuda", attention_backend=given)
    assert opts.attention_backend == canonical
    out = aotirt.inductor_options(opts)
    assert out["aot_inductor.metadata"] == _meta(aotirt_attention_backend=canonical)
    assert "attention_backend" not in out  # no Inductor option: it picks the lowering's sdpa_kernel context
    assert specs.validate(opts) is None


def test_attention_backend_defaults_to_the_platforms():
    assert aotirt.CompileOptions().attention_backend is None
    meta = lambda o: aotirt.inductor_options(o, target=o.target or "cuda")["aot_inductor.metadata"]  # noqa: E731
    assert meta(aotirt.CompileOptions())["aotirt_attention_backend"] == "CUDNN,TRITON"
    assert meta(aotirt.CompileOptions(target="rocm"))["aotirt_attention_backend"] == "MATH"
    assert meta(aotirt.CompileOptions(platform="windows", shim_library_path="/x"))["aotirt_attention_backend"] == \
        "TRITON"
    assert specs.VALID_ATTENTION_BACKENDS == ("MATH", "CUDNN", "TRITON", "CUDNN,TRITON")
    assert aotirt.CompileOptions(attention_backend="triton, Cudnn").attention_backend == "CUDNN,TRITON"
    # MATH and TRITON (no shim: the kernel is in the package) are accepted on every platform
    aotirt.CompileOptions(platform="windows", attention_backend="MATH")
    aotirt.CompileOptions(target="rocm", attention_backend="math")
    assert aotirt.CompileOptions(platform="windows", attention_backend=" triton").attention_backend == "TRITON"
    assert aotirt.CompileOptions(target="rocm", attention_backend="Triton").platform_key() == "rocm"


def test_attention_cudnn_on_linux_with_a_detected_rocm_target_is_refused_at_lowering(monkeypatch):
    import torch
    opts = aotirt.CompileOptions(attention_backend="CUDNN")  # fine until the target is known
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    with pytest.raises(aotirt.UnsupportedPlatformError, match=r"rocm: attention_backend='CUDNN'.*'MATH'"):
        aotirt.inductor_options(opts)
    assert aotirt.inductor_options(opts, target="cuda")["aot_inductor.metadata"]["aotirt_attention_backend"] == \
        "CUDNN"


def test_gemm_and_attention_platform_problems_are_listed_at_once():
    with pytest.raises(aotirt.UnsupportedPlatformError) as info:
        aotirt.CompileOptions(platform="windows", max_autotune_gemm_backends="ATEN", attention_backend="CUDNN")
    msg = str(info.value)
    assert "max_autotune_gemm_backends='ATEN'" in msg and "use attention_backend='MATH'" in msg
    assert "aoti_torch_cuda__scaled_dot_product_flash_attention" in msg and "aoti_torch_cuda_mm_out" in msg


def test_attention_backend_in_inductor_configs_is_validated_and_overrides():
    out = aotirt.inductor_options(aotirt.CompileOptions(), {"attention_backend": "cudnn"}, target="cuda")
    assert out["aot_inductor.metadata"]["aotirt_attention_backend"] == "CUDNN" and "attention_backend" not in out
    assert specs.effective_options(None, {"attention_backend": "cudnn"}).attention_backend == "CUDNN"
    with pytest.raises(aotirt.SpecError, match=r"valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"):
        aotirt.inductor_options(aotirt.CompileOptions(), {"attention_backend": "FLASH"}, target="cuda")
    with pytest.raises(aotirt.UnsupportedPlatformError, match="use attention_backend='MATH'"):
        aotirt.inductor_options(aotirt.CompileOptions(target="rocm"), {"attention_backend": "CUDNN"})


def test_linux_auto_target_is_checked_at_lowering(monkeypatch):
    import torch
    opts = aotirt.CompileOptions(max_autotune_gemm_backends="ATEN")  # fine until the target is known
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    with pytest.raises(aotirt.UnsupportedPlatformError, match="rocm"):
        aotirt.inductor_options(opts)
    assert aotirt.inductor_options(opts, target="cuda")["max_autotune_gemm_backends"] == "ATEN"


def test_replace_revalidates():
    with pytest.raises(aotirt.SpecError):
        dataclasses.replace(aotirt.CompileOptions(), float32_matmul_precision="low")


def test_positional_fields_keep_their_order():
    opts = aotirt.CompileOptions(False, "aten", "triton", "high")
    assert (opts.max_autotune, opts.max_autotune_gemm_backends, opts.float32_matmul_precision) == (False, "ATEN", "high")


def test_from_dict():
    assert aotirt.CompileOptions.from_dict({"max_autotune": False}) == aotirt.CompileOptions(max_autotune=False)
    with pytest.raises(aotirt.SpecError, match=r"unknown compile option\(s\) \['autotune'\]; valid: \['max_autotune'"):
        aotirt.CompileOptions.from_dict({"autotune": True})


def test_extra_inductor_configs_merge():
    out = aotirt.inductor_options(None, {"triton.cudagraphs": False, "aot_inductor.link_libtorch": False,
                                         "aot_inductor.metadata": {"model": "siglip"}}, target="cuda")
    assert out["triton.cudagraphs"] is False
    assert out["aot_inductor.link_libtorch"] is False
    assert out["aot_inductor.metadata"] == _meta(model="siglip")


@pytest.mark.parametrize("extra,match", [
    ({"aot_inductor.link_libtorch": True}, "link_libtorch.*not allowed.*runtime needs False"),
    ({"aot_inductor.package_constants_on_disk_format": "pickle_weights"}, "needs 'binary_blob'"),
    ({"aot_inductor.package_constants_in_so": True}, "package_constants_in_so"),
    ({"aot_inductor.metadata": {"aotirt_version": "9"}}, "'aotirt_version' is set by aotirt"),
    ({"aot_inductor.metadata": {"aotirt_platform": "x"}}, "'aotirt_platform' is set by aotirt"),
    ({"aot_inductor.metadata": {"n": 1}}, "str to str"),
    ({"aot_inductor.metadata": "x"}, "must be a dict"),
    ({"max_autotune_gemm_backends": "CUTLASS"}, r"\['CUTLASS'\]; valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ({"max_autotune": "no"}, "max_autotune must be True or False"),
])
def test_extra_inductor_configs_cannot_break_the_runtime(extra, match):
    with pytest.raises(aotirt.SpecError, match=match):
        aotirt.inductor_options(aotirt.CompileOptions(), extra, target="cuda")


def test_chosen_fields_in_inductor_configs_are_validated_and_override():
    out = aotirt.inductor_options(aotirt.CompileOptions(), {"max_autotune": False,
                                                            "max_autotune_gemm_backends": "triton,aten"},
                                  target="cuda")
    assert out["max_autotune"] is False and out["max_autotune_gemm_backends"] == "ATEN,TRITON"
    assert out["aot_inductor.metadata"]["aotirt_max_autotune"] == "OFF"


def test_chosen_fields_in_inductor_configs_obey_platform_rules():
    with pytest.raises(aotirt.UnsupportedPlatformError, match="max_autotune=OFF"):
        aotirt.inductor_options(aotirt.CompileOptions(target="rocm"), {"max_autotune": False})


def test_options_must_be_compile_options():
    with pytest.raises(aotirt.SpecError, match="must be an aotirt.CompileOptions, got dict"):
        aotirt.inductor_options({"max_autotune": True})


# ---- ExecuTorch-style compile specs (key, bytes) --------------------------------------------------------------------
@dataclasses.dataclass
class Spec:
    key: str
    value: bytes


@pytest.mark.parametrize("specs_,expected", [
    ([], aotirt.CompileOptions()),
    ([Spec("method_name", b"forward")], aotirt.CompileOptions()),
    ([Spec("method_name", b"encode")], aotirt.CompileOptions(method_name="encode")),
    ([Spec("max_autotune_gemm_backends", b"ATEN,TRITON")], aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON")),
    ([Spec("max_autotune_gemm_backends", b"triton, aten")], aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON")),
    ([Spec("max_autotune_gemm_backends", b"ATEN")], aotirt.CompileOptions(max_autotune_gemm_backends="ATEN")),
    ([Spec("max_autotune", b"OFF")], aotirt.CompileOptions(max_autotune=False)),
    ([Spec("max_autotune", b"on")], aotirt.CompileOptions(max_autotune=True)),
    ([Spec("float32_matmul_precision", b"high")], aotirt.CompileOptions(float32_matmul_precision="high")),
    ([Spec("platform", b"windows"), Spec("shim_library_path", b"/l")],
     aotirt.CompileOptions(platform="windows", shim_library_path="/l")),
    ([Spec("target", b"rocm")], aotirt.CompileOptions(target="rocm")),
    ([Spec("attention_backend", b"CUDNN")], aotirt.CompileOptions(attention_backend="CUDNN")),
    ([Spec("attention_backend", b" cudnn")], aotirt.CompileOptions(attention_backend="CUDNN")),
    ([Spec("attention_backend", b"MATH")], aotirt.CompileOptions(attention_backend="MATH")),
    ([Spec("max_autotune_gemm_backends", b"ATEN,TRITON"), Spec("attention_backend", b"CUDNN")],
     aotirt.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", attention_backend="CUDNN")),
    ([Spec("target", b"rocm"), Spec("attention_backend", b"MATH")],
     aotirt.CompileOptions(target="rocm", attention_backend="MATH")),
    ([Spec("max_autotune_conv_backends", b"triton, aten")],
     aotirt.CompileOptions(max_autotune_conv_backends="ATEN,TRITON")),
    ([Spec("max_autotune_conv_backends", b"ATEN")], aotirt.CompileOptions(max_autotune_conv_backends="ATEN")),
    ([Spec("max_autotune_conv_backends", b"TRITON")], aotirt.CompileOptions(max_autotune_conv_backends="TRITON")),
])
def test_compile_specs_parse_to_options(specs_, expected):
    opts, extra = specs.options_from_compile_specs(specs_ + [Spec("target_device", b"cuda:1")])
    assert opts == expected and extra == {"target_device": "cuda:1"}
    # and back
    again, _ = specs.options_from_compile_specs([Spec(k, v) for k, v in specs.options_to_compile_spec_values(opts)])
    assert again == opts


@pytest.mark.parametrize("specs_,error,match", [
    ([Spec("max_autotune_gemm_backends", b"CUTLASS")], aotirt.SpecError, r"valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ([Spec("max_autotune", b"yes")], aotirt.SpecError, r"max_autotune='yes' is not valid; valid: \['ON', 'OFF'\]"),
    ([Spec("triton_kernel_mode", b"ON")], aotirt.SpecError, r"unknown compile spec 'triton_kernel_mode'; valid: \["),
    ([Spec("method_name", b"a"), Spec("method_name", b"b")], aotirt.SpecError, "given twice"),
    ([Spec("method_name", b"\xff")], aotirt.SpecError, "not UTF-8"),
    (["forward"], aotirt.SpecError, "must have a str key"),
    ([Spec("platform", b"windows"), Spec("max_autotune_gemm_backends", b"ATEN")], aotirt.UnsupportedPlatformError,
     "windows_cuda"),
    ([Spec("target", b"rocm"), Spec("max_autotune", b"OFF")], aotirt.UnsupportedPlatformError, "max_autotune=OFF"),
    ([Spec("attention_backend", b"FLASH")], aotirt.SpecError, r"'FLASH' is not valid; valid: \['MATH', 'CUDNN', 'TRITON', 'CUDNN,TRITON', 'AUTO'\]"),
    ([Spec("platform", b"windows"), Spec("attention_backend", b"CUDNN")], aotirt.UnsupportedPlatformError,
     r"windows_cuda: attention_backend='CUDNN'.*use attention_backend='MATH'.*or 'TRITON'"),
    ([Spec("target", b"rocm"), Spec("attention_backend", b"cudnn")], aotirt.UnsupportedPlatformError,
     r"rocm: attention_backend='CUDNN'.*use attention_backend='MATH'"),
    ([Spec("max_autotune_conv_backends", b"CUTLASS")], aotirt.SpecError,
     r"valid: \['TRITON', 'ATEN,TRITON', 'ATEN', 'AUTO'\]"),
    ([Spec("platform", b"windows"), Spec("max_autotune_conv_backends", b"ATEN,TRITON")],
     aotirt.UnsupportedPlatformError, r"windows_cuda: max_autotune_conv_backends='ATEN,TRITON'.*use "
                                      r"max_autotune_conv_backends='TRITON'"),
])
def test_bad_compile_specs_are_refused(specs_, error, match):
    with pytest.raises(error, match=match):
        specs.options_from_compile_specs(specs_)


def test_import_aotirt_does_not_import_torch():
    import subprocess
    import sys
    import os
    code = ("import sys, aotirt, aotirt.cli, aotirt.platforms; assert 'torch' not in sys.modules, 'torch imported';"
            "aotirt.CompileOptions(platform='windows'); assert 'torch' not in sys.modules; print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def test_auto_timing_values_and_refusals():
    from aotirt import specs
    assert specs.CompileOptions().auto_timing == "graphs"
    assert specs.CompileOptions(max_autotune_gemm_backends="auto", auto_timing=" Eager ").auto_timing == "eager"
    with pytest.raises(aotirt.SpecError, match=r"auto_timing='sometimes' is not valid; valid: \['graphs', 'eager'\]"):
        specs.CompileOptions(max_autotune_gemm_backends="AUTO", auto_timing="sometimes")
    with pytest.raises(aotirt.SpecError, match="only applies where a backend field is 'AUTO'"):
        specs.CompileOptions(max_autotune_gemm_backends="ATEN,TRITON", auto_timing="eager")
    # ExecuTorch-style compile specs round-trip it
    opts, _ = specs.options_from_compile_specs([Spec("max_autotune_gemm_backends", b"AUTO"),
                                                Spec("auto_timing", b"eager")])
    assert opts.auto_timing == "eager"
    assert ("auto_timing", b"eager") in specs.options_to_compile_spec_values(opts)
