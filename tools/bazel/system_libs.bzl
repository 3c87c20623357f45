"""system_libs: Debian's googletest, DLPack, minizip (+zlib) and nlohmann-json, as Bazel targets (offline)."""

def _system_libs_impl(ctx):
    for h in ["gtest", "dlpack", "minizip", "nlohmann"]:
        p = "/usr/include/" + h
        if not ctx.path(p).exists:
            fail("system_libs: %s missing: run tools/setup.sh (apt packages)" % p)
        ctx.symlink(p, "include/" + h)
    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "gtest", hdrs = glob(["include/gtest/**"]), includes = ["include"],
           linkopts = ["-lgtest", "-lpthread"])
cc_library(name = "gtest_main", deps = [":gtest"], linkopts = ["-lgtest_main"])
cc_library(name = "dlpack", hdrs = glob(["include/dlpack/**"]), includes = ["include"])
# minizip from zlib's contrib (Debian libminizip-dev), linked statically so nothing extra ships; zlib is everywhere.
cc_library(name = "minizip", hdrs = glob(["include/minizip/**"]), includes = ["include"],
           linkopts = ["-l:libminizip.a", "-lz"])
cc_library(name = "json", hdrs = glob(["include/nlohmann/**"]), includes = ["include"])
""")

system_libs = repository_rule(implementation = _system_libs_impl, local = True)
