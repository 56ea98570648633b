"""The examples of docs/extending.md run and agree with numpy; the paths docs/design.md cites exist."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import sys
from types import ModuleType
from typing import Iterator

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.cpython.boxing import type_layout
from graphjit.link.llvm.ir.fallback import FallbackWarning
from graphjit.link.llvm.registry import layouts, lowerings
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    """examples/extending/<name>.py imported once per process as the module extending_<name>.

    Importing an example registers its op, lowering and layout; a second import would declare a second
    scalar op under the same name, which register_scalar_op refuses (docs/extending.md), so it is cached.
    """
    modname = f"extending_{name}"
    if modname not in sys.modules:
        spec = importlib.util.spec_from_file_location(modname, ROOT / "examples" / "extending" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module          # registered first: the examples' ops pickle by module name
        spec.loader.exec_module(module)
    return sys.modules[modname]


@pytest.fixture(scope="module", autouse=True)
def _forget_registrations() -> Iterator[None]:
    """After this module, the examples' lowering and layout leave the backend's registries (other tests
    check that every registered lowering is one of graphjit's), as a plugin unloading would do."""
    yield
    structural, custom = sys.modules.get("extending_structural_op"), sys.modules.get("extending_custom_type")
    if structural is not None:
        lowerings.unregister(structural.Reverse)
    if custom is not None:
        layouts.unregister(custom.Double)
    for name in ("extending_structural_op", "extending_custom_type"):
        sys.modules.pop(name, None)


# ------------------------------------------------------------------ (a) an elementwise op, one declaration

@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE", "FAST_RUN"])
def test_scalar_op_example_values_and_gradient(mode: str) -> None:
    ex = load("scalar_op")
    f, (z, gx, gy) = ex.run(mode)
    a, b = np.array([3.0, -1.0, 0.5]), np.array([4.0, 2.0, -7.0])
    np.testing.assert_allclose(z, np.hypot(a, b) * 2)
    np.testing.assert_allclose(gx, 2 * a / np.hypot(a, b))
    np.testing.assert_allclose(gy, 2 * b / np.hypot(a, b))
    if mode != "PY":
        assert f.native.fallback_nodes == [], "the declared Libm math must lower natively"
    gj.verify_grad(ex.hypot, [a, b], mode=mode)


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32"])
def test_scalar_op_example_dtype_rule(dtype: str) -> None:
    ex = load("scalar_op")
    x, y = gt.vector("x", dtype=dtype), gt.vector("y", dtype=dtype)
    f = gj.function([x, y], ex.hypot(x, y), mode="FAST_RUN")
    a, b = np.arange(-3, 4).astype(dtype), np.arange(7).astype(dtype)
    want_dtype = {"int8": "float32", "int64": "float64", "float32": "float32"}[dtype]
    got = f(a, b)
    assert got.dtype == want_dtype and f.native.fallback_nodes == []
    np.testing.assert_allclose(got, np.hypot(a.astype(want_dtype), b.astype(want_dtype)), rtol=1e-6)


def test_scalar_op_example_refuses_a_second_declaration() -> None:
    ex = load("scalar_op")
    with pytest.raises(ValueError, match="already registered"):
        ex.register_scalar_op(ex.ScalarOp("example_hypot", 2, np.hypot))


# ------------------------------------------------------------------ (b) a structural op and its lowering

def _reverse(x):
    return load("structural_op").reverse(x)


REVERSE_CASES = [
    Case("reverse", _reverse, lambda a: a[::-1].copy(), [arr((7,))],
         dtypes=("float64", "float32", "int32", "uint8", "bool")),
    Case("reverse_then_add", lambda x, y: _reverse(x) + y, lambda a, b: a[::-1] + b, [arr((5,)), arr((5,))]),
    Case("reverse_twice", lambda x: _reverse(_reverse(x) * 2), lambda a: a * 2, [arr((4,))]),
]


@pytest.mark.parametrize("case", REVERSE_CASES, ids=str)
def test_structural_op_table(case: Case) -> None:
    check_case(case)


def test_structural_op_contract_shape_and_gradient() -> None:
    ex = load("structural_op")
    check_op_contract(ex.reverse, lambda: [gt.dvector("x")])
    check_infer_shape(ex.reverse, [arr((6,))])
    gj.verify_grad(ex.reverse, [np.array([1.0, -2.0, 0.5, 4.0])], mode="FAST_RUN")
    with pytest.raises(TypeError, match="vector"):
        ex.reverse(gt.dmatrix("m"))


@pytest.mark.parametrize("mode", ["FAST_COMPILE", "FAST_RUN"])
def test_structural_op_lowers_natively(mode: str) -> None:
    ex = load("structural_op")
    x = gt.fvector("x")
    f = gj.function([x], [ex.reverse(x), gj.grad((ex.reverse(x) * gt.arange(4.0)).sum(), x)], mode=mode)
    a = np.array([1.0, 2.0, 3.0, 4.0], dtype="float32")
    out, g = f(a[::-1])                        # a strided input (negative stride)
    np.testing.assert_array_equal(out, a)
    np.testing.assert_allclose(g, np.arange(4.0)[::-1])
    assert f.native.fallback_nodes == []
    assert "Reverse" in "\n".join(str(n.op) for n in f.maker.fgraph.toposort())


# ------------------------------------------------------------------ (c) a Type with its layout

def test_custom_type_example() -> None:
    ex = load("custom_type")
    layout = type_layout(ex.double)
    assert isinstance(layout, ex.DoubleLayout) and layout.arg_spec().kind == "object"
    x, y = ex.double("x"), ex.double("y")
    with pytest.warns(FallbackWarning):
        f = gj.function([x, y], ex.div(ex.add(x, 2), ex.sub(y, 0.5)), mode="FAST_RUN")
    assert f(3.4, 1.5) == pytest.approx((3.4 + 2) / (1.5 - 0.5))
    assert [str(n.op) for n in f.native.fallback_nodes] == ["add", "sub", "div"]
    with pytest.raises(TypeError):
        f(3.4, "1.5")


@pytest.mark.parametrize("name", ["scalar_op", "structural_op", "custom_type"])
def test_examples_run_as_scripts(name: str, capsys: pytest.CaptureFixture) -> None:
    ex = load(name)
    with pytest.warns(FallbackWarning) if name == "custom_type" else _no_warning():
        ex.main()
    assert capsys.readouterr().out.strip()


class _no_warning:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# ------------------------------------------------------------------ the docs cite files that exist

_PATH = re.compile(r"`?((?:[\w.]+/)+(?:[\w.]+|\{[\w,]+\}\.py))")
_ROOTS = ("", "src/", "src/graphjit/")


def _cited_paths(text: str) -> set[str]:
    found = set()
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".")
        if not path.endswith(".py") and not path.endswith("/"):
            continue
        brace = re.search(r"\{([\w,]+)\}", path)
        names = brace.group(1).split(",") if brace else [None]
        for n in names:
            found.add(path if n is None else path[:brace.start()] + n + path[brace.end():])
    return found


@pytest.mark.parametrize("doc", ["design.md", "extending.md", "lowering.md"])
def test_docs_cite_existing_files(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text()
    cited = _cited_paths(text)
    assert cited, f"{doc} cites no file?"
    missing = sorted(p for p in cited if not any((ROOT / r / p).exists() for r in _ROOTS))
    assert not missing, f"docs/{doc} cites paths that do not exist: {missing}"


def test_extending_md_quotes_the_examples_verbatim() -> None:
    """Every python block of docs/extending.md starting with `# <path>` is a verbatim part of that file."""
    text = (ROOT / "docs" / "extending.md").read_text()
    blocks = re.findall(r"```python\n# (\S+)\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    for path, body in blocks:
        assert body in (ROOT / path).read_text(), f"docs/extending.md quotes {path} out of date:\n{body}"
