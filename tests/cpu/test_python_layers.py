"""The aotirt package in layers (issue 15): the import graph among aotirt modules, read from the source with `ast`
(imports inside functions included), has no cycle and only points down the layer order; the outer doors
(executorch, cli) use public names of other modules only; every module imports alone in a fresh interpreter."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

import aotirt

PKG = os.path.dirname(os.path.abspath(aotirt.__file__))

# Bottom to top: a module may import modules of lower layers only.
LAYERS = [
    ["errors", "version", "timing", "manifest"],   # manifest: the one shim-manifest parser, no aotirt import
    ["device", "progress", "package", "tensorfile"],
    ["return_types"],                              # pytree names for torch.return_types (imports progress)
    ["platforms"],                                 # reads the manifest; every platform refusal
    ["specs"],
    ["runtime"],
    ["graphs"],
    ["triton_attention_kernels"],                  # the Triton kernels (triton imported at the top: triton's only)
    ["triton_attention", "moe"],                   # graph rewrites before Inductor: TRITON attention, MoE experts
    ["lowering"],                                  # one candidate
    ["auto"],                                      # AUTO: handed lowering.compile
    ["api"],                                       # aotirt.compile: the dispatch between lowering and auto
    ["executorch"],
    ["cli"],
    ["__init__"],
    ["demo"],                                      # the demo model (torch only)
    ["__main__", "demo_main"],
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}
DOORS = ("executorch", "cli")  # public functions of other modules only
NOT_LAYERED = ("bench",)       # benchmark modules (another owner) are outside the layers
NEEDS_TRITON = ("triton_attention_kernels",)  # imported only where a kernel runs or is traced (triton there)


def modules() -> list:
    names = sorted(f[:-3] for f in os.listdir(PKG) if f.endswith(".py"))
    return [n for n in names if not n.startswith(NOT_LAYERED)]


def tree(name: str) -> ast.AST:
    with open(os.path.join(PKG, name + ".py")) as f:
        return ast.parse(f.read(), name)


def imports_of(name: str) -> dict:
    """{aotirt module imported: [line numbers]}; 'aotirt' itself is '__init__'; the native _C is left out."""
    known = set(modules())
    out: dict = {}

    def add(target: str, node: ast.AST) -> None:
        if target != "_C" and target != name:
            out.setdefault(target, []).append(node.lineno)

    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "aotirt":
                    add(parts[1] if len(parts) > 1 else "__init__", node)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            parts = mod.split(".") if mod else []
            if node.level == 0 and (not parts or parts[0] != "aotirt"):
                continue
            sub = parts[1:] if node.level == 0 else parts
            if sub:
                add(sub[0], node)
            else:  # from aotirt import x, y: modules, else names of the package
                for alias in node.names:
                    add(alias.name if alias.name in known or alias.name == "_C" else "__init__", node)
    return out


def graph() -> dict:
    return {m: imports_of(m) for m in modules()}


def test_every_module_has_a_layer():
    assert [m for m in modules() if m not in RANK] == [], "add the new module to LAYERS"
    assert [m for m in RANK if m not in modules()] == [], "LAYERS names a module that does not exist"


def test_no_import_cycle():
    g = {m: set(deps) for m, deps in graph().items()}
    state: dict = {}
    path: list = []

    def visit(m: str) -> None:
        state[m] = "open"
        path.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d)
        path.pop()
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m)


def test_imports_follow_the_layer_order():
    wrong = [f"{m} (layer {RANK[m]}) imports {d} (layer {RANK.get(d)}) at line(s) {lines}"
             for m, deps in graph().items() for d, lines in deps.items() if RANK.get(d, 99) >= RANK[m]]
    assert wrong == []


def test_lowering_and_auto_do_not_reach_the_top():
    g = graph()
    assert "auto" not in g["lowering"] and "api" not in g["lowering"]
    assert "api" not in g["auto"] and "__init__" not in g["auto"]


@pytest.mark.parametrize("door", DOORS)
def test_doors_use_public_names_only(door):
    t = tree(door)
    bound = set()  # local names bound to aotirt modules
    bad = []
    for node in ast.walk(t):
        if isinstance(node, ast.ImportFrom) and ((node.module or "").startswith("aotirt") or node.level):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and alias.name != "_C":
                    bad.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                if alias.name in modules():
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("aotirt"):
                    bound.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(t):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert bad == []


def test_the_manifest_parser_is_dependency_free():
    """tools/manifest/manifest.py loads it by path at build time: only the standard library."""
    assert imports_of("manifest") == {}
    top = {a.name.split(".")[0] for n in ast.walk(tree("manifest")) if isinstance(n, ast.Import) for a in n.names}
    top |= {n.module.split(".")[0] for n in ast.walk(tree("manifest")) if isinstance(n, ast.ImportFrom) and n.module}
    assert top <= {"__future__", "dataclasses"}


@pytest.mark.parametrize("name", [m for m in modules() if m not in ("__init__", "__main__")])
def test_each_module_imports_in_a_fresh_interpreter(name):
    code = (f"import sys, aotirt.{name}\n"
            f"print('torch' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(PKG)] + sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if name in NEEDS_TRITON:  # triton's: without it the import fails on triton alone, with it it imports
        assert out.returncode == 0 or "No module named 'triton'" in out.stderr, out.stderr[-3000:]
        return
    assert out.returncode == 0, out.stderr[-3000:]
    if name not in ("executorch", "demo", "demo_main"):  # ExecuTorch and the demo model are torch's
        assert out.stdout.strip() == "False", f"importing aotirt.{name} imported torch"
