"""python_configure: the project venv's interpreter (or $PYTHON_BIN_PATH) as Bazel's Python, with its headers,
pybind11's headers and the extension suffix, so `--repo_env=PYTHON_BIN_PATH=/path/python3.12` builds a cp312 module."""

_QUERY = """
import json, sys, sysconfig
out = {"include": sysconfig.get_paths()["include"], "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
       "version": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix}
try:
    import pybind11
    out["pybind11"] = pybind11.get_include()
except ImportError:
    out["pybind11"] = ""
print(json.dumps(out))
"""

def _ask(ctx, python):
    res = ctx.execute([python, "-c", _QUERY])
    if res.return_code != 0:
        fail("python_configure: %s failed: %s" % (python, res.stderr))
    return json.decode(res.stdout)

def _python_configure_impl(ctx):
    root = ctx.path(Label("//:WORKSPACE")).dirname
    venv_python = str(root) + "/.venv/bin/python"
    python = ctx.os.environ.get("PYTHON_BIN_PATH", "")
    if not python:
        if not ctx.path(venv_python).exists:
            fail("python_configure: no project venv at %s: run tools/setup.sh first (or set PYTHON_BIN_PATH)" % venv_python)
        python = venv_python
    info = _ask(ctx, python)
    if not info["pybind11"] and ctx.path(venv_python).exists:
        # The chosen interpreter lacks pybind11 (e.g. a bare pyenv 3.12): the headers are version-independent.
        info["pybind11"] = _ask(ctx, venv_python)["pybind11"]
    if not info["pybind11"]:
        fail("python_configure: pybind11 not importable from %s or the project venv" % python)
    ctx.symlink(info["include"], "python_include")
    ctx.symlink(info["pybind11"], "pybind11_include")
    ctx.file("defs.bzl", "PYTHON_BIN = %r\nEXT_SUFFIX = %r\nPYTHON_VERSION = %r\n" % (
        python, info["ext_suffix"], info["version"]))
    ctx.file("BUILD.bazel", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")
package(default_visibility = ["//visibility:public"])
cc_library(name = "python_headers", hdrs = glob(["python_include/**/*.h"]), includes = ["python_include"])
cc_library(name = "pybind11", hdrs = glob(["pybind11_include/**/*.h"]), includes = ["pybind11_include"],
           deps = [":python_headers"])
py_runtime(name = "py3_runtime", interpreter_path = "{python}", python_version = "PY3", stub_shebang = "#!{python}")
py_runtime_pair(name = "runtime_pair", py3_runtime = ":py3_runtime")
toolchain(name = "python_toolchain", toolchain = ":runtime_pair",
          toolchain_type = "@bazel_tools//tools/python:toolchain_type")
""".format(python = python))

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["PYTHON_BIN_PATH"],
    local = True,
)
