"""Compile options: what a user may choose, how it is validated, and how it maps to Inductor's options.

One place for the mapping (`inductor_options`). Every accepted value is validated here and a bad one raises
SpecError listing the valid values: Inductor itself silently ignores unknown GEMM backend names, so a typo would
otherwise compile something else than asked. No torch import here (the runtime side must work without torch).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from aotirt.errors import SpecError
from aotirt.platforms import PLATFORM_DEFAULT_FIELDS, PLATFORM_DEFAULTS, platform_defaults  # noqa: F401
from aotirt.version import __version__

# GEMM backends our runtime can run: TRITON (kernels embedded in the wrapper) and ATEN (extern GEMMs through our
# cuBLASLt shims aoti_torch_cuda_{mm,addmm,bmm}_out, linux_cuda only). CUTLASS/CK/CPP need kernels or shims we do not
# have. Values are sets: order, case and spaces do not matter; the canonical spelling is sorted ("ATEN,TRITON").
VALID_GEMM_BACKENDS = ("TRITON", "ATEN")
# AUTO: lower the three others, time each package on this GPU and keep the fastest (aotirt.auto; linux_cuda only).
# The convolution and attention fields take AUTO too (their candidates: aotirt.auto.FIELD_CANDIDATES).
AUTO = "AUTO"
AUTO_GEMM_BACKENDS = AUTO
VALID_GEMM_BACKEND_VALUES = ("TRITON", "ATEN,TRITON", "ATEN", AUTO_GEMM_BACKENDS)
# The fields AUTO may decide, in the order aotirt.auto decides them (each with the ones before it fixed).
AUTO_FIELDS = PLATFORM_DEFAULT_FIELDS  # the GEMM, convolution and attention fields
# Conv backends, a set like the GEMM ones: TRITON (Inductor's conv templates, embedded in the wrapper; they also need
# TRITON among the GEMM backends) and ATEN (Inductor's ATen conv fallback, a call to the cuDNN shim
# aoti_torch_cuda_convolution; only where the manifest has it, platforms.conv_shims_missing: linux_cuda).
VALID_CONV_BACKENDS = ("TRITON", "ATEN")
VALID_CONV_BACKEND_VALUES = ("TRITON", "ATEN,TRITON", "ATEN", AUTO)
VALID_FLOAT32_MATMUL_PRECISION = ("highest", "high")
VALID_PLATFORMS = ("linux", "windows")
# How AUTO times its candidates: whole-model CUDA graph replays (for models that will run captured) or plain calls
# (for models that will not: per-launch host costs then decide, and they differ between backends).
VALID_AUTO_TIMING = ("graphs", "eager")
VALID_TARGETS = ("cuda", "rocm")
# How scaled_dot_product_attention (SDPA) is lowered. MATH: exported under sdpa_kernel([MATH]), so SDPA is decomposed
# into matmuls + softmax (Triton/GEMM kernels; every platform). CUDNN: exported under the fused backends (cuDNN, flash,
# memory-efficient), so Inductor keeps the SDPA ops as fallback calls to the attention shims
# aoti_torch_cuda__scaled_dot_product_{cudnn,flash,efficient}_attention (platforms.SDPA_SHIMS; where the manifest
# has them: linux_cuda). TRITON: each SDPA becomes our Triton flash-attention kernel (aotirt.triton_attention),
# compiled into the wrapper like Inductor's own kernels (every platform, no shim). CUDNN,TRITON: each SDPA call the
# cuDNN shims take (float16/bfloat16, head dims multiples of 8 up to 256) calls them, every other one runs the Triton
# kernel (float32, other head dims); a call neither takes is refused before Inductor. One value; case, spaces and
# the order of CUDNN,TRITON do not matter.
VALID_ATTENTION_BACKENDS = ("MATH", "CUDNN", "TRITON", "CUDNN,TRITON")
VALID_ATTENTION_BACKEND_VALUES = VALID_ATTENTION_BACKENDS + (AUTO,)

# Defaults per platform: platforms.PLATFORM_DEFAULTS (set from the benchmarks; re-exported here).

# Options the runtime depends on: a package compiled otherwise cannot be loaded by it. User inductor_configs may
# repeat them with the same value but never change them.
FIXED_INDUCTOR_OPTIONS: Mapping[str, Any] = {
    "aot_inductor.link_libtorch": False,  # the wrapper .so must need only our shims, never libtorch
    "aot_inductor.embed_kernel_binary": True,  # Triton cubins inside the .so, no loose files to find at run time
    "aot_inductor.package": True,
    "aot_inductor.package_constants_in_so": False,  # weights outside the .so ...
    "aot_inductor.package_constants_on_disk_format": "binary_blob",  # ... as one blob (pickle needs torch)
}
# platform=windows: Inductor cross-compiles the wrapper and links it against our import library
# (//platform/windows:aoti_cuda_shims.lib, generated from the manifest), as ExecuTorch's CudaBackend does.
WINDOWS_SHIM_LIBRARY = "aoti_cuda_shims"

METADATA_KEY = "aot_inductor.metadata"
# Inductor options that are also CompileOptions fields: given in inductor_configs they are validated the same way.
_CHOSEN_FIELDS = ("max_autotune", "max_autotune_gemm_backends", "max_autotune_conv_backends",
                  "coordinate_descent_tuning")
# CompileOptions fields that are not Inductor options but are accepted in inductor_configs too (folded into the
# options like _CHOSEN_FIELDS, validated the same way, never handed to Inductor, which would refuse the unknown key).
_AOTIRT_FIELDS = ("attention_backend",)


def _normalize_backends(value: Any, valid: tuple, field: str, valid_values: tuple | None = None) -> str:
    """'triton, aten' -> 'ATEN,TRITON' (a set: sorted, deduplicated, upper case); anything else is a SpecError."""
    listed = list(valid_values or valid)
    if not isinstance(value, str):
        raise SpecError(f"{field} must be a string, one of {listed}, got {type(value).__name__} {value!r}")
    if AUTO_GEMM_BACKENDS in listed and value.strip().upper() == AUTO_GEMM_BACKENDS:
        return AUTO_GEMM_BACKENDS
    tokens = sorted({tok.strip().upper() for tok in value.split(",") if tok.strip()})
    bad = [t for t in tokens if t not in valid]
    if bad or not tokens:
        what = f"unsupported value(s) {bad}" if bad else "an empty value"
        raise SpecError(f"{field}={value!r} has {what}; valid: {listed} (case, spaces and order do not matter; "
                        f"the aotirt runtime has no kernels or shims for other backends)")
    return ",".join(tokens)


def _normalize_attention_backend(value: Any, field: str = "attention_backend") -> str:
    """' cudnn ' -> 'CUDNN', 'triton,cudnn' -> 'CUDNN,TRITON', ' auto' -> 'AUTO'; anything but MATH / CUDNN /
    TRITON / CUDNN,TRITON / AUTO is a SpecError listing the valid values."""
    listed = list(VALID_ATTENTION_BACKEND_VALUES)
    if not isinstance(value, str):
        raise SpecError(f"{field} must be a string, one of {listed}, got {type(value).__name__} {value!r}")
    if value.strip().upper() == AUTO:
        return AUTO
    norm = ",".join(sorted({tok.strip().upper() for tok in value.split(",") if tok.strip()}))
    if norm in VALID_ATTENTION_BACKENDS:
        return norm
    raise SpecError(f"{field}={value!r} is not valid; valid: {listed} (case and spaces do not matter; "
                    f"MATH decomposes SDPA into matmuls + softmax, CUDNN calls the fused SDPA shims, TRITON compiles "
                    f"a Triton flash-attention kernel into the package, CUDNN,TRITON calls the shims where they take "
                    f"the call and the Triton kernel elsewhere, AUTO times CUDNN,TRITON, TRITON and MATH packages on "
                    f"this GPU and keeps the fastest)")


def _choice(value: Any, valid: tuple, field: str, lower: bool = True) -> str:
    norm = value.strip().lower() if isinstance(value, str) and lower else value
    if norm not in valid:
        raise SpecError(f"{field}={value!r} is not valid; valid: {list(valid)}")
    return norm


def parse_on_off(value: Any, field: str = "max_autotune") -> bool:
    """ExecuTorch-style switch: b'ON' / 'off' (any case) or a bool -> bool; anything else is a SpecError."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str) and value.strip().upper() in ("ON", "OFF"):
        return value.strip().upper() == "ON"
    raise SpecError(f"{field}={value!r} is not valid; valid: ['ON', 'OFF']")


def auto_fields(opts: Any) -> tuple:
    """The AUTO_FIELDS of `opts` whose value is AUTO (any case, spaces around), in the order AUTO decides them."""
    return tuple(f for f in AUTO_FIELDS
                 if isinstance(getattr(opts, f, None), str) and getattr(opts, f).strip().upper() == AUTO)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """User-facing compile options. Values are validated (and normalized) on construction.

    max_autotune: let Inductor benchmark kernel choices (slower compile, faster model). OFF makes every GEMM an
        ATen/cuBLAS shim call and every convolution a cuDNN shim call (linux_cuda only).
    max_autotune_gemm_backends: "TRITON", "ATEN,TRITON", "ATEN" or "AUTO"; case, spaces and order do not matter.
        None (default): the platform's (PLATFORM_DEFAULTS: ATEN on linux_cuda, TRITON on windows_cuda and rocm).
    max_autotune_conv_backends: "TRITON", "ATEN,TRITON", "ATEN" or "AUTO"; case, spaces and order do not matter.
        ATEN lets Inductor call the cuDNN convolution shim aoti_torch_cuda_convolution (only where the shim manifest
        has it: linux_cuda); TRITON convolutions also need TRITON among the GEMM backends. None (default): the
        platform's (ATEN on linux_cuda, TRITON elsewhere).
    float32_matmul_precision: "highest" (true fp32) or "high" (TF32 allowed), applied while compiling and recorded in
        the package metadata as "aotirt_float32_matmul_precision" (the runtime applies it per package).
    method_name: the method lowered (ExecuTorch's method_name compile spec; "forward" for aotirt.compile).
    platform: "linux" or "windows" (Windows: cross-compiled against the import library in shim_library_path).
    target: "cuda" or "rocm"; None detects it from the installed torch (torch.version.hip).
    shim_library_path: platform=windows only: the folder holding aoti_cuda_shims.lib.
    auto_timing: where a backend field is "AUTO", how the candidates are timed: "graphs" (default; whole-model
        CUDA graph replays, for models that will run captured) or "eager" (plain calls, for models that will not).
    attention_backend: how scaled_dot_product_attention is lowered: "MATH" (SDPA decomposed into matmuls + softmax,
        every platform), "CUDNN" (the fused SDPA kernels, cuDNN / flash / memory-efficient, called through the
        attention shims; only where the shim manifest has them: linux_cuda; float16/bfloat16, head dims multiples
        of 8 up to 256), "TRITON" (our Triton flash-attention kernel compiled into the package; every platform,
        float16/bfloat16/float32, head dims up to 256) or "CUDNN,TRITON" (per SDPA call: the cuDNN shims where
        they take it, else the Triton kernel) or "AUTO" (aotirt.auto lowers CUDNN,TRITON, TRITON and MATH, times
        them on this GPU and keeps the fastest; linux_cuda only); case and spaces do not matter. None (default): the
        platform's
        (CUDNN,TRITON on linux_cuda, TRITON on windows_cuda, MATH on rocm). Recorded in the package metadata as
        "aotirt_attention_backend".
    coordinate_descent_tuning: Inductor's coordinate descent tuning of its own Triton kernels' block sizes, which
        torch.compile(mode="max-autotune") turns on with max_autotune. With it Inductor also turns a matmul with one
        row or one column (a decode step's projections at batch 1) into a reduction it fuses with its neighbours
        instead of a GEMM call (torch/_inductor/decomposition.py, mm): a 0.13B Llama's decode step ran 1.4x faster
        with it on the H200 (benchmarks/RESULTS.md, decode run 2). Slower compiles (about 3x there). None (default):
        the same as max_autotune, as torch.compile's max-autotune mode. Recorded in the package metadata as
        "aotirt_coordinate_descent_tuning".
    Combinations a platform cannot run (ATEN GEMMs, max_autotune OFF, ATEN convolutions or attention_backend CUDNN
    where the manifest gives the platform no such shims: Windows/ROCm; AUTO in any field there) raise
    UnsupportedPlatformError. Several fields AUTO: aotirt.auto decides them one after another (GEMMs, convolutions,
    attention), each stage with the earlier choices fixed and the later fields at their platform defaults.
    """

    max_autotune: bool = True
    max_autotune_gemm_backends: str | None = None
    max_autotune_conv_backends: str | None = None
    float32_matmul_precision: str = "highest"
    method_name: str = "forward"
    platform: str = "linux"
    target: str | None = None
    shim_library_path: str | None = None
    auto_timing: str = "graphs"
    attention_backend: str | None = None
    coordinate_descent_tuning: bool | None = None

    def __post_init__(self) -> None:
        validate(self)
        # frozen: normalize through object.__setattr__ (e.g. "triton, aten" -> "ATEN,TRITON").
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        if self.max_autotune_gemm_backends is not None:
            set_("max_autotune_gemm_backends", _normalize_backends(
                self.max_autotune_gemm_backends, VALID_GEMM_BACKENDS, "max_autotune_gemm_backends",
                VALID_GEMM_BACKEND_VALUES))
        if self.max_autotune_conv_backends is not None:
            set_("max_autotune_conv_backends", _normalize_backends(
                self.max_autotune_conv_backends, VALID_CONV_BACKENDS, "max_autotune_conv_backends",
                VALID_CONV_BACKEND_VALUES))
        set_("float32_matmul_precision", _choice(self.float32_matmul_precision, VALID_FLOAT32_MATMUL_PRECISION,
                                                 "float32_matmul_precision"))
        set_("platform", _choice(self.platform, VALID_PLATFORMS, "platform"))
        set_("auto_timing", _choice(self.auto_timing, VALID_AUTO_TIMING, "auto_timing"))
        if self.attention_backend is not None:
            set_("attention_backend", _normalize_attention_backend(self.attention_backend))
        if self.target is not None:
            set_("target", _choice(self.target, VALID_TARGETS, "target"))
        # Refuse what the platform cannot run as early as it is known without torch (linux + auto target waits for
        # the lowering, where the target is detected).
        if self.platform == "windows" or self.target is not None:
            from aotirt import platforms
            platforms.check_options(self.resolved(self.target or "cuda"), self.target or "cuda")

    def resolved(self, target: str | None = None) -> "CompileOptions":
        """These options with every field left None (PLATFORM_DEFAULT_FIELDS) set to its platform's default
        (PLATFORM_DEFAULTS; target: cuda|rocm, default the explicit target, else the installed torch's)."""
        unset = [f for f in PLATFORM_DEFAULT_FIELDS if getattr(self, f) is None]
        if not unset:
            return self
        defaults = platform_defaults(self.platform_key(target))
        return dataclasses.replace(self, **{f: defaults[f] for f in unset})

    def cdt(self) -> bool:
        """Whether Inductor's coordinate descent tuning is on: the field, or max_autotune where it is None."""
        return self.max_autotune if self.coordinate_descent_tuning is None else self.coordinate_descent_tuning

    def resolved_target(self) -> str:
        """The explicit target, else the installed torch's (rocm when torch.version.hip, else cuda)."""
        if self.target is not None:
            return self.target
        from aotirt import platforms
        return platforms.detect_target()

    def platform_key(self, target: str | None = None) -> str:
        """The shim manifest's platform: linux_cuda, windows_cuda or rocm."""
        from aotirt import platforms
        return platforms.platform_key(self.platform, target or self.resolved_target())

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "CompileOptions":
        """Builds options from a mapping (e.g. parsed flags or ExecuTorch compile specs); unknown keys are refused."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(k for k in values if k not in known)
        if unknown:
            raise SpecError(f"unknown compile option(s) {unknown}; valid: {known}")
        return cls(**dict(values))


def validate(opts: CompileOptions) -> None:
    """Raises SpecError naming the field and the valid values for the first invalid field."""
    if not isinstance(opts.max_autotune, bool):
        raise SpecError(f"max_autotune must be True or False (ON/OFF in compile specs), got {opts.max_autotune!r}")
    if opts.max_autotune_gemm_backends is not None:
        _normalize_backends(opts.max_autotune_gemm_backends, VALID_GEMM_BACKENDS, "max_autotune_gemm_backends",
                            VALID_GEMM_BACKEND_VALUES)
    if opts.max_autotune_conv_backends is not None:
        _normalize_backends(opts.max_autotune_conv_backends, VALID_CONV_BACKENDS, "max_autotune_conv_backends",
                            VALID_CONV_BACKEND_VALUES)
    _choice(opts.float32_matmul_precision, VALID_FLOAT32_MATMUL_PRECISION, "float32_matmul_precision")
    if not isinstance(opts.method_name, str) or not opts.method_name.isidentifier():
        raise SpecError(f"method_name={opts.method_name!r} must be a Python identifier such as 'forward'")
    _choice(opts.platform, VALID_PLATFORMS, "platform")
    if opts.target is not None:
        _choice(opts.target, VALID_TARGETS, "target")
    _choice(opts.auto_timing, VALID_AUTO_TIMING, "auto_timing")
    if (isinstance(opts.auto_timing, str) and opts.auto_timing.strip().lower() != "graphs"
            and not auto_fields(opts)):
        raise SpecError(f"auto_timing={opts.auto_timing!r} only applies where a backend field is 'AUTO' "
                        f"({', '.join(AUTO_FIELDS)}; got " + ", ".join(f"{f}={getattr(opts, f)!r}" for f in AUTO_FIELDS)
                        + "); drop it or choose AUTO")
    if opts.attention_backend is not None:
        _normalize_attention_backend(opts.attention_backend)
    if opts.coordinate_descent_tuning is not None and not isinstance(opts.coordinate_descent_tuning, bool):
        raise SpecError(f"coordinate_descent_tuning must be True, False or None (the same as max_autotune; ON/OFF "
                        f"in compile specs), got {opts.coordinate_descent_tuning!r}")
    if opts.shim_library_path is not None and not isinstance(opts.shim_library_path, str):
        raise SpecError(f"shim_library_path must be a folder path string, got {opts.shim_library_path!r}")


# ---- ExecuTorch compile specs (key + bytes value) -> CompileOptions -------------------------------------------------
# Keys ExecuTorch's partitioner adds by itself; accepted and handed back to the caller, not options of ours.
PASS_THROUGH_SPEC_KEYS = ("target_device",)
SPEC_KEYS = tuple(f.name for f in dataclasses.fields(CompileOptions))


def options_from_compile_specs(specs: Any) -> tuple:
    """[CompileSpec(key, bytes)] -> (CompileOptions, {pass-through key: str}). Unknown keys are refused with the
    valid ones (ExecuTorch's own CudaBackend keys such as triton_kernel_mode mean nothing to aotirt)."""
    values, extra, seen = {}, {}, set()
    for spec in specs:
        key, value = getattr(spec, "key", None), getattr(spec, "value", None)
        if not isinstance(key, str):
            raise SpecError(f"a compile spec must have a str key and a bytes value, got {spec!r}")
        if isinstance(value, (bytes, bytearray)):
            try:
                value = bytes(value).decode("utf-8")
            except UnicodeDecodeError as e:
                raise SpecError(f"compile spec {key!r}: value {value!r} is not UTF-8 text") from e
        if key in seen:
            raise SpecError(f"compile spec {key!r} is given twice; give it once")
        seen.add(key)
        if key in PASS_THROUGH_SPEC_KEYS:
            extra[key] = value
        elif key in ("max_autotune", "coordinate_descent_tuning"):
            values[key] = parse_on_off(value, key)
        elif key in SPEC_KEYS:
            values[key] = value
        else:
            raise SpecError(f"unknown compile spec {key!r}; valid: {sorted(SPEC_KEYS + PASS_THROUGH_SPEC_KEYS)}")
    return CompileOptions(**values), extra


def options_to_compile_spec_values(opts: CompileOptions) -> list:
    """[(key, bytes)] that options_from_compile_specs turns back into `opts` (defaults left out)."""
    out = []
    for f in dataclasses.fields(CompileOptions):
        v = getattr(opts, f.name)
        if v == f.default:
            continue
        out.append((f.name, (("ON" if v else "OFF") if isinstance(v, bool) else str(v)).encode()))
    return out


def effective_options(opts: CompileOptions | None = None, extra: Mapping[str, Any] | None = None) -> CompileOptions:
    """`opts` with max_autotune / the backend lists / attention_backend given in inductor_configs `extra` folded in
    (validated the same way: Inductor itself ignores unknown backend names silently)."""
    opts = CompileOptions() if opts is None else opts
    if not isinstance(opts, CompileOptions):
        raise SpecError(f"options must be an aotirt.CompileOptions, got {type(opts).__name__}")
    chosen = {k: v for k, v in (extra or {}).items() if k in _CHOSEN_FIELDS + _AOTIRT_FIELDS}
    return dataclasses.replace(opts, **chosen) if chosen else opts


def inductor_options(opts: CompileOptions | None = None, extra: Mapping[str, Any] | None = None, *,
                     target: str | None = None) -> dict:
    """The Inductor options (`inductor_configs`) for `opts`, with the user's `extra` options merged on top: the one
    place where compile options become Inductor options.

    `extra` may add any Inductor option, and add "aot_inductor.metadata" entries (string values), but may not change
    FIXED_INDUCTOR_OPTIONS or the "aotirt_*" metadata keys: SpecError says which and why. max_autotune, the
    backend lists and attention_backend given there override `opts` after the same validation as CompileOptions
    (attention_backend is no Inductor option: it decides the sdpa_kernel context of the lowering, see
    lowering.sdpa_backends, and is recorded in the metadata, not passed to Inductor). `target` (cuda|rocm)
    defaults to opts.target or the installed torch's. Platform refusals (platforms.check_options) apply.
    """
    from aotirt import platforms
    opts = effective_options(opts, extra)
    validate(opts)
    opts = opts.resolved(target)
    if opts.max_autotune_gemm_backends == AUTO_GEMM_BACKENDS:
        raise SpecError("max_autotune_gemm_backends='AUTO' is not an Inductor value: aotirt.compile resolves it "
                        "(aotirt.auto lowers TRITON, ATEN,TRITON and ATEN and keeps the fastest); pass one of those "
                        "three here")
    if auto_fields(opts):
        f = auto_fields(opts)[0]
        raise SpecError(f"{f}='AUTO' is not a value a single lowering can take: aotirt.compile resolves it "
                        f"(aotirt.auto lowers each candidate, times them on this GPU and keeps the fastest); pass "
                        f"one of the other values here")
    key = platforms.check_options(opts, target or opts.resolved_target())
    out: dict = dict(FIXED_INDUCTOR_OPTIONS)
    out.update({
        "max_autotune": opts.max_autotune,
        "max_autotune_gemm_backends": opts.max_autotune_gemm_backends,
        # Inductor's convolution lowering takes its ATen choice only when ATEN is among max_autotune_conv_backends,
        # also with max_autotune OFF, where the Triton templates are off (torch 2.11 on the H200: conv backends
        # TRITON with max_autotune OFF was a NoValidChoicesError). Without autotuning the convolutions are the ATen
        # fallback (the cuDNN shim; refused per platform in platforms.check_model).
        "max_autotune_conv_backends": opts.max_autotune_conv_backends if opts.max_autotune else "ATEN",
        "coordinate_descent_tuning": opts.cdt(),
    })
    if opts.platform == "windows":
        out.update({
            "aot_inductor.cross_target_platform": "windows",
            "aot_inductor.aoti_shim_library": WINDOWS_SHIM_LIBRARY,
            "aot_inductor.aoti_shim_library_path": opts.shim_library_path,
            "aot_inductor.precompile_headers": False,  # not supported when cross-compiling for Windows
        })
    metadata = {
        "aotirt_version": __version__,
        "aotirt_float32_matmul_precision": opts.float32_matmul_precision,
        "aotirt_platform": key,
        "aotirt_max_autotune": "ON" if opts.max_autotune else "OFF",
        "aotirt_max_autotune_gemm_backends": opts.max_autotune_gemm_backends,
        "aotirt_attention_backend": opts.attention_backend,
        "aotirt_coordinate_descent_tuning": "ON" if opts.cdt() else "OFF",
    }
    for key_, value in (extra or {}).items():
        if key_ in FIXED_INDUCTOR_OPTIONS:
            if value != FIXED_INDUCTOR_OPTIONS[key_]:
                raise SpecError(f"inductor_configs[{key_!r}]={value!r} is not allowed: the aotirt runtime needs "
                                f"{FIXED_INDUCTOR_OPTIONS[key_]!r}; remove it from inductor_configs")
        elif key_ == METADATA_KEY:
            if not isinstance(value, Mapping):
                raise SpecError(f"inductor_configs[{METADATA_KEY!r}] must be a dict of str to str, got "
                                f"{type(value).__name__}")
            for mk, mv in value.items():
                if not isinstance(mk, str) or not isinstance(mv, str):
                    raise SpecError(f"inductor_configs[{METADATA_KEY!r}] entries must be str to str, got "
                                    f"{mk!r}: {mv!r}")
                if mk in metadata:
                    raise SpecError(f"metadata key {mk!r} is set by aotirt; use another name")
            metadata.update(value)
        elif key_ in _CHOSEN_FIELDS + _AOTIRT_FIELDS:
            continue  # folded into opts above
        elif key_ in out and out[key_] != value:
            raise SpecError(f"inductor_configs[{key_!r}]={value!r} conflicts with the compile options "
                            f"({out[key_]!r}); set it through aotirt.CompileOptions")
        else:
            out[key_] = value
    out[METADATA_KEY] = metadata
    return out
