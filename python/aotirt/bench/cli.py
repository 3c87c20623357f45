"""Flags and main() of benchmarks/models.py."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable

import aotirt.bench
from aotirt.bench.cuda import CudaBench
from aotirt.bench.models import MODELS
from aotirt.bench.report import markdown, plot, targets
from aotirt.bench.run import load_existing, out_paths, precompile, run_benchmark
from aotirt.bench.variants import DEFAULT_VARIANTS, VARIANTS

def _csv(valid: tuple, default: tuple, what: str) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        if text.strip().lower() == "all":
            return tuple(valid)
        if text.strip().lower() == "default":
            return tuple(default)
        items = [t.strip().lower() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in valid]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {what} {bad or text!r}; valid: {','.join(valid)} (or all)")
        return tuple(dict.fromkeys(items))
    return parse


def parse_args(argv: list | None = None, default_out: str | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/models.py", description=aotirt.bench.__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out or os.path.join(os.getcwd(), "benchmarks", "results"),
                    help="directory for models.json/.md/.png, or the .json path itself (default: %(default)s)")
    ap.add_argument("--models", type=_csv(MODELS, MODELS, "model"), default=MODELS,
                    help=f"comma-separated subset of {','.join(MODELS)} (default: all)")
    ap.add_argument("--variants", type=_csv(VARIANTS, DEFAULT_VARIANTS, "variant"), default=DEFAULT_VARIANTS,
                    help=f"comma-separated subset of {','.join(VARIANTS)}, 'default' or 'all' "
                         f"(default: {','.join(DEFAULT_VARIANTS)})")
    ap.add_argument("--graphs", choices=("both", "off", "on"), default="both",
                    help="time without CUDA graphs, with them, or both (default)")
    ap.add_argument("--quick", action="store_true", help="fewer timed calls and AUTO rounds (a smoke run)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="total wall-time budget; steps that would not fit are recorded as skipped (default 540, "
                         "to fit a 600 s device call)")
    ap.add_argument("--compile-reserve-s", type=float, default=150.0,
                    help="a step that must compile (not in the cache) starts only with this much budget left")
    ap.add_argument("--cache-dir", default=os.environ.get("AOTIRT_BENCH_CACHE")
                    or os.path.join(tempfile.gettempdir(), "aotirt_bench_models_cache"),
                    help="compiled packages, reused between variants and runs (keyed by model, options, versions "
                         "and the benchmark's source; default: $AOTIRT_BENCH_CACHE or %(default)s)")
    ap.add_argument("--no-merge", dest="merge", action="store_false",
                    help="start a fresh JSON instead of updating the rows of an existing one")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (eager-only smoke runs)")
    ap.add_argument("--tiny", action="store_true", help="tiny model sizes (smoke tests; not for the results)")
    ap.add_argument("--profile", action="store_true",
                    help="also profile each no-graphs row (kernels and GPU busy time per call, top kernels)")
    ap.add_argument("--auto-rounds", type=int, default=None, help="AUTO timing rounds (default 3, 2 with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile-only", action="store_true",
                    help="time nothing: compile every variant into --cache-dir (and Inductor's caches) within the "
                         "budget, so a later run times them all side by side without compiling")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: rewrite models.md and models.png from the JSON at --out (e.g. where "
                         "matplotlib is installed)")
    a = ap.parse_args(argv)
    if a.budget_s <= 0:
        ap.error("--budget-s must be > 0")
    if a.device not in ("cuda", "cpu") and not a.device.startswith("cuda:"):
        ap.error(f"--device {a.device!r}: valid: cuda, cuda:N, cpu")
    if a.auto_rounds is None:
        a.auto_rounds = 2 if a.quick else 3
    if a.auto_rounds < 1:
        ap.error("--auto-rounds must be >= 1")
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
