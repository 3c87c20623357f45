"""pybind_extension: a Python extension module as cc_binary(linkshared) with hidden visibility and only
PyInit_<module> exported (after tensorstore's bazel/pybind11.bzl), plus a py_library carrying it."""

load("@rules_cc//cc:defs.bzl", "cc_binary")

def pybind_extension(name, module, srcs, deps = [], data = [], linkopts = [], **kwargs):
    so = module + ".so"
    lds = name + "_exports.lds"
    native.genrule(
        name = name + "_lds",
        outs = [lds],
        cmd = "printf '{ global: PyInit_%s; local: *; };\\n' > $@" % module,
    )
    cc_binary(
        name = so,
        srcs = srcs,
        deps = deps + ["@local_python//:pybind11"],
        copts = ["-fvisibility=hidden", "-fexceptions"],
        linkshared = True,
        linkopts = linkopts + ["-Wl,--version-script=$(location :%s)" % lds],
        additional_linker_inputs = [":" + lds],
        **kwargs
    )
    native.py_library(name = name, data = [":" + so] + data, **{k: v for k, v in kwargs.items() if k in ("visibility", "testonly")})
