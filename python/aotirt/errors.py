"""The aotirt.Error hierarchy: every failure the package reports on purpose is one of these.

Messages say what was wrong and what to change. Classes that are also a builtin exception (ValueError, TypeError)
inherit it too, so callers that catch the builtin keep working.
"""


class Error(Exception):
    """Base class of every error aotirt raises on purpose."""


class SpecError(Error, ValueError):
    """A compile option or spec has an invalid value (the message lists the valid ones)."""


class LoweringError(Error):
    """Exporting or compiling a model to a .pt2 package failed or was refused."""


class PackageError(Error):
    """The .pt2 package is missing, unreadable or not an AOTInductor package."""


class RuntimeLoadError(Error):
    """The native runtime could not load a package (or the native module itself is unavailable)."""


class RunError(Error):
    """Running a loaded model failed."""


class InputError(RunError, ValueError):
    """The inputs given to a Runner do not match the model (count, device, DLPack support)."""


class TensorFileError(Error, ValueError):
    """A tensor file (safetensors format) is corrupt, truncated or holds something aotirt cannot represent."""


class CliError(Error):
    """Bad command-line usage of `python -m aotirt`."""


class UnsupportedPlatformError(LoweringError):
    """A compile option combination the target platform (linux_cuda, windows_cuda, rocm) cannot run."""


class UnsupportedShimError(LoweringError):
    """The model's generated code would call shims the target platform's library lacks (`shims`: all, sorted)."""

    def __init__(self, message: str, shims=()):
        super().__init__(message)
        self.shims = sorted(shims)


class SmallGpuError(LoweringError):
    """The lowering GPU is too small for Inductor's Triton GEMM templates and the options leave no other choice."""


class ExecuTorchError(Error):
    """The ExecuTorch door: executorch missing, a .pte without an aotirt delegate, bad compile specs."""
