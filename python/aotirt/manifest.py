"""The one parser of the shim manifest (shims/shim_manifest.tsv): NAME<TAB>PLATFORMS[<TAB>note], '#' comments.

Dependency-free on purpose (standard library only, no aotirt import): the wheel ships it as aotirt.manifest (read by
aotirt.platforms), and the Bazel tool tools/manifest/manifest.py loads this same file by path at build time to
generate the version scripts and the Windows .def. Errors are ManifestError (a ValueError) naming the line.
"""
from __future__ import annotations

from dataclasses import dataclass

PLATFORMS = ("linux_cuda", "windows_cuda", "rocm")


class ManifestError(ValueError):
    """A malformed manifest line, or a platform the manifest does not know."""


@dataclass(frozen=True)
class Entry:
    name: str
    platforms: frozenset
    note: str = ""


def parse(text: str, path: str = "") -> list:
    """The manifest's entries in file order. Raises ManifestError for a line without a tab, an unknown platform or a
    name listed twice."""
    where = f"manifest {path} " if path else "manifest "
    entries, seen = [], set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) < 2:
            raise ManifestError(f"{where}line {lineno}: expected NAME<TAB>PLATFORMS, got {raw!r}")
        name, plats = parts[0].strip(), frozenset(p.strip() for p in parts[1].split(",") if p.strip())
        unknown = plats - set(PLATFORMS)
        if unknown:
            raise ManifestError(f"{where}line {lineno}: unknown platform(s) {sorted(unknown)} for {name}")
        if name in seen:
            raise ManifestError(f"{where}line {lineno}: {name} listed twice")
        seen.add(name)
        entries.append(Entry(name, plats, parts[2].strip() if len(parts) > 2 else ""))
    return entries


def names_for(entries: list, platform: str) -> list:
    """The sorted names `platform` exports."""
    if platform not in PLATFORMS:
        raise ManifestError(f"unknown platform {platform!r}; valid: {', '.join(PLATFORMS)}")
    return sorted(e.name for e in entries if platform in e.platforms)
