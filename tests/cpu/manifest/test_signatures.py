"""Every shim our public header declares that torch's own headers declare too has torch's exact C signature:
return type and parameter types, in order (names may differ). torch's headers are the ones of the torch installed
here (torch/include/torch/csrc/inductor/aoti_torch/c/shim.h and generated/c_shim_cuda.h); the GPU machine's torch
2.11 and CI's 2.13 declare the attention and GEMM fallbacks alike. A shim of ours that torch does not declare
(aotirt_* extensions) is out of scope; a manifest shim named aoti_torch_* that neither torch header declares fails.
Our header spells c10::complex<float> / <double> (passed by value by scalar_to_tensor_complex64/128) as the plain C
structs AotirtComplex64 / AotirtComplex128 of the same members, size and alignment (static_asserts in shim.h);
the comparison maps them back, and a test checks that torch's c10::complex still has that layout."""
import os
import re

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("TEST_SRCDIR")
OURS = (os.path.join(SRCDIR, os.environ.get("TEST_WORKSPACE", "aotirt"), "shims/include/aotirt/shim.h") if SRCDIR
        else os.path.join(HERE, "../../../shims/include/aotirt/shim.h"))
TORCH_INC = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "inductor", "aoti_torch")
TORCH_HEADERS = [os.path.join(TORCH_INC, "c", "shim.h"), os.path.join(TORCH_INC, "generated", "c_shim_cuda.h")]

# Our plain C spelling of a torch C++ type -> torch's (same size, alignment and members: passed alike by value).
EQUIVALENT_TYPES = {"AotirtComplex64": "c10::complex<float>", "AotirtComplex128": "c10::complex<double>"}
_INC = os.path.join(os.path.dirname(torch.__file__), "include")
COMPLEX_H = next((p for p in (os.path.join(_INC, "torch", "headeronly", "util", "complex.h"),
                              os.path.join(_INC, "c10", "util", "complex.h")) if os.path.exists(p)), "")

DECL = re.compile(r"(?:AOTI_TORCH_EXPORT|AOTIRT_EXPORT)\s+([\w\s\*]+?)\s*\b(\w+)\s*\(([^;{]*?)\)\s*;", re.S)


def _param_type(p: str) -> str:
    p = " ".join(p.replace("*", " * ").split())
    if p in ("", "void"):
        return ""
    toks = p.split(" ")
    if len(toks) > 1 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in ("int", "char", "long"):
        toks = toks[:-1]  # the parameter's name
    return " ".join(toks)


def declarations(path: str, equivalent: dict | None = None) -> dict:
    text = open(path).read()
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for ret, name, params in DECL.findall(text):
        types = [_param_type(p) for p in params.split(",")]
        types = [(equivalent or {}).get(t, t) for t in types]
        out[name] = (" ".join(ret.replace("*", " * ").split()), [t for t in types if t])
    return out


@pytest.fixture(scope="module")
def ours():
    d = declarations(OURS, EQUIVALENT_TYPES)
    assert len(d) > 60, f"parsed only {len(d)} declarations from {OURS}"
    return d


@pytest.fixture(scope="module")
def theirs():
    d = {}
    for h in TORCH_HEADERS:
        assert os.path.exists(h), f"torch {torch.__version__} has no {h}"
        d.update(declarations(h))
    assert "aoti_torch_cuda__scaled_dot_product_flash_attention" in d and "aoti_torch_empty_strided" in d
    return d


def test_every_shared_shim_has_torchs_signature(ours, theirs):
    shared = sorted(set(ours) & set(theirs))
    assert len(shared) > 50, shared
    bad = [f"{n}: ours {ours[n]}, torch {torch.__version__} {theirs[n]}" for n in shared if ours[n] != theirs[n]]
    assert not bad, "\n".join(bad)


def test_every_aoti_torch_shim_of_ours_is_one_of_torchs(ours, theirs):
    unknown = sorted(n for n in ours if n.startswith("aoti_torch_") and n not in theirs)
    assert not unknown, f"declared as torch shims but torch {torch.__version__} has no such function: {unknown}"


def test_the_attention_shims_are_checked(ours, theirs):
    for n in ("aoti_torch_cuda__scaled_dot_product_flash_attention",
              "aoti_torch_cuda__scaled_dot_product_efficient_attention",
              "aoti_torch_cuda__scaled_dot_product_cudnn_attention"):
        assert n in ours and ours[n] == theirs[n], n


def test_a_changed_parameter_type_is_caught(tmp_path, theirs):
    h = tmp_path / "shim.h"
    h.write_text("AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, "
                 "int64_t mat2);\n")
    assert declarations(str(h))["aoti_torch_cuda_mm_out"] != theirs["aoti_torch_cuda_mm_out"]


def test_complex_scalars_are_checked_through_the_equivalent_types(ours, theirs):
    for n, t in (("aoti_torch_scalar_to_tensor_complex64", "c10::complex<float>"),
                 ("aoti_torch_scalar_to_tensor_complex128", "c10::complex<double>")):
        assert n in ours and ours[n] == theirs[n] == ("AOTITorchError", [t, "AtenTensorHandle *"]), (n, ours.get(n))
    text = open(OURS).read()
    for ours_t, size in (("AotirtComplex64", 8), ("AotirtComplex128", 16)):
        assert f"sizeof({ours_t}) == {size} && AOTIRT_ALIGNOF({ours_t}) == {size}" in text, ours_t


def test_torchs_complex_has_the_layout_our_structs_copy():
    """c10::complex<T>: alignas(2 * sizeof(T)), members real_ then imag_ of type T, trivially copyable (no
    user-declared copy constructor or destructor: passed in registers like our C structs)."""
    text = re.sub(r"//[^\n]*", "", open(COMPLEX_H).read())
    m = re.search(r"struct alignas\(sizeof\(T\) \* 2\) complex \{(.*?)\n\};", text, re.S)
    assert m, f"no `struct alignas(sizeof(T) * 2) complex` in {COMPLEX_H}"
    body = m.group(1)
    members = re.findall(r"^\s*T (\w+) = T\(0\);", body, re.M)
    assert members == ["real_", "imag_"], members
    assert not re.search(r"complex\(const complex(<T>)?\s*&\s*\w*\)|~complex", body), "a user-declared copy/dtor"
