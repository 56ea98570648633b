"""Stabilize: the logistic function recognised as ``sigmoid``, its logs as ``softplus``.

Theano's stabilize rewrites for the logistic function (phase ``stabilize``; all tagged
``stabilize``, so ``mode.excluding("stabilize")`` turns them off):

* ``local_sigmoid_one_minus``: ``1 - sigmoid(x)`` and ``1 + (-sigmoid(x))`` -> ``sigmoid(-x)`` (the
  subtraction loses every digit once sigmoid(x) rounds to 1, and a gradient divides by it); also
  ``u - u * sigmoid(x)`` -> ``u * sigmoid(-x)``, the form a gradient's terms take.
* ``local_log_sigmoid``: ``log(sigmoid(x))`` -> ``-softplus(-x)``, ``log1p(-sigmoid(x))`` ->
  ``-softplus(x)`` (so ``log(1 - sigmoid(x))`` too, through the rewrite above).
* ``local_sigmoid_product`` (on a product: a tree of mul, true_div, neg, reciprocal and ``**-1``):
  a denominator ``1 + exp(t)`` becomes the factor ``sigmoid(-t)`` (so ``1 / (1 + exp(-z))``,
  ``exp(z) / (1 + exp(z))``, ``(1 + exp(-z)) ** -1`` ... are ``sigmoid(z)``); ``exp(t) * sigmoid(-t)``
  -> ``sigmoid(t)``; ``sigmoid(t) / exp(t)`` -> ``sigmoid(-t)``; a strictly positive factor (sigmoid,
  exp, softmax) in both the numerator and the denominator cancels (p / p is 1 wherever p did not
  underflow or overflow, and is the limit where it did: what a gradient like ``g / p * p`` needs).
* ``local_distribute_positive``: ``(a / p - b) * p`` -> ``a / p * p - b * p`` when a term of the sum
  then simplifies (p strictly positive cancels; ``exp(x) / (softmax(x) * sum(exp(x)))``): the softmax
  and sigmoid gradients of a log are of this form.

The constant 1 may have any dtype and any static shape that cannot broadcast the result. Dropping a
cancelled factor keeps the result's shape: where the remaining factors do not provably have the
cancelled one's lengths, the result is broadcast to them (``second``). Negations are built without
a double negation (``neg_of``), so ``1 / (1 + exp(-z))`` is ``sigmoid(z)`` itself.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable, equal_computations
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.graph.rewriting.pattern import constant_equals as _constant_equals
from graphjit.scalar import math as ps
from graphjit.tensor import math as tm
from graphjit.tensor.alloc import second
from graphjit.tensor.basic import cast, constant
from graphjit.tensor.elemwise import DimShuffle, Elemwise
from graphjit.tensor.elemwise_grad import SumToShape
from graphjit.tensor.rewriting.basic import (cannot_broadcast, is_elemwise, keep_type,
                                             register_stabilize)
from graphjit.tensor.variable import TensorConstant, TensorVariable
from graphjit.tensor.rewriting.shape import length_form, local_useless_sum_to_shape, shape_feature_of
from graphjit.tensor.rewriting.special import kept_reduction, reduced_axes
from graphjit.tensor.special import Softmax

_MAX_FACTORS = 16
_TENSORS = (TensorVariable, TensorConstant)   # what tensor ops take; a hand-built graph may hold plain Variables


def _strip_dimshuffle(v: Variable) -> Variable:
    """The constant under DimShuffles (a Python number broadcast by Elemwise: DimShuffle{x,x}(2.0)), or v."""
    inner = v
    while inner.owner is not None and isinstance(inner.owner.op, DimShuffle):
        inner = inner.owner.inputs[0]
    return inner if isinstance(inner, Constant) else v


def constant_equals(v: Variable, value: float) -> bool:
    """v is a constant (possibly through DimShuffles) whose every element equals value."""
    return _constant_equals(_strip_dimshuffle(v), value)


def _is_constant(v: Variable) -> bool:
    return isinstance(_strip_dimshuffle(v), Constant)


def _is_op(v: Variable, scalar_op: object) -> bool:
    """v is computed by an Elemwise of scalar_op, all tensor variables (a hand-built graph's plain Variables,
    which tensor ops cannot take, are left alone)."""
    return (isinstance(v, _TENSORS) and is_elemwise(v, scalar_op)
            and all(isinstance(i, _TENSORS) for i in v.owner.inputs))


def _tensors(prod: "Product") -> bool:
    return all(isinstance(f, _TENSORS) for f in prod.num + prod.den + prod.dropped)


def _tensor_node(node: Apply) -> bool:
    return all(isinstance(v, _TENSORS) for v in node.inputs + node.outputs)


# ------------------------------------------------------------------------------------------------
# Negation
# ------------------------------------------------------------------------------------------------

def neg_of(v: Variable) -> Variable:
    """-v without a double negation: -(-a) -> a, -(a - b) -> b - a, -(-a - b) -> a + b, -c folded."""
    new = None
    if _is_op(v, ps.neg):
        new = v.owner.inputs[0]
    elif _is_op(v, ps.sub):
        a, b = v.owner.inputs
        new = tm.add(a.owner.inputs[0], b) if _is_op(a, ps.neg) else tm.sub(b, a)
    elif isinstance(v, Constant) and np.dtype(v.type.dtype).kind == "f":
        new = constant(-np.asarray(v.data), dtype=v.type.dtype)
    new = keep_type(new, v) if new is not None else None
    return new if new is not None and new.type == v.type else tm.neg(v)


def _is_neg_add(a: Variable, b: Variable) -> bool:
    """a = -p - q and b = p + q (or q + p)."""
    if not _is_op(a, ps.sub) or not _is_op(b, ps.add):
        return False
    p, q = a.owner.inputs
    if not _is_op(p, ps.neg):
        return False
    p = p.owner.inputs[0]
    return b.owner.inputs in ([p, q], [q, p])


def is_neg_of(a: Variable, b: Variable) -> bool:
    """True if a is -b by the structure of the graph (neg, swapped sub, -p - q vs p + q, constants)."""
    if _is_op(a, ps.neg) and a.owner.inputs[0] is b or _is_op(b, ps.neg) and b.owner.inputs[0] is a:
        return True
    if _is_op(a, ps.sub) and _is_op(b, ps.sub):
        return a.owner.inputs[0] is b.owner.inputs[1] and a.owner.inputs[1] is b.owner.inputs[0]
    if _is_neg_add(a, b) or _is_neg_add(b, a):
        return True
    if isinstance(a, Constant) and isinstance(b, Constant) and a.type == b.type:
        return bool(np.array_equal(np.asarray(a.data), -np.asarray(b.data)))
    return False


def same_value(a: Variable, b: Variable) -> bool:
    """a and b compute the same value by the structure of the graph: the same variable, the same computation,
    or two spellings of one negation (``-(p + q)`` and ``-p - q``: the forward's ``1 - p`` and a gradient's
    ``exp(t) * sigmoid(-t)`` build the two)."""
    if a is b:
        return True
    for n, other in ((a, b), (b, a)):
        if _is_op(n, ps.neg) and is_neg_of(other, n.owner.inputs[0]):
            return True
    return equal_computations([a], [b])


def _same_positive(f: Variable, d: Variable) -> bool:
    """f and d are the same strictly positive factor (sigmoid or exp of the same value, or one variable)."""
    if f is d:
        return True
    for op in (ps.sigmoid, ps.exp):
        if _is_op(f, op) and _is_op(d, op):
            return same_value(f.owner.inputs[0], d.owner.inputs[0])
    return False


def sigmoid_of(t: Variable, dtype: str) -> Variable:
    """sigmoid(t) computed in dtype (t cast first, so the result does not lose precision)."""
    return tm.sigmoid(cast(t, dtype) if t.type.dtype != dtype else t)


def _one_plus_exp(v: Variable) -> Optional[Variable]:
    """t if v = 1 + exp(t) or exp(t) + 1 (the 1 a constant that cannot broadcast exp(t)), else None."""
    if not _is_op(v, ps.add):
        return None
    for one, e in (v.owner.inputs, v.owner.inputs[::-1]):
        if _is_op(e, ps.exp) and constant_equals(one, 1) and cannot_broadcast(e, one):
            return e.owner.inputs[0]
    return None


# ------------------------------------------------------------------------------------------------
# Products
# ------------------------------------------------------------------------------------------------

class Product:
    """A product tree flattened: sign * prod(num) / prod(den); dropped: factors removed (for shape).

    (A plain class: a dataclass costs ~0.3 ms to define, in every process's first compile.)"""

    __slots__ = ("dtype", "num", "den", "negative", "dropped", "origin")

    def __init__(self, dtype: str, num: Optional[List[Variable]] = None, den: Optional[List[Variable]] = None,
                 negative: bool = False, dropped: Optional[List[Variable]] = None,
                 origin: Optional[Dict[Variable, Variable]] = None) -> None:
        self.dtype = dtype
        self.num: List[Variable] = [] if num is None else num
        self.den: List[Variable] = [] if den is None else den
        self.negative = negative
        self.dropped: List[Variable] = [] if dropped is None else dropped
        self.origin: Dict[Variable, Variable] = {} if origin is None else origin    # new factor -> old, same shape

    def __repr__(self) -> str:
        return f"Product({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"

    def size(self) -> int:
        """The number of factors."""
        return len(self.num) + len(self.den)


def _minus_one_exponent(node: Apply) -> bool:
    base, e = node.inputs
    return constant_equals(e, -1) and cannot_broadcast(base, e)


def flatten(v: Variable, prod: Product, inverted: bool = False) -> None:
    """Add v's factors to prod, through mul, true_div, neg, reciprocal, pow(., -1) of prod's dtype."""
    node = v.owner
    if (node is not None and isinstance(node.op, Elemwise) and _is_op(v, node.op.scalar_op)
            and v.type.dtype == prod.dtype and prod.size() < _MAX_FACTORS):
        op = node.op.scalar_op
        if op is ps.mul:
            flatten(node.inputs[0], prod, inverted)
            flatten(node.inputs[1], prod, inverted)
            return
        if op is ps.true_div:
            flatten(node.inputs[0], prod, inverted)
            flatten(node.inputs[1], prod, not inverted)
            return
        if op is ps.neg:
            prod.negative = not prod.negative
            flatten(node.inputs[0], prod, inverted)
            return
        if op is ps.reciprocal or (op is ps.pow and _minus_one_exponent(node)):
            flatten(node.inputs[0], prod, not inverted)
            return
    if _is_constant(v) and (constant_equals(v, 1) or constant_equals(v, -1)):
        prod.negative ^= constant_equals(v, -1)
        prod.dropped.append(v)
        return
    (prod.den if inverted else prod.num).append(v)


def _positive(v: Variable) -> bool:
    """v is mathematically strictly positive and finite where its input is finite."""
    if _is_op(v, ps.sigmoid) or _is_op(v, ps.exp):
        return True
    return v.owner is not None and isinstance(v.owner.op, Softmax)


def _replace_one_plus_exp(prod: Product) -> bool:
    """A denominator 1 + exp(t) -> the factor sigmoid(-t)."""
    for i, d in enumerate(prod.den):
        t = _one_plus_exp(d)
        if t is not None:
            del prod.den[i]
            new = sigmoid_of(neg_of(t), prod.dtype)
            prod.num.append(new)
            prod.origin[new] = d
            return True
    return False


def _find(factors: List[Variable], test) -> Optional[int]:
    return next((k for k, f in enumerate(factors) if test(f)), None)


def _merge_exp_sigmoid(prod: Product) -> bool:
    """exp(t) * sigmoid(-t) -> sigmoid(t); sigmoid(t) / exp(t) -> sigmoid(-t)."""
    for i, e in enumerate(prod.num):
        if not _is_op(e, ps.exp):
            continue
        t = e.owner.inputs[0]
        j = _find(prod.num, lambda f: _is_op(f, ps.sigmoid) and is_neg_of(f.owner.inputs[0], t))
        if j is not None:
            for k in sorted((i, j), reverse=True):
                del prod.num[k]
            new = sigmoid_of(t, prod.dtype)
            prod.num.append(new)
            prod.origin[new] = e
            return True
    for i, e in enumerate(prod.den):
        if not _is_op(e, ps.exp):
            continue
        t = e.owner.inputs[0]
        j = _find(prod.num, lambda f: _is_op(f, ps.sigmoid) and f.owner.inputs[0] is t)
        if j is not None:
            del prod.den[i]
            old = prod.num.pop(j)
            new = sigmoid_of(neg_of(t), prod.dtype)
            prod.num.append(new)
            prod.origin[new] = old
            return True
    return False


def _cancel(prod: Product) -> bool:
    """A strictly positive factor in the numerator and the denominator cancels."""
    for i, d in enumerate(prod.den):
        if not _positive(d):
            continue
        j = _find(prod.num, lambda f: _same_positive(f, d))
        if j is not None:
            del prod.den[i]
            del prod.num[j]
            prod.dropped.append(d)
            return True
    return False


def _softmax_parts(sm: Variable) -> Optional[tuple]:
    """(x, axes) of sm = Softmax(axis)(x), else None."""
    if sm.owner is None or not isinstance(sm.owner.op, Softmax):
        return None
    x, axis = sm.owner.inputs[0], sm.owner.op.axis
    return x, (tuple(range(x.type.ndim)) if axis is None else (axis % max(x.type.ndim, 1),))


def _cancel_softmax_normaliser(prod: Product) -> bool:
    """exp(x) / (softmax(x) * sum(exp(x), axis, keepdims=True)) -> 1 (the softmax's own definition)."""
    for i, sm in enumerate(prod.den):
        parts = _softmax_parts(sm)
        if parts is None:
            continue
        x, axes = parts
        for j, s in enumerate(prod.den):
            red = kept_reduction(s, ps.add)
            if red is None or reduced_axes(red) != axes or not _is_op(red.inputs[0], ps.exp):
                continue
            e = red.inputs[0]
            k = _find(prod.num, lambda f: f is e)
            if e.owner.inputs[0] is not x or k is None or e.type.dtype != sm.type.dtype:
                continue
            for idx in sorted((i, j), reverse=True):
                del prod.den[idx]
            del prod.num[k]
            prod.dropped.extend((sm, s, e))
            return True
    return False


def simplify(prod: Product) -> bool:
    """Apply the product identities until none applies; True if any did."""
    changed = False
    while (_replace_one_plus_exp(prod) or _merge_exp_sigmoid(prod) or _cancel(prod)
           or _cancel_softmax_normaliser(prod)):
        changed = True
    return changed


def _same_length(fgraph: FunctionGraph, a: Variable, da: int, b: Variable, db: int) -> bool:
    sa, sb = a.type.shape[da], b.type.shape[db]
    if sa is not None and sa == sb:
        return True
    if a not in fgraph.variables or b not in fgraph.variables:
        return False
    feature = shape_feature_of(fgraph)
    la, lb = feature.get_shape(a, da), feature.get_shape(b, db)
    return length_form(la, feature) == length_form(lb, feature) or equal_computations([la], [lb])


def _covered(fgraph: FunctionGraph, prod: Product, ndim: int, r: Variable) -> bool:
    """The remaining factors provably have r's length wherever r is not 1 (r cannot broadcast them)."""
    pad = ndim - r.type.ndim
    for d, s in enumerate(r.type.shape):
        if s == 1:
            continue
        ok = False
        for f in prod.num + prod.den:
            f_old = prod.origin.get(f, f)
            fd = d + pad - (ndim - f_old.type.ndim)
            if fd >= 0 and _same_length(fgraph, f_old, fd, r, d):
                ok = True
                break
        if not ok:
            return False
    return True


def _product(factors: List[Variable], dtype: str) -> Optional[Variable]:
    out = None
    for f in factors:
        f = cast(f, dtype) if f.type.dtype != dtype else f
        out = f if out is None else tm.mul(out, f)
    return out


def rebuild(fgraph: FunctionGraph, prod: Product, out: Variable) -> Optional[Variable]:
    """The simplified product, with out's Type and shape (or None if that cannot be kept)."""
    new = _product(prod.num, prod.dtype)
    den = _product(prod.den, prod.dtype)
    if den is not None:
        new = tm.true_div(new, den) if new is not None else tm.reciprocal(den)
    if new is None:
        new = constant(np.ones((), dtype=prod.dtype))
    if prod.negative:
        new = tm.neg(new)
    for r in prod.dropped:
        kept = cannot_broadcast(new, r) if _is_constant(r) else _covered(fgraph, prod, out.type.ndim, r)
        if not kept:
            new = second(r, new)
    new = keep_type(new, out)
    return new if new is not None and out.type.is_super(new.type) else None


def _is_float(v: Variable) -> bool:
    return v.type.numpy_dtype.kind == "f"


@node_rewriter([tm.mul, tm.true_div, tm.reciprocal, tm.pow])
def local_sigmoid_product(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """Products with 1 / (1 + exp(t)), exp(t) * sigmoid(-t), p / p (p > 0) -> sigmoid forms, cancelled."""
    if not _tensor_node(node):
        return None
    out = node.outputs[0]
    if not _is_float(out) or (_is_op(out, ps.pow) and not _minus_one_exponent(node)):
        return None
    prod = Product(out.type.dtype)
    flatten(out, prod)
    if not _tensors(prod) or not simplify(prod):
        return None
    new = rebuild(fgraph, prod, out)
    return [new] if new is not None else None


def _simplifies_with(term: Variable, factors: List[Variable], dtype: str) -> bool:
    """term * prod(factors) has a product identity (a factor cancels term's denominator, ...)."""
    inner = Product(dtype)
    flatten(term, inner)
    if not inner.den or not _tensors(inner):
        return False
    inner.num.extend(factors)
    return simplify(inner)


@node_rewriter([tm.mul])
def local_distribute_positive(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """(a / p +- b) * p * q -> (a / p) * (p * q) +- b * (p * q) when a term then simplifies (p / p cancels...)."""
    if not _tensor_node(node):
        return None
    out = node.outputs[0]
    if not _is_float(out):
        return None
    prod = Product(out.type.dtype)
    flatten(out, prod)
    if prod.den or not _tensors(prod):
        return None
    for i, s in enumerate(prod.num):
        if not (_is_op(s, ps.add) or _is_op(s, ps.sub)) or s.type.dtype != out.type.dtype:
            continue
        rest = prod.num[:i] + prod.num[i + 1:]
        a, b = s.owner.inputs
        if not (_simplifies_with(a, rest, out.type.dtype) or _simplifies_with(b, rest, out.type.dtype)):
            continue
        others = _product(rest, out.type.dtype)
        new = s.owner.op(tm.mul(a, others), tm.mul(b, others))
        if prod.negative:
            new = tm.neg(new)
        for r in prod.dropped:   # constants +-1 (their sign is in prod.negative)
            if not cannot_broadcast(new, r):
                new = second(r, new)
        new = keep_type(new, out)
        return [new] if new is not None and out.type.is_super(new.type) else None
    return None


# ------------------------------------------------------------------------------------------------
# 1 - sigmoid(x), log(sigmoid(x))
# ------------------------------------------------------------------------------------------------

def _sigmoid_input(v: Variable) -> Optional[Variable]:
    return v.owner.inputs[0] if _is_op(v, ps.sigmoid) else None


def _one_minus(u: Variable, v: Variable, minus: bool, dtype: str) -> Optional[Variable]:
    """sigmoid(-x) (u a constant 1) or u * sigmoid(-x), if u - v (u + v when not minus) is u - u * sigmoid(x)."""
    prod = Product(dtype)
    flatten(v, prod)
    if prod.negative == minus or prod.den or len(prod.num) not in (1, 2) or not _tensors(prod):
        return None
    k = _find(prod.num, lambda f: _is_op(f, ps.sigmoid))
    if k is None:
        return None
    s = prod.num.pop(k)
    if any(not cannot_broadcast(s, r) for r in prod.dropped):
        return None
    new = sigmoid_of(neg_of(s.owner.inputs[0]), dtype)
    if not prod.num:
        return new if constant_equals(u, 1) and cannot_broadcast(s, u) else None
    return tm.mul(u, new) if prod.num[0] is u else None


@node_rewriter([tm.sub, tm.add])
def local_sigmoid_one_minus(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """1 - sigmoid(x), 1 + (-sigmoid(x)) -> sigmoid(-x); u - u * sigmoid(x) -> u * sigmoid(-x) (a gradient's)."""
    if not _tensor_node(node):
        return None
    a, b = node.inputs
    out = node.outputs[0]
    if out.type.numpy_dtype.kind != "f":
        return None
    minus = _is_op(out, ps.sub)
    for u, v in ((a, b),) if minus else ((a, b), (b, a)):
        new = _one_minus(u, v, minus, out.type.dtype)
        if new is not None:
            new = keep_type(new, out)
            return [new] if new is not None and out.type.is_super(new.type) else None
    return None


@node_rewriter([tm.log, tm.log1p])
def local_log_sigmoid(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """log(sigmoid(x)) -> -softplus(-x); log1p(-sigmoid(x)) -> -softplus(x)."""
    if not _tensor_node(node):
        return None
    (s,) = node.inputs
    out = node.outputs[0]
    if _is_op(out, ps.log):
        x = _sigmoid_input(s)
        arg = None if x is None else neg_of(x)
    else:
        x = _sigmoid_input(s.owner.inputs[0]) if _is_op(s, ps.neg) else None
        arg = x
    if arg is None:
        return None
    new = keep_type(tm.neg(tm.softplus(cast(arg, out.type.dtype) if arg.type.dtype != out.type.dtype else arg)), out)
    return [new] if new is not None and out.type.is_super(new.type) else None


@node_rewriter([SumToShape])
def local_useless_sum_to_shape_of_product(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """canonicalize's local_useless_sum_to_shape, for a product with a sigmoid, exp, softmax or 1 + exp.

    A gradient's useless SumToShape hides the products above. Canonicalize removes it; FAST_COMPILE, which
    skips canonicalize, does it here, only where it may matter (the proof needs the ShapeFeature).
    """
    if not _tensor_node(node):
        return None
    g = node.inputs[0]
    if not _is_float(g):
        return None
    prod = Product(g.type.dtype)
    flatten(g, prod)
    if not any(_positive(f) or _one_plus_exp(f) is not None for f in prod.num + prod.den):
        return None
    return local_useless_sum_to_shape.transform(fgraph, node)


for _rw in (local_sigmoid_one_minus, local_log_sigmoid, local_sigmoid_product, local_distribute_positive):
    register_stabilize(_rw, "sigmoid")
register_stabilize(local_useless_sum_to_shape_of_product, "shape")
