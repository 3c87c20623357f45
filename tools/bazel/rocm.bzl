"""rocm_configure: HIP for the ROCm backend (backends/rocm), compile-only on machines without an AMD GPU.
Finds hipcc and the HIP headers/library in $ROCM_PATH, /opt/rocm, then Debian's /usr (hipcc, libamdhip64-dev,
ROCm 5.2). Never fails: without hipcc it records HAVE_HIPCC = False, the ROCm targets become incompatible (skipped by
`bazel build //...`), and asking for one names the constraint `hipcc_not_found__run_tools_setup_sh`."""

def _first(ctx, candidates):
    for c in candidates:
        if c and ctx.path(c).exists:
            return c
    return None

def _rocm_configure_impl(ctx):
    roots = [ctx.os.environ.get("ROCM_PATH", ""), "/opt/rocm", "/usr"]
    hipcc = _first(ctx, [r + "/bin/hipcc" for r in roots if r])
    inc = _first(ctx, [r + "/include" for r in roots if r and ctx.path(r + "/include/hip/hip_runtime.h").exists])
    lib = _first(ctx, [r + d + "/libamdhip64.so" for r in roots if r for d in ["/lib", "/lib64", "/lib/x86_64-linux-gnu"]])
    have = hipcc != None and inc != None and lib != None
    why = "" if have else "rocm_configure: missing %s (looked in %s): run tools/setup.sh (Debian hipcc, libamdhip64-dev)" % (
        ", ".join([n for n, v in [("hipcc", hipcc), ("hip/hip_runtime.h", inc), ("libamdhip64.so", lib)] if not v]), roots)
    archs = []
    probe_err = ""
    if have:
        # Offload targets: gfx90a (MI200) is required; newer ones are kept where this hipcc can build them (ROCm 5.2
        # knows gfx940 but rejects gfx942 and lacks gfx1100 device libraries). Probed by compiling a tiny kernel.
        ctx.file("probe.hip", "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n")
        for a in ["gfx90a", "gfx940", "gfx942", "gfx1100"]:
            res = ctx.execute([hipcc, "-x", "hip", "-c", "--offload-arch=" + a, "probe.hip", "-o", "probe.o"],
                              environment = {"HIP_PLATFORM": "amd"}, timeout = 120)
            if res.return_code == 0:
                archs.append(a)
            elif a == "gfx90a":
                probe_err = res.stderr.strip()
        if "gfx90a" not in archs:
            have = False
            why = "rocm_configure: %s cannot build for gfx90a (%s): run tools/setup.sh (Debian hipcc, libamdhip64-dev)" % (hipcc, probe_err[:400])
    ctx.file("defs.bzl", "HIPCC = %r\nHIP_INCLUDE = %r\nHAVE_HIPCC = %r\nHIP_ARCHS = %r\nMISSING = %r\n" % (
        hipcc or "", inc or "", have, archs, why))
    if have:
        ctx.symlink(lib, "lib/libamdhip64.so")
        libs = """cc_import(name = "amdhip64_import", shared_library = "lib/libamdhip64.so")
cc_library(name = "amdhip64", deps = [":amdhip64_import"], linkopts = ["-ldl", "-lpthread"])"""
    else:
        libs = """cc_library(name = "amdhip64")"""
    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])
# HIP host code compiled by the C++ toolchain: AMD platform, headers from %s (system include path on Debian).
cc_library(name = "hip_host", defines = ["__HIP_PLATFORM_AMD__", "AOTIRT_USE_HIP"], deps = [":amdhip64"])
%s
""" % (inc or "(not found)", libs))

rocm_configure = repository_rule(
    implementation = _rocm_configure_impl,
    environ = ["ROCM_PATH"],
    local = True,
)
