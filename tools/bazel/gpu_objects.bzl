"""gpu_objects_library: .cu files compiled by a device compiler (a genrule per file) into PIC objects wrapped in one
alwayslink cc_library. The one shape behind cuda_library (nvcc) and hip_library (hipcc): they differ only in the
compiler command, the runtime they link and the platforms they are compatible with."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def gpu_objects_library(name, srcs, hdrs, deps, tool, command, runtime, target_compatible_with = [], **kwargs):
    """command: the compile line with `{src}` where the source label goes (`$(location {src})`, `-o $@`)."""
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("//", "").replace(":", "_").replace("/", "_").replace(".cu", ".pic.o")
        native.genrule(
            name = obj + "_" + tool,
            srcs = [src] + hdrs + ["//shims:all_headers"],
            outs = [obj],
            # A private TMPDIR per compile: nvcc names its temporaries tmpxft_<pid>_..., and every linux-sandbox
            # action runs as pid 2 of its own namespace, so two compiles sharing /tmp collide ("cannot open module id
            # file /tmp/tmpxft_00000002_...", seen when several .cu files rebuild at once).
            cmd = ("T=$$(mktemp -d) && (export TMPDIR=$$T; " + command.replace("{src}", src) +
                   "); r=$$?; rm -rf $$T; exit $$r"),
            target_compatible_with = target_compatible_with,
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + [runtime],
        alwayslink = True,
        target_compatible_with = target_compatible_with,
        **kwargs
    )
