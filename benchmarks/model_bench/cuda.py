"""The real backend of the run loop: builds each model, compiles variants (with a package cache), times them with and
without CUDA graphs and checks them against the float32 model."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import statistics
import time
from typing import Any, Callable

from aotirt.timing import events_ms

import torch
from torch import nn

from model_bench import models as bench_models_defs
from model_bench import variants as bench_variants
from model_bench.models import build, config, example_inputs
from model_bench.variants import (AUTO_VARIANTS, FIXED, TORCH_COMPILE, TORCH_COMPILE_DEFAULT, TORCH_COMPILES,
                                 lowering)

def _flat_tensors(out: Any) -> list:
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def time_ms(fn: Callable[[], Any], device: str, *, quick: bool = False, iters: int | None = None,
            repeats: int | None = None, warmup: int = 5) -> dict:
    """Per-call ms of fn: CUDA events around `iters` back-to-back calls (host clock on CPU), median of `repeats`.
    iters=None sizes a sample to ~100 ms (30 ms with quick), between 3 and 500 calls."""
    cuda = device.startswith("cuda")
    repeats = repeats or (3 if quick else 7)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def sample(n: int) -> float:
        if cuda:
            return events_ms(torch, fn, n)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e3 / n

    for _ in range(warmup):
        fn()
    sync()
    if iters is None:
        est = sample(3)
        iters = int(max(3, min(500, (30.0 if quick else 100.0) / max(est, 1e-3))))
    vals = [sample(iters) for _ in range(repeats)]
    return {"ms": statistics.median(vals), "iters": iters, "repeats": repeats, "min_ms": min(vals),
            "max_ms": max(vals)}


def profile_calls(fn: Callable[[], Any], calls: int = 5, top: int = 8) -> dict:
    """GPU kernels per call, GPU busy ms per call, the top kernels by GPU time, and the host's time in CUDA API calls
    (torch.profiler, CUPTI)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per: dict = {}
    api: dict = {}  # host time in CUDA runtime/driver calls (e.g. cudaGraphLaunch of a replay)
    for ev in prof.events():
        if getattr(ev, "device_type", None) != DeviceType.CUDA:
            if ev.name.startswith("cu"):  # cudaGraphLaunch, cuLaunchKernel, cudnn*/cublas* calls
                n, tot = api.get(ev.name, (0, 0.0))
                api[ev.name] = (n + 1, tot + ev.time_range.elapsed_us())
            continue
        us = ev.time_range.elapsed_us()
        n, tot = per.get(ev.name, (0, 0.0))
        per[ev.name] = (n + 1, tot + us)
    busy = sum(t for _, t in per.values())
    ranked = sorted(per.items(), key=lambda kv: -kv[1][1])[:top]
    return {"kernels_per_call": sum(n for n, _ in per.values()) / calls, "gpu_busy_ms_per_call": busy / calls / 1e3,
            "top_kernels": [{"name": k[:100], "per_call": n / calls, "ms_per_call": t / calls / 1e3}
                            for k, (n, t) in ranked],
            "host_api": [{"name": k[:60], "per_call": n / calls, "ms_per_call": t / calls / 1e3}
                         for k, (n, t) in sorted(api.items(), key=lambda kv: -kv[1][1])[:6]]}


def gemm_delta(before: dict | None, after: dict | None) -> dict | None:
    """GEMM shim counters of one call (aotirt.gemm_stats() around it): calls, and how many were replayed from graphs,
    newly captured, or tuned. None without counters (no GEMM shims)."""
    if not before or not after:
        return None
    keys = ("calls", "graph_replays", "graph_captures", "tuned", "graph_evictions")
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in keys}


# -------------------------------------------------------------------------------------------- CUDA backend

@dataclasses.dataclass
class ModelCtx:
    name: str
    model: nn.Module        # bf16 (or the run's dtype) on the device
    inputs: tuple
    ref: torch.Tensor        # float32 reference output
    key: str                 # cache key
    cache_dir: str
    info: dict


@dataclasses.dataclass
class Handle:
    variant: str
    call: Callable[..., Any]                 # call(*inputs) -> output
    kind: str                                # "eager" | "torch_compile" | "aotirt"
    context: Callable[[], Any] = contextlib.nullcontext
    info: dict = dataclasses.field(default_factory=dict)
    runner: Any = None


def _source_hash() -> str:
    # Part of the package cache key: what gets compiled is defined in models.py, how in this file and variants.py.
    h = hashlib.sha256()
    try:
        for path in (bench_models_defs.__file__, bench_variants.__file__, __file__):
            with open(path, "rb") as f:
                h.update(f.read())
    except OSError:
        return "unknown"
    return h.hexdigest()[:16]


def _sdpa_math():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.MATH])


class CudaBench:
    """Builds, compiles (with a package cache), times and checks each variant on one device."""

    def __init__(self, args: argparse.Namespace, say: Callable[[str], None]):
        self.args, self.say = args, say
        self.device = args.device
        self.dtype = torch.bfloat16

    def describe(self) -> dict:
        d = {"torch": torch.__version__, "device": self.device}
        if self.device.startswith("cuda") and torch.cuda.is_available():
            idx = torch.device(self.device).index or 0
            p = torch.cuda.get_device_properties(idx)
            d.update(gpu=torch.cuda.get_device_name(idx), sms=p.multi_processor_count, cuda=torch.version.cuda)
        try:
            import triton
            d["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            pass
        return d

    # -- per model
    def prepare(self, name: str) -> ModelCtx:
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device (use --device cpu for an eager-only smoke run)")
        import aotirt
        base = build(name, tiny=self.args.tiny, seed=self.args.seed)
        inputs32 = example_inputs(name, base, dtype=torch.float32, device=self.device, seed=self.args.seed)
        tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        try:
            with torch.no_grad():
                ref32 = base.to(self.device)
                ref = _flat_tensors(ref32(*inputs32))[0].float().clone()
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        model = base.to(self.device, self.dtype)  # same weights, now bf16 (the float32 copy is gone)
        inputs = tuple(x.to(self.dtype) for x in inputs32)
        cfg = config(name, self.args.tiny)
        key_src = json.dumps({"model": name, "cfg": cfg, "seed": self.args.seed, "dtype": str(self.dtype),
                              "torch": torch.__version__, "aotirt": aotirt.__version__, "src": _source_hash(),
                              "device": self.describe().get("gpu", self.device)}, sort_keys=True)
        key = f"{name}-{hashlib.sha256(key_src.encode()).hexdigest()[:12]}"
        cache_dir = os.path.join(self.args.cache_dir, key)
        os.makedirs(cache_dir, exist_ok=True)
        params = sum(p.numel() for p in model.parameters())
        info = {"config": cfg, "params_m": round(params / 1e6, 2), "inputs": [list(x.shape) for x in inputs],
                "output": list(ref.shape)}
        self.say(f"{name}: {info['params_m']} M params, inputs {info['inputs']} -> {info['output']}")
        return ModelCtx(name, model, inputs, ref, key, cache_dir, info)

    def release(self, ctx: ModelCtx) -> None:
        import gc
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass
        del ctx.model, ctx.inputs, ctx.ref
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- packages
    @staticmethod
    def _options(low: tuple):
        """The aotirt.CompileOptions of a lowering (GEMM backends, attention_backend, conv backends)."""
        import aotirt
        gemm, attention, conv = low
        return aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends=gemm, attention_backend=attention,
                                     max_autotune_conv_backends=conv)

    def _package_path(self, ctx: ModelCtx, low: tuple) -> str:
        from aotirt import specs
        opts = specs.inductor_options(self._options(low))
        h = hashlib.sha256(repr(sorted((k, repr(v)) for k, v in opts.items())).encode()).hexdigest()[:8]
        gemm, attention, conv = low
        name = gemm.replace(",", "_").lower()
        if (attention, conv) != ("MATH", "TRITON"):  # today's defaults keep the names of earlier caches
            name += f"-attn_{attention.lower()}-conv_{conv.replace(',', '_').lower()}"
        return os.path.join(ctx.cache_dir, f"{name}-{h}.pt2")

    def package(self, ctx: ModelCtx, low: tuple) -> tuple:
        """(path, compile seconds or 0.0 when reused from the cache) of the lowering `low` (variants.lowering)."""
        import aotirt
        path = self._package_path(ctx, low)
        if os.path.exists(path):
            self.say(f"{ctx.name}: reusing {os.path.basename(path)} from the cache")
            return path, 0.0
        tmp = f"{path[:-4]}.tmp{os.getpid()}.pt2"
        t0 = time.monotonic()
        self.say(f"{ctx.name}: compiling {'/'.join(low)} (max_autotune) ...")
        try:
            aotirt.compile(ctx.model, ctx.inputs, tmp, device=self.device, options=self._options(low))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        dt = time.monotonic() - t0
        self.say(f"{ctx.name}: compiled {'/'.join(low)} in {dt:.0f} s")
        return path, dt

    def needs_compile(self, ctx: ModelCtx, variant: str) -> bool:
        if variant == "eager":
            return False
        if variant in TORCH_COMPILES:
            return True  # in-process compile (Inductor's own caches may make it quick)
        return any(not os.path.exists(self._package_path(ctx, low)) for low in self._lowerings(variant))

    @staticmethod
    def _lowerings(variant: str) -> list:
        """The packages an aotirt variant needs (AUTO: its three candidates)."""
        if variant in AUTO_VARIANTS:
            return [lowering(v) for v in FIXED]
        low = lowering(variant)
        if low is None:
            raise ValueError(f"unknown variant {variant!r}")
        return [low]

    def precompile(self, ctx: ModelCtx, variant: str) -> float:
        """Compiles what `variant` needs into the caches (no timing); returns the seconds spent."""
        t0 = time.monotonic()
        if variant in TORCH_COMPILES:
            h = self.setup(ctx, variant)  # in-process; fills Inductor's on-disk caches for the measuring run
            del h
            torch._dynamo.reset()
        elif variant != "eager":
            for low in self._lowerings(variant):
                self.package(ctx, low)
        return time.monotonic() - t0

    # -- variants
    def _device_used(self) -> int | None:
        """Device-wide used bytes (cudaMemGetInfo), after torch's cache is emptied; None off CUDA."""
        if not self.device.startswith("cuda"):
            return None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info(self._index())
        return total - free

    def setup(self, ctx: ModelCtx, variant: str) -> Handle:
        """The variant ready to call, with the device memory in use before it (for its rows' device_mb)."""
        base = self._device_used()
        alloc = None
        if base is not None:
            torch.cuda.reset_peak_memory_stats(self._index())
            alloc = torch.cuda.memory_allocated(self._index())
        h = self._setup(ctx, variant)
        h.info["_base_used"], h.info["_base_alloc"] = base, alloc
        return h

    def _memory(self, ctx: ModelCtx, h: Handle) -> dict:
        """What the variant holds on the device after its calls: device_mb = device-wide used memory now minus before
        its setup (ours: the package's own copy of the weights, the runtime's pool, kernel images, graphs; torch's
        variants share the eager model's weights, so theirs is the caching allocator's growth after empty_cache, plus
        compiled kernels' images); aotirt rows also give it less the weights (device_mb_less_weights), torch rows
        torch's peak allocated above the inputs (torch_peak_mb)."""
        base = h.info.get("_base_used")
        if base is None:
            return {}
        torch.cuda.synchronize()
        out = {"device_mb": round((self._device_used() - base) / 2**20, 1)}
        if h.kind == "aotirt":
            weights = sum(t.numel() * t.element_size() for t in list(ctx.model.parameters())
                          + list(ctx.model.buffers()))
            out["device_mb_less_weights"] = round(out["device_mb"] - weights / 2**20, 1)
        else:
            out["torch_peak_mb"] = round((torch.cuda.max_memory_allocated(self._index()) - h.info["_base_alloc"])
                                         / 2**20, 1)
        return out

    def _setup(self, ctx: ModelCtx, variant: str) -> Handle:
        import aotirt
        if variant == "eager":
            return Handle(variant, ctx.model, "eager")
        if variant in TORCH_COMPILES:
            if variant == TORCH_COMPILE_DEFAULT:
                # What a PyTorch user runs for speed: max_autotune with every other choice torch's own (GEMM backends
                # ATEN,TRITON, SDPA dispatched to flash/cuDNN, convolutions on cuDNN or Triton); our CUDA graph
                # around it in the graphs rows (mode="max-autotune"'s cudagraph trees would nest inside it).
                opts, context, what = {"max_autotune": True}, contextlib.nullcontext, "torch defaults"
            else:
                from aotirt import specs
                opts = specs.inductor_options(specs.CompileOptions(
                    max_autotune=True, max_autotune_gemm_backends=TORCH_COMPILE[variant]))
                opts = {k: v for k, v in opts.items() if not k.startswith("aot_inductor.")}
                context, what = _sdpa_math, TORCH_COMPILE[variant]
            torch._dynamo.reset()  # a fresh compile per variant (same module object, other options)
            compiled = torch.compile(ctx.model, options=opts, fullgraph=True)
            t0 = time.monotonic()
            self.say(f"{ctx.name}: torch.compile {what} (max_autotune) ...")
            with torch.no_grad(), context():
                compiled(*ctx.inputs)
            dt = time.monotonic() - t0
            self.say(f"{ctx.name}: torch.compile done in {dt:.0f} s")
            return Handle(variant, compiled, "torch_compile", context, {"compile_s": round(dt, 1)})
        if lowering(variant) is not None:
            low = lowering(variant)
            path, dt = self.package(ctx, low)
            runner = aotirt.load(path, device=self._index())
            return Handle(variant, runner, "aotirt", info={"compile_s": round(dt, 1), "cached": dt == 0.0,
                                                           "attention_backend": low[1], "conv_backends": low[2],
                                                           "package_mib": round(os.path.getsize(path) / 2**20, 1)},
                          runner=runner)
        if variant in AUTO_VARIANTS:
            from aotirt import auto
            compiled_s = []

            def compile_fn(model, example_inputs, package_path, *, options, **kw):
                path, dt = self.package(ctx, (options.max_autotune_gemm_backends, "MATH", "TRITON"))
                compiled_s.append(dt)
                return path

            timing = "graphs" if AUTO_VARIANTS[variant] else "eager"
            timer = auto.CudaGraphTimer(repeats=3 if self.args.quick else 5, use_graphs=AUTO_VARIANTS[variant])
            result: list = []
            out = os.path.join(ctx.cache_dir, f"{variant}.run{os.getpid()}.pt2")
            for name in os.listdir(ctx.cache_dir):  # this AUTO's packages of earlier runs (never reused: AUTO re-times)
                if name.startswith(f"{variant}.run") and name.endswith(".pt2"):
                    os.remove(os.path.join(ctx.cache_dir, name))
            t0 = time.monotonic()
            try:
                auto.compile_auto(ctx.model, ctx.inputs, out, device=self.device,
                                  options=aotirt.CompileOptions(max_autotune=True, max_autotune_gemm_backends="AUTO",
                                                                auto_timing=timing), compile_fn=compile_fn,
                                  time_fn=timer, rounds=self.args.auto_rounds, result=result)
            finally:
                timer.close()
            select_s = time.monotonic() - t0 - sum(compiled_s)
            runner = aotirt.load(out, device=self._index())
            md = runner.metadata  # read back through the runtime: what a user of the package sees
            info = {"auto_choice": md[auto.META_CHOICE], "auto_timings_ms": json.loads(md[auto.META_TIMINGS]),
                    "auto_methods": json.loads(md[auto.META_METHODS]), "auto_select_s": round(select_s, 1),
                    "auto_timing": timing,
                    "compile_s": round(sum(compiled_s), 1)}
            if auto.META_ERRORS in md:
                info["auto_errors"] = json.loads(md[auto.META_ERRORS])
            if result and result[0].choice != info["auto_choice"]:
                raise RuntimeError(f"AUTO recorded {info['auto_choice']} but chose {result[0].choice}")
            self.say(f"{ctx.name}: AUTO chose {info['auto_choice']} {info['auto_timings_ms']}")
            return Handle(variant, runner, "aotirt", info=info, runner=runner)
        raise ValueError(f"unknown variant {variant!r}")

    def _index(self) -> int:
        return torch.device(self.device).index or 0 if self.device.startswith("cuda") else 0

    def _graphed(self, ctx: ModelCtx, h: Handle) -> Callable[[], Any]:
        if not self.device.startswith("cuda"):
            raise RuntimeError("CUDA graphs need a CUDA device")
        if h.kind == "aotirt":
            import aotirt
            graphed = aotirt.capture(h.runner, *ctx.inputs)
            return lambda: graphed(*ctx.inputs)
        static = [x.clone() for x in ctx.inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                h.call(*static)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            out = h.call(*static)
        h.info.setdefault("_graphs", []).append(g)  # keep it alive with the handle

        def replay():
            for s, x in zip(static, ctx.inputs):
                s.copy_(x)
            g.replay()
            return out
        return replay

    def measure(self, ctx: ModelCtx, h: Handle, graphs: bool) -> dict:
        with torch.no_grad(), h.context():
            fn = self._graphed(ctx, h) if graphs else (lambda: h.call(*ctx.inputs))
            out = _flat_tensors(fn())
            if not out:
                raise RuntimeError("the variant returned no tensor")
            got = out[0].float()
            if tuple(got.shape) != tuple(ctx.ref.shape):
                raise RuntimeError(f"output shape {tuple(got.shape)} != reference {tuple(ctx.ref.shape)}")
            diff = (got - ctx.ref).abs()
            row = {"mean_abs_diff": float(diff.mean()), "max_abs_diff": float(diff.max())}
            t = time_ms(fn, self.device, quick=self.args.quick)
            row.update(ms=t["ms"], iters=t["iters"], repeats=t["repeats"], min_ms=t["min_ms"], max_ms=t["max_ms"])
            row["timing"] = ("CUDA graph replay incl. input copy" if graphs else "back-to-back calls") + \
                (", CUDA events" if self.device.startswith("cuda") else ", host clock")
            if h.kind == "aotirt" and not graphs and self.device.startswith("cuda"):
                # How this package's GEMMs ran in one more call: cuBLASLt calls, and how many of them were replayed
                # from one-call graphs (shims/gemm/replay.h) rather than paying cublasLtMatmul's host time.
                import aotirt
                before = aotirt.gemm_stats()
                fn()
                torch.cuda.synchronize()
                g = gemm_delta(before, aotirt.gemm_stats())
                if g is not None:
                    row["gemm_per_call"] = g
            if self.args.profile and not graphs and self.device.startswith("cuda"):
                try:
                    row["profile"] = profile_calls(fn)
                except Exception as e:  # noqa: BLE001
                    row["profile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        row.update(self._memory(ctx, h))
        row.update({k: v for k, v in h.info.items() if not k.startswith("_")})
        return row
