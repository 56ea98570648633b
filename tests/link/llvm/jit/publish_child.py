"""Run in a subprocess by test_symbols.py: a graph whose lowerings publish symbols, compiled, pickled or unpickled.

``compile <graph>``, ``pickle <graph> <file>``, ``unpickle <file>``: prints JSON {ok, plan_hit, cache_hit,
rewrites_cached}.  Graphs: ``publishers`` (as_op tensor and elementwise ops, a perform-only op called back,
BLAS, the parallel runtime), ``user_lower`` (an op whose own lower() publishes a symbol and registers no
provider: a warm process must rebuild its IR rather than link a call to address 0).
"""

import ctypes
import json
import pickle
import sys
import warnings

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.numba import as_op
from graphjit.scalar.basic import ScalarOp
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.type import TensorType

DVEC = TensorType("float64", shape=(None,))


@numba.njit
def cumulative(a):
    return np.cumsum(a) * 2.0


@numba.njit
def bump(a):
    return a * a + 0.5


class Halve(Op):
    """Only perform: the fused function calls back into Python (gj_fallback)."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] / 2


class UserCbrt(ScalarOp):
    """A user's scalar op whose lowering publishes libm's cbrt under its own name (no symbols.provide)."""

    def __init__(self):
        super().__init__("user_cbrt", 1, np.cbrt, dtype_rule=lambda d: "float64", allowed_kinds="f")

    def can_lower_scalar(self, in_dtypes, out_dtype):
        return in_dtypes == ("float64",) or list(in_dtypes) == ["float64"]

    def lower_scalar(self, ctx, inputs, in_dtypes, out_dtype):
        if not llvm.address_of_symbol("gj_test_user_cbrt"):
            llvm.add_symbol("gj_test_user_cbrt", ctypes.cast(ctypes.CDLL(None).cbrt, ctypes.c_void_p).value)
        d = ir.DoubleType()
        return ctx.call_external("gj_test_user_cbrt", ir.FunctionType(d, [d]), [inputs[0]])


def build(graph):
    """(function, inputs, expected output) of a graph by name."""
    if graph == "publishers":
        x, m = gt.dvector("x"), gt.dmatrix("m")
        tensor_op = as_op(cumulative, [DVEC], [DVEC])
        scalar_op = as_op(bump, ["float64"], ["float64"], elementwise=True)
        out = scalar_op(tensor_op(x)) + Halve()(x) + gt.dot(m, m).sum()
        a, b = np.arange(1.0, 6.0), np.arange(9.0).reshape(3, 3) / 7
        want = (np.cumsum(a) * 2) ** 2 + 0.5 + a / 2 + (b @ b).sum()
        return gj.function([x, m], out), (a, b), want
    if graph == "user_lower":
        x = gt.dvector("x")
        a = np.array([1.0, 8.0, 27.0, -64.0])
        return gj.function([x], Elemwise(UserCbrt())(x) * 2), (a,), np.cbrt(a) * 2
    raise ValueError(graph)


def report(f, args, want):
    got = f(*args)
    timings = f.native.timings
    rewrites_cached = bool(getattr(f.maker, "rewrites_cached", False))      # an unpickled maker has none
    print(json.dumps({"ok": bool(np.allclose(got, want)), "plan_hit": bool(timings.get("plan_hit")),
                      "cache_hit": bool(f.native.cache_hit), "rewrites_cached": rewrites_cached}))


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    action = sys.argv[1]
    if action == "unpickle":
        with open(sys.argv[2], "rb") as fh:
            f, args, want = pickle.load(fh)
        report(f, args, want)
    else:
        f, args, want = build(sys.argv[2])
        report(f, args, want)
        if action == "pickle":
            with open(sys.argv[3], "wb") as fh:
                pickle.dump((f, args, want), fh)
