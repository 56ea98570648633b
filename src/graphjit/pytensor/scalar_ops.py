"""Elementwise ops: PyTensor scalar-op classes to graphjit scalar ops; Elemwise, bare scalar ops, Composite."""

from __future__ import annotations

from typing import Any, List, Sequence

import pytensor.scalar.basic as ps
import pytensor.scalar.math as psm
import pytensor.tensor.xlogx as pxl
from pytensor.tensor.elemwise import Elemwise

import graphjit.scalar.math as gsm
import graphjit.scalar.special as gss
import graphjit.tensor as gt
from graphjit.pytensor.registry import lookup_scalar, register, register_scalar
from graphjit.tensor.elemwise import Elemwise as GraphjitElemwise

# PyTensor scalar-op class name -> graphjit scalar op (the same function, numpy's semantics on both sides).
SAME_OP = {
    "Add": gsm.add, "Sub": gsm.sub, "Mul": gsm.mul, "TrueDiv": gsm.true_div, "IntDiv": gsm.int_div,
    "Mod": gsm.mod, "Neg": gsm.neg, "Abs": gsm.abs, "Sign": gsm.sign, "Reciprocal": gsm.reciprocal,
    "Exp": gsm.exp, "Exp2": gsm.exp2, "Expm1": gsm.expm1, "Log": gsm.log, "Log2": gsm.log2,
    "Log10": gsm.log10, "Log1p": gsm.log1p, "Sqr": gsm.sqr, "Sqrt": gsm.sqrt, "Pow": gsm.pow,
    "Maximum": gsm.maximum, "Minimum": gsm.minimum, "Switch": gsm.switch, "Clip": gsm.clip,
    "Second": gsm.second, "Identity": gsm.identity, "EQ": gsm.eq, "NEQ": gsm.neq, "LT": gsm.lt,
    "GT": gsm.gt, "LE": gsm.le, "GE": gsm.ge, "AND": gsm.and_, "OR": gsm.or_, "XOR": gsm.xor,
    "Invert": gsm.invert, "IsNan": gsm.isnan, "IsInf": gsm.isinf, "Floor": gsm.floor, "Ceil": gsm.ceil,
    "Trunc": gsm.trunc, "RoundHalfToEven": gsm.round_half_to_even, "Sin": gsm.sin, "Cos": gsm.cos,
    "Tan": gsm.tan, "ArcSin": gsm.arcsin, "ArcCos": gsm.arccos, "ArcTan": gsm.arctan,
    "ArcTan2": gsm.arctan2, "Sinh": gsm.sinh, "Cosh": gsm.cosh, "Tanh": gsm.tanh, "ArcSinh": gsm.arcsinh,
    "ArcCosh": gsm.arccosh, "ArcTanh": gsm.arctanh, "Deg2Rad": gsm.deg2rad, "Rad2Deg": gsm.rad2deg,
    "Hypot": gsm.hypot, "Real": gsm.real, "Imag": gsm.imag, "Conj": gsm.conj, "Angle": gsm.angle,
    "Sigmoid": gsm.sigmoid, "Softplus": gsm.softplus, "Erf": gsm.erf, "Erfc": gsm.erfc,
    "Erfcx": gss.erfcx, "Erfinv": gss.erfinv, "Erfcinv": gss.erfcinv, "GammaLn": gss.gammaln,
    "Psi": gss.digamma, "TriGamma": gss.trigamma, "PolyGamma": gss.polygamma, "Gamma": gss.gamma,
    "GammaInc": gss.gammainc, "GammaIncC": gss.gammaincc, "Log1mexp": gss.log1mexp, "I0": gss.i0,
    "I1": gss.i1, "I0e": gss.i0e, "I1e": gss.i1e, "XlogY0": gss.xlogy, "Xlog1py": gss.xlog1py,
    "BetaLn": gss.betaln, "ScalarMaximum": gsm.maximum, "ScalarMinimum": gsm.minimum,
}


def _register_same_ops() -> None:
    for name, op in SAME_OP.items():
        for module in (ps, psm, pxl):
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                register_scalar(cls, lambda scalar_op, op=op: op)


_register_same_ops()


def apply_scalar(scalar_op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """graphjit tensors for a scalar op applied elementwise to ``values`` (Cast, Composite, the table)."""
    if isinstance(scalar_op, ps.Cast):
        return [gt.cast(values[0], scalar_op.o_type.dtype)]
    if isinstance(scalar_op, ps.Composite):
        return expand_composite(scalar_op, node, values)
    if isinstance(scalar_op, pxl.XlogX):
        return [gt.xlogy(values[0], values[0])]
    out_dtype = node.outputs[0].type.dtype
    if out_dtype != "bool":
        # PyTensor does arithmetic on booleans (1.0 - (x == y)); graphjit, like numpy's ufuncs, wants numbers.
        keep = 0 if isinstance(scalar_op, ps.Switch) else -1
        values = [gt.cast(v, out_dtype) if v.dtype == "bool" and i != keep else v for i, v in enumerate(values)]
    make = lookup_scalar(scalar_op)
    if make is None:
        raise NotImplementedError(f"the scalar op {type(scalar_op).__name__} has no graphjit counterpart "
                                  "registered (graphjit.pytensor.register_scalar)")
    out = GraphjitElemwise(make(scalar_op))(*values)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def expand_composite(composite: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """A Composite's inner scalar graph, applied elementwise node by node to the outer tensors."""
    inner = composite.fgraph
    env = dict(zip(inner.inputs, values))

    def value_of(var: Any) -> Any:
        if var not in env:
            env[var] = gt.constant(var.data, dtype=var.type.dtype)
        return env[var]

    for inner_node in inner.toposort():
        outs = apply_scalar(inner_node.op, inner_node, [value_of(v) for v in inner_node.inputs])
        env.update(zip(inner_node.outputs, outs))
    return [value_of(o) for o in inner.outputs]


@register(Elemwise)
def elemwise(op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """Elemwise by its scalar op (in-place patterns are PyTensor's business: graphjit decides its own)."""
    return apply_scalar(op.scalar_op, node, values)


@register(ps.ScalarOp)
def bare_scalar(op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """A scalar op outside Elemwise (index arithmetic): on graphjit's 0-d tensors."""
    return apply_scalar(op, node, values)
