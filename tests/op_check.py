"""The one op-test helper: run a graph in every mode and compare with a numpy reference.

Usage (a table of cases through one call)::

    CASES = [Case("add", lambda x, y: x + y, np.add, [arr((3, 4)), arr((4,))])]

    @pytest.mark.parametrize("case", CASES, ids=str)
    def test_elemwise(case):
        check_case(case)

For every dtype of the case and every mode of OP_TEST_MODES it checks values, dtypes and shapes
against numpy on these input layouts: contiguous, Fortran order, non-contiguous, negative strides,
zero-size (when the case allows it), and that no input was modified. When numpy raises on some
input, graphjit must raise an exception of the same family (never crash or answer).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import graphjit as gj
import graphjit.tensor as gt

# Modes every op is tested under; the LLVM backend adds "FAST_RUN" and "FAST_COMPILE".
OP_TEST_MODES: List[str] = ["PY", "FAST_RUN", "FAST_COMPILE"]

ERROR_FAMILIES = (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError)


@dataclasses.dataclass
class Arr:
    """An input spec: shape, dtype (None = the case's dtype), value range, static shape or not."""

    shape: Tuple[int, ...]
    dtype: Optional[str] = None
    low: float = -2.0
    high: float = 2.0
    static: bool = False
    name: Optional[str] = None
    values: Optional[Any] = None  # fixed values instead of random ones

    def variable(self, dtype: str, name: str) -> Any:
        """The symbolic input."""
        shape = self.shape if self.static else (None,) * len(self.shape)
        return gt.TensorType(dtype, shape)(self.name or name)

    def value(self, dtype: str, rng: np.random.Generator, shape: Optional[Tuple[int, ...]] = None
              ) -> np.ndarray:
        """A random value of this spec (or the fixed one)."""
        shape = self.shape if shape is None else shape
        if self.values is not None:
            return np.asarray(self.values, dtype=dtype).reshape(shape)
        kind = np.dtype(dtype).kind
        if kind == "b":
            return rng.random(shape) < 0.5
        if kind in "iu":
            low = max(int(np.floor(self.low)), 0) if kind == "u" else int(np.floor(self.low))
            return rng.integers(low, int(np.ceil(self.high)) + 1, size=shape).astype(dtype)
        if kind == "c":
            parts = rng.uniform(self.low, self.high, size=(2, *shape))
            return (parts[0] + 1j * parts[1]).astype(dtype)
        return rng.uniform(self.low, self.high, size=shape).astype(dtype)


def arr(shape: Tuple[int, ...], dtype: Optional[str] = None, **kw: Any) -> Arr:
    """Shorthand for Arr."""
    return Arr(tuple(shape), dtype, **kw)


@dataclasses.dataclass
class Case:
    """One op test: build(*symbolic inputs) and reference(*numpy inputs) must agree."""

    name: str
    build: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Sequence[Arr]
    dtypes: Sequence[str] = ("float64", "float32")
    zero_size: bool = True   # also run with every length equal to zero_len set to 0
    zero_len: Optional[int] = None
    layouts: bool = True     # also run Fortran, strided and reversed inputs
    rtol: Optional[float] = None
    atol: Optional[float] = None
    check_dtype: bool = True

    def __str__(self) -> str:
        return self.name


def _tolerances(dtype: str, case: Case) -> Dict[str, float]:
    low = dtype in ("float32", "complex64")
    return {"rtol": case.rtol if case.rtol is not None else (2e-5 if low else 1e-10),
            "atol": case.atol if case.atol is not None else (2e-6 if low else 1e-12)}


def _layouts(value: np.ndarray, enabled: bool) -> Dict[str, np.ndarray]:
    out = {"contiguous": value}
    if not enabled or value.ndim == 0:
        return out
    out["fortran"] = np.asfortranarray(value)
    big = np.zeros(tuple(2 * s for s in value.shape), dtype=value.dtype)
    view = big[tuple(slice(None, None, 2) for _ in value.shape)]
    view[...] = value
    out["strided"] = view
    rev = np.ascontiguousarray(value[tuple(slice(None, None, -1) for _ in value.shape)])
    out["reversed"] = rev[tuple(slice(None, None, -1) for _ in value.shape)]
    return out


def _as_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _compare(got: Any, want: Any, dtype: str, case: Case, where: str) -> None:
    got_l, want_l = _as_list(got), _as_list(want)
    assert len(got_l) == len(want_l), f"{where}: {len(got_l)} outputs, expected {len(want_l)}"
    for k, (g, w) in enumerate(zip(got_l, want_l)):
        w = np.asarray(w)
        assert isinstance(g, np.ndarray), f"{where}: output {k} is a {type(g).__name__}, not an ndarray"
        assert g.shape == w.shape, f"{where}: output {k} shape {g.shape}, expected {w.shape}"
        if case.check_dtype:
            assert g.dtype == w.dtype, f"{where}: output {k} dtype {g.dtype}, expected {w.dtype}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, equal_nan=True, err_msg=where, **_tolerances(dtype, case))
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def _run_one(case: Case, dtype: str, values: List[np.ndarray], label: str) -> None:
    for mode in OP_TEST_MODES:
        where = f"{case.name} [{dtype}, {label}, mode={mode}]"
        sym = [spec.variable(spec.dtype or dtype, f"x{i}") for i, spec in enumerate(case.inputs)]
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                # edge values (inf, nan, empty means): numpy's warnings about them are expected
                warnings.simplefilter("ignore", RuntimeWarning)
                want = case.reference(*[v.copy() for v in values])
            ref_error = None
        except ERROR_FAMILIES as e:
            want, ref_error = None, e
        out = case.build(*sym)
        fn = gj.function(sym, out, mode=mode)
        before = [v.copy() for v in values]
        if ref_error is not None:
            try:
                fn(*values)
            except ERROR_FAMILIES:
                continue
            raise AssertionError(f"{where}: numpy raised {ref_error!r} but graphjit did not")
        with np.errstate(all="ignore"):       # PY's perform is numpy: it warns where numpy does
            got = fn(*values)
        _compare(got, want, dtype, case, where)
        for i, (b, v) in enumerate(zip(before, values)):
            assert np.array_equal(b, v, equal_nan=True), f"{where}: input {i} was modified"


def check_case(case: Case, seed: int = 0) -> None:
    """Run case for each dtype, layout and mode (see the module docstring)."""
    for dtype in case.dtypes:
        rng = np.random.default_rng(seed)
        base = [spec.value(spec.dtype or dtype, rng) for spec in case.inputs]
        lay = [_layouts(v, case.layouts) for v in base]
        for label in lay[0] if lay else ["contiguous"]:
            _run_one(case, dtype, [d.get(label, d["contiguous"]) for d in lay], label)
        if case.zero_size and case.inputs:
            zl = case.zero_len if case.zero_len is not None else _first_len(case)
            if zl is not None:
                shapes = [tuple(0 if s == zl else s for s in spec.shape) for spec in case.inputs]
                zero = [spec.value(spec.dtype or dtype, rng, shp) if spec.values is None
                        else np.zeros(shp, spec.dtype or dtype)
                        for spec, shp in zip(case.inputs, shapes)]
                _run_one(case, dtype, zero, "zero-size")


def _first_len(case: Case) -> Optional[int]:
    for spec in case.inputs:
        for s in spec.shape:
            if s > 1:
                return s
    return None


def check_infer_shape(build: Callable[..., Any], inputs: Sequence[Arr], dtype: str = "float64",
                      seed: int = 0) -> None:
    """The shape computed by the ShapeFeature (without running the op) equals the real shape."""
    from graphjit.tensor.shape_feature import symbolic_shape_of
    rng = np.random.default_rng(seed)
    sym = [spec.variable(spec.dtype or dtype, f"x{i}") for i, spec in enumerate(inputs)]
    vals = [spec.value(spec.dtype or dtype, rng) for spec in inputs]
    outs = _as_list(build(*sym))
    real = gj.function(sym, outs, mode="PY", on_unused_input="ignore")(*vals)
    for k, (out, r) in enumerate(zip(outs, real)):
        shp = symbolic_shape_of(out, sym)
        assert not _computes(shp, out), f"output {k}: its inferred shape still computes the output"
        got = tuple(int(s) for s in gj.function(sym, shp, mode="PY", on_unused_input="ignore")(*vals))
        assert got == np.shape(r), f"output {k}: inferred shape {got}, real {np.shape(r)}"


def _computes(shape_var: Any, out: Any) -> bool:
    from graphjit.graph.basic import ancestors
    return out in set(ancestors([shape_var]))


def check_op_contract(op: Any, make_inputs: Callable[[], Sequence[Any]]) -> None:
    """__props__ give eq/hash/str; make_node re-applied to a node's inputs gives an equal node."""
    import copy
    import pickle
    other = copy.copy(op)
    assert op == other and hash(op) == hash(other), f"{op}: a copy is not equal / same hash"
    assert isinstance(str(op), str) and str(op)
    node = op.make_node(*make_inputs())
    again = op.make_node(*node.inputs)
    assert again.op == node.op
    assert [o.type for o in again.outputs] == [o.type for o in node.outputs]
    restored = pickle.loads(pickle.dumps(op))
    assert restored == op, f"{op} does not survive pickling"
