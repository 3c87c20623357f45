"""hip_library: .cu files compiled by hipcc (a genrule, HIP_PLATFORM=amd) into PIC objects wrapped in a cc_library,
the HIP twin of cuda_library.bzl. The sources are the CUDA ones, made vendor-neutral by shims/cuda/vendor.h
(AOTIRT_USE_HIP). ROCM_COMPATIBLE goes on every ROCm target: empty where hipcc was found, else a constraint no
platform has, so `bazel build //...` skips them and an explicit request names the fix."""

load("@local_rocm//:defs.bzl", "HAVE_HIPCC", "HIPCC", "HIP_ARCHS", "MISSING")
load("@rules_cc//cc:defs.bzl", "cc_library")

ROCM_COMPATIBLE = [] if HAVE_HIPCC else ["//backends/rocm:hipcc_not_found__run_tools_setup_sh"]

def hip_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    objs = []
    arch = " ".join(["--offload-arch=" + a for a in HIP_ARCHS])
    for src in srcs:
        obj = name + "_" + src.replace("//", "").replace(":", "_").replace("/", "_").replace(".cu", ".pic.o")
        if HAVE_HIPCC:
            # -x hip: hipcc treats .cu as CUDA otherwise. HIP_PLATFORM=amd: hipcc picks nvcc when it sees one.
            cmd = ("HIP_PLATFORM=amd {hipcc} -x hip -c -std=c++17 -O3 -fPIC -fvisibility=hidden {arch} " +
                   "-D__HIP_PLATFORM_AMD__ -DAOTIRT_USE_HIP -I. -I$(GENDIR) {copts} $(location {src}) -o $@").format(
                hipcc = HIPCC,
                arch = arch,
                copts = " ".join(copts),
                src = src,
            )
        else:
            cmd = "echo %r >&2; exit 1" % MISSING
        native.genrule(
            name = obj + "_hipcc",
            srcs = [src] + hdrs + ["//shims:all_headers"],
            outs = [obj],
            cmd = cmd,
            target_compatible_with = ROCM_COMPATIBLE,
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_rocm//:hip_host"],
        alwayslink = True,
        target_compatible_with = ROCM_COMPATIBLE,
        **kwargs
    )
