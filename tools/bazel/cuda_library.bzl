"""cuda_library: .cu files compiled by nvcc (a genrule) into PIC objects wrapped in a cc_library. Bazel 4.2.3 has
no CUDA rules; this keeps the nvcc line in one place. Targets: sm_80, sm_90 SASS and compute_90 PTX (newer GPUs
JIT the PTX)."""

load("@local_cuda//:defs.bzl", "CUDA_INCLUDE", "NVCC")
load("@rules_cc//cc:defs.bzl", "cc_library")

CUDA_ARCH_FLAGS = "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 " + \
                  "-gencode arch=compute_90,code=compute_90"

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".pic.o")
        native.genrule(
            name = obj + "_nvcc",
            srcs = [src] + hdrs + ["//shims:all_headers"],
            outs = [obj],
            cmd = ("{nvcc} -c -std=c++17 -O3 -Xcompiler -fPIC,-fvisibility=hidden {arch} -I. -I$(GENDIR) " +
                   "-isystem {inc} {copts} $(location {src}) -o $@").format(
                nvcc = NVCC,
                arch = CUDA_ARCH_FLAGS,
                inc = CUDA_INCLUDE,
                copts = " ".join(copts),
                src = src,
            ),
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        alwayslink = True,
        **kwargs
    )
