"""The layer DAG (docs/design.md, "Layers and their imports"), checked by parsing every module of the package.

config -> graph -> scalar -> tensor -> gradient -> link -> compile -> top (printing, numba, verify_grad,
__init__, __main__): a module imports only its own layer and the layers to its left, at module level and inside
functions, and imports graphjit modules at module level only. Dynamic imports with a literal name
(``importlib.import_module("graphjit.tensor.math")``) count as imports. The few function-level imports still
allowed are listed below, each with its reason; the lists only shrink.
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
PACKAGE = ROOT / "graphjit"
LAYERS = ("config", "graph", "scalar", "tensor", "gradient", "link", "compile", "top")
_FIRST_LEVEL = {"config": "config", "graph": "graph", "scalar": "scalar", "tensor": "tensor",
                "gradient": "gradient", "jacobian": "gradient", "link": "link", "compile": "compile"}

# (importing module, function qualname, imported module). Every entry is one function-level import of a graphjit
# module that is still allowed; an upward one among them is allowed too. test_allow_list_is_current fails on an
# entry that no longer occurs, so a helper who removes a site removes its entry.
#
# Op.lower/can_lower and Type.llvm_* trampolines into the LLVM backend: replaced by the backend's registries
# (link/llvm/registry.py), after which these go.
LOWERING_TRAMPOLINES = frozenset([
    ("graphjit.compile.ops", "DeepCopyOp.lower", "graphjit.link.llvm.ops.shape"),
    ("graphjit.gradient", "GradientBlockOp.lower", "graphjit.link.llvm.ops.shape"),
    ("graphjit.numba.as_op", "NumbaOp.lower", "graphjit.link.llvm.ir.layouts"),
    ("graphjit.numba.as_op", "NumbaScalarOp.lower_scalar", "graphjit.link.llvm.ir.layouts"),
    ("graphjit.numba.as_op", "NumbaScalarOp.lower_scalar", "graphjit.scalar.lowering"),
    ("graphjit.scalar.basic", "ScalarOp.can_lower_scalar", "graphjit.scalar.lowering"),
    ("graphjit.scalar.basic", "ScalarOp.lower_scalar", "graphjit.scalar.lowering"),
    ("graphjit.scalar.basic", "ScalarType.llvm_layout", "graphjit.link.llvm.cpython.boxing"),
    ("graphjit.tensor.advanced_subtensor", "AdvancedIncSubtensor1.lower", "graphjit.link.llvm.ops.indexing"),
    ("graphjit.tensor.advanced_subtensor", "AdvancedSubtensor1.lower", "graphjit.link.llvm.ops.indexing"),
    ("graphjit.tensor.alloc", "ARange.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.alloc", "Alloc.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.alloc", "Eye.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.blas", "Dot.can_lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas", "Dot.lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas", "Matmul.can_lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas", "Matmul.lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas", "TensorDot.can_lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas", "TensorDot.lower", "graphjit.link.llvm.ops.blas"),
    ("graphjit.tensor.blas_vector", "Gemv.lower", "graphjit.link.llvm.ops.blas_vector"),
    ("graphjit.tensor.blas_vector", "Ger.lower", "graphjit.link.llvm.ops.blas_vector"),
    ("graphjit.tensor.elemwise", "CAReduce.can_lower", "graphjit.link.llvm.loops.fusion"),
    ("graphjit.tensor.elemwise", "CAReduce.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.elemwise", "DimShuffle.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.elemwise", "Elemwise.can_lower", "graphjit.link.llvm.loops.fusion"),
    ("graphjit.tensor.elemwise", "Elemwise.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.elemwise_grad", "SumToShape.lower", "graphjit.link.llvm.ops.shape"),
    ("graphjit.tensor.extra_ops", "ArgReduce.can_lower", "graphjit.link.llvm.ops.extra_ops"),
    ("graphjit.tensor.extra_ops", "ArgReduce.lower", "graphjit.link.llvm.ops.extra_ops"),
    ("graphjit.tensor.extra_ops", "CumOp.can_lower", "graphjit.link.llvm.ops.extra_ops"),
    ("graphjit.tensor.extra_ops", "CumOp.lower", "graphjit.link.llvm.ops.extra_ops"),
    ("graphjit.tensor.join", "Join.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.join", "MakeVector.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.join", "Split.lower", "graphjit.link.llvm.ops.alloc"),
    ("graphjit.tensor.shape", "Reshape.lower", "graphjit.link.llvm.ops.shape"),
    ("graphjit.tensor.shape", "Shape.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.shape", "Shape_i.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.shape", "SpecifyShape.lower", "graphjit.link.llvm.ops.elemwise"),
    ("graphjit.tensor.special", "LogSoftmax.can_lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "LogSoftmax.lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "LogSumExp.can_lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "LogSumExp.lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "Softmax.can_lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "Softmax.lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.special", "TakeLabels.lower", "graphjit.link.llvm.ops.special"),
    ("graphjit.tensor.subtensor", "IncSubtensor.lower", "graphjit.link.llvm.ops.indexing"),
    ("graphjit.tensor.subtensor", "Subtensor.lower", "graphjit.link.llvm.ops.indexing"),
    ("graphjit.tensor.type", "TensorType.llvm_arg_spec", "graphjit.link.llvm.cpython.boxing"),
    ("graphjit.tensor.type", "TensorType.llvm_box", "graphjit.link.llvm.cpython.boxing"),
    ("graphjit.tensor.type", "TensorType.llvm_layout", "graphjit.link.llvm.cpython.boxing"),
    ("graphjit.tensor.type", "TensorType.llvm_unbox", "graphjit.link.llvm.cpython.boxing"),
])

# Inside the LLVM backend, being regrouped (its modules import each other lazily today).
LINK_LLVM_INTERNAL = frozenset([
    ("graphjit.link.llvm.ir.buffers", "emit_drop_function", "graphjit.link.llvm.ir.output_reuse"),
    ("graphjit.link.llvm.ir.context", "LowerContext._attach_vector_variants", "graphjit.link.llvm.jit.compiler"),
    ("graphjit.link.llvm.loops.drivers", "_driver.build", "graphjit.link.llvm.ir.threads"),
    ("graphjit.link.llvm.ir.fallback", "emit_fallback_call", "graphjit.link.llvm.ir.native_entry"),
    ("graphjit.link.llvm.ir.fastmath", "host_method", "graphjit.link.llvm.jit.compiler"),
    # upward (link -> compile); SharedVariable is graphjit.graph.shared now, importable at module level
    ("graphjit.link.llvm.inplace_updates", "_is_shared", "graphjit.compile.sharedvalue"),
    ("graphjit.link.llvm.inplace_updates", "plan_inplace_updates", "graphjit.link.llvm.update_gemm"),
    ("graphjit.link.llvm.jit.compiler", "NativeCompiler.compile", "graphjit.link.llvm.ir.context"),
    ("graphjit.link.llvm.jit.compiler", "NativeCompiler.compile", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.jit.compiler", "NativeCompiler.load", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.jit.compiler", "_parts", "graphjit.link.llvm.split"),
    ("graphjit.link.llvm.linker", "DebugLinker.make_thunk", "graphjit.link.python"),
    ("graphjit.link.llvm.linker", "LLVMLinker.make_thunk", "graphjit.link.llvm.ir.fallback"),
    ("graphjit.link.llvm.linker", "_build", "graphjit.link.llvm.jit.compiler"),
    ("graphjit.link.llvm.linker", "_publish", "graphjit.link.llvm.ir.fallback"),
    ("graphjit.link.llvm.linker", "_publish", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.linker", "compile_graph", "graphjit.link.llvm.jit.compiler"),
    ("graphjit.link.llvm.linker", "compile_graph", "graphjit.link.llvm.cache.plans"),
    ("graphjit.link.llvm.linker", "compile_graph", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.linker", "rebuild_ir", "graphjit.link.llvm.ir.context"),
    ("graphjit.link.llvm.linker", "rebuild_ir", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.linker", "structural_signature", "graphjit.link.llvm.ir.native_entry"),
    ("graphjit.link.llvm.linker", "structural_signature", "graphjit.link.llvm.ir.fastmath"),
    ("graphjit.link.llvm.linker", "structural_signature", "graphjit.link.llvm.inplace_updates"),
    ("graphjit.link.llvm.loops.nest", "_run_kernel", "graphjit.link.llvm.ir.threads"),
    ("graphjit.link.llvm.ops.blas_vector", "lower_gemv", "graphjit.link.llvm.ops.shape"),
    ("graphjit.link.llvm.ops.blas_vector", "lower_ger", "graphjit.link.llvm.ops.shape"),
    ("graphjit.link.llvm.ops.indexing", "subtensor_view", "graphjit.tensor.subtensor"),
    ("graphjit.link.llvm.ops.special", "_parallel_rows", "graphjit.link.llvm.loops.nest"),
    ("graphjit.link.llvm.ops.special", "_parallel_rows", "graphjit.link.llvm.ir.threads"),
    ("graphjit.link.llvm.ir.native_entry", "GraphContext.blas", "graphjit.link.llvm.jit.blas_library"),
    ("graphjit.link.llvm.ir.native_entry", "GraphContext.blas", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.ir.native_entry", "_reduce_spec", "graphjit.tensor.elemwise"),
    ("graphjit.link.llvm.ir.native_entry", "build_entry", "graphjit.link.llvm.cpython.wrapper"),
    ("graphjit.link.llvm.ir.native_entry", "build_entry", "graphjit.link.llvm.ir.fallback"),
    ("graphjit.link.llvm.native", "NativeInfo.describe_error", "graphjit.link.llvm.ir.errors"),
    ("graphjit.link.llvm.native", "NativeInfo.messages", "graphjit.link.llvm.ir.errors"),
    ("graphjit.link.llvm.jit.runtime", "_publish_python", "graphjit.link.llvm.ir.errors"),
    ("graphjit.link.llvm.jit.runtime", "blas_source", "graphjit.link.llvm.jit.blas_library"),
    ("graphjit.link.llvm.jit.runtime", "ensure_runtime", "graphjit.link.llvm.jit.compiler"),
    ("graphjit.link.llvm.ops.elemwise", "lower_loop_node", "graphjit.link.llvm.ir.native_entry"),
    ("graphjit.link.llvm.ir.threads", "gomp_available", "graphjit.link.llvm.jit.runtime"),
    ("graphjit.link.llvm.update_gemm", "_product", "graphjit.tensor.blas"),
    ("graphjit.link.llvm.update_gemm", "emit_gemm_update", "graphjit.link.llvm.inplace_updates"),
])

# Loading the LLVM backend (and llvmlite) only when an LLVM mode compiles: the rewritten-graph cache keys on the
# LLVM linker and lives beside its object cache.
BACKEND_ON_FIRST_USE = frozenset([
    ("graphjit.compile.maker", "FunctionMaker._rewrite", "graphjit.compile.rewrite_cache"),
    ("graphjit.compile.rewrite_cache", "_cache", "graphjit.link.llvm.jit.compiler"),
    ("graphjit.compile.rewrite_cache", "_rewriter_fingerprint", "graphjit.link.llvm.cache.plans"),
    ("graphjit.compile.rewrite_cache", "rewrite_key", "graphjit.link.llvm.linker"),
    ("graphjit.compile.rewrite_cache", "rewrite_key", "graphjit.link.llvm.cache.plans"),
])

# The tensor package's own root: type.py and variable.py are imported first and below the ops their methods
# build (x.shape, x.dimshuffle, x[i], TensorType.convert_variable); operators go through variable.py's
# importlib accessors (_m, _b, _np, _s) for the same reason. tensor/math.py resolves a few names lazily
# (module __getattr__). scalar/basic.py finds a scalar op by name in scalar/math.py.
TENSOR_AND_SCALAR_ROOTS = frozenset([
    ("graphjit.scalar.basic", "_scalar_op_by_name", "graphjit.scalar.math"),
    ("graphjit.tensor.math", "__getattr__", "graphjit.tensor"),
    ("graphjit.tensor.type", "TensorType.convert_variable", "graphjit.tensor.shape"),
    ("graphjit.tensor.variable", "_TensorOps.__getitem__", "graphjit.tensor.subtensor"),
    ("graphjit.tensor.variable", "_TensorOps.dimshuffle", "graphjit.tensor.elemwise"),
    ("graphjit.tensor.variable", "_TensorOps.shape", "graphjit.tensor.shape"),
    ("graphjit.tensor.variable", "_b", "graphjit.tensor.basic"),
    ("graphjit.tensor.variable", "_m", "graphjit.tensor.math"),
    ("graphjit.tensor.variable", "_np", "graphjit.tensor.numpy_interop"),
    ("graphjit.tensor.variable", "_s", "graphjit.tensor.shape"),
])

# Lazy on purpose: graphjit.<submodule> attributes (PEP 562), numpy's protocol functions looked up in the
# tensor namespace, and numba's entry point (numba_extensions), which runs while numba itself is importing.
LAZY_BY_DESIGN = frozenset([
    ("graphjit", "__getattr__", "graphjit"),
    ("graphjit.numba", "_init_extension", "graphjit.numba.overload"),
    ("graphjit.numba", "as_op", "graphjit.numba.as_op"),
    ("graphjit.numba", "function_type", "graphjit.numba.overload"),
    ("graphjit.tensor.numpy_interop", "_gt", "graphjit.tensor"),
])

ALLOWED_IN_FUNCTIONS = (LOWERING_TRAMPOLINES | LINK_LLVM_INTERNAL | BACKEND_ON_FIRST_USE
                        | TENSOR_AND_SCALAR_ROOTS | LAZY_BY_DESIGN)


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
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
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


def graphjit_imports() -> Iterator[Import]:
    """Every import of a graphjit module in the package, with the function it sits in (if any)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]

        def visit(node: ast.AST, scope: List[str], in_function: bool) -> Iterator[Import]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield from visit(child, scope + [child.name],
                                     in_function or not isinstance(child, ast.ClassDef))
                    continue
                for target in _targets(child, package):
                    if target == "graphjit" or target.startswith("graphjit."):
                        yield Import(path, child.lineno, module, ".".join(scope) if in_function else None, target)
                yield from visit(child, scope, in_function)

        yield from visit(ast.parse(path.read_text(), str(path)), [], False)


def test_the_parser_sees_imports_at_every_level():
    """The walk finds module-level, function-level and dynamic imports (so the checks below can fail)."""
    found = {i.key() for i in graphjit_imports()}
    assert ("graphjit.compile.function", None, "graphjit.graph.compile_hook") in found
    assert ("graphjit.tensor.variable", "_m", "graphjit.tensor.math") in found
    assert ("graphjit.tensor.elemwise", "Elemwise.lower", "graphjit.link.llvm.ops.elemwise") in found
    assert layer_of("graphjit.jacobian") == "gradient" and layer_of("graphjit.verify_grad") == "top"


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
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
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
