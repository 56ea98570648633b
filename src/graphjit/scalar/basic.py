"""Scalars (PyTensor's scalar.basic): ScalarType, its Variable and Constant and as_scalar; the dtype rules (upcast,
ufunc output dtypes); the LLVM math a scalar op names (Intrinsic, Libm, Opcode, LazyFunction); the ScalarOp base
(a scalar op is data: name, arity, dtype rule, numpy impl, LLVM math) and its registry."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.graph.type import Type
from graphjit.scalar.casting import astype
from graphjit.scalar.convert import value_to_array
from graphjit.graph import forksafe

BOOL = ("bool",)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTEGER = SIGNED + UNSIGNED
FLOAT = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
ALL_DTYPES = BOOL + INTEGER + FLOAT + COMPLEX
DISCRETE = BOOL + INTEGER


def dtype_kind(dtype: str) -> str:
    """'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex."""
    return np.dtype(dtype).kind


class ScalarType(Type):
    """A native scalar of one dtype (a 0-d value inside elementwise loops)."""

    def __init__(self, dtype: str):
        dtype = str(np.dtype(dtype))
        if dtype not in ALL_DTYPES:
            raise TypeError(f"unsupported scalar dtype {dtype!r}; supported: {', '.join(ALL_DTYPES)}")
        self.dtype = dtype

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        if strict:
            if not (isinstance(data, np.generic) and str(data.dtype) == self.dtype):
                raise TypeError(f"expected a numpy {self.dtype} scalar, got {type(data).__name__}")
            return data
        if isinstance(data, np.ndarray) and data.ndim == 0:
            data = data[()]
        if isinstance(data, (list, tuple, np.ndarray)):
            raise TypeError(f"expected a scalar of dtype {self.dtype}, got an array of shape "
                            f"{np.shape(data)}")
        try:
            return value_to_array(data, np.dtype(self.dtype), allow_downcast, round_floats=False)[()]
        except TypeError as e:
            raise TypeError(f"{data!r} cannot be stored as {self.dtype}: {e}") from None

    def values_eq(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        return bool(np.allclose(a, b, **_tolerances(self.dtype), equal_nan=True))

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash((type(self), self.dtype))

    def __str__(self) -> str:
        return self.dtype

    def __repr__(self) -> str:
        return f"ScalarType({self.dtype})"


def _tolerances(dtype: str) -> dict:
    if dtype in ("float32", "complex64"):
        return {"rtol": 1e-4, "atol": 1e-5}
    return {"rtol": 1e-7, "atol": 1e-10}


@lru_cache(maxsize=None)
def get_scalar_type(dtype: str) -> ScalarType:
    """The (shared) ScalarType of a dtype."""
    return ScalarType(dtype)


class ScalarVariable(Variable):
    """A Variable of ScalarType (used inside scalar graphs)."""


ScalarType.variable_type = ScalarVariable


class ScalarConstant(Constant):
    """A Constant of ScalarType."""


ScalarType.constant_type = ScalarConstant


def as_scalar(x: Any, dtype: Optional[str] = None) -> Variable:
    """x as a scalar Variable (Python numbers become ScalarConstants)."""
    if isinstance(x, Variable):
        if not isinstance(x.type, ScalarType):
            raise TypeError(f"expected a scalar Variable, got {x.describe()}")
        return x
    value = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    return ScalarConstant(get_scalar_type(str(value.dtype)), value[()])


# ---------------------------------------------------------------------------------------------
# How the LLVM backend computes an op: the declared math, one generic lowering reads it.
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Intrinsic:
    """An LLVM intrinsic overloaded on the float type (e.g. 'llvm.exp').

    identity_on_ints: numpy has integer loops for the op and they return the value itself (floor, ceil,
    trunc), so an integer or bool loop is no intrinsic call at all.
    """

    name: str
    identity_on_ints: bool = False


@dataclass(frozen=True)
class Libm:
    """A C math-library function (float32 uses the 'f'-suffixed name)."""

    name: str


@dataclass(frozen=True)
class Opcode:
    """An IRBuilder method per dtype kind ('f' float, 'i' signed, 'u' unsigned, 'b' bool)."""

    float: Optional[str] = None
    int: Optional[str] = None
    uint: Optional[str] = None
    bool: Optional[str] = None


@dataclass(frozen=True)
class Operator:
    """How pprint writes a scalar op as an operator: ``x + y`` (two inputs) or ``-x`` (one).

    precedence: Python's (higher binds tighter); associativity: 'left', 'right' or 'either' (the side on
    which an operand of the same precedence needs no parentheses).
    """

    symbol: str
    precedence: int
    associativity: str = "left"


LlvmMath = Any  # Intrinsic | Libm | Opcode | None (the backend registers a body, or the op gives lower_scalar)


class LazyFunction:
    """A function of a heavy optional module (scipy.special), imported on its first call.

    Scalar ops hold their numpy function from module load; this keeps ``import graphjit`` from importing the
    module while the op still pickles and prints as the function it stands for.
    """

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.__name__ = name
        self._fn: Optional[Callable[..., Any]] = None

    def resolve(self) -> Callable[..., Any]:
        """The function itself (imports its module the first time)."""
        if self._fn is None:
            self._fn = getattr(forksafe.import_module(self.module), self.__name__)
        return self._fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<lazy {self.module}.{self.__name__}>"

    def __reduce__(self):
        return (LazyFunction, (self.module, self.__name__))


def as_ufunc(fn: Any) -> Optional[np.ufunc]:
    """fn as a numpy ufunc (a LazyFunction resolved), or None if it is some other function."""
    if isinstance(fn, LazyFunction):
        fn = fn.resolve()
    return fn if isinstance(fn, np.ufunc) else None


# ---------------------------------------------------------------------------------------------
# dtype rules: in_dtypes -> out_dtype
# ---------------------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def _half_loop(ufunc: np.ufunc, in_dtypes: Tuple[np.dtype, ...]) -> bool:
    """Whether numpy's loop of ufunc for these input dtypes computes in float16."""
    try:
        resolved = ufunc.resolve_dtypes(in_dtypes + (None,) * ufunc.nout)
    except (TypeError, np._core._exceptions._UFuncNoLoopError):  # type: ignore[attr-defined]
        return False
    return any(d == np.float16 for d in resolved)


def _no_half(dtype: np.dtype) -> str:
    """numpy turns small ints into float16 for transcendental ufuncs; graphjit uses float32."""
    return "float32" if dtype == np.float16 else str(dtype)


@lru_cache(maxsize=4096)
def ufunc_out_dtype(ufunc: np.ufunc, in_dtypes: Tuple[str, ...]) -> str:
    """The output dtype numpy's ufunc would give for these input dtypes (float16 -> float32)."""
    dts = tuple(np.dtype(d) for d in in_dtypes) + (None,) * ufunc.nout
    try:
        resolved = ufunc.resolve_dtypes(dts)
    except (TypeError, np._core._exceptions._UFuncNoLoopError) as e:  # type: ignore[attr-defined]
        raise TypeError(f"{ufunc.__name__} is not defined for dtypes {in_dtypes}") from e
    return _no_half(resolved[ufunc.nin])


def upcast(*dtypes: str) -> str:
    """numpy's result_type of the dtypes."""
    return str(np.result_type(*dtypes))


def upcast_to_float(*dtypes: str) -> str:
    """The upcast, made a float: ints of up to 16 bits give float32, larger ones float64."""
    out = np.result_type(*dtypes)
    if out.kind in "fc":
        return _no_half(out)
    if out.kind == "b" or out.itemsize <= 2:
        return "float32"
    return "float64"


class ScalarOp(Op):
    """An elementwise function on scalars, declared as data in one place (see scalar/math.py).

    numpy: the vectorised numpy implementation (a ufunc, a LazyFunction, or any array function).
    dtype_rule: in_dtypes -> out_dtype; defaults to numpy's ufunc rule or upcast.
    llvm: Intrinsic / Libm / Opcode, the math the LLVM backend emits (None: the backend registers a body for
    the op in link/llvm/scalar/bodies.py, or a user's subclass defines ``lower_scalar``).
    identity: x op e == e op x == x; right_identity: only x op e == x (sub's 0, true_div's 1).
    grad: (m, inputs, output, gz) -> one term per input, None where no gradient flows; ``m`` is the
    namespace of elementwise functions the rule builds with (graphjit.tensor.math). Linear in gz.
    connected: per input, are its values read? (None: all are.)
    How pprint writes it: ``operator`` (an Operator: ``x + y``), else a call by ``call_name`` (default: the
    name); ``reduction_name`` names a reduction over it (``sum`` for add; default ``reduce_<name>``).

    A user's subclass may define ``lower_scalar(ctx, inputs, in_dtypes, out_dtype)`` (and optionally
    ``can_lower_scalar(in_dtypes, out_dtype)``): the LLVM backend inlines it into Elemwise loops.
    """

    __props__ = ("name",)
    grad_rule: Optional[Callable[..., Any]] = None  # (m, inputs, output, gz) -> terms
    connected: Optional[Tuple[bool, ...]] = None    # per input: are its values read? (None: all are)
    operator: Optional[Operator] = None             # pprint writes it as this operator
    call_name: Optional[str] = None                 # pprint's function name, where it is not the op's name
    reduction_name: Optional[str] = None            # pprint's name of a reduction over it (add: 'sum')

    def __init__(self, name: str, nin: int, numpy: Callable[..., Any],
                 dtype_rule: Optional[Callable[..., str]] = None, llvm: LlvmMath = None,
                 commutative: bool = False, associative: bool = False, identity: Any = None,
                 grad: Optional[Callable[..., Any]] = None, allowed_kinds: str = "biufc",
                 right_identity: Any = None, connected: Optional[Tuple[bool, ...]] = None,
                 operator: Optional[Operator] = None, call_name: Optional[str] = None,
                 reduction_name: Optional[str] = None):
        self.name = name
        self.nin = nin
        self.nout = 1
        self.numpy = numpy
        self.llvm = llvm
        self.commutative = commutative
        self.associative = associative
        self.identity = identity
        self.right_identity = identity if right_identity is None else right_identity
        if grad is not None:
            self.grad_rule = grad
        if connected is not None:
            self.connected = connected
        if operator is not None:
            self.operator = operator
        if call_name is not None:
            self.call_name = call_name
        if reduction_name is not None:
            self.reduction_name = reduction_name
        self.allowed_kinds = allowed_kinds
        if dtype_rule is None:
            if isinstance(numpy, (np.ufunc, LazyFunction)):
                dtype_rule = lambda *dts, _f=numpy: ufunc_out_dtype(as_ufunc(_f), dts)  # noqa: E731
            else:
                dtype_rule = upcast
        self.dtype_rule = dtype_rule

    def defgrad(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: rule (m, inputs, output, gz) -> terms becomes this op's gradient (written under it)."""
        self.grad_rule = rule
        return rule

    def __str__(self) -> str:
        return self.name

    def output_dtype(self, *in_dtypes: str) -> str:
        """The output dtype for these input dtypes (TypeError when the op does not apply)."""
        if len(in_dtypes) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} inputs, got {len(in_dtypes)}")
        for i, d in enumerate(in_dtypes):
            if dtype_kind(d) not in self.allowed_kinds:
                raise TypeError(f"{self.name} is not defined for dtype {d} (input {i})")
        return self.dtype_rule(*in_dtypes)

    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_scalar(i) for i in inputs]
        out = self.output_dtype(*[i.type.dtype for i in inputs])
        return Apply(self, inputs, [get_scalar_type(out)()])

    def impl(self, *values: Any) -> Any:
        """Apply the numpy implementation (works on arrays too); never computes in float16."""
        ufunc = as_ufunc(self.numpy)
        if ufunc is not None and _half_loop(ufunc, tuple(np.result_type(v) for v in values)):
            # numpy's loop for small ints is float16; graphjit's output dtype is float32: compute in it
            values = tuple(np.asarray(v, dtype=np.float32) for v in values)
        with np.errstate(all="ignore"):
            return self.numpy(*values)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list) -> None:
        dtype = node.outputs[0].type.dtype
        output_storage[0][0] = astype(self.impl(*inputs), dtype)[()]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]

    def __reduce__(self):
        # Scalar ops are module-level singletons: pickle them by name.
        return (_scalar_op_by_name, (self.name,))


_REGISTRY: dict = {}


def register_scalar_op(op: ScalarOp) -> ScalarOp:
    """Record op under its name (for pickling and lookup) and return it."""
    if op.name in _REGISTRY:
        raise ValueError(f"scalar op {op.name!r} is already registered")
    _REGISTRY[op.name] = op
    return op


def registered_scalar_ops() -> Tuple[ScalarOp, ...]:
    """Every registered scalar op, in the order of registration (graphjit's own first)."""
    return tuple(_REGISTRY.values())


def _scalar_op_by_name(name: str) -> ScalarOp:
    # unpickling imports graphjit (this module's package), which declares every built-in op
    return _REGISTRY[name]
