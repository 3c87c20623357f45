"""The shim manifest (shims/shim_manifest.tsv) and what is derived from it (tools/manifest/manifest.py): it parses,
it agrees with the public header, GEMMs are Linux-CUDA only, the version script and .def say what they must, a
corrupt line is a clear error, and the built libaoti_cuda_shims.so exports exactly the linux_cuda set (nm -D).

The library path comes from $AOTIRT_SHIM_LIB (set by the Bazel target from its data dependency)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
MANIFEST_PY = os.path.join(ROOT, "tools", "manifest", "manifest.py")
sys.path.insert(0, os.path.dirname(MANIFEST_PY))
import manifest  # noqa: E402  (imported by path, as the build does)

GEMM_RE = re.compile(r"^aoti_torch_cuda__?\w*mm_out$")
# The cuBLASLt settings entries go with the GEMM shims: Linux CUDA only too.
GEMM_SETTINGS_RE = re.compile(r"^aotirt_gemm_\w+$")
SDPA_SHIMS = ("aoti_torch_cuda__scaled_dot_product_flash_attention",
              "aoti_torch_cuda__scaled_dot_product_efficient_attention",
              "aoti_torch_cuda__scaled_dot_product_cudnn_attention")
CUDNN_ONLY = ("aotirt_cudnn_add_search_dir", "aoti_torch_cuda_convolution")
CUB_SHIMS = ("aoti_torch_cuda_sort", "aoti_torch_cuda_sort_stable", "aoti_torch_cuda_topk")
# Our CUDA kernel over torch's CUDA packed int4 layout (ROCm packs differently): Linux and Windows CUDA.
INT4_SHIMS = ("aoti_torch_cuda__weight_int4pack_mm",)
# Our CUDA kernel (shims/embedding_bag), not built for ROCm: Linux and Windows CUDA.
EMBEDDING_BAG_SHIMS = ("aoti_torch_cuda__embedding_bag", "aoti_torch_cuda__embedding_bag_forward_only")
# Our CUDA kernels (shims/histc), not built for ROCm: Linux and Windows CUDA.
HISTC_SHIMS = ("aoti_torch_cuda_histc",)
# Our CUDA kernel for complex pointwise ops (shims/complex), not built for ROCm: Linux and Windows CUDA.
COMPLEX_SHIMS = ("aoti_torch_cuda_mul_Tensor", "aoti_torch_cuda_polar", "aoti_torch_cuda_abs")
# FFTs on the dlopen'd cuFFT (shims/fft): Linux CUDA only, like the other vendor-library families.
CUFFT_SHIMS = ("aoti_torch_cuda__fft_r2c", "aoti_torch_cuda__fft_c2c", "aotirt_cufft_add_search_dir")


def test_the_parser_is_the_packages_own():
    """One manifest parser: this tool parses with python/aotirt/manifest.py, the file the wheel ships as
    aotirt.manifest (loaded by path, so the build needs neither the package nor its dependencies)."""
    parser = os.path.realpath(manifest.parse.__code__.co_filename)
    assert parser == os.path.realpath(os.path.join(ROOT, "python", "aotirt", "manifest.py"))
    assert manifest.Entry.__module__ == manifest.ManifestError.__module__ == "aotirt_shim_manifest_parser"
    assert issubclass(manifest.ManifestError, ValueError)


@pytest.fixture(scope="module")
def entries() -> list:
    return manifest.load()


def _shim_lib_path() -> str:
    path = os.environ.get("AOTIRT_SHIM_LIB", "")
    if not path:
        pytest.fail("AOTIRT_SHIM_LIB is not set: run through `bazel test //tests/cpu/manifest:test_manifest` or set "
                    "it to a built libaoti_cuda_shims.so")
    path = os.path.abspath(path)
    assert os.path.exists(path), f"shim library not found at {path}"
    return path


def test_manifest_parses_with_unique_prefixed_names(entries):
    names = [e.name for e in entries]
    assert len(names) >= 50
    assert len(names) == len(set(names))
    bad = [n for n in names if not re.fullmatch(r"(aoti_torch|aotirt)_\w+", n)]
    assert not bad, bad


def test_every_platform_name_is_valid(entries):
    for e in entries:
        assert e.platforms, f"{e.name} has no platform"
        assert e.platforms <= set(manifest.PLATFORMS), (e.name, sorted(e.platforms))


def test_gemm_shims_are_linux_cuda_only(entries):
    gemms = [e for e in entries if GEMM_RE.match(e.name)]
    assert {e.name for e in gemms} >= {"aoti_torch_cuda_mm_out", "aoti_torch_cuda_addmm_out",
                                       "aoti_torch_cuda_bmm_out", "aoti_torch_cuda_baddbmm_out",
                                       "aoti_torch_cuda__int_mm_out"}
    for e in gemms:
        assert e.platforms == frozenset({"linux_cuda"}), (e.name, sorted(e.platforms))
    # Conversely, everything outside a vendor-library family (GEMMs on cuBLASLt, attention on cuDNN) or the CUDA-only
    # CUB family (sort, top-k) is on every platform (a Linux-only plain shim would be a silent Windows gap).
    for e in entries:
        if GEMM_SETTINGS_RE.match(e.name) or e.name in SDPA_SHIMS + CUDNN_ONLY + CUFFT_SHIMS:
            assert e.platforms == frozenset({"linux_cuda"}), (e.name, sorted(e.platforms))
        elif e.name in CUB_SHIMS + INT4_SHIMS + EMBEDDING_BAG_SHIMS + HISTC_SHIMS + COMPLEX_SHIMS:
            assert e.platforms == frozenset({"linux_cuda", "windows_cuda"}), (e.name, sorted(e.platforms))
        elif not GEMM_RE.match(e.name):
            assert e.platforms == frozenset(manifest.PLATFORMS), (e.name, sorted(e.platforms))


def test_attention_shims_are_linux_cuda_only_on_cudnn(entries):
    by_name = {e.name: e for e in entries}
    for name in SDPA_SHIMS + CUDNN_ONLY:
        assert by_name[name].platforms == frozenset({"linux_cuda"}), name
        assert by_name[name].note.startswith("cuDNN"), (name, by_name[name].note)


def test_sort_shims_are_cuda_only_on_cub(entries):
    """CUB is header-only CUDA: compiled into the Linux and Windows libraries, not the ROCm one (no hipCUB here)."""
    by_name = {e.name: e for e in entries}
    for name in CUB_SHIMS:
        assert by_name[name].platforms == frozenset({"linux_cuda", "windows_cuda"}), name
        assert by_name[name].note == "CUB", (name, by_name[name].note)


def test_manifest_matches_the_public_header(entries):
    header = open(os.path.join(ROOT, "shims", "include", "aotirt", "shim.h")).read()
    declared = set(re.findall(r"AOTIRT_EXPORT\s+[\w\s\*]+?\b((?:aoti_torch|aotirt)_\w+)\s*\(", header))
    listed = {e.name for e in entries}
    assert declared - listed == set(), "declared in shim.h but not in the manifest"
    assert listed - declared == set(), "in the manifest but not declared in shim.h"


def test_version_script_exports_exactly_the_platform_set(entries):
    for platform in manifest.PLATFORMS:
        script = manifest.version_script(entries, platform)
        globals_ = re.search(r"global:\s*(.*?)\s*local:", script, re.S).group(1)
        exported = set(re.findall(r"(\w+);", globals_))
        assert exported == set(manifest.names_for(entries, platform)), platform
        assert re.search(r"local:\s*\*;", script), "everything else must be local"
    rocm = manifest.version_script(entries, "rocm")
    assert "aoti_torch_cuda_mm_out" not in rocm
    assert "aoti_torch_cuda_mm_out;" in manifest.version_script(entries, "linux_cuda")


def test_def_file_exports_windows_set_and_only_mentions_gemms_in_comments(entries):
    text = manifest.def_file(entries, "windows_cuda", "aoti_cuda_shims")
    lines = text.splitlines()
    assert "LIBRARY aoti_cuda_shims" in lines
    assert "EXPORTS" in lines
    body = lines[lines.index("EXPORTS") + 1:]
    exported = {ln.strip() for ln in body if ln.strip()}
    assert exported == set(manifest.names_for(entries, "windows_cuda"))
    for ln in lines:
        if "mm_out" in ln:
            assert ln.startswith(";"), f"GEMM shim outside a comment in the .def: {ln!r}"
    assert any("aoti_torch_cuda_mm_out" in ln for ln in lines if ln.startswith(";")), \
        "the .def should say which Linux-only shims it leaves out"


@pytest.mark.parametrize("text, message", [
    ("aoti_torch_x linux_cuda\n", "line 1: expected NAME<TAB>PLATFORMS"),
    ("# comment\n\naoti_torch_x\tlinux_cuda,macos\n", "line 3: unknown platform(s) ['macos'] for aoti_torch_x"),
    ("aoti_torch_x\tlinux_cuda\naoti_torch_x\trocm\n", "line 2: aoti_torch_x listed twice"),
    ("aoti_torch_x\n", "line 1: expected NAME<TAB>PLATFORMS"),
])
def test_corrupt_manifest_line_is_a_clear_error(text, message):
    with pytest.raises(ValueError) as e:
        manifest.parse(text)
    assert message in str(e.value)


def test_unknown_platform_request_is_a_clear_error(entries):
    with pytest.raises(ValueError, match="unknown platform 'macos'; valid: linux_cuda, windows_cuda, rocm"):
        manifest.names_for(entries, "macos")


def test_corrupt_manifest_fails_the_cli(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("aoti_torch_ok\tlinux_cuda\nnot tab separated\n")
    out = tmp_path / "out.lds"
    r = subprocess.run([sys.executable, MANIFEST_PY, "--manifest", str(bad), "version-script", "--platform",
                        "linux_cuda", str(out)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "manifest line 2: expected NAME<TAB>PLATFORMS" in r.stderr
    assert not out.exists()


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
def test_built_library_exports_exactly_the_linux_cuda_set(entries):
    lib = _shim_lib_path()
    missing, extra = manifest.check(entries, "linux_cuda", lib)
    assert not missing and not extra, f"{lib}: missing {missing}, extra {extra}"
    # Nothing C++ leaks (mangled names, the tensor class), whatever the manifest says.
    assert not [n for n in manifest.exported_names(lib) if n.startswith("_Z")]


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
def test_check_cli_reports_missing_names(tmp_path):
    lib = _shim_lib_path()
    m = tmp_path / "m.tsv"
    m.write_text(open(manifest.DEFAULT_PATH).read() + "aoti_torch_not_implemented\tlinux_cuda\n")
    r = subprocess.run([sys.executable, MANIFEST_PY, "--manifest", str(m), "check", "--platform", "linux_cuda", lib],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "aoti_torch_not_implemented" in r.stdout
