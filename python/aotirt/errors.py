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
