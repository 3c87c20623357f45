"""Compile options: what a user may choose, how it is validated, and how it maps to Inductor's options.

One place for the mapping (`inductor_options`). Every accepted value is validated here and a bad one raises
SpecError listing the valid values: Inductor itself silently ignores unknown GEMM backend names, so a typo would
otherwise compile something else than asked. No torch import here (the runtime side must work without torch).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from aotirt.errors import SpecError
from aotirt.version import __version__

# GEMM backends our runtime can run: TRITON (kernels embedded in the wrapper) and ATEN (extern GEMMs through our
# cuBLASLt shims aoti_torch_cuda_{mm,addmm,bmm}_out). CUTLASS/CK/CPP need kernels or shims we do not have.
VALID_GEMM_BACKENDS = ("TRITON", "ATEN")
# Conv: only Triton templates; the ATen conv fallback needs aoti_torch_cuda_convolution, which we do not provide.
VALID_CONV_BACKENDS = ("TRITON",)
VALID_FLOAT32_MATMUL_PRECISION = ("highest", "high")

# Options the runtime depends on: a package compiled otherwise cannot be loaded by it. User inductor_configs may
# repeat them with the same value but never change them.
FIXED_INDUCTOR_OPTIONS: Mapping[str, Any] = {
    "aot_inductor.link_libtorch": False,  # the wrapper .so must need only our shims, never libtorch
    "aot_inductor.embed_kernel_binary": True,  # Triton cubins inside the .so, no loose files to find at run time
    "aot_inductor.package": True,
    "aot_inductor.package_constants_in_so": False,  # weights outside the .so ...
    "aot_inductor.package_constants_on_disk_format": "binary_blob",  # ... as one blob (pickle needs torch)
}

METADATA_KEY = "aot_inductor.metadata"
# Inductor options that are also CompileOptions fields: given in inductor_configs they are validated the same way.
_CHOSEN_FIELDS = ("max_autotune", "max_autotune_gemm_backends", "max_autotune_conv_backends")


def _normalize_backends(value: Any, valid: tuple, field: str) -> str:
    if not isinstance(value, str):
        raise SpecError(f"{field} must be a comma-separated string of {list(valid)}, got {type(value).__name__} "
                        f"{value!r}")
    tokens = []
    for tok in value.split(","):
        tok = tok.strip().upper()
        if tok and tok not in tokens:
            tokens.append(tok)
    bad = [t for t in tokens if t not in valid]
    if bad or not tokens:
        what = f"unsupported value(s) {bad}" if bad else "an empty value"
        raise SpecError(f"{field}={value!r} has {what}; valid: a comma-separated subset of {list(valid)} "
                        f"(the aotirt runtime has no kernels or shims for the others)")
    return ",".join(tokens)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """User-facing compile options. Values are validated (and normalized) on construction.

    max_autotune: let Inductor benchmark kernel choices (slower compile, faster model).
    max_autotune_gemm_backends: comma-separated subset of VALID_GEMM_BACKENDS ("TRITON" by default).
    max_autotune_conv_backends: comma-separated subset of VALID_CONV_BACKENDS.
    float32_matmul_precision: "highest" (true fp32) or "high" (TF32 allowed), applied while compiling and recorded in
        the package metadata as "aotirt_float32_matmul_precision".
    """

    max_autotune: bool = True
    max_autotune_gemm_backends: str = "TRITON"
    max_autotune_conv_backends: str = "TRITON"
    float32_matmul_precision: str = "highest"

    def __post_init__(self) -> None:
        validate(self)
        # frozen: normalize through object.__setattr__ (e.g. "triton, aten" -> "TRITON,ATEN").
        object.__setattr__(self, "max_autotune_gemm_backends", _normalize_backends(
            self.max_autotune_gemm_backends, VALID_GEMM_BACKENDS, "max_autotune_gemm_backends"))
        object.__setattr__(self, "max_autotune_conv_backends", _normalize_backends(
            self.max_autotune_conv_backends, VALID_CONV_BACKENDS, "max_autotune_conv_backends"))

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
        raise SpecError(f"max_autotune must be True or False, got {opts.max_autotune!r}")
    _normalize_backends(opts.max_autotune_gemm_backends, VALID_GEMM_BACKENDS, "max_autotune_gemm_backends")
    _normalize_backends(opts.max_autotune_conv_backends, VALID_CONV_BACKENDS, "max_autotune_conv_backends")
    if opts.float32_matmul_precision not in VALID_FLOAT32_MATMUL_PRECISION:
        raise SpecError(f"float32_matmul_precision={opts.float32_matmul_precision!r} is not valid; valid: "
                        f"{list(VALID_FLOAT32_MATMUL_PRECISION)}")


def inductor_options(opts: CompileOptions | None = None, extra: Mapping[str, Any] | None = None) -> dict:
    """The Inductor options (`inductor_configs`) for `opts`, with the user's `extra` options merged on top.

    `extra` may add any Inductor option, and add "aot_inductor.metadata" entries (string values), but may not change
    FIXED_INDUCTOR_OPTIONS or the "aotirt_*" metadata keys: SpecError says which and why. max_autotune and the
    backend lists given here override `opts` after the same validation as CompileOptions.
    """
    opts = CompileOptions() if opts is None else opts
    if not isinstance(opts, CompileOptions):
        raise SpecError(f"options must be an aotirt.CompileOptions, got {type(opts).__name__}")
    validate(opts)
    out: dict = dict(FIXED_INDUCTOR_OPTIONS)
    out.update({
        "max_autotune": opts.max_autotune,
        "max_autotune_gemm_backends": opts.max_autotune_gemm_backends,
        "max_autotune_conv_backends": opts.max_autotune_conv_backends,
    })
    metadata = {
        "aotirt_version": __version__,
        "aotirt_float32_matmul_precision": opts.float32_matmul_precision,
    }
    for key, value in (extra or {}).items():
        if key in FIXED_INDUCTOR_OPTIONS:
            if value != FIXED_INDUCTOR_OPTIONS[key]:
                raise SpecError(f"inductor_configs[{key!r}]={value!r} is not allowed: the aotirt runtime needs "
                                f"{FIXED_INDUCTOR_OPTIONS[key]!r}; remove it from inductor_configs")
        elif key == METADATA_KEY:
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
        elif key in _CHOSEN_FIELDS:
            # Same validation as CompileOptions (Inductor ignores unknown backend names silently).
            out[key] = getattr(CompileOptions(**{key: value}), key)
        else:
            out[key] = value
    out[METADATA_KEY] = metadata
    return out
