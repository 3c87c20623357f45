"""hip_library: .cu files compiled by hipcc (HIP_PLATFORM=amd) into PIC objects wrapped in a cc_library
(gpu_objects.bzl, the same shape as cuda_library). The sources are the CUDA ones, made vendor-neutral by
shims/cuda/vendor.h (AOTIRT_USE_HIP). ROCM_COMPATIBLE goes on every ROCm target: empty where hipcc was found, else a
constraint no platform has, so `bazel build //...` skips them and an explicit request names the fix."""

load("@local_rocm//:defs.bzl", "HAVE_HIPCC", "HIPCC", "HIP_ARCHS", "MISSING")
load("//tools/bazel:gpu_objects.bzl", "gpu_objects_library")

ROCM_COMPATIBLE = [] if HAVE_HIPCC else ["//backends/rocm:hipcc_not_found__run_tools_setup_sh"]

def hip_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    if HAVE_HIPCC:
        # -x hip: hipcc treats .cu as CUDA otherwise. HIP_PLATFORM=amd: hipcc picks nvcc when it sees one.
        command = ("HIP_PLATFORM=amd {hipcc} -x hip -c -std=c++17 -O3 -fPIC -fvisibility=hidden {arch} " +
                   "-D__HIP_PLATFORM_AMD__ -DAOTIRT_USE_HIP -I. -I$(GENDIR) {copts} ").format(
            hipcc = HIPCC,
            arch = " ".join(["--offload-arch=" + a for a in HIP_ARCHS]),
            copts = " ".join(copts),
        ) + "$(location {src}) -o $@"
    else:
        command = "echo %r >&2; exit 1" % MISSING
    gpu_objects_library(name, srcs, hdrs, deps, tool = "hipcc", command = command, runtime = "@local_rocm//:hip_host",
                        target_compatible_with = ROCM_COMPATIBLE, **kwargs)
