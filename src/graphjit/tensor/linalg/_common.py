"""Shared pieces of the linear-algebra ops: dtype rules, input checks, batch shapes, LinAlgError wording,
the lazy scipy.linalg, and the small structural helpers (mT, tril/triu, diagonal) the gradients use."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.tensor.alloc import arange, zeros
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.blas import matmul
from graphjit.tensor.elemwise import broadcast_static_shape
from graphjit.tensor.elemwise_grad import reduce_to_input
from graphjit.tensor.math import conj, ge, le, mul, sum as tsum, where
from graphjit.tensor.shape import transpose
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable
from graphjit.graph import forksafe

LinAlgError = np.linalg.LinAlgError
StaticShape = Tuple[Optional[int], ...]
ON_ERROR = ("raise", "nan")


def scipy_linalg() -> Any:
    """scipy.linalg, imported on first use (``import graphjit`` never loads scipy)."""
    return forksafe.import_module("scipy.linalg")


def result_dtype(op: Any, x: Variable) -> str:
    """numpy.linalg's dtype rule: float32 and complex64/complex128 stay, other ints/bools/floats give float64."""
    dtype = np.dtype(x.type.dtype)
    if dtype.kind == "c":
        return str(dtype)
    if dtype == np.float16:
        raise TypeError(f"{op}: array type float16 is unsupported in linalg ({x.describe()})")
    if dtype.kind not in "biuf":
        raise TypeError(f"{op}: {x.describe()} has dtype {dtype}, not a number")
    return "float32" if dtype == np.float32 else "float64"


def common_dtype(*dtypes: str) -> str:
    """The result dtype of a linalg op on operands of result dtypes dtypes: single precision only when all
    are, complex when one is (numpy's promotion)."""
    single = all(d in ("float32", "complex64") for d in dtypes)
    if any(d.startswith("complex") for d in dtypes):
        return "complex64" if single else "complex128"
    return "float32" if single else "float64"


def real_dtype(dtype: str) -> str:
    """The real dtype of dtype's values (complex64 -> float32, complex128 -> float64; real dtypes unchanged)."""
    return {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)


def is_complex(x: Variable) -> bool:
    """Whether x's dtype is complex."""
    return np.dtype(x.type.dtype).kind == "c"


def no_complex(op: Any, inputs: Sequence[Variable], what: str = "gradient") -> None:
    """NotImplementedError when an input is complex (the op's derivative is not holomorphic: its formula for
    real matrices does not carry over, and graphjit does not implement the complex one)."""
    if any(is_complex(x) for x in inputs):
        raise NotImplementedError(f"{op}: the {what} for complex inputs is not implemented (the op is not "
                                  f"holomorphic; see docs/linalg.md)")


def holomorphic_grads(l_op: Any) -> Any:
    """Wrap a real L_op rule r (linear in the cotangents) for a holomorphic op: with complex inputs the
    gradient is conj(r(conj(g))) (graphjit's convention, docs/gradients.md: the conjugate of JAX's)."""
    def wrapped(self: Any, inputs: list, outputs: list, grads: list) -> list:
        if not any(is_complex(x) for x in inputs):
            return l_op(self, inputs, outputs, grads)
        flip = lambda v: conj(v) if isinstance(v, TensorVariable) and is_complex(v) else v  # noqa: E731
        return [flip(g) for g in l_op(self, inputs, outputs, [flip(g) for g in grads])]
    wrapped.__doc__ = l_op.__doc__
    wrapped.__name__ = l_op.__name__
    return wrapped


def mH(x: Any) -> TensorVariable:
    """The conjugate transpose over the last two axes (mT for a real x)."""
    x = mT(x)
    return conj(x) if is_complex(x) else x


def as_matrix(op: Any, x: Any, what: str = "a", square: bool = True, min_ndim: int = 2) -> TensorVariable:
    """x as a tensor of at least min_ndim dims (TypeError naming it otherwise), cast to the result dtype."""
    x = as_tensor_variable(x)
    if x.ndim < min_ndim:
        raise TypeError(f"{op}: input {what} must have at least {min_ndim} dimensions, got {x.describe()}")
    dtype = result_dtype(op, x)
    if square and min_ndim >= 2:
        n, m = x.type.shape[-2:]
        if n is not None and m is not None and n != m:
            raise LinAlgError(f"{op}: last 2 dimensions of input {what} must be square, got static shape "
                              f"{x.type.shape} ({x.describe()})")
    return x if x.type.dtype == dtype else cast(x, dtype)


def check_on_error(on_error: str) -> str:
    """on_error is 'raise' (numpy's LinAlgError) or 'nan' (the failing matrix's results are NaN, as JAX)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    return on_error


def check_square(op: Any, a: np.ndarray, what: str = "a") -> None:
    """numpy's LinAlgError for a non-square stack of matrices."""
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"{op}: last 2 dimensions of {what} must be square, got shape {a.shape}")


def batch_of(*shapes: StaticShape, core: Sequence[int], what: str) -> StaticShape:
    """The broadcast static batch shape of operands whose last core[i] dims are their matrix part."""
    batches = [tuple(s[:len(s) - c]) for s, c in zip(shapes, core)]
    n = max(len(b) for b in batches)
    padded = [(1,) * (n - len(b)) + b for b in batches]
    return broadcast_static_shape(padded, what) if n else ()


def nan_where_failed(op: Any, fn: Any, a: np.ndarray, on_error: str, out_shapes: Sequence[Tuple[int, ...]],
                     dtypes: Sequence[str], what: str = "") -> list:
    """Run fn(a_i) per matrix of the batch; on LinAlgError raise with op named (and what failed, else numpy's
    message), or fill that item with NaN."""
    try:
        return [np.asarray(r) for r in _as_tuple(fn(a))]
    except LinAlgError as e:
        if on_error == "raise":
            raise LinAlgError(f"{op}: {what or e}") from None
    batch = a.shape[:-2]
    outs = [np.empty(batch + tuple(s), d) for s, d in zip(out_shapes, dtypes)]
    for idx in np.ndindex(*batch):
        try:
            res = _as_tuple(fn(a[idx]))
            for o, r in zip(outs, res):
                o[idx] = r
        except LinAlgError:
            for o in outs:
                o[idx] = np.nan
    return outs


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def mT(x: Any) -> TensorVariable:
    """x with its last two axes swapped (numpy's ``x.mT``)."""
    x = as_tensor_variable(x)
    if x.ndim < 2:
        return x
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return transpose(x, axes)


def _tri_mask(x: TensorVariable, k: int, lower: bool) -> TensorVariable:
    n, m = x.shape[-2], x.shape[-1]
    rows = arange(n).dimshuffle(0, "x")
    cols = arange(m).dimshuffle("x", 0)
    return ge(rows + k, cols) if lower else le(rows + k, cols)


def tril(x: Any, k: int = 0) -> TensorVariable:
    """numpy.tril over the last two axes (zeros above diagonal k)."""
    x = as_tensor_variable(x)
    return where(_tri_mask(x, k, True), x, zeros((), x.dtype))


def triu(x: Any, k: int = 0) -> TensorVariable:
    """numpy.triu over the last two axes (zeros below diagonal k)."""
    x = as_tensor_variable(x)
    return where(_tri_mask(x, k, False), x, zeros((), x.dtype))


def sym(x: Any) -> TensorVariable:
    """(x + x^T) / 2 over the last two axes."""
    return mul(x + mT(x), np.asarray(0.5, dtype=as_tensor_variable(x).dtype))


def expand_last(x: Any, k: int = 1) -> TensorVariable:
    """x with k trailing broadcastable axes (a batch of scalars against a batch of matrices)."""
    x = as_tensor_variable(x)
    return x.dimshuffle(*range(x.ndim), *(["x"] * k))


class LinalgOp(Op):
    """Base of the linear-algebra ops: a string form with their settings, no other behaviour."""

    __props__: Tuple[str, ...] = ()

    def __str__(self) -> str:
        props = [f"{p}={getattr(self, p)!r}" for p in self.__props__]
        return f"{type(self).__name__}{{{', '.join(props)}}}" if props else type(self).__name__



class SquareMatrixOp(LinalgOp):
    """A LinalgOp from a (batch of) square matrices to matrices of the same type (Cholesky, Inv, Expm)."""

    def make_node(self, a: Any) -> Apply:
        """The output has a's type."""
        a = as_matrix(self, a)
        return Apply(self, [a], [a.type()])

def matrix_type(dtype: str, batch: StaticShape, core: StaticShape) -> TensorType:
    """The TensorType of a batch of core-shaped results."""
    return TensorType(dtype, tuple(batch) + tuple(core))


def apply(op: Op, inputs: Sequence[Variable], types: Sequence[TensorType]) -> Apply:
    """Apply(op, inputs, fresh outputs of types)."""
    return Apply(op, list(inputs), [t() for t in types])


def batch_apply(op: Any, fn: Any, arrays: Sequence[np.ndarray], cores: Sequence[int],
                out_cores: Sequence[Tuple[int, ...]], dtypes: Sequence[str]) -> list:
    """fn(*matrices) -> tuple of results, looped over the broadcast batch dims of arrays (whose last
    cores[i] dims are their matrix part); results of out_cores shapes and dtypes."""
    try:
        batch = np.broadcast_shapes(*[a.shape[:a.ndim - c] for a, c in zip(arrays, cores)])
    except ValueError:
        raise ValueError(f"{op}: batch dimensions of the inputs cannot be broadcast together: "
                         f"shapes {[a.shape for a in arrays]}") from None
    arrays = [np.broadcast_to(a, batch + a.shape[a.ndim - c:]) for a, c in zip(arrays, cores)]
    outs = [np.empty(batch + tuple(s), d) for s, d in zip(out_cores, dtypes)]
    for idx in np.ndindex(*batch):
        for o, r in zip(outs, _as_tuple(fn(*[a[idx] for a in arrays]))):
            o[idx] = r
    return outs


def to_shape_of(g: Any, x: Variable) -> TensorVariable:
    """A gradient over the broadcast batch summed back to x's shape (and dtype)."""
    g = as_tensor_variable(g)
    extra = g.ndim - x.ndim
    if extra > 0:
        g = tsum(g, axis=tuple(range(extra)))
    if g.type.shape != x.type.shape:
        g = reduce_to_input(g, x, g.type.shape)
    return g if g.type.dtype == x.type.dtype else cast(g, x.type.dtype)


def outer_last(u: Any, v: Any, vector: bool) -> TensorVariable:
    """u v^T per batch item: vectors (..., n), (..., m) -> (..., n, m); matrices -> u @ v^T."""
    if vector:
        v = as_tensor_variable(v)
        return mul(expand_last(u), v.dimshuffle(*range(v.ndim - 1), "x", v.ndim - 1))
    return matmul(u, mT(v))


def bdot(a: Any, b: Any) -> TensorVariable:
    """Batched matrix product (numpy.matmul)."""
    return matmul(a, b)
