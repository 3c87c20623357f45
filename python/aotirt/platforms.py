"""What each target platform supports, read from the shim manifest, and the lowering refusals built on it.

Platform keys are the manifest's: linux_cuda, windows_cuda, rocm. Every rule here is a pure function of plain data
(options, a manifest, GPU properties, the set of shims a model calls) so CPU tests can check each refusal; the only
functions that touch torch or a GPU are `detect_target` and `gpu_properties` (tests monkeypatch them).
Each refusal collects everything that is wrong and says once what to change (after ExecuTorch's aoti_backend.py).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import os
import re
import sys
from typing import Iterable, Mapping

from aotirt import manifest as shim_manifest
from aotirt.errors import SmallGpuError, SpecError, UnsupportedPlatformError, UnsupportedShimError

PLATFORM_KEYS = shim_manifest.PLATFORMS
# Inductor's is_big_gpu (torch/_inductor/utils.py): below this many SMs it turns Triton GEMM/conv templates off.
MIN_SMS_FOR_TRITON_TEMPLATES = 68
MANIFEST_ENV = "AOTIRT_SHIM_MANIFEST"
_HERE = os.path.dirname(os.path.abspath(__file__))
# The wheel ships the manifest inside the package; a source tree or Bazel runfiles have it at shims/.
MANIFEST_CANDIDATES = (os.path.join(_HERE, "shim_manifest.tsv"),
                       os.path.join(_HERE, "..", "..", "shims", "shim_manifest.tsv"))


def platform_key(platform: str, target: str) -> str:
    """('linux', 'cuda') -> 'linux_cuda'; ('windows', 'cuda') -> 'windows_cuda'; ('linux', 'rocm') -> 'rocm'."""
    if target == "rocm":
        if platform != "linux":
            raise UnsupportedPlatformError(f"target=rocm with platform={platform!r} is not supported: the ROCm "
                                           f"build exists for Linux only; use platform=linux or target=cuda")
        return "rocm"
    if target == "cuda" and platform in ("linux", "windows"):
        return f"{platform}_cuda"
    raise SpecError(f"no platform for platform={platform!r}, target={target!r}; valid: platform linux|windows, "
                    f"target cuda|rocm")


# ---- the manifest ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Manifest:
    """Shim name -> platforms that export it (parsed from shims/shim_manifest.tsv)."""
    platforms_of: Mapping[str, frozenset]
    notes: Mapping[str, str]
    path: str = ""

    def names(self, key: str) -> frozenset:
        if key not in PLATFORM_KEYS:
            raise SpecError(f"unknown platform {key!r}; valid: {list(PLATFORM_KEYS)}")
        return frozenset(n for n, p in self.platforms_of.items() if key in p)


def parse_manifest(text: str, path: str = "") -> Manifest:
    """The shim manifest through aotirt.manifest.parse, the parser the Bazel tool (tools/manifest/manifest.py) uses
    too; a malformed line is an UnsupportedPlatformError naming it."""
    try:
        entries = shim_manifest.parse(text, path or "<text>")
    except shim_manifest.ManifestError as e:
        raise UnsupportedPlatformError(f"shim {e}") from None
    return Manifest({e.name: e.platforms for e in entries}, {e.name: e.note for e in entries}, path)


def manifest_path() -> str:
    """$AOTIRT_SHIM_MANIFEST, else the package's copy (wheel), else the source tree's shims/shim_manifest.tsv."""
    env = os.environ.get(MANIFEST_ENV)
    if env:
        return env
    for cand in MANIFEST_CANDIDATES:
        if os.path.isfile(cand):
            return os.path.normpath(cand)
    looked = [os.path.normpath(c) for c in MANIFEST_CANDIDATES]
    raise UnsupportedPlatformError(f"the shim manifest is not found (looked at {looked}); set {MANIFEST_ENV} to "
                                   f"shims/shim_manifest.tsv or reinstall the aotirt wheel")


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> Manifest:
    with open(path) as f:
        return parse_manifest(f.read(), path)


def load_manifest(path: str | None = None) -> Manifest:
    path = path or manifest_path()
    return _load_cached(path, os.path.getmtime(path))


# A manifest note starting with this word: the library exports the shim, but lowering must not call it yet (its GPU
# tests have not passed on the H200); the note says why. Lowering refuses models that need it, naming it.
UNVERIFIED_NOTE = "unverified"


def unverified_shims(manifest: Manifest | None = None) -> frozenset:
    """Shims the manifest marks unverified (UNVERIFIED_NOTE): exported, never called by what lowering makes."""
    m = manifest or load_manifest()
    return frozenset(n for n, note in m.notes.items() if (note or "").strip().lower().startswith(UNVERIFIED_NOTE))


def supported_shims(key: str, manifest: Manifest | None = None) -> frozenset:
    """The shim names the `key` build exports, less the unverified ones: the fallback kernels generated code may call
    on that platform."""
    m = manifest or load_manifest()
    return m.names(key) - unverified_shims(m)


# ---- spec rules (no model, no GPU needed) ---------------------------------------------------------------------------
# The C shims Inductor's ATen GEMM fallbacks call (ATEN among the GEMM backends, or max_autotune OFF): Inductor's
# names, not a platform fact. Which platform has them is the manifest's answer (gemm_shims_missing).
ATEN_GEMM_SHIMS = ("aoti_torch_cuda_mm_out", "aoti_torch_cuda_addmm_out", "aoti_torch_cuda_bmm_out",
                   "aoti_torch_cuda_baddbmm_out", "aoti_torch_cuda__int_mm_out")
# The C shims Inductor's SDPA fallbacks call when SDPA is not decomposed (attention_backend CUDNN: exported under the
# cuDNN, flash and memory-efficient backends, any of which torch may pick per GPU, dtype and shape). Inductor's names;
# which platform has them is the manifest's answer (attention_shims_missing).
SDPA_SHIMS = ("aoti_torch_cuda__scaled_dot_product_cudnn_attention",
              "aoti_torch_cuda__scaled_dot_product_flash_attention",
              "aoti_torch_cuda__scaled_dot_product_efficient_attention")
# The C shim Inductor's ATen convolution fallback calls (ATEN among the conv backends, or max_autotune OFF; ROCm's
# Inductor emits the same cuda-named shim): Inductor's name; which platform has it is the manifest's answer
# (conv_shims_missing).
ATEN_CONV_SHIMS = ("aoti_torch_cuda_convolution",)
# How the messages name each platform's build (words only; what each build has comes from the manifest).
PLATFORM_NAMES = {"linux_cuda": "Linux CUDA", "windows_cuda": "Windows", "rocm": "ROCm"}


def gemm_shims_missing(key: str, manifest: Manifest | None = None) -> list:
    """The ATen GEMM shims (ATEN_GEMM_SHIMS) that `key`'s shim library does not export, sorted ([] on linux_cuda)."""
    return sorted(set(ATEN_GEMM_SHIMS) - supported_shims(key, manifest))


def attention_shims_missing(key: str, manifest: Manifest | None = None) -> list:
    """The SDPA shims (SDPA_SHIMS) that `key`'s shim library does not export, sorted ([] on linux_cuda). CUDNN needs
    all of them: which fused kernel torch picks depends on the GPU, the dtype and the shapes."""
    return sorted(set(SDPA_SHIMS) - supported_shims(key, manifest))


# Defaults per platform (the shim manifest's platform key), set from the H200 benchmarks in benchmarks/RESULTS.md
# ("Models run 5": with whole-model CUDA graphs, ATEN GEMMs + cuDNN attention + cuDNN convolutions were the fastest
# lowering or within 2% of it on all five models, and 0.93-0.99x the faster of torch.compile(max-autotune) and
# eager+graph; MATH attention was 6.2x slower at T=2048; TRITON attention 1.3-4.6x faster than MATH; "Models run 4":
# ATEN GEMMs fastest with graphs on gemma, siglip and pi05). A field left None takes its platform's default when the
# platform is known (aotirt.compile, the ExecuTorch backend, inductor_options); `resolved()` fills them in.
# windows_cuda and rocm have no GEMM, convolution or attention shims: Triton everywhere. rocm keeps MATH attention:
# the Triton attention kernel's configs have run only on NVIDIA GPUs (no AMD GPU was available to test them).
PLATFORM_DEFAULTS: Mapping[str, Mapping[str, str]] = {
    "linux_cuda": {"max_autotune_gemm_backends": "ATEN", "max_autotune_conv_backends": "ATEN",
                   "attention_backend": "CUDNN,TRITON"},
    "windows_cuda": {"max_autotune_gemm_backends": "TRITON", "max_autotune_conv_backends": "TRITON",
                     "attention_backend": "TRITON"},
    "rocm": {"max_autotune_gemm_backends": "TRITON", "max_autotune_conv_backends": "TRITON",
             "attention_backend": "MATH"},
}
PLATFORM_DEFAULT_FIELDS = ("max_autotune_gemm_backends", "max_autotune_conv_backends", "attention_backend")


def platform_defaults(key: str) -> Mapping[str, str]:
    """The default GEMM / convolution / attention backends of a manifest platform (PLATFORM_DEFAULTS)."""
    try:
        return PLATFORM_DEFAULTS[key]
    except KeyError:
        raise SpecError(f"no defaults for platform {key!r}; known: {sorted(PLATFORM_DEFAULTS)}") from None


def conv_shims_missing(key: str, manifest: Manifest | None = None) -> list:
    """The ATen convolution shims (ATEN_CONV_SHIMS) that `key`'s shim library does not export, sorted ([] on
    linux_cuda)."""
    return sorted(set(ATEN_CONV_SHIMS) - supported_shims(key, manifest))


def with_platform_defaults(opts, key: str):
    """opts with its backend fields left None set to platform `key`'s defaults (PLATFORM_DEFAULTS)."""
    unset = [f for f in PLATFORM_DEFAULT_FIELDS if hasattr(opts, f) and getattr(opts, f) is None]
    if not unset:
        return opts
    defaults = platform_defaults(key)
    if dataclasses.is_dataclass(opts):
        return dataclasses.replace(opts, **{f: defaults[f] for f in unset})
    opts = copy.copy(opts)
    for f in unset:
        setattr(opts, f, defaults[f])
    return opts


def check_options(opts, target: str | None = None, manifest: Manifest | None = None) -> str:
    """Refuses option combinations a platform cannot run; returns the platform key. Lists every problem at once.
    ATEN in the GEMM backends (AUTO compares ATEN candidates) and max_autotune OFF make Inductor call the ATen GEMM
    shims, so both are refused where the manifest gives the platform none of them; ATEN in the conv backends makes it
    call the convolution shim, so it is refused where the manifest lacks it; attention_backend CUDNN makes it call
    the SDPA shims, so it is refused where the manifest lacks any of them."""
    target = target or opts.resolved_target()
    key = platform_key(opts.platform, target)
    opts = with_platform_defaults(opts, key)
    backends = opts.max_autotune_gemm_backends.split(",")
    if backends == ["AUTO"]:  # AUTO compares packages that call the ATen GEMM shims: refused wherever ATEN is
        backends = ["ATEN", "TRITON"]
    missing = gemm_shims_missing(key, manifest)
    where = f"the {PLATFORM_NAMES[key]} build lacks"
    gemm_problems = []
    if missing:
        if "ATEN" in backends:
            gemm_problems.append(f"max_autotune_gemm_backends={opts.max_autotune_gemm_backends!r} lets Inductor "
                                 f"call ATen/cuBLAS GEMM shims ({missing[0]}, ...), which {where}: use "
                                 f"max_autotune_gemm_backends='TRITON'")
        if not opts.max_autotune:
            gemm_problems.append(f"max_autotune=OFF makes Inductor call cuBLAS GEMM shims for every matmul, which "
                                 f"{where}: use max_autotune=ON with max_autotune_gemm_backends='TRITON'")
    problems = list(gemm_problems)
    if gemm_problems:
        problems[-1] += (f" (it has no cuBLAS GEMM shims: {', '.join(missing)} are not in its set in "
                         f"shims/shim_manifest.tsv)")
    conv_backends = getattr(opts, "max_autotune_conv_backends", "TRITON")
    # AUTO (conv, attention) compares candidates that call the shims: refused wherever they are missing
    conv_listed = ["ATEN", "TRITON"] if conv_backends == "AUTO" else conv_backends.split(",")
    conv_missing = conv_shims_missing(key, manifest) if "ATEN" in conv_listed else []
    if conv_missing:
        problems.append(f"max_autotune_conv_backends={conv_backends!r} lets Inductor call the ATen/cuDNN convolution "
                        f"shim {conv_missing[0]}, which {where}: use max_autotune_conv_backends='TRITON' "
                        f"({', '.join(conv_missing)} is not in its set in shims/shim_manifest.tsv)")
    attention = getattr(opts, "attention_backend", "MATH")
    attention_listed = ["CUDNN", "TRITON"] if attention == "AUTO" else attention.split(",")
    sdpa_missing = attention_shims_missing(key, manifest) if "CUDNN" in attention_listed else []
    if sdpa_missing:
        problems.append(f"attention_backend={attention!r} makes Inductor call the fused SDPA shims "
                        f"({sdpa_missing[0]}, ...), which {where}: use attention_backend='MATH', which decomposes "
                        f"SDPA into matmuls + softmax, or 'TRITON', a Triton flash-attention kernel in the package "
                        f"({', '.join(sdpa_missing)} are not in its set in shims/shim_manifest.tsv)")
    if problems:
        raise UnsupportedPlatformError(f"cannot lower for {key}: " + "; ".join(problems))
    return key


# ---- model rules (from the exported graph) --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ModelFeatures:
    """What in a graph decides which kernels Inductor can choose (see `model_features`)."""
    gemms: tuple = ()  # op names of matmul-like nodes
    convolutions: tuple = ()  # op names of convolution nodes
    attention: tuple = ()  # per SDPA node: (op name, dtype name, q head dim, v head dim, dropout_p); dims None if symbolic
    grouped_mm: tuple = ()  # per aten._grouped_mm node (MoE experts): (dtype name, has a bias)


_GEMM_OPS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_int_mm", "einsum", "addbmm", "addmv", "mv")
_CONV_OPS = ("convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "_convolution")
# Grouped GEMMs (transformers' MoE experts call torch.nn.functional.grouped_mm = aten._grouped_mm). No aotirt build
# has their ATen fallback's shim; Inductor's Triton grouped-GEMM template (torch/_inductor/kernel/mm_grouped.py) runs
# them inside the package, with max_autotune on, CUDA compute capability 9.0+, a big GPU, no bias and static shapes
# (its use_triton_template, can_use_triton_kernel and _is_static_problem). The lowering offers that template for them
# whatever max_autotune_gemm_backends says, and never their fallback (lowering.collect_shim_calls).
GROUPED_MM_OPS = ("_grouped_mm",)
GROUPED_MM_SHIM = "aoti_torch_cuda__grouped_mm"
GROUPED_MM_MIN_CAPABILITY = (9, 0)


def op_name(target) -> str:
    """'aten::addmm' / aten.addmm.default / edge ops -> 'addmm'."""
    name = getattr(target, "_name", None) or getattr(getattr(target, "_op", None), "_name", None) or str(target)
    name = name.split("::")[-1]
    return name.split(".")[0]


_SDPA_OPS = ("scaled_dot_product_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention")
# What the cuDNN attention shims run (shims/attention/sdpa_plan.cc; kMaxHeadDim in sdpa_plan.h).
CUDNN_ATTENTION_DTYPES = ("float16", "bfloat16")
CUDNN_ATTENTION_MAX_HEAD_DIM = 256
# What attention_backend TRITON's kernel runs (aotirt.triton_attention.DTYPES / MAX_HEAD_DIM; a CPU test keeps them
# equal without importing triton here).
TRITON_ATTENTION_DTYPES = ("float16", "bfloat16", "float32")
TRITON_ATTENTION_MAX_HEAD_DIM = 256


def _static_dim(v):
    try:
        return int(v)
    except (TypeError, ValueError):  # a symbolic size
        return None


def attention_call(name: str, node) -> tuple | None:
    """(name, dtype, q head dim, v head dim, dropout_p) of an SDPA node from its inputs' fake tensors."""
    vals = [a.meta.get("val") if hasattr(a, "meta") else None for a in node.args[:3]]
    if len(vals) < 3 or any(v is None or not hasattr(v, "dtype") for v in vals):
        return None
    dropout = node.kwargs.get("dropout_p", 0.0)
    schema = getattr(node.target, "_schema", None)
    for i, arg in enumerate(getattr(schema, "arguments", ())):  # where each op's schema puts dropout_p
        if arg.name == "dropout_p" and i < len(node.args):
            dropout = node.args[i]
    return (name, str(vals[0].dtype).replace("torch.", ""), _static_dim(vals[0].shape[-1]),
            _static_dim(vals[2].shape[-1]), float(dropout) if isinstance(dropout, (int, float)) else None)


def model_features(graph) -> ModelFeatures:
    """Finds GEMMs, convolutions and SDPA calls among the call_function nodes of an fx graph (an ExportedProgram's
    .graph)."""
    gemms, convs, attention, grouped = set(), set(), [], []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        name = op_name(node.target)
        if name in GROUPED_MM_OPS:
            grouped.append(grouped_mm_call(node))
        elif name in _GEMM_OPS:
            gemms.add(name)
        elif name in _CONV_OPS:
            convs.add(name)
        elif name in _SDPA_OPS:
            call = attention_call(name, node)
            if call is not None:
                attention.append(call)
    return ModelFeatures(tuple(sorted(gemms)), tuple(sorted(convs)), tuple(attention), tuple(grouped))


def grouped_mm_call(node) -> tuple:
    """(dtype name, has a bias) of an aten._grouped_mm node: _grouped_mm(self, mat2, offs=None, bias=None, ...)."""
    val = node.args[0].meta.get("val") if node.args and hasattr(node.args[0], "meta") else None
    dtype = str(getattr(val, "dtype", "unknown")).replace("torch.", "")
    bias = node.kwargs.get("bias", node.args[3] if len(node.args) > 3 else None)
    return (dtype, bias is not None)


def attention_problems(call: tuple, backend: str) -> list:
    """Why `backend` (CUDNN: the cuDNN shims, TRITON: our kernel) cannot run one SDPA call of model_features; [] if
    it can."""
    _, dtype, d, dv, dropout = call
    if backend == "CUDNN":
        dtypes, max_d, mult = CUDNN_ATTENTION_DTYPES, CUDNN_ATTENTION_MAX_HEAD_DIM, 8
    else:
        dtypes, max_d, mult = TRITON_ATTENTION_DTYPES, TRITON_ATTENTION_MAX_HEAD_DIM, 1
    why = []
    if dtype not in dtypes:
        why.append(f"dtype {dtype} ({backend} attention runs {', '.join(dtypes)})")
    for what, dim in (("query/key", d), ("value", dv)):
        if dim is not None and not (0 < dim <= max_d and dim % mult == 0):
            why.append(f"{what} head dim {dim} ({'multiples of 8 ' if mult == 8 else ''}up to {max_d})")
    if dropout:
        why.append(f"dropout_p={dropout} (inference only: dropout_p=0)")
    return why


def check_attention(opts, features: ModelFeatures) -> None:
    """Refuses before Inductor the SDPA calls the chosen attention backend would refuse on every run, all at once.
    CUDNN (the cuDNN shims): dtypes other than float16/bfloat16 (torch picks its memory-efficient kernel for float32,
    whose shim runs on cuDNN), head dims that are not multiples of 8 up to 256, dropout. TRITON (our kernel,
    triton_attention): dtypes other than float16/bfloat16/float32, head dims above 256, dropout. CUDNN,TRITON: calls
    neither takes (an SDPA already exported as a fused op, e.g. _scaled_dot_product_flash_attention, only has the
    cuDNN shims: the Triton rewrite takes aten.scaled_dot_product_attention)."""
    backend = getattr(opts, "attention_backend", None) or "MATH"
    if backend not in ("CUDNN", "TRITON", "CUDNN,TRITON") or not features.attention:
        return
    problems = []
    for call in features.attention:
        name = call[0]
        if backend != "CUDNN,TRITON":
            why = attention_problems(call, backend)
        else:
            why = attention_problems(call, "CUDNN")
            if why and name == "scaled_dot_product_attention":
                triton = attention_problems(call, "TRITON")
                why = [f"cuDNN: {', '.join(why)}; Triton: {', '.join(triton)}"] if triton else []
        if why:
            problems.append(f"{name}: {', '.join(why)}")
    if problems:
        other = "'MATH'" if backend != "CUDNN" else "'MATH' or 'TRITON'"
        raise UnsupportedShimError(
            f"attention_backend={backend!r} cannot run {len(problems)} SDPA call(s) of this model: "
            + "; ".join(problems) + f". Lower with attention_backend={other}"
            + (" (SDPA decomposed into Triton kernels and GEMMs)" if backend != "CUDNN" else ""), [])


def check_grouped_mm(opts, features: ModelFeatures, key: str, manifest: Manifest | None = None) -> None:
    """Refuses, before Inductor runs, grouped GEMMs (aten._grouped_mm) that would reach their ATen fallback, whose
    shim no aotirt build has: Inductor offers only that fallback with max_autotune OFF, with a bias, and on ROCm
    (GROUPED_MM_OPS). Otherwise the lowering runs them on Inductor's Triton template, whatever the GEMM backends
    (lowering.collect_shim_calls); check_gpu refuses GPUs below 9.0 and small ones."""
    if not features.grouped_mm or GROUPED_MM_SHIM in supported_shims(key, manifest):
        return
    opts = with_platform_defaults(opts, key)
    n = len(features.grouped_mm)
    what = (f"the model has {n} grouped GEMM{'s' if n > 1 else ''} (aten._grouped_mm, e.g. transformers' MoE "
            f"experts)")
    how = (f"Inductor's Triton grouped-GEMM template runs them (max_autotune=ON, on a CUDA GPU of compute capability "
           f"9.0+, whatever max_autotune_gemm_backends says); the ATen fallback {GROUPED_MM_SHIM} is in no aotirt "
           f"shim library")
    if key == "rocm":
        raise UnsupportedShimError(f"{what}: {how}, and Inductor offers that template on CUDA only: lower this model "
                                   f"for linux_cuda or windows_cuda", [GROUPED_MM_SHIM])
    if any(bias for _, bias in features.grouped_mm):
        raise UnsupportedShimError(f"{what}, one with a bias, which Inductor's Triton grouped-GEMM template does not "
                                   f"take, so it would call the ATen fallback {GROUPED_MM_SHIM}, which is in no "
                                   f"aotirt shim library: add the bias after the grouped GEMM", [GROUPED_MM_SHIM])
    if not opts.max_autotune:
        raise UnsupportedShimError(f"{what}; with max_autotune=OFF Inductor lowers them to the ATen fallback: {how}",
                                   [GROUPED_MM_SHIM])


def check_model(opts, features: ModelFeatures, key: str, manifest: Manifest | None = None) -> None:
    """Refuses, before Inductor runs, models that would fail deep inside it or call a shim `key` lacks
    (check_grouped_mm for grouped GEMMs; below, convolutions).

    Inductor's convolution lowering (checked on the H200, torch 2.11; torch/_inductor/kernel/conv.py): its choices
    are the ATen fallback aoti_torch_cuda_convolution when ATEN is among max_autotune_conv_backends, plus, with
    max_autotune on, the Triton conv templates when TRITON is among the conv *and* the GEMM backends; no choice is a
    NoValidChoicesError. With max_autotune OFF specs.inductor_options passes conv backends ATEN, so every
    convolution is the fallback. The fallback is refused where the manifest
    lacks the shim (conv_shims_missing: today rocm and windows_cuda).
    """
    check_grouped_mm(opts, features, key, manifest)
    if not features.convolutions:
        return
    opts = with_platform_defaults(opts, key)
    convs = ", ".join(features.convolutions)
    backends = opts.max_autotune_gemm_backends.split(",")
    conv_backends = getattr(opts, "max_autotune_conv_backends", "TRITON")
    missing = conv_shims_missing(key, manifest)
    if not opts.max_autotune or "ATEN" in conv_backends.split(","):
        if missing:
            how = ("with max_autotune=OFF Inductor lowers them" if not opts.max_autotune else
                   f"with max_autotune_conv_backends={conv_backends!r} Inductor may lower them")
            raise UnsupportedShimError(
                f"the model has convolutions ({convs}); {how} to the ATen fallback {missing[0]}, which the {key} "
                f"shim library does not have (shims/shim_manifest.tsv): use max_autotune=ON with "
                f"max_autotune_conv_backends='TRITON' and max_autotune_gemm_backends including TRITON (e.g. "
                f"'ATEN,TRITON' or 'TRITON')", missing)
    elif "TRITON" not in backends:
        aten = ("" if missing else " or max_autotune_conv_backends='ATEN,TRITON' (cuDNN through "
                                   f"{ATEN_CONV_SHIMS[0]})")
        raise UnsupportedShimError(
            f"the model has convolutions ({convs}); Inductor offers its Triton convolution templates only when "
            f"TRITON is among max_autotune_gemm_backends, so with {opts.max_autotune_gemm_backends!r} and "
            f"max_autotune_conv_backends={conv_backends!r} it has no valid choice (NoValidChoicesError): use "
            f"max_autotune_gemm_backends='ATEN,TRITON'{aten}", [])


# ---- the GPU the model is lowered on --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GpuProperties:
    name: str
    sm_count: int  # multiprocessors (CUs on ROCm)
    major: int = 0
    minor: int = 0


def gpu_properties(device_index: int | None = None) -> GpuProperties:
    """The lowering GPU's properties from torch (tests monkeypatch this to simulate small GPUs)."""
    import torch
    idx = torch.cuda.current_device() if device_index is None else device_index
    p = torch.cuda.get_device_properties(idx)
    return GpuProperties(p.name, int(p.multi_processor_count), int(p.major), int(p.minor))


def triton_templates_available(gpu: GpuProperties, target: str) -> bool:
    """Mirrors Inductor's is_big_gpu: >= 68 SMs on CUDA; on ROCm an arch of major 9 (MI200/MI300) or >= 11."""
    if target == "rocm":
        return not (gpu.major < 9 or gpu.major == 10)
    return gpu.sm_count >= MIN_SMS_FOR_TRITON_TEMPLATES


def check_gpu(opts, gpu: GpuProperties, target: str, features: ModelFeatures | None = None,
              manifest: Manifest | None = None) -> None:
    """Refuses GEMM/conv models that would find no kernel choice on a small GPU (Triton templates off there).
    Convolutions then need the ATen fallback (max_autotune OFF or ATEN among max_autotune_conv_backends), so they are
    refused where the manifest lacks its shim (conv_shims_missing) and otherwise only without one of those two.
    Grouped GEMMs (check_grouped_mm) need a CUDA GPU of compute capability 9.0+ for Inductor's Triton template."""
    key = platform_key(getattr(opts, "platform", "linux"), target)
    features = features if features is not None else ModelFeatures(gemms=("unknown",))
    # grouped GEMMs that only Inductor's Triton template can run (check_grouped_mm)
    template_only = bool(features.grouped_mm) and GROUPED_MM_SHIM not in supported_shims(key, manifest)
    if template_only and target != "rocm" and (gpu.major, gpu.minor) < GROUPED_MM_MIN_CAPABILITY:
        raise SmallGpuError(f"{gpu.name} has compute capability {gpu.major}.{gpu.minor}; the model's grouped GEMMs "
                            f"(aten._grouped_mm) run on Inductor's Triton grouped-GEMM template, which Inductor offers "
                            f"from 9.0 (Hopper) on, and their ATen fallback {GROUPED_MM_SHIM} is in no aotirt shim "
                            f"library: lower the model on a GPU of compute capability 9.0+")
    if triton_templates_available(gpu, target):
        return
    if not features.gemms and not features.convolutions and not template_only:
        return  # no template would be asked for
    why = (f"{gpu.name} has {gpu.sm_count} SMs, fewer than the {MIN_SMS_FOR_TRITON_TEMPLATES} Inductor needs for "
           f"its Triton GEMM/convolution templates (is_big_gpu)" if target != "rocm" else
           f"{gpu.name} (arch major {gpu.major}) is not one Inductor uses Triton GEMM templates on (is_big_gpu)")
    opts = with_platform_defaults(opts, key)
    bigger = ("an MI200/MI300-class GPU" if target == "rocm" else
              f"a GPU with at least {MIN_SMS_FOR_TRITON_TEMPLATES} SMs")
    if template_only:
        raise SmallGpuError(f"{why}, and the model's grouped GEMMs (aten._grouped_mm) run only on its Triton "
                            f"grouped-GEMM template (their ATen fallback {GROUPED_MM_SHIM} is in no aotirt shim "
                            f"library): lower the model on {bigger}")
    if features.convolutions:
        convs = ", ".join(features.convolutions)
        conv_missing = conv_shims_missing(key, manifest)
        if conv_missing:
            raise SmallGpuError(f"{why}, and the model has convolutions ({convs}), which need those templates (the "
                                f"ATen fallback {conv_missing[0]} is not in the {key} shim library, "
                                f"shims/shim_manifest.tsv): lower the model on {bigger}")
        conv_backends = getattr(opts, "max_autotune_conv_backends", "TRITON")
        if opts.max_autotune and "ATEN" not in conv_backends.split(","):
            raise SmallGpuError(f"{why}, so with max_autotune_conv_backends={conv_backends!r} the convolutions in "
                                f"this model ({convs}) have no kernel choice: use "
                                f"max_autotune_conv_backends='ATEN,TRITON' (cuDNN through {ATEN_CONV_SHIMS[0]}) "
                                f"or max_autotune=OFF")
        # the ATen fallback runs the convolutions; their 1x1 ones may still become GEMMs (checked below)
    if opts.max_autotune and opts.max_autotune_gemm_backends == "TRITON":
        if gemm_shims_missing(key, manifest):
            raise SmallGpuError(f"{why}; {PLATFORM_NAMES[key]} builds have no ATen/cuBLAS GEMM shims, so the GEMMs in this model "
                                f"have no kernel choice there: lower on {bigger}")
        gemms = ("the GEMMs in this model" if features.gemms else
                 "the GEMMs Inductor makes of this model's 1x1 convolutions")
        raise SmallGpuError(f"{why}, so with max_autotune_gemm_backends='TRITON' {gemms} have no "
                            f"kernel choice and Inductor would fail deep inside: use "
                            f"max_autotune_gemm_backends='ATEN,TRITON' (cuBLAS through the aotirt GEMM shims, "
                            f"linux_cuda only)")


# ---- shims the generated code calls ---------------------------------------------------------------------------------
_SHIM_CALL = re.compile(r"\b(aoti_torch_[A-Za-z0-9_]+)\s*\(")


# The sort/top-k fallbacks Inductor emits, on CUB (shims/sort): Linux and Windows CUDA, not ROCm.
CUB_SHIMS = ("aoti_torch_cuda_sort", "aoti_torch_cuda_sort_stable", "aoti_torch_cuda_topk")
# Fallbacks no compile spec can avoid (Inductor has no Triton lowering for their ops), by family: (what the shims
# are built on, what to change in the model instead). Where a platform lacks them, the refusal says so.
NO_SPEC_FAMILIES = {
    CUB_SHIMS: ("sort/top-k on CUB", "torch.sort/argsort/topk"),
    ("aoti_torch_cuda__weight_int4pack_mm",): ("int4 GEMM over torch's CUDA packed layout",
                                               "aten._weight_int4pack_mm (int4 weight-only quantization)"),
    ("aoti_torch_cuda__embedding_bag", "aoti_torch_cuda__embedding_bag_forward_only"): (
        "embedding bags, a CUDA kernel", "nn.EmbeddingBag / F.embedding_bag"),
    ("aoti_torch_cuda_histc",): ("histograms, a CUDA kernel", "torch.histc (e.g. transformers' MoE expert counts)"),
    ("aoti_torch_cuda_mul_Tensor", "aoti_torch_cuda_polar", "aoti_torch_cuda_abs"): (
        "complex pointwise ops, a CUDA kernel", "complex tensors (e.g. complex RoPE: use the real-valued rotation)"),
    ("aoti_torch_cuda__fft_r2c", "aoti_torch_cuda__fft_c2c"): (
        "FFTs on cuFFT (Linux CUDA)", "torch.fft (rfft, fft, fft2, stft ...), or compute the transform outside the "
        "model"),
}


def shims_called(wrapper_source: str) -> set:
    """Every aoti_torch_* function the generated wrapper source calls (names followed by '(')."""
    # Strip comments and string literals first: Inductor writes kernel names into both.
    src = re.sub(r"//[^\n]*|/\*.*?\*/", "", wrapper_source, flags=re.S)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)
    return set(_SHIM_CALL.findall(src))


def missing_shims(called: Iterable[str], key: str, manifest: Manifest | None = None) -> list:
    have = supported_shims(key, manifest)
    return sorted(set(called) - have)


def check_shims(called: Iterable[str], key: str, manifest: Manifest | None = None, what: str = "the model") -> None:
    """Refuses with ALL missing shims, sorted, once (UnsupportedShimError.shims holds the list)."""
    m = manifest or load_manifest()
    missing = missing_shims(called, key, m)
    if not missing:
        return
    # unverified: in this platform's library but not yet allowed (a platform without the shim gets the other hints)
    unverified = [n for n in missing if n in unverified_shims(m) and key in m.platforms_of.get(n, ())]
    missing_rest = [n for n in missing if n not in unverified]
    elsewhere = [n for n in missing_rest if m.platforms_of.get(n)]
    nowhere = [n for n in missing_rest if not m.platforms_of.get(n)]
    hint = []
    if unverified:
        hint.append(f"{', '.join(unverified)} {'is' if len(unverified) == 1 else 'are'} in the shim library but not "
                    f"yet allowed: " + "; ".join(f"{n}: {m.notes[n]}" for n in unverified)
                    + " (shims/shim_manifest.tsv)")
    for family, (built_on, avoid) in NO_SPEC_FAMILIES.items():  # no compile spec gives Inductor another way
        no_spec = [n for n in elsewhere if n in family]
        if not no_spec:
            continue
        others = sorted(set().union(*(m.platforms_of[n] for n in no_spec)))
        hint.append(f"{', '.join(no_spec)} exist{'s' if len(no_spec) == 1 else ''} only for {', '.join(others)} "
                    f"({built_on}; Inductor has no Triton lowering for {'it' if len(no_spec) == 1 else 'them'} that "
                    f"a compile spec could choose): run this model on {' or '.join(others)}, or change it to avoid "
                    f"{avoid}")
        elsewhere = [n for n in elsewhere if n not in family]
    if elsewhere:
        others = sorted(set().union(*(m.platforms_of[n] for n in elsewhere)))
        fix = ("attention_backend='MATH' or 'TRITON'" if set(elsewhere) <= set(SDPA_SHIMS) else
               "max_autotune=ON and max_autotune_gemm_backends='TRITON'" +
               (" and max_autotune_conv_backends='TRITON'" if set(elsewhere) & set(ATEN_CONV_SHIMS) else "") +
               (" and attention_backend='MATH' (or 'TRITON')" if set(elsewhere) & set(SDPA_SHIMS) else ""))
        hint.append(f"{', '.join(elsewhere)} exist only for {', '.join(others)}: for {key} lower with {fix}")
    if nowhere:
        hint.append(f"{', '.join(nowhere)} exist on no aotirt platform: change the model so Inductor generates "
                    f"Triton for those ops (e.g. SDPA through its math decomposition, convolutions with "
                    f"max_autotune=ON and TRITON among the GEMM backends), or add the shim to shims/ and "
                    f"shims/shim_manifest.tsv")
    raise UnsupportedShimError(f"{what} would call {len(missing)} shim(s) that the {key} shim library does not "
                               f"export: {', '.join(missing)}. " + "; ".join(hint), missing)


# ---- the platform support table (doctor) ----------------------------------------------------------------------------
def support_table(manifest: Manifest | None = None) -> str:
    """A text table: per platform, its shim count, the GEMM backends, max_autotune values, attention backends and
    conv backends lowering accepts, and the shims only some platforms have."""
    m = manifest or load_manifest()
    rows = [("platform", "shims", "GEMM backends", "max_autotune OFF", "attention backends", "conv backends",
             "defaults (GEMM / conv / attention)")]
    for key in PLATFORM_KEYS:
        aten = not gemm_shims_missing(key, m)
        defaults = platform_defaults(key)
        rows.append((key, str(len(m.names(key))), "TRITON, ATEN,TRITON, ATEN" if aten else "TRITON",
                     "yes" if aten else "no (refused)",
                     "MATH, TRITON" if attention_shims_missing(key, m) else "MATH, CUDNN, TRITON, CUDNN,TRITON",
                     "TRITON" if conv_shims_missing(key, m) else "TRITON, ATEN,TRITON, ATEN",
                     " / ".join(defaults[f] for f in PLATFORM_DEFAULT_FIELDS)))
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  " + "  ".join(c.ljust(width[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    partial = sorted(n for n, p in m.platforms_of.items() if p != frozenset(PLATFORM_KEYS))
    for n in partial:
        lines.append(f"  {n}: {', '.join(sorted(m.platforms_of[n]))}" + (f" ({m.notes[n]})" if m.notes[n] else ""))
    return "\n".join(lines)


def detect_target() -> str:
    """'rocm' when the installed torch is a ROCm build (torch.version.hip), else 'cuda'. Imports torch if needed."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F811
        except ImportError:
            return "cuda"
    return "rocm" if getattr(torch.version, "hip", None) else "cuda"
