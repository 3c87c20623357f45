"""cuda_library: .cu files compiled by nvcc into PIC objects wrapped in a cc_library (gpu_objects.bzl). Bazel 4.2.3
has no CUDA rules; this keeps the nvcc line in one place. Targets: sm_80, sm_90 SASS and compute_90 PTX (newer GPUs
JIT the PTX)."""

load("@local_cuda//:defs.bzl", "CUDA_INCLUDE", "NVCC")
load("//tools/bazel:gpu_objects.bzl", "gpu_objects_library")

CUDA_ARCH_FLAGS = "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 " + \
                  "-gencode arch=compute_90,code=compute_90"

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    command = ("{nvcc} -c -std=c++17 -O3 -Xcompiler -fPIC,-fvisibility=hidden {arch} -I. -I$(GENDIR) " +
               "-isystem {inc} {copts} ").format(nvcc = NVCC, arch = CUDA_ARCH_FLAGS, inc = CUDA_INCLUDE,
                                                 copts = " ".join(copts)) + "$(location {src}) -o $@"
    gpu_objects_library(name, srcs, hdrs, deps, tool = "nvcc", command = command, runtime = "@local_cuda//:cudart",
                        **kwargs)
