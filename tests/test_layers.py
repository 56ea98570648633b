"""The layer DAG (docs/design.md, "Layers and their imports"), checked by parsing every module of the package.

config -> graph -> scalar -> tensor -> gradient -> link -> compile -> top (printing, numba, verify_grad,
__init__, __main__): a module imports only its own layer and the layers to its left, and imports graphjit
modules at module level only. No two modules import each other, directly or through others: the module import
graph has no cycle (strongly connected component of more than one module), with no allow-list. Every import
counts: module level, inside functions, inside ``if TYPE_CHECKING:``, and dynamic imports with a literal name
(``importlib.import_module("graphjit.tensor.math")``); ``from pkg import name`` where name is not a submodule
imports the package pkg. The implicit import of a module's parent packages is not the module's own import and
does not count.
"""

from __future__ import annotations

import ast
import functools
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "graphjit"
LAYERS = ("config", "graph", "scalar", "tensor", "gradient", "link", "compile", "top")
_FIRST_LEVEL = {"config": "config", "graph": "graph", "scalar": "scalar", "tensor": "tensor",
                "autodiff": "gradient", "gradient": "gradient", "jacobian": "gradient", "scan": "gradient",
                "scan_module": "gradient", "ifelse": "gradient", "builders": "gradient", "link": "link",
                "compile": "compile"}

# (importing module, function qualname, imported module): function-level imports of graphjit modules still
# allowed, each with its reason (an upward one among them is allowed too). None is left: only optional or heavy
# third-party packages are imported inside functions.
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
    return iter(_package_imports())


@functools.lru_cache(maxsize=None)
def _package_imports() -> tuple:
    """The package's imports, parsed once per process (several tests walk them)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        found.extend(imports_in(path.read_text(), module, path, package))
    return tuple(found)


Graph = Dict[str, Dict[str, Import]]


def import_graph(imports: Iterable[Import], exists: Callable[[str], bool] = _is_module) -> Graph:
    """module -> imported module -> the first import making that edge (a target names its nearest module)."""
    imports = list(imports)
    modules = {imp.module for imp in imports}
    graph: Graph = {m: {} for m in modules}
    for imp in imports:
        target = imp.target
        while target and target not in modules and not exists(target):
            target = target.rpartition(".")[0]
        if target and target != imp.module:
            graph[imp.module].setdefault(target, imp)
            graph.setdefault(target, {})
    return graph


def strongly_connected(graph: Graph) -> List[List[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def shortest_cycle(graph: Graph, component: List[str]) -> List[Import]:
    """A shortest cycle through the component's first module, as the imports making its edges."""
    start, members = component[0], set(component)
    came_from: Dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ, imp in sorted(graph[node].items()):
                if succ == start:
                    cycle = [imp]
                    while node != start:
                        cycle.append(came_from[node])
                        node = came_from[node].module
                    return cycle[::-1]
                if succ in members and succ not in came_from:
                    came_from[succ] = imp
                    following.append(succ)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def describe_cycles(graph: Graph) -> List[str]:
    """One paragraph per import cycle: its modules, then one import line per edge of a cycle through them."""
    paragraphs = []
    for component in strongly_connected(graph):
        lines = [f"{len(component)} modules: {', '.join(component)}"]
        for imp in shortest_cycle(graph, component):
            target = next(t for t, i in graph[imp.module].items() if i is imp)
            lines.append(f"  {imp.where()} imports {imp.target} ({imp.module} -> {target})")
        paragraphs.append("\n".join(lines))
    return paragraphs


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


_CYCLE_SAMPLE = {
    "graphjit.graph.a": "import graphjit.graph.b\n",
    "graphjit.graph.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import graphjit.graph.c\n",
    "graphjit.graph.c": "import importlib\ndef f():\n    return importlib.import_module('graphjit.graph.a')\n",
    "graphjit.graph.d": "import graphjit.graph.a\nimport graphjit.graph.e\n",
    "graphjit.graph.e": "import graphjit.graph.d\n",
    "graphjit.graph.f": "import graphjit.graph.a\n",
}


def test_the_cycle_finder_finds_cycles():
    """A synthetic sample: a -> b (TYPE_CHECKING) -> c (importlib in a function) -> a, and d <-> e; f is in none."""
    imports = [imp for module, source in _CYCLE_SAMPLE.items()
               for imp in imports_in(source, module, PACKAGE / "graph" / f"{module[-1]}.py")]
    graph = import_graph(imports, exists=lambda name: False)
    assert strongly_connected(graph) == [["graphjit.graph.a", "graphjit.graph.b", "graphjit.graph.c"],
                                         ["graphjit.graph.d", "graphjit.graph.e"]]
    assert [i.module for i in shortest_cycle(graph, ["graphjit.graph.a", "graphjit.graph.b", "graphjit.graph.c"])] \
        == ["graphjit.graph.a", "graphjit.graph.b", "graphjit.graph.c"]
    report = describe_cycles(graph)
    assert len(report) == 2 and "graph/c.py:3: graphjit.graph.c inside f() imports graphjit.graph.a" in report[0]
    assert strongly_connected(import_graph(imports[:1] + imports[2:], exists=lambda name: False)) == \
        [["graphjit.graph.d", "graphjit.graph.e"]]


def test_no_import_cycle():
    """No module imports itself through others: the import graph of the package is acyclic (no allow-list)."""
    cycles = describe_cycles(import_graph(graphjit_imports()))
    assert not cycles, f"{len(cycles)} import cycles:\n" + "\n".join(cycles)


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
    code = ("import importlib, importlib.util, pkgutil, types, graphjit\n"
            "skip = ('graphjit.numba',) + (() if importlib.util.find_spec('pytensor') else ('graphjit.pytensor',))\n"
            "for m in pkgutil.walk_packages(graphjit.__path__, 'graphjit.'):\n"
            "    if not m.name.startswith(skip):\n"
            "        importlib.import_module(m.name)\n"
            "print([n for n in graphjit.__all__ if isinstance(getattr(graphjit, n), types.ModuleType)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", f"submodules shadow public names of graphjit: {out.stdout}"


# The LLVM backend's packages, bottom to top (docs/design.md, "The backend's packages"): a package never imports
# one listed after it. ir/ holds IR primitives, scalar/ the scalar bodies, loops/ the loop nests, ops/ the
# lowerings by op class, driver/ what walks a graph into one native entry (the registry is how a lowering reaches
# the driver's work without importing it).
BACKEND_ORDER = ("ir", "scalar", "loops", "ops", "driver")


def test_backend_packages_import_downward():
    """ir/ -> scalar/ -> loops/ -> ops/ -> driver/: no backend package imports one above it."""
    prefix = "graphjit.link.llvm."

    def package(module: str) -> Optional[str]:
        parts = module[len(prefix):].split(".") if module.startswith(prefix) else []
        return parts[0] if len(parts) > 1 and parts[0] in BACKEND_ORDER else None

    errors = []
    for imp in graphjit_imports():
        src, dst = package(imp.module), package(imp.target)
        if src and dst and BACKEND_ORDER.index(dst) > BACKEND_ORDER.index(src):
            errors.append(f"{imp.where()} imports {imp.target} ({src}/ may not import {dst}/)")
    assert not errors, "backend packages importing upward:\n" + "\n".join(errors)
