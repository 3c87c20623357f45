"""The .pt2 package format, in one place: the suffix, the layout AOTInductor writes, and the metadata JSON inside the
zip that the runtime reads (<wrapper>_metadata.json next to the one wrapper .so; the rule of
backends/cuda/runtime/package.cc). Read and written with zipfile: no torch, no GPU, no native module.
"""
from __future__ import annotations

import json
import os
import zipfile
from typing import Mapping, Sequence

from aotirt.errors import PackageError, SpecError

SUFFIX = ".pt2"  # AOTInductor's package suffix


def has_suffix(path: str) -> bool:
    return os.fspath(path).endswith(SUFFIX)


def check_path(package_path, field: str = "package_path") -> str | None:
    """None stays None; else the path as str, refused (SpecError) unless it ends with .pt2."""
    if package_path is None:
        return None
    package_path = os.fspath(package_path)
    if not has_suffix(package_path):
        raise SpecError(f"{field}={package_path!r} must end with {SUFFIX} (AOTInductor's package suffix)")
    return package_path


def metadata_entry(names: Sequence[str], model_name: str = "model") -> str:
    """The zip entry of the metadata JSON the runtime reads: <wrapper>.so -> <wrapper>_metadata.json next to the one
    wrapper .so under <archive>/data/aotinductor/<model_name>/."""
    marker = f"/data/aotinductor/{model_name}/"
    wrappers = [n for n in names if marker in n and n.endswith(".so")]
    if len(wrappers) != 1:
        raise PackageError(f"expected one wrapper library under {marker!r}, found {len(wrappers)}"
                           + (f" ({wrappers})" if wrappers else ""))
    meta = wrappers[0][:-3] + "_metadata.json"
    if meta not in names:
        raise PackageError(f"the package has no metadata entry {meta!r} next to its wrapper library")
    return meta


def read_metadata(path: str, model_name: str = "model") -> dict:
    """The package's metadata JSON as a dict."""
    try:
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read(metadata_entry(z.namelist(), model_name)))
    except (OSError, zipfile.BadZipFile, ValueError) as e:
        raise PackageError(f"cannot read the metadata of {path!r}: {e}") from e


def write_metadata(path: str, entries: Mapping[str, str], model_name: str = "model") -> None:
    """Adds (or replaces) string `entries` in the package's metadata JSON, rewriting the .pt2 atomically: every
    other entry is copied byte for byte with its name, order, timestamp and compression."""
    for k, v in entries.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise SpecError(f"metadata entries must be str to str, got {k!r}: {v!r}")
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with zipfile.ZipFile(path) as zin:
            meta_name = metadata_entry(zin.namelist(), model_name)
            try:
                meta = json.loads(zin.read(meta_name))
            except ValueError as e:
                raise PackageError(f"{path!r}: metadata {meta_name!r} is not JSON: {e}") from e
            if not isinstance(meta, dict):
                raise PackageError(f"{path!r}: metadata {meta_name!r} is not a JSON object")
            meta.update(entries)
            with zipfile.ZipFile(tmp, "w", allowZip64=True) as zout:
                for info in zin.infolist():
                    data = json.dumps(meta).encode() if info.filename == meta_name else zin.read(info)
                    zout.writestr(info, data, compress_type=info.compress_type)
        os.replace(tmp, path)
    except (OSError, zipfile.BadZipFile) as e:
        raise PackageError(f"cannot rewrite the metadata of {path!r}: {e}") from e
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_package(pt2_path: str, wrapper_name: str, so: bytes, weights: bytes | None, metadata: Mapping[str, str],
                  model_name: str = "model") -> str:
    """A .pt2 laid out as AOTInductor writes it: <stem>/data/aotinductor/<model>/<wrapper_name>.wrapper.so, its
    weights blob (when any) and its metadata JSON. Returns the absolute path."""
    stem = os.path.splitext(os.path.basename(pt2_path))[0] or "package"
    base = f"{stem}/data/aotinductor/{model_name}/{wrapper_name}"
    with zipfile.ZipFile(pt2_path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{stem}/archive_format", "pt2")
        z.writestr(f"{base}.wrapper.so", so)
        if weights is not None:
            z.writestr(f"{base}.wrapper_weights.blob", weights)
        z.writestr(f"{base}.wrapper_metadata.json", json.dumps(dict(metadata), sort_keys=True))
    return os.path.abspath(pt2_path)


def wrapper_source(package_path: str) -> str:
    """The generated wrapper C++ source inside a .pt2 ('' when the package has none)."""
    with zipfile.ZipFile(package_path) as z:
        names = [n for n in z.namelist() if n.endswith(".wrapper.cpp") or n.endswith(".cpp")]
        return "\n".join(z.read(n).decode("utf-8", "replace") for n in names)
