"""aotirt_wheel: the wheel for the interpreter @local_python was configured with (the project venv, or
--repo_env=PYTHON_BIN_PATH=/path/python3.12 for cp312). Tags are known at analysis time, so the output name is too."""

load("@local_python//:defs.bzl", "EXT_SUFFIX", "PYTHON_VERSION")

# Must equal python/aotirt/version.py's __version__ (build_wheel.py refuses to build otherwise).
AOTIRT_VERSION = "0.1.0"

# Built on Debian 12 (glibc 2.36) but needs only GLIBC_2.34 and GLIBCXX_3.4.29 symbols (auditwheel show); the only
# library outside the manylinux policy is libcudart.so.13 from the nvidia-cuda-runtime
# wheel (Requires-Dist), reached by RUNPATH, as torch's own cu13 wheels do. See README "Platforms".
PLATFORM_TAG = "manylinux_2_34_x86_64"

def python_tag():
    return "cp" + PYTHON_VERSION.replace(".", "")

def wheel_name():
    return "aotirt-%s-%s-%s-%s.whl" % (AOTIRT_VERSION, python_tag(), python_tag(), PLATFORM_TAG)

def aotirt_wheel(name, py, c_module, libs, bins, manifest, **kwargs):
    args = ["--python-version", PYTHON_VERSION, "--ext-suffix", EXT_SUFFIX, "--platform-tag", PLATFORM_TAG,
            "--c-module", "$(location %s)" % c_module, "--manifest", "$(location %s)" % manifest]
    args += ["--lib $(location %s)" % l for l in libs]
    args += ["--bin $(location %s)" % b for b in bins]
    native.genrule(
        name = name,
        srcs = [py, c_module, manifest] + libs + bins + ["//:WORKSPACE"],
        outs = [wheel_name()],
        # The builder runs on the project venv (it has `wheel`), whatever interpreter the module was built for.
        cmd = ("ROOT=$$(dirname $$(readlink -f $(location //:WORKSPACE))); PY=$$ROOT/.venv/bin/python; " +
               "[ -x $$PY ] || PY=python3; " +
               "$$PY $(location //tools/wheel:build_wheel.py) --out $@ " +
               "$$(for f in $(locations %s); do echo --py $$f; done) " % py + " ".join(args)),
        tools = ["//tools/wheel:build_wheel.py"],
        **kwargs
    )
