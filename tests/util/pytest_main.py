"""Runs pytest on the test files given as arguments inside a Bazel py_test (results in $XML_OUTPUT_FILE)."""
import os
import sys

import pytest

if __name__ == "__main__":
    args = [a for a in sys.argv[1:]]
    here = os.path.dirname(os.path.abspath(__file__))
    files = [a if os.path.isabs(a) else os.path.join(os.getcwd(), a) for a in args if not a.startswith("-")]
    flags = [a for a in args if a.startswith("-")]
    # Test files import their folder's helpers (conftest, shared test modules) by name.
    for d in dict.fromkeys(os.path.dirname(f) for f in files):
        if d not in sys.path:
            sys.path.insert(0, d)
    xml = os.environ.get("XML_OUTPUT_FILE")
    extra = ["--junitxml", xml] if xml else []
    rc = pytest.main(files + flags + ["-p", "no:cacheprovider", "-q", "-rs"] + extra)
    # A file whose every test skips (GPU tests on a CPU machine) exits 0; one that collects nothing fails.
    sys.exit(int(rc))
