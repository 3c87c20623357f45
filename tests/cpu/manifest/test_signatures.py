"""Every shim our public header declares that torch's own headers declare too has torch's exact C signature:
return type and parameter types, in order (names may differ). torch's headers are the ones of the torch installed
here (torch/include/torch/csrc/inductor/aoti_torch/c/shim.h and generated/c_shim_cuda.h); the GPU machine's torch
2.11 and CI's 2.13 declare the attention and GEMM fallbacks alike. A shim of ours that torch does not declare
(aotirt_* extensions) is out of scope; a manifest shim named aoti_torch_* that neither torch header declares fails."""
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

DECL = re.compile(r"(?:AOTI_TORCH_EXPORT|AOTIRT_EXPORT)\s+([\w\s\*]+?)\s*\b(\w+)\s*\(([^;{]*?)\)\s*;", re.S)


def _param_type(p: str) -> str:
    p = " ".join(p.replace("*", " * ").split())
    if p in ("", "void"):
        return ""
    toks = p.split(" ")
    if len(toks) > 1 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in ("int", "char", "long"):
        toks = toks[:-1]  # the parameter's name
    return " ".join(toks)


def declarations(path: str) -> dict:
    text = open(path).read()
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for ret, name, params in DECL.findall(text):
        types = [_param_type(p) for p in params.split(",")]
        out[name] = (" ".join(ret.replace("*", " * ").split()), [t for t in types if t])
    return out


@pytest.fixture(scope="module")
def ours():
    d = declarations(OURS)
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
