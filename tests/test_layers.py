"""The layer DAG (docs/design.md, "Layers and their imports"), checked by parsing every module of the package.

config -> graph -> scalar -> tensor -> gradient -> link -> compile -> top (printing, numba, verify_grad,
__init__, __main__): a module imports only its own layer and the layers to its left, at module level and inside
functions, and imports graphjit modules at module level only. Dynamic imports with a literal name
(``importlib.import_module("graphjit.tensor.math")``) count as imports. The few function-level imports still
allowed would be listed below, each with its reason (none is left).
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterator, List, Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "graphjit"
LAYERS = ("config", "graph", "scalar", "tensor", "gradient", "link", "compile", "top")
_FIRST_LEVEL = {"config": "config", "graph": "graph", "scalar": "scalar", "tensor": "tensor",
                "gradient": "gradient", "jacobian": "gradient", "scan": "gradient", "scan_module": "gradient", "ifelse": "gradient",
                "builders": "gradient", "link": "link", "compile": "compile"}

# (importing module, function qualname, imported module): function-level imports of graphjit modules still
# allowed, each with its reason (an upward one among them is allowed too). None is left: a same-layer cycle is
# broken with a module alias (`from graphjit.tensor import math as _math`, attribute looked up at call time) or an
# import at the end of the module; only optional or heavy third-party packages are imported inside functions.
# test_allow_list_is_current fails on an entry that no longer occurs, so the list only shrinks.
ALLOWED_IN_FUNCTIONS: frozenset = frozenset()


@dataclass(frozen=True)
class Import:
    """One import of a graphjit module found in the source."""

    path: pathlib.Path
    line: int
    module: str            # the importing module
    function: Optional[str]  # qualname of the enclosing function, None at module level
    target: str            # the imported module

    def where(self) -> str:
        inside = f" inside {self.function}()" if self.function else " at module level"
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.module}{inside}"

    def key(self) -> tuple:
        return (self.module, self.function, self.target)


def layer_of(module: str) -> str:
    """The layer of a graphjit module (printing, numba, verify_grad, __main__ and the package itself: top)."""
    parts = module.split(".")
    return _FIRST_LEVEL.get(parts[1], "top") if len(parts) > 1 else "top"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = SRC.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _targets(node: ast.AST, package: str) -> List[str]:
    """The graphjit modules an import statement or a literal importlib.import_module call loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        subs = [f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")]
        return subs if subs and len(subs) == len(node.names) else [base] + subs
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
            and node.args):
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            return [str(arg.values[0].value).rstrip(".")]    # the literal prefix of f"graphjit.tensor.{x}"
    return []


def imports_in(source: str, module: str, path: pathlib.Path, package: Optional[str] = None) -> Iterator[Import]:
    """Every import of a graphjit module in source (the module named module), with its function (if any)."""
    package = package if package is not None else module.rsplit(".", 1)[0]

    def visit(node: ast.AST, scope: List[str], in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from visit(child, scope + [child.name], in_function or not isinstance(child, ast.ClassDef))
                continue
            for target in _targets(child, package):
                if target == "graphjit" or target.startswith("graphjit."):
                    yield Import(path, child.lineno, module, ".".join(scope) if in_function else None, target)
            yield from visit(child, scope, in_function)

    yield from visit(ast.parse(source, str(path)), [], False)


def graphjit_imports() -> Iterator[Import]:
    """Every import of a graphjit module in the package, with the function it sits in (if any)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        yield from imports_in(path.read_text(), module, path, package)


_SAMPLE = """
import importlib
from graphjit.graph.basic import Apply
from graphjit.tensor import math as _math
from . import shape


def lazy():
    from graphjit.link.llvm.driver import elemwise
    return importlib.import_module(f"graphjit.tensor.{'math'}")


class Op:
    def lower(self):
        import graphjit.compile.mode
"""


def test_the_parser_sees_imports_at_every_level():
    """The walk finds module-level, function-level, relative and dynamic imports (so the checks below can fail)."""
    found = {i.key() for i in imports_in(_SAMPLE, "graphjit.tensor.sample", PACKAGE / "tensor" / "sample.py")}
    assert found == {("graphjit.tensor.sample", None, "graphjit.graph.basic"),
                     ("graphjit.tensor.sample", None, "graphjit.tensor.math"),
                     ("graphjit.tensor.sample", None, "graphjit.tensor.shape"),
                     ("graphjit.tensor.sample", "lazy", "graphjit.link.llvm.driver.elemwise"),
                     ("graphjit.tensor.sample", "lazy", "graphjit.tensor"),
                     ("graphjit.tensor.sample", "Op.lower", "graphjit.compile.mode")}
    assert ("graphjit.compile.function", None, "graphjit.graph.compile_hook") in {i.key() for i in graphjit_imports()}
    assert layer_of("graphjit.jacobian") == "gradient" and layer_of("graphjit.printing") == "top"


def test_no_import_goes_up_the_layers():
    """A module imports only its own layer and the layers to its left (config -> graph -> ... -> top)."""
    errors = []
    for imp in graphjit_imports():
        src, dst = layer_of(imp.module), layer_of(imp.target)
        if LAYERS.index(dst) > LAYERS.index(src) and imp.key() not in ALLOWED_IN_FUNCTIONS:
            errors.append(f"{imp.where()} imports {imp.target}: layer {src} may not import layer {dst} "
                          f"(order: {' -> '.join(LAYERS)})")
    assert not errors, "upward imports:\n" + "\n".join(errors)


def test_graphjit_modules_are_imported_at_module_level():
    """No function imports a graphjit module, except the listed sites (which only shrink)."""
    errors = [f"{imp.where()} imports {imp.target} (layer {layer_of(imp.module)} -> layer {layer_of(imp.target)}): "
              "import it at module level (a same-layer cycle: at the end of the module, or "
              "`from graphjit.pkg import mod as _mod` and attribute access at call time)"
              for imp in graphjit_imports() if imp.function is not None and imp.key() not in ALLOWED_IN_FUNCTIONS]
    assert not errors, "function-level imports:\n" + "\n".join(errors)


def test_allow_list_is_current():
    """Every allowed function-level import still occurs: a site that is gone leaves the list with it."""
    found = {i.key() for i in graphjit_imports() if i.function is not None}
    stale = sorted(ALLOWED_IN_FUNCTIONS - found)
    assert not stale, "allowed function-level imports that no longer occur (remove them from tests/test_layers.py):\n" \
        + "\n".join(map(str, stale))


def _loaded_after(statement: str, names: tuple) -> List[str]:
    code = (f"import sys; {statement}; "
            f"print(' '.join(n for n in {names!r} if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)})
    return out.stdout.split()


def test_import_graphjit_graph_loads_no_backend():
    """The graph layer loads neither llvmlite nor numba."""
    assert _loaded_after("import graphjit.graph", ("llvmlite", "numba")) == []


def test_import_graphjit_loads_no_backend():
    """import graphjit loads no llvmlite and no numba: the LLVM linker is built by its registered factory."""
    assert _loaded_after("import graphjit", ("llvmlite", "numba")) == []


def test_import_graphjit_loads_no_scipy():
    """scipy (special functions, BLAS) loads on first use, neither with graphjit.graph nor with graphjit."""
    # Fails until scalar/math.py imports scipy lazily (the scalarops helper's part of issue 19): importing
    # graphjit.graph runs graphjit/__init__, which loads the scalar ops.
    assert _loaded_after("import graphjit.graph", ("scipy",)) == []
    assert _loaded_after("import graphjit", ("scipy",)) == []


def test_import_graphjit_leaves_scan_printing_and_builders_unloaded():
    """scan, printing and OpFromGraph load on first use (graphjit/__init__.py's __getattr__), and then work."""
    lazy = ("graphjit.scan_module", "graphjit.printing", "graphjit.builders")
    assert _loaded_after("import graphjit", lazy) == []
    used = "import graphjit as gj; gj.scan, gj.until, gj.foldl, gj.pprint, gj.debugprint, gj.OpFromGraph, gj.printing"
    assert _loaded_after(used, lazy) == list(lazy)
    assert _loaded_after("from graphjit import scan, dprint", lazy) == ["graphjit.scan_module", "graphjit.printing"]


def test_no_submodule_shadows_a_public_name():
    """Importing a submodule sets it as an attribute of its package: one named like a function the package
    exports (graphjit.verify_grad once) replaced that function as soon as anything imported it late."""
    code = ("import importlib, pkgutil, types, graphjit\n"
            "for m in pkgutil.walk_packages(graphjit.__path__, 'graphjit.'):\n"
            "    if not m.name.startswith('graphjit.numba'):\n"
            "        importlib.import_module(m.name)\n"
            "print([n for n in graphjit.__all__ if isinstance(getattr(graphjit, n), types.ModuleType)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", f"submodules shadow public names of graphjit: {out.stdout}"
