"""``ifelse(cond, then, else)``: a conditional that computes only the branch it takes (Theano's lazy IfElse).

``IfElse`` follows the lazy-branch protocol of ``graphjit/graph/branch_schedule.py``: the linkers run the
computations that only one branch needs under the condition (a Python ``if`` in the PerformLinker, an LLVM
conditional branch in the fused native function), so the branch not taken costs nothing.  Its rewrites (constant conditions, equal
branches, lifting elementwise work into the branches) live in ``tensor/rewriting/branches.py``.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.scalar.basic import upcast
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.type import TensorType

__all__ = ["IfElse", "ifelse"]

_COND_KINDS = "biuf"


class IfElse(Op):
    """``IfElse(n)(cond, then_1..then_n, else_1..else_n)``: the then values if cond is true, else the others.

    Each output is a fresh array (never a view of a branch value), so no op downstream can overwrite a branch.
    """

    __props__ = ("n_outs",)

    def __init__(self, n_outs: int, name: Optional[str] = None) -> None:
        if int(n_outs) < 1:
            raise ValueError(f"IfElse needs at least one output, got n_outs={n_outs}")
        self.n_outs = int(n_outs)
        self.name = name

    def __str__(self) -> str:
        return f"IfElse{{{self.name}}}" if self.name else f"IfElse{{n_outs={self.n_outs}}}"

    def make_node(self, cond: Any, *branches: Any) -> Apply:
        """The node over cond (a 0-d tensor) and 2 * n_outs branch values of matching dtype and rank."""
        n = self.n_outs
        if len(branches) != 2 * n:
            raise TypeError(f"{self}: expected {2 * n} branch values after the condition, got {len(branches)}")
        cond = as_condition(cond)
        values = [as_tensor_variable(b) for b in branches]
        outs = []
        for i, (t, e) in enumerate(zip(values[:n], values[n:])):
            if t.type.dtype != e.type.dtype or t.type.ndim != e.type.ndim:
                raise TypeError(f"ifelse: output {i} has type {t.type} in the then branch ({t}) and {e.type} in "
                                f"the else branch ({e}); both branches need the same dtype and number of "
                                "dimensions")
            shape = tuple(a if a == b else None for a, b in zip(t.type.shape, e.type.shape))
            outs.append(TensorType(t.type.dtype, shape)())
        return Apply(self, [cond, *values], outs)

    # --- the lazy-branch protocol (graph/branch_schedule.py)
    def lazy_branches(self, node: Apply) -> List[List[int]]:
        """Input positions of the then values, and of the else values."""
        n = self.n_outs
        return [list(range(1, 1 + n)), list(range(1 + n, 1 + 2 * n))]

    def select_branch(self, node: Apply, cond_value: Any) -> int:
        """0 (then) when cond_value is true, else 1."""
        return 0 if np.asarray(cond_value).item() else 1

    def rebuild_branches(self, cond: Variable, branches: Sequence[Sequence[Variable]]) -> List[Variable]:
        """The outputs of a new IfElse over other branch values."""
        then, other = branches
        out = IfElse(len(then), self.name)(cond, *then, *other)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    # --- computing
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[Any]) -> None:
        """Copy the taken branch's values (the others were not computed: their cells are not read)."""
        start = 1 if self.select_branch(node, inputs[0]) == 0 else 1 + self.n_outs
        for i, cell in enumerate(output_storage):
            cell[0] = np.array(inputs[start + i], dtype=node.outputs[i].type.dtype, copy=True)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: List[tuple]) -> List[tuple]:
        """Dimensions equal in both branches are kept; the others come from an IfElse over the lengths."""
        n, cond = self.n_outs, node.inputs[0]
        then, other = input_shapes[1:1 + n], input_shapes[1 + n:]
        differ = [(i, d) for i in range(n) for d, (a, b) in enumerate(zip(then[i], other[i])) if not _same(a, b)]
        result = [list(s) for s in then]
        if differ:
            lengths = IfElse(len(differ))(cond, *[_length(then[i][d]) for i, d in differ],
                                          *[_length(other[i][d]) for i, d in differ])
            lengths = lengths if isinstance(lengths, list) else [lengths]
            for (i, d), v in zip(differ, lengths):
                result[i][d] = v
        return [tuple(s) for s in result]

    # --- derivatives
    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        """The condition is connected to no output (it has no gradient); branch value i to output i."""
        n = self.n_outs
        rows = [[False] * n]
        rows += [[j == i for j in range(n)] for i in range(n)] * 2
        return rows

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> List[Optional[Variable]]:
        """grad of ifelse = ifelse of the grads: the taken branch gets the output's gradient, the other zeros."""
        n, cond = self.n_outs, inputs[0]
        then, other = inputs[1:1 + n], inputs[1 + n:]
        grads = [cast(g, o.type.dtype) if g.type.dtype != o.type.dtype else g for g, o in zip(output_grads, outputs)]
        g_then = _as_list(IfElse(n, _suffixed(self.name, "grad_then"))(cond, *grads, *[zeros_like(t) for t in then]))
        g_else = _as_list(IfElse(n, _suffixed(self.name, "grad_else"))(cond, *[zeros_like(e) for e in other], *grads))
        return [None, *g_then, *g_else]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]
             ) -> List[Optional[Variable]]:
        """ifelse of the branches' tangents (zeros for a branch value without one)."""
        n = self.n_outs
        if all(p is None for p in eval_points[1:]):
            return [None] * n
        points = [zeros_like(x) if p is None else cast(p, x.type.dtype) if p.type.dtype != x.type.dtype else p
                  for x, p in zip(inputs[1:], eval_points[1:])]
        return _as_list(IfElse(n, _suffixed(self.name, "rop"))(inputs[0], *points))


def _suffixed(name: Optional[str], what: str) -> Optional[str]:
    return f"{name}.{what}" if name else None


def _as_list(out: Union[Variable, Sequence[Variable]]) -> List[Variable]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    return isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and int(a) == int(b)


def _length(v: Any) -> Variable:
    """A length as an int64 scalar (both branches' lengths must have one dtype)."""
    if not isinstance(v, Variable):
        return constant(np.int64(v))
    v = as_tensor_variable(v)
    return v if v.type.dtype == "int64" else cast(v, "int64")


def as_condition(cond: Any) -> Variable:
    """cond as a 0-d bool/integer/float tensor; TypeError naming it otherwise."""
    try:
        var = as_tensor_variable(cond)
    except (TypeError, ValueError) as e:
        raise TypeError(f"ifelse: the condition {cond!r} is not a tensor or a number ({e})") from None
    if var.type.ndim != 0:
        raise TypeError(f"ifelse: the condition {var.describe()} must be a scalar (0-d) tensor, got "
                        f"{var.type.ndim} dimension(s); reduce it first, e.g. with .any() or .all()")
    if np.dtype(var.type.dtype).kind not in _COND_KINDS:
        raise TypeError(f"ifelse: the condition {var} has dtype {var.type.dtype}, which has no truth value here; "
                        "use a bool, integer or float scalar")
    return var


def _branch_pair(t: Any, e: Any, i: int) -> tuple:
    """The then and else values of output i as tensors of one dtype (numpy's upcast; a Python number takes
    the other branch's dtype)."""
    t_num, e_num = not isinstance(t, (Variable, np.ndarray)), not isinstance(e, (Variable, np.ndarray))
    tv = as_tensor_variable(t) if not t_num or e_num else None
    ev = as_tensor_variable(e) if not e_num or t_num else None
    if tv is None:
        tv = constant(np.asarray(t, dtype=ev.type.dtype))
    if ev is None:
        ev = constant(np.asarray(e, dtype=tv.type.dtype))
    if tv.type.ndim != ev.type.ndim:
        raise TypeError(f"ifelse: output {i} has {tv.type.ndim} dimension(s) in the then branch ({tv}, {tv.type}) "
                        f"and {ev.type.ndim} in the else branch ({ev}, {ev.type}); both branches need the same "
                        "number of dimensions")
    dtype = upcast(tv.type.dtype, ev.type.dtype)
    return (tv if tv.type.dtype == dtype else cast(tv, dtype)), (ev if ev.type.dtype == dtype else cast(ev, dtype))


def ifelse(condition: Any, then_branch: Any, else_branch: Any,
           name: Optional[str] = None) -> Union[Variable, List[Variable]]:
    """then_branch if condition (a scalar) is true, else else_branch; only the taken branch is computed.

    Branches are a value or lists of values of equal length (then a list is returned); output i has the taken
    branch's shape, and the upcast of both branches' dtypes (numpy's rule; a Python number takes the dtype of
    the other branch).
    """
    single = not isinstance(then_branch, (list, tuple))
    thens = [then_branch] if single else list(then_branch)
    elses = [else_branch] if not isinstance(else_branch, (list, tuple)) else list(else_branch)
    if single != (not isinstance(else_branch, (list, tuple))) or len(thens) != len(elses):
        raise ValueError(f"ifelse: the then branch has {len(thens)} value(s) and the else branch {len(elses)}; "
                         "they need as many (and both single values or both lists)")
    if not thens:
        raise ValueError("ifelse: the branches hold no value")
    cond = as_condition(condition)
    pairs = [_branch_pair(t, e, i) for i, (t, e) in enumerate(zip(thens, elses))]
    out = IfElse(len(pairs), name)(cond, *[t for t, _ in pairs], *[e for _, e in pairs])
    outs = _as_list(out)
    return outs[0] if single else outs
