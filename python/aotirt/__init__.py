"""aotirt: run PyTorch AOTInductor packages (.pt2) without libtorch.

    path = aotirt.compile(model, (x,), "model.pt2")   # on a machine with a GPU and a CUDA torch
    runner = aotirt.load(path)                          # needs the native module aotirt._C
    y = runner(x)                                       # any __dlpack__ inputs; outputs without a copy

Importing aotirt imports neither torch nor the native module (the runtime works with CuPy alone).
"""
from aotirt import tensorfile
from aotirt.errors import (CliError, Error, ExecuTorchError, InputError, LoweringError, PackageError, RunError,
                           RuntimeLoadError, SmallGpuError, SpecError, TensorFileError, UnsupportedPlatformError,
                           UnsupportedShimError)
from aotirt.api import compile  # noqa: A004 (the public name is compile, like torch.compile)
from aotirt.runtime import DLPackTensor, Runner, gemm_stats, load
from aotirt.graphs import CapturedRunner, capture
from aotirt.specs import CompileOptions, inductor_options
from aotirt.version import __version__

__all__ = [
    "compile", "load", "capture", "gemm_stats", "CapturedRunner", "Runner", "DLPackTensor", "CompileOptions", "inductor_options", "tensorfile",
    "Error", "SpecError", "LoweringError", "PackageError", "RuntimeLoadError", "RunError", "InputError",
    "TensorFileError", "CliError", "UnsupportedPlatformError", "UnsupportedShimError", "SmallGpuError",
    "ExecuTorchError", "__version__",
]
