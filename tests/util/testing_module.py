"""Imports a pybind11 testing module (_gemm_testing, _attention_testing, _conv_testing) built beside a shim family:
from the Bazel runfiles (TEST_SRCDIR/<workspace>/<package>/) under `bazel test`, else from the source tree's
<package>/ (a test run by hand after `bazel build`, with the .so copied or linked there)."""
import importlib
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def load(module: str, package: str):
    """The module `module` whose `module`.so lives in the Bazel package `package` (e.g. "shims/attention")."""
    candidates = [os.path.join(ROOT, package)]
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        candidates.insert(0, os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "aotirt"), package))
    for c in candidates:
        if os.path.exists(os.path.join(c, module + ".so")):
            if c not in sys.path:
                sys.path.insert(0, c)
            break
    return importlib.import_module(module)
