"""The aotirt command line (absl): `python -m aotirt <command> [flags]`.

Commands:
  run     --package model.pt2 --inputs in.safetensors [--outputs out.safetensors] [--device 0] [--warmup 3]
          [--iters 20]: runs a package on tensors from a tensor file (docs/TENSOR_FILE.md; names "0".."n-1") and
          prints per-call latency. Needs torch (to put the inputs on the GPU) and aotirt._C.
  doctor  prints what this machine has: Python, torch, the native module, GPUs, where cuBLASLt is searched.
          Exits 1 when something needed to run packages is missing.

Exit status: 0 ok; 1 usage or flag error; 2 an aotirt error (the message says what to change).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import statistics
import sys
import time

from absl import app, flags

from aotirt import runtime, tensorfile
from aotirt.errors import CliError, Error
from aotirt.version import __version__

COMMANDS = ("run", "doctor")

FLAGS = flags.FLAGS
flags.DEFINE_string("package", None, "run: the .pt2 package to run.")
flags.DEFINE_string("inputs", None, "run: tensor file (safetensors) with the inputs named 0..n-1.")
flags.DEFINE_string("outputs", None, "run: where to write the outputs (safetensors, names 0..n-1); optional.")
flags.DEFINE_integer("device", 0, "run: GPU index.", lower_bound=0)
flags.DEFINE_integer("warmup", 3, "run: untimed calls before timing.", lower_bound=0)
flags.DEFINE_integer("iters", 20, "run: timed calls.", lower_bound=1)


def _usage(msg: str) -> app.UsageError:
    return app.UsageError(f"{msg}\nusage: python -m aotirt {{{'|'.join(COMMANDS)}}} [flags] "
                          f"(python -m aotirt --help for the flags)")


def cmd_run() -> int:
    missing = [f"--{n}" for n in ("package", "inputs") if not getattr(FLAGS, n)]
    if missing:
        raise _usage(f"run needs {' and '.join(missing)}")
    if not os.path.isfile(FLAGS.package):
        raise CliError(f"--package {FLAGS.package!r}: no such file (pass the .pt2 aotirt.compile wrote)")
    host_inputs = tensorfile.load_list(FLAGS.inputs, framework="numpy")  # validates the file before any GPU work
    torch = runtime._torch_or_none()
    if torch is None or not torch.cuda.is_available():
        raise CliError("run needs torch with CUDA and a visible GPU to place the inputs on the device; on a machine "
                       "without torch use the C++ runner aotirt_run (same tensor file format)")
    device = f"cuda:{FLAGS.device}"
    inputs = [t.to(device) for t in tensorfile.load_list(FLAGS.inputs, framework="torch")]
    del host_inputs
    runner = runtime.load(FLAGS.package, device=FLAGS.device)
    print(f"loaded {FLAGS.package}: inputs {runner.input_names}, outputs {runner.output_names}", flush=True)
    with torch.cuda.device(FLAGS.device):
        for _ in range(FLAGS.warmup):
            runner.run_list(inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(FLAGS.iters):
            t0 = time.perf_counter()
            outputs = runner.run_list(inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"latency over {FLAGS.iters} calls (host-timed, synchronized): median {statistics.median(times):.3f} ms, "
          f"mean {statistics.fmean(times):.3f} ms, min {min(times):.3f} ms")
    for i, o in enumerate(outputs):
        print(f"output {i}: shape {tuple(o.shape)} dtype {o.dtype}")
    if FLAGS.outputs:
        tensorfile.save(FLAGS.outputs, outputs)
        print(f"wrote {FLAGS.outputs}")
    return 0


def _driver_gpu_count() -> tuple:
    """(count, text): GPUs as the CUDA driver sees them (no torch, no _C), via cuInit + cuDeviceGetCount."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, f"no CUDA driver (libcuda.so.1: {e})"
    rc = cuda.cuInit(0)
    if rc != 0:
        return 0, f"cuInit failed with CUresult {rc} (no usable GPU, or CUDA_VISIBLE_DEVICES hides them)"
    count = ctypes.c_int(0)
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0:
        return 0, f"cuDeviceGetCount failed with CUresult {rc}"
    return count.value, f"{count.value} GPU(s)"


def cmd_doctor() -> int:
    problems = []
    print(f"python: {platform.python_version()} ({sys.executable})")
    print(f"aotirt: {__version__} ({os.path.dirname(os.path.abspath(__file__))})")
    torch = runtime._torch_or_none()
    if torch is None:
        print("torch: not importable (aotirt.compile needs it; load() then returns DLPack outputs)")
    else:
        cuda = torch.version.cuda
        line = f"torch: {torch.__version__}, CUDA build {cuda or 'none'}"
        if cuda and torch.cuda.is_available():
            names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            line += f", GPUs: {names}"
        else:
            line += ", no GPU visible to torch"
        print(line)
    gpus, text = _driver_gpu_count()
    print(f"CUDA driver: {text}")
    if gpus == 0:
        print("  (no GPU here: packages cannot run on this machine; everything else below still applies)")
    try:
        native = runtime._native()
        print(f"aotirt._C: {getattr(native, '__file__', '?')}")
        print(f"shims: {native.shims_version()}")
    except Error as e:
        print(f"aotirt._C: not importable: {e}")
        problems.append("the native module aotirt._C is missing")
    dirs = runtime.nvidia_wheel_lib_dirs()
    print("cuBLASLt search: " + ", ".join(dirs + ["then the dynamic loader path (LD_LIBRARY_PATH, ldconfig)"]))
    print(f"  libcublasLt on the loader path: {ctypes.util.find_library('cublasLt') or 'not found'}")
    print(f"doctor: {len(problems)} problem(s)" + (": " + "; ".join(problems) if problems else ""))
    return 1 if problems else 0


def main(argv: list) -> int:
    if len(argv) < 2:
        raise _usage("missing command")
    command, extra = argv[1], argv[2:]
    if command not in COMMANDS:
        raise _usage(f"unknown command {command!r}; valid: {list(COMMANDS)}")
    if extra:
        raise _usage(f"unexpected arguments {extra} (flags are --name=value)")
    try:
        return cmd_run() if command == "run" else cmd_doctor()
    except Error as e:
        print(f"aotirt {command}: error: {e}", file=sys.stderr)
        return 2


def run_main() -> None:
    app.run(main)
