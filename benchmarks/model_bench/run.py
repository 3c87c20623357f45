"""The run loop: every (model, variant, graphs) row within the time budget, errors recorded per row, the JSON written
after every row and merged with an earlier run. Backend-agnostic, so it is tested on CPU with a scripted backend."""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import traceback
from typing import Any, Callable

from model_bench.models import MODELS
from model_bench.report import markdown, targets
from model_bench.variants import VARIANTS, gemm_backends
import provenance

def out_paths(out: str) -> dict:
    base = out[:-5] if out.endswith(".json") else os.path.join(out, "models")
    return {"json": base + ".json", "md": base + ".md", "png": base + ".png"}

def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:600]}"


def load_existing(path: str) -> dict:
    try:
        with open(path) as f:
            data = json.load(f)
        if isinstance(data, dict) and isinstance(data.get("rows"), list):
            return data
    except (OSError, ValueError):
        pass
    return {"rows": []}


def precompile(args: argparse.Namespace, backend: Any, *, clock: Callable[[], float] = time.monotonic,
               say: Callable[[str], None] | None = None) -> dict:
    """--compile-only: fills the package cache (and Inductor's own caches, for torch.compile) for every (model,
    variant) within the budget, measures nothing and leaves the results JSON alone. A later run with the same
    --cache-dir (and TORCHINDUCTOR_CACHE_DIR) then times every variant side by side without compiling: the way to
    fit a model whose compiles outlast one device call (pi05)."""
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    t0 = clock()
    done: list = []

    def left() -> float:
        return args.budget_s - (clock() - t0)

    for model in args.models:
        if left() < 10:
            done.append({"model": model, "variant": None, "error": "skipped: time budget"})
            continue
        try:
            ctx = backend.prepare(model)
        except Exception as e:  # noqa: BLE001
            say(traceback.format_exc())
            done.append({"model": model, "variant": None, "error": f"model setup failed: {_err(e)}"})
            continue
        try:
            for variant in args.variants:
                if not backend.needs_compile(ctx, variant):
                    done.append({"model": model, "variant": variant, "compile_s": 0.0, "cached": True})
                    continue
                if left() < 10:
                    done.append({"model": model, "variant": variant, "error": "skipped: time budget"})
                    continue
                try:
                    dt = backend.precompile(ctx, variant)
                    done.append({"model": model, "variant": variant, "compile_s": round(dt, 1), "cached": False})
                except Exception as e:  # noqa: BLE001
                    say(traceback.format_exc())
                    done.append({"model": model, "variant": variant, "error": f"compile failed: {_err(e)}"})
                say(f"[{clock() - t0:6.1f}s] {model:7s} {variant:26s} " + (
                    f"compiled in {done[-1]['compile_s']:.0f} s" if "compile_s" in done[-1] else done[-1]["error"]))
        finally:
            backend.release(ctx)
    return {"compiled": done, "elapsed_s": round(clock() - t0, 1),
            "complete": all("error" not in d for d in done)}


def run_benchmark(args: argparse.Namespace, backend: Any, *, clock: Callable[[], float] = time.monotonic,
                  say: Callable[[str], None] | None = None) -> dict:
    """Runs every (model, variant, graphs) row within the budget; returns the result dict (also written to --out,
    after every row, so a run cut short keeps what it measured). Rows from an earlier JSON at --out are kept unless
    this run measured (or tried) the same row; a row skipped for time never replaces a measured one."""
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    t0 = clock()
    paths = out_paths(args.out)
    os.makedirs(os.path.dirname(os.path.abspath(paths["json"])), exist_ok=True)
    old = load_existing(paths["json"]) if args.merge else {"rows": []}
    rows = {(r.get("model"), r.get("variant"), bool(r.get("graphs"))): r for r in old["rows"]}
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    modes = {"both": (False, True), "off": (False,), "on": (True,)}[args.graphs]
    meta = {"run": run_id, "commit": provenance.commit(), "argv": sys.argv[1:], "budget_s": args.budget_s,
            "quick": args.quick, "tiny": args.tiny, **backend.describe()}
    result = {"meta": meta, "runs": list(old.get("runs", [])) + [meta], "rows": [], "targets": []}

    def left() -> float:
        return args.budget_s - (clock() - t0)

    def put(model: str, variant: str, graphs: bool, data: dict) -> None:
        key = (model, variant, graphs)
        row = {"model": model, "variant": variant, "graphs": graphs, "ms": None, "mean_abs_diff": None,
               "gemm_backends": gemm_backends(variant), "run": run_id, "error": None}
        row.update(data)
        if row.get("skipped") and key in rows and rows[key].get("ms") is not None:
            return  # keep the measured row of an earlier run
        rows[key] = row
        result["rows"] = [rows[k] for k in sorted(rows, key=_row_order)]
        result["targets"] = targets(result["rows"])
        write_json(paths["json"], result)
        with open(paths["md"], "w") as f:  # kept current too, for a run cut short
            f.write(markdown(result))
        ms = "-" if row["ms"] is None else f"{row['ms']:.4f} ms"
        note = f"  [{row['error']}]" if row.get("error") else ""
        say(f"[{clock() - t0:6.1f}s] {model:7s} {variant:26s} graphs={'on ' if graphs else 'off'} {ms}"
            + (f"  |diff| {row['mean_abs_diff']:.3g}" if row.get("mean_abs_diff") is not None else "") + note)

    def skip_all(model: str, variants, why: str) -> None:
        for v in variants:
            for g in modes:
                put(model, v, g, {"error": why, "skipped": True})

    for model in args.models:
        if left() < 10:
            skip_all(model, args.variants, f"skipped: time budget ({left():.0f} s left of {args.budget_s:.0f})")
            continue
        try:
            ctx = backend.prepare(model)
        except Exception as e:  # noqa: BLE001
            say(traceback.format_exc())
            skip_all(model, args.variants, f"model setup failed: {_err(e)}")
            continue
        try:
            for variant in args.variants:
                need = backend.needs_compile(ctx, variant)
                if left() < (args.compile_reserve_s if need else 10):
                    skip_all(model, [variant], f"skipped: time budget ({left():.0f} s left; "
                             + (f"a compile needs ~{args.compile_reserve_s:.0f} s" if need else "timing needs ~10 s")
                             + "); rerun with the same --cache-dir/--out to continue")
                    continue
                try:
                    handle = backend.setup(ctx, variant)
                except Exception as e:  # noqa: BLE001
                    say(traceback.format_exc())
                    for g in modes:
                        put(model, variant, g, {"error": f"setup failed: {_err(e)}"})
                    continue
                for g in modes:
                    try:
                        put(model, variant, g, backend.measure(ctx, handle, g))
                    except Exception as e:  # noqa: BLE001
                        say(traceback.format_exc())
                        put(model, variant, g, {"error": _err(e), **getattr(handle, "info", {})})
                del handle
        finally:
            backend.release(ctx)
    result["rows"] = [rows[k] for k in sorted(rows, key=_row_order)]
    result["targets"] = targets(result["rows"])
    result["elapsed_s"] = round(clock() - t0, 1)
    write_json(paths["json"], result)
    return result


def _row_order(key: tuple) -> tuple:
    model, variant, graphs = key
    mi = MODELS.index(model) if model in MODELS else len(MODELS)
    vi = VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS)
    return (mi, str(model), vi, str(variant), graphs)


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def write_json(path: str, result: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(_clean(result), f, indent=1)
    os.replace(tmp, path)
