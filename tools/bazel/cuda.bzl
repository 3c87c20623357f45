"""cuda_configure: CUDA 13 headers, cudart and nvcc for the build. Looks in $CUDA_PATH, then the NVIDIA wheels of
the project venv (nvidia/cu13), then /usr/local/cuda. cuBLASLt, cuFFT and cuDNN are only needed as headers (dlopen'd at run time); cuDNN's headers come from the venv's
nvidia-cudnn-cu13 wheel (nvidia/cudnn), cudnn-frontend's header-only C++ API from nvidia-cudnn-frontend (include/)."""

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
    fft = _find(ctx, cands, "include/cufft.h")
    if not fft:
        fail("cuda_configure: cufft.h (nvidia-cufft, CUDA 13) not found in %s: run tools/setup.sh" % cands)
    if fft != inc:
        ctx.symlink(fft + "/include", "cufft_include")
    else:
        ctx.file("cufft_include/.keep", "")
    fft_lib = _find(ctx, cands, "lib/libcufft.so.12") or _find(ctx, cands, "lib64/libcufft.so.12")
    if fft_lib:
        ctx.symlink(fft_lib + ("/lib" if ctx.path(fft_lib + "/lib/libcufft.so.12").exists else "/lib64") +
                    "/libcufft.so.12", "lib/libcufft.so.12")
    else:
        ctx.file("lib/libcufft.so.12", "")  # headers without the library: the loader test then sees a non-ELF file
    sp = ""
    res = ctx.execute(["sh", "-c", "ls -d %s/.venv/lib/python3*/site-packages 2>/dev/null | head -1" % root])
    if res.return_code == 0:
        sp = res.stdout.strip()
    cudnn = _find(ctx, [ctx.os.environ.get("CUDNN_PATH", ""), sp + "/nvidia/cudnn" if sp else ""], "include/cudnn.h")
    fe = _find(ctx, [ctx.os.environ.get("CUDNN_FRONTEND_PATH", ""), sp], "include/cudnn_frontend.h")
    if not cudnn or not fe:
        fail("cuda_configure: cuDNN headers (nvidia-cudnn-cu13) or cudnn-frontend (nvidia-cudnn-frontend) not found " +
             "in the venv: run tools/setup.sh")
    ctx.symlink(cudnn + "/include", "cudnn_include")
    ctx.symlink(fe + "/include", "cudnn_frontend/include")  # its headers include "../include/..."
    if ctx.path(cudnn + "/lib/libcudnn.so.9").exists:
        ctx.symlink(cudnn + "/lib/libcudnn.so.9", "lib/libcudnn.so.9")
    else:
        ctx.file("lib/libcudnn.so.9", "")  # a wheel without the library: the loader test then sees a non-ELF file
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
cc_library(name = "cudnn_headers", hdrs = glob(["cudnn_include/*.h"]), includes = ["cudnn_include"],
           deps = [":cuda_headers"])
# Header-only graph API, built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: cuDNN's entry points come from dlsym on
# cudnn_frontend::cudnn_dlhandle, which our loader sets (shims/cudnn/cudnn_loader.cc).
cc_library(name = "cudnn_frontend_headers",
           hdrs = glob(["cudnn_frontend/include/**/*.h", "cudnn_frontend/include/**/*.hpp", "cudnn_frontend/include/**/*.inl"]),
           includes = ["cudnn_frontend/include"], defines = ["NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING", "CUDNN_FRONTEND_SKIP_JSON_LIB"],
           deps = [":cudnn_headers"])
exports_files(["lib/libcudnn.so.9"])
# cuFFT: header only (libcufft.so.12 is dlopen'd by shims/fft/cufft_loader.cc).
cc_library(name = "cufft_headers", hdrs = glob(["cufft_include/*.h"]), includes = ["cufft_include"],
           deps = [":cuda_headers"])
exports_files(["lib/libcufft.so.12"])
# Dynamic cudart: the AOTInductor wrapper resolves cudaMalloc & co. from the process, so it must be one shared copy.
cc_import(name = "cudart_import", shared_library = "lib/libcudart.so.13")
cc_library(name = "cudart", deps = [":cudart_import", ":cuda_headers"], linkopts = ["-ldl", "-lpthread"])
exports_files(["lib/libcudart.so.13"])
""")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "CUDNN_PATH", "CUDNN_FRONTEND_PATH"],
    local = True,
)
