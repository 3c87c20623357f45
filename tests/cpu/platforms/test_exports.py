"""Each platform's artifact exports exactly its manifest set; only Linux carries GEMM shims; the .def cannot lag."""
import subprocess

import pytest

from platforms_util import data, entries, is_gemm, manifest, tool


def lib_exports(path: str) -> set:
    """Names an import library defines: each export shows up as NAME and __imp_NAME (both must be there)."""
    out = subprocess.run([tool("llvm-nm-14"), path], capture_output=True, text=True, check=True).stdout
    syms = {ln.split()[-1] for ln in out.splitlines() if " T " in ln}
    plain = {s for s in syms if not s.startswith("__imp_")}
    assert {s[len("__imp_"):] for s in syms if s.startswith("__imp_")} == plain, "thunk/__imp_ pairs differ"
    return plain


def so_exports(path: str) -> set:
    return manifest().exported_names(path, tool("nm"))


ARTIFACTS = {
    "linux_cuda": ("AOTIRT_LINUX_SO", so_exports),
    "rocm": ("AOTIRT_ROCM_SO", so_exports),
    "windows_cuda": ("AOTIRT_WINDOWS_LIB", lib_exports),
}


@pytest.mark.parametrize("platform", sorted(ARTIFACTS))
def test_exports_exactly_the_manifest_set(platform):
    env, exports = ARTIFACTS[platform]
    have = exports(data(env))
    want = set(manifest().names_for(entries(), platform))
    assert not (want - have) and not (have - want), \
        f"{platform}: missing {sorted(want - have)}, extra {sorted(have - want)}"


@pytest.mark.parametrize("platform", sorted(ARTIFACTS))
def test_only_linux_has_gemm_shims(platform):
    env, exports = ARTIFACTS[platform]
    gemm = sorted(n for n in exports(data(env)) if is_gemm(n))
    if platform == "linux_cuda":
        assert "aoti_torch_cuda_mm_out" in gemm and "aoti_torch_cuda_addmm_out" in gemm, gemm
    else:
        assert gemm == [], f"{platform} exports GEMM shims {gemm}"


def _def_exports(text: str) -> set:
    body = text.split("\nEXPORTS\n", 1)[1]
    return {ln.split()[0] for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith(";")}


def test_every_linux_export_is_in_the_def_unless_linux_only():
    linux_only = {e.name for e in entries() if e.platforms == frozenset({"linux_cuda"})}
    listed = _def_exports(open(data("AOTIRT_WINDOWS_DEF")).read())
    missing = sorted(so_exports(data("AOTIRT_LINUX_SO")) - listed - linux_only)
    assert not missing, f"the Linux .so exports {missing}, which the .def (and so the .lib) lacks"
    assert not (listed & linux_only), f"Linux-only names listed in the .def: {sorted(listed & linux_only)}"


def test_def_keeps_the_note_on_linux_only_shims():
    text = open(data("AOTIRT_WINDOWS_DEF")).read()
    assert "must NOT be listed" in text and ";   aoti_torch_cuda_mm_out" in text, text[:600]


def test_checked_in_def_equals_generated():
    checked_in = open(data("AOTIRT_WINDOWS_DEF_CHECKED_IN")).read()
    generated = open(data("AOTIRT_WINDOWS_DEF")).read()
    assert checked_in == generated, ("platform/windows/aoti_cuda_shims.def is stale: copy "
                                     ".bazel/bin/platform/windows/generated/aoti_cuda_shims.def over it")
