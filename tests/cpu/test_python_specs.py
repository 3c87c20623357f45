"""aotirt.specs: CompileOptions validation and the one mapping to Inductor options."""
import dataclasses

import pytest

import aotirt
from aotirt import specs


def test_default_options_map_to_the_runtime_contract():
    assert specs.inductor_options() == {
        "aot_inductor.link_libtorch": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.package": True,
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "binary_blob",
        "max_autotune": True,
        "max_autotune_gemm_backends": "TRITON",
        "max_autotune_conv_backends": "TRITON",
        "aot_inductor.metadata": {"aotirt_version": aotirt.__version__,
                                  "aotirt_float32_matmul_precision": "highest"},
    }


def test_chosen_options_are_mapped_and_normalized():
    opts = aotirt.CompileOptions(max_autotune=False, max_autotune_gemm_backends=" aten, triton,ATEN",
                                 max_autotune_conv_backends="triton", float32_matmul_precision="high")
    assert opts.max_autotune_gemm_backends == "ATEN,TRITON"
    out = aotirt.inductor_options(opts)
    assert out["max_autotune"] is False
    assert out["max_autotune_gemm_backends"] == "ATEN,TRITON"
    assert out["max_autotune_conv_backends"] == "TRITON"
    assert out["aot_inductor.metadata"]["aotirt_float32_matmul_precision"] == "high"


@pytest.mark.parametrize("kwargs,match", [
    ({"max_autotune_gemm_backends": "CUTLASS"}, r"unsupported value\(s\) \['CUTLASS'\].*\['TRITON', 'ATEN'\]"),
    ({"max_autotune_gemm_backends": "TRITON,CK"}, r"\['CK'\]"),
    ({"max_autotune_gemm_backends": " , "}, "empty value"),
    ({"max_autotune_gemm_backends": ["TRITON"]}, "comma-separated string"),
    ({"max_autotune_conv_backends": "ATEN"}, r"\['ATEN'\].*valid: a comma-separated subset of \['TRITON'\]"),
    ({"float32_matmul_precision": "medium"}, r"'medium' is not valid; valid: \['highest', 'high'\]"),
    ({"max_autotune": "yes"}, "max_autotune must be True or False"),
    ({"max_autotune": 1}, "max_autotune must be True or False"),
])
def test_invalid_values_raise_spec_error_listing_valid_values(kwargs, match):
    with pytest.raises(aotirt.SpecError, match=match) as info:
        aotirt.CompileOptions(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, aotirt.Error)


def test_replace_revalidates():
    with pytest.raises(aotirt.SpecError):
        dataclasses.replace(aotirt.CompileOptions(), float32_matmul_precision="low")


def test_from_dict():
    assert aotirt.CompileOptions.from_dict({"max_autotune": False}) == aotirt.CompileOptions(max_autotune=False)
    with pytest.raises(aotirt.SpecError, match=r"unknown compile option\(s\) \['autotune'\]; valid: \['max_autotune'"):
        aotirt.CompileOptions.from_dict({"autotune": True})


def test_extra_inductor_configs_merge():
    out = aotirt.inductor_options(None, {"triton.cudagraphs": False, "aot_inductor.link_libtorch": False,
                                         "aot_inductor.metadata": {"model": "siglip"}})
    assert out["triton.cudagraphs"] is False
    assert out["aot_inductor.link_libtorch"] is False
    assert out["aot_inductor.metadata"] == {"aotirt_version": aotirt.__version__,
                                            "aotirt_float32_matmul_precision": "highest", "model": "siglip"}


@pytest.mark.parametrize("extra,match", [
    ({"aot_inductor.link_libtorch": True}, "link_libtorch.*not allowed.*runtime needs False"),
    ({"aot_inductor.package_constants_on_disk_format": "pickle_weights"}, "needs 'binary_blob'"),
    ({"aot_inductor.package_constants_in_so": True}, "package_constants_in_so"),
    ({"aot_inductor.metadata": {"aotirt_version": "9"}}, "'aotirt_version' is set by aotirt"),
    ({"aot_inductor.metadata": {"n": 1}}, "str to str"),
    ({"aot_inductor.metadata": "x"}, "must be a dict"),
    ({"max_autotune_gemm_backends": "CUTLASS"}, r"\['CUTLASS'\]; valid: a comma-separated subset"),
    ({"max_autotune": "no"}, "max_autotune must be True or False"),
])
def test_extra_inductor_configs_cannot_break_the_runtime(extra, match):
    with pytest.raises(aotirt.SpecError, match=match):
        aotirt.inductor_options(aotirt.CompileOptions(), extra)


def test_chosen_fields_in_inductor_configs_are_validated_and_override():
    out = aotirt.inductor_options(aotirt.CompileOptions(), {"max_autotune": False,
                                                            "max_autotune_gemm_backends": "triton,aten"})
    assert out["max_autotune"] is False and out["max_autotune_gemm_backends"] == "TRITON,ATEN"


def test_options_must_be_compile_options():
    with pytest.raises(aotirt.SpecError, match="must be an aotirt.CompileOptions, got dict"):
        aotirt.inductor_options({"max_autotune": True})


def test_import_aotirt_does_not_import_torch():
    import subprocess
    import sys
    import os
    code = "import sys, aotirt, aotirt.cli; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr
