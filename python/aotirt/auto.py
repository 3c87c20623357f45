"""AUTO backends: lower each candidate, time each package end to end on this GPU, keep the fastest.

GEMMs (max_autotune_gemm_backends=AUTO): TRITON, ATEN,TRITON, ATEN. Convolutions (max_autotune_conv_backends=AUTO):
TRITON, ATEN,TRITON, ATEN. Attention (attention_backend=AUTO): CUDNN,TRITON, TRITON, MATH. With several fields AUTO,
compile_auto_fields decides them one after another in that order (GEMMs, convolutions, attention): each stage lowers
its candidates with the earlier choices fixed and the later AUTO fields at their platform defaults, and reuses the
previous stage's winner as its own candidate of the same options instead of lowering it again. A stage whose ops the
model does not have (no convolution, no SDPA call in the exported graph) is skipped: its field keeps the platform
default, and the metadata says why. Every stage's choice and timings go into the final package's metadata.

Inductor's own choice between Triton templates and cuBLAS (ATEN) rests on autotune timings of single 10-25 us
kernels that swing by up to +-50% between runs. AUTO instead times whole packages on the aotirt runtime, under a
whole-model CUDA graph (aotirt.load + aotirt.capture, median over many replays; where capture fails, CUDA events
around back-to-back calls without graphs, and the metadata says so), interleaving the candidates over a few rounds
so that clock and thermal drift hit all of them alike.

    path = aotirt.auto.compile_auto(model, (x,), "model.pt2", options=aotirt.CompileOptions(max_autotune=True))
    aotirt.load(path).metadata["aotirt_gemm_backends_auto_choice"]        # e.g. "ATEN,TRITON"
    json.loads(aotirt.load(path).metadata["aotirt_gemm_backends_auto_timings_ms"])  # {"TRITON": 0.41, ...}

The winner's package is a copy of that candidate with the choice and the timings added (meta_keys(field); META_*
for the GEMM field) to the metadata JSON the runtime reads (<wrapper>_metadata.json inside the .pt2); nothing else in
it changes (the wrapper .so, which also embeds Inductor's copy of the metadata, is not recompiled).

Linux CUDA only: the ATEN candidates call the cuBLASLt GEMM shims, which the ROCm and Windows builds lack, so AUTO is
refused there exactly like ATEN (UnsupportedPlatformError); AUTO convolutions and attention too, since the
candidates are timed here with the Linux CUDA runtime. The timing and compile functions are parameters
(`time_fn`, `compile_fn`) so the selection, the recording and the refusals can be exercised without a GPU.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
from typing import Any, Callable, Mapping, Sequence

from aotirt import device as devices
from aotirt import lowering, package, platforms, specs
from aotirt.errors import Error, LoweringError, RunError, SpecError, UnsupportedPlatformError
from aotirt.progress import ensure_progress_visible, log
from aotirt.specs import METADATA_KEY, CompileOptions
from aotirt.timing import median_ms_per_call

AUTO = "AUTO"
# Candidate order is also the tie-break order (equal medians: the earlier one wins).
CANDIDATES = ("TRITON", "ATEN,TRITON", "ATEN")

METHOD_GRAPH = "cuda_graph"
GEMM_FIELD = "max_autotune_gemm_backends"
CONV_FIELD = "max_autotune_conv_backends"
ATTENTION_FIELD = "attention_backend"
FIELDS = specs.AUTO_FIELDS  # (GEMM_FIELD, CONV_FIELD, ATTENTION_FIELD): the order compile_auto_fields decides them
# Candidates per field, in tie-break order. Attention: CUDNN alone is CUDNN,TRITON for every call the cuDNN shims take
# and a refusal for the others, so it is no candidate of its own (pass candidates= to time it).
FIELD_CANDIDATES = {GEMM_FIELD: CANDIDATES, CONV_FIELD: ("TRITON", "ATEN,TRITON", "ATEN"),
                    ATTENTION_FIELD: ("CUDNN,TRITON", "TRITON", "MATH")}
_VALID_CANDIDATES = {GEMM_FIELD: CANDIDATES, CONV_FIELD: ("TRITON", "ATEN,TRITON", "ATEN"),
                     ATTENTION_FIELD: specs.VALID_ATTENTION_BACKENDS}
_META_PREFIX = {GEMM_FIELD: "aotirt_gemm_backends_auto", CONV_FIELD: "aotirt_conv_backends_auto",
                ATTENTION_FIELD: "aotirt_attention_backend_auto"}
# What Inductor needs for a field's candidates to differ: without autotuning it calls ATen GEMMs and convolutions
_NEEDS_MAX_AUTOTUNE = (GEMM_FIELD, CONV_FIELD)


def meta_keys(field: str = GEMM_FIELD) -> tuple:
    """(choice, timings, methods, errors, device, skipped) metadata keys of one field's AUTO stage."""
    p = _META_PREFIX[field]
    return (f"{p}_choice", f"{p}_timings_ms", f"{p}_methods", f"{p}_errors", f"{p}_device", f"{p}_skipped")


# The GEMM field's: "aotirt_gemm_backends_auto_choice" ("ATEN,TRITON"), _timings_ms (JSON {"TRITON": 0.41, ...,
# "ATEN": null}), _methods (JSON {"TRITON": "cuda_graph", ...}), _errors (JSON {"ATEN": "LoweringError: ..."}; only
# when any failed), _device (the GPU the timings were taken on).
META_CHOICE, META_TIMINGS, META_METHODS, META_ERRORS, META_DEVICE, _ = meta_keys(GEMM_FIELD)
META_KEYS = (META_CHOICE, META_TIMINGS, META_METHODS, META_ERRORS, META_DEVICE)
ALL_META_KEYS = tuple(k for f in FIELDS for k in meta_keys(f))


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One timing of one package: milliseconds per call and how they were taken."""

    ms: float
    method: str = METHOD_GRAPH   # METHOD_GRAPH, or "events (CUDA graph capture failed: ...)"
    device: str = ""             # GPU name, when known


@dataclasses.dataclass
class AutoResult:
    """What AUTO decided: the chosen backends, per-candidate medians (None where a candidate failed), how each was
    timed, errors, and every round's raw numbers."""

    choice: str
    timings_ms: dict
    methods: dict
    errors: dict
    device: str = ""
    rounds_ms: dict = dataclasses.field(default_factory=dict)
    candidate_paths: dict = dataclasses.field(default_factory=dict)
    field: str = GEMM_FIELD

    def metadata(self) -> dict:
        """The string metadata entries recorded in the chosen package (meta_keys(self.field))."""
        choice, timings, methods, errors, device, _ = meta_keys(self.field)
        md = {
            choice: self.choice,
            timings: json.dumps({c: _round(v) for c, v in self.timings_ms.items()}),
            methods: json.dumps(self.methods),
        }
        if self.errors:
            md[errors] = json.dumps(self.errors)
        if self.device:
            md[device] = self.device
        return md


def _round(v):
    return None if v is None else round(float(v), 6)


# ---------------------------------------------------------------------------------------------- request + refusal

def is_auto(value: Any) -> bool:
    """True for the spec value "AUTO" (any case, surrounding spaces allowed)."""
    return isinstance(value, str) and value.strip().upper() == AUTO


def requested(options: Any = None, inductor_configs: Mapping[str, Any] | None = None, field: str | None = None) -> bool:
    """True when AUTO is asked for `field` (None: any of FIELDS), through CompileOptions or inductor_configs."""
    fields = FIELDS if field is None else (field,)
    return any(is_auto(getattr(options, f, None)) or is_auto((inductor_configs or {}).get(f)) for f in fields)


def check_supported(platform: str | None = "linux", target: str | None = "cuda",
                    host_platform: str | None = None, field: str = GEMM_FIELD) -> None:
    """Refuses AUTO for ROCm, for Windows and off a Linux host (UnsupportedPlatformError, like ATEN there, saying what
    to use instead); unknown platform/target values are a SpecError.

    platform: the package's target OS ("linux" | "windows"); target: "cuda" | "rocm"; host_platform: sys.platform of
    this machine (AUTO runs the candidates here, on the Linux runtime); field: which AUTO (FIELDS). The convolution
    and attention fields are Linux CUDA only too: their candidates are timed here with the Linux CUDA runtime, and
    two of each call cuDNN shims the other builds lack.
    """
    if field not in FIELDS:
        raise SpecError(f"AUTO decides one of {list(FIELDS)}, not {field!r}")
    platform = (platform or "linux").strip().lower()
    target = (target or "cuda").strip().lower()
    host = sys.platform if host_platform is None else host_platform
    if target not in ("cuda", "rocm"):
        raise SpecError(f"target={target!r} is not valid for {field}='AUTO'; valid: 'cuda'")
    if target == "cuda" and platform not in ("linux", "windows"):
        raise SpecError(f"platform={platform!r} is not valid for {field}='AUTO'; valid: 'linux'")
    # ROCm is a Linux build: its refusal (no GEMM shims) comes before the platform's.
    key = platforms.platform_key("linux" if target == "rocm" else platform, target)
    where = "ROCm" if target == "rocm" else f"platform={platform!r}"
    if field == GEMM_FIELD:
        missing = platforms.gemm_shims_missing(key)
        if missing:
            raise UnsupportedPlatformError(
                f"{GEMM_FIELD}='AUTO' is not available for {where}: it compares packages that call the cuBLASLt GEMM "
                f"shims (ATEN, ATEN,TRITON), which the {platforms.PLATFORM_NAMES[key]} build does not export "
                f"({', '.join(missing)}, per shims/shim_manifest.tsv); use {GEMM_FIELD}='TRITON'")
    elif key != "linux_cuda":
        instead = ("attention_backend='TRITON' (every platform) or 'MATH'" if field == ATTENTION_FIELD
                   else f"{field}='TRITON'")
        raise UnsupportedPlatformError(
            f"{field}='AUTO' is not available for {where}: it times candidate packages on this machine with the Linux "
            f"CUDA runtime, and two of them call cuDNN shims the {platforms.PLATFORM_NAMES[key]} build does not "
            f"export; use {instead}")
    if not host.startswith("linux"):
        raise UnsupportedPlatformError(
            f"{field}='AUTO' times the candidate packages on this machine's GPU with the Linux runtime, but this "
            f"host is {host!r}; run it on a Linux machine with an NVIDIA GPU, or choose "
            f"{' or '.join(', '.join(FIELD_CANDIDATES[field]).rsplit(', ', 1))} yourself")


# ------------------------------------------------------------------------------------------------------ timing

class CudaGraphTimer:
    """The default `time_fn`: loads each package once (aotirt.load), captures it (aotirt.capture) and times replays
    of the whole model, input copy included, between CUDA events: `iters` calls per sample, median of `repeats`.
    Where capture fails it times plain runner calls instead and says so in Measurement.method."""

    def __init__(self, iters: int = 50, repeats: int = 5, warmup: int = 3, use_graphs: bool = True):
        self.iters, self.repeats, self.warmup, self.use_graphs = iters, repeats, warmup, use_graphs
        self._entries: dict = {}

    def __call__(self, path: str, example_inputs: Sequence[Any], device_index: int) -> Measurement:
        import torch

        from aotirt.graphs import capture
        from aotirt.runtime import load

        with torch.cuda.device(device_index):
            entry = self._entries.get(path)
            if entry is None:
                flat, _ = torch.utils._pytree.tree_flatten(list(example_inputs))
                runner = load(path, device=device_index)
                fn, method, graphed = None, METHOD_GRAPH, None
                if self.use_graphs:
                    try:
                        graphed = capture(runner, *flat, warmup=self.warmup)
                        fn = lambda: graphed.run_list(flat)  # noqa: E731
                    except RunError as e:
                        method = f"events (CUDA graph capture failed: {str(e)[:300]})"
                        log.warning("AUTO: %s cannot be captured into a CUDA graph, timing it without graphs: %s",
                                    os.path.basename(path), e)
                else:
                    method = "events (graphs off)"
                if fn is None:
                    fn = lambda: runner.run_list(flat)  # noqa: E731
                entry = self._entries[path] = (runner, graphed, fn, method)
            _, _, fn, method = entry
            ms = median_ms_per_call(torch, fn, self.iters, self.repeats, self.warmup)
            return Measurement(ms=ms, method=method, device=torch.cuda.get_device_name(device_index))

    def close(self) -> None:
        """Drops the loaded packages and their graphs (GPU memory)."""
        self._entries.clear()
        try:
            import gc

            import torch
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 (best effort)
            pass


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:500]}"


def select(candidate_paths: Mapping[str, str | None], example_inputs: Sequence[Any], *, device_index: int = 0,
           time_fn: Callable[[str, Sequence[Any], int], Measurement] | None = None, rounds: int = 3,
           errors: Mapping[str, str] | None = None, use_graphs: bool = True, field: str = GEMM_FIELD) -> AutoResult:
    """Times each candidate package (`rounds` interleaved rounds, order rotated each round; a candidate's timing is
    the median of its rounds) and returns the fastest. `candidate_paths` maps backends -> package path, or None for
    a candidate that could not be built (its reason in `errors`). A candidate whose timing raises is dropped with
    its error. Raises LoweringError when no candidate could be timed. Without time_fn: CudaGraphTimer, replaying
    whole-model CUDA graphs unless use_graphs is False (auto_timing="eager")."""
    if rounds < 1:
        raise SpecError(f"rounds must be >= 1, got {rounds!r}")
    own_timer = time_fn is None
    timer = CudaGraphTimer(use_graphs=use_graphs) if own_timer else time_fn
    errs = dict(errors or {})
    names = [c for c, p in candidate_paths.items() if p is not None and c not in errs]
    samples: dict = {c: [] for c in names}
    methods: dict = {}
    device = ""
    try:
        for r in range(rounds):
            k = r % len(names) if names else 0
            for cand in names[k:] + names[:k]:
                if cand in errs:
                    continue
                try:
                    m = timer(candidate_paths[cand], example_inputs, device_index)
                    ms = float(m.ms)
                    if not math.isfinite(ms) or ms <= 0:
                        raise RunError(f"timing gave {m.ms!r} ms")
                except Exception as e:  # noqa: BLE001 (a candidate that cannot run is dropped, not fatal)
                    errs[cand] = _err(e)
                    log.warning("AUTO: %s could not be timed: %s", cand, errs[cand])
                    continue
                samples[cand].append(ms)
                methods.setdefault(cand, m.method)
                device = device or getattr(m, "device", "") or ""
    finally:
        if own_timer:
            timer.close()
    timings = {c: (statistics.median(samples[c]) if c not in errs and samples.get(c) else None)
               for c in candidate_paths}
    ok = [c for c in candidate_paths if timings[c] is not None]
    if not ok:
        raise LoweringError("AUTO: no candidate could be built and timed: " +
                            "; ".join(f"{c}: {errs.get(c, 'no package')}" for c in candidate_paths))
    choice = min(ok, key=lambda c: (timings[c], list(candidate_paths).index(c)))
    kinds = set(methods[c] for c in ok)
    if kinds != {METHOD_GRAPH}:
        log.warning("AUTO: timed without CUDA graphs for %s (see metadata %s)",
                    [c for c in ok if methods[c] != METHOD_GRAPH], META_METHODS)
    log.info("AUTO %s on %s: %s -> %s", field, device or "this GPU",
             ", ".join(f"{c} {timings[c]:.4f} ms" if timings[c] is not None else f"{c} failed"
                       for c in candidate_paths), choice)
    return AutoResult(choice=choice, timings_ms=timings, methods={c: methods[c] for c in ok},
                      errors={c: errs[c] for c in candidate_paths if c in errs}, device=device,
                      rounds_ms={c: list(v) for c, v in samples.items()}, candidate_paths=dict(candidate_paths),
                      field=field)


# ----------------------------------------------------------------------------------------------------- compile

def _candidate_options(opts: Any, backends: str, field: str = GEMM_FIELD) -> Any:
    # auto_timing belongs to AUTO, not to the candidates (each is a plain lowering). Every other field is kept:
    # the other backend fields are the caller's (or an earlier stage's) choice for all candidates.
    reset = {"auto_timing": "graphs"} if any(f.name == "auto_timing" for f in dataclasses.fields(opts)) else {}
    return dataclasses.replace(opts, **{field: backends, **reset})


def _check_max_autotune(opts: Any, field: str) -> None:
    if field in _NEEDS_MAX_AUTOTUNE and not getattr(opts, "max_autotune", True):
        what = "GEMMs" if field == GEMM_FIELD else "convolutions"
        raise SpecError(f"{field}='AUTO' needs max_autotune=True: without autotuning Inductor calls ATen {what} "
                        f"whatever the backends say, so the candidates would be one package")


def _with_fields(opts: Any, values: Mapping[str, str], auto_field: str | None = None) -> Any:
    """opts with the backend fields `values`, and `auto_field` AUTO (None: no field AUTO, auto_timing reset, a
    plain lowering's options)."""
    extra = {auto_field: AUTO} if auto_field else (
        {"auto_timing": "graphs"} if any(f.name == "auto_timing" for f in dataclasses.fields(opts)) else {})
    return dataclasses.replace(opts, **{**values, **extra})


def _normalize_candidate(field: str, c: Any) -> str:
    norm = ",".join(sorted({t.strip().upper() for t in str(c).split(",") if t.strip()}))  # a set, as the specs
    if norm not in _VALID_CANDIDATES[field]:
        raise SpecError(f"AUTO candidate {c!r} is not valid for {field}; valid: {list(_VALID_CANDIDATES[field])}")
    return norm


def compile_auto(model_or_exported_program: Any, example_inputs: Sequence[Any], package_path: str | None = None, *,
                 device: str = "cuda", options: Any = None, inductor_configs: Mapping[str, Any] | None = None,
                 dynamic_shapes: Any = None, platform: str | None = None, target: str | None = None,
                 candidates: Sequence[str] | None = None, rounds: int = 3,
                 time_fn: Callable[[str, Sequence[Any], int], Measurement] | None = None,
                 compile_fn: Callable[..., str] | None = None, work_dir: str | None = None,
                 result: list | None = None, field: str = GEMM_FIELD,
                 prebuilt: Mapping[str, str] | None = None) -> str:
    """aotirt.compile with `field` (default max_autotune_gemm_backends) AUTO: lowers each candidate (default
    FIELD_CANDIDATES[field]), times them, keeps the fastest. `prebuilt` maps candidates to packages already lowered
    with exactly these options (compile_auto_fields: the previous stage's winner); those are timed, not lowered.

    Same arguments as aotirt.compile (options: an aotirt.CompileOptions; its GEMM backends field is replaced per
    candidate, and may already say "AUTO"); platform/target default to the options' fields of those names when they
    exist, else "linux" and the torch build's target. compile_fn (default aotirt.lowering.compile) is called per
    candidate with the same signature as aotirt.compile and returns the package path; time_fn(path, example_inputs,
    device_index) -> Measurement (default: CudaGraphTimer, with CUDA graphs unless options.auto_timing is "eager").
    work_dir holds the candidates (default: a temporary
    folder, removed afterwards). `result`, if a list, receives the AutoResult. Returns the chosen package's path
    (package_path, or a path in work_dir when package_path is None), with the choice and timings in its metadata.
    """
    opts = CompileOptions() if options is None else options
    if platform is None:
        platform = getattr(opts, "platform", None) or "linux"
    if target is None:
        target = getattr(opts, "target", None) or platforms.detect_target()
    if field not in FIELDS:
        raise SpecError(f"AUTO decides one of {list(FIELDS)}, not {field!r}")
    check_supported(platform, target, field=field)
    _check_max_autotune(opts, field)
    cands = []
    for c in (FIELD_CANDIDATES[field] if candidates is None else candidates):
        norm = _normalize_candidate(field, c)
        if norm not in cands:
            cands.append(norm)
    if not cands:
        raise SpecError(f"AUTO needs at least one candidate of {list(FIELD_CANDIDATES[field])}")
    configs = dict(inductor_configs or {})
    if field in configs:
        if not is_auto(configs[field]):
            raise SpecError(f"inductor_configs[{field!r}]={configs[field]!r} contradicts AUTO; remove it")
        del configs[field]
    clash = sorted(set((configs.get(METADATA_KEY) or {})) & set(ALL_META_KEYS))
    if clash:
        raise SpecError(f"metadata key(s) {clash} are written by AUTO; use other names")
    package_path = package.check_path(package_path)
    try:
        import torch
    except ImportError:
        torch = None
    dev_index = devices.device_index(device, torch)
    if compile_fn is None:
        compile_fn = lowering.compile
    if rounds < 1:
        raise SpecError(f"rounds must be >= 1, got {rounds!r}")

    ensure_progress_visible()
    own_dir = work_dir is None
    wdir = tempfile.mkdtemp(prefix="aotirt_auto_") if own_dir else os.fspath(work_dir)
    os.makedirs(wdir, exist_ok=True)
    paths: dict = {}
    errors: dict = {}
    failures: list = []
    try:
        for i, cand in enumerate(cands):
            if prebuilt and prebuilt.get(cand):
                paths[cand] = prebuilt[cand]
                log.info("AUTO: candidate %d/%d: %s=%s is already lowered (%s)", i + 1, len(cands), field, cand,
                         paths[cand])
                continue
            log.info("AUTO: lowering candidate %d/%d: %s=%s", i + 1, len(cands), field, cand)
            target_path = os.path.join(wdir, "auto_" + cand.replace(",", "_").lower() + ".pt2")
            try:
                paths[cand] = compile_fn(model_or_exported_program, example_inputs, target_path, device=device,
                                         options=_candidate_options(opts, cand, field),
                                         inductor_configs=configs or None, dynamic_shapes=dynamic_shapes)
            except Exception as e:  # noqa: BLE001 (one candidate failing to lower does not stop AUTO)
                paths[cand] = None
                errors[cand] = _err(e)
                failures.append(e)
                log.warning("AUTO: candidate %s failed to lower: %s", cand, errors[cand])
        if failures and len(failures) == len(cands) and (
                isinstance(failures[0], SpecError) or
                (isinstance(failures[0], Error) and len({str(f) for f in failures}) == 1)):
            # Every candidate failed the same way (no CUDA here, options wrong for all): that error, as raised.
            raise failures[0]
        res = select(paths, example_inputs, device_index=dev_index, time_fn=time_fn, rounds=rounds, errors=errors,
                     use_graphs=getattr(opts, "auto_timing", "graphs") != "eager", field=field)
        out = package_path if package_path is not None else os.path.join(wdir, "auto.pt2")
        if package_path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        tmp = f"{out}.copy{os.getpid()}"
        shutil.copyfile(paths[res.choice], tmp)
        try:
            package.write_metadata(tmp, res.metadata())
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        if isinstance(result, list):
            result.append(res)
        return os.path.abspath(out)
    finally:
        if own_dir:
            _clean_own_dir(wdir, package_path)


def _clean_own_dir(wdir: str, package_path: str | None) -> None:
    """Empties the work folder AUTO made for itself, keeping only auto.pt2 when that is the result (no package_path
    given), and removes the folder when it is not. Only files made inside it: candidates a compile_fn placed
    elsewhere stay."""
    for name in os.listdir(wdir):
        p = os.path.join(wdir, name)
        if package_path is None and name == "auto.pt2":
            continue
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.remove(p)
    if package_path is not None:
        shutil.rmtree(wdir, ignore_errors=True)


# ------------------------------------------------------------------------------------------- several AUTO fields

def model_features(model_or_exported_program: Any, example_inputs: Sequence[Any], dynamic_shapes: Any = None):
    """platforms.ModelFeatures of the model (an ExportedProgram's graph, else one torch.export of the module), or None
    where it cannot be exported here (no stage is then skipped: the candidates' lowering reports the problem)."""
    try:
        import torch
        if isinstance(model_or_exported_program, torch.export.ExportedProgram):
            ep = model_or_exported_program
        elif isinstance(model_or_exported_program, torch.nn.Module):
            inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
            ep = torch.export.export(model_or_exported_program, inputs, dynamic_shapes=dynamic_shapes)
        else:
            return None
        return platforms.model_features(ep.graph)
    except Exception as e:  # noqa: BLE001 (no features: no stage skipped)
        log.info("AUTO: could not read the model's ops ahead of the stages (%s); no stage is skipped", _err(e))
        return None


def _skip_reason(field: str, features: Any) -> str:
    if features is None:
        return ""
    if field == CONV_FIELD and not features.convolutions:
        return "the model has no convolution"
    if field == ATTENTION_FIELD and not features.attention:
        return "the model has no scaled_dot_product_attention call"
    return ""


def compile_auto_fields(model_or_exported_program: Any, example_inputs: Sequence[Any], package_path: str | None = None,
                        *, device: str = "cuda", options: Any = None,
                        inductor_configs: Mapping[str, Any] | None = None, dynamic_shapes: Any = None,
                        rounds: int = 3, time_fn: Callable[[str, Sequence[Any], int], Measurement] | None = None,
                        compile_fn: Callable[..., str] | None = None, work_dir: str | None = None,
                        result: list | None = None, features_fn: Callable[..., Any] | None = None) -> str:
    """aotirt.compile with any of FIELDS set to AUTO: one compile_auto stage per AUTO field, in FIELDS order, each
    with the earlier stages' choices fixed and the later AUTO fields at their platform defaults (linux_cuda's). The
    previous stage's winner is this stage's candidate of the same options (timed again, not lowered again). A
    convolution or attention stage is skipped where the model has no such op (features_fn(model, example_inputs,
    dynamic_shapes) -> ModelFeatures | None; default model_features): the field takes the default, and
    meta_keys(field)'s "skipped" entry says why. Every refusal (platform, host, max_autotune) comes before any compile.
    `result`, if a list, receives each stage's AutoResult. Returns the final package's path, whose metadata holds
    every stage's entries."""
    opts = CompileOptions() if options is None else options
    fields = specs.auto_fields(opts)
    configs = dict(inductor_configs or {})
    fields = tuple(f for f in FIELDS if f in fields or is_auto(configs.get(f)))
    if not fields:
        raise SpecError(f"compile_auto_fields needs one of {list(FIELDS)} set to 'AUTO'")
    if fields == (GEMM_FIELD,):  # one stage: compile_auto itself, with the caller's options and configs
        return compile_auto(model_or_exported_program, example_inputs, package_path, device=device, options=options,
                            inductor_configs=inductor_configs, dynamic_shapes=dynamic_shapes, rounds=rounds,
                            time_fn=time_fn, compile_fn=compile_fn, work_dir=work_dir, result=result)
    for f in fields:  # the configs' AUTO is the options' AUTO: one place
        if is_auto(configs.get(f)):
            del configs[f]
    opts = dataclasses.replace(opts, **{f: AUTO for f in fields})
    platform = getattr(opts, "platform", None) or "linux"
    target = getattr(opts, "target", None) or platforms.detect_target()
    for f in fields:
        check_supported(platform, target, field=f)
        _check_max_autotune(opts, f)
    package_path = package.check_path(package_path)
    defaults = platforms.platform_defaults(platforms.platform_key(platform, target))
    # the fields left None: explicit for every candidate (what the lowering would resolve them to anyway)
    opts = dataclasses.replace(opts, **{f: defaults[f] for f in FIELDS if getattr(opts, f, None) is None})
    features = (features_fn or model_features)(model_or_exported_program, example_inputs, dynamic_shapes) \
        if any(f != GEMM_FIELD for f in fields) else None
    chosen = {f: defaults[f] for f in fields}  # the AUTO fields' values so far: defaults, then each stage's choice
    skipped = {f: _skip_reason(f, features) for f in fields}
    stages = [f for f in fields if not skipped[f]]
    own_dir = work_dir is None
    wdir = tempfile.mkdtemp(prefix="aotirt_auto_") if own_dir else os.fspath(work_dir)
    os.makedirs(wdir, exist_ok=True)
    metadata: dict = {}
    for f in fields:
        if skipped[f]:
            log.info("AUTO: %s stage skipped (%s): %s=%s", f, skipped[f], f, defaults[f])
            metadata[meta_keys(f)[0]] = defaults[f]
            metadata[meta_keys(f)[5]] = skipped[f]
    try:
        if not stages:  # nothing to compare: one plain lowering with the defaults
            fn = compile_fn or lowering.compile
            out = fn(model_or_exported_program, example_inputs,
                     package_path if package_path is not None else os.path.join(wdir, "auto.pt2"), device=device,
                     options=_with_fields(opts, chosen), inductor_configs=configs or None,
                     dynamic_shapes=dynamic_shapes)
        else:
            out, prev_path = None, None
            for i, f in enumerate(stages):
                last = i == len(stages) - 1
                stage_out = (package_path if package_path is not None else os.path.join(wdir, "auto.pt2")) \
                    if last else os.path.join(wdir, f"stage_{f}.pt2")
                stage_dir = os.path.join(wdir, f"candidates_{f}")
                res: list = []
                # the previous winner was lowered with exactly `chosen`, i.e. this field at its current value
                prebuilt = {chosen[f]: prev_path} if prev_path else None
                out = compile_auto(model_or_exported_program, example_inputs, stage_out, device=device,
                                   options=_with_fields(opts, chosen, f), inductor_configs=configs or None,
                                   dynamic_shapes=dynamic_shapes, rounds=rounds, time_fn=time_fn,
                                   compile_fn=compile_fn, work_dir=stage_dir, result=res, field=f, prebuilt=prebuilt,
                                   platform=platform, target=target)
                chosen[f] = res[0].choice
                metadata.update(res[0].metadata())
                if isinstance(result, list):
                    result.append(res[0])
                prev_path = out
        package.write_metadata(out, metadata)
        return os.path.abspath(out)
    finally:
        if own_dir:
            _clean_own_dir(wdir, package_path)
