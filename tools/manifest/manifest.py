"""The shim manifest (shims/shim_manifest.tsv) and everything derived from it: linker version scripts, the Windows
.def, the per-platform symbol sets, and the check of a built library's exports against them.

  manifest.py version-script --platform linux_cuda OUT
  manifest.py def --platform windows_cuda --library aoti_cuda_shims OUT
  manifest.py check --platform linux_cuda --nm nm LIB      (exit 1 listing missing and extra names)
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys


def _shared_parser():
    """python/aotirt/manifest.py, the one manifest parser (the wheel's aotirt.manifest), loaded by path: beside this
    file in Bazel runfiles (the py_binary's data), else in the source tree this file links to."""
    here = os.path.abspath(__file__)
    for base in (os.path.dirname(here), os.path.dirname(os.path.realpath(here))):
        path = os.path.normpath(os.path.join(base, "..", "..", "python", "aotirt", "manifest.py"))
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("aotirt_shim_manifest_parser", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses resolve the module by name
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"python/aotirt/manifest.py (the manifest parser) not found next to {here}")


_parser = _shared_parser()
PLATFORMS = _parser.PLATFORMS
Entry = _parser.Entry
ManifestError = _parser.ManifestError
parse = _parser.parse
names_for = _parser.names_for
DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shims", "shim_manifest.tsv")


def load(path: str = DEFAULT_PATH) -> list[Entry]:
    with open(path) as f:
        return parse(f.read())


def version_script(entries: list[Entry], platform: str) -> str:
    names = names_for(entries, platform)
    body = "".join(f"    {n};\n" for n in names)
    return f"/* Generated from shims/shim_manifest.tsv for {platform}: export exactly these. */\n" \
           f"{{\n  global:\n{body}  local:\n    *;\n}};\n"


def def_file(entries: list[Entry], platform: str, library: str) -> str:
    names = names_for(entries, platform)
    linux_only = sorted(e.name for e in entries if "linux_cuda" in e.platforms and platform not in e.platforms)
    lines = [f"; Generated from shims/shim_manifest.tsv for {platform}. Do not edit.",
             "; The Linux-only GEMM shims below must NOT be listed: the Windows DLL does not carry them, so a model",
             "; that calls one must fail at link time against this import library instead of at load time:"]
    lines += [f";   {n}" for n in linux_only]
    lines += [f"LIBRARY {library}", "EXPORTS"] + [f"    {n}" for n in names]
    return "\n".join(lines) + "\n"


def exported_names(lib: str, nm: str = "nm") -> set[str]:
    """Defined, exported (dynamic) function/data names of a shared object, or all external names of an import lib."""
    if lib.endswith(".lib"):
        out = subprocess.run([nm, lib], capture_output=True, text=True, check=True).stdout
        # llvm-nm lists an __imp_ twin of every import-library export: count the name once.
        return {ln.split()[-1] for ln in out.splitlines()
                if ln.strip() and " T " in ln and not ln.split()[-1].startswith("__imp_")}
    out = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    names = set()
    for ln in out.splitlines():
        parts = ln.split()
        # Global bindings only (upper case, plus i/u: ifunc and GNU-unique, which are global): a lower-case t/d/b/r
        # is a local symbol that only sits in the dynamic table (e.g. cudnn-frontend's thread_local statics: TLS
        # LOCAL HIDDEN) and cannot be linked against.
        if len(parts) >= 3 and parts[1] in "TDBRVWiu":
            names.add(parts[2].split("@")[0])
    return names


def check(entries: list[Entry], platform: str, lib: str, nm: str = "nm") -> tuple[list[str], list[str]]:
    want = set(names_for(entries, platform))
    have = exported_names(lib, nm)
    return sorted(want - have), sorted(have - want)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=DEFAULT_PATH)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("version-script"); v.add_argument("--platform", required=True); v.add_argument("out")
    d = sub.add_parser("def"); d.add_argument("--platform", default="windows_cuda")
    d.add_argument("--library", default="aoti_cuda_shims"); d.add_argument("out")
    c = sub.add_parser("check"); c.add_argument("--platform", required=True); c.add_argument("--nm", default="nm")
    c.add_argument("lib")
    a = ap.parse_args(argv)
    entries = load(a.manifest)
    if a.cmd == "version-script":
        open(a.out, "w").write(version_script(entries, a.platform))
    elif a.cmd == "def":
        open(a.out, "w").write(def_file(entries, a.platform, a.library))
    else:
        missing, extra = check(entries, a.platform, a.lib, a.nm)
        if missing or extra:
            print(f"{a.lib} does not export exactly the {a.platform} set:\n  missing: {missing}\n  extra: {extra}")
            return 1
        print(f"{a.lib}: exports exactly the {len(names_for(entries, a.platform))} {a.platform} shims")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
