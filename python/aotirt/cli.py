"""The aotirt command line (absl): `python -m aotirt <command> [flags]`.

Commands:
  lower   --model=pkg.module:factory --package=out.pt2 [--max_autotune=ON|OFF] [--max_autotune_gemm_backends=ATEN]
          [--max_autotune_conv_backends=ATEN] [--attention_backend=CUDNN,TRITON] [--coordinate_descent_tuning=ON|OFF]
          [--float32_matmul_precision=highest|high] [--platform=linux|windows] [--target=cuda|rocm]
          [--shim_library_path=DIR] [--inputs=in.safetensors] [--device 0]: imports the factory, calls it, and
          compiles what it returns (a model with example_inputs(), or a (model, example_inputs) pair; --inputs
          overrides the example inputs) into a .pt2. Needs torch with CUDA and a GPU; logs progress while Inductor
          autotunes and compiles.
  bench   --package model.pt2 [--inputs in.safetensors] [--device 0] [--warmup 10] [--iters 100] [--json out.json]:
          latency of a package on our runtime (CUDA events; inputs from the file or random ones of the shapes the
          package records). Needs torch with CUDA and a GPU.
  run     --package model.pt2 --inputs in.safetensors [--outputs out.safetensors] [--device 0] [--warmup 3]
          [--iters 20]: runs a package on tensors from a tensor file (docs/TENSOR_FILE.md; names "0".."n-1") and
          prints per-call latency. Needs torch (to put the inputs on the GPU) and aotirt._C.
  doctor  prints what this machine has: Python, torch, ExecuTorch, the native module, GPUs, where cuBLASLt was
          found, and the platform support table from the shim manifest.
          Exits 1 when something needed to run packages is missing.

Exit status: 0 ok; 1 usage or flag error; 2 an aotirt error (the message says what to change).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib
import json
import os
import platform
import statistics
import sys
import time

from absl import app, flags

from aotirt import package, runtime, specs, tensorfile
from aotirt.errors import CliError, Error
from aotirt.version import __version__

COMMANDS = ("lower", "run", "bench", "doctor")

FLAGS = flags.FLAGS
flags.DEFINE_string("package", None, "run/bench: the .pt2 package to run; lower: where to write it.")
flags.DEFINE_string("inputs", None, "run/bench/lower: tensor file (safetensors) with the inputs named 0..n-1.")
flags.DEFINE_string("outputs", None, "run: where to write the outputs (safetensors, names 0..n-1); optional.")
flags.DEFINE_integer("device", 0, "GPU index.", lower_bound=0)
flags.DEFINE_integer("warmup", None, "run/bench: untimed calls before timing (run 3, bench 10).", lower_bound=0)
flags.DEFINE_integer("iters", None, "run/bench: timed calls (run 20, bench 100).", lower_bound=1)
flags.DEFINE_string("json", None, "bench: also write the timings as JSON here.")
flags.DEFINE_string("model", None, "lower: pkg.module:factory returning a model (with example_inputs()) or a "
                    "(model, example_inputs) pair.")
flags.DEFINE_string("max_autotune", "ON", "lower: ON or OFF (OFF: GEMMs go to cuBLAS shims, linux_cuda only).")
flags.DEFINE_string("max_autotune_gemm_backends", None,
                    f"lower: one of {list(specs.VALID_GEMM_BACKEND_VALUES)} (case, spaces and order do not matter); "
                    f"default: the platform's (ATEN on linux_cuda, TRITON on windows_cuda and rocm).")
flags.DEFINE_string("max_autotune_conv_backends", None,
                    f"lower: one of {list(specs.VALID_CONV_BACKEND_VALUES)} (ATEN: the cuDNN convolution shim, "
                    f"linux_cuda only; AUTO: lower each, time them here, keep the fastest); default: the platform's "
                    f"(ATEN on linux_cuda, TRITON elsewhere).")
flags.DEFINE_string("attention_backend", None,
                    f"lower: how scaled_dot_product_attention is lowered, one of {list(specs.VALID_ATTENTION_BACKEND_VALUES)}"
                    f" (MATH: decomposed into matmuls + softmax; CUDNN: fused SDPA kernels through the attention "
                    f"shims, linux_cuda only; TRITON: a Triton flash-attention kernel in the package; CUDNN,TRITON: "
                    f"the shims where they take the call, else the Triton kernel; AUTO: lower CUDNN,TRITON, TRITON "
                    f"and MATH, time them here, keep the fastest; case does not matter); default: "
                    f"the platform's (CUDNN,TRITON on linux_cuda, TRITON on windows_cuda, MATH on rocm).")
flags.DEFINE_string("coordinate_descent_tuning", None, "lower: ON or OFF: Inductor's coordinate descent tuning (also "
                    "fuses one-row matmuls such as a decode step's into reductions; slower compiles); default: the "
                    "same as --max_autotune, as torch.compile's max-autotune mode.")
flags.DEFINE_string("float32_matmul_precision", "highest", "lower: highest or high (TF32).")
flags.DEFINE_string("platform", "linux", "lower: linux or windows.")
flags.DEFINE_string("target", None, "lower: cuda or rocm (default: detected from the installed torch).")
flags.DEFINE_string("shim_library_path", None, "lower --platform=windows: the folder holding aoti_cuda_shims.lib.")
flags.DEFINE_string("auto_timing", "graphs", "lower with a backend flag AUTO: time the candidates as CUDA graph "
                    "replays (graphs) or plain calls (eager, for models that will not be captured).")


def _usage(msg: str) -> app.UsageError:
    return app.UsageError(f"{msg}\nusage: python -m aotirt {{{'|'.join(COMMANDS)}}} [flags] "
                          f"(python -m aotirt --help for the flags)")


def _count(value, default: int) -> int:
    return default if value is None else value


def _torch_with_gpu(command: str):
    """torch, when it has CUDA and sees a GPU; else a CliError saying what this command needs."""
    torch = runtime.torch_or_none()
    if torch is None:
        raise CliError(f"{command} needs torch with CUDA and a GPU; torch is not importable here")
    if not (getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)):
        raise CliError(f"{command} needs a GPU build of torch; this torch ({torch.__version__}) is built without "
                       f"CUDA: run it on the GPU machine")
    if not torch.cuda.is_available():
        raise CliError(f"{command} needs a GPU; torch {torch.__version__} sees none (check nvidia-smi and "
                       f"CUDA_VISIBLE_DEVICES)")
    return torch


def compile_options_from_flags() -> "specs.CompileOptions":
    """The lower command's spec flags -> CompileOptions (the same validation as aotirt.compile)."""
    return specs.CompileOptions(
        max_autotune=specs.parse_on_off(FLAGS.max_autotune, "--max_autotune"),
        max_autotune_gemm_backends=FLAGS.max_autotune_gemm_backends,
        max_autotune_conv_backends=FLAGS.max_autotune_conv_backends,
        float32_matmul_precision=FLAGS.float32_matmul_precision, platform=FLAGS.platform, target=FLAGS.target,
        shim_library_path=FLAGS.shim_library_path, auto_timing=FLAGS.auto_timing,
        attention_backend=FLAGS.attention_backend,
        coordinate_descent_tuning=None if FLAGS.coordinate_descent_tuning is None else specs.parse_on_off(
            FLAGS.coordinate_descent_tuning, "--coordinate_descent_tuning"))


def load_factory(spec: str):
    """'pkg.module:factory' -> the factory callable (CliError when it cannot be imported or found)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"--model={spec!r} must be pkg.module:factory (e.g. aotirt.demo:siglip_like)")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise CliError(f"--model={spec!r}: cannot import {module_name!r}: {type(e).__name__}: {e} (is it on "
                       f"PYTHONPATH?)") from e
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise CliError(f"--model={spec!r}: {module_name} has no attribute {attr!r}")
    if not callable(factory):
        raise CliError(f"--model={spec!r}: {attr} is not callable")
    return factory


def cmd_lower() -> int:
    missing = [f"--{n}" for n in ("model", "package") if not getattr(FLAGS, n)]
    if missing:
        raise _usage(f"lower needs {' and '.join(missing)}")
    if not package.has_suffix(FLAGS.package):
        raise _usage(f"--package={FLAGS.package!r} must end with {package.SUFFIX}")
    opts = compile_options_from_flags()  # spec errors first: they need no GPU
    factory = load_factory(FLAGS.model)
    torch = _torch_with_gpu("lower")
    from aotirt.api import compile as compile_package
    device = f"cuda:{FLAGS.device}"
    made = factory()
    model, example = (made if isinstance(made, tuple) and len(made) == 2 else (made, None))
    if FLAGS.inputs:
        example = tuple(tensorfile.load_list(FLAGS.inputs, framework="torch"))
    elif example is None:
        if not hasattr(model, "example_inputs"):
            raise CliError(f"--model={FLAGS.model}: the factory returned a {type(model).__name__} without "
                           f"example_inputs(); return (model, example_inputs) or pass --inputs")
        example = model.example_inputs()
    if not isinstance(example, (tuple, list)):
        example = (example,)
    example = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in example)
    # The model follows its example inputs' floating dtype (e.g. the demo's bfloat16 example_inputs()).
    float_dt = next((x.dtype for x in example if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
    model = (model.to(device, float_dt) if float_dt is not None else model.to(device)).eval()
    print(f"lowering {FLAGS.model} -> {FLAGS.package} with {opts}", flush=True)
    path = compile_package(model, example, FLAGS.package, device=device, options=opts)
    print(f"wrote {path}")
    return 0


def _random_inputs(torch, runner, device: str) -> list:
    """Inputs of the shapes and dtypes the package records (metadata aotirt_inputs); CliError when it has none."""
    dtypes = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
              6: torch.float32, 7: torch.float64, 9: torch.complex64, 10: torch.complex128, 11: torch.bool,
              15: torch.bfloat16}
    try:
        recorded = json.loads(runner.metadata.get("aotirt_inputs", ""))
    except ValueError:
        recorded = None
    if not recorded or any(-1 in e.get("shape", [-1]) or e.get("dtype") not in dtypes for e in recorded):
        raise CliError("the package records no static input shapes (metadata aotirt_inputs); pass --inputs")
    out = []
    for e in recorded:
        dt = dtypes[e["dtype"]]
        t = (torch.randn(e["shape"], device=device, dtype=dt) if dt.is_complex
             else torch.randn(e["shape"], device=device).to(dt) if dt.is_floating_point
             else torch.zeros(e["shape"], device=device, dtype=dt))
        out.append(torch.as_strided(t.contiguous(), e["shape"], e["strides"]) if e.get("strides") else t)
    return out


def cmd_bench() -> int:
    if not FLAGS.package:
        raise _usage("bench needs --package")
    if not os.path.isfile(FLAGS.package):
        raise CliError(f"--package {FLAGS.package!r}: no such file (pass the .pt2 aotirt.compile wrote)")
    if FLAGS.inputs:
        tensorfile.load_list(FLAGS.inputs, framework="numpy")  # validate the file before any GPU work
    torch = _torch_with_gpu("bench")
    device = f"cuda:{FLAGS.device}"
    runner = runtime.load(FLAGS.package, device=FLAGS.device)
    inputs = ([t.to(device) for t in tensorfile.load_list(FLAGS.inputs, framework="torch")] if FLAGS.inputs
              else _random_inputs(torch, runner, device))
    warmup, iters = _count(FLAGS.warmup, 10), _count(FLAGS.iters, 100)
    with torch.cuda.device(FLAGS.device):
        for _ in range(warmup):
            runner.run_list(inputs)
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for start, end in events:
            start.record()
            runner.run_list(inputs)
            end.record()
        torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in events)
    result = {"package": os.path.abspath(FLAGS.package), "device": torch.cuda.get_device_name(FLAGS.device),
              "iters": iters, "warmup": warmup, "median_ms": statistics.median(ms), "mean_ms": statistics.fmean(ms),
              "min_ms": ms[0], "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))],
              "metadata": {k: v for k, v in runner.metadata.items() if k.startswith("aotirt_") and k != "aotirt_inputs"}}
    print(f"{FLAGS.package} on {result['device']}: median {result['median_ms']:.3f} ms, mean "
          f"{result['mean_ms']:.3f} ms, p90 {result['p90_ms']:.3f} ms, min {result['min_ms']:.3f} ms "
          f"({iters} calls, CUDA events)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {FLAGS.json}")
    return 0


def cmd_run() -> int:
    missing = [f"--{n}" for n in ("package", "inputs") if not getattr(FLAGS, n)]
    if missing:
        raise _usage(f"run needs {' and '.join(missing)}")
    if not os.path.isfile(FLAGS.package):
        raise CliError(f"--package {FLAGS.package!r}: no such file (pass the .pt2 aotirt.compile wrote)")
    host_inputs = tensorfile.load_list(FLAGS.inputs, framework="numpy")  # validates the file before any GPU work
    torch = runtime.torch_or_none()
    if torch is None or not torch.cuda.is_available():
        raise CliError("run needs torch with CUDA and a visible GPU to place the inputs on the device; on a machine "
                       "without torch use the C++ runner aotirt_run (same tensor file format)")
    device = f"cuda:{FLAGS.device}"
    inputs = [t.to(device) for t in tensorfile.load_list(FLAGS.inputs, framework="torch")]
    del host_inputs
    runner = runtime.load(FLAGS.package, device=FLAGS.device)
    print(f"loaded {FLAGS.package}: inputs {runner.input_names}, outputs {runner.output_names}", flush=True)
    warmup, iters = _count(FLAGS.warmup, 3), _count(FLAGS.iters, 20)
    with torch.cuda.device(FLAGS.device):
        for _ in range(warmup):
            runner.run_list(inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            outputs = runner.run_list(inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"latency over {iters} calls (host-timed, synchronized): median {statistics.median(times):.3f} ms, "
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
    torch = runtime.torch_or_none()
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
        native = runtime.native()
        print(f"aotirt._C: {getattr(native, '__file__', '?')}")
        print(f"shims: {native.shims_version()}")
    except Error as e:
        print(f"aotirt._C: not importable: {e}")
        problems.append("the native module aotirt._C is missing")
    dirs = runtime.nvidia_wheel_lib_dirs()
    print("cuBLASLt search: " + ", ".join(dirs + ["then the dynamic loader path (LD_LIBRARY_PATH, ldconfig)"]))
    found = [hit for d in dirs for hit in sorted(glob.glob(os.path.join(d, "libcublasLt.so*")))]
    on_path = ctypes.util.find_library("cublasLt")
    print(f"  cuBLASLt would be found: {found[0] if found else on_path or 'nowhere'}"
          + ("" if found or on_path else " (GEMM shims fail at first use; install nvidia-cublas for CUDA 13)"))
    print(f"  libcublasLt on the loader path: {on_path or 'not found'}")
    from aotirt import executorch as et_door
    print(f"executorch: {_executorch_version() if et_door.HAVE_EXECUTORCH else 'not importable (' + et_door.EXECUTORCH_IMPORT_ERROR + ')'}")
    from aotirt import platforms
    try:
        print(f"platform support (shim manifest {platforms.manifest_path()}):")
        print(platforms.support_table())
    except Error as e:
        print(f"platform support: {e}")
        problems.append("the shim manifest is missing")
    print(f"doctor: {len(problems)} problem(s)" + (": " + "; ".join(problems) if problems else ""))
    return 1 if problems else 0


def _executorch_version() -> str:
    try:
        from executorch import version
        return getattr(version, "__version__", "?")
    except Exception:
        return "?"


def main(argv: list) -> int:
    if len(argv) < 2:
        raise _usage("missing command")
    command, extra = argv[1], argv[2:]
    if command not in COMMANDS:
        raise _usage(f"unknown command {command!r}; valid: {list(COMMANDS)}")
    if extra:
        raise _usage(f"unexpected arguments {extra} (flags are --name=value)")
    try:
        return {"lower": cmd_lower, "run": cmd_run, "bench": cmd_bench, "doctor": cmd_doctor}[command]()
    except Error as e:
        print(f"aotirt {command}: error: {e}", file=sys.stderr)
        return 2


def run_main() -> None:
    app.run(main)
