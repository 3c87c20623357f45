"""cuda_configure: CUDA 13 headers, cudart and nvcc for the build. Looks in $CUDA_PATH, then the NVIDIA wheels of
the project venv (nvidia/cu13), then /usr/local/cuda. cuBLASLt is only needed as a header: it is dlopen'd at run time."""

def _find(ctx, candidates, rel):
    for c in candidates:
        if c and ctx.path(c + "/" + rel).exists:
            return c
    return None

def _cuda_configure_impl(ctx):
    root = str(ctx.path(Label("//:WORKSPACE")).dirname)
    venv_cu = ""
    res = ctx.execute(["sh", "-c", "ls -d %s/.venv/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -1" % root])
    if res.return_code == 0:
        venv_cu = res.stdout.strip()
    cands = [ctx.os.environ.get("CUDA_PATH", ""), venv_cu, "/usr/local/cuda"]
    inc = _find(ctx, cands, "include/cuda_runtime.h")
    lt = _find(ctx, cands, "include/cublasLt.h")
    nvcc_home = _find(ctx, [ctx.os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"], "bin/nvcc")
    lib = _find(ctx, cands, "lib/libcudart.so.13") or _find(ctx, cands, "lib64/libcudart.so.13")
    if not inc or not lib:
        fail("cuda_configure: CUDA 13 headers/cudart not found in %s: run tools/setup.sh" % cands)
    ctx.symlink(inc + "/include", "cuda_include")
    if lt and lt != inc:
        ctx.symlink(lt + "/include", "cublaslt_include")
    else:
        ctx.file("cublaslt_include/.keep", "")
    libdir = lib + ("/lib" if ctx.path(lib + "/lib/libcudart.so.13").exists else "/lib64")
    ctx.symlink(libdir + "/libcudart.so.13", "lib/libcudart.so.13")
    ctx.file("defs.bzl", "NVCC = %r\nCUDA_INCLUDE = %r\nHAVE_NVCC = %r\n" % (
        (nvcc_home + "/bin/nvcc") if nvcc_home else "", inc + "/include", nvcc_home != None))
    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "cuda_headers", hdrs = glob(["cuda_include/**/*.h", "cuda_include/**/*.hpp", "cuda_include/**/*.inl",
    "cuda_include/nv/**", "cuda_include/cuda/**", "cuda_include/crt/**"]), includes = ["cuda_include"])
cc_library(name = "cublaslt_headers", hdrs = glob(["cublaslt_include/*.h"]), includes = ["cublaslt_include"],
           deps = [":cuda_headers"])
# Dynamic cudart: the AOTInductor wrapper resolves cudaMalloc & co. from the process, so it must be one shared copy.
cc_import(name = "cudart_import", shared_library = "lib/libcudart.so.13")
cc_library(name = "cudart", deps = [":cudart_import", ":cuda_headers"], linkopts = ["-ldl", "-lpthread"])
exports_files(["lib/libcudart.so.13"])
""")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
