"""Loads a benchmark script (benchmarks/<name>.py) as a module for its CPU test: under Bazel from the runfiles (the
test lists //benchmarks:<name>.py and the helpers it imports as data), run by hand from the checkout."""
import importlib.util
import os
import sys


def path(name: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.path.join(os.environ[v], "aotirt", "benchmarks", f"{name}.py")
             for v in ("TEST_SRCDIR", "RUNFILES_DIR") if os.environ.get(v)]
    cands.append(os.path.join(here, "..", "..", "benchmarks", f"{name}.py"))
    for c in cands:
        if os.path.isfile(c):
            return os.path.abspath(c)
    raise FileNotFoundError(f"benchmarks/{name}.py not found in {cands}")


def load(name: str):
    """(path, module) of benchmarks/<name>.py; its folder goes on sys.path (cliflags, provenance beside it)."""
    p = path(name)
    folder = os.path.dirname(p)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, p)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return p, module
