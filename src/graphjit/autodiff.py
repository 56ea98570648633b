"""Symbolic differentiation of a graph: grad (reverse mode), Lop and Rop, through its ops' L_op and R_op.

graphjit.gradient re-exports these names (Theano's and PyTensor's path for them).
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence, Set, Union

import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Apply, Constant, Variable, clone_replace, io_toposort
from graphjit.graph.grad_markers import DisconnectedType, disconnected_type, grad_not_implemented
from graphjit.graph.type import NullType
from graphjit.graph.utils import MethodNotDefined
from graphjit.tensor.alloc import ones_like, second, zeros_like
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.math import add, mul, sum as tsum
from graphjit.tensor.shape_base import match_shape
from graphjit.tensor.type import TensorType


class DisconnectedInputError(ValueError):
    """grad was asked for the gradient with respect to a variable the cost does not depend on."""


class NullTypeGradError(TypeError):
    """A gradient on the path to a requested input is undefined or not implemented."""


def _is_null(v: Any) -> bool:
    return isinstance(v, Variable) and isinstance(v.type, NullType)


def _is_disconnected(v: Any) -> bool:
    return v is None or (isinstance(v, Variable) and isinstance(v.type, DisconnectedType))


def _dtype(v: Variable) -> Optional[str]:
    return getattr(v.type, "dtype", None)


def _is_discrete(v: Variable) -> bool:
    dtype = _dtype(v)
    return dtype is not None and np.dtype(dtype).kind in "biu"


def _float_dtype_of(v: Variable) -> str:
    dtype = _dtype(v)
    if dtype in ("float32", "float64", "complex64", "complex128"):
        return dtype
    return config.floatX


def grad_zeros_like(v: Variable, dtype: Optional[str] = None) -> Variable:
    """Zeros shaped like v, in v's float dtype (floatX when v is discrete): a gradient that is zero."""
    return zeros_like(v, dtype=dtype or _float_dtype_of(v))


def _ones_like(v: Variable, dtype: Optional[str] = None) -> Variable:
    return ones_like(v, dtype=dtype or _float_dtype_of(v))


def _sum_terms(terms: List[Variable]) -> Variable:
    total = terms[0]
    for t in terms[1:]:
        total = add(total, t)
    return total


# ------------------------------------------------------------------------------------------------
# Which variables lie between wrt and the cost
# ------------------------------------------------------------------------------------------------

def _connection(node: Apply) -> List[List[bool]]:
    try:
        pattern = node.op.connection_pattern(node)
    except MethodNotDefined:
        pattern = None
    if pattern is None:
        return [[True] * len(node.outputs) for _ in node.inputs]
    return pattern


def _depends_on(nodes: List[Apply], sources: Set[Variable], constants: Set[Variable]) -> Set[Variable]:
    """Variables whose value depends (through connection patterns) on a source; a variable in
    constants depends on nothing but itself (consider_constant)."""
    reached = set(sources)
    for node in nodes:
        pattern = _connection(node)
        for o, out in enumerate(node.outputs):
            if out in constants:
                continue
            if any(inp in reached and pattern[i][o] for i, inp in enumerate(node.inputs)):
                reached.add(out)
    return reached


# ------------------------------------------------------------------------------------------------
# grad
# ------------------------------------------------------------------------------------------------

def grad(cost: Optional[Variable], wrt: Union[Variable, Sequence[Variable]],
         consider_constant: Optional[Sequence[Variable]] = None,
         disconnected_inputs: str = "raise", known_grads: Optional[Dict[Variable, Any]] = None,
         return_disconnected: str = "zero", null_gradients: str = "raise") -> Any:
    """Symbolic gradient of a scalar cost with respect to wrt (one Variable or a list).

    known_grads maps intermediate variables to their (given) gradients; consider_constant lists
    variables through which no gradient flows; disconnected_inputs is "raise", "warn" or "ignore";
    return_disconnected ("zero", "None", "Disconnected") says what a disconnected input gets;
    null_gradients "raise" or "return" decides what an undefined gradient on the path does.
    """
    single = isinstance(wrt, Variable)
    wrt_list = [wrt] if single else list(wrt)
    for w in wrt_list:
        if not isinstance(w, Variable):
            raise TypeError(f"grad: wrt must be Variables, got {w!r}")
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError(f"disconnected_inputs must be 'raise', 'warn' or 'ignore', got {disconnected_inputs!r}")
    known = dict(known_grads or {})
    if cost is None and not known:
        raise ValueError("grad needs a cost or known_grads")
    seeds: Dict[Variable, Variable] = {}
    if cost is not None:
        cost = as_tensor_variable(cost)
        if cost.ndim != 0:
            raise TypeError(f"grad: the cost must be a scalar (0-d), got {cost.describe()}; "
                            "use .sum() or pass known_grads")
        seeds[cost] = _ones_like(cost)
    for var, g in known.items():
        g = g if isinstance(g, Variable) else as_tensor_variable(g)
        seeds[var] = g
    grads = _backprop(seeds, wrt_list, set(consider_constant or ()))
    results = []
    for w in wrt_list:
        g = grads.get(w)
        if g is None:
            g = _disconnected_result(w, disconnected_inputs, return_disconnected)
        elif _is_null(g):
            if null_gradients == "raise":
                raise NullTypeGradError(f"grad: the gradient with respect to {w.describe()} is "
                                        f"undefined: {g.type.why_null}")
        else:
            g = _match_dtype(g, w)
        results.append(g)
    return results[0] if single else results


def _disconnected_result(w: Variable, disconnected_inputs: str, return_disconnected: str) -> Any:
    message = (f"grad: the cost does not depend on {w.describe()} (it is not part of the computational "
               "graph of the cost, or only through non-differentiable operations)")
    if disconnected_inputs == "raise":
        raise DisconnectedInputError(message + "; pass disconnected_inputs='ignore' to get zeros")
    if disconnected_inputs == "warn":
        warnings.warn(message, stacklevel=3)
    if return_disconnected == "zero":
        return second(w, constant(np.zeros((), dtype=_float_dtype_of(w))))
    if return_disconnected == "None":
        return None
    if return_disconnected == "Disconnected":
        return disconnected_type()
    raise ValueError(f"return_disconnected must be 'zero', 'None' or 'Disconnected', got {return_disconnected!r}")


def _match_dtype(g: Variable, w: Variable) -> Variable:
    wd, gd = _dtype(w), _dtype(g)
    if wd in ("float32", "float64") and gd is not None and gd != wd:
        return cast(g, wd)
    return g


def _backprop(seeds: Dict[Variable, Variable], wrt: List[Variable], constants: Set[Variable]
              ) -> Dict[Variable, Variable]:
    """Reverse-mode accumulation from seeds back to wrt; returns the summed gradient per variable.

    The walk does not stop at a wrt: a wrt may be an intermediate computed from another wrt
    (grad(cost, [x, h]) with h = f(x)), and x then gets the total gradient, through h. It stops at
    the variables in constants: they get their gradient, but it goes no further (consider_constant).
    """
    outputs = list(seeds)
    nodes = io_toposort(constants, outputs)
    depends = _depends_on(nodes, set(wrt), constants)
    contributions: Dict[Variable, List[Variable]] = {v: [g] for v, g in seeds.items()}
    for node in reversed(nodes):
        out_terms = [None if o in constants else contributions.get(o) for o in node.outputs]
        if not any(out_terms):
            continue
        if not any(inp in depends for inp in node.inputs):
            continue
        in_grads = _node_input_grads(node, out_terms)
        for inp, g in zip(node.inputs, in_grads):
            if inp in depends and not _is_disconnected(g):
                contributions.setdefault(inp, []).append(g)
    result: Dict[Variable, Variable] = {}
    for w in wrt:
        terms = contributions.get(w)
        if terms:
            nulls = [t for t in terms if _is_null(t)]
            result[w] = nulls[0] if nulls else _sum_terms(terms)
    return result


def _node_input_grads(node: Apply, out_terms: List[Optional[List[Variable]]]) -> List[Any]:
    """Call the op's L_op with one gradient per output; integer outputs give zero gradients."""
    outputs = node.outputs
    if all(_is_discrete(o) for o, t in zip(outputs, out_terms) if t):
        return _integer_output_grads(node)
    out_grads = []
    for o, terms in zip(outputs, out_terms):
        if terms:
            nulls = [t for t in terms if _is_null(t)]
            out_grads.append(nulls[0] if nulls else _sum_terms(terms))
        elif _dtype(o) is not None:
            out_grads.append(grad_zeros_like(o))
        else:
            out_grads.append(disconnected_type())
    if any(_is_null(g) for g in out_grads):
        why = next(g.type.why_null for g in out_grads if _is_null(g))
        return [NullType(why)() for _ in node.inputs]
    try:
        in_grads = _op_L_op(node, out_grads)
    except MethodNotDefined:
        return [grad_not_implemented(node.op, i, x) for i, x in enumerate(node.inputs)]
    in_grads = list(in_grads)
    if len(in_grads) != len(node.inputs):
        raise ValueError(f"{node.op}.L_op returned {len(in_grads)} gradients for "
                         f"{len(node.inputs)} inputs")
    pattern = _connection(node)
    for i, g in enumerate(in_grads):
        if not any(pattern[i]):
            in_grads[i] = None
        elif g is not None and not isinstance(g, Variable):
            raise TypeError(f"{node.op}.L_op returned {g!r} for input {i}; expected a Variable")
        elif g is not None and _is_discrete(g) and not _is_null(g):
            raise TypeError(f"{node.op}.L_op returned an integer gradient ({g.type}) for input {i}")
    return in_grads


def _op_L_op(node: Apply, out_grads: List[Variable]) -> Sequence[Any]:
    """node.op.L_op; for an op that declares ``grad_expression(inputs)`` (the expression it stands for, as
    Gemv does), the Lop of that expression: ops name no function of this layer above them."""
    inputs = list(node.inputs)
    expression = getattr(node.op, "grad_expression", None)
    if expression is None:
        return node.op.L_op(inputs, list(node.outputs), out_grads)
    return list(Lop(expression(inputs), inputs, out_grads, disconnected_inputs="ignore"))


def _op_R_op(node: Apply, eval_points: List[Optional[Variable]]) -> Sequence[Any]:
    """node.op.R_op, or the Rop of the op's grad_expression for the inputs that have a tangent."""
    inputs = list(node.inputs)
    expression = getattr(node.op, "grad_expression", None)
    if expression is None:
        return node.op.R_op(inputs, eval_points)
    pairs = [(i, p) for i, p in zip(inputs, eval_points) if p is not None]
    if not pairs:
        return [None]
    return [rop_unchecked(expression(inputs), [i for i, _ in pairs], [p for _, p in pairs])]


def _integer_output_grads(node: Apply) -> List[Any]:
    """Integer outputs change in steps: zero gradients, except where the op declares an input's
    gradient undefined (grad_undefined, e.g. an axis that must be an integer: the seed's case 3)."""
    zeros = [grad_zeros_like(o) if _dtype(o) is not None else disconnected_type() for o in node.outputs]
    try:
        in_grads = list(_op_L_op(node, zeros))
    except (MethodNotDefined, TypeError, ValueError, NotImplementedError):
        in_grads = [None] * len(node.inputs)
    if len(in_grads) != len(node.inputs):
        in_grads = [None] * len(node.inputs)
    pattern = _connection(node)
    return [None if not any(pattern[k]) else g if _is_null(g) and getattr(g.tag, "grad_undefined", False) else
            (grad_zeros_like(i) if not isinstance(i, Constant) and _dtype(i) else None)
            for k, (i, g) in enumerate(zip(node.inputs, in_grads))]


# ------------------------------------------------------------------------------------------------
# Lop, Rop
# ------------------------------------------------------------------------------------------------

def Lop(f: Union[Variable, Sequence[Variable]], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[Variable, Sequence[Variable]], consider_constant: Optional[Sequence[Variable]] = None,
        disconnected_inputs: str = "raise") -> Any:
    """eval_points times the Jacobian of f with respect to wrt (a vector-Jacobian product)."""
    fs = [f] if isinstance(f, Variable) else list(f)
    evs = [eval_points] if isinstance(eval_points, Variable) else list(eval_points)
    if len(fs) != len(evs):
        raise ValueError(f"Lop: {len(fs)} outputs but {len(evs)} eval points")
    return grad(None, wrt, consider_constant=consider_constant, known_grads=dict(zip(fs, evs)),
                disconnected_inputs=disconnected_inputs)


def Rop(f: Union[Variable, Sequence[Variable]], wrt: Union[Variable, Sequence[Variable]],
        eval_points: Union[Variable, Sequence[Variable]], use_op_rop: Optional[bool] = None) -> Any:
    """The Jacobian of f with respect to wrt times eval_points (a Jacobian-vector product).

    Uses the ops' R_op (forward mode) when every op on the path has one; otherwise the Lop-of-Lop
    identity Rop(f, x, v) = d/du <Lop(f, x, u), v>, which needs only L_op. Each eval point must have
    its wrt's shape: checked when the graph is built where both are static, else at run time
    (a ValueError naming both; only the wrt's shape is read).
    """
    return _rop(f, wrt, eval_points, use_op_rop, check=True)


def rop_unchecked(f: Union[Variable, Sequence[Variable]], wrt: Union[Variable, Sequence[Variable]],
                  eval_points: Union[Variable, Sequence[Variable]], use_op_rop: Optional[bool] = None) -> Any:
    """Rop without the eval points' shape check: an op's R_op over its inner graph (OpFromGraph, Scan),
    whose eval points the outer Rop has checked."""
    return _rop(f, wrt, eval_points, use_op_rop, check=False)


def _rop(f: Any, wrt: Any, eval_points: Any, use_op_rop: Optional[bool], check: bool) -> Any:
    single = isinstance(f, Variable)
    fs = [f] if single else list(f)
    xs = [wrt] if isinstance(wrt, Variable) else list(wrt)
    vs = [eval_points] if isinstance(eval_points, Variable) else list(eval_points)
    if len(xs) != len(vs):
        raise ValueError(f"Rop: {len(xs)} wrt but {len(vs)} eval points")
    vs = [as_tensor_variable(v) for v in vs]
    if check:
        vs = [_checked_eval_point(i, x, v) for i, (x, v) in enumerate(zip(xs, vs))]
    result = None
    if use_op_rop is not False:
        result = _forward_rop(fs, xs, vs, strict=bool(use_op_rop))
    if result is None:
        result = _rop_via_lop(fs, xs, vs)
    return result[0] if single else result


def _label(v: Variable, what: str, i: int) -> str:
    return f"{what} {v.name!r}" if v.name else f"{what} {i}"


def _checked_eval_point(i: int, x: Variable, v: Variable) -> Variable:
    """v, checked (at run time when not static) to have x's shape: a ValueError naming both.

    Only x's shape is read (Shape), so Rop(dot(a, W), W, V) takes W for its shape alone."""
    if not isinstance(x.type, TensorType) or not isinstance(v.type, TensorType):
        return v
    return match_shape(v, x, (f"Rop: {_label(v, 'the eval point', i)}", _label(x, "wrt", i)))


def _forward_rop(fs: List[Variable], xs: List[Variable], vs: List[Variable], strict: bool
                 ) -> Optional[List[Variable]]:
    # The walk goes through every node, not only those above xs: a wrt may be computed from another
    # (Rop(f, [x, h], [vx, vh]) with h = g(x)); h's tangent is then g's tangent from vx, plus vh.
    seeds = dict(zip(xs, vs))
    tangents: Dict[Variable, Optional[Variable]] = {x: v for x, v in seeds.items() if x.owner is None}
    for node in io_toposort(set(), fs):
        if any(tangents.get(i) is not None for i in node.inputs):
            try:
                outs = _op_R_op(node, [tangents.get(i) for i in node.inputs])
            except MethodNotDefined:
                if strict:
                    raise
                return None
            tangents.update(zip(node.outputs, outs))
        for o in node.outputs:
            if o in seeds:
                t = tangents.get(o)
                tangents[o] = seeds[o] if t is None else t + seeds[o]
    result = []
    for f in fs:
        t = tangents.get(f)
        result.append(t if t is not None else grad_zeros_like(f))
    return result


def _rop_via_lop(fs: List[Variable], xs: List[Variable], vs: List[Variable]) -> List[Variable]:
    us = [f.type() for f in fs]
    lops = grad(None, xs, known_grads=dict(zip(fs, us)), disconnected_inputs="ignore")
    inner = _sum_terms([tsum(mul(g, v)) for g, v in zip(lops, vs)])
    result = grad(inner, us, disconnected_inputs="ignore")
    # The result is linear in u, so its value does not depend on u; only its shape may still read
    # u: substitute something of f's shape so the graph needs no extra input.
    return clone_replace(result, {u: grad_zeros_like(f, _dtype(f)) for u, f in zip(us, fs)})
