"""Builds the aotirt wheel from Bazel outputs with the `wheel` package's WheelFile (hashes, RECORD, ordering).

  build_wheel.py --out DIR --python-version 3.11 --ext-suffix .cpython-311-x86_64-linux-gnu.so \
      --platform-tag manylinux_2_36_x86_64 --py aotirt/__init__.py ... --c-module _C.so \
      --lib libaoti_cuda_shims.so --lib libaotirt_runtime.so --bin aotirt_run --manifest shim_manifest.tsv

Layout (site-packages/):
  aotirt/*.py, aotirt/_C.so, aotirt/shim_manifest.tsv, aotirt/lib/*.so, aotirt/bin/aotirt_run
  aotirt-X.data/scripts/aotirt_run      launcher (pip rewrites its #!python) that execs aotirt/bin/aotirt_run
libcudart.so.13 comes from NVIDIA's nvidia-cuda-runtime wheel (Requires-Dist), installed beside us as
site-packages/nvidia/cu13/lib: every ELF file gets a RUNPATH to it and to aotirt/lib, relative to $ORIGIN.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from wheel.wheelfile import WheelFile

NAME = "aotirt"
CUDART_REQ = "nvidia-cuda-runtime>=13.0,<14"
REQUIRES = ["absl-py>=2.1", "numpy>=1.26", CUDART_REQ]
# RUNPATH of each installed ELF file, relative to the file: our libraries, then the nvidia-cuda-runtime wheel.
RUNPATHS = {
    "aotirt/_C.so": "$ORIGIN/lib:$ORIGIN/../nvidia/cu13/lib",
    "aotirt/lib/": "$ORIGIN:$ORIGIN/../../nvidia/cu13/lib",
    "aotirt/bin/": "$ORIGIN/../lib:$ORIGIN/../../nvidia/cu13/lib",
}
LAUNCHER = """#!python
# Runs the C++ runner shipped inside the aotirt package (aotirt/bin/aotirt_run, RUNPATH to aotirt/lib).
import importlib.util, os, sys
spec = importlib.util.find_spec("aotirt")
exe = os.path.join(list(spec.submodule_search_locations)[0], "bin", "aotirt_run")
os.execv(exe, [exe] + sys.argv[1:])
"""


# Benchmark code lives in benchmarks/ (benchmarks/model_bench for the model benchmark), never in the wheel; the old
# in-package homes are refused so that a stray copy cannot ship (tests/cpu/platforms/test_wheel.py checks the wheel).
BENCHMARK_PATHS = re.compile(r"^(bench|model_bench)/|^bench_models\.py$|^bench\.py$")


def is_benchmark_code(rel: str) -> bool:
    """rel: a path inside the aotirt package (bench/run.py, bench_models.py, ...)."""
    return bool(BENCHMARK_PATHS.search(rel))


def read_version(py_files: list[str]) -> str:
    for f in py_files:
        if os.path.basename(f) == "version.py":
            m = re.search(r'__version__\s*=\s*"([^"]+)"', open(f).read())
            if m:
                return m.group(1)
    raise SystemExit("build_wheel: aotirt/version.py with __version__ not among --py files")


def python_tags(version: str, ext_suffix: str) -> tuple[str, str]:
    """cpXY for both python and abi tags; the extension suffix must agree (a cp311 _C.so is no cp312 wheel)."""
    major, minor = version.split(".")[:2]
    tag = f"cp{major}{minor}"
    if f".cpython-{major}{minor}-" not in ext_suffix:
        raise SystemExit(f"build_wheel: EXT_SUFFIX {ext_suffix!r} does not match Python {version}")
    return tag, tag


def set_runpath(path: str, runpath: str, patchelf: str) -> None:
    subprocess.run([patchelf, "--set-rpath", runpath, "--force-rpath", path], check=True)
    # --force-rpath writes DT_RPATH; convert to DT_RUNPATH so LD_LIBRARY_PATH still wins (what users expect).
    subprocess.run([patchelf, "--set-rpath", runpath, path], check=True)


def metadata(version: str, python_version: str) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        "Summary: Run PyTorch AOTInductor packages (.pt2) on CUDA without libtorch",
        "License: BSD-3-Clause",
        f"Requires-Python: =={'.'.join(python_version.split('.')[:2])}.*",
    ] + [f"Requires-Dist: {r}" for r in REQUIRES]
    return "\n".join(lines) + "\n\naotirt: the libtorch-free AOTInductor runtime (shims, runtime, runner, Python API).\n"


def wheel_file(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: aotirt tools/wheel/build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the .whl path Bazel expects, or a directory")
    ap.add_argument("--python-version", required=True)
    ap.add_argument("--ext-suffix", required=True)
    ap.add_argument("--platform-tag", required=True)
    ap.add_argument("--py", action="append", default=[], help="a file of python/aotirt (package root inferred)")
    ap.add_argument("--c-module", required=True)
    ap.add_argument("--lib", action="append", default=[])
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--patchelf", default=shutil.which("patchelf") or "patchelf")
    a = ap.parse_args(argv)
    if not shutil.which(a.patchelf):
        raise SystemExit("build_wheel: patchelf not found: run tools/setup.sh (Debian patchelf)")
    version = read_version(a.py)
    py_tag, abi_tag = python_tags(a.python_version, a.ext_suffix)
    tag = f"{py_tag}-{abi_tag}-{a.platform_tag}"
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1700000000")  # reproducible zip timestamps

    with tempfile.TemporaryDirectory() as stage, tempfile.TemporaryDirectory() as outdir:
        pkg = os.path.join(stage, NAME)
        for f in a.py:
            rel = f.split("/aotirt/", 1)[1] if "/aotirt/" in f else os.path.basename(f)
            if is_benchmark_code(rel):
                raise SystemExit(f"build_wheel: {f} is benchmark code; it lives in benchmarks/, not in the wheel")
            dst = os.path.join(pkg, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(f, dst)
        os.makedirs(os.path.join(pkg, "lib"))
        os.makedirs(os.path.join(pkg, "bin"))
        elf = {os.path.join(pkg, "_C.so"): RUNPATHS["aotirt/_C.so"]}
        shutil.copyfile(a.c_module, os.path.join(pkg, "_C.so"))
        for lib in a.lib:
            dst = os.path.join(pkg, "lib", os.path.basename(lib))
            shutil.copyfile(lib, dst)
            elf[dst] = RUNPATHS["aotirt/lib/"]
        for b in a.bin:
            dst = os.path.join(pkg, "bin", os.path.basename(b))
            shutil.copyfile(b, dst)
            elf[dst] = RUNPATHS["aotirt/bin/"]
        for path, runpath in elf.items():
            os.chmod(path, 0o755)
            set_runpath(path, runpath, a.patchelf)
        shutil.copyfile(a.manifest, os.path.join(pkg, "shim_manifest.tsv"))
        scripts = os.path.join(stage, f"{NAME}-{version}.data", "scripts")
        os.makedirs(scripts)
        with open(os.path.join(scripts, "aotirt_run"), "w") as f:
            f.write(LAUNCHER)
        os.chmod(os.path.join(scripts, "aotirt_run"), 0o755)
        dist = os.path.join(stage, f"{NAME}-{version}.dist-info")
        os.makedirs(dist)
        with open(os.path.join(dist, "METADATA"), "w") as f:
            f.write(metadata(version, a.python_version))
        with open(os.path.join(dist, "WHEEL"), "w") as f:
            f.write(wheel_file(tag))

        name = f"{NAME}-{version}-{tag}.whl"
        out = a.out if a.out.endswith(".whl") else os.path.join(a.out, name)
        if a.out.endswith(".whl") and os.path.basename(a.out) != name:
            raise SystemExit(f"build_wheel: Bazel expects {os.path.basename(a.out)} but the wheel is {name}: update "
                             "AOTIRT_VERSION in tools/wheel/wheel.bzl to python/aotirt/version.py")
        tmp = os.path.join(outdir, name)
        with WheelFile(tmp, "w") as wf:
            wf.write_files(stage)
        shutil.copyfile(tmp, out)
    print(f"build_wheel: wrote {out} ({tag})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
