"""pytest_test: a py_test that runs pytest on its srcs (shared main in tests/util/pytest_main.py)."""

def pytest_test(name, srcs, deps = [], data = [], tags = [], size = "medium", args = [], **kwargs):
    native.py_test(
        name = name,
        srcs = srcs + ["//tests/util:pytest_main.py"],
        main = "//tests/util:pytest_main.py",
        args = ["$(location %s)" % s for s in srcs] + args,
        deps = deps,
        data = data,
        tags = tags,
        size = size,
        python_version = "PY3",
        **kwargs
    )
