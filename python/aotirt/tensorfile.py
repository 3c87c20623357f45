"""Tensor files for the runners: the safetensors format, read and written with json + numpy only.

Format (https://huggingface.co/docs/safetensors): 8-byte little-endian header length N; N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, optional "__metadata__": {str: str}} padded with spaces to
a multiple of 8; then the raw little-endian, C-contiguous data (offsets relative to the data start). See
docs/TENSOR_FILE.md.

Names: a list is written as "0", "1", ...; the C++ runner (aotirt_run) reads its inputs in numeric-name order and
writes outputs "0".."n-1". `load` returns names in numeric order when every name is a number, else in file order.

bfloat16: torch loads it as torch.bfloat16. numpy has no bfloat16: with ml_dtypes importable it loads as
ml_dtypes.bfloat16; without it, as uint16 arrays holding the raw bf16 bits (see `header()` for the stored dtype;
`save(..., dtypes={"x": "BF16"})` writes uint16 bits back as BF16; `bf16_bits_to_float32` converts).
"""
from __future__ import annotations

import json
import os
import struct
from typing import Any, Mapping, Sequence

import numpy as np

from aotirt.errors import TensorFileError

# safetensors dtype -> (numpy storage dtype, itemsize). BF16 / F8 are stored as unsigned ints of their width.
_STORAGE = {
    "BOOL": np.dtype("bool"), "U8": np.dtype("uint8"), "I8": np.dtype("int8"),
    "I16": np.dtype("<i2"), "U16": np.dtype("<u2"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I32": np.dtype("<i4"), "U32": np.dtype("<u4"), "F32": np.dtype("<f4"),
    "I64": np.dtype("<i8"), "U64": np.dtype("<u8"), "F64": np.dtype("<f8"),
    "F8_E4M3": np.dtype("uint8"), "F8_E5M2": np.dtype("uint8"),
}
_NUMPY_TO_ST = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "float16": "F16",
    "int32": "I32", "uint32": "U32", "float32": "F32", "int64": "I64", "uint64": "U64", "float64": "F64",
    "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}
# Same names as torch dtype attributes.
_TORCH_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "F16": "float16",
    "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32", "I64": "int64", "U64": "uint64",
    "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
}
# Stored bit patterns reinterpretable by torch (same width, same bits).
_TORCH_BITS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}
MAX_HEADER_BYTES = 100 * 2**20  # the reference implementation's limit


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def dtypes() -> list:
    """The safetensors dtype names this module reads and writes."""
    return sorted(_STORAGE)


# ----------------------------------------------------------------------------------------------------- writing

def _encode(name: str, value: Any, override: str | None) -> tuple:
    """(safetensors dtype, shape, little-endian C-order bytes) of a numpy array, torch tensor or scalar."""
    mod = type(value).__module__
    if mod.startswith("torch"):
        import torch
        if not isinstance(value, torch.Tensor):
            raise TensorFileError(f"tensor {name!r}: cannot save a {type(value).__name__}")
        t = value.detach().to("cpu").contiguous()
        tname = str(t.dtype).replace("torch.", "")
        st = _NUMPY_TO_ST.get(tname)
        if st is None:
            raise TensorFileError(f"tensor {name!r}: dtype {t.dtype} has no safetensors name; supported: "
                                  f"{sorted(_TORCH_NAMES.values())}")
        if st in ("BF16", "F8_E4M3", "F8_E5M2") or st.startswith("U") and st != "U8":
            # numpy conversion of these is missing or partial in torch; reinterpret the bits instead.
            t = t.view(getattr(torch, _TORCH_BITS[t.element_size()]))
        arr = t.numpy()
        shape = list(value.shape)
    else:
        arr = np.asarray(value)
        shape = list(arr.shape)
        st = _NUMPY_TO_ST.get(arr.dtype.name)
        if st is None:
            raise TensorFileError(f"tensor {name!r}: numpy dtype {arr.dtype} has no safetensors name; supported: "
                                  f"{sorted(_NUMPY_TO_ST)}")
        if st in ("BF16", "F8_E4M3", "F8_E5M2"):  # ml_dtypes arrays: keep the bits
            arr = arr.view(_STORAGE[st])
    if override is not None:
        if override not in _STORAGE:
            raise TensorFileError(f"tensor {name!r}: dtype override {override!r} unknown; valid: {dtypes()}")
        if arr.dtype.itemsize != _STORAGE[override].itemsize:
            raise TensorFileError(f"tensor {name!r}: cannot store {arr.dtype} ({arr.dtype.itemsize} bytes) as "
                                  f"{override} ({_STORAGE[override].itemsize} bytes)")
        st = override
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not np.little_endian):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return st, shape, arr.tobytes(order="C")


def save(path: str, tensors: Mapping[str, Any] | Sequence[Any], *, metadata: Mapping[str, str] | None = None,
         dtypes: Mapping[str, str] | None = None) -> None:
    """Writes numpy arrays / torch tensors (any strides, any device) to `path` in safetensors format.

    tensors: a dict name -> tensor, or a list (written as "0", "1", ...). metadata: optional str -> str.
    dtypes: optional per-name safetensors dtype override of the same width (e.g. {"x": "BF16"} for uint16 bits).
    """
    if isinstance(tensors, Mapping):
        items = list(tensors.items())
    elif isinstance(tensors, (list, tuple)):
        items = [(str(i), t) for i, t in enumerate(tensors)]
    else:
        raise TensorFileError(f"save takes a dict or a list of tensors, got {type(tensors).__name__}")
    overrides = dict(dtypes or {})
    unknown = sorted(set(overrides) - {n for n, _ in items})
    if unknown:
        raise TensorFileError(f"dtypes names {unknown} are not among the tensors being saved")
    header: dict = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TensorFileError("metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    blobs, offset = [], 0
    for name, value in items:
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise TensorFileError(f"tensor name {name!r} is not allowed (non-empty str, not '__metadata__')")
        st, shape, data = _encode(name, value, overrides.get(name))
        header[name] = {"dtype": st, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # data starts 8-byte aligned
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)  # never leave a half-written file under the real name


# ----------------------------------------------------------------------------------------------------- reading

def _read_header(path: str, buf: bytes | bytearray) -> tuple:
    if len(buf) < 8:
        raise TensorFileError(f"{path}: {len(buf)} bytes is too short for a safetensors file (8-byte header "
                              f"length, JSON header, data)")
    (n,) = struct.unpack_from("<Q", buf, 0)
    if n > MAX_HEADER_BYTES or 8 + n > len(buf):
        raise TensorFileError(f"{path}: header length {n} does not fit the file ({len(buf)} bytes): truncated or "
                              f"not a safetensors file")
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TensorFileError(f"{path}: header is not valid JSON ({e}): corrupt or not a safetensors file") from e
    if not isinstance(header, dict):
        raise TensorFileError(f"{path}: header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", None) or {}
    data_start, data_len = 8 + n, len(buf) - 8 - n
    entries = {}
    for name, info in header.items():
        try:
            st, shape, (begin, end) = info["dtype"], [int(d) for d in info["shape"]], info["data_offsets"]
        except (TypeError, KeyError, ValueError) as e:
            raise TensorFileError(f"{path}: entry {name!r} lacks dtype/shape/data_offsets: {info!r}") from e
        if st not in _STORAGE:
            raise TensorFileError(f"{path}: tensor {name!r} has dtype {st!r}; supported: {dtypes()}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if any(d < 0 for d in shape) or not (0 <= begin <= end <= data_len) \
                or end - begin != count * _STORAGE[st].itemsize:
            raise TensorFileError(f"{path}: tensor {name!r} (dtype {st}, shape {shape}) has data_offsets "
                                  f"[{begin}, {end}] that do not match its size or the {data_len} data bytes: "
                                  f"corrupt or truncated")
        entries[name] = (st, shape, data_start + begin)
    return entries, metadata


def _ordered(entries: dict) -> list:
    names = list(entries)
    if names and all(n.isdigit() for n in names):
        return sorted(names, key=int)
    return sorted(names, key=lambda n: entries[n][2])  # file order


def header(path: str) -> dict:
    """{name: {"dtype": safetensors dtype, "shape": [...]}} plus "__metadata__" when present (no data read)."""
    with open(path, "rb") as f:
        head = f.read(8)
        n = struct.unpack_from("<Q", head, 0)[0] if len(head) == 8 else 0
        size = os.fstat(f.fileno()).st_size
        if len(head) < 8 or n > MAX_HEADER_BYTES or 8 + n > size:
            raise TensorFileError(f"{path}: not a safetensors file (bad or truncated header)")
        buf = head + f.read(n)
    # Validate offsets against the real size without reading the data.
    entries, metadata = _read_header(path, _Sized(buf, size))
    out = {k: {"dtype": entries[k][0], "shape": entries[k][1]} for k in _ordered(entries)}
    if metadata:
        out["__metadata__"] = metadata
    return out


class _Sized(bytes):
    """Header bytes that report the whole file's length (so header() checks offsets without reading data)."""

    def __new__(cls, data: bytes, size: int):
        obj = super().__new__(cls, data)
        obj._size = size
        return obj

    def __len__(self) -> int:
        return self._size


def load(path: str, framework: str = "numpy") -> dict:
    """Reads a safetensors file into {name: array} (numpy) or {name: tensor} (torch, CPU). See the module doc."""
    if framework not in ("numpy", "torch"):
        raise TensorFileError(f"framework={framework!r} is not valid; valid: ['numpy', 'torch']")
    try:
        with open(path, "rb") as f:
            buf = bytearray(f.read())  # writable, so arrays and torch.from_numpy share it without warnings
    except OSError as e:
        raise TensorFileError(f"cannot read tensor file {path!r}: {e}") from e
    entries, _ = _read_header(path, buf)
    torch = None
    if framework == "torch":
        import torch
    mld = _ml_dtypes()
    out = {}
    for name in _ordered(entries):
        st, shape, start = entries[name]
        storage = _STORAGE[st]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        arr = np.frombuffer(buf, dtype=storage, count=count, offset=start).reshape(shape)
        if not arr.flags.aligned:
            arr = arr.copy()
        if torch is not None:
            t = torch.from_numpy(arr.astype(storage.newbyteorder("="), copy=False))
            target = getattr(torch, _TORCH_NAMES[st])
            out[name] = t if t.dtype == target else t.view(target)  # BF16 / F8: same bits, same width
        else:
            if st == "BF16" and mld is not None:
                arr = arr.view(mld.bfloat16)
            elif st == "F8_E4M3" and mld is not None:
                arr = arr.view(mld.float8_e4m3fn)
            elif st == "F8_E5M2" and mld is not None:
                arr = arr.view(mld.float8_e5m2)
            out[name] = arr
    return out


def load_list(path: str, framework: str = "numpy") -> list:
    """Reads a file whose names are "0".."n-1" (runner inputs/outputs) as a list in that order."""
    tensors = load(path, framework)
    expected = [str(i) for i in range(len(tensors))]
    if list(tensors) != expected:
        raise TensorFileError(f"{path}: expected tensors named {expected[:4]}{'...' if len(expected) > 4 else ''} "
                              f"(a list), got {list(tensors)[:8]}")
    return list(tensors.values())


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> uint16 bfloat16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=np.float32)), np.uint16(0x7FC0), rounded).astype(np.uint16)
