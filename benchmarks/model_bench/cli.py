"""Flags (absl, through benchmarks/cliflags.py) and main() of benchmarks/models.py."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable

import model_bench
from model_bench.cuda import CudaBench
from model_bench.models import DEFAULT_MODELS, MODELS
from model_bench.report import markdown, plot, targets
from model_bench.run import load_existing, out_paths, precompile, run_benchmark
from model_bench.variants import DEFAULT_VARIANTS, LOWERING_VARIANTS, VARIANTS

from cliflags import Flags


def _csv(valid: tuple, default: tuple, what: str, groups: dict | None = None) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        if text.strip().lower() == "all":
            return tuple(valid)
        if text.strip().lower() == "default":
            return tuple(default)
        if groups and text.strip().lower() in groups:
            return tuple(groups[text.strip().lower()])
        items = [t.strip().lower() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in valid]
        if bad or not items:
            raise ValueError(f"unknown {what} {bad or text!r}; valid: {','.join(valid)} (or all)")
        return tuple(dict.fromkeys(items))
    return parse


def _flags(default_out: str | None) -> Flags:
    """The absl flags (same names and defaults as the argparse ones they replace)."""
    f = Flags("benchmarks/models.py", model_bench.__doc__.split("\n\n")[0])
    f.string("out", default_out or os.path.join(os.getcwd(), "benchmarks", "results"),
             "directory for models.json/.md/.png, or the .json path itself")
    f.define("models", DEFAULT_MODELS, f"comma-separated subset of {','.join(MODELS)}, 'default' "
             f"({','.join(DEFAULT_MODELS)}) or 'all'", _csv(MODELS, DEFAULT_MODELS, "model"), "list")
    f.define("variants", DEFAULT_VARIANTS, f"comma-separated subset of {','.join(VARIANTS)}, 'default', 'lowerings' "
             f"(issue 13's attention/convolution comparison: {','.join(LOWERING_VARIANTS)}) or 'all'",
             _csv(VARIANTS, DEFAULT_VARIANTS, "variant", {"lowerings": LOWERING_VARIANTS}), "list")
    f.enum("graphs", "both", ("both", "off", "on"), "time without CUDA graphs, with them, or both (default)")
    f.boolean("quick", False, "fewer timed calls and AUTO rounds (a smoke run)")
    f.float("budget-s", 540.0, "total wall-time budget; steps that would not fit are recorded as skipped (default "
            "540, to fit a 600 s device call)")
    f.float("compile-reserve-s", 150.0,
            "a step that must compile (not in the cache) starts only with this much budget left")
    f.string("cache-dir", os.environ.get("AOTIRT_BENCH_CACHE")
             or os.path.join(tempfile.gettempdir(), "aotirt_bench_models_cache"),
             "compiled packages, reused between variants and runs (keyed by model, options, versions and the "
             "benchmark's source; default: $AOTIRT_BENCH_CACHE or the value shown)")
    f.boolean("no-merge", False, "start a fresh JSON instead of updating the rows of an existing one")
    f.string("device", "cuda", "cuda (default) or cpu (eager-only smoke runs)")
    f.boolean("tiny", False, "tiny model sizes (smoke tests; not for the results)")
    f.boolean("profile", False, "also profile each no-graphs row (kernels and GPU busy time per call, top kernels)")
    f.integer("auto-rounds", None, "AUTO timing rounds (default 3, 2 with --quick)")
    f.integer("seed", 0, "seed of the random weights and inputs")
    f.boolean("compile-only", False, "time nothing: compile every variant into --cache-dir (and Inductor's caches) "
              "within the budget, so a later run times them all side by side without compiling")
    f.boolean("report-only", False, "run nothing: rewrite models.md and models.png from the JSON at --out (e.g. "
              "where matplotlib is installed)")
    return f


def parse_args(argv: list | None = None, default_out: str | None = None) -> argparse.Namespace:
    f = _flags(default_out)
    a = f.parse(argv)
    a.merge = not a.no_merge
    del a.no_merge
    if a.budget_s <= 0:
        f.error("--budget-s must be > 0")
    if a.device not in ("cuda", "cpu") and not a.device.startswith("cuda:"):
        f.error(f"--device {a.device!r}: valid: cuda, cuda:N, cpu")
    if a.auto_rounds is None:
        a.auto_rounds = 2 if a.quick else 3
    if a.auto_rounds < 1:
        f.error("--auto-rounds must be >= 1")
    return a


def main(argv: list | None = None, default_out: str | None = None) -> int:
    args = parse_args(argv, default_out)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.report_only:
        paths = out_paths(args.out)
        result = load_existing(paths["json"])
        if not result["rows"]:
            say(f"--report-only: no rows in {paths['json']}")
            return 1
        result["targets"] = targets(result["rows"])
        with open(paths["md"], "w") as f:
            f.write(markdown(result))
        say(plot(result, paths["png"]))
        print(markdown(result))
        return 0
    if args.compile_only:
        say(f"compile only: models {','.join(args.models)}; variants {','.join(args.variants)}; budget "
            f"{args.budget_s:.0f} s; cache {args.cache_dir}")
        res = precompile(args, CudaBench(args, say), say=say)
        say(f"compile only: {'complete' if res['complete'] else 'INCOMPLETE'} in {res['elapsed_s']} s")
        return 0 if res["complete"] else 1
    say(f"models {','.join(args.models)}; variants {','.join(args.variants)}; graphs {args.graphs}; budget "
        f"{args.budget_s:.0f} s; cache {args.cache_dir}")
    result = run_benchmark(args, CudaBench(args, say), say=say)
    paths = out_paths(args.out)
    with open(paths["md"], "w") as f:
        f.write(markdown(result))
    say(plot(result, paths["png"]))
    print(markdown(result))
    say(f"wrote {paths['json']} and {paths['md']} in {result.get('elapsed_s')} s")
    return 0
